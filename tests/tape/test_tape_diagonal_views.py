"""On the tape, ``np.diagonal``, ``np.diag`` and ``.diagonal()`` of a matrix are views, as in
NumPy and PyTorch: a write into the matrix after taking the diagonal shows in it, and in the
gradient. They were copies (a gather): value 2.0 and gradient [2, 0, 0, -2] for 401 and
[0, 400, 0, -2] below."""

import numpy as np
import pytest

from adcompiler import tape


def diagonal_then_write(a):
    b = a * 1.0
    d = np.diagonal(b)
    b[0, 0] = 10.0 * b[0, 1]
    return np.sum(d * d)


def diag_then_write(a):
    b = a * 1.0
    d = np.diag(b, 1)
    b[0, 1] = 3.0 * b[1, 0]
    return np.sum(d * d) + np.sum(b)


def method_then_write(a):
    b = a * 1.0
    d = b.diagonal(-1)
    b[2, 1] = 2.0 * b[0, 0] + b[1, 2]
    return np.sum(d * np.arange(1.0, 3.0))


A = np.array([[1.0, 2.0, 0.5], [0.5, -1.0, 3.0], [2.0, 1.5, 4.0]])


def _differences(f, x, h=1e-6):
    out = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out


@pytest.mark.parametrize("f", [diagonal_then_write, diag_then_write, method_then_write])
def test_a_diagonal_sees_later_writes(f):
    t = tape.tensor(A.copy(), requires_grad=True)
    loss = f(t)
    loss.backward()
    assert float(loss.detach().numpy()) == pytest.approx(f(A.copy()))
    np.testing.assert_allclose(t.grad.numpy(), _differences(f, A), rtol=1e-6, atol=1e-6)


def test_the_values_and_the_node_name():
    t = tape.tensor(A.copy(), requires_grad=True)
    assert float(diagonal_then_write(t).detach().numpy()) == 20.0 ** 2 + 1.0 + 4.0 ** 2
    d = np.diagonal(t, 2)
    assert d.grad_fn.name() == "DiagonalBackward0" and d.detach().numpy().tolist() == [0.5]
    assert np.diag(t[:2, :], -1).detach().numpy().tolist() == [0.5]   # 2x3, below
    assert np.diagonal(t[:, :2]).detach().numpy().tolist() == [1.0, -1.0]   # 3x2
    assert np.diagonal(t, 5).shape == (0,)
