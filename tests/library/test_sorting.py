"""np.sort, np.take_along_axis, np.median, np.quantile/np.percentile, compiled and on the tape.

For each function: the compiled value is NumPy's (dtype and shape too), the compiled
vector-Jacobian product is central finite differences' (inputs without ties) and the tape's,
the Jacobian-vector product agrees with it, float32 stays float32, and where PyTorch is
installed the gradients are torch.sort's and torch.quantile's. At a tie the sort is stable, so
the compiler and the tape route each cotangent entry to the same position. Refused forms raise
a located error.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape

from tests.helpers import assert_matches_numerical

rng = np.random.default_rng(16)
TAKE = np.array([[0, -1, 0], [2, 1, 1], [3, 3, 0]])   # repeated and negative indices


def distinct(*shape):
    """Entries far apart (no ties): finite differences do not cross a reordering."""
    return (rng.permutation(int(np.prod(shape))) + rng.uniform(0.2, 0.8)).reshape(shape) / 3.0


# ---- the functions (the compiler reads their source) ---------------------------------------
def sort_vector(x):
    return np.sort(x)


def sort_last(x):
    return np.sort(x) * 2.0


def sort_rows(x):
    return np.sort(x, axis=0)


def sort_middle(x):
    return np.sort(x, axis=1)


def sort_flat(x):
    return np.sort(x, axis=None)


def sort_stable(x):
    return np.sort(x, axis=-1, kind="stable") + np.sort(x, kind="heapsort")


def top_k(x):
    return np.sort(x)[-3:]


def trimmed_mean(x):
    return np.mean(np.sort(x)[1:-1])


def take_argsorted(x):
    return np.take_along_axis(x, np.argsort(x, axis=0), axis=0)[:2]


def take_constant(x):
    return np.take_along_axis(x, TAKE, axis=1)


def take_flat(x):
    return np.take_along_axis(x, np.argsort(x, axis=None), axis=None) * np.arange(12.0)


def median_all(x):
    return np.median(x)


def median_rows(x):
    return np.median(x, axis=-1)


def median_kept(x):
    return np.median(x, axis=0, keepdims=True) * np.median(x, keepdims=True)


def quantile_one(x):
    return np.quantile(x, 0.3)


def quantile_many(x):
    return np.quantile(x, [0.25, 0.5, 1.0], axis=1, keepdims=True)


def percentile_columns(x):
    return np.percentile(x, 90.0, axis=0)


def sort_in_loop(x):
    total = 0.0
    for i in range(3):
        total = total + np.sort(x * (i + 1.0) - x[i])[-2]
    return total


VEC, MAT = (lambda: (distinct(5),)), (lambda: (distinct(3, 4),))
CUBE = lambda: (distinct(2, 3, 4),)  # noqa: E731
CASES = [(sort_vector, VEC), (sort_last, MAT), (sort_rows, MAT), (sort_middle, CUBE),
         (sort_flat, MAT), (sort_stable, MAT), (top_k, VEC), (trimmed_mean, VEC),
         (take_argsorted, MAT), (take_constant, MAT), (take_flat, MAT),
         (median_all, VEC), (median_all, MAT), (median_rows, MAT), (median_kept, CUBE),
         (quantile_one, VEC), (quantile_one, MAT), (quantile_many, MAT),
         (percentile_columns, MAT), (sort_in_loop, VEC)]
IDS = [f"{f.__name__}-{make()[0].ndim}d" for f, make in CASES]


def _cotangent(f, args):
    return np.random.default_rng(3).standard_normal(np.shape(f(*args)))


def on_tape(f, x, cotangent):
    leaf = tape.tensor(x, requires_grad=True)
    out = f(leaf)
    (g,) = tape.grad(out, [leaf], grad_outputs=np.asarray(cotangent, dtype=out.dtype))
    return out.detach().numpy(), g.numpy()


# ---- values and gradients -------------------------------------------------------------------
@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_value_is_numpys_and_gradients_are_numerical_and_the_tapes(f, make):
    (x,) = make()
    c = _cotangent(f, (x,))
    expected = f(x)
    value, tangent = ad.jvp(f)(x, tangents=np.ones_like(x))
    assert np.shape(value) == np.shape(expected)
    assert np.result_type(value) == np.result_type(expected)
    np.testing.assert_array_equal(value, expected)
    (compiled,) = ad.vjp(f, wrt=(0,))(x, cotangent=c)
    assert_matches_numerical(lambda a: np.sum(c * f(a)), (x,), (0,), (compiled,))
    taped_value, taped = on_tape(f, x, c)
    np.testing.assert_array_equal(taped_value, expected)
    np.testing.assert_array_equal(taped, compiled)
    # forward mode: <c, J 1> = <J^T c, 1>
    np.testing.assert_allclose(np.sum(c * tangent), np.sum(compiled), rtol=1e-12)


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_float32_stays_float32(f, make):
    (x,) = make()
    x = x.astype(np.float32)
    c = _cotangent(f, (x,)).astype(np.float32)
    (g,) = ad.vjp(f, wrt=(0,))(x, cotangent=c)
    assert g.dtype == np.float32
    assert np.result_type(ad.jvp(f)(x, tangents=np.ones_like(x))[0]) == np.result_type(f(x))
    np.testing.assert_array_equal(on_tape(f, x, c)[1], g)


def test_sort_routes_each_cotangent_to_where_its_value_came_from():
    x = np.array([0.5, -1.0, 2.0, 0.1])
    (g,) = ad.vjp(sort_vector, wrt=(0,))(x, cotangent=np.array([10.0, 20.0, 30.0, 40.0]))
    np.testing.assert_array_equal(g, [30.0, 10.0, 40.0, 20.0])
    np.testing.assert_array_equal(ad.grad(top_k_sum)(x), [1.0, 0.0, 1.0, 1.0])


def sort_of_list(x):
    return np.sort([x[1] * 2.0, x[0], 0.5])


def test_sort_of_a_list_of_traced_values():
    x = np.array([0.4, 0.1])
    value, g = ad.jvp(sort_of_list)(x, tangents=np.array([1.0, 10.0]))
    np.testing.assert_array_equal(value, [0.2, 0.4, 0.5])
    np.testing.assert_array_equal(g, [20.0, 1.0, 0.0])


def top_k_sum(x):
    return np.sum(np.sort(x)[-3:])


def test_ties_are_stable_and_the_tape_agrees():
    """At a tie the earlier entry takes the earlier place (kind='stable'), in both."""
    x = np.array([1.0, 1.0, 0.0, 1.0])
    c = np.array([1.0, 2.0, 3.0, 4.0])
    (g,) = ad.vjp(sort_vector, wrt=(0,))(x, cotangent=c)
    np.testing.assert_array_equal(g, [2.0, 3.0, 1.0, 4.0])
    np.testing.assert_array_equal(on_tape(sort_vector, x, c)[1], g)
    m = np.array([[2.0, 2.0, 1.0], [0.0, 0.0, 0.0]])
    for f in (median_rows, quantile_many, sort_rows, take_argsorted):
        c = _cotangent(f, (m,))
        np.testing.assert_array_equal(on_tape(f, m, c)[1], ad.vjp(f, wrt=(0,))(m, cotangent=c)[0])


def test_median_splits_an_even_count_and_takes_the_middle_of_an_odd_one():
    np.testing.assert_array_equal(ad.grad(median_all)(np.array([4.0, 1.0, 3.0, 2.0])),
                                  [0.0, 0.0, 0.5, 0.5])
    np.testing.assert_array_equal(ad.grad(median_all)(np.array([4.0, 1.0, 3.0])),
                                  [0.0, 0.0, 1.0])


def test_median_and_quantile_of_a_nan_are_nan_as_numpys():
    x = np.array([[1.0, np.nan, 2.0], [3.0, 1.0, 2.0]])
    for f in (median_rows, quantile_many):
        value, _ = ad.jvp(f)(x, tangents=np.ones_like(x))
        np.testing.assert_array_equal(value, f(x))
        np.testing.assert_array_equal(on_tape(f, x, np.ones(np.shape(f(x))))[0], f(x))


def median_of_ints(x, k):
    return np.median(k) * x


def test_median_of_integers_is_float64():
    k = np.array([3, 1, 4, 1])
    v, g = ad.value_and_grad(median_of_ints)(2.0, k)
    assert v == 2.0 * np.median(k) and g == np.median(k)


def squared_top(x):
    return np.sum(np.sort(x)[-3:] ** 2) + np.quantile(x, 0.5) ** 2


def test_second_order():
    x = np.array([0.3, -1.0, 2.0, 0.1, 1.1])
    h = ad.hessian(squared_top)(x)
    want = 2.0 * np.diag([1.0, 0.0, 1.0, 0.0, 1.0])
    want[0, 0] += 2.0   # the median, 0.3
    np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-15)


# ---- against PyTorch ------------------------------------------------------------------------
def test_against_torch():
    torch = pytest.importorskip("torch")
    x = distinct(3, 4)
    for f, reference in [
            (sort_rows, lambda t: torch.sort(t, dim=0).values),
            (top_k, lambda t: torch.sort(t, dim=-1).values[-3:]),
            (quantile_many, lambda t: torch.quantile(
                t, torch.tensor([0.25, 0.5, 1.0], dtype=t.dtype), dim=1, keepdim=True)),
            (median_rows, lambda t: torch.quantile(t, 0.5, dim=1)),
            (median_all, lambda t: torch.quantile(t, 0.5))]:
        c = _cotangent(f, (x,))
        t = torch.tensor(x, requires_grad=True)
        out = reference(t)
        out.backward(torch.tensor(c))
        np.testing.assert_allclose(f(x), out.detach().numpy(), rtol=1e-14)
        np.testing.assert_allclose(ad.vjp(f, wrt=(0,))(x, cotangent=c)[0], t.grad.numpy(),
                                   rtol=1e-12, atol=1e-15)


# ---- refused forms --------------------------------------------------------------------------
def sort_in_place(x):
    x.sort()
    return np.sum(x)


def sort_method(x):
    y = x.sort()
    return np.sum(y)


def traced_quantile(x):
    return np.quantile(x, x[0] / 10.0)


def nearest_quantile(x):
    return np.quantile(x, 0.5, method="nearest")


def quantile_out_of_range(x):
    return np.percentile(x, 120.0)


def median_of_axes(x):
    return np.median(x, axis=(0, 1))


def unknown_kind(x):
    return np.sort(x, kind="bogo")


def structured_order(x):
    return np.sort(x, order="f")


def axis_out_of_range(x):
    return np.sort(x, axis=2)


def empty_median(x):
    return np.median(x[:0])


REFUSED = [
    (sort_in_place, "`.sort()` writes into an array in place"),
    (sort_method, "`x.sort()` sorts the array in place, which is not supported"),
    (traced_quantile, "`np.quantile()` needs `q` as Python numbers"),
    (nearest_quantile, "`np.quantile()` with method='nearest' is not supported"),
    (quantile_out_of_range, "`np.percentile()` needs q in [0, 100], got 120.0"),
    (median_of_axes, "`np.median()` takes one axis (an int) or None; NumPy's tuple of axes"),
    (unknown_kind, "`np.sort()` with kind='bogo' is not NumPy's"),
    (structured_order, "`np.sort()` with `order=` (fields of a structured array)"),
    (empty_median, "`np.median()` of an empty axis is NaN in NumPy"),
    (axis_out_of_range, "`np.sort()` got axis 2 for an array of 2 dimensions"),
]


@pytest.mark.parametrize("f, message", REFUSED, ids=[f.__name__ for f, _ in REFUSED])
def test_refused_with_a_located_error(f, message):
    with pytest.raises(ad.CompileError, match=re.escape(message)) as err:
        ad.grad(f)(distinct(3, 4))
    assert f"test_sorting.py:{f.__code__.co_firstlineno + 1}:" in str(err.value)


def test_sort_hint_names_np_sort():
    with pytest.raises(ad.CompileError) as err:
        ad.grad(sort_method)(distinct(3, 4))
    assert "x = np.sort(x)" in err.value.hint


def test_the_tape_refuses_what_it_would_lose_a_gradient_on():
    x = tape.tensor(distinct(3, 4), requires_grad=True)
    with pytest.raises(TypeError, match=re.escape("np.median is not differentiable on the tape")):
        np.median(x, axis=(0, 1))
    with pytest.raises(TypeError, match=re.escape("np.quantile is not differentiable on the tape")):
        np.quantile(x, 0.5, method="nearest")
    order = np.argsort(x, axis=0)   # integers: run on the values, no gradient lost
    np.testing.assert_array_equal(order.numpy(), np.argsort(x.detach().numpy(), axis=0))


def sort_then_update(x):
    y = x * 1.0
    s = np.sort(y, axis=0)
    y[0, 0] = 5.0
    s[0] += 1.0
    return s * y


def test_the_sorted_array_is_a_copy_as_numpys():
    """Updating the original or the sorted array in place changes only that one."""
    x = distinct(3, 4)
    c = _cotangent(sort_then_update, (x,))
    (g,) = ad.vjp(sort_then_update, wrt=(0,))(x, cotangent=c)
    assert_matches_numerical(lambda a: np.sum(c * sort_then_update(a)), (x,), (0,), (g,))
    np.testing.assert_array_equal(on_tape(sort_then_update, x, c)[1], g)


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_the_tapes_forward_mode_is_the_compiled_jvp(f, make):
    (x,) = make()
    t = np.random.default_rng(2).standard_normal(x.shape)
    fw = tape.forward_ad
    with fw.dual_level():
        out = f(fw.make_dual(tape.tensor(x), tape.tensor(t)))
        tangent = fw.unpack_dual(out).tangent.numpy()
    np.testing.assert_array_equal(tangent, ad.jvp(f)(x, tangents=t)[1])
