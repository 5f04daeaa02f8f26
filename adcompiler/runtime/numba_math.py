"""exp, expm1 and tanh for numba kernels, in a form that LLVM vectorises.

Only code that the numba backend generates imports this module, and importing it imports
numba. ``vexp(x)``, ``vexpm1(x)`` and ``vtanh(x)`` each take a float64 and return a float64;
``vexp_tanh(a)`` is the pair (e^-a, tanh a) from one exponential and one division, for a loop
that computes both (the emitter pairs them; tests/runtime/test_numba_math.py holds its tanh to 3
ulp of np.tanh, its exponential is ``vexp(-a)`` bit for bit); ``vtanh_e(x, e)`` is tanh(x) from
e = e^-x (2 ulp), which the emitter used before ``vexp_tanh``. Each
is a module-level ``numba.njit(inline="always")`` function, so a generated kernel that calls them
can be cached on disk by numba (``cache=True``; checked).

Why they exist: inside a numba loop, ``math.exp`` and ``math.tanh`` are scalar libm calls, and a
loop that calls them does not vectorise. Intel SVML would vectorise them, but numba cannot use it
with numpy 2.4. Since numba 0.62, llvmlite is built on LLVM 20 and later, and the SVML patch no
longer applies. The last llvmlite with SVML (0.44) goes with numba 0.61.2, which refuses numpy
newer than 2.2 (benchmarks/NUMBA.md has the measurements). These bodies use only + - * /,
``math.floor``, conditional expressions (LLVM turns them into selects) and an int64 -> float64
bit cast. They make no calls and have no branches left after if-conversion, so a loop of them
compiles to 4-wide AVX2/AVX-512VL code (``<4 x double>``, or 8-wide where LLVM is allowed 512-bit
vectors).

Compile the calling loop with ``error_model='numpy'`` and ``fastmath=False`` or
``fastmath={'contract'}`` (FMA only; the accuracy below holds for both). With numba's default
error model, ``'python'``, every division checks its divisor, and that check stops the loop from
vectorising. Do not use ``fastmath=True``. Its ``reassoc`` flag lets LLVM merge the two-part
subtraction of k ln2: vexp was then up to 213 ulp off near |x| = 700, gave inf at x = 709.78 and
0 at x = -745. Its ``nnan``/``ninf`` flags remove the selects that handle NaN: NaN then gave 0 from
vexp and -1 from vexpm1 and vtanh.

Method:

- Argument reduction: x = k ln2 + r with k = floor(x / ln2 + 1/2), so |r| <= ln2/2. k ln2 is
  subtracted in two parts (fdlibm's ln2_hi has 21 trailing zero bits, so x - k ln2_hi is exact).
  Before ``math.floor``, x is clamped to [-746, 710] by selects, so NaN and inf never reach the
  int conversion. The unclamped x stays in r, so NaN propagates.
  ``vexp`` (and ``vexp_tanh``) round x / ln2 with the shifter instead: x / ln2 + 1.5 * 2^52 is
  an integer whose low bits are k, so neither floor nor conversions are needed, and there is no
  clamp: outside [-746, 710] (inf, huge) the selects on the result decide, NaN propagates.
- e^r - 1 = r + r^2 Q(r), where Q is the Taylor series to r^13 (truncation error below 2e-18
  relative for |r| <= 1/2). Q is evaluated by Estrin's scheme: a shorter dependency chain than
  Horner's. That made the loop of vexp + vtanh 14% faster. The leading r is exact, so the rounding
  errors fall on the smaller term.
- ``vexp``'s e^r - 1 is r + r^2 U(r), U of degree 10 fitted (Chebyshev least squares) on
  |r| <= ln2/2 to within 1.7e-19 (three FMAs fewer than the Taylor series' Q; the elementwise
  gradient at 10^6, one thread: 1.40 -> 1.29 ms with the rest unchanged).
- ``vexp``: (1 + p) 2^k1 2^k2 with k1 = k >> 1 and k2 = k - k1. Each power of two is normal and is
  built by a bit cast. Only the last multiply can round, so results in the subnormal range
  (x in [-745.13, -708.4]) are rounded once from a 53-bit value rather than flushed to 0.
  Overflow is also natural: exp(709.782712893384) is finite and exp of the next double is inf.
  x < -746 gives 0 and x > 710 gives inf, by selects.
- ``vexpm1``: k is forced to 0 for |x| < 1/2, so the result is p itself and there is no
  cancellation near 0. For 1 <= |k| <= 53 the result is 2^k p + (2^k - 1). Both terms are exact,
  so the sum rounds once. Beyond that range it is e^x - 1, with e^x computed as in ``vexp``.
  |x| < 1e-300 returns x, which keeps -0.0. x < -746 gives -1.
- ``vexp_tanh(a)``: e^-a = 2^k (1 + p) as ``vexp``; then e^(-2a) - 1 = 4^k (p^2 + 2p) + (4^k - 1)
  (no cancellation: 4^k - 1 is exact), and tanh a = -m / (m + 2). Against mpmath at 150 bits,
  80,000 random points (wide, narrow, tiny): at most 2.48 ulp, 20.6% not correctly rounded; the
  exponential at most 0.99 ulp (7.4%).
- ``vtanh``: y = |x| (clamped to 20, where tanh rounds to 1) and E = e^(2y) = 2^k e^r. Below
  y = 0.7, k = 0 and r = 2y exactly, with e^r - 1 - r = r^2 (1/2 + r Q1(r)). Q1 is the Taylor series
  to r^20, for |r| <= 1.4. Then tanh y = y + (r^3 Q1 - y (e^r - 1 - r)) / (E + 1): an exact y plus a
  correction at most 14% of the result. From 0.7 on, tanh y = 1 - 2 / (E + 1). One division
  serves both: the numerator and the added term are selected. E + 1 is computed as
  (2^k + 1) + 2^k p, which rounds once. The sign of x is restored at the end, and |x| < 1e-9
  returns x itself, so tanh(-0.0) is -0.0.

Measured accuracy (numba 0.68.1, numpy 2.4.6, x86_64; fastmath off and {'contract'}; 4-wide
and 8-wide code give the same results):

- Against NumPy (np.exp, np.expm1, np.tanh): 10^6 evenly spaced points over [-750, 750], over
  [-40, 40] and [-2, 2], over the subnormal-result range [-745.2, -708], and over +-[1e-320, 1]
  (geometric), plus the edge cases. vexp and vexpm1 were at most 1 ulp from NumPy. vtanh was at
  most 2 ulp. That happened at 9 points of 3 x 10^6, all with 0.50 < |x| < 0.54, and there
  vtanh and NumPy's tanh were each 1 ulp from the exact value, on opposite sides.
- Against mpmath at 150 bits, 160,000 random points per function, with the same ranges weighted:
  all three functions were faithfully rounded (at most 1 ulp from the exact value). 7.5% (vexp),
  8% (vexpm1) and 6% (vtanh) of the results were not the correctly rounded double. For NumPy
  the shares were 3.8%, 0.02% and 18%.
- Edge cases (+-0, +-inf, NaN, +-700, +-709.78, +-710, +-745, +-746, +-800, +-1e300, 1e-300,
  5e-324, 1e-10) match NumPy bit for bit, signed zeros included (NaN gives a NaN, not
  necessarily with the same sign bit). The one exception is
  vtanh(19.06) = 1 - 2^-53, which is the correctly rounded value where NumPy gives 1.0.

tests/runtime/test_numba_math.py asserts 2 ulp against NumPy on 10^5-point grids.

Speed, serial loop over 10^6 doubles with uniform(-2, 2) input, fastmath={'contract'}, 2-core
x86_64 with AVX-512, 4-wide code: ``out[i] = vexp(x[i]) + vtanh(x[i])`` took 3.7 ms. The same loop
with math.exp/math.tanh took 21 ms, and ``np.exp(x) + np.tanh(x)`` took 2.9-4.8 ms (most of the
spread is in allocating its three result arrays). With 512-bit vectors allowed
(NUMBA_CPU_FEATURES=<host features>,-prefer-256-bit, which is set for the whole process; the
generated loops now ask for them one function at a time, through ``wide_vectors`` below) the loop
took 2.7 ms. vexp alone took 1.4 ms, vexpm1 1.75 ms and vtanh 2.3 ms (np.exp, np.expm1 and np.tanh
into a preallocated out: 0.7, 1.2 and 1.4 ms).
"""

