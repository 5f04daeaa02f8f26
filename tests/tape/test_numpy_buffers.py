"""dynamic_grad takes NumPy code that fills buffers it made (``np.zeros``, ``np.empty``,
``np.full``, ``np.array`` of tensors), as the compiler does and as PyTorch code fills
``torch.zeros``: the buffers are tensors that record what is written into them, in the function
and in the module's helpers it calls. Each gradient equals the compiler's."""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape

SCALE = 2.0


def rnn_states(W, x):
    T, H = x.shape[0], W.shape[0]
    hs = np.zeros((T, H))
    h = np.zeros(H)
    for t in range(T):
        h = np.tanh(W @ h + x[t])
        hs[t] = h
    return np.sum(hs ** 2)


def written_before_read(x):
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i] * x[i - 1]
    return np.sum(out)


def filled(x):
    acc = np.full(3, 0.5)
    acc[1:] = acc[1:] + x[:2] * SCALE
    return np.sum(acc * x)


def stacked(x):
    rows = np.array([[x[0], x[1] * x[0]], [x[2], 1.0]])
    return np.sum(rows @ rows)


def _make_buffer(x):
    buf = np.zeros_like(np.ones(x.shape))        # a helper's buffer, like a plain array
    buf[0] = x[0] ** 3
    return buf


def through_a_helper(x):
    return np.sum(_make_buffer(x) + x)


def with_integers(x):
    counts = np.zeros(3, dtype=int)               # stays NumPy's: a counter, an index
    counts[1] = 2
    idx = np.array([2, 0])
    return np.sum(x[idx] * counts[1])


CASES = [(rnn_states, (np.eye(3) * 0.5, np.linspace(-1.0, 1.0, 12).reshape(4, 3))),
         (written_before_read, (np.array([0.5, -1.0, 2.0, 1.5]),)),
         (filled, (np.array([1.0, 2.0, 3.0]),)),
         (stacked, (np.array([1.0, 2.0, 3.0]),)),
         (through_a_helper, (np.array([1.0, 2.0, 3.0]),)),
         (with_integers, (np.array([1.0, 2.0, 3.0]),))]


@pytest.mark.parametrize("f, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_tape_takes_the_buffers_the_compiler_takes(f, args):
    expected = ad.grad(f)(*args)
    np.testing.assert_allclose(tape.dynamic_grad(f)(*args), expected, rtol=1e-12, atol=1e-14)
    assert np.__name__ == "numpy" and globals()["np"] is np     # the module is untouched


def test_a_rebound_global_is_seen():
    global SCALE
    x = np.array([1.0, 2.0, 3.0])
    before = tape.dynamic_grad(filled)(x)
    SCALE = 3.0
    try:
        after = tape.dynamic_grad(filled)(x)
    finally:
        SCALE = 2.0
    np.testing.assert_allclose(after - before, [x[1], x[0] + x[2], x[1]])   # d/dSCALE of it


def test_outside_dynamic_grad_np_zeros_is_numpys():
    assert type(np.zeros(3)) is np.ndarray
    x = tape.tensor(np.ones(2), requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't convert a Tensor that requires grad"):
        np.array([x[0], x[1]])                     # plain NumPy code, outside: as before


def stepped(x):
    return np.sum(np.floor(x) + np.ceil(x) * x + np.sign(x) + np.round(x) + np.trunc(x))


def test_piecewise_constant_results_backpropagate_zero_as_pytorch_and_the_compiler():
    x = np.array([1.5, -0.3, 2.7])
    t = tape.tensor(x, requires_grad=True)
    np.floor(t).sum().backward()                          # alone: a node, as in PyTorch
    np.testing.assert_array_equal(t.grad._data, np.zeros(3))
    assert type(np.floor(t).grad_fn).__name__ == "FloorBackward0"
    np.testing.assert_array_equal(tape.dynamic_grad(stepped)(x), ad.grad(stepped)(x))
