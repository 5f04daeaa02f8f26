"""Tape defects left over: ``t.view()`` with no argument (NumPy's new view of the same data), a
tensor stored into a plain NumPy array (``a = b = np.zeros(4); a[0] = x[0]``), and forward-mode
tangents of views, which are views of their base's tangent as in PyTorch (checked side by side
with ``torch.autograd.forward_ad`` where PyTorch is installed, and against written-out values
without it)."""

from __future__ import annotations

import numpy as np
import pytest

from adcompiler import tape
from adcompiler.tape import forward_ad as fwAD


def leaf(values):
    return tape.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


# ---- 1. view() with no argument --------------------------------------------------------------
def test_view_without_argument_shares_data_and_gradient():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2.0
    v = y.view()
    assert v.shape == y.shape and type(v.grad_fn).__name__ == "ViewBackward0"
    v[0] = 10.0                                   # writes y, as NumPy's view does
    np.testing.assert_array_equal(y.detach().numpy(), [10.0, 4.0, 6.0])
    assert y._version == v._version == 1 and type(y.grad_fn).__name__ == "CopySlices"
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 16.0, 24.0])   # 2 * y * 2 outside [0]


def test_view_without_argument_as_pytorch_view_as():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tape, torch):
        x = lib.tensor(np.array([[1.0, -2.0], [3.0, 0.5]]), requires_grad=True)
        y = x * 2.0
        v = y.view() if lib is tape else y.view_as(y)
        v[1].mul_(3.0)
        (y.sin() * v).sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy()))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("args, kwargs", [
    ((None,), {}), ((np.float64,), {}), (("f8",), {}), ((np.ndarray,), {}),
    ((tape.Tensor,), {}), ((), {"dtype": np.float64}), ((), {"type": np.ndarray}),
])
def test_view_of_the_own_dtype_or_type_is_the_same_data(args, kwargs):
    y = leaf([1.0, 2.0]) * 1.0
    v = y.view(*args, **kwargs)
    v += 1.0
    np.testing.assert_array_equal(y.detach().numpy(), [2.0, 3.0])


def test_view_with_a_shape_reshapes_and_other_forms_are_refused_clearly():
    y = leaf(np.arange(6.0)) * 1.0
    assert y.view(2, 3).shape == (2, 3) and y.view((3, 2)).shape == (3, 2)
    assert y.view(-1)._view is not None
    with pytest.raises(TypeError, match=r"view\(float32\) of a float64 tensor would reinterpret"
                                        r" its bytes.*astype"):
        y.view(np.float32)
    with pytest.raises(TypeError, match=r"view\(type=matrix\): a tensor's view is a tensor"):
        y.view(np.matrix)
    with pytest.raises(TypeError, match="a shape takes no dtype"):
        y.view(2, 3, dtype=np.float64)
    with pytest.raises(TypeError, match=r"reshape\(\) takes exactly 1 argument \(0 given\)"):
        y.reshape()                                  # NumPy's error (it used to reshape to ())


def test_view_of_a_leaf_written_in_place_raises_pytorchs_error():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x.view().mul_(2.0)


def test_dynamic_grad_through_a_view_without_argument():
    def f(y):
        v = y.view()
        v *= 3.0                                     # y too: NumPy's view
        return np.sum(y * y)
    y0 = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(tape.dynamic_grad(f)(y0), 18.0 * y0)


# ---- 2. a tensor stored into a plain NumPy array ---------------------------------------------
def _chained(x):
    a = b = np.zeros(4)
    a[0] = x[0]
    return b


def _plain(x):
    a = np.zeros(4)
    a[0] = x[0]
    return a