from __future__ import annotations

import math

import numba
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

__all__ = ["vexp", "vexp_tanh", "vexpm1", "vtanh", "vtanh_e", "wide_vectors"]

# fdlibm's split of ln 2: LN2_HI has 21 trailing zero bits, so k * LN2_HI is exact for |k| < 2^21.
LN2_HI, LN2_LO, INV_LN2 = 6.93147180369123816490e-01, 1.90821492927058770002e-10, 1.4426950408889634
# Q(r) = (e^r - 1 - r) / r^2 = sum_j r^j / (j + 2)!: _Q[j] = 1/(j + 2)!, to r^13 (e^r to r^15).
_Q = tuple(1.0 / math.factorial(j + 2) for j in range(14))
# Q1(r) = (Q(r) - 1/2) / r = sum_j r^j / (j + 3)!, to r^20: for vtanh's |r| <= 1.4.
_Q1 = tuple(1.0 / math.factorial(j + 3) for j in range(21))

_X_MIN, _X_MAX = -746.0, 710.0   # past these, exp is 0 or inf: clamps for k and the selects
# U(r) = (e^r - 1 - r) / r^2 to r^10 for |r| <= ln2/2: a Chebyshev least-squares fit (mpmath, 50
# digits), whose r^2 U(r) is within 1.7e-19 of e^r - 1 - r there (Taylor needs r^13 for that).
_U = (0.5, 0.1666666666666667, 0.04166666666666667, 0.008333333333326141,
      0.0013888888888883752, 0.00019841269874800493, 2.4801587325533363e-05,
      2.7557255425746435e-06, 2.7557273661348637e-07, 2.510520637395701e-08,
      2.0914679376583935e-09)
