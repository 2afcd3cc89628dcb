"""The second opinion for a reference older than JAX 0.5: the reference run again with
jax_threefry_partitionable=True, today's default, so that what differs only because jax.random
draws other numbers for the same key can be told apart."""

from __future__ import annotations

from hcmigrate.verify.execute import run_sides
from hcmigrate.verify.launch import Side


# JAX 0.5 made jax_threefry_partitionable the default: jax.random draws other numbers for the
# same key. A reference older than that gets a second opinion with the new default for what
# differs (never for the first run: a plain legacy run is the reference).
PRNG_SETTING = {"JAX_THREEFRY_PARTITIONABLE": "1"}


def old_jax(trace: dict | None) -> bool:
    version = (trace or {}).get("jax") or ""
    try:
        return tuple(int(p) for p in version.split(".")[:2]) < (0, 5)
    except ValueError:
        return False


def prng_note(ref_trace) -> str:
    return (
        f"equivalent once the reference (JAX {ref_trace.get('jax')}) draws jax.random numbers as "
        "JAX >= 0.5 does (jax_threefry_partitionable=True); a plain legacy run differs only there"
    )


def second_opinion(ref_side, req, args, entries, workdir, select=None, pytest=False):
    """The reference run again with today's PRNG default (`req`: the run's VerifyRequest)."""
    side = Side(**{**ref_side.__dict__, "env": {**ref_side.env, **PRNG_SETTING}})
    side.label = "reference-prng"
    if select is not None:
        side.select = select
    [result] = run_sides(
        [side],
        script_args=list(args or []),
        entries=list(entries or []),
        timeout=req.timeout,
        workdir=workdir,
        platform=req.platform,
    )
    trace = result.trace
    if trace is None or (not pytest and trace.get("exit_status") != 0):
        return None
    return trace
