"""Vector-Jacobian and tangent rules of shape and indexing primitives, copies and conversions.

These primitives are linear, so each tangent rule applies the primitive itself to the tangent.
"""

from . import defjvp, defjvp_argnum, defvjp, defvjp_argnum


def _inverse_perm(axes):
    inv = [0] * len(axes)
    for i, a in enumerate(axes):
        inv[a] = i
    return tuple(inv)


def _transpose(ops, g, ans, x, axes=None):
    if axes is None:
        return ops.transpose(g)
    return ops.transpose(g, axes=_inverse_perm([a % len(axes) for a in axes]))


def _concatenate(ops, argnum, g, ans, *xs, axis=0):
    """The slice of ``g`` that input ``argnum`` filled."""
    nd = ops.ndim(ans)
    ax = axis % nd
    start = sum(ops.shape(x)[ax] for x in xs[:argnum])
    stop = start + ops.shape(xs[argnum])[ax]
    index = (("s", None, None, None),) * ax + (("s", start, stop, None),)
    return ops.getitem(g, (), index)


def _stack(ops, argnum, g, ans, *xs, axis=0):
    ax = axis % ops.ndim(ans)
    return ops.getitem(g, (), (("s", None, None, None),) * ax + (("i", argnum),))


def _concatenate_jvp(ops, argnum, dx, ans, *xs, axis=0):
    """Input ``argnum``'s tangent in its place, zeros in the other inputs' places."""
    parts = [dx if i == argnum else ops.zeros_like(x) for i, x in enumerate(xs)]
    return ops.concatenate(parts, axis=axis)


def _stack_jvp(ops, argnum, dx, ans, *xs, axis=0):
    parts = [dx if i == argnum else ops.zeros_like(x) for i, x in enumerate(xs)]
    return ops.stack(parts, axis=axis)


def _getitem(ops, g, ans, x, *arrays, index):
    return ops.scatter_add(g, arrays, ops.shape(x), index)


def _setitem_value(ops, g, ans, x, v, *arrays, index):
    """``g`` over the region ``v`` was written to; where an index repeats, only the write that
    stayed (NumPy's last) gets it, the overwritten ones get zero."""
    region = ops.getitem(g, arrays, index)
    kept = ops.last_writes(g, arrays, index) if arrays else None
    if kept is not None:
        region = ops.where(kept, region, 0.0)
    return _fit(ops, region, v)


def _fit(ops, g, v):
    """``g`` summed back to the shape of ``v``, which NumPy broadcast into the region; ``v`` may
    have more dimensions than the region, leading ones (``b[0] = z`` with z of shape (1, 3))."""
    extra = len(ops.shape(v)) - len(ops.shape(g))
    if extra > 0:
        g = ops.reshape(g, (1,) * extra + tuple(ops.shape(g)))
    return ops.unbroadcast(g, v)


# ---- reshaping ------------------------------------------------------------------------------
defvjp("reshape",      lambda ops, g, ans, x, shape: ops.reshape(g, ops.shape(x)))
defjvp("reshape",      lambda ops, dx, ans, x, shape: ops.reshape(dx, ops.shape(ans)))
defvjp("expand_dims",  lambda ops, g, ans, x, axis: ops.reshape(g, ops.shape(x)))
defjvp("expand_dims",  lambda ops, dx, ans, x, axis: ops.reshape(dx, ops.shape(ans)))
defvjp("squeeze",      lambda ops, g, ans, x, axis=None: ops.reshape(g, ops.shape(x)))
defjvp("squeeze",      lambda ops, dx, ans, x, axis=None: ops.reshape(dx, ops.shape(ans)))
defvjp("transpose",    _transpose)
defjvp("transpose",    lambda ops, dx, ans, x, axes=None: ops.transpose(dx, axes=axes))
defvjp("broadcast_to", lambda ops, g, ans, x, shape: ops.unbroadcast(g, x))
defjvp("broadcast_to", lambda ops, dx, ans, x, shape: ops.broadcast_to(dx, ops.shape(ans)))

