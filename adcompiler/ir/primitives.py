"""The closed set of primitives: for each, its NumPy meaning, its family and how code spells it.

Every node's ``prim`` names an entry of :data:`PRIMS`. The frontend maps user calls onto these
names, the templates give each differentiable one a rule, the backends print each from ``spell``.
Invariant: ``evaluate(prim, args, params)`` computes exactly what the emitted code computes.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np


@dataclass(frozen=True)
class Prim:
    name: str
    fn: Callable                 # NumPy meaning: fn(*inputs, **params)
    family: str                  # elementwise | reduction | index | linalg | shape | creation
                                 # | internal | control | custom | check
    spell: str                   # "+" style operator, or a callee such as "np.tanh"
    arity: Optional[int] = 1     # None: variadic
    differentiable: bool = True  # False: the output carries no gradient (comparisons, creation)
    params: tuple = ()           # static parameters, in NumPy's positional order
    abstract: Optional[Callable] = None  # (avals, literals) -> output aval, where NumPy's shape
                                         # rules do not apply (family "custom": user functions)
    torch: Optional[str] = None  # the tape's grad_fn name, PyTorch's (``PermuteBackward0``),
                                 # where it depends on nothing but the primitive
    members: tuple = ()          # a whole factorization's results, each a primitive: its
                                 # output is the tuple of theirs (shapes.infer)


PRIMS: dict[str, Prim] = {}


def _def(name, fn, family, spell, arity=1, differentiable=True, params=(), torch=None):
    PRIMS[name] = Prim(name, fn, family, spell, arity, differentiable, params, torch=torch)


# ---- elementwise: one row each ----------------------------------------------------------------
@dataclass(frozen=True)
class Elementwise:
    """Every fact about one elementwise primitive. The frontend's, the backends' and the tape's
    tables of elementwise primitives are derived from these rows (:data:`ELEMENTWISE`), so a new
    one is its row here and its derivative rule in ``templates/elementwise.py``."""
    name: str                     # the function's name in ``module`` (np.<name>)
    arity: int = 1
    differentiable: bool = True   # False: no gradient (comparisons, rounding, predicates)
    op: Optional[str] = None      # Python's operator (``+``), where code spells it so
    libm: Optional[str] = None    # C's math function (CUDA kernels), the name Python's math
                                  # module and generated math code use too
    math: object = False          # ``math.<libm>(x)`` on Python floats lowers to it; a str:
                                  # math's own name, where it is not C's (gamma, C's tgamma)
    numba: Optional[str] = None   # the call in a numba loop body (``math.asinh``); "inline":
                                  # an operator or form the numba emitter writes itself; None:
                                  # numba loops do not take it
    cheap: bool = False           # in numba loops, no libm call (parallel from PARALLEL_MIN)
    sympy: object = None          # the SymPy function's name, or ``(sympy, *args) -> expr``
                                  # (how the templates' rules are checked by sympy.diff)
    torch: Optional[str] = None   # the tape's grad_fn name, PyTorch's (``AsinhBackward0``)
    out: Optional[bool] = None    # takes ``out=`` (planned buffers); None: where NumPy's is a ufunc
    np_call: bool = True          # ``np.<name>(...)`` in user code lowers to it
    tape: bool = True             # the tape records NumPy's function as this primitive
    domain: tuple = ()            # where the rule is checked numerically: each argument's
                                  # (lo, hi, signed) range, away from poles, kinks and jumps
                                  # (signed: -hi..-lo and lo..hi); () for piecewise ones
    module: str = "numpy"         # where the function lives: "numpy", or "scipy.special"
                                  # (optional: imported where first called, see LibraryFunction)

    @property
    def fn(self):
        if self.module == "numpy":
            return getattr(np, self.name)
        return LibraryFunction(self.module, self.name)

    @property
    def spell(self) -> str:
        """How generated code calls it: ``np.tanh``, ``scipy.special.erf`` (an operator's
        rows use ``op`` instead)."""
        return f"{'np' if self.module == 'numpy' else self.module}.{self.name}"

    @property
    def math_name(self) -> Optional[str]:
        """The ``math`` function of Python floats that lowers to it (None: none does)."""
        return (self.math if isinstance(self.math, str) else self.libm) if self.math else None

    @property
    def takes_out(self) -> bool:
        return isinstance(self.fn, np.ufunc) if self.out is None else self.out


class LibraryFunction:
    """``module.name`` of an optional library (SciPy), imported where it is first called: SciPy
    is no dependency of adcompiler, and ``import adcompiler`` never imports it. Equal for equal
    names, so rows compare as values."""

    __slots__ = ("module", "name", "_fn")

    def __init__(self, module, name):
        self.module, self.name, self._fn = module, name, None

    def resolve(self):
        """The function itself (looked up once); an ImportError that says to install the
        library where it is missing."""
        if self._fn is None:
            import importlib
            try:
                self._fn = getattr(importlib.import_module(self.module), self.name)
            except ImportError:
                raise ImportError(f"{self.module}.{self.name} needs "
                                  f"{missing_library(self.module)}") from None
        return self._fn

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __eq__(self, other):
        return isinstance(other, LibraryFunction) and (self.module, self.name) == (
            other.module, other.name)

    def __hash__(self):
        return hash((self.module, self.name))

    def __repr__(self):
        return f"<{self.module}.{self.name}>"


def missing_library(module: str) -> str:
    """What to install for ``module``: "SciPy, which is not installed (pip install scipy)"."""
    return "SciPy, which is not installed (pip install scipy)" if module.startswith("scipy") \
        else f"{module.split('.')[0]}, which is not installed"


_INLINE = "inline"
_ANY = (-2, 2, False)     # a domain: anywhere in [-2, 2]
_CMP = dict(differentiable=False, numba=_INLINE, cheap=True)
_SPECIAL = "scipy.special"
ELEMENTWISE = [
    # operators
    Elementwise("add", 2, op="+", numba=_INLINE, cheap=True, torch="AddBackward0",
                domain=(_ANY, _ANY)),
    Elementwise("subtract", 2, op="-", numba=_INLINE, cheap=True, torch="SubBackward0",
                domain=(_ANY, _ANY)),
    Elementwise("multiply", 2, op="*", numba=_INLINE, cheap=True, torch="MulBackward0",
                domain=(_ANY, _ANY)),
    Elementwise("divide", 2, op="/", numba=_INLINE, cheap=True, torch="DivBackward0",
                domain=(_ANY, (0.5, 2, True))),
    Elementwise("power", 2, op="**", numba=_INLINE, cheap=True, domain=((0.5, 2, False), _ANY)),
    Elementwise("negative", op="-", numba=_INLINE, cheap=True, sympy=lambda sp, x: -x,
                torch="NegBackward0", domain=(_ANY,)),
    # Python's `%` and `//` (NumPy's remainder has the divisor's sign, as Python's `%`); the
    # quotient is piecewise constant: no gradient.
    Elementwise("remainder", 2, op="%",
                # by Python's definition (sympy.Mod's sign rule has changed between versions)
                sympy=lambda sp, x, y: x - y * sp.floor(x / y)),
    Elementwise("floor_divide", 2, differentiable=False, op="//",
                sympy=lambda sp, x, y: sp.floor(x / y)),
    Elementwise("greater", 2, op=">", **_CMP),
    Elementwise("greater_equal", 2, op=">=", **_CMP),
    Elementwise("less", 2, op="<", **_CMP),
    Elementwise("less_equal", 2, op="<=", **_CMP),
    Elementwise("equal", 2, op="==", **_CMP),
    Elementwise("not_equal", 2, op="!=", **_CMP),
    # functions
    Elementwise("exp", libm="exp", math=True, numba="math.exp", sympy="exp",
                torch="ExpBackward0", domain=(_ANY,)),
    Elementwise("log", libm="log", math=True, numba="math.log", sympy="log",
                torch="LogBackward0", domain=((0.2, 3, False),)),
    Elementwise("log1p", libm="log1p", math=True, numba="math.log1p",
                sympy=lambda sp, x: sp.log(1 + x), torch="Log1PBackward0",
                domain=((-0.8, 3, False),)),
    Elementwise("expm1", libm="expm1", math=True, numba="math.expm1",
                sympy=lambda sp, x: sp.exp(x) - 1, torch="Expm1Backward0", domain=(_ANY,)),
    Elementwise("sqrt", libm="sqrt", math=True, numba="math.sqrt", cheap=True, sympy="sqrt",
                torch="SqrtBackward0", domain=((0.2, 3, False),)),
    Elementwise("square", numba=_INLINE, cheap=True, sympy=lambda sp, x: x ** 2,
                torch="PowBackward0", domain=(_ANY,)),
    Elementwise("sin", libm="sin", math=True, numba="math.sin", sympy="sin",
                torch="SinBackward0", domain=(_ANY,)),
    Elementwise("cos", libm="cos", math=True, numba="math.cos", sympy="cos",
                torch="CosBackward0", domain=(_ANY,)),
    Elementwise("tan", libm="tan", math=True, numba="math.tan", sympy="tan",
                torch="TanBackward0", domain=((-1.2, 1.2, False),)),
    Elementwise("tanh", libm="tanh", math=True, numba="math.tanh", sympy="tanh",
                torch="TanhBackward0", domain=(_ANY,)),
    Elementwise("arctan", libm="atan", math=True, numba="math.atan", sympy="atan",
                torch="AtanBackward0", domain=(_ANY,)),
    Elementwise("arcsin", libm="asin", math=True, numba="math.asin", sympy="asin",
                torch="AsinBackward0", domain=((-0.9, 0.9, False),)),
    Elementwise("arccos", libm="acos", math=True, numba="math.acos", sympy="acos",
                torch="AcosBackward0", domain=((-0.9, 0.9, False),)),
    Elementwise("sinh", libm="sinh", math=True, numba="math.sinh", sympy="sinh",
                torch="SinhBackward0", domain=(_ANY,)),
    Elementwise("cosh", libm="cosh", math=True, numba="math.cosh", sympy="cosh",
                torch="CoshBackward0", domain=(_ANY,)),
    # math.fabs(x) lowers to abs; on Python floats generated code writes the builtin abs(x)
    Elementwise("abs", libm="fabs", math=True, numba="abs", cheap=True, sympy="Abs",
                torch="AbsBackward0", domain=((0.2, 2, True),)),
    # np.fabs: abs of real numbers only (PyTorch's abs)
    Elementwise("fabs", libm="fabs", numba="math.fabs", cheap=True, sympy="Abs",
                torch="AbsBackward0", domain=((0.2, 2, True),)),
    Elementwise("reciprocal", numba=_INLINE, cheap=True, sympy=lambda sp, x: 1 / x,
                torch="ReciprocalBackward0", domain=((0.2, 2, True),)),
    Elementwise("arcsinh", libm="asinh", math=True, numba="math.asinh", sympy="asinh",
                torch="AsinhBackward0", domain=(_ANY,)),
    Elementwise("arccosh", libm="acosh", math=True, numba="math.acosh", sympy="acosh",
                torch="AcoshBackward0", domain=((1.2, 3, False),)),
    Elementwise("arctanh", libm="atanh", math=True, numba="math.atanh", sympy="atanh",
                torch="AtanhBackward0", domain=((-0.9, 0.9, False),)),
    Elementwise("cbrt", libm="cbrt", numba="np.cbrt",
                sympy=lambda sp, x: sp.sign(x) * sp.Abs(x) ** sp.Rational(1, 3),
                torch="PowBackward0", domain=((0.2, 2, True),)),
    Elementwise("log2", libm="log2", math=True, numba="math.log2",
                sympy=lambda sp, x: sp.log(x, 2), domain=((0.2, 3, False),)),
    Elementwise("log10", libm="log10", math=True, numba="math.log10",
                sympy=lambda sp, x: sp.log(x, 10), domain=((0.2, 3, False),)),
    Elementwise("exp2", libm="exp2", numba="np.exp2", sympy=lambda sp, x: 2 ** x, domain=(_ANY,)),
    Elementwise("deg2rad", numba="np.deg2rad", cheap=True,
                sympy=lambda sp, x: x * sp.pi / 180, torch="Deg2RadBackward0", domain=(_ANY,)),
    Elementwise("rad2deg", numba="np.rad2deg", cheap=True,
                sympy=lambda sp, x: x * 180 / sp.pi, torch="Rad2DegBackward0", domain=(_ANY,)),
    # sin(pi x) / (pi x), 1 at 0 (NumPy's function, not a ufunc: no out=)
    Elementwise("sinc", numba="np.sinc",
                sympy=lambda sp, x: sp.sin(sp.pi * x) / (sp.pi * x), torch="SincBackward0",
                domain=((0.2, 2, True),)),
    Elementwise("sign", differentiable=False, numba="np.sign", cheap=True, sympy="sign"),
    # Rounding is piecewise constant: no gradient (PyTorch gives 0 too). np.round is rint (0
    # decimals) or rint of a scaled value (adcompiler.frontend.library.compositions).
    Elementwise("floor", differentiable=False, libm="floor", numba="np.floor", cheap=True,
                sympy="floor"),
    Elementwise("ceil", differentiable=False, libm="ceil", numba="np.ceil", cheap=True,
                sympy="ceiling"),
    Elementwise("rint", differentiable=False, libm="rint", numba="np.rint", cheap=True,
                sympy=lambda sp, x: sp.Function("rint")(x), torch="RoundBackward0"),
    Elementwise("trunc", differentiable=False, libm="trunc", numba="np.trunc", cheap=True,
                sympy=lambda sp, x: sp.Function("trunc")(x)),
    Elementwise("hypot", 2, libm="hypot", math=True, numba="np.hypot", cheap=True,
                sympy=lambda sp, x, y: sp.sqrt(x ** 2 + y ** 2),
                domain=((0.2, 2, True), (0.2, 2, True))),
    Elementwise("arctan2", 2, libm="atan2", math=True, numba="np.arctan2", cheap=True,
                sympy="atan2", torch="Atan2Backward0",  # y off 0: the jump at y = 0, x < 0
                domain=((0.2, 2, True), _ANY)),
    # log2(2**x + 2**y), without the overflow
    Elementwise("logaddexp2", 2, numba="np.logaddexp2",
                sympy=lambda sp, x, y: sp.log(2 ** x + 2 ** y, 2), torch="Logaddexp2Backward0",
                domain=(_ANY, _ANY)),
    Elementwise("maximum", 2, numba="np.maximum", cheap=True, sympy="Max",
                torch="MaximumBackward0"),
    Elementwise("minimum", 2, numba="np.minimum", cheap=True, sympy="Min",
                torch="MinimumBackward0"),
    # NaN-ignoring maximum and minimum: C's fmax and fmin
    Elementwise("fmax", 2, libm="fmax", numba="np.fmax", cheap=True, sympy="Max",
                torch="FmaxBackward0"),
    Elementwise("fmin", 2, libm="fmin", numba="np.fmin", cheap=True, sympy="Min",
                torch="FminBackward0"),
    # on 0/1 truth values in SymPy (the rules of fmax and fmin use them)
    Elementwise("logical_and", 2, differentiable=False, sympy="Min"),
    Elementwise("logical_or", 2, differentiable=False, sympy="Max"),
    Elementwise("logical_not", differentiable=False, sympy=lambda sp, x: 1 - x),
    # ---- scipy.special (optional: see LibraryFunction) ----
    # error functions and the normal distribution's
    Elementwise("erf", libm="erf", math=True, numba="math.erf", sympy="erf",
                torch="ErfBackward0", out=True, domain=(_ANY,), module=_SPECIAL),
    Elementwise("erfc", libm="erfc", math=True, numba="math.erfc", sympy="erfc",
                torch="ErfcBackward0", out=True, domain=(_ANY,), module=_SPECIAL),
    Elementwise("erfcx", sympy=lambda sp, x: sp.exp(x ** 2) * sp.erfc(x),
                torch="SpecialErfcxBackward0", out=True, domain=(_ANY,), module=_SPECIAL),
    Elementwise("erfinv", sympy="erfinv", torch="ErfinvBackward0", out=True,
                domain=((-0.9, 0.9, False),), module=_SPECIAL),
    Elementwise("ndtr", sympy=lambda sp, x: (1 + sp.erf(x / sp.sqrt(2))) / 2,
                torch="SpecialNdtrBackward0", out=True, domain=(_ANY,), module=_SPECIAL),
    Elementwise("log_ndtr", sympy=lambda sp, x: sp.log((1 + sp.erf(x / sp.sqrt(2))) / 2),
                torch="SpecialLogNdtrBackward0", out=True, domain=((-3, 3, False),),
                module=_SPECIAL),
    Elementwise("ndtri", sympy=lambda sp, x: sp.sqrt(2) * sp.erfinv(2 * x - 1),
                torch="SpecialNdtriBackward0", out=True, domain=((0.05, 0.95, False),),
                module=_SPECIAL),
    # gamma functions: math.lgamma is gammaln, math.gamma is gamma (C's tgamma)
    Elementwise("gammaln", libm="lgamma", math=True, numba="math.lgamma", sympy="loggamma",
                torch="LgammaBackward0", out=True, domain=((0.2, 5, False),), module=_SPECIAL),
    Elementwise("gamma", libm="tgamma", math="gamma", numba="math.gamma", sympy="gamma",
                out=True, domain=((0.2, 4, False),), module=_SPECIAL),
    Elementwise("digamma", sympy="digamma", torch="DigammaBackward0", out=True,
                domain=((0.2, 5, False),), module=_SPECIAL),
    # polygamma(n, x): n an int known while compiling (a literal input; no rule), SciPy's
    # function (not a ufunc: no out=, and on a tape tensor it does not dispatch to the tape)
    Elementwise("polygamma", 2, sympy="polygamma", torch="PolygammaBackward0", out=False,
                tape=False, module=_SPECIAL),
    Elementwise("betaln", 2,
                sympy=lambda sp, a, b: sp.loggamma(a) + sp.loggamma(b) - sp.loggamma(a + b),
                out=True, domain=((0.3, 3, False), (0.3, 3, False)), module=_SPECIAL),
    # the logistic function and its inverse
    Elementwise("expit", sympy=lambda sp, x: 1 / (1 + sp.exp(-x)), torch="SigmoidBackward0",
                out=True, domain=(_ANY,), module=_SPECIAL),
    Elementwise("logit", sympy=lambda sp, x: sp.log(x / (1 - x)), torch="LogitBackward0",
                out=True, domain=((0.1, 0.9, False),), module=_SPECIAL),
    Elementwise("log_expit", sympy=lambda sp, x: -sp.log(1 + sp.exp(-x)),
                torch="LogSigmoidBackward0", out=True, domain=(_ANY,), module=_SPECIAL),
    # x * log(y) and x * log1p(y), 0 where x is 0
    Elementwise("xlogy", 2, sympy=lambda sp, x, y: x * sp.log(y), torch="XlogyBackward0",
                out=True, domain=(_ANY, (0.2, 3, False)), module=_SPECIAL),
    Elementwise("xlog1py", 2, sympy=lambda sp, x, y: x * sp.log(1 + y),
                torch="SpecialXlog1pyBackward0", out=True, domain=(_ANY, (-0.8, 3, False)),
                module=_SPECIAL),
    # exponentially scaled modified Bessel functions: exp(-|x|) I0(x), exp(-|x|) I1(x)
    Elementwise("i0e", sympy=lambda sp, x: sp.exp(-sp.Abs(x)) * sp.besseli(0, x),
                torch="SpecialI0eBackward0", out=True, domain=((0.2, 2, True),),
                module=_SPECIAL),
    Elementwise("i1e", sympy=lambda sp, x: sp.exp(-sp.Abs(x)) * sp.besseli(1, x),
                torch="SpecialI1eBackward0", out=True, domain=((0.2, 2, True),),
                module=_SPECIAL),
    Elementwise("where", 3, numba=_INLINE, cheap=True, torch="WhereBackward0", tape=False),
    Elementwise("clip", 3, out=True, np_call=False, tape=False),  # np.clip: library.compositions
    # predicates: bool results, no gradient (it flows through the values they select)
    Elementwise("isfinite", differentiable=False, tape=False),
    Elementwise("isnan", differentiable=False, tape=False,
                sympy=lambda sp, x: sp.Integer(0)),   # a real symbol is never NaN
    Elementwise("isinf", differentiable=False, tape=False),
]
ELEMENTWISE_BY_NAME = {row.name: row for row in ELEMENTWISE}
_PREDICATES = ("isfinite", "isnan", "isinf")   # entered below, after the reductions


def _def_elementwise(row):
    _def(row.name, row.fn, "elementwise", row.op or row.spell, row.arity,
         row.differentiable, torch=row.torch)


for _row in ELEMENTWISE:
    if _row.name not in _PREDICATES:
        _def_elementwise(_row)
    if _row.name == "power":  # matmul stands where it always stood among the operators
        _def("matmul", np.matmul, "linalg", "@", 2)

# ---- math module on Python scalars (same rules as the NumPy names) --------------------------
MATH_PRIMS = {r.math_name: getattr(math, r.math_name) for r in ELEMENTWISE if r.math}
# The math spelling of each primitive that has one (adjoint code on Python floats uses it; abs
# of a Python float is the builtin abs).
MATH_NAMES = {r.name: r.math_name for r in ELEMENTWISE if r.math and r.name != "abs"}

# ---- reductions ---------------------------------------------------------------------------
for _n in ["sum", "mean", "prod", "max", "min"]:
    _def(_n, getattr(np, _n), "reduction", f"np.{_n}", params=("axis", "keepdims"))

# ---- predicates and positions: bool or integer results, no gradient ---------------------------
# (the gradient flows through the float values they select: ``x[np.argmax(x)]``, np.where)
for _n in _PREDICATES:
    _def_elementwise(ELEMENTWISE_BY_NAME[_n])
for _n in ["all", "any"]:
    _def(_n, getattr(np, _n), "reduction", f"np.{_n}", differentiable=False,
         params=("axis", "keepdims"))
# Family "index": integer positions of entries (new arrays, of intp). NumPy's argsort sorts the
# last axis by default; the frontend spells axis=None as the argsort of the flattened array.
for _n in ["argmax", "argmin"]:
    _def(_n, getattr(np, _n), "index", f"np.{_n}", differentiable=False,
         params=("axis", "keepdims"))
_def("argsort", np.argsort, "index", "np.argsort", differentiable=False, params=("axis", "kind"))
# Positions that carry no gradient themselves; np.partition and np.maximum.accumulate are gathers
# at them (adcompiler.compositions.sorting, .scans), np.digitize a searchsorted.
_def("argpartition", np.argpartition, "index", "np.argpartition", differentiable=False,
     params=("kth", "axis"))
_def("searchsorted", np.searchsorted, "index", "np.searchsorted", 2, differentiable=False,
     params=("side",))
_def("maximum_accumulate", np.maximum.accumulate, "index", "np.maximum.accumulate",
     differentiable=False, params=("axis",))
_def("minimum_accumulate", np.minimum.accumulate, "index", "np.minimum.accumulate",
     differentiable=False, params=("axis",))

# ---- linear algebra -------------------------------------------------------------------------
_def("dot", np.dot, "linalg", "np.dot", 2)
_def("outer", np.outer, "linalg", "np.outer", 2, torch="OuterBackward0")
# Einstein sums in normal form (adcompiler/frontend/library/einsum.py): explicit "ij,jk->ik", each
# operand's letters distinct, one size per letter; never a lone operand's permutation (a
# transpose, a view), so always a new array. Spelled np.einsum('ij,jk->ik', a, b).
_def("einsum", lambda *xs, subscripts, optimize=False: np.einsum(subscripts, *xs,
                                                                 optimize=optimize),
     "linalg", "np.einsum", None, params=("subscripts", "optimize"))
# Scans along one axis (an int, >= 0: the frontend flattens for axis=None), linear maps (cumsum)
# and their products: like the products above, new arrays of NumPy's dtype (int32 sums to int64).
_def("cumsum", np.cumsum, "linalg", "np.cumsum", params=("axis",))
_def("cumprod", np.cumprod, "linalg", "np.cumprod", params=("axis",))
# Square matrices (..., n, n) (adcompiler/frontend/library/solvers.py): NumPy's LAPACK calls,
# float32 for float32 inputs, else float64. slogdet's two results are two nodes, each spelled
# ``np.linalg.slogdet(a)[k]``: the sign (no gradient) and the log of |det|.
_def("solve", np.linalg.solve, "linalg", "np.linalg.solve", 2, torch="LinalgSolveExBackward0")
_def("inv", np.linalg.inv, "linalg", "np.linalg.inv", torch="LinalgInvExBackward0")
_def("det", np.linalg.det, "linalg", "np.linalg.det", torch="LinalgDetBackward0")
_def("slogdet_sign", lambda a: np.linalg.slogdet(a)[0], "linalg", "np.linalg.slogdet",
     differentiable=False)
_def("logabsdet", lambda a: np.linalg.slogdet(a)[1], "linalg", "np.linalg.slogdet",
     torch="LinalgSlogdetBackward0")
# Factorizations (adcompiler/frontend/library/factorizations.py, rules in
# templates/factorizations.py): one primitive per result, each its own LAPACK call, spelled
# ``np.linalg.eigh(a, UPLO='L')[k]`` and so on (CSE merges equal calls). ``tril`` keeps the
# lower triangle (below the k-th diagonal), the rules' triangles and masks.
_def("tril", lambda x, k=0: np.tril(x, k), "linalg", "np.tril", params=("k",))
_def("cholesky", np.linalg.cholesky, "linalg", "np.linalg.cholesky",
     torch="LinalgCholeskyExBackward0")


def solve_triangular(a, b, lower=False, trans=0, unit_diagonal=False):
    """SciPy's ``solve_triangular`` (batched), imported where first used: SciPy is optional."""
    import scipy.linalg
    return scipy.linalg.solve_triangular(a, b, trans=trans, lower=lower,
                                         unit_diagonal=unit_diagonal)


