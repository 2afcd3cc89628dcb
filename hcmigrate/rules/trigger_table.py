"""The trigger of every rewrite of every rule, for the pre-filter (hcmigrate.prefilter),
which runs before libcst is imported and so cannot import the rules.

Written by `python scripts/rules_table.py --write` from the rule modules; do not edit.
"""

from hcmigrate.rules.spec import CompatStrategy, LegacyCall, LegacyImport, LegacyReference, ModernCall, ModuleEnd, RemovedJaxApi, UnbindableCall

TRIGGERS = (
    CompatStrategy(),
    LegacyCall(function='barrier_wait', keyword=None),
    LegacyCall(function='call', keyword=None),
    LegacyCall(function='id_print', keyword=None),
    LegacyCall(function='id_tap', keyword=None),
    LegacyCall(function='stop_outfeed_receiver', keyword=None),
    LegacyImport(),
    LegacyReference(members=None, guard_fallback=False),
    LegacyReference(members=None, guard_fallback=True),
    ModernCall(callees=('jax.config.update', 'jax.config.config.update', 'jax._src.config.config.update'), keyword=None, first_argument=('jax_host_callback_inline', 'jax_host_callback_outfeed', 'jax_host_callback_max_queue_byte_size', 'jax_host_callback_legacy', 'jax_host_callback_ad_transforms')),
    ModernCall(callees=('jax.debug.callback', 'jax.experimental.io_callback'), keyword='ordered', first_argument=()),
    ModernCall(callees=('jax.debug.print',), keyword='ordered', first_argument=()),
    ModernCall(callees=('jax.pure_callback', 'jax._src.callback.pure_callback'), keyword='vectorized', first_argument=()),
    ModuleEnd(),
    RemovedJaxApi(rule='JAX101'),
    RemovedJaxApi(rule='JAX102'),
    RemovedJaxApi(rule='JAX103'),
    RemovedJaxApi(rule='JAX104'),
    RemovedJaxApi(rule='JAX105'),
    RemovedJaxApi(rule='JAX106'),
    RemovedJaxApi(rule='JAX107'),
    RemovedJaxApi(rule='JAX108'),
    RemovedJaxApi(rule='JAX109'),
    RemovedJaxApi(rule='JAX110'),
    RemovedJaxApi(rule='JAX111'),
    RemovedJaxApi(rule='JAX112'),
    RemovedJaxApi(rule='JAX113'),
    RemovedJaxApi(rule='JAX114'),
    RemovedJaxApi(rule='JAX115'),
    UnbindableCall(),
)
