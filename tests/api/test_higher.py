"""Higher order: ``jacobian`` (forward, reverse, auto), ``hessian`` (forward over reverse) against
finite differences of gradients, and ``grad(grad(f))`` through the generated source."""

from __future__ import annotations

import math

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from adcompiler.api.higher import FORWARD, REVERSE


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    # BUG (runtime/cache.py, key_for): fingerprinting a primal without __code__ (a
    # GradientFunction, for grad(grad(f))) raises AttributeError instead of not caching.
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")


def columns_of(g, args, i, eps=1e-6):
    """d g(*args) / d args[i] by central differences of a gradient (a tuple of arrays, or one),
    as blocks shaped like ``jacobian``'s: ``g_j.shape + args[i].shape``."""
    x = np.asarray(args[i], dtype=np.float64)
    cols = []
    for k in range(x.size):
        up, down = x.copy(), x.copy()
        up.reshape(-1)[k] += eps
        down.reshape(-1)[k] -= eps
        at = [list(args), list(args)]
        at[0][i] = float(up) if isinstance(args[i], float) else up
        at[1][i] = float(down) if isinstance(args[i], float) else down
        hi, lo = g(*at[0]), g(*at[1])
        hi, lo = (hi, lo) if isinstance(hi, tuple) else ((hi,), (lo,))
        cols.append([(np.asarray(a) - np.asarray(b)) / (2 * eps) for a, b in zip(hi, lo)])
    return [np.stack([c[j] for c in cols], axis=-1).reshape(np.shape(cols[0][j]) + x.shape)
            for j in range(len(cols[0]))]


# ---- Jacobians ---------------------------------------------------------------------------------
def layer(x, w):
    return np.tanh(w @ x)


K = np.arange(3.0)


def expand(a, b):  # 2 inputs, 6 outputs: forward mode's case
    return np.concatenate([np.sin(a * K), np.cos(b * K)])


def reduce_(x):    # 6 inputs, 1 output: reverse mode's case
    return (x ** 3).sum()


RNG = np.random.default_rng(3)
X, W = RNG.standard_normal(3), RNG.standard_normal((5, 3))


@pytest.mark.parametrize("mode", ["fwd", "rev", "auto"])
def test_jacobian_in_every_mode(mode):
    jx, jw = ad.jacobian(layer, wrt=(0, 1), mode=mode)(X, W)
    assert jx.shape == (5, 3) and jw.shape == (5, 5, 3)
    want = columns_of(layer, (X, W), 0)[0], columns_of(layer, (X, W), 1)[0]
    np.testing.assert_allclose(jx, want[0], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jw, want[1], rtol=1e-6, atol=1e-9)


def test_forward_and_reverse_jacobians_agree_exactly_enough():
    fwd = ad.jacobian(layer, wrt="w", mode="fwd")(X, W)
    rev = ad.jacobian(layer, wrt="w", mode="rev")(X, W)
    np.testing.assert_allclose(fwd, rev, rtol=1e-13, atol=1e-15)


def test_auto_mode_follows_the_seed_argument():
    """Forward mode gives a column per pass, reverse mode a row: fewer inputs than outputs
    picks forward mode, otherwise reverse mode."""
    j = ad.jacobian(expand, wrt=(0, 1))
    ja, jb = j(0.3, 0.7)
    assert j.last_mode == FORWARD and ja.shape == (6,) and jb.shape == (6,)
    np.testing.assert_allclose(ja[:3], np.arange(3.0) * np.cos(0.3 * np.arange(3.0)))
    assert "a_dot" in j.source
    j = ad.jacobian(reduce_)
    np.testing.assert_allclose(j(np.arange(6.0)), 3 * np.arange(6.0) ** 2)
    assert j.last_mode == REVERSE and "cotangent" in j.source


def test_jacobian_matches_torch():
    torch = pytest.importorskip("torch")
    tx, tw = torch.tensor(X), torch.tensor(W)
    want = torch.autograd.functional.jacobian(lambda a, b: torch.tanh(b @ a), (tx, tw))
    for got, w in zip(ad.jacobian(layer, wrt=(0, 1))(X, W), want):
        np.testing.assert_allclose(got, w.numpy(), rtol=1e-12, atol=1e-14)


def test_specialize_compiles_without_running():
    j = ad.jacobian(layer, wrt="w")
    assert j.specialize(X, W).source.startswith("def vjp_layer(x, w, cotangent):")
    source = ad.jacobian(expand).specialize(0.3, 0.7).source  # K: a module-level array
    assert source.startswith("# Names this code reads but does not define")
    assert "\n#   K: float64[3] = [0.0, 1.0, 2.0]\n\n\ndef jvp_expand(" in source
    h = ad.hessian(seed_f)
    assert h.specialize(2.0, 5.0).source == h.source and "x1_dot" in h.source