_def("solve_triangular", solve_triangular, "linalg", "scipy.linalg.solve_triangular", 2,
     params=("lower", "trans", "unit_diagonal"), torch="LinalgSolveTriangularBackward0")
def cho_inverse_lower(a):
    """``tril(inv(a @ a.T))`` for ``a`` a Cholesky factor (lower triangular, upper triangle zero):
    LAPACK's ``potri`` on ``a.T`` (the upper factor, Fortran-ordered as ``a`` is C-ordered: no
    copy in) writes the upper triangle of ``K^-1`` in Fortran order and leaves the rest as the
    input's (zero), so its transpose is the lower triangle, C-ordered. Without SciPy: NumPy's
    inverse of the triangle, then its product (the same value, about twice the work)."""
    try:
        from scipy.linalg import lapack
    except ImportError:
        inv = np.linalg.inv(a)
        return np.tril(inv.T @ inv)
    return lapack.dpotri(a.T, lower=0)[0].T


# The lower triangle of K^-1 from K's Cholesky factor L: made only by passes.cholesky_inverses,
# in adjoint code and from a float64 ``cholesky`` output (its spelling, SciPy's LAPACK wrapper,
# is float64's); never differentiated (plain code, the code transformed again, does not run that
# pass), so it has no rule.
_def("cho_inverse_lower", cho_inverse_lower, "linalg", "scipy.linalg.lapack.dpotri",
     differentiable=False)
