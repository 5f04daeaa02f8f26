"""SciPy's special functions in compiled code (issue 29, part 3): ``scipy.special``'s elementwise
rows, ``polygamma(n, x)``, ``logsumexp``/``softmax``/``log_softmax``, ``scipy.stats.norm``
and ``math.erf``/``erfc``/``lgamma``/``gamma`` on Python floats.

For each elementwise function: the compiled gradient against central differences and the tape,
the tangent (jvp) against the gradient, second derivatives (the hessian's diagonal) against
central differences of the gradient, the numba backend, the buffered code past the planner's
threshold against the unoptimised gradient, and the CuPy code on NumPy playing CuPy. The rules
themselves are checked against finite differences and ``sympy.diff`` with every other rule
(tests/templates/test_templates.py, from the rows' ``domain`` and ``sympy`` fields). Values at
the edges (poles, the ends of a domain, infinities) equal SciPy's, NaN where SciPy's is NaN;
SciPy stays optional (the generated code imports ``scipy.special`` only where it calls it, and
where SciPy is missing a located error says to install it).
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

pytest.importorskip("scipy")   # (SciPy is optional; the test extra does not install it)
import scipy.special as sp  # noqa: E402
from scipy.special import log_softmax, logsumexp, softmax  # noqa: E402
from scipy.stats import norm  # noqa: E402

import adcompiler as ad  # noqa: E402
from adcompiler import tape
from adcompiler.backends.check_modes import unoptimised
from tests import cupy_helpers
from tests.cupy_helpers import assert_close, compile_both, emulate

W = np.linspace(0.5, 1.5, 7)


def f_erf(x):
    return np.sum(sp.erf(x) * W)


def f_erfc(x):
    return np.sum(sp.erfc(x) * W)


def f_erfcx(x):
    return np.sum(sp.erfcx(x) * W)


def f_erfinv(x):
    return np.sum(sp.erfinv(x) * W)


def f_ndtr(x):
    return np.sum(sp.ndtr(x) * W)


def f_log_ndtr(x):
    return np.sum(sp.log_ndtr(x) * W)


def f_ndtri(x):
    return np.sum(sp.ndtri(x) * W)


def f_gammaln(x):
    return np.sum(sp.gammaln(x) * W)


def f_gamma(x):
    return np.sum(sp.gamma(x) * W)


def f_digamma(x):
    return np.sum(sp.digamma(x) * W)


def f_psi(x):
    return np.sum(sp.psi(x) * W)


def f_polygamma(x):
    return np.sum(sp.polygamma(2, x) * W)


def f_betaln(x):
    return np.sum(sp.betaln(x, 2.0 * x + 0.5) * W)


def f_expit(x):
    return np.sum(sp.expit(x) * W)


def f_logit(x):
    return np.sum(sp.logit(x) * W)


def f_log_expit(x):
    return np.sum(sp.log_expit(x) * W)


def f_xlogy(x):
    return np.sum(sp.xlogy(x, x * x + 0.5) * W)


def f_xlog1py(x):
    return np.sum(sp.xlog1py(x, x * x) * W)


def f_i0e(x):
    return np.sum(sp.i0e(x) * W)


def f_i1e(x):
    return np.sum(sp.i1e(x) * W)


# (function, a point in its domain: seven entries)
SIGNED = np.array([-1.7, -0.9, -0.3, 0.2, 0.6, 1.1, 1.9])
POSITIVE = np.array([0.3, 0.55, 0.9, 1.4, 2.2, 3.1, 4.5])
UNIT = np.array([0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.93])
CASES = {
    "erf": (f_erf, SIGNED), "erfc": (f_erfc, SIGNED), "erfcx": (f_erfcx, SIGNED),
    "erfinv": (f_erfinv, SIGNED / 2.0), "ndtr": (f_ndtr, SIGNED * 2),
    "log_ndtr": (f_log_ndtr, SIGNED * 3), "ndtri": (f_ndtri, UNIT),
    "gammaln": (f_gammaln, POSITIVE), "gamma": (f_gamma, POSITIVE),
    "digamma": (f_digamma, POSITIVE), "psi": (f_psi, POSITIVE),
    "polygamma": (f_polygamma, POSITIVE), "betaln": (f_betaln, POSITIVE),
    "expit": (f_expit, SIGNED * 2), "logit": (f_logit, UNIT),
    "log_expit": (f_log_expit, SIGNED * 3), "xlogy": (f_xlogy, SIGNED),
    "xlog1py": (f_xlog1py, SIGNED), "i0e": (f_i0e, SIGNED), "i1e": (f_i1e, SIGNED),
}
PARAMS = [pytest.param(f, x, id=name) for name, (f, x) in CASES.items()]
# SciPy's Python functions: the tape cannot see them (they do not dispatch to tensors)
NOT_ON_THE_TAPE = {"polygamma"}


def central_differences(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = eps
        out[j] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


@pytest.mark.parametrize("f, x", PARAMS)
def test_gradient_against_differences_and_the_tape(f, x):
    got = ad.grad(f)(x)
    np.testing.assert_allclose(got, central_differences(f, x), rtol=1e-6, atol=1e-7)
    if f.__name__[2:] not in NOT_ON_THE_TAPE:
        np.testing.assert_allclose(tape.dynamic_grad(f)(x), got, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("f, x", PARAMS)
def test_float32_in_float32_out(f, x):
    """SciPy's float32 loops (polygamma's float64 result cast back to the input's dtype)."""
    got = ad.grad(f)(x.astype(np.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ad.grad(f)(x), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("f, x", PARAMS)
def test_tangent_is_the_gradient_along_a_direction(f, x):
    v = np.linspace(-1.0, 1.0, x.size)
    value, tangent = ad.jvp(f)(x, tangents=v)
    assert float(value) == pytest.approx(float(f(x)), rel=1e-14)
    assert float(tangent) == pytest.approx(float(ad.grad(f)(x) @ v), rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("f, x", PARAMS)
def test_second_derivatives_against_differences_of_the_gradient(f, x):
    """The Hessian's columns (every rule differentiated again, in the same functions:
    digamma's rule gives polygamma(1, .), polygamma(2, .)'s gives polygamma(4, .))."""
    g = ad.grad(f)
    hessian = ad.hessian(f)(x)
    eps = 1e-5
    for j in (0, 3, 6):
        e = np.zeros_like(x)
        e[j] = eps
        column = (g(x + e) - g(x - e)) / (2 * eps)
        np.testing.assert_allclose(hessian[:, j], column, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f, x", PARAMS)
def test_numba_backend_computes_the_same_gradient(f, x):
    np.testing.assert_allclose(ad.grad(f, backend="numba")(x), ad.grad(f)(x), rtol=1e-13,
                               atol=1e-15)


def erf_times_erfc(x):
    return np.sum(sp.erf(x) * sp.erfc(x))


def expit_alone(x):
    return np.sum(sp.expit(x))


def test_numba_loops_call_math_where_numba_has_the_function():
    """erf and erfc are numba's math.erf, math.erfc: the gradient is one loop; SciPy's other
    functions have no loop form, and the numba backend writes NumPy code, which says so."""
    loops, numpy_code = ad.grad(erf_times_erfc, backend="numba"), ad.grad(expit_alone,
                                                                          backend="numba")
    np.testing.assert_allclose(loops(SIGNED), ad.grad(erf_times_erfc)(SIGNED), rtol=1e-14)
    numpy_code(SIGNED)
    assert "@numba.njit" in loops.source and "math.erfc(" in loops.source
    assert "@numba.njit" not in numpy_code.source
    assert "computes expit, which has no loop form" in numpy_code.source


BIG_W = np.resize(W, 70 * 70)


def big_erf(x):
    return np.sum(sp.erf(x) * sp.expit(x) * BIG_W)


def big_gammaln(x):
    return np.sum(sp.gammaln(x * x + 0.5) * sp.ndtr(x) + sp.xlogy(x, x * x + 1.0) * BIG_W)


@pytest.mark.parametrize("f", [big_erf, big_gammaln])
def test_planned_buffers_call_scipy_into_them(f):
    x = np.resize(SIGNED, 70 * 70)
    g = ad.grad(f)
    got = g(x)
    assert "scipy.special." in g.source and "out=_buf" in g.source
    assert any("scipy.special." in line and "out=_buf" in line for line in g.source.splitlines())
    with unoptimised():
        np.testing.assert_allclose(got, ad.grad(f)(x), rtol=1e-13, atol=1e-15)


def threaded_chain(x):
    return np.sum(sp.erf(x * 2.0) * sp.expit(x) + sp.gammaln(x * x + 1.0))


def test_threaded_ufuncs_past_the_threshold():
    """Past numexpr_chains.MIN_ELEMENTS a planned ufunc is cut over threads: SciPy's too
    (``_threaded(scipy.special.expit, x, out=_buf1)``), against the unoptimised gradient."""
    from adcompiler.backends import numexpr_chains
    if not numexpr_chains.enabled():
        pytest.skip("numexpr is off or missing: no threaded path to check")
    x = np.linspace(-2.0, 2.0, 2 * numexpr_chains.MIN_ELEMENTS)
    g = ad.grad(threaded_chain)
    got = g(x)
    assert "_threaded(scipy.special." in g.source
    with unoptimised():
        np.testing.assert_allclose(got, ad.grad(threaded_chain)(x), rtol=1e-13, atol=1e-15)


@pytest.fixture
def cupyx_scipy(monkeypatch):
    """cupyx.scipy.special played by SciPy, for NumPy playing CuPy."""
    monkeypatch.setattr(cupy_helpers.CUPYX, "scipy", types.SimpleNamespace(special=sp),
                        raising=False)


@pytest.mark.parametrize("f, x", PARAMS)
def test_cupy_code_calls_cupyx_scipy(f, x, cupyx_scipy):
    cupy_code, numpy_code = compile_both(f, (x,))
    assert "scipy.special." not in cupy_code.source.replace("cupyx.scipy.special.", "")
    assert "import" not in cupy_code.source
    assert_close(emulate(cupy_code)(x), numpy_code.function(x), 1e-12)


def kernel_chain(x, y):
    return np.sum(np.tanh(sp.erf(x * y + 1.0) * 2.0 + sp.erfc(y)) * sp.expit(x)
                  + sp.gammaln(x + 2.0) * sp.gamma(y + 1.5))


def test_cupy_backend_end_to_end_on_the_stand_in():
    """On tests/fake_cupy.py (NumPy playing CuPy, its kernels run from their C): erf and erfc
    inside an ElementwiseKernel (CUDA's own), expit, gammaln and digamma through
    cupyx.scipy.special, which the loader imports; the tape's CuPy path computes the same."""
    from tests import fake_cupy
    x, y = np.linspace(0.1, 2.0, 5000), np.linspace(-1.0, 1.0, 5000)
    want = ad.grad(kernel_chain, wrt=(0, 1))(x, y)
    with fake_cupy.install() as cp:
        g = ad.grad(kernel_chain, wrt=(0, 1), backend="cupy")
        got = g(*fake_cupy.on_device(cp, (x, y)))
        assert "erf(" in "".join(k.operation for k in g._latest().kernels)
        assert "cupyx.scipy.special.expit(" in g.source
        assert_close(tuple(v.get() for v in got), want, 1e-12)
        tensors = [tape.tensor(a, requires_grad=True) for a in fake_cupy.on_device(cp, (x, y))]
        kernel_chain(*tensors).backward()
        assert_close(tuple(t.grad._data.get() for t in tensors), want, 1e-12)


# ---- values at the edges: SciPy's -------------------------------------------------------------
def v_logit(x):
    return sp.logit(x)


def v_erfinv(x):
    return sp.erfinv(x)


def v_ndtri(x):
    return sp.ndtri(x)


def v_gammaln(x):
    return sp.gammaln(x)


def v_log_ndtr(x):
    return sp.log_ndtr(x)


def v_xlogy(x, y):
    return sp.xlogy(x, y)


def v_xlog1py(x, y):
    return sp.xlog1py(x, y)


def v_digamma(x):
    return sp.digamma(x)


def v_erfcx(x):
    return sp.erfcx(x)


EDGES = [
    (v_logit, np.array([0.0, 1.0, 1.5, -0.5, 0.5, np.nan])),
    (v_erfinv, np.array([-1.0, 1.0, 2.0, 0.0, np.nan])),
    (v_ndtri, np.array([0.0, 1.0, -0.1, 1.2, 0.5])),
    (v_gammaln, np.array([0.0, -1.0, -2.5, 1e-300, 1e300, np.inf])),
    (v_log_ndtr, np.array([-40.0, -1e3, 40.0, np.inf, -np.inf])),
    (v_digamma, np.array([0.0, -1.0, -0.5, np.inf])),
    (v_erfcx, np.array([-30.0, 30.0, 1e10, -np.inf, np.inf])),
]


@pytest.mark.parametrize("f, x", EDGES, ids=[f.__name__ for f, _ in EDGES])
def test_values_at_the_edges_are_scipys(f, x):
    """The compiled function's value (through the tangent, which computes it) is SciPy's,
    NaN and infinities included."""
    with np.errstate(all="ignore"):
        value, _ = ad.jvp(f)(x, tangents=np.ones_like(x))
        np.testing.assert_array_equal(value, f(x))


@pytest.mark.parametrize("f", [v_xlogy, v_xlog1py])
def test_xlogy_at_zero_is_zero_and_takes_no_gradient_into_y(f):
    x = np.array([0.0, 0.0, 0.0, 2.0])
    y = np.array([0.0, -1.0, 3.0, 0.5]) - (1.0 if f is v_xlog1py else 0.0)
    with np.errstate(all="ignore"):
        value, tangent = ad.jvp(f, wrt=1)(x, y, tangents=np.ones(4))
        np.testing.assert_array_equal(value, f(x, y))
    np.testing.assert_array_equal(tangent[:3], [0.0, 0.0, 0.0])   # not 0 * inf, 0 / 0
    assert tangent[3] == pytest.approx(2.0 / (y[3] + (1.0 if f is v_xlog1py else 0.0)))


def tail(x):
    return np.sum(sp.log_ndtr(x))


def test_log_ndtr_gradient_stays_finite_far_in_the_left_tail():
    """pdf / cdf as exp(log pdf - log cdf): about -x there, where both underflow."""
    x = np.array([-40.0, -200.0, -1e4])
    got = ad.grad(tail)(x)
    np.testing.assert_allclose(got, -x, rtol=1e-3)
    assert np.all(np.isfinite(got))


def scaled_bessel(x):
    return np.sum(sp.i1e(x) + sp.erfcx(x))


def test_i1e_slope_at_zero_and_erfcx_slope_where_exp_would_overflow():
    x = np.array([0.0, 50.0])
    got = ad.grad(scaled_bessel)(x)
    assert got[0] == pytest.approx(0.5 - 2 / math.sqrt(math.pi), rel=1e-14)
    assert np.isfinite(got[1])


def f_polygamma_orders(x):
    return np.sum(sp.polygamma(0, x) + sp.polygamma(1, x) * 2.0 + sp.polygamma(3, x))


def test_polygamma_of_each_order():
    np.testing.assert_allclose(ad.grad(f_polygamma_orders)(POSITIVE),
                               central_differences(f_polygamma_orders, POSITIVE), rtol=1e-6,
                               atol=1e-6)


def traced_order(x, n):
    return np.sum(sp.polygamma(n, x))


def float_order(x):
    return np.sum(sp.polygamma(1.5, x))


def test_polygamma_order_must_be_an_int_known_while_compiling():
    with pytest.raises(ad.CompileError, match=r"(?s)order n that is an int >= 0 known while "
                       r"compiling, not a traced .*polygamma\(1, x\)"):
        ad.grad(traced_order, wrt=0)(POSITIVE, np.float64(2.0))
    with pytest.raises(ad.CompileError, match=r"not 1.5") as info:
        ad.grad(float_order)(POSITIVE)
    assert "test_scipy_special.py" in str(info.value) and "^" in str(info.value)


# ---- logsumexp, softmax, log_softmax ----------------------------------------------------------
X = np.array([[0.3, -1.2, 2.0, 0.5], [1.7, 0.2, -0.4, 0.9], [-2.0, 0.6, 1.1, 0.0]])
B = np.array([[1.0, 0.5, 2.0, 1.5], [0.3, 1.0, 0.7, 2.0], [1.2, 0.8, 1.0, 0.4]])


def lse_all(x):
    return logsumexp(x)


def lse_axis0(x):
    return np.sum(logsumexp(x, axis=0) * np.arange(1.0, 5.0))


def lse_axis_last_keep(x):
    return np.sum(logsumexp(x, axis=-1, keepdims=True) * np.array([[1.0], [2.0], [3.0]]))


def lse_tuple(x):
    return logsumexp(x, axis=(0, 1))


def lse_weights(x):
    return np.sum(logsumexp(x, axis=1, b=B) ** 2)


def lse_signed(x):
    value, sign = logsumexp(x, axis=1, b=B - 1.0, return_sign=True)
    return np.sum(value * sign)


def lse_weights_traced(b):
    return np.sum(logsumexp(X, axis=0, b=b))


def softmax_rows(x):
    return np.sum(softmax(x, axis=1) * B)


def softmax_all(x):
    return np.sum(softmax(x) ** 2)


def log_softmax_rows(x):
    return np.sum(log_softmax(x, axis=-1) * B)


def log_softmax_all(x):
    return np.sum(log_softmax(x) * B)


REDUCTIONS = [lse_all, lse_axis0, lse_axis_last_keep, lse_tuple, lse_weights, lse_signed,
              lse_weights_traced, softmax_rows, softmax_all, log_softmax_rows, log_softmax_all]


def _matrix_differences(f, x, eps=1e-6):
    flat = x.reshape(-1)
    return central_differences(lambda v: f(v.reshape(x.shape)), flat, eps).reshape(x.shape)


@pytest.mark.parametrize("f", REDUCTIONS, ids=lambda f: f.__name__)
def test_reductions_of_exponentials(f):
    x = B if f is lse_weights_traced else X
    value, got = ad.value_and_grad(f)(x)
    assert float(value) == pytest.approx(float(f(x)), rel=1e-14)
    np.testing.assert_allclose(got, _matrix_differences(f, x), rtol=1e-6, atol=1e-8)
    v = np.linspace(-1.0, 1.0, x.size).reshape(x.shape)
    _, tangent = ad.jvp(f)(x, tangents=v)
    assert float(tangent) == pytest.approx(float(np.sum(got * v)), rel=1e-12)


def lse_rows(x):
    return np.sum(logsumexp(x, axis=1))


def test_logsumexp_shift_takes_no_gradient_passes():
    """The max-shift's gradient is stopped (it is exactly 0): the gradient is softmax, with no
    equality mask or tie count of the max's rule over the input; the Hessian is softmax's
    Jacobian, diag(p) - p p^T, row by row."""
    x = np.random.default_rng(3).standard_normal((300, 40))
    g = ad.grad(lse_rows)
    np.testing.assert_allclose(g(x), softmax(x, axis=1), rtol=1e-13, atol=1e-16)
    assert "==" not in g.source.split("# grad of")[1] and "np.equal" not in g.source
    row = X[1]
    p = softmax(row)
    np.testing.assert_allclose(ad.hessian(lse_all)(row), np.diag(p) - np.outer(p, p),
                               rtol=1e-12, atol=1e-15)


def lse_value(x):
    return logsumexp(x, axis=1)


def lse_value_b(x, b):
    return logsumexp(x, axis=1, b=b)


def lse_value_sign(x, b):
    return logsumexp(x, axis=1, b=b, return_sign=True)


def lse_value_signed(x, b):
    """Both results as one array (a function under jvp returns one)."""
    value, sign = logsumexp(x, axis=1, b=b, return_sign=True)
    return np.stack([value, sign])


def softmax_value(x):
    return softmax(x, axis=1)


def log_softmax_value(x):
    return log_softmax(x, axis=1)


INF = np.inf
EDGE_ROWS = np.array([[-INF, -INF, -INF], [INF, 1.0, 2.0], [np.nan, 0.0, 1.0],
                      [INF, -INF, 0.0], [1e308, 1e308, 0.0], [-1e3, -1e3, -1e3]])


@pytest.mark.parametrize("f", [lse_value, softmax_value, log_softmax_value],
                         ids=lambda f: f.__name__)
def test_reductions_at_infinities_and_nan_are_scipys(f):
    with np.errstate(all="ignore"):
        value, _ = ad.jvp(f)(EDGE_ROWS, tangents=np.ones_like(EDGE_ROWS))
        np.testing.assert_array_equal(value, f(EDGE_ROWS))


def test_logsumexp_weights_of_zero_and_negative_sums_are_scipys():
    x = np.array([[1.0, INF, np.nan], [0.5, 1.5, 2.5], [0.0, 1.0, 2.0]])
    b = np.array([[1.0, 0.0, 0.0], [1.0, -3.0, 0.1], [-1.0, -1.0, -1.0]])
    with np.errstate(all="ignore"):
        value, _ = ad.jvp(lse_value_b)(x, b, tangents=np.ones_like(x))
        np.testing.assert_allclose(value, lse_value_b(x, b), rtol=1e-15)   # NaN where SciPy's
        out, sign = ad.jvp(lse_value_signed)(x, b, tangents=np.ones_like(x))[0]
        want, want_sign = lse_value_sign(x, b)
    np.testing.assert_allclose(out, want, rtol=1e-15)
    np.testing.assert_array_equal(sign, want_sign)


# ---- scipy.stats.norm -------------------------------------------------------------------------
def norm_all(x, loc, scale):
    return (np.sum(norm.logpdf(x, loc, scale)) + np.sum(norm.cdf(x, loc=loc, scale=scale))
            + np.sum(norm.logcdf(x, loc, scale) * 2.0) + np.sum(norm.pdf(x, loc, scale))
            + np.sum(norm.sf(x, loc, scale)) + np.sum(norm.logsf(x, loc, scale)))


def norm_default(x):
    return np.sum(norm.logpdf(x) + norm.logcdf(x) - norm.cdf(x, 0.5))


def norm_quantile(q, loc, scale):
    return np.sum(norm.ppf(q, loc, scale) * W)


@pytest.mark.parametrize("argnum", [0, 1, 2])
def test_norm_gradients_in_x_loc_and_scale(argnum):
    args = [SIGNED, 0.3, 1.7]
    f = norm_all
    value, got = ad.value_and_grad(f, wrt=argnum)(*args)
    assert float(value) == pytest.approx(float(f(*args)), rel=1e-14)

    def along(v):
        return f(*[v if k == argnum else a for k, a in enumerate(args)])
    x = np.atleast_1d(np.asarray(args[argnum], float))
    want = central_differences(lambda v: along(v if argnum == 0 else float(v[0])), x)
    np.testing.assert_allclose(np.atleast_1d(got), want, rtol=1e-6, atol=1e-8)


def test_norm_defaults_and_quantiles():
    np.testing.assert_allclose(ad.grad(norm_default)(SIGNED),
                               central_differences(norm_default, SIGNED), rtol=1e-6)
    got = ad.grad(norm_quantile, wrt=(0, 2))(UNIT, 0.5, 2.0)
    np.testing.assert_allclose(got[0], central_differences(
        lambda q: norm_quantile(q, 0.5, 2.0), UNIT), rtol=1e-6)
    assert float(got[1]) == pytest.approx(float(np.sum(sp.ndtri(UNIT) * W)), rel=1e-12)


def frozen_norm(x, mu, s):
    d = norm(mu, scale=s)
    return np.sum(d.logpdf(x) + d.cdf(x) * 2.0 + d.ppf(UNIT[:5])) + np.sum(norm(1.0).logsf(x))


def test_frozen_norm_distributions():
    x = SIGNED[:5]
    got = ad.grad(frozen_norm, wrt=(0, 1, 2))(x, 0.3, 1.4)
    np.testing.assert_allclose(got[0], central_differences(
        lambda v: frozen_norm(v, 0.3, 1.4), x), rtol=1e-6)
    assert float(got[1]) == pytest.approx((frozen_norm(x, 0.3 + 1e-6, 1.4)
                                           - frozen_norm(x, 0.3 - 1e-6, 1.4)) / 2e-6, rel=1e-6)
    assert float(got[2]) == pytest.approx((frozen_norm(x, 0.3, 1.4 + 1e-6)
                                           - frozen_norm(x, 0.3, 1.4 - 1e-6)) / 2e-6, rel=1e-6)


def norm_values(x, scale):
    return norm.logpdf(x, 0.0, scale) + norm.cdf(x, 0.0, scale)


def test_norm_of_a_scale_that_is_not_positive_is_nan_as_scipys():
    x = np.array([0.5, 0.5, 0.5])
    scale = np.array([1.0, 0.0, -1.0])
    with np.errstate(all="ignore"):
        value, _ = ad.jvp(norm_values, wrt=0)(x, scale, tangents=np.ones(3))
        np.testing.assert_array_equal(value, norm_values(x, scale))


# ---- math on Python floats --------------------------------------------------------------------
def math_all(a):
    return math.erf(a) * 2.0 + math.erfc(a) * math.lgamma(a + 1.0) + math.gamma(a)


def test_math_functions_on_python_floats():
    for a in (0.4, 1.3, 2.7):
        g = ad.grad(math_all)
        got = g(a)
        assert type(got) is float
        want = (math_all(a + 1e-6) - math_all(a - 1e-6)) / 2e-6
        assert got == pytest.approx(want, rel=1e-7)
    assert "math.erf(a)" in g.source and "math.gamma(a)" in g.source


def math_more(x, y):
    return (math.atan2(x, y) * math.hypot(x, y) + math.asinh(x) * math.acosh(y)
            + math.atanh(x / 2) + math.log2(y) * math.log10(y + 1))


def test_more_math_functions_of_two_floats():
    """math's functions that have rows: atan2 and hypot take two floats; the derived code stays
    in math (math.hypot, math.sqrt) and returns Python floats."""
    g = ad.grad(math_more, wrt=(0, 1))
    for x, y in ((0.7, 1.3), (-0.4, 2.5)):
        got = g(x, y)
        assert all(type(v) is float for v in got)
        want = ((math_more(x + 1e-6, y) - math_more(x - 1e-6, y)) / 2e-6,
                (math_more(x, y + 1e-6) - math_more(x, y - 1e-6)) / 2e-6)
        assert got == pytest.approx(want, rel=1e-7)
    assert "math.hypot(x, y)" in g.source and "math.atan2(x, y)" in g.source


def math_floor(x):
    return math.floor(x) * x


def math_factorial(x):
    return math.factorial(3) * math.lgamma(x) + math.fsum([x, x])


def test_other_math_functions_say_which_compile():
    """Before: "calling `math.erf` is not supported" with the hint "call ... math functions"."""
    with pytest.raises(ad.CompileError, match=r"`math.floor` is not one of the math functions "
                       r"that compile \(math.acos, .*math.erf, .*\)") as info:
        ad.grad(math_floor)(0.5)
    assert "hint: use np.floor, which compiles (on Python floats too)" in str(info.value)
    with pytest.raises(ad.CompileError, match=r"(?s)`math.fsum` is not one of.*hint: compute it "
                       r"before the call and pass the result in"):
        ad.grad(math_factorial)(0.5)


def math_of_constants(x):
    return math.factorial(3) * x + math.floor(2.5) * math.comb(4, 2)


def test_math_functions_of_constants_run_while_compiling():
    assert ad.grad(math_of_constants)(0.5) == 6.0


def math_of_array(x):
    return np.sum(math.erf(x))


def test_math_erf_of_an_array_says_to_use_scipy_special():
    with pytest.raises(ad.CompileError, match=r"(?s)takes a Python number.*use "
                       r"scipy.special.erf, which works elementwise") as info:
        ad.grad(math_of_array)(np.ones(3))
    assert "is not supported" not in str(info.value)


# ---- what is refused: located at the user's line ------------------------------------------------
def unsupported_ufunc(x):
    return np.sum(sp.entr(x))


def unsupported_function(x):
    return np.sum(sp.comb(x, 2.0))


@pytest.mark.parametrize("f, name", [(unsupported_ufunc, "sp.entr"),
                                     (unsupported_function, "sp.comb")])
def test_other_scipy_functions_are_refused_at_the_users_line(f, name):
    with pytest.raises(ad.CompileError) as info:
        ad.grad(f)(POSITIVE)
    message = str(info.value)
    assert f"`{name}` has no derivative rule in adcompiler" in message
    assert message.startswith(__file__) and "site-packages" not in message


def lse_of_list(x):
    return logsumexp(x, axis=0.5)


def test_logsumexp_is_a_library_call_not_scipys_source():
    """Before: an error located in SciPy's _array_api_override.py (its source was inlined)."""
    with pytest.raises(ad.CompileError) as info:
        ad.grad(lse_of_list)(X)
    assert info.value.args and "site-packages" not in str(info.value)
    assert str(info.value).startswith(__file__)


# ---- SciPy stays optional ----------------------------------------------------------------------
def plain_tanh(x):
    return np.sum(np.tanh(x))


def test_generated_code_imports_scipy_only_where_it_calls_it():
    g, h = ad.grad(f_gammaln), ad.grad(plain_tanh)
    g(POSITIVE), h(POSITIVE)
    assert g.source.startswith("import scipy.special\n")
    assert "scipy" not in h.source


RUN = textwrap.dedent("""
    import sys
    {prelude}
    import math
    import numpy as np
    import adcompiler as ad
    assert "scipy" not in sys.modules or sys.modules["scipy"] is None, "imported scipy"

    def lg(x):
        return math.lgamma(x) * 2.0

    def gam(x):
        return math.gamma(x) + 1.0

    def e(x):
        return math.erf(x) * 2.0

    def t(x):
        return np.sum(np.tanh(x))

    print(ad.grad(t)(np.ones(2)).tolist())
    print(repr(ad.grad(e)(0.5)))
    for f, a in ((lg, 0.5), (gam, 1.5)):
        try:
            ad.grad(f)(a)
        except ad.CompileError as exc:
            print(str(exc).replace(__file__, "FILE"))
    assert "scipy" not in sys.modules or sys.modules["scipy"] is None, "imported scipy"
""")


def _run(tmp_path, prelude):
    script = tmp_path / "user_code.py"
    script.write_text(RUN.format(prelude=prelude))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_where_scipy_is_missing_a_located_error_says_to_install_it(tmp_path):
    out = _run(tmp_path, 'sys.modules["scipy"] = None   # SciPy missing')
    lines = out.splitlines()
    assert lines[0] == str([1 - math.tanh(1.0) ** 2] * 2)
    assert float(lines[1]) == pytest.approx(4 / math.sqrt(math.pi) * math.exp(-0.25))
    assert "FILE:10:12: error: `math.lgamma()` needs SciPy for its derivative, " \
           "scipy.special.digamma, and SciPy is not installed" in out
    assert "FILE:13:12: error: `math.gamma()` needs SciPy for its derivative" in out
    assert out.count("hint: install it (pip install scipy)") == 2


def test_import_adcompiler_does_not_import_scipy(tmp_path):
    script = tmp_path / "check.py"
    script.write_text("import sys, numpy as np, adcompiler as ad\n"
                      "from adcompiler import tape\n"
                      "def t(x):\n    return np.sum(np.tanh(x))\n"
                      "ad.grad(t)(np.ones(2))\n"
                      "print('scipy' in sys.modules)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.stdout.strip() == "False", done.stderr


STANDALONE = '''
import math
import numpy as np
import scipy.special as sp
from scipy.special import logsumexp
import adcompiler as ad


@ad.grad
def loss(x):
    return np.sum(sp.gammaln(x) + sp.log_expit(x)) + logsumexp(x)


@ad.grad
def plain(x):
    return np.sum(np.tanh(x))


@ad.grad
def scalar(a):
    return math.erf(a) * math.lgamma(a)


def example_loss():
    return (np.linspace(0.5, 2.0, 5),)


def example_plain():
    return (np.linspace(0.5, 2.0, 5),)


def example_scalar():
    return (0.7,)
'''

PLAIN_ONLY = '''
import numpy as np
import adcompiler as ad


@ad.grad
def plain(x):
    return np.sum(np.tanh(x))


def example_plain():
    return (np.linspace(0.5, 2.0, 5),)
'''


def test_standalone_modules_import_scipy_where_their_code_calls_it(tmp_path):
    from tests.cli.test_cli import adcompiler, run_isolated, write
    path = write(tmp_path, "lik.py", STANDALONE)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "lik_grad.py").read_text()
    header = text[:text.index("\n\n\n", text.index('"""', 3))]
    assert "import scipy.special" in header and "Needs NumPy and SciPy." in text
    got = run_isolated("""
        import json
        import numpy as np
        import lik_grad
        x = np.linspace(0.3, 2.5, 8)
        print(json.dumps([lik_grad.grad_loss(x).tolist(), lik_grad.grad_scalar(1.3)]))
    """, tmp_path)
    import json
    loss, scalar = json.loads(got)
    user = types.SimpleNamespace()
    exec(compile(STANDALONE.replace("@ad.grad\n", ""), str(path), "exec"),  # noqa: S102
         user.__dict__)
    x = np.linspace(0.3, 2.5, 8)
    np.testing.assert_allclose(loss, central_differences(user.loss, x), rtol=1e-6)
    assert scalar == pytest.approx((user.scalar(1.3 + 1e-6) - user.scalar(1.3 - 1e-6)) / 2e-6,
                                   rel=1e-7)
    plain = write(tmp_path, "plain.py", PLAIN_ONLY)
    assert adcompiler("compile", plain).returncode == 0
    assert "scipy" not in (tmp_path / "plain_grad.py").read_text()


def second_order(x):
    return np.sum(sp.gammaln(x) * sp.erf(x) + sp.i1e(x) + sp.expit(x) * sp.digamma(x))


def test_the_tapes_second_derivatives_equal_the_compilers():
    """create_graph=True records the rules' own special functions (digamma's polygamma...)."""
    x = np.array([0.5, 1.2, 2.0, 3.5])
    t = tape.tensor(x, requires_grad=True)
    (g,) = tape.grad(second_order(t), [t], create_graph=True)
    rows = [tape.grad(g[i], [t], retain_graph=True)[0]._data for i in range(x.size)]
    np.testing.assert_allclose(np.array(rows), ad.hessian(second_order)(x), rtol=1e-12,
                               atol=1e-14)


def test_the_tape_records_scipys_ufuncs_as_pytorch_names_them():
    t = tape.tensor(SIGNED, requires_grad=True)
    assert type(sp.erf(t).grad_fn).__name__ == "ErfBackward0"
    assert type(sp.expit(t).grad_fn).__name__ == "SigmoidBackward0"
    assert type(sp.psi(tape.tensor(POSITIVE, requires_grad=True)).grad_fn).__name__ == \
        "DigammaBackward0"


def test_scipys_python_functions_raise_on_the_tape_rather_than_drop_the_gradient():
    t = tape.tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match="gradient would be dropped"):
        logsumexp(t)