# x / ln2 + 1.5 * 2^52 is rounded to an integer, which the low bits of the sum then hold.
_SHIFT, _SHIFT_BITS = 6755399441055744.0, 0x4338000000000000


@intrinsic
def _f64_from_bits(typingctx, v):
    """Reinterpret an int64's bits as a float64 (an LLVM bitcast, which vectorises)."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@intrinsic
def _bits_from_f64(typingctx, v):
    """A float64's bits as an int64 (an LLVM bitcast, which vectorises)."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@numba.njit(inline="always")
def _reduce_near(x):
    """(k, r, s1, s2) as :func:`_reduce` gives them for x in [_X_MIN, _X_MAX], with k = x / ln2
    rounded by the shifter: no floor, no conversions. Elsewhere (inf, NaN, huge) the values
    mean nothing, and callers select their result there."""
    kf = x * INV_LN2 + _SHIFT
    k = _bits_from_f64(kf) - _SHIFT_BITS
    kd = kf - _SHIFT                          # k as a float, exactly
    r = (x - kd * LN2_HI) - kd * LN2_LO       # the first subtraction is exact
    k1 = k >> 1
    s1 = _f64_from_bits((k1 + 1023) << 52)
    s2 = _f64_from_bits((k - k1 + 1023) << 52)
    return k, r, s1, s2


@numba.njit(inline="always")
def _u(r):
    """U(r) = (e^r - 1 - r) / r^2 for |r| <= ln2/2, by Estrin's scheme (_U's fit)."""
    r2 = r * r
    r4 = r2 * r2
    a = (_U[0] + _U[1] * r) + (_U[2] + _U[3] * r) * r2
    b = (_U[4] + _U[5] * r) + (_U[6] + _U[7] * r) * r2
    c = (_U[8] + _U[9] * r) + _U[10] * r2
    return a + (b + c * r4) * r4


@numba.njit(inline="always")
def _exp_parts(x):
    """(e^x, k, p): e^x as vexp gives it, x ~ k ln2 + r and p = e^r - 1."""
    k, r, s1, s2 = _reduce_near(x)
    p = r + (r * r) * _u(r)
    v = ((1.0 + p) * s1) * s2                   # only the last multiply can round
    return (0.0 if x < _X_MIN else (math.inf if x > _X_MAX else v)), k, p


