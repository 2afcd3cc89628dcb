"""What stopped the candidate first. When the candidate raised before or inside its host
calls, crashed or timed out where the reference did not, that is the report's first line for
the test or script ("the candidate test raised TypeError at mylib/steps.py:16 before its first
host call", "... inside host call 2 (`_record`) at ..."): the host calls then missing follow
from it, and are not explained as callbacks the migration lost."""

from __future__ import annotations

import re

from hcmigrate.verify.differences import Difference
from hcmigrate.verify.identity import display_name

STOPPED = ("failed", "error", "crashed", "timeout")  # a --pytest test's outcomes
UNKNOWN_CALLS = ("crashed", "timeout")  # its process was killed: its host calls are lost
_EXCEPTION = re.compile(r"^\s*(?:[\w.]+\.)?(\w+)(?::|$)")
STOPPED_FIRST = "the candidate stopped before this call (its first line above says where)"


def exception_name(message: str | None) -> str:
    """The exception class a failure message names (`assert ...`: AssertionError)."""
    text = (message or "").strip().removeprefix("teardown: ")
    if text.startswith("assert"):
        return "AssertionError"
    m = _EXCEPTION.match(text)
    return m.group(1) if m else "an exception"


def _stopped_first(error: str | None, E: list[dict], G: list[dict]) -> bool:
    """Did the candidate stop before or inside its host calls: a host call raised, or it
    raised before its first one where the reference made some? An AssertionError outside
    callbacks is a check of the results failing afterwards (e.g. a test counting host calls
    the migration lost), and an exception after some host calls may come after all of them:
    the host-call comparison explains those first."""
    if any(ev.get("raised") for ev in G):
        return True
    return not G and bool(E) and exception_name(error) != "AssertionError"


def how_it_stopped(who: str, error: str | None, where: str | None, events: list[dict]) -> str:
    """`who` ("the candidate test") raised `error` (at `where`): inside the host call that
    raised, else before its first host call (_stopped_first)."""
    raising = next((i for i, ev in enumerate(events) if ev.get("raised")), None)
    if raising is not None:
        ev = events[raising]
        # (raised calling the callback itself, e.g. a wrong signature: where it is defined)
        cb = ev.get("host") or ev.get("callback") or {}
        where = ev.get("raised_at") or (f"{cb['file']}:{cb['line']}" if cb.get("file") else None)
        at = f" at {where}" if where else ""
        return (
            f"{who} raised {exception_name(ev['raised'])} inside host call {raising + 1} "
            f"(`{display_name(ev)}`){at}"
        )
    at = f" at {where}" if where else ""
    return f"{who} raised {exception_name(error)}{at} before its first host call"


def stopped_test(name: str, r: dict, c: dict, E: list[dict], G: list[dict], shown: tuple):
    """The first difference of a test the candidate stopped in (raised before or inside its
    host calls, crashed, timed out) where the reference did not stop; None otherwise.
    `shown`: (expected, got), the two outcomes as the report shows them."""
    if c["outcome"] not in STOPPED or r["outcome"] in STOPPED:
        return None
    if c["outcome"] in ("failed", "error") and not _stopped_first(c.get("message"), E, G):
        return None
    if c["outcome"] == "timeout":  # (message: "timed out after 8 s (its process was killed)")
        message = f"the candidate test {c.get('message') or 'timed out'}"
    elif c["outcome"] == "crashed":
        message = f"the candidate test crashed: {c.get('message')}"
    else:
        message = how_it_stopped("the candidate test", c.get("message"), c.get("where"), G)
    if c["outcome"] in UNKNOWN_CALLS:
        message += "; the host calls it made are not recorded"
    message += f" (the reference: {r['outcome']})"
    return Difference(entry=name, kind="outcome", message=message, expected=shown[0], got=shown[1])


def script_stop(ref: dict, cand: dict) -> Difference | None:
    """A candidate script that raised where the reference ran to its end."""
    if not cand.get("error") or ref.get("exit_status") != 0:
        return None
    if not _stopped_first(cand["error"], ref.get("events", []), cand.get("events", [])):
        return None
    return Difference(
        entry="<script>",
        kind="exit-status",
        message=how_it_stopped(
            "the candidate", cand["error"], cand.get("error_at"), cand.get("events", [])
        ),
        expected=f"exit {ref.get('exit_status')}",
        got=cand["error"].strip().splitlines()[0][:200],
    )


def after_stop(diffs: list[Difference]) -> None:
    """Host calls missing after the candidate stopped: say so instead of guessing at the
    migration (a callback it never registered, as the hint would say otherwise)."""
    for d in diffs:
        if d.kind == "missing-event":
            d.hint = STOPPED_FIRST
