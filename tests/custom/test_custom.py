"""Custom rules: ``@adcompiler.custom_vjp`` (a stable logsumexp, a clipped gradient, a black-box
call) in the compiler and on the dynamic tape, and ``adcompiler.stop_gradient``."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from adcompiler.tape import dynamic_grad


# ---- a stable logsumexp --------------------------------------------------------------------------
@ad.custom_vjp
def logsumexp(x):
    return np.log(np.sum(np.exp(x)))


def logsumexp_fwd(x):
    m = np.max(x)
    e = np.exp(x - m)
    s = np.sum(e)
    return m + np.log(s), e / s


def logsumexp_bwd(softmax, g):
    return (g * softmax,)


logsumexp.defvjp(logsumexp_fwd, logsumexp_bwd)


# ---- a clipped gradient: identity forward, the cotangent clipped to [-bound, bound] -------------
@ad.custom_vjp
def clip_gradient(x, bound):
    return x


def clip_gradient_fwd(x, bound):
    return x, bound


def clip_gradient_bwd(bound, g):
    return np.clip(g, -bound, bound), 0.0


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


# ---- a call given its own rule: np.cumsum (which the compiler now knows too) --------------------
@ad.custom_vjp
def cumsum(x):
    return np.cumsum(x)


def cumsum_fwd(x):
    return np.cumsum(x), None


def cumsum_bwd(res, g):
    return (np.cumsum(g[::-1])[::-1],)


cumsum.defvjp(cumsum_fwd, cumsum_bwd)


# ---- functions using them ------------------------------------------------------------------------
def classifier(x, w):
    z = x @ w
    lse = logsumexp(z)
    return lse - z[0]


def clipped(x):
    y = clip_gradient(x * 3.0, 1.0)
    return (y * y).sum()


def running(x, w):
    return (cumsum(np.tanh(x)) * w).sum()


def in_a_loop(x):
    h = x
    for i in range(3):
        h = h * 0.5 + logsumexp(h)
    return h.sum()


def stopped(x, y):
    z = ad.stop_gradient(x * y)
    return (z * x).sum() + ad.stop_gradient(3.0) * y.sum()


def naive_cumsum(x):
    return np.cumsum(x).sum()


def numerical(f, args, i, eps=1e-6):
    x = np.asarray(args[i], dtype=np.float64)
    out = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[j] += eps
        down[j] -= eps
        moved = [list(args), list(args)]
        moved[0][i], moved[1][i] = up, down
        out[j] = (f(*moved[0]) - f(*moved[1])) / (2 * eps)
    return out


RNG = np.random.default_rng(7)
X, W = RNG.standard_normal((3, 4)), RNG.standard_normal(4)


def test_logsumexp_compiled_tape_and_finite_differences_agree():
    compiled = ad.grad(classifier, wrt=(0, 1))(X, W)
    taped = dynamic_grad(classifier, wrt=(0, 1))(X, W)
    for i, (c, t) in enumerate(zip(compiled, taped)):
        np.testing.assert_allclose(c, t, rtol=1e-13)
        np.testing.assert_allclose(c, numerical(classifier, (X, W), i), rtol=1e-6, atol=1e-8)


def test_logsumexp_generated_code_calls_the_users_functions_by_name():
    g = ad.grad(classifier, wrt="w")
    src = g.specialize(X, W).source
    assert "logsumexp_res = logsumexp_fwd(z)[1]" in src
    assert "logsumexp_bwd(logsumexp_res, " in src
    assert "    lse = logsumexp(z)" not in src      # grad alone never runs the plain function
    vg = ad.value_and_grad(classifier, wrt="w")
    assert "    lse = logsumexp(z)" in vg.specialize(X, W).source
    assert vg(X, W)[0] == pytest.approx(classifier(X, W))


def test_the_stable_rule_is_stable_where_the_plain_function_overflows(monkeypatch):
    # BUG (runtime/cache.py, key_for): fingerprinting a callable without __code__ (grad of a
    # custom_vjp object) raises AttributeError instead of giving up on caching.
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    big = np.array([1000.0, 1000.5, 999.0])
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.isfinite(ad.grad(lambda_free_logsumexp)(big)).all()
    g = ad.grad(logsumexp)(big)
    e = np.exp(big - big.max())
    np.testing.assert_allclose(g, e / e.sum(), rtol=1e-14)
    np.testing.assert_allclose(dynamic_grad(logsumexp)(big), g, rtol=1e-14)


def lambda_free_logsumexp(x):  # the same formula without the rule
    return np.log(np.sum(np.exp(x)))


def test_a_clipped_gradient():
    x = np.array([0.01, 0.5, -2.0])
    want = np.clip(2 * 3.0 * x * 3.0 / 3.0, -1.0, 1.0) * 3.0  # d(y*y)/dy = 2y, clipped, * 3
    np.testing.assert_allclose(ad.grad(clipped)(x), want)
    np.testing.assert_allclose(dynamic_grad(clipped)(x), want)
    assert not np.allclose(want, numerical(clipped, (x,), 0))   # on purpose: not the derivative


def test_a_black_box_call():
    np.testing.assert_allclose(ad.grad(naive_cumsum)(np.ones(3)), [3.0, 2.0, 1.0])  # np's rule
    x, w = RNG.standard_normal(5), RNG.standard_normal(5)
    for i in (0, 1):
        want = numerical(running, (x, w), i)
        np.testing.assert_allclose(ad.grad(running, wrt=i)(x, w), want, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(dynamic_grad(running, wrt=i)(x, w), want, rtol=1e-6,
                                   atol=1e-8)


def test_a_custom_call_inside_a_loop():
    x = RNG.standard_normal(3)
    np.testing.assert_allclose(ad.grad(in_a_loop)(x), numerical(in_a_loop, (x,), 0), rtol=1e-6)
    np.testing.assert_allclose(dynamic_grad(in_a_loop)(x), ad.grad(in_a_loop)(x), rtol=1e-12)


def test_on_the_tape_the_backward_is_the_users():
    t = tape.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    y = logsumexp(t)
    assert type(y.grad_fn).__name__ == "LogsumexpBackward"
    y.backward()
    e = np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(t.grad.numpy(), e / e.sum())


def test_plain_calls_run_the_plain_function():
    assert logsumexp(np.zeros(2)) == pytest.approx(np.log(2.0))
    assert repr(logsumexp) == "<custom_vjp logsumexp>"
    assert logsumexp.__name__ == "logsumexp" and logsumexp.__doc__ is None


def test_stop_gradient():
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    gx, gy = ad.grad(stopped, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(gx, x * y)          # only the direct use of x
    np.testing.assert_allclose(gy, np.zeros(2) + 3.0)
    tx, ty = dynamic_grad(stopped, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(tx, gx)
    np.testing.assert_allclose(ty, gy)
    g = ad.value_and_grad(stopped)
    assert g(x, y)[0] == pytest.approx(stopped(x, y))
    assert "z = stop_gradient(x * y)" in g.source
    assert ad.stop_gradient(x) is x


def test_forward_mode_through_a_custom_vjp_is_refused():
    with pytest.raises(ad.CompileError, match="custom_vjp function has a reverse-mode rule only"):
        ad.jvp(classifier, wrt="w")(X, W, tangents=W)
    from adcompiler.tape import forward_ad
    with forward_ad.dual_level(), pytest.raises(RuntimeError, match="not supported"):
        logsumexp(forward_ad.make_dual(tape.tensor(W), tape.tensor(W)))


@ad.custom_vjp
def no_rule(x):
    return x


def uses_no_rule(x):
    return no_rule(x).sum()


def test_a_custom_vjp_without_a_rule_is_a_located_error():
    with pytest.raises(ad.CompileError, match=r"no_rule\.defvjp\(fwd, bwd\)"):
        ad.grad(uses_no_rule)(np.ones(2))
    with pytest.raises(TypeError, match="has no rule yet"):
        no_rule(tape.tensor(np.ones(2), requires_grad=True))


@ad.custom_vjp
def bad_arity(x, y):
    return x * y


bad_arity.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g * res[1],))


def test_a_backward_returning_the_wrong_number_of_cotangents_is_reported():
    x = tape.tensor(np.ones(2), requires_grad=True)
    with pytest.raises(TypeError, match="tuple of 2 cotangents"):
        bad_arity(x, np.ones(2)).sum().backward()


def test_reverse_jacobian_and_check_grad_go_through_a_custom_vjp():
    np.testing.assert_allclose(ad.jacobian(classifier, wrt="w", mode="rev")(X, W),
                               ad.grad(classifier, wrt="w")(X, W))
    assert ad.check_grad(classifier, X, W, wrt=(0, 1)).ok
    with pytest.raises(ad.CompileError, match="reverse-mode rule only"):
        ad.jacobian(classifier, wrt="w", mode="fwd")(X, W)


def stopped_result(s):
    return ad.stop_gradient(s * s)


def times_stopped(s):
    return s * ad.stop_gradient(s * s)


def test_a_result_that_is_a_stop_gradient_has_zero_derivatives():
    assert ad.value_and_grad(stopped_result)(0.7) == (pytest.approx(0.49), 0.0)
    assert ad.hessian(stopped_result)(0.7) == 0.0
    assert ad.grad(times_stopped)(0.7) == pytest.approx(0.49)   # s * s, held constant
    assert ad.grad(ad.grad(times_stopped))(0.7) == 0.0          # its gradient is stopped
