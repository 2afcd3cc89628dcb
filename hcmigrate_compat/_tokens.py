"""Recovery of JAX's runtime effect tokens after a host call failed.

JAX orders the computations that carry ordered effects (compat's calls, ``io_callback``
with ``ordered=True``) across dispatches with runtime tokens: each computation takes the
token the previous one left on its devices and leaves a new one
(``jax._src.dispatch.runtime_tokens``). When a callback raises, the computation fails and
the token it leaves is an error. On several devices every later computation that takes
that token fails with the same old error, and ``jax.effects_barrier()`` raises it again
and again (it stops at the first failed token and never clears the set). Legacy
host_callback had no such tokens: after a failing tap, later taps, calls and
``barrier_wait`` worked again.

compat counts the failures of its host functions (:func:`note_failure`). On the first
dispatch after a failure, the failed tokens are dropped (JAX then starts a fresh one, as
for the first computation), and the token set is cleared when blocking on it fails. The
error itself reaches the user through the failed computation's outputs, as in legacy.
Internals (``RuntimeTokenSet``) are version-guarded: without them nothing is patched.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_failures = 0  # host-function failures so far (any thread)


def note_failure() -> None:
    """Called when a host function raised: its computation's tokens are failed."""
    global _failures
    with _lock:
        _failures += 1


def _drop_failed(token_set) -> None:
    """Remove the failed tokens (waiting for the computations that leave them)."""
    token_set._compat_failures_seen = _failures
    for tokens in (token_set.current_tokens, token_set.output_runtime_tokens):
        for key, token in list(tokens.items()):
            try:
                token.block_until_ready()
            except Exception:
                del tokens[key]


def drop_failed_tokens() -> bool:
    """Drop this thread's failed tokens now if a host function failed since the last look.

    Returns True when there was a failure to look at.
    """
    try:
        from jax._src import dispatch

        token_set = dispatch.runtime_tokens
    except Exception:  # pragma: no cover - internals moved
        return False
    if getattr(token_set, "_compat_failures_seen", 0) == _failures:
        return False
    _drop_failed(token_set)
    return True


def install() -> bool:
    """Patch ``RuntimeTokenSet`` so that failed tokens never outlive their failure."""
    try:
        from jax._src import dispatch

        cls = dispatch.RuntimeTokenSet
        get_token_input = cls.get_token_input
        block_until_ready = cls.block_until_ready
    except Exception:  # pragma: no cover - internals moved
        return False
    if getattr(get_token_input, "_compat", False):
        return True

    def get_token_input_after_failures(self, eff, devices):
        if getattr(self, "_compat_failures_seen", 0) != _failures:
            _drop_failed(self)
        return get_token_input(self, eff, devices)

    def block_until_ready_clearing(self):
        try:
            block_until_ready(self)
        except Exception:
            self.clear()
            raise

    get_token_input_after_failures._compat = True
    cls.get_token_input = get_token_input_after_failures
    cls.block_until_ready = block_until_ready_clearing
    return True
