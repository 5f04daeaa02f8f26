"""Running extremes: ``np.maximum.accumulate`` and ``np.minimum.accumulate`` of float arrays,
spelled as a gather at the running arg-extreme.

Invariants: the values are NumPy's own (the accumulate primitive's, which carries no gradient,
read back at the positions it came from: a NaN propagates as NumPy's does), and the gradient of
each entry goes to the entry whose value it is, through ``take_along_axis``'s rule; at a tie
the running extreme is taken to be re-attained, so the latest of the tied entries gets it (as
PyTorch's ``cummax`` indices). The caller reads ``axis`` (in ``range(ndim)``) and passes float
``x``; integer arrays are the primitive alone.
"""

from __future__ import annotations

from .sorting import grid, take_along


def running_extreme(ops, name, x, axis):
    """``np.<name>.accumulate(x, axis)`` (name ``"maximum"`` or ``"minimum"``) as a gather."""
    shape = tuple(ops.shape(x))
    values = getattr(ops, f"{name}_accumulate")(x, axis=axis)
    attained = ops.logical_or(ops.equal(x, values), ops.isnan(x))   # a NaN is its own extreme
    positions = ops.const(grid(shape[axis], axis, len(shape)), f"along{axis}")
    latest = ops.maximum_accumulate(ops.where(attained, positions, 0), axis=axis)
    return take_along(ops, x, latest, axis)
