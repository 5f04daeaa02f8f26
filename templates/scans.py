"""Vector-Jacobian and tangent rules of the scans ``cumsum`` and ``cumprod`` along one ``axis``
(a non-negative int: the frontend flattens for ``axis=None``).

``cumsum``'s adjoint is the reversed cumulative sum of ``g`` (each ``x[j]`` feeds every
``y[i]`` with ``i >= j``). ``cumprod``'s is ``revcumsum(g * y) / x`` where the slice has no
zero, and exact at zeros, as ``prod``'s rule is (``reductions._others``): before the first
zero ``z`` of a slice that formula holds (every ``y[i]``, ``i >= z``, is 0); at ``z`` the
derivative is ``revcumsum(g * y')`` with ``y'`` the cumprod of ``x`` with ``x[z]`` set to 1;
after ``z`` every product that has ``x[j]`` also has ``x[z] = 0``, so it is 0.
"""

from . import defjvp, defvjp


def _reversed(ops, x, axis):
    """``x`` reversed along ``axis`` (a slice with step -1)."""
    return ops.getitem(x, (), (("s", None, None, None),) * axis + (("s", None, None, -1),))


def _revcumsum(ops, g, axis):
    """``out[j] = sum(g[i] for i >= j)`` along ``axis``."""
    return _reversed(ops, ops.cumsum(_reversed(ops, g, axis), axis=axis), axis)


def _zeros(ops, x, axis):
    """``(before, first, safe)``: where no zero of the slice comes at or before the entry,
    where the entry is the slice's first zero, and ``x`` with its zeros replaced by 1."""
    zero = ops.equal(x, 0.0)
    seen = ops.cumsum(zero, axis=axis)
    first = ops.logical_and(zero, ops.equal(seen, 1))
    return ops.equal(seen, 0), first, ops.where(zero, 1.0, x)


def _cumprod(ops, g, ans, x, axis):
    before, first, safe = _zeros(ops, x, axis)
    lifted = ops.cumprod(ops.where(first, 1.0, x), axis=axis)   # y' of the module docstring
    at_first = ops.where(first, _revcumsum(ops, g * lifted, axis), 0.0)
    return ops.where(before, _revcumsum(ops, g * ans, axis) / safe, at_first)


def _cumprod_jvp(ops, dx, ans, x, axis):
    """``y * cumsum(dx / x)`` before the first zero; from it on, ``dx[z] * y'`` (only the
    product without ``x[z]`` survives, and it is 0 from a second zero on)."""
    before, first, safe = _zeros(ops, x, axis)
    lifted = ops.cumprod(ops.where(first, 1.0, x), axis=axis)
    dz = ops.sum(ops.where(first, dx, 0.0), axis=axis, keepdims=True)
    return ops.where(before, ans * ops.cumsum(dx / safe, axis=axis), dz * lifted)


defvjp("cumsum",  lambda ops, g, ans, x, axis: _revcumsum(ops, g, axis))
defjvp("cumsum",  lambda ops, dx, ans, x, axis: ops.cumsum(dx, axis=axis))
defvjp("cumprod", _cumprod)
defjvp("cumprod", _cumprod_jvp)