_def("eigh_values", lambda a, UPLO="L": np.linalg.eigh(a, UPLO)[0], "linalg", "np.linalg.eigh",
     params=("UPLO",), torch="LinalgEighBackward0")
_def("eigh_vectors", lambda a, UPLO="L": np.linalg.eigh(a, UPLO)[1], "linalg", "np.linalg.eigh",
     params=("UPLO",), torch="LinalgEighBackward0")
_def("eigvalsh", np.linalg.eigvalsh, "linalg", "np.linalg.eigvalsh", params=("UPLO",),
     torch="LinalgEighBackward0")
_def("svd_u", lambda a: np.linalg.svd(a, full_matrices=False)[0], "linalg", "np.linalg.svd",
     torch="LinalgSvdBackward0")
_def("svd_s", lambda a: np.linalg.svd(a, full_matrices=False)[1], "linalg", "np.linalg.svd",
     torch="LinalgSvdBackward0")
_def("svd_vh", lambda a: np.linalg.svd(a, full_matrices=False)[2], "linalg", "np.linalg.svd",
     torch="LinalgSvdBackward0")
_def("svdvals", lambda a: np.linalg.svd(a, compute_uv=False), "linalg", "np.linalg.svd",
     torch="LinalgSvdBackward0")
_def("qr_q", lambda a: np.linalg.qr(a)[0], "linalg", "np.linalg.qr", torch="LinalgQrBackward0")
_def("qr_r", lambda a: np.linalg.qr(a)[1], "linalg", "np.linalg.qr", torch="LinalgQrBackward0")
_def("pinv", lambda a, rcond=None: np.linalg.pinv(a) if rcond is None else
     np.linalg.pinv(a, rcond), "linalg", "np.linalg.pinv", params=("rcond",),
     torch="PinverseBackward0")   # (NumPy 1's pinv takes no rcond=None)
