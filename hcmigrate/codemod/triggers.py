"""Matching modern-call triggers (hcmigrate.rules.spec.ModernCall) against libcst calls."""

from __future__ import annotations

import libcst as cst

from hcmigrate.rules.nodes import literal_value
from hcmigrate.rules.spec import ModernCall


def modern_call_matches(trigger: ModernCall, call: cst.Call, qualified: set[str]) -> bool:
    """Does `call`, whose callee may be any of `qualified`, match `trigger`?"""
    return not qualified.isdisjoint(trigger.callees) and call_shape_matches(trigger, call)


def call_shape_matches(trigger: ModernCall, call: cst.Call) -> bool:
    """Does `call` pass the trigger's keyword (or its first argument), whatever it calls?"""
    if trigger.keyword is not None:
        return any(a.keyword is not None and a.keyword.value == trigger.keyword for a in call.args)
    return bool(call.args) and literal_value(call.args[0].value) in trigger.first_argument
