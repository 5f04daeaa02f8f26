"""Views on the tape: ``t[1:3]``, ``t[0]``, ``t.T``, ``reshape``... share their base's storage and
version counter, so in-place updates through them update the base and its gradient as in
PyTorch (run side by side here, float64, when it is installed), and ``dynamic_grad`` of NumPy
code that writes through a view gives NumPy's values (checked against NumPy and central
differences, without PyTorch)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from adcompiler import tape
from adcompiler.tape import forward_ad


def _tape_lib():
    return tape, SimpleNamespace(no_grad=tape.no_grad, grad=tape.grad)


def _torch_lib():
    torch = pytest.importorskip("torch")
    return torch, SimpleNamespace(no_grad=torch.no_grad, grad=torch.autograd.grad)


def _run(case, lib):
    """``case(T, m)`` on one library (``m.no_grad``, ``m.grad``): its results as arrays, or the
    RuntimeError's message."""
    module, m = lib()

    def T(values, requires_grad=False):
        return module.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)
    try:
        return [np.asarray(o.detach().numpy() if hasattr(o, "detach") else o)
                for o in case(T, m)]
    except RuntimeError as exc:
        return str(exc)


# ---- the cases: each returns the values to compare -------------------------------------------
def slice_mul(T, m):
    a = T([1.0, 2.0, 3.0], True)
    b = a * 1.0
    b[0:2].mul_(10.0)
    b.sum().backward()
    return b, a.grad


def setitem_through_transpose(T, m):
    a = T(np.arange(6.0).reshape(2, 3), True)
    b = a * 1.0
    b.T[0] = 0.0
    (b * b).sum().backward()
    return b, a.grad


def fill_an_integer_indexed_row(T, m):
    a = T(np.arange(6.0).reshape(2, 3), True)
    b = a * 2.0
    b[1].fill_(1.0)
    (b * a).sum().backward()
    return b, a.grad


def base_updated_after_the_view(T, m):
    a = T([1.0, 2.0, 3.0], True)
    b = a * 1.0
    v = b[0:2]
    b.mul_(2.0)             # v sees the new values, and its graph follows
    (v * v).sum().backward()
    return v, a.grad


def sibling_views(T, m):
    a = T([1.0, 2.0, 3.0], True)
    b = a * 1.0
    v1, v2 = b[0:2], b[1:3]
    v1.mul_(10.0)
    (v2 * v2).sum().backward()
    return v2, a.grad


def a_view_of_a_view(T, m):
    a = T(np.arange(6.0), True)
    b = a * 1.0
    b.reshape(2, 3).T[1].mul_(a[0:2] + 1.0)
    (b * b).sum().backward()
    return b, a.grad


def setitem_and_iadd_on_rows(T, m):
    a = T(np.arange(12.0).reshape(3, 4), True)
    b = a.sin()             # saves a, not b (exp would save b: then backward raises, in both)
    r = b[1]
    r[1:3] = a[0, 0:2] * 5.0
    b[2] += a[0]
    b[None, 0, ..., ::2].sub_(a[1, 1])
    (b ** 2).sum().backward()
    return b, a.grad


def a_base_without_grad(T, m):
    x = T([5.0, 6.0], True)
    b = T(np.zeros(3))
    u = b[1:]
    b[0:2].copy_(x * x)     # b now requires grad, and so does u
    (u * b[:2]).sum().backward()
    return b, u, x.grad, np.array([b.requires_grad, u.requires_grad])


def second_derivatives(T, m):
    a = T([1.0, 2.0, 3.0], True)
    b = a * a
    b[0:2].mul_(a[1:3])
    (g,) = m.grad((b ** 2).sum(), a, create_graph=True)
    g.sum().backward()
    return g, a.grad


def no_grad_update_of_a_leaf(T, m):
    a = T([1.0, 2.0, 3.0], True)
    with m.no_grad():
        a[0:2].mul_(2.0)
    return a, np.array(a._version)


def version_counter(T, m):
    a = T([1.0, 2.0, 3.0], True)
    b = a * 1.0
    r = b[0:2]
    c = (r * r).sum()
    b[1] = 0.0              # r shares b's version counter: its saved value is stale
    c.backward()
    return (a.grad,)


def view_of_a_leaf(T, m):
    a = T([1.0, 2.0, 3.0], True)
    a[0:2].mul_(2.0)
    return (a,)


def view_made_under_no_grad(T, m):
    a = T([1.0, 2.0, 3.0], True)
    b = a * 1.0
    with m.no_grad():
        v = b[1:]
    v.mul_(2.0)
    return (b,)


def expanded(T, m):
    b = T([1.0, 2.0], True) * 1.0
    b.expand(3, 2).add_(1.0)
    return (b,)


SAME = [slice_mul, setitem_through_transpose, fill_an_integer_indexed_row,
        base_updated_after_the_view, sibling_views, a_view_of_a_view, setitem_and_iadd_on_rows,
        a_base_without_grad, second_derivatives, no_grad_update_of_a_leaf]
ERRORS = {version_counter: "modified by an inplace operation",
          view_of_a_leaf: "a view of a leaf Variable that requires grad",
          view_made_under_no_grad: "A view was created in no_grad mode",
          expanded: "more than one element of the written-to tensor refers to a single"}