_def("lstsq_x", lambda a, b, rcond=None: np.linalg.lstsq(a, b, rcond=rcond)[0], "linalg",
     "np.linalg.lstsq", 2, params=("rcond",), torch="LinalgLstsqBackward0")


def _whole(name, fn, spell, members, params=()):
    """A whole factorization, a tuple of its results (``list_get`` reads each): what
    adcompiler.passes.factorizations reads several results of one call from. Internal: only
    that pass makes it, after differentiation."""
    PRIMS[name] = Prim(name, fn, "internal", spell, 1, False, params, members=tuple(members))


_whole("eigh", lambda a, UPLO="L": tuple(np.linalg.eigh(a, UPLO)), "np.linalg.eigh",
       ("eigh_values", "eigh_vectors"), ("UPLO",))
_whole("svd", lambda a: tuple(np.linalg.svd(a, full_matrices=False)), "np.linalg.svd",
       ("svd_u", "svd_s", "svd_vh"))
_whole("qr", lambda a: tuple(np.linalg.qr(a)), "np.linalg.qr", ("qr_q", "qr_r"))
_whole("slogdet", lambda a: tuple(np.linalg.slogdet(a)), "np.linalg.slogdet",
       ("slogdet_sign", "logabsdet"))

# ---- shape and indexing ---------------------------------------------------------------------
_def("transpose", np.transpose, "shape", "np.transpose", params=("axes",), torch="PermuteBackward0")
_def("reshape", np.reshape, "shape", "np.reshape", params=("shape",), torch="ViewBackward0")
_def("expand_dims", np.expand_dims, "shape", "np.expand_dims", params=("axis",),
     torch="UnsqueezeBackward0")
