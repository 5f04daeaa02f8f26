"""Vector-Jacobian and tangent rules of reductions (``sum mean prod max min`` with ``axis`` and
``keepdims``). A tangent rule reduces the input tangent the way the primitive reduces the input."""

from . import defjvp, defvjp


def _restore(ops, g, x, axis, keepdims):
    """Put a reduced ``g`` back on ``x``'s shape: re-insert the reduced axes, then broadcast."""
    if axis is not None and not keepdims and ops.ndim(x) > 0:  # a 0-d x lost no axis
        g = ops.expand_dims(g, axis=axis)
    return ops.broadcast_to(g, ops.shape(x))


def _count(ops, x, ans):
    return ops.size(x) // max(ops.size(ans), 1)


def _others(ops, ans, x, axis, keepdims):
    """For each entry of ``x``, the product of the other entries of its slice, exact at zeros
    (``ans / x`` is 0/0 there): the product of the nonzero entries where it is its slice's only
    zero, 0 where its slice has another zero."""
    zero = ops.equal(x, 0.0)
    nonzero = ops.where(zero, 1.0, x)
    alone = ops.equal(ops.sum(zero, axis=axis, keepdims=True), 1)
    at_zero = ops.where(alone, ops.prod(nonzero, axis=axis, keepdims=True), 0.0)
    return ops.where(zero, at_zero, _restore(ops, ans, x, axis, keepdims) / nonzero)


def _extremum(ops, g, ans, x, axis=None, keepdims=False):
    """The gradient of max/min flows to the extremal entries, shared evenly between ties; it
    is zero where the compiler proves the function's output invariant under shifting the
    result (the max subtracted in a softmax or logsumexp: see
    :mod:`templates.idioms.shift_invariance`), where the rule's five passes over ``x`` would
    compute ``0`` up to rounding."""
    from .idioms.shift_invariance import cotangent_vanishes  # on first use: import stays light
    if cotangent_vanishes(ops, ans):
        return _zeros(ops, x)
    hit = ops.equal(x, _restore(ops, ans, x, axis, keepdims))
    ties = ops.sum(hit, axis=axis, keepdims=True)
    if ops.dtype(x) != "float64":  # an int64 count would make float32 entries float64
        ties = ops.astype(ties, ops.dtype(x))
    return _restore(ops, g, x, axis, keepdims) * hit / ties


def _zeros(ops, x):
    """Zeros of ``x``'s shape and dtype, spelled as a broadcast number (a typed one for
    float32...) that the simplifier drops from the sum of cotangents it joins."""
    zero = 0.0 if ops.dtype(x) == "float64" else ops.astype(0.0, ops.dtype(x))
    return ops.broadcast_to(zero, ops.shape(x))


def _extremum_jvp(ops, dx, ans, x, axis=None, keepdims=False):
    """The mean of the tangents of the extremal entries (ties share, as in the adjoint)."""
    hit = ops.equal(x, _restore(ops, ans, x, axis, keepdims))
    return (ops.sum(dx * hit, axis=axis, keepdims=keepdims)
            / ops.sum(hit, axis=axis, keepdims=keepdims))


# ---- reductions -----------------------------------------------------------------------------
defvjp("sum",  lambda ops, g, ans, x, axis=None, keepdims=False:
               _restore(ops, g, x, axis, keepdims))
defjvp("sum",  lambda ops, dx, ans, x, axis=None, keepdims=False:
               ops.sum(dx, axis=axis, keepdims=keepdims))
defvjp("mean", lambda ops, g, ans, x, axis=None, keepdims=False:
               _restore(ops, g, x, axis, keepdims) / _count(ops, x, ans))
defjvp("mean", lambda ops, dx, ans, x, axis=None, keepdims=False:
               ops.mean(dx, axis=axis, keepdims=keepdims))
defvjp("prod", lambda ops, g, ans, x, axis=None, keepdims=False:
               _restore(ops, g, x, axis, keepdims) * _others(ops, ans, x, axis, keepdims))
defjvp("prod", lambda ops, dx, ans, x, axis=None, keepdims=False:
               ops.sum(dx * _others(ops, ans, x, axis, keepdims), axis=axis, keepdims=keepdims))
defvjp("max",  _extremum)
defjvp("max",  _extremum_jvp)
defvjp("min",  _extremum)
defjvp("min",  _extremum_jvp)