@numba.njit(inline="always")
def _reduce(x, small_k0):
    """(k, r, s1, s2): x ~ k ln2 + r, 2^k = s1 * s2 with s1 and s2 normal.

    k is forced to 0 for |x| < 1/2 when small_k0 (then r = x exactly)."""
    xc = x if x > _X_MIN else _X_MIN          # NaN -> _X_MIN, so floor gets a finite value
    xc = xc if xc < _X_MAX else _X_MAX
    k = math.floor(xc * INV_LN2 + 0.5)        # int64 in [-1076, 1024]
    if small_k0:                              # a compile-time constant: no branch in the loop
        k = 0 if abs(x) < 0.5 else k
    r = (x - k * LN2_HI) - k * LN2_LO         # the first subtraction is exact
    k1 = k >> 1
    s1 = _f64_from_bits((k1 + 1023) << 52)
    s2 = _f64_from_bits((k - k1 + 1023) << 52)
    return k, r, s1, s2


@numba.njit(inline="always")
def _q(r):
    """Q(r) = sum r^j / (j + 2)! to r^13, by Estrin's scheme: a short dependency chain, which
    the CPU overlaps across loop iterations better than Horner's 13 FMAs in a row."""
    r2 = r * r
    r4 = r2 * r2
    a = (_Q[0] + _Q[1] * r) + (_Q[2] + _Q[3] * r) * r2
    b = (_Q[4] + _Q[5] * r) + (_Q[6] + _Q[7] * r) * r2
    c = (_Q[8] + _Q[9] * r) + (_Q[10] + _Q[11] * r) * r2
    d = _Q[12] + _Q[13] * r
    return (a + b * r4) + (c + d * r4) * (r4 * r4)


@numba.njit(inline="always")
def _q1(r):
    """Q1(r) = sum r^j / (j + 3)! to r^20, by Estrin's scheme."""
    r2 = r * r
    r4 = r2 * r2
    r8 = r4 * r4
    a = (_Q1[0] + _Q1[1] * r) + (_Q1[2] + _Q1[3] * r) * r2
    b = (_Q1[4] + _Q1[5] * r) + (_Q1[6] + _Q1[7] * r) * r2
    c = (_Q1[8] + _Q1[9] * r) + (_Q1[10] + _Q1[11] * r) * r2
    d = (_Q1[12] + _Q1[13] * r) + (_Q1[14] + _Q1[15] * r) * r2
    e = (_Q1[16] + _Q1[17] * r) + (_Q1[18] + _Q1[19] * r) * r2
    return ((a + b * r4) + (c + d * r4) * r8) + (e + _Q1[20] * r4) * (r8 * r8)


@numba.njit(inline="always")
def _expm1_reduced(r):
    """e^r - 1 for |r| <= 1/2: r + r^2 Q(r), so that the rounding errors fall on the smaller
    term."""
    q = _q(r)
    return r + (r * r) * q


@numba.njit(inline="always")
def vexp(x):
    """e^x for a float64 x: at most 1 ulp from np.exp and from the exact value, subnormal
    results included."""
    return _exp_parts(x)[0]


@numba.njit(inline="always")
def vexp_tanh(a):
    """(e^-a, tanh a) for a float64 a, from one exponential: e^-a as ``vexp(-a)`` gives it (bit
    for bit), tanh a at most 3 ulp from np.tanh in every test.

    With -a = k ln2 + r and p = e^r - 1: m = e^(-2a) - 1 = 4^k (p^2 + 2p) + (4^k - 1), where
    4^k - 1 is exact for |k| <= 26 and p^2 + 2p does not cancel, so m has no cancellation near
    0 either; tanh a = -m / (m + 2), one division. |a| > 20: +-1 by a select (tanh rounds to it;
    4^k would leave the exponent range); |a| < 1e-9 gives a (keeps +-0.0); NaN propagates."""
    e, k, p = _exp_parts(-a)
    big = abs(a) > 20.0
    s = _f64_from_bits((2 * (0 if big else k) + 1023) << 52)    # 4^k
    m = s * (p * p + 2.0 * p) + (s - 1.0)
    t = -m / (m + 2.0)
    t = a if abs(a) < 1e-9 else t
    return e, ((1.0 if a > 0.0 else -1.0) if big else t)


