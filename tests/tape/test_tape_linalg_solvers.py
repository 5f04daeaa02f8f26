"""np.linalg.solve, inv, det and slogdet on the dynamic tape: PyTorch's node names, gradients
against finite differences and PyTorch, second order (create_graph), forward mode, float32, and
NumPy's errors."""

import numpy as np
import pytest

from adcompiler import tape
from adcompiler.tape import forward_ad as fwAD
from tests.helpers import numerical_grad

RNG = np.random.default_rng(61)


def well_conditioned(*shape):
    return 3.0 * np.eye(shape[-1]) + 0.5 * RNG.standard_normal(shape)


def loss(A, b):
    x = np.linalg.solve(A, b)
    sign, logdet = np.linalg.slogdet(A)
    return np.sum(x * x) + np.sum(np.linalg.inv(A)[..., 0]) + np.sum(np.linalg.det(A)) \
        + np.sum(sign * logdet)


def _leaves(*arrays):
    return [tape.tensor(a, requires_grad=True) for a in arrays]


@pytest.mark.parametrize("shapes", [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)),
                                    ((2, 3, 3), (2, 3, 1)), ((3, 3), (2, 3, 2))],
                         ids=["vector", "matrix", "stack-vector", "stack", "broadcast"])
def test_gradients_match_finite_differences(shapes):
    A, b = well_conditioned(*shapes[0]), RNG.standard_normal(shapes[1])
    leaves = _leaves(A, b)
    loss(*leaves).backward()
    for i, leaf in enumerate(leaves):
        assert leaf.grad.shape == leaf.shape
        np.testing.assert_allclose(leaf.grad.numpy(), numerical_grad(loss, [A, b], i),
                                   rtol=1e-6, atol=1e-8)


def test_node_names_are_pytorchs():
    A, b = _leaves(well_conditioned(3, 3), np.ones(3))
    sign, logdet = np.linalg.slogdet(A)
    assert type(np.linalg.solve(A, b).grad_fn).__name__ == "LinalgSolveExBackward0"
    assert type(np.linalg.inv(A).grad_fn).__name__ == "LinalgInvExBackward0"
    assert type(np.linalg.det(A).grad_fn).__name__ == "LinalgDetBackward0"
    assert type(logdet.grad_fn).__name__ == "LinalgSlogdetBackward0"
    assert sign.grad_fn is None and not sign.requires_grad
    assert np.linalg.slogdet(A).logabsdet is not None


def test_against_torch():
    torch = pytest.importorskip("torch")
    A, b = well_conditioned(2, 3, 3), RNG.standard_normal((2, 3, 2))
    leaves = _leaves(A, b)
    loss(*leaves).backward()
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (A, b))
    x = torch.linalg.solve(ta, tb)
    sign, logdet = torch.linalg.slogdet(ta)
    out = torch.sum(x * x) + torch.sum(torch.linalg.inv(ta)[..., 0]) \
        + torch.sum(torch.linalg.det(ta)) + torch.sum(sign * logdet)
    out.backward()
    np.testing.assert_allclose(leaves[0].grad.numpy(), ta.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(leaves[1].grad.numpy(), tb.grad.numpy(), rtol=1e-10)


def det_squared_gradient(A):
    (g,) = tape.grad(np.linalg.det(A) ** 2, [A], create_graph=True)
    return g


def test_second_order_with_create_graph():
    A0 = well_conditioned(2, 2)
    (A,) = _leaves(A0)
    g = det_squared_gradient(A)
    (h,) = tape.grad(np.sum(g * g), [A])

    def first(M):
        return 2.0 * np.linalg.det(M) ** 2 * np.linalg.inv(M).T

    expected = numerical_grad(lambda M: np.sum(first(M) ** 2), [A0], 0)
    np.testing.assert_allclose(g.detach().numpy(), first(A0), rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), expected, rtol=1e-6, atol=1e-8)


def test_forward_mode_matches_directional_difference():
    A, b = well_conditioned(3, 3), RNG.standard_normal((3, 2))
    dA, db = RNG.standard_normal((3, 3)), RNG.standard_normal((3, 2))
    with fwAD.dual_level():
        out = loss(fwAD.make_dual(tape.tensor(A), tape.tensor(dA)),
                   fwAD.make_dual(tape.tensor(b), tape.tensor(db)))
        dot = fwAD.unpack_dual(out).tangent.numpy()
    eps = 1e-6
    expected = (loss(A + eps * dA, b + eps * db) - loss(A - eps * dA, b - eps * db)) / (2 * eps)
    np.testing.assert_allclose(dot, expected, rtol=1e-6, atol=1e-8)


def test_float32_stays_float32():
    A, b = well_conditioned(3, 3).astype(np.float32), np.ones(3, np.float32)
    leaves = _leaves(A, b)
    out = loss(*leaves)
    assert out.dtype == np.float32
    out.backward()
    assert all(leaf.grad.dtype == np.float32 for leaf in leaves)


def test_numpys_errors():
    (A,) = _leaves(np.ones((3, 3)))
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.solve(A, np.ones(3))
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.inv(tape.tensor(np.ones((2, 3)), requires_grad=True))
    stack, b = _leaves(well_conditioned(3, 3, 3), np.ones((3, 3)))
    with pytest.raises(TypeError, match="NumPy 1 reads that `b` as vectors"):
        np.linalg.solve(stack, b)
    with tape.no_grad():   # no gradient lost: NumPy's own reading
        np.testing.assert_allclose(np.linalg.solve(stack, b).numpy(),
                                   np.linalg.solve(stack.detach().numpy(), np.ones((3, 3))))


def test_on_the_device_equals_the_host():
    """The tape's CuPy path (``cupy.linalg``), on tests/fake_cupy.py: NumPy playing CuPy."""
    from tests import fake_cupy
    A, b = well_conditioned(2, 3, 3), RNG.standard_normal(3)
    with fake_cupy.install() as cp:
        grads = []
        for data in ((A, b), fake_cupy.on_device(cp, (A, b))):
            leaves = _leaves(*data)
            loss(*leaves).backward()
            grads.append([leaf.grad._data for leaf in leaves])
        assert all(type(g) is fake_cupy.ndarray for g in grads[1])
        for got, want in zip(grads[1], grads[0]):
            np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-12)