_def("squeeze", np.squeeze, "shape", "np.squeeze", params=("axis",))
_def("broadcast_to", np.broadcast_to, "shape", "np.broadcast_to", params=("shape",),
     torch="ExpandBackward0")
_def("concatenate", lambda *xs, axis=0: np.concatenate(xs, axis=axis), "shape",
     "np.concatenate", None, torch="CatBackward0")
_def("stack", lambda *xs, axis=0: np.stack(xs, axis=axis), "shape", "np.stack", None,
     torch="StackBackward0")


def getitem(x, *arrays, index):
    return x[build_index(index, arrays)]


_def("getitem", getitem, "shape", "[]", None)


def build_index(spec, arrays):
    """Rebuild a real index from its static spec and the dynamic integer arrays it refers to.

    Spec items: ("s", start, stop, step) a slice, ("i", k) an int, ("n",) None/newaxis,
    ("e",) Ellipsis, ("a", k) the k-th dynamic index array, ("u", k) the same whose entries
    are distinct and inside the axis (a window's ``start + arange(0, width, step)``: see
    :func:`writes_once`).
    """
    out = []
    for item in spec:
        tag = item[0]
        if tag == "s":
            out.append(slice(*item[1:]))
        elif tag == "i":
            out.append(item[1])
        elif tag == "n":
            out.append(None)
        elif tag == "e":
            out.append(Ellipsis)
        else:
            out.append(arrays[item[1]])
    return tuple(out)


