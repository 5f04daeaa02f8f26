"""How many elements the size-dependent decisions of the passes and backends see for an array.

The compiler chooses by size in several places: fusion (:data:`adcompiler.passes.fuse.MIN_SIZE`),
memory planning (:data:`adcompiler.backends.planner.MIN_BYTES`), and the cost models that place
a scale, move a negation or recompute a residual (:mod:`adcompiler.passes.scales`,
:mod:`adcompiler.passes.negations`, :mod:`adcompiler.transforms.recompute`). For the decorator's
gradients, compiled per signature, the exact sizes decide (:func:`elements` is their product).

Ahead of time (``adcompiler compile``, inside :func:`symbolic`) one body serves every size of a
pattern (:mod:`adcompiler.aot.polymorphic`), so these decisions must not depend on the sizes it
was compiled for: every size of 2 or more counts as :data:`SYMBOLIC` elements, the sizes 0 and 1
as themselves (a pattern keeps them: broadcasting depends on them). An array with a size that
can vary is then large for every threshold (planned into buffers, fused), and the cost models
compare sizes as their leading powers (``n * d`` against ``d``), the same for every size. The
decisions are made for large inputs: at small sizes a compiled module pays the ``out=`` buffers
(under a microsecond per operation) where the decorator would not plan them.

Invariant: outside :func:`symbolic`, :func:`elements` is ``math.prod(shape)`` and
:func:`fingerprint` is empty, so the decorator's code and cache keys are what they were.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar

SYMBOLIC = 1 << 20   # what a size that can vary counts for, above every threshold
_symbolic: ContextVar[bool] = ContextVar("adcompiler_symbolic_sizes", default=False)


def elements(shape) -> int:
    """The element count the size-dependent decisions use for an array of ``shape`` (known)."""
    if _symbolic.get():
        return math.prod(int(d) if int(d) < 2 else SYMBOLIC for d in shape)
    return math.prod(int(d) for d in shape)


def is_symbolic() -> bool:
    """Whether gradients compiled now serve every size (``adcompiler compile``)."""
    return _symbolic.get()


def fingerprint() -> str:
    """What the cache key records: code compiled for every size differs from per-size code."""
    return "sizes symbolic" if _symbolic.get() else ""


@contextmanager
def symbolic(on=True):
    """Compile code whose decisions hold for every size inside this block (see the module);
    ``on=False``: as outside it."""
    token = _symbolic.set(bool(on))
    try:
        yield
    finally:
        _symbolic.reset(token)