def test_jacobian_rejects_unknown_modes():
    with pytest.raises(ValueError, match="'auto', 'fwd' or 'rev'"):
        ad.jacobian(layer, mode="sideways")


# ---- Hessians ----------------------------------------------------------------------------------
def seed_f(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def seed_graph(w1, w2, w3, inp):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    l4 = l2 * l3
    return l4.mean()


def mlp(W1, b1, W2, x, y):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2
    return ((out - y) ** 2).mean()


def looped(x, w):
    h = x
    for i in range(3):
        h = np.tanh(h * w + x)
    return (h * h).sum()


def whiled(x):
    s = x
    while s.sum() < 10.0:
        s = s * 1.5 + x
    return (s * s).sum()


def branchy(x, y):
    if x.sum() > 0:
        z = np.sin(x) * y
    else:
        z = x * x
    return (z * y).sum()


def nested(x, w):
    h = x
    for i in range(2):
        if h.sum() > 0:
            h = np.tanh(h * w)
        else:
            h = h * w * 0.5
    return (h ** 2).sum()


def test_seed_hessian_exactly():
    """f = ln x1 + x1 x2 - sin x2: H = [[-1/x1^2, 1], [1, sin x2]]."""
    h = ad.hessian(seed_f, wrt=(0, 1))(2.0, 5.0)
    np.testing.assert_allclose(np.array(h, dtype=float), [[-0.25, 1.0], [1.0, math.sin(5.0)]],
                               rtol=1e-15)


def check_hessian(fn, args, wrt):
    """Each block H[i][j] against central differences of the compiled gradient."""
    h = ad.hessian(fn, wrt=wrt)(*args)
    grad = ad.grad(fn, wrt=wrt)
    for j, wj in enumerate(wrt):
        cols = columns_of(grad, args, wj)
        for i in range(len(wrt)):
            assert h[i][j].shape == np.shape(args[wrt[i]]) + np.shape(args[wj])
            np.testing.assert_allclose(h[i][j], cols[i], rtol=1e-5, atol=1e-7)
            n_i, n_j = np.ndim(args[wrt[i]]), np.ndim(args[wj])
            swapped = np.transpose(h[j][i], tuple(range(n_j, n_j + n_i)) + tuple(range(n_j)))
            np.testing.assert_allclose(h[i][j], swapped, rtol=1e-10, atol=1e-12)  # symmetric
    return h


def test_seed_graph_hessian():
    check_hessian(seed_graph, (2.0, 3.0, 4.0, np.ones((2, 2))), (0, 1, 2))


def test_small_mlp_hessian():
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((3, 4)) * 0.5, rng.standard_normal(4) * 0.1,
            rng.standard_normal((4, 2)) * 0.5, rng.standard_normal((5, 3)),
            rng.standard_normal((5, 2)))
    h = check_hessian(mlp, args, (0, 1, 2))
    torch = pytest.importorskip("torch")
    t = [torch.tensor(a) for a in args]

    def tmlp(W1, b1, W2):
        return ((torch.tanh(t[3] @ W1 + b1) @ W2 - t[4]) ** 2).mean()
    want = torch.autograd.functional.hessian(tmlp, tuple(t[:3]))
    for i in range(3):
        for j in range(3):
            np.testing.assert_allclose(h[i][j], want[i][j].numpy(), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("fn, args", [
    (looped, (RNG.standard_normal(3), RNG.standard_normal(3))),
    (whiled, (np.abs(RNG.standard_normal(3)) + 0.5,)),
    (branchy, (np.abs(RNG.standard_normal(3)), RNG.standard_normal(3))),
    (branchy, (-np.abs(RNG.standard_normal(3)), RNG.standard_normal(3))),
    (nested, (RNG.standard_normal(3), RNG.standard_normal(3)))],
    ids=["for", "while", "if", "else", "if in for"])
def test_hessian_through_control_flow(fn, args):
    check_hessian(fn, args, tuple(range(len(args))))


def test_hessian_source_is_forward_over_reverse():
    h = ad.hessian(mlp, wrt="W2")
    rng = np.random.default_rng(1)
    h(rng.standard_normal((3, 4)), np.zeros(4), rng.standard_normal((4, 2)),
      rng.standard_normal((5, 3)), rng.standard_normal((5, 2)))
    src = h.source
    assert src.startswith("def hvp_mlp(W1, b1, W2, x, y, W2_dot):")
    assert "# grad of:" in src and "dW2_dot" in src


# ---- grad of grad: the generated gradient, compiled again ---------------------------------------
def cube_sin(x):
    return math.sin(x) * x * x


def arrays(x, y):
    z = np.tanh(x * y)
    return (z * z).sum() + (x ** 3).sum()


def test_second_and_third_derivatives_through_the_source():
    x = 0.7
    d2 = -x * x * math.sin(x) + 4 * x * math.cos(x) + 2 * math.sin(x)
    d3 = -x * x * math.cos(x) - 6 * x * math.sin(x) + 6 * math.cos(x)
    g2 = ad.grad(ad.grad(cube_sin))
    assert g2(x) == pytest.approx(d2, rel=1e-14)
    g3 = ad.grad(ad.grad(ad.grad(cube_sin)))
    assert g3(x) == pytest.approx(d3, rel=1e-14)
    assert g2.source.startswith("def grad_grad_cube_sin(x):")
    assert g3.source.startswith("def grad_grad_grad_cube_sin(x):")
    assert "# grad of: " in g3.source and "np." not in g3.source  # floats stay in math


def test_mixed_second_derivative_of_array_code():
    def inner_sum(x, y):   # a scalar made of a gradient, differentiated again: not supported
        return ad.grad(arrays)(x, y).sum()
    x, y = RNG.standard_normal(3), RNG.standard_normal(3)
    # d/dy (d/dx) through the Hessian instead, for arrays:
    h = ad.hessian(arrays, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(h[0][1], columns_of(ad.grad(arrays, wrt=0), (x, y), 1)[0],
                               rtol=1e-6, atol=1e-8)
    with pytest.raises(ad.CompileError):
        ad.grad(inner_sum)(x, y)


def test_grad_of_a_non_grad_transform_is_refused():
    with pytest.raises(ad.CompileError, match="only grad"):
        ad.grad(ad.value_and_grad(cube_sin))(0.5)


def with_if(x):
    if x > 0.5:
        y = x ** 3
    else:
        y = math.cos(x) * x
    return y


def with_for(x):
    s = x
    for i in range(3):
        s = math.sin(s) * x
    return s


def with_while(x):
    s = x
    while s < 10.0:
        s = s * 1.7 + x
    return s * s


@pytest.mark.parametrize("fn, x", [(with_if, 0.7), (with_if, 0.3), (with_for, 0.6),
                                   (with_while, 0.8)])
def test_grad_of_grad_through_control_flow_in_math(fn, x):
    """``math`` on floats (which the tape refuses): against differences of the compiled lower
    derivative only."""
    eps = 1e-5
    g, g2 = ad.grad(fn), ad.grad(ad.grad(fn))
    assert g2(x) == pytest.approx((g(x + eps) - g(x - eps)) / (2 * eps), rel=1e-6)
    g3 = ad.grad(ad.grad(ad.grad(fn)))(x)
    assert g3 == pytest.approx((g2(x + eps) - g2(x - eps)) / (2 * eps), rel=1e-5)


# ---- grad of grad through control flow, against the tape and differences ----------------------
# Each function below takes a float x; NumPy functions, so that the tape runs it too.
def branch(x):
    if x > 0.5:
        y = x ** 3
    else:
        y = np.cos(x) * x
    return y


def counted(x):
    s = x
    for i in range(3):
        s = np.sin(s) * x
    return s


def iterated(x):          # a while loop whose adjoint reads lists of residuals
    s = x
    while s < 10.0:
        s = np.sin(s) * x + s * 1.5 + 1.0
    return s * s


def broken(x):            # break in a for loop
    s = x
    for i in range(6):
        s = s * np.cos(s) + x
        if s > 1.5:
            break
    return s * s


def skipping(x):          # continue
    s = 0.0
    for i in range(4):
        t = np.sin(x * (i + 1.0))
        if t < 0.0:
            continue
        s = s + t * s + x
    return s


def while_broken(x):      # break in a while loop
    s = x
    n = 0
    while n < 20:
        s = np.tanh(s) * x + 0.3
        n = n + 1
        if s > 0.9:
            break
    return s ** 3


def branch_in_loop(x):
    s = x
    for i in range(3):
        if s > 0.8:
            s = np.sin(s) * x
        else:
            s = s * s + x
    return s


def loop_in_branch(x):
    s = x
    if x > 0.2:
        for i in range(3):
            s = np.cos(s) * x
    else:
        while s < 1.0:
            s = s * 1.5 + np.sin(x)
    return s * x


def branch_in_while(x):
    s = x
    while s < 6.0:
        if s > 2.0:
            s = s + np.sqrt(s) * x
        else:
            s = s * (1.0 + x)
    return s


def backwards(x):         # reversed(range(...)) in the user's own code
    s = 0.0
    for i in reversed(range(4)):
        s = s * x + np.sin(x * i)
    return s


SCALAR_CASES = [(branch, 0.7), (branch, 0.3), (counted, 0.6), (iterated, 0.8), (broken, 0.9),
                (broken, 0.2), (skipping, 0.7), (while_broken, 0.6), (while_broken, 0.95),
                (branch_in_loop, 0.7), (branch_in_loop, 0.95), (loop_in_branch, 0.6),
                (loop_in_branch, 0.1), (branch_in_while, 0.8), (backwards, 0.7)]


def compiled(fn, chain):
    """``grad(... grad(fn, wrt=chain[0]) ..., wrt=chain[-1])``: source compiled again per grad."""
    for wrt in chain:
        fn = ad.grad(fn, wrt=wrt)
    return fn


def on_tape(fn, args, chain):
    """The same derivative by double (triple) backward on the tape, ``create_graph=True``."""
    leaves = [tape.tensor(a, requires_grad=True) for a in args]
    out = fn(*leaves)
    for j, wrt in enumerate(chain):
        (out,) = tape.grad(out, [leaves[wrt]], create_graph=j < len(chain) - 1)
    return out.numpy()


def check_higher(fn, args, chain, rtol_fd):
    """The compiled derivative along ``chain`` against central differences of the compiled
    derivative one order lower, and against the tape."""
    got = compiled(fn, chain)(*args)
    lower = compiled(fn, chain[:-1])
    np.testing.assert_allclose(got, columns_of(lower, args, chain[-1], eps=1e-5)[0],
                               rtol=rtol_fd, atol=1e-6)
    np.testing.assert_allclose(got, on_tape(fn, args, chain), rtol=1e-10, atol=1e-12)
    return got


@pytest.mark.parametrize("fn, x", SCALAR_CASES,
                         ids=[f"{f.__name__}-{x}" for f, x in SCALAR_CASES])
def test_second_and_third_derivatives_through_control_flow(fn, x):
    check_higher(fn, (x,), (0, 0), rtol_fd=1e-6)
    check_higher(fn, (x,), (0, 0, 0), rtol_fd=1e-5)


# Arrays (with a sum): d/dx of df/da for a float a, and d/dx d/da d/da.
def arr_branch(a, x):
    if np.sum(x) * a > 0.0:
        z = np.sin(a * x) * x
    else:
        z = a * x * x
    return np.sum(z * z)


def arr_loop(a, x):
    h = x
    for i in range(3):
        h = np.tanh(h * a + x)
    return np.sum(h * h)


def arr_while(a, x):
    h = x
    while np.sum(h * h) < 4.0:
        h = np.tanh(h) * a + h * 1.2 + 0.1
    return np.sum(h ** 3)


def arr_break(a, x):
    h = x
    for i in range(5):
        h = h * np.cos(a * h) + a
        if np.sum(h) > 2.0:
            break
    return np.sum(h * x)


REPEATED = np.array([0, 0, 2])


def arr_scatter(a, x):    # its gradients accumulate with np.add.at, which is read back too
    y = x * 1.0
    y[REPEATED] = np.cos(x * a)
    return np.sum(y * y * a)


ARRAY_CASES = [(arr_branch, 0.7), (arr_branch, -0.7), (arr_loop, 0.8), (arr_while, 0.9),
               (arr_break, 0.6), (arr_break, 0.1), (arr_scatter, 0.7)]


@pytest.mark.parametrize("fn, a", ARRAY_CASES,
                         ids=[f"{f.__name__}-{a}" for f, a in ARRAY_CASES])
def test_mixed_derivatives_of_array_code_through_control_flow(fn, a):
    x = np.array([0.3, -0.4, 0.5])
    d_ax = check_higher(fn, (a, x), (0, 1), rtol_fd=1e-6)
    assert d_ax.shape == (3,)
    check_higher(fn, (a, x), (0, 0), rtol_fd=1e-6)
    check_higher(fn, (a, x), (0, 0, 1), rtol_fd=1e-5)


def test_grad_of_grad_source_reads_back_lists_and_reversed_loops():
    """The first gradient of a while loop keeps residuals in lists and runs its adjoint over
    ``reversed(range(steps))``; the frontend reads that source back, so the second gradient
    differentiates the lists too: one stack per value (the kept ``ss`` is reused, not copied)."""
    g2 = ad.grad(ad.grad(iterated))
    g2(0.8)
    src = g2.source
    assert src.startswith("def grad_grad_iterated(x):")
    assert "ss.append(s)" in src and src.count(".append(s)") == 1
    assert "# grad of: while s < 10.0:" in src and "reversed(range(steps" in src
    assert "np.zeros_like(ss)" in src   # the cotangent of the list: one row per element