@pytest.mark.parametrize("store", [_chained, _plain])
def test_storing_into_a_plain_array_says_to_start_from_a_tensor(store):
    """NumPy's ``__setitem__`` converts the value with float() and reports any failure as
    'setting an array element with a sequence'; the cause says what happened and what to do.
    ``a = b = np.zeros(4)`` is one array with two names, so both forms behave the same."""
    x = leaf([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="setting an array element") as err:
        store(x)
    cause = str(err.value.__cause__)
    assert cause.startswith("a[i] = t stores a tensor that requires grad into a plain NumPy")
    assert "tape.zeros(shape)" in cause and "np.zeros_like(x)" in cause and "detach" in cause
    with pytest.raises(RuntimeError, match="a plain NumPy array"):   # int: NumPy does not wrap it
        np.zeros(2, dtype=np.int64)[0] = x[0]
    with tape.no_grad():
        np.testing.assert_array_equal(store(x), [1.0, 0.0, 0.0, 0.0])   # values, on purpose
    np.testing.assert_array_equal(store(x.detach()), [1.0, 0.0, 0.0, 0.0])


def test_other_conversions_keep_their_own_messages():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"float\(\) of a tensor that requires grad"):
        float(x[0])
    a = np.zeros(2)
    with pytest.raises(RuntimeError, match=r"Can't convert a Tensor.*tape.zeros\(n\)"):
        a[0:1] = x[0:1]                   # a slice converts with __array__, unwrapped


@pytest.mark.parametrize("start", [lambda x: tape.zeros(4), lambda x: np.zeros_like(x),
                                   lambda x: tape.tensor(np.zeros(4))])
def test_chained_assignment_from_a_tensor_records_the_write(start):
    x = leaf([1.0, 2.0, 3.0, 4.0])
    a = b = start(x)
    a[0] = x[1] * 3.0
    assert b is a and b[0].item() == 6.0
    (b * x).sum().backward()              # b = [3 x1, 0, 0, 0]: d/dx = [3 x1, 3 x0, 0, 0]
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 3.0, 0.0, 0.0])


def test_dynamic_grad_of_chained_assignment_into_zeros_like():
    def f(x):
        a = b = np.zeros_like(x)
        a[0] = x[1] * 3.0
        a[2] = np.sin(x[2])
        return np.sum(b * x)
    x0 = np.array([1.0, 2.0, 0.5, 4.0])
    want = np.array([6.0, 3.0, np.sin(0.5) + 0.5 * np.cos(0.5), 0.0])
    np.testing.assert_allclose(tape.dynamic_grad(f)(x0), want, rtol=1e-12)


# ---- 3. forward mode: the tangent of a view is a view of the tangent ---------------------------
def tangent_written_after_the_view(T, fw):
    t = T([1.0, 2.0, 3.0])
    x = fw.make_dual(T([4.0, 5.0, 6.0]), t)
    v = x[1:]
    t.mul_(10.0)                          # the tangent given to make_dual, updated in place
    return fw.unpack_dual(v).tangent, fw.unpack_dual(x).tangent


def view_tangent_written(T, fw):
    t = T([1.0, 2.0, 3.0])
    x = fw.make_dual(T([4.0, 5.0, 6.0]), t)
    v = x[1:]
    fw.unpack_dual(v).tangent.mul_(10.0)  # reaches the base's tangent, and t itself
    return fw.unpack_dual(x).tangent, t


def tangent_read_before_an_update(T, fw):
    x = fw.make_dual(T([4.0, 5.0, 6.0]), T([1.0, 2.0, 3.0]))
    y = x * 1.0
    ty = fw.unpack_dual(y).tangent
    tv = fw.unpack_dual(y[1:]).tangent
    y.mul_(x)                             # y's tangent is written in place: ty and tv see it
    return ty, tv, fw.unpack_dual(y).tangent


def update_of_a_copy_leaves_the_input_tangent(T, fw):
    x = fw.make_dual(T([4.0, 5.0, 6.0]), T([1.0, 2.0, 3.0]))
    y = x + 1.0                           # the rule hands back x's tangent: y gets its own
    y.mul_(2.0)
    z = x.clone()
    z.mul_(3.0)
    return fw.unpack_dual(x).tangent, fw.unpack_dual(y).tangent, fw.unpack_dual(z).tangent


