"""SciPy's special functions in compiled code: ``scipy.special.erf`` and the other elementwise
rows of module ``scipy.special`` (``ir.primitives``), ``polygamma(n, x)``, ``logsumexp`` /
``softmax`` / ``log_softmax`` and ``scipy.stats.norm``'s densities and tails
(:mod:`adcompiler.compositions.special`), of ``norm`` itself or of a frozen ``norm(loc,
scale)``.

SciPy is optional: nothing here imports it until user code calls one of its functions (then the
user's code has imported it), so :func:`handler_for` looks SciPy's functions up in
``sys.modules`` only. A SciPy function missing here is refused with a located error (never
inlined from SciPy's source: :func:`is_library_function`); a ``math`` function whose derivative
needs SciPy (``math.lgamma``: ``digamma``) says to install SciPy where it is missing
(:func:`require_scipy`).
"""

from __future__ import annotations

import sys
import types

import numpy as np

from ...compositions import special
from ...ir import Value
from ...ir.primitives import ELEMENTWISE
from .binding import CallError, axis_arg, bind, positional, static

_ROWS = [r for r in ELEMENTWISE if r.module == "scipy.special" and r.np_call]
_TABLE: dict = {}    # SciPy's function -> handler, filled once scipy.special is imported


def is_library_function(func) -> bool:
    """Whether ``func`` is SciPy's (or NumPy's): called as a library function, never inlined."""
    module = getattr(func, "__module__", None) or ""
    return module.split(".")[0] in ("numpy", "scipy")


def handler_for(func):
    """The handler of a SciPy function user code calls, or None."""
    if "scipy.special" in sys.modules and not _TABLE:
        _fill(sys.modules["scipy.special"])
    try:
        found = _TABLE.get(func)
    except TypeError:   # unhashable
        return None
    if found is not None:
        return found
    if isinstance(func, types.MethodType) and isinstance(func.__self__, FrozenNorm):
        return func.__self__.handler(func.__name__)
    if "scipy.stats" in sys.modules:
        norm = sys.modules["scipy.stats"].norm
        if func is norm:
            return _frozen
        if isinstance(func, types.MethodType) and func.__self__ is norm and \
                func.__name__ in special.NORM:
            return _norm(func.__name__)
    return None


def require_scipy(what: str):
    """A CallError unless SciPy can be imported: ``what`` needs it."""
    try:
        import scipy.special  # noqa: F401
    except ImportError:
        raise CallError(f"needs SciPy for {what}, and SciPy is not installed",
                        "install it (pip install scipy), or write the function without it")\
            from None


# ---- the handlers ---------------------------------------------------------------------------
def _elementwise(name, arity):
    """``scipy.special.<name>(x, ...)``: a NumPy scalar for numbers, as SciPy's ufunc gives."""
    def handler(b, args, kwargs):
        out = b.emit(name, positional(args, arity))
        if isinstance(out, Value) and out.aval.is_scalar:
            out = b.emit("asarray", (out,))
        return out
    return handler


def _polygamma(b, args, kwargs):
    """``polygamma(n, x)``: ``n`` an int known while compiling (0 is digamma)."""
    p = bind(args, kwargs, ("n", "x"), required=2)
    n = p["n"]
    if isinstance(n, Value) or isinstance(n, bool) or not isinstance(
            n, (int, np.integer)) or n < 0:
        raise CallError(f"takes an order n that is an int >= 0 known while compiling, not "
                        f"{_describe(n)}", "pass a Python int, e.g. polygamma(1, x); for orders "
                        "that vary, compute each in its own call")
    if int(n) == 0:
        return _elementwise("digamma", 1)(b, [p["x"]], {})
    return b.emit("polygamma", (int(n), p["x"]))


def _describe(n) -> str:
    if isinstance(n, Value):
        return f"a traced {n.aval} value"
    return repr(n)


def _axis(p):
    return axis_arg(p["axis"]) if p.get("axis") is not None else None


def _logsumexp(b, args, kwargs):
    """``logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False)``."""
    p = bind(args, kwargs, ("a", "axis", "b", "keepdims", "return_sign"))
    return special.logsumexp(b, p["a"], _axis(p), p.get("b"),
                             bool(static(p.get("keepdims", False), "`keepdims=`")),
                             bool(static(p.get("return_sign", False), "`return_sign=`")))


def _softmax(which):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("x", "axis"))
        return which(b, p["x"], _axis(p))
    return handler


def _norm(name):
    """``scipy.stats.norm.<name>(x, loc=0, scale=1)``."""
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("q" if name == "ppf" else "x", "loc", "scale"))
        x = p["q" if name == "ppf" else "x"]
        return special.NORM[name](b, x, p.get("loc", 0.0), p.get("scale", 1.0))
    return handler


class FrozenNorm:
    """``scipy.stats.norm(loc, scale)`` while compiling: its methods lower as ``norm``'s with
    this ``loc`` and ``scale`` (traced or not); the object itself never reaches the graph."""

    def __init__(self, loc, scale):
        self.loc, self.scale = loc, scale

    def handler(self, name):
        def handler(b, args, kwargs):
            p = bind(args, kwargs, ("q" if name == "ppf" else "x",))
            return special.NORM[name](b, p["q" if name == "ppf" else "x"], self.loc, self.scale)
        return handler

    # the methods compiled code may call (looked up by name: handler_for)
    def logpdf(self, x): ...
    def pdf(self, x): ...
    def cdf(self, x): ...
    def logcdf(self, x): ...
    def sf(self, x): ...
    def logsf(self, x): ...
    def ppf(self, q): ...


def _frozen(b, args, kwargs):
    """``scipy.stats.norm(loc=0, scale=1)``: a frozen distribution."""
    p = bind(args, kwargs, ("loc", "scale"), required=0)
    return FrozenNorm(p.get("loc", 0.0), p.get("scale", 1.0))


def _fill(sp):
    _TABLE.update({getattr(sp, r.name): _elementwise(r.name, r.arity) for r in _ROWS
                   if r.name != "polygamma"})
    _TABLE.update({sp.polygamma: _polygamma, sp.psi: _elementwise("digamma", 1),
                   sp.logsumexp: _logsumexp, sp.softmax: _softmax(special.softmax),
                   sp.log_softmax: _softmax(special.log_softmax)})


def library_functions() -> dict:
    """``{"scipy.special.erf": (function, handler)}`` for every SciPy function compiled code
    may call (the documentation's table; it imports SciPy)."""
    import scipy.special
    import scipy.stats
    handler_for(scipy.special.erf)   # fills the table
    names = [r.name for r in _ROWS] + ["logsumexp", "softmax", "log_softmax"]
    out = {f"scipy.special.{n}": (getattr(scipy.special, n), _TABLE[getattr(scipy.special, n)])
           for n in names}
    out.update({f"scipy.stats.norm.{n}": (getattr(scipy.stats.norm, n), _norm(n))
                for n in special.NORM})
    out["scipy.stats.norm"] = (scipy.stats.norm, _frozen)   # norm(loc, scale).logpdf(x)...
    return dict(sorted(out.items()))
