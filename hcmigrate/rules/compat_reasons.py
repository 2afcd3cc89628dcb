"""Why a legacy call keeps legacy semantics only on the compat runtime, whatever its function."""

from __future__ import annotations

from hcmigrate.rules.context import CallSite
from hcmigrate.rules.nodes import literal_value


def compat_reason(site: CallSite, device_flag: str) -> str | None:
    """What in the call's arguments has no modern spelling (None: nothing), `device_flag` being
    the function's "pass the device" parameter (`tap_with_device`, `call_with_device`)."""
    args = site.args
    if "callback_flavor" in args:
        return "callback_flavor= selects a legacy implementation"
    if "device_index" in args and literal_value(args["device_index"]) != 0:
        return "device_index= picks which device's host runs the callback"
    if device_flag in args and literal_value(args[device_flag]) not in (True, False):
        return f"{device_flag}= is computed at run time"
    return None
