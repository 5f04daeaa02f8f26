"""Vector-Jacobian and tangent rules of the matrix factorizations: ``cholesky``,
``solve_triangular``, ``eigh`` (``eigh_values``, ``eigh_vectors``, ``eigvalsh``), ``svd``
(``svd_u``, ``svd_s``, ``svd_vh``, ``svdvals``), ``qr`` (``qr_q``, ``qr_r``), ``pinv`` and
``lstsq_x``, and of ``tril`` (their triangles).

Every rule is written in primitives that have rules themselves (``solve_triangular``, ``tril``,
``matmul``, the factorization's own results...), so they differentiate again: Hessians come from
the forward-over-reverse path the solvers use. Each result of a factorization is its own
primitive; a rule that needs another result (``eigh_values``'s needs the eigenvectors) asks for
it by the same call, which CSE merges with the user's (and ``passes.factorizations`` reads all
the results of one matrix from one LAPACK call).

What is differentiated is NumPy's function as it reads its input:

- ``cholesky`` and ``eigh`` read one triangle of ``a`` (the lower one; ``UPLO='U'``: the upper
  one), the other is never looked at. Their cotangent is that of NumPy's function: zero on the
  unread triangle, the symmetric pair's sum on the read one. (JAX and PyTorch give the
  symmetrized matrix instead; the two agree on any symmetric input built from parameters, which
  is what a user's gradient goes through.)
- ``eigh``'s eigenvector rule and ``svd``'s singular-vector rules divide by the differences of
  eigenvalues (``1 / (w_j - w_i)``; ``1 / (s_j^2 - s_i^2)``): they assume distinct values, as JAX
  and PyTorch do. At an exact tie the rule divides by zero: NumPy's RuntimeWarning and an
  inf or NaN gradient, never a finite wrong one. Eigenvalues' and singular values' own rules
  (``V diag(g) V^T``, ``U diag(g) V^T``) are finite at ties.
- ``qr``'s rules need ``m >= n`` (the frontend refuses wider matrices, as JAX does); ``pinv``'s
  and ``lstsq``'s hold where the rank does not change near ``a`` (the usual full-rank case).
- Triangular solves are SciPy's ``solve_triangular`` where SciPy is installed (for stacks of
  matrices: SciPy 1.15 or later), else NumPy's ``solve`` (same values, about twice the work).
"""

from __future__ import annotations

from . import defjvp, defvjp
from .linalg import _col, _row, _swap

_SCIPY: list = []   # [imports, solves stacks] once asked


def has_scipy(batched=False) -> bool:
    """Whether ``scipy.linalg`` imports (asked once); ``batched``: and its ``solve_triangular``
    takes stacks of matrices (SciPy 1.15 and later)."""
    if not _SCIPY:
        try:
            import numpy
            import scipy.linalg
        except ImportError:
            _SCIPY.extend([False, False])
        else:
            try:
                scipy.linalg.solve_triangular(numpy.ones((2, 1, 1)), numpy.ones((2, 1, 1)))
                _SCIPY.extend([True, True])
            except ValueError:
                _SCIPY.extend([True, False])
    return _SCIPY[1] if batched else _SCIPY[0]


# ---- triangles -------------------------------------------------------------------------------
def _triu(ops, x, k=0):
    """The upper triangle from the k-th diagonal up, as the lower one of the transpose."""
    return _swap(ops, ops.tril(_swap(ops, x), k=-k))


def _phi(ops, x):
    """The lower triangle with its diagonal halved (the Cholesky rules' Phi)."""
    return 0.5 * (ops.tril(x) + ops.tril(x, k=-1))


def _read_triangle(ops, g, lower):
    """The cotangent of ``a`` where a function of the symmetric matrix built from one triangle
    of ``a`` has cotangent ``g``: each read entry below (above) the diagonal stands for two."""
    h = g + _swap(ops, g)
    if lower:
        return 0.5 * (ops.tril(h) + ops.tril(h, k=-1))
    return 0.5 * (_triu(ops, h) + _triu(ops, h, 1))


def _symmetric_from(ops, da, lower):
    """The tangent of the symmetric matrix built from one triangle of ``a``."""
    if lower:
        return ops.tril(da) + _swap(ops, ops.tril(da, k=-1))
    return _triu(ops, da) + _swap(ops, _triu(ops, da, 1))


def _tri_solve(ops, t, b, lower, trans=0):
    """``op(t)^-1 b`` for a triangular ``t`` whose other triangle is zero (L from cholesky, R
    from qr) and matrices ``b`` (..., n, k); ``op`` transposes where ``trans``."""
    if has_scipy(batched=ops.ndim(t) > 2):
        return ops.solve_triangular(t, b, lower=lower, trans=trans)
    return ops.solve(_swap(ops, t) if trans else t, b)


