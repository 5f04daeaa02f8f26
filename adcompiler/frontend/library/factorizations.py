"""Matrix factorizations of traced arrays: ``np.linalg.cholesky``, ``eigh``, ``eigvalsh``,
``svd``, ``svdvals``, ``qr``, ``pinv``, ``lstsq``, ``cond``, ``matrix_power``, ``multi_dot``,
``np.kron``, ``np.vander``, ``np.polyfit``, and SciPy's ``cholesky``, ``solve_triangular``,
``cho_factor`` and ``cho_solve``. One primitive per result (rules in
``templates/factorizations.py``), or a composition of them
(:mod:`adcompiler.compositions.factorizations`).

Choices: arguments are checked here, so a wrong shape or an option without a rule is a located
error with what to write instead, never NumPy's LinAlgError on every call or a silent wrong
gradient. Refused: ``svd(full_matrices=True)`` of a non-square matrix (the extra columns of U or
Vh are not functions of ``a``: pass ``full_matrices=False``), ``hermitian=True``, ``qr`` of a
wide matrix and its ``'complete'``/``'raw'`` modes, ``lstsq``'s residuals and rank (data-dependent
shapes: its solution ``[0]`` and singular values ``[3]`` are given), ``polyfit``'s ``full``,
``w`` and ``cov``. ``cholesky(upper=True)`` is the transposed factor of ``a.T`` (it reads the
upper triangle, as NumPy's). SciPy's functions are looked up only where SciPy is imported
(:func:`handler_for`).
"""

from __future__ import annotations

import sys

import numpy as np

from ...compositions import factorizations as fz
from ...ir import Value
from .binding import CallError, bind, static
from .compositions import _array
from .creation import contains_value
from .solvers import _FLOATS, _matrix


def _swap(b, a):
    nd = len(b.shape(a))
    return b.emit("transpose", (a,), {"axes": tuple(range(nd - 2)) + (nd - 1, nd - 2)})


def _matrices(b, a, name="a"):
    """``a``'s shape, checked to be a matrix or a stack of them (..., m, n) of floats or ints."""
    if a.aval.kind != "array":
        raise CallError("needs an array of shape (..., m, n), not a number",
                        "pass a 2-D (or stacked) array")
    dtype = np.dtype(a.aval.dtype)
    if dtype.name not in _FLOATS and dtype.kind not in "iub":
        raise CallError(f"of a {dtype.name} array is not supported (NumPy's linalg takes "
                        "float32 and float64 here)", "convert it with .astype(np.float64)")
    shape = b.shape(a)
    if len(shape) < 2:
        raise CallError(f"needs a matrix (..., m, n), but `{name}` has shape {shape}",
                        "NumPy raises LinAlgError here: pass a 2-D array")
    return shape


def _traced(b, a, square=True):
    a = _array(b, a)
    (_matrix if square else _matrices)(b, a, "a")
    return a


def _flag(p, name, default):
    return static(p.get(name, default), f"`{name}=`")


def _not_hermitian(p):
    if _flag(p, "hermitian", False):
        raise CallError("with hermitian=True has no rule here",
                        "for a symmetric matrix use np.linalg.eigh (or leave hermitian=False)")


# ---- Cholesky and triangular solves ----------------------------------------------------------
def _cholesky(b, args, kwargs):
    p = bind(args, kwargs, ("a", "upper"))
    upper = bool(_flag(p, "upper", False))
    if not contains_value(p["a"]):
        return np.linalg.cholesky(p["a"], upper=True) if upper else np.linalg.cholesky(p["a"])
    a = _traced(b, p["a"])
    if upper:   # NumPy reads the upper triangle: the factor of a.T, transposed
        return _swap(b, b.emit("cholesky", (_swap(b, a),)))
    return b.emit("cholesky", (a,))


