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
compare sizes as their leading powers (``n * d`` against ``d``), the same for every size. Those
are the decisions for large inputs; for small ones a module has a second body
(:mod:`adcompiler.aot.small_bodies`), compiled inside :func:`small`, where every size that can
vary counts as :data:`SMALL` (nothing planned or fused), and its first body hands small calls
to it.

Invariant: outside :func:`symbolic`, :func:`elements` is ``math.prod(shape)`` and
:func:`fingerprint` is empty, so the decorator's code and cache keys are what they were.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar

SYMBOLIC = 1 << 20   # what a size that can vary counts for, above every threshold
SMALL = 2            # what it counts for in a module's body for small inputs (:func:`small`)
_count: ContextVar[int] = ContextVar("adcompiler_symbolic_sizes", default=0)   # 0: exact


def elements(shape) -> int:
    """The element count the size-dependent decisions use for an array of ``shape`` (known)."""
    count = _count.get()
    if count:
        return math.prod(int(d) if int(d) < 2 else count for d in shape)
    return math.prod(int(d) for d in shape)


def is_symbolic() -> bool:
    """Whether gradients compiled now serve every size (``adcompiler compile``)."""
    return bool(_count.get())


def fingerprint() -> str:
    """What the cache key records: code compiled for every size differs from per-size code."""
    count = _count.get()
    return "" if not count else "sizes symbolic" if count == SYMBOLIC else f"sizes as {count}"


@contextmanager
def symbolic(on=True):
    """Compile code whose decisions hold for every size inside this block (see the module);
    ``on=False``: as outside it."""
    token = _count.set(SYMBOLIC if on else 0)
    try:
        yield
    finally:
        _count.reset(token)


@contextmanager
def small():
    """Inside :func:`symbolic`, compile the body a module runs for small inputs: every size that
    can vary counts as :data:`SMALL`, below every threshold (nothing fused or planned), the
    same for every size. Outside it, nothing changes."""
    token = _count.set(SMALL if _count.get() else 0)
    try:
        yield
    finally:
        _count.reset(token)