def writes_once(spec, ndims) -> bool:
    """Whether the index ``spec``, its arrays having ``ndims`` dimensions (None: unknown),
    addresses each element at most once, so that ``x[index] += g`` adds what ``np.add.at``
    adds: slices, ints and 0-d arrays (a loop counter) do, and so does one array tagged
    ``("u", k)`` among them. Other index arrays may repeat an entry."""
    spread = [item for item in spec if item[0] in ("a", "u") and ndims[item[1]] != 0]
    return not spread or (len(spread) == 1 and spread[0][0] == "u")


# ---- creation and conversion ----------------------------------------------------------------
_def("zeros_like", np.zeros_like, "creation", "np.zeros_like", differentiable=False)
_def("ones_like", np.ones_like, "creation", "np.ones_like", differentiable=False)
_def("zeros", np.zeros, "creation", "np.zeros", 0, False, ("shape", "dtype"))
_def("ones", np.ones, "creation", "np.ones", 0, False, ("shape", "dtype"))
_def("full", lambda fill, shape, dtype=None: np.full(shape, fill, dtype=dtype), "creation",
     "np.full", 1, params=("shape", "dtype"))
_def("astype", lambda x, dtype: (x if hasattr(x, "__cuda_array_interface__") else
                                 np.asarray(x)).astype(dtype),   # a CuPy array stays one
     "creation", ".astype", params=("dtype",), torch="ToCopyBackward0")
