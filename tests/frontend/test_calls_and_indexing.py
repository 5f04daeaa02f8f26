"""A user trial's call and indexing findings: builtin ``max``/``min`` of traced numbers,
``np.array`` of a list of traced values, diagonals and traces of traced matrices, and slices
whose length changes with a loop counter (stores compile under a mask; reads get a hint that
compiles). Gradients against finite differences (PyTorch as an extra oracle where installed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import adcompiler as ad

from tests.helpers import assert_matches_numerical

rng = np.random.default_rng(5)
W_MODULE = np.arange(12.0).reshape(3, 4)


def check(f, *args):
    wrt = tuple(range(len(args)))
    grads = ad.grad(f, wrt=wrt)(*args)
    assert_matches_numerical(f, args, wrt, grads)
    assert ad.value_and_grad(f)(*args)[0] == pytest.approx(f(*args))
    return grads


# ---- builtin max / min ----------------------------------------------------------------------
def softmin3(a, b, c, gamma):
    mx = max(-a / gamma, -b / gamma, -c / gamma)
    s = math.exp(-a / gamma - mx) + math.exp(-b / gamma - mx) + math.exp(-c / gamma - mx)
    return -gamma * (math.log(s) + mx)


def extremes(x):
    return max(x[0], x[1] * 2.0, 0.5) + min([x[2], x[0]]) + max(x) * min(x)


def clamped_neighbours(x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[max(i - 1, 0)] * x[min(i + 1, x.shape[0] - 1)]
    return acc


def larger(a, b):
    return max(a, b)


def max_of_arrays(x):
    return np.sum(max(x, x * 2.0))


def max_with_key(x):
    return max(x[0], x[1], key=abs)


def test_builtin_max_of_floats_is_a_python_float_with_its_gradient():
    grads = check(softmin3, 1.0, 2.0, 0.5, 0.3)
    assert all(type(g) is float for g in grads)


def test_builtin_max_agrees_with_pytorch():
    torch = pytest.importorskip("torch")
    args = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (1.0, 2.0, 0.5, 0.3)]
    a, b, c, gamma = args
    mx = torch.maximum(torch.maximum(-a / gamma, -b / gamma), -c / gamma)
    s = sum(torch.exp(-v / gamma - mx) for v in (a, b, c))
    (-gamma * (torch.log(s) + mx)).backward()
    ours = ad.grad(softmin3, wrt=(0, 1, 2, 3))(1.0, 2.0, 0.5, 0.3)
    np.testing.assert_allclose(ours, [float(v.grad) for v in args], rtol=1e-12)


@pytest.mark.parametrize("f", [extremes, clamped_neighbours])
def test_builtin_max_min_of_array_entries_and_counters(f):
    check(f, np.array([0.3, -0.4, 0.9, 0.2]))


def test_a_tie_splits_the_gradient_as_np_maximum():
    assert ad.grad(larger, wrt=(0, 1))(1.0, 1.0) == (0.5, 0.5)
    assert ad.grad(larger, wrt=(0, 1))(1.0, 2.0) == (0.0, 1.0)


@pytest.mark.parametrize("f, words", [(max_of_arrays, "np.maximum(a, b)"),
                                      (max_with_key, "key=")])
def test_builtin_max_refusals_say_what_to_use(f, words):
    with pytest.raises(ad.CompileError) as info:
        ad.grad(f)(np.array([0.3, -0.4]))
    assert words in str(info.value)


# ---- np.array of a list of traced values ----------------------------------------------------
def rhs(y, theta):
    return np.sum(np.array([y[1], -theta * y[0]]) ** 2)


def nested(y, theta):
    m = np.array([[y[0], theta], [1.0, y[1] * theta]])
    return np.sum(m @ y)


def rows(y, theta):
    m = np.asarray([y, y * theta, [1.0, 2.0]], dtype=np.float64)
    return np.sum(m ** 2)


def ragged(y, theta):
    return np.sum(np.array([y, theta]))


@pytest.mark.parametrize("f", [rhs, nested, rows])
def test_np_array_of_traced_values_stacks_them(f):
    check(f, np.array([1.0, 0.5]), 2.0)


def test_np_array_of_traced_values_is_not_copied_again():
    g = ad.grad(rhs)
    g(np.array([1.0, 0.5]), 2.0)
    assert "np.stack([" in g.source and "np.copy(np.stack" not in g.source


def test_a_ragged_list_is_refused_once():
    with pytest.raises(ad.CompileError) as info:
        ad.grad(ragged)(np.array([1.0, 0.5]), 2.0)
    message = str(info.value).splitlines()[0]
    assert "ragged" in message and message.count("np.array") == 1


# ---- diagonals and traces -------------------------------------------------------------------
def diag_sq(a):
    return np.sum(np.diag(a) ** 2)


def offsets(a):
    return np.sum(np.diag(a, 1) ** 2) + np.sum(a.diagonal(-1) * 3.0) + a.trace() ** 2


def traces(a):
    return np.trace(a, offset=-1) * np.trace(a.T @ a) + np.sum(np.diagonal(a, offset=2))


def build_diag(v):
    m = np.diag(v) + np.diag(v[:2], k=1) + np.diag(v[1:], -1)
    return np.sum(m @ m)


def diag_of_a_list(x):
    return np.sum(np.diag([x[0], x[1] * 2.0]) @ x[:2])


def module_diag(a):  # of a module-level array: folded as before (a view that follows it)
    return np.sum(np.diag(W_MODULE) * a[0, :3]) + np.trace(W_MODULE) * np.sum(a)


def of_rows(a):
    acc = 0.0
    for i in range(a.shape[0]):
        acc = acc + np.trace(a[i]) * np.diagonal(a[i])[i]
    return acc


def diagonal_3d(a):   # the diagonals of the first two axes, along the last (NumPy's)
    return np.sum(np.diagonal(a) * np.arange(4.0).reshape(2, 2))


def diag_3d(a):
    return np.sum(np.diag(a))


@pytest.mark.parametrize("f, x", [(diag_sq, rng.normal(size=(3, 3))),
                                  (offsets, rng.normal(size=(3, 4))),
                                  (traces, rng.normal(size=(4, 3))),
                                  (build_diag, rng.normal(size=3)),
                                  (diag_of_a_list, rng.normal(size=3)),
                                  (module_diag, rng.normal(size=(3, 4))),
                                  (of_rows, rng.normal(size=(3, 3, 3)))])
def test_diagonals_and_traces_of_traced_arrays(f, x):
    check(f, x)


def test_a_diagonal_is_a_gather_without_np_add_at():
    g = ad.grad(offsets)
    g(rng.normal(size=(3, 4)))
    assert "np.add.at" not in g.source and "np.diagonal" not in g.source
    np.testing.assert_array_equal(g.constants["diagonal"], [1, 6, 11])  # A[r, r + 1] in A.ravel()


def test_the_diagonal_of_a_3d_array_is_numpys_and_np_diag_of_one_is_refused():
    check(diagonal_3d, rng.normal(size=(2, 2, 2)))
    with pytest.raises(ad.CompileError) as info:
        ad.grad(diag_3d)(np.ones((2, 2, 2)))
    assert "3-D" in str(info.value) and info.value.hint


# ---- slices whose length changes with the loop counter --------------------------------------
def decay_tail(x):
    y = x.copy()
    for i in range(y.shape[0]):
        y[i:] *= 0.9
        y[i] += np.sin(y[i])
    return np.sum(y * y)


def zero_upper(a, s):
    b = a * 1.0
    for i in range(b.shape[0]):
        b[i, i + 1:] = s * i
        b[1:i, i] -= s
        b[i:, :2] += b[0, 0]
    return np.sum(b * b)


def back_subst(u, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - u[i, i + 1:] @ x[i + 1:]) / u[i, i]
    return np.sum(x ** 2)


def back_subst_masked(u, b):  # what the hint for back_subst writes
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        row = np.where(np.arange(u.shape[1]) >= i + 1, u[i], 0.0)
        x[i] = (b[i] - row @ np.where(np.arange(x.shape[0]) >= i + 1, x, 0.0)) / u[i, i]
    return np.sum(x ** 2)


def tail_sums(a):
    acc = 0.0
    for i in range(a.shape[0]):
        acc = acc + np.sum(a[i:])
    return acc


def wraps(x):
    y = x.copy()
    for i in range(y.shape[0]):
        y[i - 1:] *= 0.9
    return np.sum(y)


def test_a_number_stored_into_a_shrinking_slice_compiles_under_a_mask():
    x = rng.normal(size=4)
    check(decay_tail, x)
    check(zero_upper, rng.normal(size=(4, 4)), 0.7)
    g = ad.grad(decay_tail)
    g(x)
    assert "np.where(" in g.source


@pytest.mark.parametrize("f, hint", [
    (back_subst, "`np.where(np.arange(u.shape[1]) >= i + 1, u[i], 0.0)`"),
    (tail_sums, "`np.where((np.arange(a.shape[0]) >= i)[:, None], a, 0.0)`")])
def test_reading_a_shrinking_slice_hints_at_the_masked_whole_row(f, hint):
    n = 1001   # past the unrolling limit, the loop is compiled: the refusal with its hint
    u = np.triu(rng.normal(size=(n, n))) + 3 * np.eye(n)
    args = (u, rng.normal(size=n)) if f is back_subst else (u,)
    with pytest.raises(ad.CompileError) as info:
        ad.grad(f)(*args)
    assert "length changes" in info.value.message and hint in info.value.hint


def test_within_the_unrolling_limit_a_shrinking_read_compiles():
    u = np.triu(rng.normal(size=(4, 4))) + 3 * np.eye(4)
    check(back_subst, u, rng.normal(size=4))
    check(tail_sums, u)


def test_the_masked_rewrite_from_the_hint_compiles_and_matches():
    u = np.triu(rng.normal(size=(4, 4))) + 3 * np.eye(4)
    b = rng.normal(size=4)
    check(back_subst_masked, u, b)
    assert back_subst_masked(u, b) == pytest.approx(back_subst(u, b))


def test_a_shrinking_slice_with_a_negative_bound_is_refused():
    with pytest.raises(ad.CompileError) as info:
        ad.grad(wraps)(rng.normal(size=4))
    assert "negative" in info.value.message