def transposed_row_of_a_matrix(T, fw):
    x = fw.make_dual(T(np.arange(6.0).reshape(2, 3)), T(np.arange(6.0).reshape(2, 3) + 10.0))
    col = x.T[1]
    x.mul_(2.0)
    fw.unpack_dual(col).tangent.add_(100.0)
    return fw.unpack_dual(col).primal, fw.unpack_dual(col).tangent, fw.unpack_dual(x).tangent


def view_made_under_no_grad(T, fw):
    no_grad = T.no_grad
    x = fw.make_dual(T([4.0, 5.0, 6.0]), T([1.0, 2.0, 3.0]))
    y = x * 1.0
    with no_grad():
        v = y[1:]                         # no graph, but a tangent all the same
    y.mul_(x)
    return (fw.unpack_dual(v).tangent,)


def dual_copied_into_a_view_of_a_plain_tensor(T, fw):
    x = fw.make_dual(T([4.0, 5.0]), T([1.0, 2.0]))
    y = T([0.0, 0.0, 0.0])
    early = y[0:2]
    y[1:].copy_(x)                        # y gets a tangent of zeros, written in the region
    return fw.unpack_dual(y).tangent, fw.unpack_dual(early).tangent


def forward_over_reverse_through_updates(T, fw):
    p = T([4.0, 5.0, 6.0])
    p.requires_grad_(True)
    x = fw.make_dual(p, T([1.0, 2.0, 3.0]))
    y = x * 2.0
    v = y[1:]
    y.mul_(x)
    v.mul_(x[:2])                         # the tangents read are cloned, as PyTorch does
    tangent = fw.unpack_dual(y).tangent
    (g,) = T.grad(tangent.sum(), p)
    return fw.unpack_dual(y).primal, tangent, g


def tangent_that_is_a_leaf_requiring_grad(T, fw):
    t = T([1.0, 2.0, 3.0])
    t.requires_grad_(True)
    x = fw.make_dual(T([4.0, 5.0, 6.0]), t)
    x.mul_(2.0)                           # its tangent is updated in place: PyTorch refuses
    return (fw.unpack_dual(x).tangent,)


def dual_updated_in_place_updates_its_primal(T, fw):
    x = T([1.0, 2.0, 3.0])
    x.requires_grad_(True)
    p = x * 1.0
    d = fw.make_dual(p, T([1.0, 1.0, 1.0]))    # a view of p: p's graph follows the update
    d.mul_(2.0)
    (g,) = T.grad(p.sum(), x)
    return p, g, fw.unpack_dual(d).tangent


def dual_of_a_slice_updated_in_place(T, fw):
    x = T([1.0, 2.0, 3.0])
    x.requires_grad_(True)
    p = x * 1.0
    d = fw.make_dual(p[0:2], T([1.0, 1.0]))
    d.mul_(x[1:])
    (g,) = T.grad((p * p).sum(), x)
    return p, g, fw.unpack_dual(d).tangent


def dual_keeps_its_tangent_when_its_primal_is_written(T, fw):
    p = T([1.0, 2.0, 3.0])
    d = fw.make_dual(p, T([1.0, 0.0, 2.0]))
    v = d[1:]
    p.mul_(3.0)                           # the dual's tangent is its own, not its base's
    return fw.unpack_dual(d).primal, fw.unpack_dual(d).tangent, fw.unpack_dual(v).tangent


def dual_of_a_leaf_updated_in_place(T, fw):
    x = T([1.0, 2.0, 3.0])
    x.requires_grad_(True)
    d = fw.make_dual(x, T([1.0, 1.0, 1.0]))
    d.mul_(2.0)
    return (d,)


FORWARD_CASES = [tangent_written_after_the_view, view_tangent_written,
                 tangent_read_before_an_update, update_of_a_copy_leaves_the_input_tangent,
                 transposed_row_of_a_matrix, view_made_under_no_grad,
                 dual_copied_into_a_view_of_a_plain_tensor, forward_over_reverse_through_updates,
                 tangent_that_is_a_leaf_requiring_grad, dual_updated_in_place_updates_its_primal,
                 dual_of_a_slice_updated_in_place,
                 dual_keeps_its_tangent_when_its_primal_is_written,
                 dual_of_a_leaf_updated_in_place]