@numba.njit(inline="always")
def vexpm1(x):
    """e^x - 1 for a float64 x: at most 1 ulp from np.expm1 and from the exact value."""
    k, r, s1, s2 = _reduce(x, True)
    p = _expm1_reduced(r)
    s = s1 * s2                                   # 2^k, exact where used (|k| <= 53)
    mid = s * p + (s - 1.0)                       # 2^k - 1 exact: one rounding
    far = ((1.0 + p) * s1) * s2 - 1.0
    v = p if k == 0 else (mid if abs(k) <= 53 else far)
    v = x if abs(x) < 1e-300 else v               # keeps the sign of -0.0
    return -1.0 if x < _X_MIN else (math.inf if x > _X_MAX else v)


@numba.njit(inline="always")
def vtanh(x):
    """tanh(x) for a float64 x: at most 1 ulp from the exact value in every test, 2 from np.tanh."""
    y = abs(x)
    y = 20.0 if y > 20.0 else y                   # inf -> 20 (tanh(20) rounds to 1); NaN stays
    yk = y if y < 20.0 else 20.0                  # NaN -> 20, so floor gets a finite value
    small = y < 0.7
    # e^(2y) = 2^k e^r; k = 0 below 0.7, where r = 2y exactly
    k = math.floor(yk * (2.0 * INV_LN2) + 0.5)    # k <= 29
    k = 0 if small else k
    r = (2.0 * y - k * LN2_HI) - k * LN2_LO
    q1 = _q1(r)                                   # (Q(r) - 1/2) / r
    d = (r * r) * (0.5 + r * q1)                  # e^r - 1 - r
    p = r + d
    s = _f64_from_bits((k + 1023) << 52)
    den = (s + 1.0) + s * p                       # e^(2y) + 1; s + 1 and s p exact
    # small: tanh y = y + (d - 2y^2 - y d) / (e^(2y) + 1), where d - 2y^2 = r^3 Q1(r)
    # large: tanh y = 1 - 2 / (e^(2y) + 1)
    num = ((r * r) * r) * q1 - y * d
    num = num if small else -2.0
    t = (y if small else 1.0) + num / den
    t = t if x > 0.0 else -t                      # NaN: -NaN, still NaN
    return x if abs(x) < 1e-9 else t              # tanh(x) rounds to x; keeps -0.0


# Cephes' tanh for |x| < 0.625: tanh x = x + x z P(z) / Q(z), z = x^2 (2.5e-16 peak relative).
_TP = (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)
_TQ = (1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3)


@numba.njit(inline="always")
def vtanh_e(x, e):
    """tanh(x) given e = e^-x (as ``vexp(-x)`` gives it), for a kernel that computes both: no
    exponential of its own. At most 2 ulp from np.tanh in every test.

    For |x| >= 0.625, tanh x = (1 - e^2) / (1 + e^2), for both signs: 1 - e^2 does not cancel
    there (e^2 <= 0.29 or >= 3.4). Below, Cephes' rational function, whose division is the same
    one: numerator and denominator are selected. Past x = -20, e^2 may overflow: -1 by a
    select (tanh rounds to -1 there); NaN propagates through e; |x| < 1e-9 gives x."""
    z = x * x
    w = e * e
    small = abs(x) < 0.625
    p = (_TP[0] * z + _TP[1]) * z + _TP[2]
    q = ((z + _TQ[0]) * z + _TQ[1]) * z + _TQ[2]
    num = (x * z) * p if small else 1.0 - w
    den = q if small else 1.0 + w
    t = (x if small else 0.0) + num / den
    t = x if abs(x) < 1e-9 else t                 # tanh(x) rounds to x; keeps -0.0
    return -1.0 if x < -20.0 else t


# ---- 512-bit vectors, per loop --------------------------------------------------------------
# Where they pay is decided when the code is generated (adcompiler/backends/numba_target.py);
# ``wide_vectors()`` in a loop body sets LLVM's function attribute "prefer-vector-width"="512"
# on the function the loop is compiled into (in a prange loop: the outlined body), and on no
# other code.
@intrinsic
def wide_vectors(typingctx):
    """Let LLVM vectorise the calling function with 512-bit vectors (no code of its own)."""
    def codegen(context, builder, sig, args):
        # llvmlite's attribute set checks names against a fixed list that has no string
        # attributes; LLVM reads this one from the function definition as written.
        set.add(builder.function.attributes, '"prefer-vector-width"="512"')
        return context.get_dummy_value()
    return types.none(), codegen