_def("copy", np.copy, "creation", "np.copy", torch="CloneBackward0")
_def("asarray", np.asarray, "creation", "np.asarray")  # an ndarray (NumPy scalars become 0-d)
_def("to_float", float, "creation", "float")  # a Python float from a 0-d result
_def("to_int", int, "creation", "int", differentiable=False)  # a Python int, likewise


# ---- internal: introduced by the adjoint transform ------------------------------------------
def sum_to(g, shape):
    """Sum ``g`` over the axes that broadcasting added or stretched, so it has ``shape``."""
    g = np.asarray(g)
    if g.shape == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape)
                                      if d == 1 and g.shape[i + lead] != 1)
    out = np.sum(g, axis=axes, keepdims=True)
    return out.reshape(shape)


def scatter_add(g, *arrays, shape, index):
    """The adjoint of ``x[index]``: a zero array of ``shape`` with ``g`` added at ``index``."""
    out = np.zeros(shape, dtype=np.result_type(g))
    np.add.at(out, build_index(index, arrays), g)
    return out


def index_add(acc, g, *arrays, index):
    """``acc`` with ``g`` added at ``index`` (repeated indices add up): accumulating the
    adjoint of a gather into an existing cotangent, without a zero array per gather."""
    out = np.array(acc, copy=True)
    np.add.at(out, build_index(index, arrays), g)
    return out


def setitem(x, v, *arrays, index):
    """``x`` with ``x[index] = v`` applied, as a new array (the SSA form of ``x[i] = v``)."""
    return store(np, np.array(x, copy=True), build_index(index, arrays), v)


def store(xp, out, index, v):
    """``out[index] = v`` in place (returns ``out``), meaning what NumPy means where an index
    repeats, whichever order ``xp`` writes in: CuPy writes repeated indices in no set order, so
    there each write carries the value of the write NumPy keeps for its element (the last)."""
    if xp is not np and getattr(v, "ndim", 0) and any(
            getattr(i, "ndim", 0) for i in (index if isinstance(index, tuple) else (index,))):
        order, won = _winners(xp, out.shape, index)
        v = v.reshape(v.shape[max(v.ndim - order.ndim, 0):])   # NumPy drops leading 1s
        v = xp.broadcast_to(v, order.shape).reshape(-1)[won]
    out[index] = v
    return out


def last_writes(x, *arrays, index):
    """Which entries of ``x[index] = v`` stay written: where an index repeats, one write to an
    element overwrites the others (NumPy keeps the last). A bool array of ``x[index]``'s shape."""
    return kept_writes(np, np.shape(x), build_index(index, arrays))