defvjp("tril", lambda ops, g, ans, x, k=0: ops.tril(g, k=k))
defjvp("tril", lambda ops, dx, ans, x, k=0: ops.tril(dx, k=k))


# ---- Cholesky: a = L L^T from a's lower triangle -----------------------------------------
def cholesky_vjp(ops, g, ans, a):
    """``L^-T Phi(L^T g) L^-1`` (Murray 2016), read back onto the lower triangle."""
    m = _phi(ops, ops.matmul(_swap(ops, ans), g))
    x = _tri_solve(ops, ans, m, lower=True, trans=1)                   # L^-T M
    gt = _tri_solve(ops, ans, _swap(ops, x), lower=True, trans=1)      # (L^-T M L^-1)^T
    return ops.tril(_swap(ops, gt)) + ops.tril(gt, k=-1)


def cholesky_jvp(ops, da, ans, a):
    """``dL = L Phi(L^-1 dS L^-T)``, dS the symmetric tangent read from the lower triangle."""
    y = _tri_solve(ops, ans, _symmetric_from(ops, da, True), lower=True)   # L^-1 dS
    p = _tri_solve(ops, ans, _swap(ops, y), lower=True)                 # L^-1 dS L^-T
    return ops.matmul(ans, _phi(ops, p))


defvjp("cholesky", cholesky_vjp)
defjvp("cholesky", cholesky_jvp)


# ---- triangular solves: x = op(T)^-1 b, T one triangle of a -------------------------------
def _mask(ops, m, lower, unit):
    """The entries of ``a`` the solve reads (the diagonal too unless ``unit``)."""
    return ops.tril(m, k=-1 if unit else 0) if lower else _triu(ops, m, 1 if unit else 0)


def _columns(ops, b, *vs):
    """Vectors as columns (..., n, 1) where ``b`` is one vector: the rules treat matrices."""
    return [_col(ops, v) for v in vs] if ops.ndim(b) == 1 else list(vs)


def solve_triangular_lhs(ops, g, ans, a, b, lower=False, trans=0, unit_diagonal=False):
    g, x = _columns(ops, b, g, ans)
    gb = ops.solve_triangular(a, g, lower=lower, trans=1 - trans, unit_diagonal=unit_diagonal)
    outer = ops.matmul(gb, _swap(ops, x)) if trans == 0 else ops.matmul(x, _swap(ops, gb))
    return ops.unbroadcast(-_mask(ops, outer, lower, unit_diagonal), a)


def solve_triangular_rhs(ops, g, ans, a, b, lower=False, trans=0, unit_diagonal=False):
    (g,) = _columns(ops, b, g)
    gb = ops.solve_triangular(a, g, lower=lower, trans=1 - trans, unit_diagonal=unit_diagonal)
    return ops.unbroadcast(ops.squeeze(gb, axis=-1) if ops.ndim(b) == 1 else gb, b)


def solve_triangular_lhs_jvp(ops, da, ans, a, b, lower=False, trans=0, unit_diagonal=False):
    (x,) = _columns(ops, b, ans)
    dt = _mask(ops, da, lower, unit_diagonal)
    rhs = ops.matmul(_swap(ops, dt) if trans else dt, x)
    dx = -ops.solve_triangular(a, rhs, lower=lower, trans=trans, unit_diagonal=unit_diagonal)
    return ops.squeeze(dx, axis=-1) if ops.ndim(b) == 1 else dx


def solve_triangular_rhs_jvp(ops, db, ans, a, b, lower=False, trans=0, unit_diagonal=False):
    (db,) = _columns(ops, b, db)
    dx = ops.solve_triangular(a, db, lower=lower, trans=trans, unit_diagonal=unit_diagonal)
    dx = ops.squeeze(dx, axis=-1) if ops.ndim(b) == 1 else dx
    return ops.broadcast_to(dx, ops.shape(ans)) if ops.shape(dx) != ops.shape(ans) else dx


defvjp("solve_triangular", solve_triangular_lhs, solve_triangular_rhs)
defjvp("solve_triangular", solve_triangular_lhs_jvp, solve_triangular_rhs_jvp)


# ---- symmetric eigendecomposition: S = V diag(w) V^T ---------------------------------------
def _gaps(ops, w):
    """``F``: ``1 / (w_j - w_i)`` off the diagonal, 0 on it (inf, with NumPy's warning, at a
    tie: see the module docstring)."""
    e = ops.expand_dims(w, axis=-2) - ops.expand_dims(w, axis=-1)      # w_j - w_i
    ones = ops.ones_like(e)
    r = 1.0 / (e + (ops.tril(ones) - ops.tril(ones, k=-1)))            # 1 on the diagonal
    return ops.tril(r, k=-1) + _triu(ops, r, 1)


