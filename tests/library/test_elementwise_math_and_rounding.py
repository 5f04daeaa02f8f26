"""The elementwise primitives ``hypot arctan2 arcsinh arccosh arctanh cbrt log2 log10 exp2`` and
the rounding ones ``floor ceil rint trunc`` (no gradient), with ``np.round``/``np.around``/
``.round()`` spelled in ``rint``: gradients against central finite differences and PyTorch,
values against plain NumPy (bit for bit and dtype, float32 too), the conventions at the kinks,
and every engine that computes them: the tape, forward mode, CuPy's fused kernels (printed C,
run with NumPy) and numba loops."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from adcompiler.backends.cuda_kernels import c_code, evaluate, lower_block

from tests.cupy_helpers import SPECIAL, compile_both, emulate, one_node_block
from tests.helpers import assert_matches_numerical

rng = np.random.default_rng(17)


def uniform(lo, hi, *shape):
    return rng.uniform(lo, hi, shape)


# ---- functions compiled below ---------------------------------------------------------------
def distance(x, y):
    return np.hypot(x, y)


def angle(y, x):
    return np.arctan2(y, x)


def inverse_hyperbolic(x):
    return np.arcsinh(x) * 2.0 + np.arccosh(1.5 + x * x) - np.arctanh(0.5 * np.tanh(x))


def roots_and_bases(x):
    return np.cbrt(x) + np.log2(1.0 + x * x) * 3.0 - np.log10(2.0 + x) + np.exp2(x)


def rounding(x, y):
    return np.floor(x) * y + np.ceil(y) * x + np.rint(x * 3.0) + np.trunc(y) * x \
        + np.round(x, 2) * y + np.around(y, -1) + x.round() * 2.0


def mixed(x, s):
    return np.hypot(x, s) * np.arctan2(s, x[:, None]) + np.cbrt(s * x)


def on_floats(a, b):
    return np.hypot(a, b) + np.arctan2(a, b) + np.arcsinh(a) + np.cbrt(b) + np.log2(b) \
        + np.exp2(a) + np.floor(a)


CASES = [
    (distance, lambda: (uniform(-2, 2, 3, 4), uniform(-2, 2, 4))),
    (angle, lambda: (uniform(0.2, 2, 5) * rng.choice([-1, 1], 5), uniform(-2, 2, 5))),
    (inverse_hyperbolic, lambda: (uniform(-2, 2, 6),)),
    (roots_and_bases, lambda: (uniform(0.2, 1.8, 6) * rng.choice([-1, 1], 6),)),
    (rounding, lambda: (uniform(-3, 3, 6) + 0.013, uniform(-3, 3, 6) + 0.017)),
    (mixed, lambda: (uniform(0.5, 2, 3), uniform(-2, 2, 4, 1, 1).reshape(4, 1, 1)[0, 0])),
]
IDS = [f.__name__ for f, _ in CASES]


def check_vjp(f, args):
    wrt = tuple(range(len(args)))
    c = np.random.default_rng(3).standard_normal(np.shape(f(*args)))
    grads = ad.vjp(f, wrt=wrt)(*args, cotangent=c)
    assert_matches_numerical(lambda *a: np.sum(c * f(*a)), args, wrt, grads, rtol=1e-6,
                             atol=1e-6)
    return grads


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_gradient_matches_finite_differences(f, make):
    check_vjp(f, make())


def test_python_floats_get_python_float_gradients():
    grads = ad.grad(on_floats, wrt=(0, 1))(0.3, 1.7)
    assert all(type(g) is float for g in grads)
    assert_matches_numerical(on_floats, (0.3, 1.7), (0, 1), grads)
    value, _ = ad.value_and_grad(on_floats)(0.3, 1.7)
    assert value == on_floats(0.3, 1.7)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_values_and_tangents(f, make, dtype):
    """Values bit for bit as NumPy's, in the inputs' dtype; tangents agree with the vjp."""
    args = tuple(a.astype(dtype) for a in make())
    tangents = tuple(np.ones_like(a) for a in args)
    value, tangent = ad.jvp(f, wrt=tuple(range(len(args))))(*args, tangents=tangents)
    expected = f(*args)
    assert value.dtype == expected.dtype == tangent.dtype == dtype
    np.testing.assert_array_equal(value, expected)
    if dtype is np.float64:
        c = np.random.default_rng(5).standard_normal(np.shape(expected))
        grads = ad.vjp(f, wrt=tuple(range(len(args))))(*args, cotangent=c)
        assert np.sum(c * tangent) == pytest.approx(sum(np.sum(g) for g in grads), rel=1e-12)


# ---- conventions at the kinks -------------------------------------------------------------
def hypot_sum(x, y):
    return np.sum(np.hypot(x, y))


def arctan2_sum(y, x):
    return np.sum(np.arctan2(y, x))


def cbrt_sum(x):
    return np.sum(np.cbrt(x))


def test_at_the_origin_hypot_and_arctan2_have_gradient_zero():
    """hypot(x, 0) is |x|, whose rule gives 0 at 0: hypot gives 0 at the origin (PyTorch NaN,
    though its linalg.norm gives 0). arctan2 has no limit there: 0, as PyTorch."""
    zero = np.zeros(2)
    for f in (hypot_sum, arctan2_sum):
        grads = ad.grad(f, wrt=(0, 1))(zero, zero)
        np.testing.assert_array_equal(grads, np.zeros((2, 2)))
    torch = pytest.importorskip("torch")
    a, b = (torch.zeros(2, dtype=torch.float64, requires_grad=True) for _ in range(2))
    torch.atan2(a, b).sum().backward()
    np.testing.assert_array_equal([a.grad.numpy(), b.grad.numpy()], np.zeros((2, 2)))


def test_cbrt_at_zero_is_infinite_as_pytorch_and_jax():
    with np.errstate(divide="ignore"):
        (g,) = ad.grad(cbrt_sum, wrt=(0,))(np.array([0.0, 8.0]))
    assert g[0] == np.inf and g[1] == pytest.approx(1.0 / 12.0)


def test_rounding_has_gradient_zero_as_pytorch():
    x, y = np.array([0.5, 1.5, 2.5, -0.5]), np.array([1.25, -2.75, 0.1, 3.0])
    gx, gy = ad.grad(lambda_rounding_loss, wrt=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, np.zeros(4))
    np.testing.assert_array_equal(gy, np.zeros(4))


def lambda_rounding_loss(x, y):
    return np.sum(np.floor(x) + np.ceil(y) + np.rint(x) + np.trunc(y) + np.round(x, 1)
                  + np.around(y, -1))


def round_ints(k, x):
    return np.round(k) + np.round(k, 2), np.round(x, 1)


def round_ints_loss(k, x):
    a, b = round_ints(k, x)
    return np.sum(a * b)


def test_round_of_integers_returns_integers_as_numpy():
    k = np.array([1, 5, -7])
    a, b = round_ints(k, 0.26)
    assert a.dtype == np.int64 and type(b) is np.float64
    value, grad = ad.value_and_grad(round_ints_loss, wrt="x")(k, 0.26)
    assert value == round_ints_loss(k, 0.26) and grad == 0.0


# ---- against PyTorch ------------------------------------------------------------------------
def _torch_reference(torch, f):
    return {
        distance: lambda x, y: torch.hypot(x, y),
        angle: lambda y, x: torch.atan2(y, x),
        inverse_hyperbolic: lambda x: (torch.asinh(x) * 2 + torch.acosh(1.5 + x * x)
                                       - torch.atanh(0.5 * torch.tanh(x))),
        roots_and_bases: lambda x: (torch.sign(x) * torch.abs(x) ** (1 / 3)
                                    + torch.log2(1 + x * x) * 3 - torch.log10(2 + x)
                                    + torch.exp2(x)),
        rounding: lambda x, y: (torch.floor(x) * y + torch.ceil(y) * x + torch.round(x * 3)
                                + torch.trunc(y) * x + torch.round(x, decimals=2) * y
                                + torch.round(y, decimals=-1) + torch.round(x) * 2),
        mixed: lambda x, s: (torch.hypot(x, s) * torch.atan2(s, x[:, None])
                             + torch.sign(s * x) * torch.abs(s * x) ** (1 / 3)),
    }[f]


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_gradients_match_pytorch(f, make):
    torch = pytest.importorskip("torch")
    reference = _torch_reference(torch, f)
    args = make()
    c = np.random.default_rng(9).standard_normal(np.shape(f(*args)))
    ours = ad.vjp(f, wrt=tuple(range(len(args))))(*args, cotangent=c)
    ts = [torch.tensor(a, requires_grad=True) for a in args]
    out = reference(*ts)
    np.testing.assert_allclose(out.detach().numpy(), f(*args), rtol=1e-13, atol=1e-15)
    (out * torch.tensor(c)).sum().backward()
    for g, t in zip(ours, ts):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-11, atol=1e-13)


# ---- the tape -------------------------------------------------------------------------------
@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_the_tape_gives_the_compiled_gradient(f, make):
    args = make()
    c = np.random.default_rng(4).standard_normal(np.shape(f(*args)))
    ours = ad.vjp(f, wrt=tuple(range(len(args))))(*args, cotangent=c)
    ts = [tape.tensor(a, requires_grad=True) for a in args]
    out = f(*ts)
    np.testing.assert_array_equal(out.detach().numpy(), f(*args))
    (out * c).sum().backward()
    for g, t in zip(ours, ts):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12, atol=1e-14)


# ---- CuPy's fused kernels (C printed from the same tree, run here with NumPy) ----------------
NEW_UNARY = ["arcsinh", "arccosh", "arctanh", "cbrt", "log2", "log10", "exp2", "floor", "ceil",
             "rint", "trunc"]
NEW_BINARY = ["hypot", "arctan2"]
C_NAMES = {"arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2"}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_each_kernel_expression_computes_what_numpy_computes(dtype):
    a, b = (v.ravel().astype(dtype) for v in np.meshgrid(SPECIAL, SPECIAL))
    with np.errstate(all="ignore"):
        for prim, inputs in [*((p, (a,)) for p in NEW_UNARY),
                             *((p, (a, b)) for p in NEW_BINARY), ("hypot", (a, 2.0))]:
            want = getattr(np, prim)(*inputs)
            root = lower_block(one_node_block(prim, inputs, want.dtype.name))
            assert f"{C_NAMES.get(prim, prim)}(" in c_code(root)
            got = evaluate(root, [x for x in inputs if isinstance(x, np.ndarray)])
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=prim)


def chain_loss(x, y):
    return np.sum(np.hypot(x, y) * np.arctan2(y, x) + np.arcsinh(x) * np.cbrt(y)
                  + np.log2(x) * np.log10(x + 1.0) + np.exp2(y) * np.floor(y)
                  + np.arccosh(x + 1.0) + np.arctanh(0.5 * np.tanh(y)) + np.rint(x) * y)


def test_cupy_code_computes_the_numpy_gradient():
    x, y = uniform(0.5, 2, 4096), uniform(-2, 2, 4096)
    cupy_code, plain = compile_both(chain_loss, (x, y), wrt=(0, 1))
    code = [ln for ln in cupy_code.source.splitlines() if not ln.strip().startswith("#")]
    assert cupy_code.kernels and not any("np." in ln for ln in code)
    body = " ".join(k.operation for k in cupy_code.kernels)
    assert all(f"{name}(" in body for name in ("hypot", "asinh", "exp2", "floor", "rint", "log2"))
    with np.errstate(all="ignore"):
        got, want = emulate(cupy_code)(x, y), plain.function(x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13)


# ---- numba loops ------------------------------------------------------------------------------
def numba_loss(x, y):
    return np.sum(np.hypot(x, y) + np.arctan2(y, x) * np.arcsinh(x) + np.cbrt(x) * np.exp2(y)
                  + np.log2(1.0 + y * y) + np.log10(2.0 + x) + np.floor(x) * y
                  + np.arctanh(0.5 * np.tanh(y)) + np.arccosh(2.0 + x * x))


def test_numba_loops_compute_the_numpy_gradient(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    x, y = uniform(0.2, 2, 2000), uniform(-2, 2, 2000)
    g = ad.grad(numba_loss, wrt=(0, 1), backend="numba")
    got, want = g(x, y), ad.grad(numba_loss, wrt=(0, 1))(x, y)
    assert "@numba.njit" in g.source and "math.asinh" in g.source
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


# ---- the symbolic gradient (SymPy, from the compiled graph) -------------------------------
def sym_hypot(x, y):
    return np.hypot(x, y) * y


def sym_arctan2(x, y):
    return np.arctan2(y, x) * x


def sym_inverse_hyperbolic(x, y):
    return np.arcsinh(x * y) + np.arccosh(1.0 + x * y) + np.arctanh(0.5 * x * y)


def sym_bases(x, y):
    return np.log2(x * y) * x + np.log10(x + y) * y + np.exp2(x * y)


def sym_cbrt(x, y):
    return np.cbrt(x * y)


def sym_floor(x, y):
    return np.floor(x) * y


@pytest.mark.parametrize("f", [sym_hypot, sym_arctan2, sym_inverse_hyperbolic, sym_bases,
                               sym_cbrt, sym_floor])
def test_symbolic_gradient_evaluates_to_the_compiled_one(f):
    pytest.importorskip("sympy")
    gradient = ad.symbolic(f, wrt=(0, 1)).lambdify()(0.7, 1.3)
    np.testing.assert_allclose(np.asarray(gradient, float),
                               ad.grad(f, wrt=(0, 1))(0.7, 1.3), rtol=1e-12)
