"""Found by using the tape as a PyTorch (and NumPy) user would: gradients accumulated into an
existing ``.grad`` in place, NumPy's ``out=`` and other arguments of the functions the tape
spells itself (ignored before: silently wrong values), and ``astype(copy=False)``/``fill``."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from tests.helpers import numerical_grad


def leaf(values):
    return tape.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


# ---- .grad accumulation ----------------------------------------------------------------------
def test_a_saved_grad_accumulated_into_fails_its_version_check():
    """``x.grad`` used in a graph, then a second backward adds into it in place: PyTorch bumps
    its version, so the graph refuses it; the tape read the new value silently (w.grad was
    [5, 7], the gradient of a value the loss never saw)."""
    x = leaf([1.0, 2.0])
    (x * x).sum().backward()
    w = leaf([3.0, 4.0])
    y = (w * x.grad).sum()
    grad = x.grad
    (x * 3.0).sum().backward()
    assert x.grad is grad and grad._version == 1
    np.testing.assert_array_equal(grad.numpy(), [5.0, 7.0])
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: "
                                           r"\[torch.DoubleTensor \[2\]\] is at version 1"):
        y.backward()


def test_a_differentiable_grad_is_accumulated_into_in_place():
    """After ``backward(create_graph=True)``, a plain backward adds into the same ``.grad`` in
    place, which keeps its graph (PyTorch's AccumulateGrad outside grad mode)."""
    x = leaf([1.0, 2.0])
    (x * x).sum().backward(create_graph=True)
    g = x.grad
    (x * 3.0).sum().backward()
    assert x.grad is g and g.requires_grad and type(g.grad_fn).__name__ == "CopyBackwards"
    np.testing.assert_array_equal(g.detach().numpy(), [5.0, 7.0])


def test_grad_accumulation_as_pytorch():
    torch = pytest.importorskip("torch")
    found = []
    for lib in (tape, torch):
        x = lib.tensor(np.array([1.0, 2.0]), requires_grad=True)
        (x ** 3).sum().backward(create_graph=True)
        first = x.grad
        (x * 3.0).sum().backward()
        found.append((first is x.grad, first.requires_grad, x.grad.detach().numpy().copy()))
    assert found[0][:2] == found[1][:2]
    np.testing.assert_array_equal(found[0][2], found[1][2])


# ---- out= and other arguments of NumPy functions ---------------------------------------------
def clip_into_itself(x):
    y = x * 1.0
    np.clip(y, -1.0, 1.0, out=y)
    return np.sum(y * y * x)


def joined_into_buffers(x):
    buf = np.zeros_like(np.concatenate([x, x]))       # a tensor on the tape
    np.concatenate([x, np.sin(x)], out=buf)
    outer = np.zeros_like(np.outer(x, x))
    np.outer(x, buf[3:], out=outer)
    total = np.zeros_like(np.dot(x, x))
    np.dot(x, buf[:3], out=total)
    return np.sum(buf * buf) + np.sum(outer) + total


@pytest.mark.parametrize("f", [clip_into_itself, joined_into_buffers])
def test_out_is_written_as_numpy_writes_it(f):
    """``np.clip(y, lo, hi, out=y)`` used to return the clipped value and leave ``y`` as it was
    (so the loss read the unclipped ``y``): now ``out=`` is written, as NumPy does."""
    x0 = np.array([0.5, -1.2, 2.0])
    np.testing.assert_allclose(tape.dynamic_grad(f)(x0), numerical_grad(f, (x0,), 0),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tape.dynamic_value_and_grad(f)(x0)[0], f(x0.copy()), rtol=1e-12)


def test_out_is_the_result_and_a_plain_out_is_refused():
    x = leaf([0.5, -1.2, 2.0])
    y = tape.zeros(3)
    assert np.clip(x, -1.0, 1.0, out=y) is y and type(y.grad_fn).__name__ == "ClampBackward1"
    np.testing.assert_array_equal(y.detach().numpy(), [0.5, -1.0, 1.0])
    stacked = tape.zeros(3, 2)
    assert np.stack([x, x * 2.0], axis=1, out=stacked) is stacked
    (stacked.sum() + y.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 3.0, 3.0])   # clip: 1, 0, 0
    with pytest.raises(TypeError, match="cannot store a result that requires grad into a plain"):
        np.clip(x, 0.0, 1.0, out=np.zeros(3))


@pytest.mark.parametrize("call, message", [
    (lambda x: np.std(x, where=x > 1.0), r"np.std: where= not supported"),
    (lambda x: np.var(x, out=np.zeros(())), r"np.var: out= not supported"),
    (lambda x: np.std(x, mean=np.ones(())), r"np.std: mean= not supported"),
    (lambda x: np.reshape(x, (2, 2), order="F"), r"np.reshape: only order='C'"),
    (lambda x: np.ravel(x, order="F"), r"np.ravel: only order='C'"),
    (lambda x: np.concatenate([x, x], dtype=np.float32), r"np.concatenate: dtype= not"),
    (lambda x: np.clip(x, 0.0, 1.0, where=x > 1.0), r"np.clip: where= not supported"),
])
def test_arguments_that_would_change_the_value_are_refused_not_ignored(call, message):
    """Each of these used to be dropped: ``np.std(x, where=m)`` was the std of all of ``x``,
    ``np.reshape(x, s, order='F')`` a C-order reshape, and so on."""
    with pytest.raises(TypeError, match=message):
        call(leaf([1.0, 2.0, 3.0, 4.0]))


