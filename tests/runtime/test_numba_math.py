"""adcompiler.runtime.numba_math: vexp, vexpm1, vtanh, vtanh_e and vexp_tanh against NumPy, in
ulp, on dense grids and at the edges (signed zeros, infinities, NaN, overflow, subnormal
results), called from a numba loop as the numba backend's kernels call them; and the loop
vectorises."""

import re

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from adcompiler.runtime.numba_math import vexp, vexp_tanh, vexpm1, vtanh, vtanh_e  # noqa: E402

MAX_ULP = 2
FASTMATH = [False, {"contract"}]       # the backend compiles with {'contract'}

EDGES = np.array([
    0.0, -0.0, np.inf, -np.inf, np.nan,
    700.0, -700.0, 709.78, -709.78, 709.782712893384, 709.7827128933839, 710.0, -710.0,
    745.0, -745.0, 745.13, -745.13, 746.0, -746.0, 800.0, -800.0, 1e300, -1e300,
    -745.1332191019411, -745.1332191019412, -744.44007192138, -708.4, -708.39, -708.0,
    1e-300, -1e-300, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-10, -1e-10, 1e-9, -1e-9,
    0.5, -0.5, 0.7, -0.7, 19.06, -19.06, 20.0, -20.0, 30.0, -30.0, 40.0, -40.0,
])
WIDE = np.concatenate([np.linspace(-750.0, 750.0, 100_001), EDGES])
SUBNORMAL_RESULTS = np.linspace(-745.13, -708.4, 100_001)   # exp(x) is subnormal here
NARROW = np.concatenate([np.linspace(-30.0, 30.0, 100_001), np.linspace(-2.0, 2.0, 100_001),
                         EDGES])
TINY = np.concatenate([np.geomspace(1e-320, 1.0, 20_001), -np.geomspace(1e-320, 1.0, 20_001)])


def _kernel(fastmath):
    @numba.njit(fastmath=fastmath, error_model="numpy")
    def run(x, e, em1, t):
        for i in range(x.size):
            e[i] = vexp(x[i])
            em1[i] = vexpm1(x[i])
            t[i] = vtanh(x[i])
    return run


_KERNELS = {}


def _eval(x, fastmath):
    """(vexp, vexpm1, vtanh) of x, computed in one numba loop."""
    key = str(fastmath)
    if key not in _KERNELS:
        _KERNELS[key] = _kernel(fastmath)
    out = tuple(np.empty_like(x) for _ in range(3))
    _KERNELS[key](x, *out)
    return out


def _ordered(v):
    """float64 -> uint64 keys in the order of the floats, so that a key difference counts ulps
    (-0.0 and +0.0 get neighbouring keys)."""
    bits = np.ascontiguousarray(v, dtype=np.float64).view(np.uint64)
    sign = np.uint64(1) << np.uint64(63)
    return np.where(bits & sign, ~bits, bits | sign)


def ulp_distance(got, want):
    """Ulps between got and want, elementwise; 0 where both are NaN, huge where one is."""
    a, b = _ordered(got), _ordered(want)
    d = np.where(a > b, a - b, b - a)
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    d = np.where(nan_got & nan_want, np.uint64(0), d)
    return np.where(nan_got != nan_want, np.uint64(2 ** 62), d)


def _assert_close(x, got, want, name):
    d = ulp_distance(got, want)
    i = int(np.argmax(d))
    assert d[i] <= MAX_ULP, (f"{name}({x[i]!r}) = {got[i]!r}, NumPy gives {want[i]!r}: "
                             f"{int(d[i])} ulp")
    zero = want == 0.0     # the sign of a zero result: -0.0 and +0.0 are 1 ulp apart above
    assert np.array_equal(np.signbit(got[zero]), np.signbit(want[zero])), name


