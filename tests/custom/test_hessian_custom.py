"""Hessians through ``@ad.custom_vjp`` functions: forward over reverse cannot enter the ``fwd``
and ``bwd`` calls the gradient graph makes (it gave them zero tangents, so the Hessian was all
zeros); it refuses them now, and ``hessian``/``.hvp`` take the jvp of the gradient's generated
source instead, checked here against the analytic Hessian of logsumexp, diag(p) - p p^T."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.api.gradients import TangentFunction
from adcompiler.transforms.forward import ForwardModeError
from tests.custom.test_custom import cumsum  # a black-box call, with its rule


@ad.custom_vjp
def lse(x):
    return np.log(np.sum(np.exp(x)))


def lse_fwd(x):
    e = np.exp(x - np.max(x))
    return np.max(x) + np.log(np.sum(e)), e / np.sum(e)


def lse_bwd(sm, g):
    return (g * sm,)


lse.defvjp(lse_fwd, lse_bwd)


def use_lse(x):
    return lse(x)


def scaled(x, w):
    return lse(x * w) + np.sum(w * w * x)




def use_cumsum(x):
    return np.sum(cumsum(x) ** 2)


@ad.custom_vjp
def i0_box(x):
    return np.i0(x)


def i0_box_fwd(x):
    return np.i0(x), x


def i0_box_bwd(x, g):
    return (g * (np.i0(x + 1e-6) - np.i0(x - 1e-6)) / 2e-6,)   # np.i0: no rule of its own


i0_box.defvjp(i0_box_fwd, i0_box_bwd)


def use_i0_box(x):
    return np.sum(i0_box(x) ** 2)


def constant_lse(x, c):
    return lse(c) * np.sum(x * x)


X = np.array([0.1, 0.5, -0.3])
W = np.array([1.0, 2.0, 0.5])


def softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def lse_hessian(z):
    p = softmax(z)
    return np.diag(p) - np.outer(p, p)


def test_the_hessian_of_logsumexp_is_the_softmax_jacobian():
    h = ad.hessian(use_lse)(X)
    np.testing.assert_allclose(h, lse_hessian(X), rtol=1e-12, atol=1e-15)
    assert np.abs(h).max() > 0.1


def test_hvp_through_a_custom_vjp():
    hvp = ad.hessian(use_lse).hvp
    v = np.array([1.0, -2.0, 0.5])
    grad, hv = hvp(X, tangents=v)
    np.testing.assert_allclose(grad, softmax(X), rtol=1e-12)
    np.testing.assert_allclose(hv, lse_hessian(X) @ v, rtol=1e-12, atol=1e-15)
    assert "lse_res_dot" in hvp.source        # the jvp of the gradient's source, fwd read in


def test_blocks_of_two_parameters_and_their_hvp():
    S = lse_hessian(X * W)
    p = softmax(X * W)
    want = ((np.diag(W) @ S @ np.diag(W), np.diag(p + 2 * W) + np.diag(W) @ S @ np.diag(X)),
            (None, np.diag(X) @ S @ np.diag(X) + np.diag(2 * X)))
    h = ad.hessian(scaled, wrt=("x", "w"))(X, W)
    np.testing.assert_allclose(h[0][0], want[0][0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h[0][1], want[0][1], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h[1][0], want[0][1].T, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h[1][1], want[1][1], rtol=1e-12, atol=1e-15)
    vx, vw = np.array([0.3, 0.0, -1.0]), np.array([1.0, 2.0, 0.0])
    (gx, gw), (hx, hw) = ad.hessian(scaled, wrt=("x", "w")).hvp(X, W, tangents=(vx, vw))
    np.testing.assert_allclose(gx, W * p + W * W, rtol=1e-12)
    np.testing.assert_allclose(gw, X * p + 2 * W * X, rtol=1e-12)
    np.testing.assert_allclose(hx, want[0][0] @ vx + want[0][1] @ vw, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(hw, want[0][1].T @ vx + want[1][1] @ vw, rtol=1e-12, atol=1e-15)


def test_forward_over_reverse_refuses_the_rule_calls_instead_of_zeros():
    with pytest.raises(ForwardModeError, match=r"cannot go through `lse_fwd` \(called by the "
                                               r"gradient of a custom_vjp function\)"):
        TangentFunction(use_lse, None, "hvp")(X, tangents=X)
    with pytest.raises(ad.CompileError, match="forward mode cannot go through `lse`: a "
                                              "custom_vjp function has a reverse-mode rule only"):
        ad.jvp(use_lse)(X, tangents=X)


def test_a_black_box_rule_is_a_located_error_not_zeros():
    with pytest.raises(ad.CompileError, match="np.i0` has no derivative rule") as info:
        ad.hessian(use_i0_box)(X)
    assert info.value.filename == __file__   # where i0_box_bwd calls np.i0


def test_a_rule_that_calls_a_supported_function_is_differentiated_again():
    """cumsum_bwd calls np.cumsum, which has a rule: the Hessian of sum(cumsum(x)**2) is
    2 L^T L, L the lower triangle of ones."""
    lower = np.tril(np.ones((3, 3)))
    np.testing.assert_allclose(ad.hessian(use_cumsum)(X), 2 * lower.T @ lower, rtol=1e-12)


def test_a_custom_call_on_a_constant_keeps_forward_over_reverse():
    h = ad.hessian(constant_lse, wrt="x")
    np.testing.assert_allclose(h(X, W), 2 * np.log(np.sum(np.exp(W))) * np.eye(3), rtol=1e-12)
    assert h.hvp.parts is None and h.source.startswith("def hvp_constant_lse(")
