"""The comparator on hand-made traces (no subprocess)."""

from __future__ import annotations

from hcmigrate.verify.compare import compare_traces
from hcmigrate.verify.text_diff import diff_tokens, normalise_print
from hcmigrate.verify.values import Tolerance


def arr(data, dtype="float32", shape=None):
    import numpy as np

    a = np.asarray(data)
    return {
        "k": "array",
        "dtype": dtype,
        "shape": list(shape if shape is not None else a.shape),
        "data": data,
    }


def ev(name, args, *, api="id_tap", cls="effect", ordered=True, stdout="", reg=0, **extra):
    cb = None if cls == "print" else {"name": f"__main__.{name}", "simple": name, "lambda": False}
    return {
        "api": api,
        "class": cls,
        "ordered": ordered,
        "callback": cb,
        "site": None,
        "reg": reg,
        "entry": "main",
        "args": args,
        "stdout": stdout,
        **extra,
    }


def trace(events, result=None):
    return {
        "events": events,
        "entries": [{"name": "main", "result": result or {"k": "none"}}],
        "stdout": "",
        "exit_status": 0,
        "registrations": [],
    }


def test_legacy_id_print_and_debug_print_formatting_is_normalised():
    legacy = "what: pair\n( [1. 2.]\n  3 )\n"
    modern = "what: pair (Array([1., 2.], dtype=float32), Array(3, dtype=int32, weak_type=True))\n"
    assert diff_tokens(normalise_print(legacy), normalise_print(modern), Tolerance()) is None
    assert diff_tokens(normalise_print("what: x\n[1.]"), normalise_print("x [1.]"), Tolerance())


def test_print_events_compare_text_and_values():
    ref = trace(
        [
            ev(
                "p",
                [{"k": "tuple", "items": [arr([1.0, 2.0]), arr(3, "int32")]}],
                api="id_print",
                cls="print",
                stdout="what: pair\n( [1. 2.] 3 )\n",
            )
        ]
    )
    good = trace(
        [
            ev(
                "p",
                [arr([1.0, 2.0]), arr(3, "int32")],
                api="jax.debug.print",
                cls="print",
                stdout="what: pair\n( [1. 2.] 3 )\n",
            )
        ]
    )
    assert compare_traces(ref, good).equivalent
    bad = trace(
        [
            ev(
                "p",
                [arr([1.0, 2.5]), arr(3, "int32")],
                api="jax.debug.print",
                cls="print",
                stdout="what: pair\n( [1. 2.5] 3 )\n",
            )
        ]
    )
    [d] = compare_traces(ref, bad).differences
    assert "printed values differ" in d.message


def test_tolerance_and_dtype():
    ref = trace([ev("f", [arr([1.0, 2.0])])])
    assert compare_traces(ref, trace([ev("f", [arr([1.0, 2.0 + 1e-6])])])).equivalent
    [d] = compare_traces(ref, trace([ev("f", [arr([1.0, 2.1])])])).differences
    assert "values differ at argument 1 at index (1,)" in d.message
    [d] = compare_traces(ref, trace([ev("f", [arr([1.0, 2.0], "float64")])])).differences
    assert "dtype float32 vs float64" in d.message
    assert not compare_traces(
        ref, trace([ev("f", [arr([1.0, 2.1])])]), Tolerance(rtol=0.1)
    ).differences


def test_values_of_a_dtype_numpy_does_not_know_compare_as_floats():
    """A bfloat16 value (ml_dtypes, which numpy alone does not name) in both traces: compared
    as floats, not a crash of the comparison."""
    ref = trace([ev("f", [arr(3.76562, "bfloat16", ())])])
    assert compare_traces(ref, trace([ev("f", [arr(3.76562, "bfloat16", ())])])).equivalent
    [d] = compare_traces(ref, trace([ev("f", [arr(2.5, "bfloat16", ())])])).differences
    assert "value 3.76562 vs 2.5 at argument 1" in d.message


def test_unordered_events_match_as_a_multiset_ordered_ones_in_order():
    a, b = ev("a", [arr(1, "int32")]), ev("b", [arr(2, "int32")])
    ref = trace([a, b])
    swapped_unordered = trace(
        [dict(b, api="pure_callback", ordered=False), dict(a, api="pure_callback", ordered=False)]
    )
    assert compare_traces(ref, swapped_unordered).equivalent
    swapped_ordered = trace([dict(b, api="io_callback"), dict(a, api="io_callback")])
    [d] = compare_traces(ref, swapped_ordered).differences
    assert "out of order" in d.message


def test_extra_and_missing_events():
    a = ev("a", [arr(1, "int32")])
    [d] = compare_traces(trace([a]), trace([a, a])).differences
    assert d.kind == "extra-event" and "1 host call(s) more" in d.message
    [d] = compare_traces(trace([a, a]), trace([a])).differences
    assert d.kind == "missing-event" and "event #1" in d.message


def test_lambda_wrapper_matches_the_named_callback():
    ref = trace([ev("log", [arr(1, "int32")])])
    lam = ev("log", [arr(1, "int32")], api="io_callback")
    lam["callback"] = {
        "name": "__main__.<lambda>",
        "simple": "<lambda>",
        "lambda": True,
        "refs": ["log"],
    }
    assert compare_traces(ref, trace([lam])).equivalent
    other = ev("other", [arr(1, "int32")], api="io_callback")
    [d] = compare_traces(ref, trace([other])).differences
    assert "`log` via id_tap (ordered) is missing in the candidate" in d.message
    assert "next candidate call: other(int32[] 1)" in d.got
    assert d.hint == "the candidate never registers a callback `log`"