def _scipy_cholesky(b, args, kwargs):
    """SciPy's ``cholesky(a, lower=False)``: the upper factor by default, read from the upper
    triangle (NumPy's ``cholesky(a, upper=True)``)."""
    p = bind(args, kwargs, ("a", "lower", "overwrite_a", "check_finite"))
    lower = bool(_flag(p, "lower", False))
    if not contains_value(p["a"]):
        from scipy.linalg import cholesky
        return cholesky(np.asarray(p["a"]), lower=lower)
    return _cholesky(b, [p["a"]], {"upper": not lower})


_TRANS = {0: 0, 1: 1, 2: 1, "N": 0, "T": 1, "C": 1}   # real matrices: 'C' is 'T'


def _solve_triangular(b, args, kwargs):
    p = bind(args, kwargs, ("a", "b", "trans", "lower", "unit_diagonal", "overwrite_b",
                            "check_finite"), required=2)
    trans = static(p.get("trans", 0), "`trans=`")
    if trans not in _TRANS:
        raise CallError(f"takes trans= 0, 1, 2, 'N', 'T' or 'C', not {trans!r}",
                        "SciPy raises ValueError here too")
    params = {"lower": bool(_flag(p, "lower", False)), "trans": _TRANS[trans],
              "unit_diagonal": bool(_flag(p, "unit_diagonal", False))}
    a, rhs = p["a"], p["b"]
    if not contains_value(a) and not contains_value(rhs):
        from scipy.linalg import solve_triangular
        return solve_triangular(np.asarray(a), np.asarray(rhs), **params)
    a, rhs = _traced(b, a), _array(b, rhs)
    _columns_match(b, a, rhs)
    return b.emit("solve_triangular", (a, rhs), params)


def _columns_match(b, a, rhs):
    """``b`` is one vector (n,) or matrices (..., n, k), as ``np.linalg.solve``'s."""
    shape, rows = b.shape(a), b.shape(rhs)
    if len(shape) > 2 and len(rows) == len(shape) - 1 and rows[-1] == shape[-1]:
        raise CallError(f"of a stack of matrices {shape} and `b` of shape {rows} is ambiguous "
                        "(vectors or one matrix)", "solve for columns: f(a, b[..., None])[..., 0]")
    if not rows or rows[-1 if len(rows) == 1 else -2] != shape[-1]:
        raise CallError(f"of `a` of shape {shape} needs `b` of shape ({shape[-1]},) or "
                        f"(..., {shape[-1]}, k), not {rows}", "b's rows must match a's")


def _cho_factor(b, args, kwargs):
    p = bind(args, kwargs, ("a", "lower", "overwrite_a", "check_finite"))
    lower = bool(_flag(p, "lower", False))
    if not contains_value(p["a"]):
        from scipy.linalg import cho_factor
        return cho_factor(np.asarray(p["a"]), lower=lower)
    return fz.cho_factor(b, _traced(b, p["a"]), lower), lower


def _cho_solve(b, args, kwargs):
    p = bind(args, kwargs, ("c_and_lower", "b", "overwrite_b", "check_finite"), required=2)
    pair = p["c_and_lower"]
    if not isinstance(pair, tuple) or len(pair) != 2:
        raise CallError("takes the pair (c, lower) that cho_factor returns",
                        "cho_solve(cho_factor(a), b)")
    c, lower = pair
    lower = bool(static(lower, "`lower`"))
    if not contains_value(c) and not contains_value(p["b"]):
        from scipy.linalg import cho_solve
        return cho_solve((np.asarray(c), lower), np.asarray(p["b"]))
    c, rhs = _traced(b, c), _array(b, p["b"])
    _columns_match(b, c, rhs)
    return fz.cho_solve(b, c, lower, rhs)


# ---- eigendecomposition, SVD, QR -------------------------------------------------------------
def _uplo(p):
    uplo = static(p.get("UPLO", "L"), "`UPLO=`")
    if not isinstance(uplo, str) or uplo.upper() not in ("L", "U"):
        raise CallError(f"takes UPLO='L' or 'U', not {uplo!r}", "NumPy raises ValueError here")
    return uplo.upper()


