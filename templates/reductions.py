"""Vector-Jacobian rules of reductions (``sum mean prod max min`` with ``axis`` and ``keepdims``)."""

from . import defvjp


def _restore(ops, g, x, axis, keepdims):
    """Put a reduced ``g`` back on ``x``'s shape: re-insert the reduced axes, then broadcast."""
    if axis is not None and not keepdims:
        g = ops.expand_dims(g, axis=axis)
    return ops.broadcast_to(g, ops.shape(x))


def _count(ops, x, ans):
    return ops.size(x) // max(ops.size(ans), 1)


def _extremum(ops, g, ans, x, axis=None, keepdims=False):
    """The gradient of max/min flows to the extremal entries, shared evenly between ties."""
    hit = ops.equal(x, _restore(ops, ans, x, axis, keepdims))
    ties = ops.sum(hit, axis=axis, keepdims=True)
    return _restore(ops, g, x, axis, keepdims) * hit / ties


# ---- reductions -----------------------------------------------------------------------------
defvjp("sum",  lambda ops, g, ans, x, axis=None, keepdims=False:
               _restore(ops, g, x, axis, keepdims))
defvjp("mean", lambda ops, g, ans, x, axis=None, keepdims=False:
               _restore(ops, g, x, axis, keepdims) / _count(ops, x, ans))
defvjp("prod", lambda ops, g, ans, x, axis=None, keepdims=False:
               _restore(ops, g * ans, x, axis, keepdims) / x)
defvjp("max",  _extremum)
defvjp("min",  _extremum)
