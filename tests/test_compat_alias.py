"""The compat runtime takes the name the module imported the legacy module as (issue 27): a
maintainer writes `from hcmigrate_compat import host_callback as hcb`, and lines that only
named the module stay as they were; `hcb_compat` only where that name is still taken."""

from __future__ import annotations

from hcmigrate import migrate_source

TAP_WITH_DEVICE = """\
from jax.experimental import host_callback as hcb


def show(v, transforms, device):
    print(device, v)


def step(x):
    return hcb.id_tap(show, x, tap_with_device=True)
"""


def test_the_compat_import_keeps_the_modules_alias():
    code = migrate_source(TAP_WITH_DEVICE).code
    assert "from hcmigrate_compat import host_callback as hcb\n" in code
    assert "    return hcb.id_tap(show, x, tap_with_device=True)\n" in code
    assert "hcb_compat" not in code


def test_a_name_a_local_binds_is_not_taken():
    source = TAP_WITH_DEVICE + "\n\ndef count(hcb):\n    return hcb + 1\n"
    code = migrate_source(source).code
    assert "from hcmigrate_compat import host_callback as hcb_compat\n" in code
    assert "hcb_compat.id_tap(show, x, tap_with_device=True)" in code
    assert "return hcb + 1" in code


def test_the_legacy_import_still_used_keeps_its_name():
    """A site left for a human keeps the legacy import, and the compat sites another name."""
    source = TAP_WITH_DEVICE + "\n\ndef run(f, *args):\n    return hcb.call(f, *args)\n"
    code = migrate_source(source).code
    assert "from jax.experimental import host_callback as hcb\n" in code
    assert "hcb_compat.id_tap(show, x, tap_with_device=True)" in code


def test_a_module_that_names_hcb_compat_itself_keeps_what_it_wrote():
    source = TAP_WITH_DEVICE + "\n\nhcb_compat = None\n"
    code = migrate_source(source).code
    assert "hcb_compat = None" in code
    compile(code, "<migrated>", "exec")