@pytest.mark.parametrize("case", SAME, ids=[c.__name__ for c in SAME])
def test_updates_through_views_as_in_pytorch(case):
    want, got = _run(case, _torch_lib), _run(case, _tape_lib)
    assert not isinstance(want, str), want
    assert not isinstance(got, str), got
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", ERRORS, ids=[c.__name__ for c in ERRORS])
def test_the_same_updates_raise_as_in_pytorch(case):
    want, got = _run(case, _torch_lib), _run(case, _tape_lib)
    assert isinstance(want, str) and ERRORS[case] in want
    assert isinstance(got, str) and ERRORS[case] in got, got


def test_the_known_values_without_pytorch():
    """The brief's numbers, by hand: PyTorch's, which the tape now gives."""
    b, grad = _run(slice_mul, _tape_lib)
    np.testing.assert_array_equal(b, [10.0, 20.0, 3.0])
    np.testing.assert_array_equal(grad, [10.0, 10.0, 1.0])
    b, grad = _run(setitem_through_transpose, _tape_lib)
    np.testing.assert_array_equal(b, [[0.0, 1.0, 2.0], [0.0, 4.0, 5.0]])
    np.testing.assert_array_equal(grad, [[0.0, 2.0, 4.0], [0.0, 8.0, 10.0]])
    b, grad = _run(fill_an_integer_indexed_row, _tape_lib)
    np.testing.assert_array_equal(b, [[0.0, 2.0, 4.0], [1.0, 1.0, 1.0]])
    np.testing.assert_array_equal(grad, [[0.0, 4.0, 8.0], [1.0, 1.0, 1.0]])
    assert "modified by an inplace operation" in _run(version_counter, _tape_lib)


def test_views_share_storage_and_version_and_name_their_nodes():
    a = tape.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    b = a * 1.0
    row, col = b[1], b.T[2]
    assert type(row.grad_fn).__name__ == "SelectBackward0"
    assert type(col.grad_fn).__name__ == "SelectBackward0"
    row.fill_(7.0)
    assert row._version == col._version == b._version == 1
    assert col[1].item() == 7.0
    assert type(b.grad_fn).__name__ == "CopySlices"
    assert type(row.grad_fn).__name__ == "AsStridedBackward0"   # as PyTorch, after an update
    r = b.T.reshape(-1)          # NumPy copies here: so is the tape's a copy
    r.zero_()
    assert b.sum().item() == 7.0 * 3 + 0 + 1 + 2
    assert b.flatten()._version == 0 and b.ravel()._version == b._version


def test_forward_mode_tangents_follow_updates_through_views():
    x0, dx = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 0.5])
    with forward_ad.dual_level():
        x = forward_ad.make_dual(tape.tensor(x0), tape.tensor(dx))
        b = x * 2.0
        b[0:2].mul_(x[1:3])
        v = b[1:]
        b.add_(x)
        tb, tv = forward_ad.unpack_dual(b).tangent, forward_ad.unpack_dual(v).tangent
    want = 2 * dx + dx                                    # b = 2x + x, then the region
    want[0:2] = 2 * dx[0:2] * x0[1:3] + 2 * x0[0:2] * dx[1:3] + dx[0:2]
    np.testing.assert_allclose(tb.numpy(), want)
    np.testing.assert_allclose(tv.numpy(), want[1:])


# ---- dynamic_grad: NumPy's semantics, where a row is a view and an element a scalar ------------
def doubled_row(y):
    row = y[0]
    row *= 2
    return np.sum(np.sin(y) * y)


def rows_and_columns(y):
    z = np.tanh(y)
    p = z * z            # before the updates: NumPy keeps these values
    row = z[0]
    row *= 2
    z.T[1] += 1.0
    s = z[1, 0]          # a scalar: NumPy copies it, later writes do not reach it
    z[1, 0] = 5.0
    s *= 3
    return np.sum(p) + np.sum(z * y) + s


def _central_differences(f, y, h=1e-6):
    out = np.zeros_like(y)
    for i in np.ndindex(y.shape):
        e = np.zeros_like(y)
        e[i] = h
        out[i] = (f(y + e) - f(y - e)) / (2 * h)
    return out


@pytest.mark.parametrize("f", [doubled_row, rows_and_columns])
def test_dynamic_grad_writes_through_views_as_numpy_does(f):
    y = np.random.default_rng(3).standard_normal((3, 2))
    value, grad = tape.dynamic_value_and_grad(f)(y)
    assert value == pytest.approx(f(y.copy()), rel=1e-12)       # NumPy's own value
    np.testing.assert_allclose(grad, _central_differences(f, y), rtol=1e-6, atol=1e-8)


def test_dynamic_grad_of_the_doubled_row_by_hand():
    y = np.array([[0.5, -1.0], [2.0, 0.25]])
    z = y.copy()
    z[0] *= 2
    assert tape.dynamic_value_and_grad(doubled_row)(y)[0] == pytest.approx(np.sum(np.sin(z) * z))
    grad = np.sin(z) + z * np.cos(z)
    grad[0] *= 2
    np.testing.assert_allclose(tape.dynamic_grad(doubled_row)(y), grad, rtol=1e-12)