def _eigh(b, args, kwargs):
    p = bind(args, kwargs, ("a", "UPLO"))
    uplo = _uplo(p)
    if not contains_value(p["a"]):
        return np.linalg.eigh(p["a"], uplo)
    a = _traced(b, p["a"])
    return fz.EighResult(b.emit("eigh_values", (a,), {"UPLO": uplo}),
                         b.emit("eigh_vectors", (a,), {"UPLO": uplo}))


def _eigvalsh(b, args, kwargs):
    p = bind(args, kwargs, ("a", "UPLO"))
    uplo = _uplo(p)
    if not contains_value(p["a"]):
        return np.linalg.eigvalsh(p["a"], uplo)
    return b.emit("eigvalsh", (_traced(b, p["a"]),), {"UPLO": uplo})


def _svd(b, args, kwargs):
    p = bind(args, kwargs, ("a", "full_matrices", "compute_uv", "hermitian"))
    full, uv = bool(_flag(p, "full_matrices", True)), bool(_flag(p, "compute_uv", True))
    _not_hermitian(p)
    if not contains_value(p["a"]):
        return np.linalg.svd(p["a"], full_matrices=full, compute_uv=uv)
    a = _traced(b, p["a"], square=False)
    if not uv:
        return b.emit("svdvals", (a,))
    m, n = b.shape(a)[-2:]
    if full and m != n:
        raise CallError(f"with full_matrices=True (NumPy's default) of a {m}x{n} matrix has "
                        "no rule: the extra columns of U or Vh are not functions of `a`",
                        "pass full_matrices=False (or compute_uv=False for the singular values)")
    return fz.SVDResult(b.emit("svd_u", (a,)), b.emit("svd_s", (a,)), b.emit("svd_vh", (a,)))


def _qr(b, args, kwargs):
    p = bind(args, kwargs, ("a", "mode"))
    mode = static(p.get("mode", "reduced"), "`mode=`")
    if not contains_value(p["a"]):
        return np.linalg.qr(p["a"], mode)
    a = _traced(b, p["a"], square=False)
    m, n = b.shape(a)[-2:]
    if m < n:
        raise CallError(f"of a wide {m}x{n} matrix has no rule here (the rule needs at "
                        "least as many rows as columns, as JAX's)",
                        "factor the transpose instead: Q, R = np.linalg.qr(A.T) gives "
                        "A = R.T @ Q.T")
    if mode not in ("reduced", "r") and not (mode == "complete" and m == n):
        raise CallError(f"with mode={mode!r} has no rule here",
                        "use mode='reduced' (the default) or mode='r'")
    if mode == "r":
        return b.emit("qr_r", (a,))
    return fz.QRResult(b.emit("qr_q", (a,)), b.emit("qr_r", (a,)))


def _pinv(b, args, kwargs):
    p = bind(args, kwargs, ("a", "rcond", "hermitian", "rtol"))
    _not_hermitian(p)
    rcond = static(p.get("rcond"), "`rcond=`")
    if p.get("rtol") is not None:
        raise CallError("with rtol= has no rule here", "pass rcond= instead (same meaning)")
    if not contains_value(p["a"]):
        return np.linalg.pinv(p["a"]) if rcond is None else np.linalg.pinv(p["a"], rcond)
    return b.emit("pinv", (_traced(b, p["a"], square=False),),
                  {"rcond": None if rcond is None else float(rcond)})


