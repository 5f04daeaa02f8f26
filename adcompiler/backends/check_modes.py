"""Compilation modes that test the optimised code: the unoptimised reference, poisoned buffers.

- :func:`unoptimised`: gradients compiled inside it are the *plain* code (no fused chains, no
  ``out=`` buffers, no numexpr, no in-place updates; the same values), the reference the
  optimised gradient is compared with at sizes where finite differences cannot be used.
- :func:`poisoned` (or ``ADCOMPILER_POISON_BUFFERS=1``): the generated code fills each planned
  buffer with NaN (integers and booleans with a pattern that changes every call, see
  :mod:`adcompiler.runtime.poison`) when it takes the buffer from the pool, when the planner
  releases it and when it gives it back, and never writes a released buffer again (each value
  the plan would put into a reused buffer gets a new one; the release points are the plan's
  own). So a read of a released buffer shows as NaN instead of the plausible number that
  overwrote it, and so does a returned gradient that is a pool buffer.

Both are part of the disk cache's key (:func:`fingerprint`). Invariant: neither changes a value
the code computes where the plan is right.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar

_unoptimised: ContextVar[bool] = ContextVar("adcompiler_unoptimised", default=False)
_poisoned: ContextVar[bool] = ContextVar("adcompiler_poisoned", default=False)


@contextmanager
def _on(flag: ContextVar):
    token = flag.set(True)
    try:
        yield
    finally:
        flag.reset(token)


def unoptimised():
    """Compile the plain (unoptimised) code inside this block."""
    return _on(_unoptimised)


def poisoned():
    """Compile code that poisons its buffers inside this block."""
    return _on(_poisoned)


def is_unoptimised() -> bool:
    return _unoptimised.get()


def is_poisoned() -> bool:
    flag = os.environ.get("ADCOMPILER_POISON_BUFFERS", "0").strip().lower()
    return _poisoned.get() or flag in ("1", "true", "yes", "on")


def fingerprint() -> str:
    """What the cache key records: the code differs in these modes."""
    return f"unoptimised {is_unoptimised()}, poisoned {is_poisoned()}"
