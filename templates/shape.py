"""Vector-Jacobian rules of shape and indexing primitives, and of copies and conversions."""

from . import defvjp, defvjp_argnum


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


def _getitem(ops, g, ans, x, *arrays, index):
    return ops.scatter_add(g, arrays, ops.shape(x), index)


# ---- reshaping ------------------------------------------------------------------------------
defvjp("reshape",      lambda ops, g, ans, x, shape: ops.reshape(g, ops.shape(x)))
defvjp("expand_dims",  lambda ops, g, ans, x, axis: ops.reshape(g, ops.shape(x)))
defvjp("squeeze",      lambda ops, g, ans, x, axis=None: ops.reshape(g, ops.shape(x)))
defvjp("transpose",    _transpose)
defvjp("broadcast_to", lambda ops, g, ans, x, shape: ops.unbroadcast(g, x))

# ---- joining --------------------------------------------------------------------------------
defvjp_argnum("concatenate", _concatenate)
defvjp_argnum("stack",       _stack)

# ---- indexing: the adjoint of a gather scatters (np.add.at, so repeated indices add up) -----
defvjp("getitem",      _getitem)

# ---- copies and conversions -----------------------------------------------------------------
defvjp("copy",         lambda ops, g, ans, x: g)
defvjp("astype",       lambda ops, g, ans, x, dtype: ops.astype(g, dtype=ops.dtype(x)))
defvjp("to_float",     lambda ops, g, ans, x: g)
defvjp("full",         lambda ops, g, ans, fill, shape, dtype=None: ops.sum(g))
defvjp("sum_to",       lambda ops, g, ans, x, shape: ops.broadcast_to(g, ops.shape(x)))