def test_defaults_spelled_out_still_work():
    x = leaf([1.0, 2.0, 3.0, 4.0])
    assert np.concatenate([x, x], casting="same_kind").shape == (8,)
    assert np.reshape(x, (2, 2), order="C").shape == (2, 2) and np.ravel(x, order="C")._view
    assert np.std(x, ddof=1).item() == pytest.approx(np.std([1.0, 2.0, 3.0, 4.0], ddof=1))


# ---- astype(copy=False) and fill -------------------------------------------------------------
def same_array_through_astype(x):
    y = x.astype(np.float64, copy=False)    # NumPy: x itself, so the write below is to x
    y[0] = 5.0 * x[1]
    b = np.empty_like(x)
    b.fill(2.0)
    return np.sum(x * x * b)


def test_astype_without_copy_and_fill_follow_numpy():
    x0 = np.array([1.0, 2.0, 3.0])
    got = tape.dynamic_grad(same_array_through_astype)(x0)
    np.testing.assert_allclose(got, [0.0, 208.0, 12.0])     # sum 2 (25 x1^2 + x1^2 + x2^2)
    np.testing.assert_allclose(got, numerical_grad(same_array_through_astype, (x0,), 0),
                               rtol=1e-6)
    t = leaf([1.0, 2.0])
    assert t.astype(np.float64, copy=False) is t and t.astype(np.float64) is not t
    assert t.astype(np.float32, copy=False).dtype == np.float32
    u = tape.zeros(2)
    assert u.fill(3.0) is None and u.tolist() == [3.0, 3.0]


# ---- np.linalg.norm --------------------------------------------------------------------------
def test_matrix_two_norm_is_not_the_frobenius_norm():
    """``np.linalg.norm(m, ord=2, axis=(0, 1))`` is the largest singular value (the tape once gave
    the Frobenius norm, 3.873 for this matrix instead of 3.618), and its gradient is the top
    singular pair's outer product ``u v^T`` (svd's rules)."""
    m = np.array([[3.0, 1.0], [1.0, 2.0]])
    x = tape.tensor(m, requires_grad=True)
    got = np.linalg.norm(x, ord=2, axis=(0, 1))
    assert float(np.asarray(got.detach())) == pytest.approx((5.0 + np.sqrt(5.0)) / 2.0)
    got.backward()
    u, s, vh = np.linalg.svd(m)
    np.testing.assert_allclose(x.grad.numpy(), np.outer(u[:, 0], vh[0]), rtol=1e-12)


@pytest.mark.parametrize("shape", [(2, 3), (4,), (2, 3, 4)])
@pytest.mark.parametrize("order", [None, 2, "fro"])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
def test_norms_match_numpy_or_its_error(shape, order, axis):
    a = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    try:
        want = np.linalg.norm(a, ord=order, axis=axis)
    except (ValueError, TypeError) as exc:
        with tape.no_grad(), pytest.raises(type(exc)):
            np.linalg.norm(tape.tensor(a), ord=order, axis=axis)
        return
    x = tape.tensor(a, requires_grad=True)
    with tape.no_grad():
        got = np.linalg.norm(x, ord=order, axis=axis)
    np.testing.assert_allclose(np.asarray(got.detach().numpy() if hasattr(got, "detach")
                                          else got), want, rtol=1e-12)


def spring_forces(k, x):
    f = k * (x[1:] - x[:-1])
    force = np.zeros_like(x)   # made in the function: a tensor on the tape (numpy_scope)
    force[:-1] += f
    return np.sum(force * force)


def spring_forces_into(k, x, force):
    f = k * (x[1:] - x[:-1])
    force[:-1] += f            # force is the caller's plain array
    return np.sum(force * force)


def test_adding_into_a_buffer_the_function_made_is_recorded():
    k, x = np.ones(4), np.arange(5.0) ** 2
    np.testing.assert_allclose(tape.dynamic_grad(spring_forces, wrt="k")(k, x),
                               ad.grad(spring_forces, wrt="k")(k, x), rtol=1e-12)


def test_adding_into_a_plain_array_names_the_update_not_only_out():
    k, x = np.ones(4), np.arange(5.0) ** 2
    with pytest.raises(TypeError, match=r"`a\[\.\.\.\] \+= t` where `a` is not a tensor"):
        tape.dynamic_grad(spring_forces_into, wrt="k")(k, x, np.zeros(5))