class Unavailable:
    """``lstsq``'s residuals and rank in compiled code: their shapes depend on the values, so
    using one raises a TypeError that the lowering reports at the user's line."""

    def __init__(self, what):
        self.what = what

    def _refuse(self, *args, **kwargs):
        raise TypeError(f"np.linalg.lstsq's {self.what} are not computed by compiled code "
                        "(their shape depends on the values): use the solution [0] and the "
                        "singular values [3], e.g. np.sum((a @ x - b) ** 2, axis=0)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _refuse
    __getitem__ = __len__ = __iter__ = __bool__ = __float__ = __int__ = __index__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __array__ = __pow__ = __neg__ = _refuse

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self._refuse()


def _lstsq(b, args, kwargs):
    p = bind(args, kwargs, ("a", "b", "rcond"), required=2)
    rcond = static(p.get("rcond"), "`rcond=`")
    if not contains_value(p["a"]) and not contains_value(p["b"]):
        return np.linalg.lstsq(p["a"], p["b"], rcond=rcond)
    a, rhs = _traced(b, p["a"], square=False), _array(b, p["b"])
    shape, rows = b.shape(a), b.shape(rhs)
    if len(shape) != 2 or len(rows) not in (1, 2) or rows[0] != shape[0]:
        raise CallError(f"needs a 2-D `a` and a `b` of {shape[0]} rows, not shapes {shape} "
                        f"and {rows}", "NumPy's lstsq takes one matrix")
    x = b.emit("lstsq_x", (a, rhs), {"rcond": None if rcond is None else float(rcond)})
    return (x, Unavailable("residuals"), Unavailable("rank"), b.emit("svdvals", (a,)))


def _cond(b, args, kwargs):
    p = bind(args, kwargs, ("x", "p"))
    order = static(p.get("p"), "`p=`")
    if not contains_value(p["x"]):
        return np.linalg.cond(p["x"], order)
    if order not in (None, 2, -2):
        raise CallError(f"with p={order!r} has no rule here", "use p=None, 2 or -2")
    return fz.cond(b, _traced(b, p["x"], square=False), order)


# ---- compositions of products ----------------------------------------------------------------
def _matrix_power(b, args, kwargs):
    p = bind(args, kwargs, ("a", "n"), required=2)
    n = p["n"]
    if isinstance(n, Value) or isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise CallError("takes a power n that is an int known while compiling",
                        "NumPy raises TypeError for other powers too")
    if not contains_value(p["a"]):
        return np.linalg.matrix_power(p["a"], n)
    return fz.matrix_power(b, _traced(b, p["a"]), int(n))


def _multi_dot(b, args, kwargs):
    p = bind(args, kwargs, ("arrays",))
    arrays = p["arrays"]
    if not isinstance(arrays, (list, tuple)) or len(arrays) < 2:
        raise CallError("takes a list of at least two arrays", "np.linalg.multi_dot([A, B, C])")
    if not contains_value(list(arrays)):
        return np.linalg.multi_dot(arrays)
    arrays = [_array(b, x) for x in arrays]
    shapes = [b.shape(x) for x in arrays]
    inner = shapes[1:-1]
    if not (1 <= len(shapes[0]) <= 2 and 1 <= len(shapes[-1]) <= 2) or any(
            len(s) != 2 for s in inner):
        raise CallError(f"needs 2-D arrays (the first and last may be 1-D), not shapes {shapes}",
                        "NumPy raises LinAlgError here too")
    if len(arrays) == 2:
        return b.emit("dot", tuple(arrays))
    return fz.multi_dot(b, arrays, shapes)


def _svdvals(b, args, kwargs):
    x = bind(args, kwargs, ("x",))["x"]
    if not contains_value(x):
        return np.linalg.svdvals(x)
    return b.emit("svdvals", (_traced(b, x, square=False),))


def _kron(b, args, kwargs):
    p = bind(args, kwargs, ("a", "b"), required=2)
    x, y = p["a"], p["b"]
    if not contains_value(x) and not contains_value(y):
        return np.kron(x, y)
    x, y = _array(b, x), _array(b, y)
    return fz.kron(b, x, y, b.shape(x), b.shape(y))


def _vander(b, args, kwargs):
    p = bind(args, kwargs, ("x", "N", "increasing"))
    columns, increasing = static(p.get("N"), "`N=`"), bool(_flag(p, "increasing", False))
    if not contains_value(p["x"]):
        return np.vander(p["x"], columns, increasing)
    x = _float(b, _array(b, p["x"]))
    shape = b.shape(x)
    if len(shape) != 1:
        raise CallError(f"needs a 1-D x, not shape {shape}", "NumPy raises ValueError here")
    columns = shape[0] if columns is None else int(columns)
    if columns < 1:
        raise CallError("with N=0 makes an empty matrix, which has no gradient",
                        "pass N >= 1")
    return fz.vander(b, x, shape[0], columns, increasing)


def _float(b, x):
    return x if x.aval.is_float else b.emit("astype", (x,), {"dtype": "float64"})


def _polyfit(b, args, kwargs):
    p = bind(args, kwargs, ("x", "y", "deg", "rcond", "full", "w", "cov"), required=3)
    deg, rcond = static(p["deg"], "`deg=`"), static(p.get("rcond"), "`rcond=`")
    if not contains_value(p["x"]) and not contains_value(p["y"]):
        return np.polyfit(p["x"], p["y"], deg, rcond)
    for name in ("full", "w", "cov"):
        if p.get(name) not in (None, False):
            raise CallError(f"with {name}= has no rule here",
                            "fit with np.linalg.lstsq(np.vander(x, deg + 1), y)[0] "
                            "and compute what you need from it")
    x, y = _float(b, _array(b, p["x"])), _float(b, _array(b, p["y"]))
    shape, rows = b.shape(x), b.shape(y)
    if len(shape) != 1 or len(rows) not in (1, 2) or rows[0] != shape[0] or int(deg) < 0:
        raise CallError(f"needs a 1-D x, a y of as many rows and deg >= 0, not shapes {shape}, "
                        f"{rows} and deg={deg}", "NumPy raises here too")
    eps = float(np.finfo(np.dtype(x.aval.dtype)).eps)
    return fz.polyfit(b, x, y, int(deg), shape[0], eps, rcond)


FUNCTIONS = {np.linalg.cholesky: _cholesky, np.linalg.eigh: _eigh,
             np.linalg.eigvalsh: _eigvalsh, np.linalg.svd: _svd, np.linalg.qr: _qr,
             np.linalg.pinv: _pinv, np.linalg.lstsq: _lstsq, np.linalg.cond: _cond,
             np.linalg.matrix_power: _matrix_power, np.kron: _kron, np.vander: _vander,
             np.polyfit: _polyfit, np.linalg.multi_dot: _multi_dot}
if hasattr(np.linalg, "svdvals"):   # NumPy 2
    FUNCTIONS[np.linalg.svdvals] = _svdvals

_SCIPY = {"solve_triangular": _solve_triangular, "cho_factor": _cho_factor,
          "cho_solve": _cho_solve, "cholesky": _scipy_cholesky}
_TABLE: dict = {}   # SciPy's functions -> handlers, once scipy.linalg is imported


def handler_for(func):
    """The handler of a ``scipy.linalg`` function user code calls, or None (SciPy is looked up
    in ``sys.modules`` only: nothing here imports it)."""
    module = sys.modules.get("scipy.linalg")
    if module is None:
        return None
    if not _TABLE:
        _TABLE.update({getattr(module, name): h for name, h in _SCIPY.items()})
    try:
        return _TABLE.get(func)
    except TypeError:   # unhashable
        return None


def library_functions() -> dict:
    """``{"scipy.linalg.cholesky": (function, handler)}`` for every ``scipy.linalg`` function
    compiled code may call (the documentation's table; it imports SciPy)."""
    import scipy.linalg
    return {f"scipy.linalg.{name}": (getattr(scipy.linalg, name), handler)
            for name, handler in sorted(_SCIPY.items())}