def test_ulp_distance_counts_ulps():
    x = np.array([1.0, -1.0, 0.0, 5e-324, np.inf, np.nan, 1.0])
    y = np.array([np.nextafter(1.0, 2.0), np.nextafter(-1.0, -2.0), -0.0, -5e-324,
                  np.finfo(np.float64).max, np.nan, np.nan])
    assert ulp_distance(x, y).tolist() == [1, 1, 1, 3, 1, 0, 2 ** 62]


@pytest.mark.parametrize("fastmath", FASTMATH, ids=str)
def test_exp_and_expm1_on_a_wide_grid(fastmath):
    e, em1, _ = _eval(WIDE, fastmath)
    with np.errstate(over="ignore"):
        _assert_close(WIDE, e, np.exp(WIDE), "vexp")
        _assert_close(WIDE, em1, np.expm1(WIDE), "vexpm1")


@pytest.mark.parametrize("fastmath", FASTMATH, ids=str)
def test_exp_gives_subnormal_results_not_zero(fastmath):
    e, _, _ = _eval(SUBNORMAL_RESULTS, fastmath)
    want = np.exp(SUBNORMAL_RESULTS)
    assert (want > 0).all() and (want < np.finfo(np.float64).tiny).any()
    assert (e > 0).all()
    _assert_close(SUBNORMAL_RESULTS, e, want, "vexp")


@pytest.mark.parametrize("fastmath", FASTMATH, ids=str)
def test_tanh_and_expm1_on_a_narrow_grid(fastmath):
    e, em1, t = _eval(NARROW, fastmath)
    with np.errstate(over="ignore"):
        _assert_close(NARROW, t, np.tanh(NARROW), "vtanh")
        _assert_close(NARROW, em1, np.expm1(NARROW), "vexpm1")
        _assert_close(NARROW, e, np.exp(NARROW), "vexp")


@pytest.mark.parametrize("fastmath", FASTMATH, ids=str)
def test_tiny_arguments(fastmath):
    e, em1, t = _eval(TINY, fastmath)
    _assert_close(TINY, e, np.exp(TINY), "vexp")
    _assert_close(TINY, em1, np.expm1(TINY), "vexpm1")
    _assert_close(TINY, t, np.tanh(TINY), "vtanh")
    small = np.abs(TINY) < 1e-17     # expm1(x) and tanh(x) round to x itself
    assert np.array_equal(em1[small], TINY[small])
    assert np.array_equal(t[small], TINY[small])


@pytest.mark.parametrize("fastmath", FASTMATH, ids=str)
def test_special_values(fastmath):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan])
    e, em1, t = _eval(x, fastmath)
    assert e[:4].tolist() == [1.0, 1.0, np.inf, 0.0]
    assert em1[:4].tolist() == [0.0, -0.0, np.inf, -1.0]
    assert t[:4].tolist() == [0.0, -0.0, 1.0, -1.0]
    assert np.signbit(em1[:2]).tolist() == [False, True]
    assert np.signbit(t[:2]).tolist() == [False, True]      # tanh(-0.0) is -0.0
    assert np.isnan(e[4:]).all() and np.isnan(em1[4:]).all() and np.isnan(t[4:]).all()


@pytest.mark.parametrize("fastmath", FASTMATH, ids=str)
def test_overflow_and_underflow_thresholds(fastmath):
    last = 709.782712893384                  # the largest x with a finite exp(x)
    above = np.nextafter(last, np.inf)
    big = np.finfo(np.float64).max
    x = np.array([last, above, 710.0, 745.0, 800.0, 1e300,
                  -745.1332191019411, -745.1332191019412, -746.0, -800.0, -1e300])
    e, em1, t = _eval(x, fastmath)
    assert 0.999 * big < e[0] < np.inf and 0.999 * big < em1[0] < np.inf
    assert (e[1:6] == np.inf).all() and (em1[1:6] == np.inf).all()
    assert e[6] == 5e-324                    # the smallest subnormal, not 0
    assert (e[7:] == 0.0).all() and (em1[6:] == -1.0).all()
    assert (t[:6] == 1.0).all() and (t[6:] == -1.0).all()