# ---- joining --------------------------------------------------------------------------------
defvjp_argnum("concatenate", _concatenate)
defjvp_argnum("concatenate", _concatenate_jvp)
defvjp_argnum("stack",       _stack)
defjvp_argnum("stack",       _stack_jvp)

# ---- indexing: the adjoint of a gather scatters (np.add.at, so repeated indices add up) -----
defvjp("getitem",      _getitem)
defjvp("getitem",      lambda ops, dx, ans, x, *arrays, index: ops.getitem(dx, arrays, index))
# ...and the adjoint of that scatter gathers again (it is linear in g).
defvjp("scatter_add",  lambda ops, g, ans, x, *arrays, shape, index: ops.getitem(g, arrays, index))
defjvp("scatter_add",  lambda ops, dx, ans, x, *arrays, shape, index:
                       ops.scatter_add(dx, arrays, shape, index))

defvjp("index_add",    lambda ops, g, ans, acc, x, *arrays, index: g,
                      lambda ops, g, ans, acc, x, *arrays, index: ops.getitem(g, arrays, index))
defjvp("index_add",    lambda ops, dx, ans, acc, x, *arrays, index: dx,
                       lambda ops, dx, ans, acc, x, *arrays, index:
                       ops.setitem(ops.zeros_like(ans), dx, arrays, index) if _rows(ans)
                       else ops.scatter_add(dx, arrays, ops.shape(ans), index))

# ---- assignment: x[index] = v overwrites, so x's gradient there is cut and v's gathered ----
# (x[index] += v is x[index] = x[index] + v: its gather gets only the writes that stayed, too)
defvjp("setitem",      lambda ops, g, ans, x, v, *arrays, index: ops.setitem(g, 0.0, arrays, index),
                       _setitem_value)
defjvp("setitem",      lambda ops, dx, ans, x, v, *arrays, index: ops.setitem(dx, 0.0, arrays, index),
                       lambda ops, dv, ans, x, v, *arrays, index:
                       ops.setitem(ops.zeros_like(ans), dv, arrays, index))

# ---- copies and conversions -----------------------------------------------------------------
defvjp("copy",         lambda ops, g, ans, x: g)
defvjp("asarray",      lambda ops, g, ans, x: g)
defjvp("asarray",      lambda ops, dx, ans, x: ops.asarray(dx))  # an array, as its primal
defjvp("copy",         lambda ops, dx, ans, x: dx)
defvjp("astype",       lambda ops, g, ans, x, dtype: ops.astype(g, dtype=ops.dtype(x)))
defjvp("astype",       lambda ops, dx, ans, x, dtype: ops.astype(dx, dtype=dtype))
defvjp("to_float",     lambda ops, g, ans, x: g)
defjvp("to_float",     lambda ops, dx, ans, x: dx)
defvjp("full",         lambda ops, g, ans, fill, shape, dtype=None: ops.unbroadcast(g, fill))
defjvp("full",         lambda ops, dx, ans, fill, shape, dtype=None: ops.broadcast_to(dx, shape))
defvjp("sum_to",       lambda ops, g, ans, x, shape: ops.broadcast_to(g, ops.shape(x)))
defjvp("sum_to",       lambda ops, dx, ans, x, shape: ops.unbroadcast(dx, ans))

# ---- a while loop's stack (a list), read by index: its cotangent is an array of one row per
# element (zeros but for g at k); linear, so its tangent is the same read of the list's tangent
def _rows(x) -> bool:
    """Whether ``x`` is a list's IR value (its length is known only when it runs)."""
    return getattr(getattr(x, "aval", None), "kind", None) == "list"


def _row(k):
    """``(arrays, index)`` of ``xs[k]``: a traced k is an index input, an int a static one."""
    return ((k,), (("a", 0),)) if hasattr(k, "aval") else ((), (("i", k),))


defvjp("list_get",     lambda ops, g, ans, stack, k:
                       ops.setitem(ops.zeros_like(stack), g, *_row(k)), None)
defjvp("list_get",     lambda ops, dx, ans, stack, k: ops.getitem(dx, *_row(k)), None)
