"""Vector-Jacobian rules of elementwise primitives: ``rule(ops, g, ans, *args)``, one per line.

Broadcasting is handled once, in :func:`templates.cotangent`: these rules return cotangents of
the broadcast shape.

Each rule is also the primitive's tangent rule ``rule(ops, dx, ans, *args)``: an elementwise
Jacobian is diagonal, so the adjoint ``g * df/dx`` and the tangent ``dx * df/dx`` are the same
pointwise product (:func:`templates.tangent` broadcasts it to the result's shape, as
:func:`templates.cotangent` sums the adjoint back). Every rule here is linear in its ``g`` and
pointwise, which is what makes the sharing exact; tests check both directions numerically.
"""

import math

from . import defjvp, defvjp


def _ew(prim, *rules):
    defvjp(prim, *rules, broadcasting=True)
    defjvp(prim, *rules)


# ---- arithmetic -----------------------------------------------------------------------------
_ew("add",      lambda ops, g, ans, x, y: g,
                lambda ops, g, ans, x, y: g)
_ew("subtract", lambda ops, g, ans, x, y: g,
                lambda ops, g, ans, x, y: -g)
_ew("multiply", lambda ops, g, ans, x, y: g * y,
                lambda ops, g, ans, x, y: g * x)
_ew("divide",   lambda ops, g, ans, x, y: g / y,
                lambda ops, g, ans, x, y: -g * ans / y)
_ew("power",    lambda ops, g, ans, x, y: _power_base(ops, g, x, y),
                lambda ops, g, ans, x, y: _power_exponent(ops, g, ans, x))