def test_the_loop_vectorises():
    @numba.njit(fastmath={"contract"}, error_model="numpy")
    def f(x, out):
        for i in range(x.size):
            out[i] = vexp(x[i]) + vtanh(x[i])

    x = np.linspace(-3.0, 3.0, 1001)
    out = np.empty_like(x)
    f(x, out)
    np.testing.assert_allclose(out, np.exp(x) + np.tanh(x), rtol=1e-15, atol=1e-15)
    llvm = f.inspect_llvm(f.signatures[0])
    assert re.search(r"<(4|8) x double>", llvm), "the loop did not vectorise"
    assert not re.search(r"call [^\n]*@(exp|tanh|llvm\.exp\.)", llvm), "a libm call remains"


# ---- vtanh_e(x, e): tanh from e = e^-x, which the kernel computes anyway ----------------------
AROUND_SWITCH = np.concatenate([np.linspace(0.6, 0.65, 20_001), -np.linspace(0.6, 0.65, 20_001),
                                np.linspace(-1.0, 1.0, 200_001), np.linspace(19.0, 21.0, 2_001),
                                -np.linspace(19.0, 21.0, 2_001)])


def _tanh_e_kernel(fastmath):
    @numba.njit(fastmath=fastmath, error_model="numpy")
    def run(x, t):
        for i in range(x.size):
            t[i] = vtanh_e(x[i], vexp(-x[i]))
    return run


def _tanh_e(x, fastmath):
    key = "tanh_e " + str(fastmath)
    if key not in _KERNELS:
        _KERNELS[key] = _tanh_e_kernel(fastmath)
    t = np.empty_like(x)
    _KERNELS[key](x, t)
    return t


@pytest.mark.parametrize("grid", ["WIDE", "NARROW", "TINY", "AROUND_SWITCH"])
@pytest.mark.parametrize("fastmath", FASTMATH, ids=str)
def test_tanh_from_the_exponential_on_grids(fastmath, grid):
    x = globals()[grid]
    with np.errstate(over="ignore"):
        _assert_close(x, _tanh_e(x, fastmath), np.tanh(x), "vtanh_e")


@pytest.mark.parametrize("fastmath", FASTMATH, ids=str)
def test_tanh_from_the_exponential_at_special_values(fastmath):
    x = np.array([0.0, -0.0, np.inf, -np.inf, 800.0, -800.0, 1e-300, -5e-324, np.nan])
    with np.errstate(over="ignore"):
        t = _tanh_e(x, fastmath)
    assert t[:8].tolist() == [0.0, -0.0, 1.0, -1.0, 1.0, -1.0, 1e-300, -5e-324]
    assert np.signbit(t[:2]).tolist() == [False, True] and np.isnan(t[8])


def test_the_loop_of_tanh_from_the_exponential_vectorises():
    @numba.njit(fastmath={"contract"}, error_model="numpy")
    def f(x, out):
        for i in range(x.size):
            e = vexp(-x[i])
            out[i] = vtanh_e(x[i], e) + e

    x = np.linspace(-3.0, 3.0, 1001)
    out = np.empty_like(x)
    f(x, out)
    np.testing.assert_allclose(out, np.tanh(x) + np.exp(-x), rtol=1e-15, atol=1e-15)
    llvm = f.inspect_llvm(f.signatures[0])
    assert re.search(r"<(4|8) x double>", llvm), "the loop did not vectorise"
    assert not re.search(r"call [^\n]*@(exp|tanh|llvm\.exp\.)", llvm), "a libm call remains"


# ---- vexp_tanh(a): (e^-a, tanh a) from one exponential ---------------------------------------
PAIR_MAX_ULP = 3   # tanh: 2.5 ulp from the exact value at worst (mpmath, 80,000 random points)
K_EDGES = np.concatenate([np.linspace(0.3, 0.4, 20_001), -np.linspace(0.3, 0.4, 20_001),
                          np.linspace(1.0, 1.1, 20_001), -np.linspace(1.0, 1.1, 20_001)])


