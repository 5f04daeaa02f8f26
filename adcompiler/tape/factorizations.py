"""``np.linalg.cholesky``, ``eigh``, ``eigvalsh``, ``svd``, ``svdvals``, ``qr``, ``pinv``,
``lstsq``, ``cond``, ``matrix_power``, ``multi_dot``, ``matrix_norm``, ``vector_norm``,
``np.kron``, ``np.vander`` and ``np.polyfit`` on tensors: the primitives and
compositions the compiler records for them (``adcompiler/frontend/library/factorizations.py``),
with the rules of ``templates/factorizations.py``.

Invariants: values are NumPy's, and so are its errors; what the compiler refuses with a located
error (``svd(full_matrices=True)`` of a non-square matrix, ``hermitian=True``, ``qr`` of a wide
matrix, ``lstsq``'s residuals and rank) raises a TypeError here where an input requires grad,
and runs on the values otherwise. SciPy's ``cholesky``/``solve_triangular``/``cho_factor``/
``cho_solve`` are plain Python functions that tensors cannot reach (they do not dispatch):
``dynamic_grad`` reads them as the tape's (:mod:`.scipy_functions`); called on tensors outside
it, write the solve with ``np.linalg.solve``.
"""

from __future__ import annotations

import numpy as np

from adcompiler.compositions import factorizations as fz
from adcompiler.compositions import norms

from . import mode, numpy_api
from .compositions import OPS, tensor_of
from .numpy_api import _any_requires, run_plain
from .record import apply


def _refuse_or_run(name, fn, args, kwargs, why):
    """``fn`` on the values where no input requires grad, else a TypeError saying ``why``."""
    if mode.is_grad_enabled() and _any_requires(list(args) + list(kwargs.values())):
        raise TypeError(f"{name} {why} is not differentiable on the tape")
    return run_plain(name, fn, args, kwargs)