# written out by hand (and equal to PyTorch's, below)
FORWARD_WANT = {
    "tangent_written_after_the_view": [[20.0, 30.0], [10.0, 20.0, 30.0]],
    "view_tangent_written": [[1.0, 20.0, 30.0], [1.0, 20.0, 30.0]],
    # y = x * x: dy = 2 x dx = [8, 20, 36]
    "tangent_read_before_an_update": [[8.0, 20.0, 36.0], [20.0, 36.0], [8.0, 20.0, 36.0]],
    "update_of_a_copy_leaves_the_input_tangent": [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0],
                                                  [3.0, 6.0, 9.0]],
    "transposed_row_of_a_matrix": [[2.0, 8.0], [122.0, 128.0],
                                   [[20.0, 122.0, 24.0], [26.0, 128.0, 30.0]]],
    # y = x * x: dy = 2 x dx = [8, 20, 36]
    "view_made_under_no_grad": [[20.0, 36.0]],
    "dual_copied_into_a_view_of_a_plain_tensor": [[0.0, 1.0, 2.0], [0.0, 1.0]],
    # y = 2 x^2, then y[1:] *= x[:2]: y = [2 x0^2, 2 x1^2 x0, 2 x2^2 x1], dy = 4 x dx, then
    # dy[1:] = dy[1:] x[:2] + y[1:] dx[:2]; g = d(sum dy)/dx
    "forward_over_reverse_through_updates": [[32.0, 200.0, 360.0], [16.0, 210.0, 504.0],
                                             [4.0 + 40.0, 52.0 + 72.0, 108.0]],
    "tangent_that_is_a_leaf_requiring_grad":
        "a leaf Variable that requires grad is being used in an in-place operation.",
    "dual_updated_in_place_updates_its_primal": [[2.0, 4.0, 6.0], [2.0, 2.0, 2.0],
                                                 [2.0, 2.0, 2.0]],
    # p = [x0 x1, x1 x2, x2]: d sum(p^2)/dx = [2 p0 x1, 2 p0 x0 + 2 p1 x2, 2 p1 x1 + 2 p2]
    "dual_of_a_slice_updated_in_place": [[2.0, 6.0, 3.0], [8.0, 40.0, 30.0], [2.0, 3.0]],
    "dual_keeps_its_tangent_when_its_primal_is_written": [[3.0, 6.0, 9.0], [1.0, 0.0, 2.0],
                                                          [0.0, 2.0]],
    "dual_of_a_leaf_updated_in_place":
        "a view of a leaf Variable that requires grad is being used in an in-place operation.",
}


class _Tape:
    tensor, no_grad, grad = tape.tensor, tape.no_grad, tape.grad
    forward_ad = fwAD


def _torch():
    torch = pytest.importorskip("torch")

    class Torch:
        tensor, no_grad, grad = torch.tensor, torch.no_grad, torch.autograd.grad
        forward_ad = torch.autograd.forward_ad
    return Torch


def _run(case, lib):
    """``case`` inside a dual level of ``lib``: its results as arrays, or the error's message."""
    def T(values):
        return lib.tensor(np.asarray(values, dtype=np.float64))
    T.no_grad, T.grad = lib.no_grad, lib.grad
    try:
        with lib.forward_ad.dual_level():
            return [np.array(r.detach().numpy()) for r in case(T, lib.forward_ad)]
    except RuntimeError as exc:
        return str(exc)


def _same(got, want):
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
        return
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w, dtype=np.float64), rtol=1e-12)


@pytest.mark.parametrize("case", FORWARD_CASES, ids=lambda c: c.__name__)
def test_forward_mode_views_share_tangents(case):
    _same(_run(case, _Tape), FORWARD_WANT[case.__name__])


@pytest.mark.parametrize("case", FORWARD_CASES, ids=lambda c: c.__name__)
def test_forward_mode_views_as_pytorch(case):
    _same(_run(case, _Tape), _run(case, _torch()))