# x % y is x - y * (x // y), the quotient piecewise constant (as in JAX and PyTorch)
_ew("remainder", lambda ops, g, ans, x, y: g,
                 lambda ops, g, ans, x, y: -g * (x // y))
_ew("negative", lambda ops, g, ans, x: -g)
_ew("reciprocal", lambda ops, g, ans, x: -g * ans * ans)
_ew("square",   lambda ops, g, ans, x: g * 2 * x)
_ew("sqrt",     lambda ops, g, ans, x: g * 0.5 / ans)

# ---- exponentials and logarithms -----------------------------------------------------------
_ew("exp",      lambda ops, g, ans, x: g * ans)
_ew("expm1",    lambda ops, g, ans, x: g * (ans + 1))
_ew("log",      lambda ops, g, ans, x: g / x)
_ew("log1p",    lambda ops, g, ans, x: g / (x + 1))

# ---- hyperbolic and trigonometric ----------------------------------------------------------
_ew("tanh",     lambda ops, g, ans, x: g * (1 - ans * ans))
_ew("sinh",     lambda ops, g, ans, x: g * ops.cosh(x))
_ew("cosh",     lambda ops, g, ans, x: g * ops.sinh(x))
_ew("sin",      lambda ops, g, ans, x: g * ops.cos(x))
_ew("cos",      lambda ops, g, ans, x: -g * ops.sin(x))
_ew("tan",      lambda ops, g, ans, x: g * (1 + ans * ans))
_ew("arctan",   lambda ops, g, ans, x: g / (1 + x * x))
_ew("arcsin",   lambda ops, g, ans, x: g / ops.sqrt(1 - x * x))
_ew("arccos",   lambda ops, g, ans, x: -g / ops.sqrt(1 - x * x))
# written so that no intermediate overflows or cancels: hypot(x, 1) is sqrt(x*x + 1) without
# the overflow past 1e154, (x - 1) and (1 - x) are exact near 1 (x*x - 1 is not)
_ew("arcsinh",  lambda ops, g, ans, x: g / ops.hypot(x, 1.0))
_ew("arccosh",  lambda ops, g, ans, x: g / (ops.sqrt(x - 1) * ops.sqrt(x + 1)))
_ew("arctanh",  lambda ops, g, ans, x: g / ((1 - x) * (1 + x)))

# ---- roots, base-2 and base-10 (primitives, not log(x) / log(2): np.log2(8) is 3 exactly) ---
LN2, LN10 = math.log(2.0), math.log(10.0)   # exact log(2), log(10) to checking.symbolic
_ew("cbrt",     lambda ops, g, ans, x: g / (3 * ans * ans))   # inf at 0, as PyTorch and JAX
_ew("log2",     lambda ops, g, ans, x: g / (x * LN2))
_ew("log10",    lambda ops, g, ans, x: g / (x * LN10))
_ew("exp2",     lambda ops, g, ans, x: g * ans * LN2)
# 2**x / (2**x + 2**y) is 2**(x - ans): at most 1, never an overflow
_ew("logaddexp2", lambda ops, g, ans, x, y: g * ops.exp2(x - ans),
                  lambda ops, g, ans, x, y: g * ops.exp2(y - ans))

# ---- angles: linear maps ----------------------------------------------------------------------
RADIAN = math.pi / 180.0    # NumPy's deg2rad(1.0), to the last bit
DEGREE = 180.0 / math.pi    # NumPy's rad2deg(1.0)
_ew("deg2rad",  lambda ops, g, ans, x: g * RADIAN)
_ew("rad2deg",  lambda ops, g, ans, x: g * DEGREE)


def _sinc_slope(ops, ans, x):
    """sinc'(x) = (cos(pi x) - sinc(x)) / x; near 0, where that difference cancels, its series
    -(pi^2 / 3) x (1 - (pi x)^2 / 10): 0 at x = 0, as in PyTorch and JAX."""
    small = ops.less(ops.abs(x), 1e-4)
    safe = ops.where(small, 1.0, x)
    series = x * (-math.pi ** 2 / 3) * (1 - x * x * (math.pi ** 2 / 10))
    return ops.where(small, series, (ops.cos(safe * math.pi) - ans) / safe)


_ew("sinc",     lambda ops, g, ans, x: g * _sinc_slope(ops, ans, x))


# ---- the distance and the angle of (x, y): at the origin, 0 ----------------------------------
def _over(ops, x, r):
    """``x / r``, and 0 where ``r`` is 0 (there ``x`` is 0 too): the origin, where hypot has
    the kink of ``abs`` (whose rule gives 0) and arctan2 no limit. PyTorch gives 0 for arctan2
    there (and for ``linalg.norm``), NaN for hypot; 0 for both keeps a norm's gradient finite."""
    return x / ops.where(ops.equal(r, 0), 1.0, r)


def _arctan2_y(ops, g, ans, y, x):
    """``x / (x*x + y*y)``, as ``(x / r) / r`` with ``r = hypot(y, x)``: no overflow or
    underflow of the squares."""
    r = ops.hypot(y, x)
    return g * _over(ops, _over(ops, x, r), r)


def _arctan2_x(ops, g, ans, y, x):
    r = ops.hypot(y, x)
    return -g * _over(ops, _over(ops, y, r), r)


_ew("hypot",    lambda ops, g, ans, x, y: g * _over(ops, x, ans),
                lambda ops, g, ans, x, y: g * _over(ops, y, ans))
_ew("arctan2",  _arctan2_y, _arctan2_x)


def _power_base(ops, g, x, y):
    """``y * x**(y - 1)``, and 0 where ``y`` is 0: ``x**0`` is 1 for every x, while the formula
    gives 0 * inf = nan at x = 0 (PyTorch and JAX define it so too). A number ``y`` (a literal
    exponent, known while compiling) needs no test; elsewhere the base is 1 where ``y`` is 0, so
    nothing overflows."""
    if isinstance(y, (int, float)):
        return g * 0.0 if y == 0 else g * y * x ** (y - 1)
    return g * y * ops.where(ops.equal(y, 0), 1.0, x) ** (y - 1)


def _power_exponent(ops, g, ans, x):
    """``x**y * log(x)``: 0 at x = 0 (where ``x**y`` is 0 or 1 and the limit is taken, as in
    PyTorch and JAX), NaN for a negative base, whose real power has no derivative in ``y``
    (PyTorch and JAX give NaN there too; this rule gave 0, silently)."""
    return g * ans * ops.log(ops.where(ops.equal(x, 0), 1.0, x))


# ---- piecewise: ties split the gradient evenly, as HIPS autograd and PyTorch do ------------
def _max_min(which):
    """The two rules of maximum (``which``: "greater") or minimum ("less"): ``g`` where x alone
    gave the result, half of it where x and y tie, 0 where y did or either is NaN. In ``g``'s
    dtype and without the result: ``(x == ans) / ((x == y) + 1.0)`` made float64 arrays of
    float32 data and read ``ans`` again (a ReLU's gradient, 1.50x a hand-written one in
    float32)."""
    def share(ops, g, x, y):
        wins = getattr(ops, which)(x, y)
        return ops.where(ops.equal(x, y), g * 0.5, g * wins)
    return (lambda ops, g, ans, x, y: share(ops, g, x, y),
            lambda ops, g, ans, x, y: share(ops, g, y, x))


def _fmax_fmin(which):
    """The rules of fmax ("greater") and fmin ("less"): those of maximum and minimum where
    neither argument is NaN; where one is, the other is the result and takes ``g``; where both
    are, ``x`` takes it (as PyTorch's fmax)."""
    def rule_x(ops, g, ans, x, y):
        wins = ops.logical_or(getattr(ops, which)(x, y), ops.isnan(y))
        return ops.where(ops.equal(x, y), g * 0.5, g * wins)

    def rule_y(ops, g, ans, x, y):
        wins = ops.logical_and(ops.logical_or(getattr(ops, which)(y, x), ops.isnan(x)),
                               ops.logical_not(ops.isnan(y)))
        return ops.where(ops.equal(x, y), g * 0.5, g * wins)
    return rule_x, rule_y


_ew("abs",      lambda ops, g, ans, x: g * ops.sign(x))
_ew("fabs",     lambda ops, g, ans, x: g * ops.sign(x))
_ew("maximum",  *_max_min("greater"))
_ew("minimum",  *_max_min("less"))
_ew("fmax",     *_fmax_fmin("greater"))
_ew("fmin",     *_fmax_fmin("less"))


# ---- log-add-exp seen whole (softplus): adjoints only, tangents keep the rules above ---------
def _logaddexp_max(k):
    """maximum's adjoint for argument ``k``; in the idiom ``maximum(x, y) + log1p(exp(-|x -
    y|))`` (:mod:`templates.idioms.logaddexp`) the idiom's whole derivative, the sigmoid
    ``1 / (1 + exp(other - mine))``, and then abs's rule below gives the rest of it zero."""
    plain = _max_min("greater")[k]

    def rule(ops, g, ans, x, y):
        from .idioms.logaddexp import logaddexp_at  # on first use: import stays light
        idiom = logaddexp_at(ops, ans, "maximum")
        return plain(ops, g, ans, x, y) if idiom is None else _sigmoid_share(ops, g, idiom, k)
    return rule


def _sigmoid_share(ops, g, idiom, k):
    """``g * sigmoid(mine - other)`` as ``g / (1 + u) * maximum(u, mine > other)`` with
    ``u = exp(-|mine - other|)``: no overflow for any input, 1/2 to each at a tie (``u`` is 1
    there), 0 and 1 (not NaN) at infinities. ``maximum(u, mine > other)`` is ``where(mine >
    other, 1, u)`` since ``0 <= u <= 1`` (NaN stays NaN), but a ufunc: the chain stays one
    buffered pass per step (``np.where`` has no ``out=``).

    ``-|d|`` is spelled ``d * (1 - 2 * (d > 0))``, ``d = mine - other``: the same value, and at
    a tie the derivative of the side ``d <= 0`` (``abs``'s is 0 there), so that differentiating
    this adjoint again (``hessian``, ``.hvp``) gives the sigmoid's slope 1/4 at a tie, where
    softplus is smooth (a Newton step from zero weights needs it). Two arrays tie at an
    infinity as np.logaddexp does: ``d`` is 0 there (``inf - inf`` is never computed)."""
    x, y = (_number(v) for v in (idiom.x, idiom.y))
    mine, other = (x, y) if k == 0 else (y, x)
    if isinstance(other, float) and other == 0:
        d = mine
    elif isinstance(mine, float) or isinstance(other, float):
        d = mine - other
    else:
        tie = ops.logical_and(ops.equal(mine, other), ops.isinf(mine))   # never inf - inf
        d = ops.where(tie, 0.0, mine) - ops.where(tie, 0.0, other)
    u = ops.exp(d * (1.0 - 2.0 * ops.greater(d, 0.0)))
    return g / (1.0 + u) * ops.maximum(u, ops.greater(mine, other))


def _number(v):
    """A Literal operand as the Python float a rule works with (IR values as they are)."""
    value = getattr(v, "value", v)
    return float(value) if isinstance(value, (int, float)) else v


def _abs_vjp(ops, g, ans, x):
    """abs's adjoint; zero for the ``abs`` of the log-add-exp idiom, whose derivative
    maximum's rule gave whole (a zero that the simplifier drops from the sum it joins)."""
    from .idioms.logaddexp import logaddexp_at  # on first use: import stays light
    if logaddexp_at(ops, ans, "abs") is None:
        return g * ops.sign(x)
    if x.aval.is_scalar:
        return 0.0
    zero = 0.0 if ops.dtype(x) == "float64" else ops.astype(0.0, ops.dtype(x))
    return ops.broadcast_to(zero, ops.shape(x))


defvjp("maximum", _logaddexp_max(0), _logaddexp_max(1), broadcasting=True)
defvjp("abs", _abs_vjp, broadcasting=True)


# ---- x / sum(x, axis, keepdims=True) (softmax) and x / sqrt(mean(x * x) + eps) (layer norm)
# ---- seen whole: adjoints only ---------------------------------------------------------------
def _normalised(k):
    """divide's adjoint for argument ``k``; for ``x / sum(x, axis, keepdims=True)``
    (:mod:`templates.idioms.normalisation`) the numerator takes the whole derivative,
    ``(g - sum(g * ans, axis)) / y``, and the denominator zero; likewise for ``x / sqrt(mean(x
    * x, axis) + eps)`` (:mod:`templates.idioms.root_mean_square`), ``(g - ans * mean(g *
    ans, axis)) / y``."""
    plain = (lambda ops, g, ans, x, y: g / y, lambda ops, g, ans, x, y: -g * ans / y)[k]

    def rule(ops, g, ans, x, y):
        from .idioms.normalisation import normalised_axis  # on first use: import stays light
        from .idioms.root_mean_square import rms_axis
        found = normalised_axis(ops, ans, x, y)
        scaled = rms_axis(ops, ans, x, y) if found is None else None
        if found is None and scaled is None:
            return plain(ops, g, ans, x, y)
        if k == 1 and scaled is not None:
            return None   # no share: y's chain (sqrt, add, mean, square) is not walked for it
        if k == 1:
            zero = 0.0 if ops.dtype(y) == "float64" else ops.astype(0.0, ops.dtype(y))
            return ops.broadcast_to(zero, ops.shape(y))
        if scaled is not None:   # (g - a * mean(g * a)) / y; the mean as a sum over its count
            rows = ops.sum(g * ans, axis=scaled[0], keepdims=True) / (ops.size(x) // ops.size(y))
            return (g - ans * rows) / y
        return (g - ops.sum(g * ans, axis=found[0], keepdims=True)) / y
    return rule


defvjp("divide", _normalised(0), _normalised(1), broadcasting=True)


def _clip_x(ops, g, ans, x, lo, hi):
    """x keeps the gradient inside [lo, hi], bounds included (as PyTorch's clamp); a None bound
    (the tape's one-sided clip) clips on one side only."""
    if lo is not None:
        g = ops.where(ops.less(x, lo), 0.0, g)
    return g if hi is None else ops.where(ops.greater(x, hi), 0.0, g)


def _clip_lo(ops, g, ans, x, lo, hi):
    """clip is NumPy's minimum(maximum(x, lo), hi): where lo > hi the result is hi, so lo has
    no gradient there, and hi has it whatever x is."""
    g = ops.where(ops.less(x, lo), g, 0.0)
    return g if hi is None else ops.where(ops.greater(lo, hi), 0.0, g)


def _clip_hi(ops, g, ans, x, lo, hi):
    above = ops.where(ops.greater(x, hi), g, 0.0)
    return above if lo is None else ops.where(ops.greater(lo, hi), g, above)


_ew("clip", _clip_x, _clip_lo, _clip_hi)
_ew("where",    None,
                lambda ops, g, ans, c, x, y: ops.where(c, g, 0.0),
                lambda ops, g, ans, c, x, y: ops.where(c, 0.0, g))


# ---- scipy.special: each derivative in the same functions (digamma' is polygamma(1, .)) -------
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_2PI = math.sqrt(2.0 * math.pi)
_ew("erf",      lambda ops, g, ans, x: g * TWO_OVER_SQRT_PI * ops.exp(-(x * x)))
_ew("erfc",     lambda ops, g, ans, x: -g * TWO_OVER_SQRT_PI * ops.exp(-(x * x)))
# erfcx = exp(x^2) erfc(x): 2 x erfcx(x) - 2/sqrt(pi), no overflow where exp(x^2) would
_ew("erfcx",    lambda ops, g, ans, x: g * (2.0 * x * ans - TWO_OVER_SQRT_PI))
_ew("erfinv",   lambda ops, g, ans, x: g * SQRT_PI_OVER_2 * ops.exp(ans * ans))
_ew("ndtr",     lambda ops, g, ans, x: g * INV_SQRT_2PI * ops.exp(-0.5 * (x * x)))
# pdf / cdf as exp(log pdf - log cdf): finite far into the left tail, where both underflow
_ew("log_ndtr", lambda ops, g, ans, x: g * INV_SQRT_2PI * ops.exp(-0.5 * (x * x) - ans))
_ew("ndtri",    lambda ops, g, ans, x: g * SQRT_2PI * ops.exp(0.5 * (ans * ans)))
_ew("gammaln",  lambda ops, g, ans, x: g * ops.digamma(x))
_ew("gamma",    lambda ops, g, ans, x: g * ans * ops.digamma(x))
_ew("digamma",  lambda ops, g, ans, x: g * ops.polygamma(1, x))
# polygamma(n, x): n is an int known while compiling (no rule); its slope is polygamma(n + 1, x)
_ew("polygamma", None,
                 lambda ops, g, ans, n, x: g * ops.polygamma(_order(n) + 1, x))
_ew("betaln",   lambda ops, g, ans, a, b: g * (ops.digamma(a) - ops.digamma(a + b)),
                lambda ops, g, ans, a, b: g * (ops.digamma(b) - ops.digamma(a + b)))
_ew("expit",    lambda ops, g, ans, x: g * ans * (1.0 - ans))
_ew("logit",    lambda ops, g, ans, x: g / (x * (1.0 - x)))
# log(sigmoid(x))' = sigmoid(-x): no overflow for any x
_ew("log_expit", lambda ops, g, ans, x: g * ops.expit(-x))
# the same three as recognised in users' spellings (adcompiler.passes.logistic): the sigmoid's
# from its result alone, the other two from their input alone (a gradient that does not return
# the value computes no softplus); 1 / (1 + exp(-x)) is 0, not NaN, where exp(-x) overflows
_ew("sigmoid",  lambda ops, g, ans, x: g * ans * (1.0 - ans))
_ew("softplus", lambda ops, g, ans, x: g / (1.0 + ops.exp(-x)))
_ew("log_sigmoid", lambda ops, g, ans, x: g / (1.0 + ops.exp(x)))


def _order(n):
    """polygamma's order as a Python int (a Literal's value; a SymPy symbol as it is)."""
    n = getattr(n, "value", n)
    return int(n) if isinstance(n, (int, float)) else n


def _where_x_nonzero(ops, x, value):
    """``value`` where ``x`` is not 0, and 0 where it is: xlogy(0, y) is 0 for every y, so
    nothing flows into y there (not 0 * inf at y = 0)."""
    return ops.where(ops.equal(x, 0.0), 0.0, value)


_ew("xlogy",    lambda ops, g, ans, x, y: g * ops.log(y),
                lambda ops, g, ans, x, y: g * _where_x_nonzero(
                    ops, x, x / ops.where(ops.equal(x, 0.0), 1.0, y)))
_ew("xlog1py",  lambda ops, g, ans, x, y: g * ops.log1p(y),
                lambda ops, g, ans, x, y: g * _where_x_nonzero(
                    ops, x, x / ops.where(ops.equal(x, 0.0), 1.0, y + 1.0)))
# i0e = exp(-|x|) I0(x): I0' = I1, so i0e' = i1e - sign(x) i0e
_ew("i0e",      lambda ops, g, ans, x: g * (ops.i1e(x) - ops.sign(x) * ans))


def _i1e_slope(ops, ans, x):
    """i1e'(x) = i0e(x) - i1e(x) / x - sign(x) i1e(x) (I1' = I0 - I1 / x); 1/2 at 0, its
    limit, where i1e(x) / x is 0 / 0."""
    zero = ops.equal(x, 0.0)
    safe = ops.where(zero, 1.0, x)
    return ops.where(zero, 0.5, ops.i0e(x) - ans / safe - ops.sign(x) * ans)


_ew("i1e",      lambda ops, g, ans, x: g * _i1e_slope(ops, ans, x))
