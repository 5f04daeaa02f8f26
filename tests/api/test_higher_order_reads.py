"""A transform of a gradient (``grad(grad(f))``, ``jvp(grad(f))``, ``vjp(grad(f))``,
``jacobian(grad(f))``) checks what ``f`` reads before each call, as ``grad(f)`` does: after
``SC = 3.0`` the built grad-of-grad kept 12 for 36, and the Jacobian of the gradient kept the
old ``LAYERS``."""

import numpy as np
import pytest

import adcompiler as ad

SC = 1.0
LAYERS = [np.eye(2)]


def cubic(s):
    return SC * s ** 3


def quadratic(x):
    return np.sum((x @ LAYERS[0]) ** 2)


@pytest.fixture(autouse=True)
def _restore(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    global SC
    saved = list(LAYERS)
    yield
    SC = 1.0
    LAYERS[:] = saved


def test_transforms_of_a_gradient_see_a_rebound_global():
    global SC
    second = ad.grad(ad.grad(cubic))
    back = ad.vjp(ad.grad(cubic))
    forward = ad.jvp(ad.grad(cubic))
    assert second(2.0) == pytest.approx(12.0) and back(2.0, cotangent=1.0) == pytest.approx(12.0)
    SC = 3.0
    assert second(2.0) == pytest.approx(36.0) and back(2.0, cotangent=1.0) == pytest.approx(36.0)
    assert forward(2.0, tangents=1.0)[1] == pytest.approx(36.0)


def test_the_jacobian_of_a_gradient_sees_a_changed_list():
    x = np.array([1.0, 2.0])
    jac = ad.jacobian(ad.grad(quadratic))
    np.testing.assert_allclose(jac(x), 2.0 * np.eye(2))
    LAYERS[0] = 3.0 * np.eye(2)
    np.testing.assert_allclose(jac(x), 18.0 * np.eye(2))