def _sandwich(ops, v, m):
    """``V m V^T``."""
    return ops.matmul(ops.matmul(v, m), _swap(ops, v))


def _inner(ops, v, ds):
    """``V^T dS V``."""
    return ops.matmul(ops.matmul(_swap(ops, v), ds), v)


def eigh_values_vjp(ops, g, ans, a, UPLO="L"):
    v = ops.eigh_vectors(a, UPLO=UPLO)
    return _read_triangle(ops, ops.matmul(v * _row(ops, g), _swap(ops, v)), UPLO == "L")


def eigh_values_jvp(ops, da, ans, a, UPLO="L"):
    v = ops.eigh_vectors(a, UPLO=UPLO)
    ds = _symmetric_from(ops, da, UPLO == "L")
    return ops.sum(v * ops.matmul(ds, v), axis=-2)                     # diag(V^T dS V)


def eigh_vectors_vjp(ops, g, ans, a, UPLO="L"):
    f = _gaps(ops, ops.eigh_values(a, UPLO=UPLO))
    inner = f * ops.matmul(_swap(ops, ans), g)
    return _read_triangle(ops, _sandwich(ops, ans, inner), UPLO == "L")


def eigh_vectors_jvp(ops, da, ans, a, UPLO="L"):
    f = _gaps(ops, ops.eigh_values(a, UPLO=UPLO))
    ds = _symmetric_from(ops, da, UPLO == "L")
    return ops.matmul(ans, f * _inner(ops, ans, ds))


defvjp("eigh_values", eigh_values_vjp)
defjvp("eigh_values", eigh_values_jvp)
defvjp("eigvalsh", eigh_values_vjp)
defjvp("eigvalsh", eigh_values_jvp)
defvjp("eigh_vectors", eigh_vectors_vjp)
defjvp("eigh_vectors", eigh_vectors_jvp)


# ---- thin SVD: a = U diag(s) Vh, a (..., m, n), k = min(m, n) ------------------------------
def _svd(ops, a):
    return ops.svd_u(a), ops.svd_s(a), ops.svd_vh(a)


def _tall(ops, a):
    m, n = ops.shape(a)[-2:]
    return m > n


def _wide(ops, a):
    m, n = ops.shape(a)[-2:]
    return n > m


def svd_values_vjp(ops, g, ans, a):
    u, _, vh = _svd(ops, a)
    return ops.matmul(u * _row(ops, g), vh)


def svd_values_jvp(ops, da, ans, a):
    u, _, vh = _svd(ops, a)
    return ops.sum(u * ops.matmul(da, _swap(ops, vh)), axis=-2)        # diag(U^T dA V)


def svd_u_vjp(ops, g, ans, a):
    u, s, vh = _svd(ops, a)
    j = _gaps(ops, s * s) * ops.matmul(_swap(ops, u), g)
    ga = ops.matmul(ops.matmul(u, (j + _swap(ops, j)) * _row(ops, s)), vh)
    if _tall(ops, a):   # the part of g outside U's columns
        rest = g - ops.matmul(u, ops.matmul(_swap(ops, u), g))
        ga = ga + ops.matmul(rest / _row(ops, s), vh)
    return ga


def svd_vh_vjp(ops, g, ans, a):
    u, s, vh = _svd(ops, a)
    k = _gaps(ops, s * s) * ops.matmul(vh, _swap(ops, g))               # F o (V^T gV)
    ga = ops.matmul(ops.matmul(u, _col(ops, s) * (k + _swap(ops, k))), vh)
    if _wide(ops, a):   # the part of g outside Vh's rows
        rest = g - ops.matmul(ops.matmul(g, _swap(ops, vh)), vh)
        ga = ga + ops.matmul(u / _row(ops, s), rest)
    return ga


def _svd_tangent_core(ops, da, a):
    u, s, vh = _svd(ops, a)
    return u, s, vh, _gaps(ops, s * s), ops.matmul(ops.matmul(_swap(ops, u), da), _swap(ops, vh))


def svd_u_jvp(ops, da, ans, a):
    u, s, vh, f, dp = _svd_tangent_core(ops, da, a)
    du = ops.matmul(u, f * (dp * _row(ops, s) + _col(ops, s) * _swap(ops, dp)))
    if _tall(ops, a):
        dav = ops.matmul(da, _swap(ops, vh))
        du = du + (dav - ops.matmul(u, ops.matmul(_swap(ops, u), dav))) / _row(ops, s)
    return du


def svd_vh_jvp(ops, da, ans, a):
    u, s, vh, f, dp = _svd_tangent_core(ops, da, a)
    v = _swap(ops, vh)
    dv = ops.matmul(v, f * (_col(ops, s) * dp + _swap(ops, dp) * _row(ops, s)))
    if _wide(ops, a):
        dau = ops.matmul(_swap(ops, da), u)
        dv = dv + (dau - ops.matmul(v, ops.matmul(vh, dau))) / _row(ops, s)
    return _swap(ops, dv)