def _swapped(a):
    nd = np.ndim(a)
    return OPS.transpose(a, axes=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def cholesky(a, /, *, upper=False):
    if upper:
        return _swapped(apply("cholesky", (_swapped(tensor_of(a)),)))
    return apply("cholesky", (a,))


def eigh(a, UPLO="L"):
    uplo = str(UPLO).upper()
    return fz.EighResult(apply("eigh_values", (a,), {"UPLO": uplo}),
                         apply("eigh_vectors", (a,), {"UPLO": uplo}))


def eigvalsh(a, UPLO="L"):
    return apply("eigvalsh", (a,), {"UPLO": str(UPLO).upper()})


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    kwargs = dict(full_matrices=full_matrices, compute_uv=compute_uv, hermitian=hermitian)
    if hermitian:
        return _refuse_or_run("np.linalg.svd", np.linalg.svd, (a,), kwargs, "with hermitian=True")
    if not compute_uv:
        return apply("svdvals", (a,))
    m, n = np.shape(a)[-2:]
    if full_matrices and m != n:
        return _refuse_or_run("np.linalg.svd", np.linalg.svd, (a,), kwargs,
                              "with full_matrices=True of a non-square matrix")
    return fz.SVDResult(apply("svd_u", (a,)), apply("svd_s", (a,)), apply("svd_vh", (a,)))


def qr(a, mode="reduced"):
    m, n = np.shape(a)[-2:]
    if m < n or (mode not in ("reduced", "r") and not (mode == "complete" and m == n)):
        return _refuse_or_run("np.linalg.qr", np.linalg.qr, (a, mode), {},
                              f"of a {m}x{n} matrix with mode={mode!r}")
    if mode == "r":
        return apply("qr_r", (a,))
    return fz.QRResult(apply("qr_q", (a,)), apply("qr_r", (a,)))


def pinv(a, rcond=None, hermitian=False, **kwargs):
    if hermitian or kwargs:
        return _refuse_or_run("np.linalg.pinv", np.linalg.pinv, (a,),
                              dict(rcond=rcond, hermitian=hermitian, **kwargs),
                              "with hermitian=True or rtol=")
    return apply("pinv", (a,), {"rcond": None if rcond is None else float(rcond)})


def lstsq(a, b, rcond=None):
    """``(x, residuals, rank, s)``: the residuals and the rank on the values, without a
    gradient (their shapes depend on the values, as in the compiler, which refuses them)."""
    plain = run_plain("np.linalg.lstsq", np.linalg.lstsq,
                      (numpy_api._unwrap(a), numpy_api._unwrap(b)), {"rcond": rcond})
    x = apply("lstsq_x", (a, b), {"rcond": None if rcond is None else float(rcond)})
    return x, plain[1], plain[2], apply("svdvals", (a,))


def cond(x, p=None):
    if p not in (None, 2, -2):
        return _refuse_or_run("np.linalg.cond", np.linalg.cond, (x, p), {}, f"with p={p!r}")
    return fz.cond(OPS, tensor_of(x), p)


def matrix_power(a, n):
    return fz.matrix_power(OPS, tensor_of(a), int(n))


def kron(a, b):
    return fz.kron(OPS, tensor_of(a), tensor_of(b), np.shape(a), np.shape(b))


def vander(x, N=None, increasing=False):
    x = tensor_of(x)
    if np.ndim(x) != 1 or N == 0:
        return _refuse_or_run("np.vander", np.vander, (x, N, increasing), {},
                              "of a non-1-D x or with N=0")
    if not np.issubdtype(x.dtype, np.floating):
        x = OPS.astype(x, "float64")
    return fz.vander(OPS, x, np.shape(x)[0], np.shape(x)[0] if N is None else int(N),
                     bool(increasing))


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    if full or w is not None or cov:
        return _refuse_or_run("np.polyfit", np.polyfit, (x, y, deg, rcond, full, w, cov), {},
                              "with full=, w= or cov=")
    x, y = tensor_of(x), tensor_of(y)
    x, y = (v if np.issubdtype(v.dtype, np.floating) else OPS.astype(v, "float64")
            for v in (x, y))
    eps = float(np.finfo(x.dtype).eps)
    return fz.polyfit(OPS, x, y, int(deg), np.shape(x)[0], eps, rcond)


numpy_api.FUNCTIONS.update({
    np.linalg.cholesky: cholesky, np.linalg.eigh: eigh, np.linalg.eigvalsh: eigvalsh,
    np.linalg.svd: svd, np.linalg.qr: qr, np.linalg.pinv: pinv, np.linalg.lstsq: lstsq,
    np.linalg.cond: cond, np.linalg.matrix_power: matrix_power, np.kron: kron,
    np.vander: vander, np.polyfit: polyfit,
})


def multi_dot(arrays, *, out=None):
    if out is not None:
        raise NotImplementedError("np.linalg.multi_dot: `out=` is not supported on the tape")
    arrays = [tensor_of(a) for a in arrays]
    if len(arrays) == 2:
        return OPS.dot(*arrays)
    return fz.multi_dot(OPS, arrays, [np.shape(a) for a in arrays])


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return np.linalg.norm(x, ord, (-2, -1), keepdims)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    x = tensor_of(x)
    out = norms.vector_norm(OPS, x, np.shape(x), axis, bool(keepdims), ord)
    if out is None:
        return run_plain("np.linalg.vector_norm", np.linalg.vector_norm, (x,),
                         dict(axis=axis, keepdims=keepdims, ord=ord))
    return out


numpy_api.FUNCTIONS[np.linalg.multi_dot] = multi_dot
if hasattr(np.linalg, "vector_norm"):   # NumPy 2
    numpy_api.FUNCTIONS.update({np.linalg.svdvals: lambda x: apply("svdvals", (x,)),
                                np.linalg.matrix_norm: matrix_norm,
                                np.linalg.vector_norm: vector_norm})
