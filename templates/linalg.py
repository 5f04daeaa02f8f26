"""Vector-Jacobian and tangent rules of linear algebra (``matmul dot outer``).

Products stay whole-array ``@`` with transposes as views, so BLAS does the work. Products are
bilinear, so each tangent rule is the product with the tangent in that argument's place.
"""

from . import defjvp, defvjp


def _swap(ops, a):
    """The last two axes swapped (a view), for 2-D and batched operands."""
    nd = ops.ndim(a)
    if nd == 2:
        return ops.transpose(a)
    return ops.transpose(a, axes=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _col(ops, v):
    return ops.expand_dims(v, axis=-1)


def _row(ops, v):
    return ops.expand_dims(v, axis=-2)


def matmul_lhs(ops, g, ans, x, y):
    if ops.ndim(x) == 1 and ops.ndim(y) == 1:
        return g * y
    if ops.ndim(x) == 1 and ops.ndim(y) == 2:     # (m,) @ (m, k) -> (k,): a vector-matrix product
        return ops.matmul(g, ops.transpose(y))
    if ops.ndim(x) == 1:                          # (m,) @ (..., m, k) -> (..., k)
        return ops.unbroadcast(ops.squeeze(ops.matmul(_row(ops, g), _swap(ops, y)), axis=-2), x)
    if ops.ndim(y) == 1:                          # (..., n, m) @ (m,) -> (..., n)
        return _col(ops, g) * y
    return ops.unbroadcast(ops.matmul(g, _swap(ops, y)), x)


def matmul_rhs(ops, g, ans, x, y):
    if ops.ndim(x) == 1 and ops.ndim(y) == 1:
        return g * x
    if ops.ndim(y) == 1 and ops.ndim(x) == 2:     # (n, m) @ (m,) -> (n,): a matrix-vector product
        return ops.matmul(ops.transpose(x), g)
    if ops.ndim(y) == 1:                          # (..., n, m) @ (m,) -> (..., n)
        return ops.unbroadcast(ops.squeeze(ops.matmul(_swap(ops, x), _col(ops, g)), axis=-1), y)
    if ops.ndim(x) == 1:                          # (m,) @ (..., m, k) -> (..., k)
        return _col(ops, x) * _row(ops, g)
    if ops.ndim(y) == 2 and ops.ndim(x) > 2:      # (..., n, m) @ (m, k): a weight's gradient
        return _flat_rows(ops, x, g)
    return ops.unbroadcast(ops.matmul(_swap(ops, x), g), y)


def _flat_rows(ops, x, g):
    """``sum over the batch of x_b.T @ g_b`` as one product of the rows stacked,
    ``x.reshape(-1, m).T @ g.reshape(-1, k)``: one BLAS call instead of a batch of small ones
    and a (..., m, k) intermediate summed away."""
    rows = (-1, ops.shape(x)[-1])
    return ops.matmul(ops.transpose(ops.reshape(x, rows)),
                      ops.reshape(g, (-1, ops.shape(g)[-1])))


# ---- products -------------------------------------------------------------------------------
defvjp("matmul", matmul_lhs, matmul_rhs)
defjvp("matmul", lambda ops, dx, ans, x, y: ops.matmul(dx, y),
                 lambda ops, dy, ans, x, y: ops.matmul(x, dy))
# np.dot agrees with matmul up to 2-D; the frontend rejects N-D dot and scalar dot is multiply.
defvjp("dot",    matmul_lhs, matmul_rhs)
defjvp("dot",    lambda ops, dx, ans, x, y: ops.dot(dx, y),
                 lambda ops, dy, ans, x, y: ops.dot(x, dy))
defvjp("outer",  lambda ops, g, ans, x, y: ops.reshape(ops.dot(g, ops.reshape(y, (-1,))),
                                                       ops.shape(x)),
                 lambda ops, g, ans, x, y: ops.reshape(ops.dot(ops.reshape(x, (-1,)), g),
                                                       ops.shape(y)))
defjvp("outer",  lambda ops, dx, ans, x, y: ops.outer(dx, y),
                 lambda ops, dy, ans, x, y: ops.outer(x, dy))