defvjp("svd_s", svd_values_vjp)
defjvp("svd_s", svd_values_jvp)
defvjp("svdvals", svd_values_vjp)
defjvp("svdvals", svd_values_jvp)
defvjp("svd_u", svd_u_vjp)
defjvp("svd_u", svd_u_jvp)
defvjp("svd_vh", svd_vh_vjp)
defjvp("svd_vh", svd_vh_jvp)


# ---- reduced QR: a = Q R, a (..., m, n), m >= n (Townsend's derivation, as JAX's rule) -----
def _times_r_inv_t(ops, c, r):
    """``c R^-T``, as ``(R^-1 c^T)^T``."""
    return _swap(ops, _tri_solve(ops, r, _swap(ops, c), lower=False))


def _below(ops, m):
    """The strictly lower triangle of ``m - m^T``."""
    return ops.tril(m - _swap(ops, m), k=-1)


def qr_q_vjp(ops, g, ans, a):
    r = ops.qr_r(a)
    m = ops.matmul(_swap(ops, ans), g)
    c = ops.matmul(ans, _below(ops, m) - m) + g
    return _times_r_inv_t(ops, c, r)


def qr_r_vjp(ops, g, ans, a):
    q = ops.qr_q(a)
    n = ops.matmul(g, _swap(ops, ans))
    return _times_r_inv_t(ops, ops.matmul(q, n - _below(ops, n)), ans)


def _qr_tangent_core(ops, da, a):
    """``(Q, R, B, X, dO)``: B = dA R^-1, X = Q^T B, dO = X's skew part below the diagonal."""
    q, r = ops.qr_q(a), ops.qr_r(a)
    b = _swap(ops, _tri_solve(ops, r, _swap(ops, da), lower=False, trans=1))
    x = ops.matmul(_swap(ops, q), b)
    low = ops.tril(x, k=-1)
    return q, r, b, x, low - _swap(ops, low)


def qr_q_jvp(ops, da, ans, a):
    q, r, b, x, do = _qr_tangent_core(ops, da, a)
    return ops.matmul(q, do - x) + b


def qr_r_jvp(ops, da, ans, a):
    q, r, b, x, do = _qr_tangent_core(ops, da, a)
    return ops.matmul(x - do, r)


defvjp("qr_q", qr_q_vjp)
defjvp("qr_q", qr_q_jvp)
defvjp("qr_r", qr_r_vjp)
defjvp("qr_r", qr_r_jvp)


# ---- pseudo-inverse P = pinv(a), and lstsq's solution x = P b (Golub and Pereyra) ---------
def _pinv_cotangent(ops, g, p, a):
    """``-P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A)``, without identities."""
    pt, gt = _swap(ops, p), _swap(ops, g)
    w = ops.matmul(gt, ops.matmul(p, pt))
    z = ops.matmul(ops.matmul(pt, p), gt)
    return (-ops.matmul(ops.matmul(pt, g), pt) + w - ops.matmul(a, ops.matmul(p, w))
            + z - ops.matmul(ops.matmul(z, p), a))


def _pinv_tangent(ops, da, p, a):
    """``-P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P``."""
    pt, dat = _swap(ops, p), _swap(ops, da)
    left = ops.matmul(ops.matmul(p, pt), dat)
    right = ops.matmul(dat, ops.matmul(pt, p))
    return (-ops.matmul(ops.matmul(p, da), p) + left - ops.matmul(ops.matmul(left, a), p)
            + right - ops.matmul(p, ops.matmul(a, right)))


def _outer_with(ops, g, b):
    """``g b^T`` for the solution's cotangent ``g`` and the right-hand side ``b``."""
    return ops.outer(g, b) if ops.ndim(b) == 1 else ops.matmul(g, _swap(ops, b))


defvjp("pinv", lambda ops, g, ans, a, rcond=None: _pinv_cotangent(ops, g, ans, a))
defjvp("pinv", lambda ops, da, ans, a, rcond=None: _pinv_tangent(ops, da, ans, a))
defvjp("lstsq_x",
       lambda ops, g, ans, a, b, rcond=None: _pinv_cotangent(ops, _outer_with(ops, g, b),
                                                             ops.pinv(a), a),
       lambda ops, g, ans, a, b, rcond=None: ops.matmul(_swap(ops, ops.pinv(a)), g))
defjvp("lstsq_x",
       lambda ops, da, ans, a, b, rcond=None: ops.matmul(_pinv_tangent(ops, da, ops.pinv(a), a),
                                                         b),
       lambda ops, db, ans, a, b, rcond=None: ops.matmul(ops.pinv(a), db))
