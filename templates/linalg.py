"""Vector-Jacobian and tangent rules of linear algebra (``matmul dot outer``, and the square
matrices' ``solve inv det logabsdet``).

Products stay whole-array ``@`` with transposes as views, so BLAS does the work. Products are
bilinear, so each tangent rule is the product with the tangent in that argument's place. The
solvers' rules are written in primitives that have rules themselves (``solve``, ``inv``,
``matmul``...), so they differentiate again (Hessians, ``create_graph``).
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


# ---- solvers and determinants of square matrices (..., n, n) --------------------------------
# NumPy 2's solve: a ``b`` of shape (n,) is one vector (against every matrix of a stack), else
# (..., n, k) holds columns. A vector against a stack is solved as columns, ``b[..., None]``,
# so that its cotangent ``g`` (..., n) is not read as a matrix. The forward result (``x``,
# ``inv``, ``det``) is reused; det and slogdet need ``inv(a)``, so at a singular matrix their
# gradients raise NumPy's LinAlgError (as the user's own inverse would).
def _vector_against_stack(ops, a, b):
    return ops.ndim(b) == 1 and ops.ndim(a) > 2


def _solve_columns(ops, a, v):
    """``solve(a, v)`` for ``v`` of ``a``'s batch shape (..., n): one column per matrix."""
    return ops.squeeze(ops.solve(a, _col(ops, v)), axis=-1)


def _adjoint_rhs(ops, g, a, b):
    """``solve(a^T, g)``, the cotangent of ``b`` before broadcast axes are summed."""
    if _vector_against_stack(ops, a, b):
        return _solve_columns(ops, _swap(ops, a), g)
    return ops.solve(_swap(ops, a), g)


def solve_lhs(ops, g, ans, a, b):
    gb = _adjoint_rhs(ops, g, a, b)
    if ops.ndim(b) == 1 and ops.ndim(a) == 2:
        return -ops.outer(gb, ans)
    if ops.ndim(b) == 1:
        return ops.unbroadcast(-(_col(ops, gb) * _row(ops, ans)), a)
    return ops.unbroadcast(-ops.matmul(gb, _swap(ops, ans)), a)


def solve_rhs(ops, g, ans, a, b):
    return ops.unbroadcast(_adjoint_rhs(ops, g, a, b), b)


def solve_lhs_jvp(ops, da, ans, a, b):
    if _vector_against_stack(ops, a, b):
        return -ops.squeeze(ops.solve(a, ops.matmul(da, _col(ops, ans))), axis=-1)
    return -ops.solve(a, ops.matmul(da, ans))


def solve_rhs_jvp(ops, db, ans, a, b):
    if _vector_against_stack(ops, a, b):   # (n, 1): columns on NumPy 1, 2 and CuPy alike
        return ops.squeeze(ops.solve(a, _col(ops, db)), axis=-1)
    return ops.solve(a, db)


def _per_matrix(ops, s):
    """A value per matrix (..., ) as (..., 1, 1), to scale each matrix of a stack."""
    return s if ops.ndim(s) == 0 else ops.expand_dims(s, axis=(-2, -1))


def _trace_of_product(ops, m, d):
    """``trace(m^T @ d)`` per matrix: the sum of the entrywise product."""
    return ops.sum(m * d, axis=(-2, -1))


defvjp("solve",  solve_lhs, solve_rhs)
defjvp("solve",  solve_lhs_jvp, solve_rhs_jvp)
defvjp("inv",    lambda ops, g, ans, a: -ops.matmul(ops.matmul(_swap(ops, ans), g),
                                                    _swap(ops, ans)))
defjvp("inv",    lambda ops, da, ans, a: -ops.matmul(ops.matmul(ans, da), ans))
defvjp("det",    lambda ops, g, ans, a: _per_matrix(ops, g * ans) * _swap(ops, ops.inv(a)))
defjvp("det",    lambda ops, da, ans, a: ans * _trace_of_product(ops, _swap(ops, ops.inv(a)), da))
defvjp("logabsdet", lambda ops, g, ans, a: _per_matrix(ops, g) * _swap(ops, ops.inv(a)))
defjvp("logabsdet", lambda ops, da, ans, a: _trace_of_product(ops, _swap(ops, ops.inv(a)), da))
