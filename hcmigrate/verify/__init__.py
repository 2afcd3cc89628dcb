"""The differential tester behind `hcmigrate verify` (see docs/verify.md).

`verify(original, candidate=..., reference="legacy")` runs the original on a legacy reference and
the candidate on current JAX, each in a subprocess recorded by `_runner.py`, and compares the
traces with `compare.compare_traces`. Its keyword arguments are the fields of
`request.VerifyRequest`, the one object that carries a run's settings (the CLI builds it and
calls `core.run(request)`).
"""

from __future__ import annotations

__all__ = ["verify", "VerifyRequest", "compare_traces", "Tolerance"]


def __getattr__(name):  # keep `import hcmigrate.verify` cheap (no numpy until needed)
    if name == "verify":
        from hcmigrate.verify.core import verify

        return verify
    if name == "VerifyRequest":
        from hcmigrate.verify.request import VerifyRequest

        return VerifyRequest
    if name == "compare_traces":
        from hcmigrate.verify.compare import compare_traces

        return compare_traces
    if name == "Tolerance":
        from hcmigrate.verify.values import Tolerance

        return Tolerance
    raise AttributeError(name)