def _pair_kernel(fastmath):
    @numba.njit(fastmath=fastmath, error_model="numpy")
    def run(x, e, t, e_alone):
        for i in range(x.size):
            e[i], t[i] = vexp_tanh(x[i])
            e_alone[i] = vexp(-x[i])
    return run


def _pair(x, fastmath):
    key = "pair " + str(fastmath)
    if key not in _KERNELS:
        _KERNELS[key] = _pair_kernel(fastmath)
    out = tuple(np.empty_like(x) for _ in range(3))
    _KERNELS[key](x, *out)
    return out


@pytest.mark.parametrize("grid", ["WIDE", "NARROW", "TINY", "AROUND_SWITCH", "K_EDGES",
                                  "SUBNORMAL_RESULTS"])
@pytest.mark.parametrize("fastmath", FASTMATH, ids=str)
def test_exp_and_tanh_from_one_exponential_on_grids(fastmath, grid):
    """K_EDGES: where k of -a = k ln2 + r steps from 0 to +-1 and +-1 to +-2; SUBNORMAL_RESULTS
    negated: e^-a subnormal."""
    x = -SUBNORMAL_RESULTS if grid == "SUBNORMAL_RESULTS" else globals()[grid]
    with np.errstate(over="ignore"):
        e, t, e_alone = _pair(x, fastmath)
        assert np.array_equal(e, e_alone, equal_nan=True)    # vexp(-a) bit for bit
        _assert_close(x, e, np.exp(-x), "vexp_tanh[0]")
    d = ulp_distance(t, np.tanh(x))
    i = int(np.argmax(d))
    assert d[i] <= PAIR_MAX_ULP, f"vexp_tanh({x[i]!r})[1] = {t[i]!r}: {int(d[i])} ulp"


@pytest.mark.parametrize("fastmath", FASTMATH, ids=str)
def test_exp_and_tanh_from_one_exponential_at_special_values(fastmath):
    x = np.array([0.0, -0.0, np.inf, -np.inf, 800.0, -800.0, 20.0, -20.0, 20.5, -20.5,
                  1e-300, -5e-324, 1e-10, -1e-10, 746.0, -709.78, -710.0, np.nan])
    with np.errstate(over="ignore"):
        e, t, _ = _pair(x, fastmath)
        want_e, want_t = np.exp(-x), np.tanh(x)
    assert t[:10].tolist() == [0.0, -0.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0]
    assert np.signbit(t[:2]).tolist() == [False, True]
    assert t[10:14].tolist() == x[10:14].tolist()            # tanh rounds to a itself
    assert np.array_equal(t[:17], want_t[:17]) and np.isnan(t[17])
    assert e[:6].tolist() == [1.0, 1.0, 0.0, np.inf, 0.0, np.inf]
    assert e[14] == 0.0 and e[15] < np.inf and e[16] == np.inf and np.isnan(e[17])
    assert (ulp_distance(e[:17], want_e[:17]) <= 1).all()


def test_the_loop_of_exp_and_tanh_from_one_exponential_vectorises():
    @numba.njit(fastmath={"contract"}, error_model="numpy")
    def f(x, out):
        for i in range(x.size):
            e, t = vexp_tanh(x[i])
            out[i] = t + e

    x = np.linspace(-3.0, 3.0, 1001)
    out = np.empty_like(x)
    f(x, out)
    np.testing.assert_allclose(out, np.tanh(x) + np.exp(-x), rtol=1e-15, atol=1e-15)
    llvm = f.inspect_llvm(f.signatures[0])
    assert re.search(r"<(4|8) x double>", llvm), "the loop did not vectorise"
    assert not re.search(r"call [^\n]*@(exp|tanh|llvm\.exp\.|llvm\.floor)", llvm), "a call remains"
    assert len(re.findall(r"fdiv [a-z ]*<(4|8) x double>", llvm)) == 1   # one for both