def kept_writes(xp, shape, index):
    """:func:`last_writes` with the array module ``xp``."""
    order, won = _winners(xp, shape, index)
    return won == order


def _winners(xp, shape, index):
    """``(order, won)``: each write of ``x[index] = v`` (x of ``shape``) numbered in NumPy's
    order, and the number of the write NumPy keeps for its element: the last, which is the
    largest (``cupyx.scatter_max`` on CuPy, where plain writes land in no set order)."""
    won = xp.full(shape, -1)
    order = xp.arange(won[index].size).reshape(won[index].shape)
    if xp is np:
        won[index] = order
    else:
        import cupyx
        cupyx.scatter_max(won, index, order)
    return order, won[index]


_def("setitem", setitem, "shape", "setitem", None)
_def("last_writes", last_writes, "internal", "_last_writes", None, differentiable=False)
_def("sum_to", sum_to, "internal", "_sum_to", params=("shape",), torch="SumToSizeBackward0")
_def("index_add", index_add, "internal", "index_add", None)
_def("scatter_add", scatter_add, "internal", "_scatter_add", None, torch="IndexPutBackward0")


# ---- the logistic family seen whole (adcompiler.passes.logistic): made from the user's
# spellings before differentiation, each one residual; spelled back in ufuncs after it, so no
# backend sees them
LOGISTIC_SYMPY = {"sigmoid": lambda sp, x: 1 / (1 + sp.exp(-x)),   # as rows' ``sympy``
                  "softplus": lambda sp, x: sp.log(1 + sp.exp(x)),
                  "log_sigmoid": lambda sp, x: -sp.log(1 + sp.exp(-x))}
_def("sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x)), "elementwise", "_sigmoid",
     torch="SigmoidBackward0")
_def("softplus", lambda x: np.logaddexp(0.0, x), "elementwise", "_softplus",
     torch="SoftplusBackward0")
_def("log_sigmoid", lambda x: -np.logaddexp(0.0, -x), "elementwise", "_log_sigmoid",
     torch="LogSigmoidBackward0")


# ---- control flow: nodes with regions (their outputs' avals come from their blocks) ---------
_def("cond", None, "control", "if", None, differentiable=True)
_def("loop", None, "control", "for", None, differentiable=True)
_def("while", None, "control", "while", None, differentiable=True)
# A chain of elementwise nodes computed as one (see adcompiler.passes.fuse).
_def("fused", None, "control", "fused", None, differentiable=False)
# A run-time check, ``if p: raise E(*args)`` (``if not p`` with negate=True): no outputs, no
# derivative; dead-code elimination keeps it (adcompiler.frontend.statements.checks).
_def("raise_if", None, "check", "raise", 1, differentiable=False)
# ---- family "custom": functions called by name, which the generated module binds under their
# ``spell``: ``stop_gradient`` and the user's custom_vjp functions, registered by
# adcompiler.custom.vjp (with an ``abstract`` rule, since NumPy's shape rules do not apply).

# A while loop's residuals go into Python lists (its trip count is unknown on entry).
_def("list_get", lambda s, k: s[k], "internal", "[]", 2)
# An empty stack (never read): what a branch that runs no while loop yields for the lists of one.
_def("empty_list", lambda **aval: [], "internal", "[]", 0, differentiable=False)


# Operators on Python scalars are Python's (``1.0 + 1.0`` is a float, as the emitted code gives).
_OPERATORS = {("+", 2): operator.add, ("-", 2): operator.sub, ("*", 2): operator.mul,
              ("/", 2): operator.truediv, ("**", 2): operator.pow, ("-", 1): operator.neg,
              ("%", 2): operator.mod, ("//", 2): operator.floordiv, (">", 2): operator.gt,
              (">=", 2): operator.ge, ("<", 2): operator.lt, ("<=", 2): operator.le,
              ("==", 2): operator.eq, ("!=", 2): operator.ne}
PY_OPERATORS = {r.name: _OPERATORS[r.op, r.arity] for r in ELEMENTWISE if r.op}


def split_call(prim: str, args, params):
    """``(inputs, params)`` of ``prim(*args, **params)`` called NumPy-style, where arguments past
    the primitive's arity are its static parameters in order (``broadcast_to(g, shape)``)."""
    spec = PRIMS[prim]
    n = len(args) if spec.arity is None else spec.arity
    return tuple(args[:n]), {**params, **dict(zip(spec.params, args[n:]))}


def evaluate(prim: str, args, params):
    """Compute one primitive on concrete values (the reference interpreter and the tape use it),
    with NumPy: the tape computes CuPy arrays with CuPy (``adcompiler.tape.xp.compute``)."""
    if params.get("py"):
        return MATH_PRIMS[params["py"]](*args)
    if prim in PY_OPERATORS and all(type(a) in (bool, int, float) for a in args):
        try:
            return PY_OPERATORS[prim](*args)
        except ArithmeticError:  # x / 0, x % 0, x // 0 raise where they run; folding while
            pass                 # compiling gets NumPy's inf or nan (with a RuntimeWarning)
    kw = {k: v for k, v in params.items() if k != "py"}
    return PRIMS[prim].fn(*args, **kw)
