"""NumPy functions of issue 29, part 4, that rearrange values or are products along chosen axes:
``np.rot90``, ``np.rollaxis``, ``np.gradient`` (uniform spacings, edge orders 1 and 2),
``np.cross`` with ``axisa``/``axisb``/``axisc``/``axis``, ``np.dot`` and ``np.trace`` of n-D
arrays, ``np.einsum``'s sublist form, ``np.r_``/``np.c_``, ``np.row_stack``, ``vstack``/
``hstack`` of one array, and ``np.real``/``imag``/``conj`` of real arrays. Each against finite
differences, forward mode against directional differences, the tape against the compiler
(``np.r_``/``np.c_`` compile only: NumPy converts the tape's tensors itself), the values and
shapes against NumPy; what stays refused is a located error."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import (assert_jvp_matches_differences, assert_located,
                           assert_tape_matches_compiled, check_grads)

RNG = np.random.default_rng(2029)
A = RNG.standard_normal((3, 4, 2))
B = RNG.standard_normal((4, 2, 3))     # np.dot(A, B): A's last axis with B's second-to-last
B_SUB = RNG.standard_normal((2, 4, 3))
V3 = RNG.standard_normal((3, 5))
V4 = RNG.standard_normal(4)


def w_like(y, seed):
    return np.random.default_rng(seed).standard_normal(np.shape(y))


W_ROT, W_ROT3, W_ROT2 = (w_like(np.rot90(A), 1), w_like(np.rot90(A, 3, axes=(2, 1)), 2),
                         w_like(A, 3))
W_ROLL, W_ROLL_END = w_like(np.rollaxis(A, 2), 4), w_like(np.rollaxis(A, 0, 3), 5)
W_DIFF, W_DIFF2 = w_like(A, 6), w_like(A, 7)
W_CROSS, W_CROSS_MIXED = w_like(V3.T, 8).T, w_like(V3, 9)
W_DOT, W_TRACE, W_SUB = w_like(np.dot(A, B), 10), w_like(np.trace(A, 1, 0, 1), 11), \
    w_like(np.ones((3, 3)), 12)
W_R, W_C, W_ROWS = w_like(np.ones(8), 13), w_like(np.ones((4, 3)), 14), w_like(np.ones((2, 4)), 15)
W_V, W_H, W_VV = w_like(np.vstack(A), 16), w_like(np.hstack(A), 17), w_like(np.vstack(V4), 18)


def rotated(a):
    return np.sum(np.rot90(a) * W_ROT)


def rotated_three_times_other_axes(a):
    return np.sum(np.rot90(a, 3, axes=(2, 1)) * W_ROT3)


def rotated_twice(a):
    return np.sum(np.rot90(a, k=-2, axes=(0, 2)) * W_ROT2)


def rolled(a):
    return np.sum(np.rollaxis(a, 2) * W_ROLL)


def rolled_to_the_end(a):
    return np.sum(np.rollaxis(a, 0, 3) ** 2 * W_ROLL_END)


def differenced(a):
    return np.sum(np.gradient(a, axis=1) * W_DIFF)


def differenced_everywhere(a):
    gx, gy = np.gradient(a, 0.5, 2.0, axis=(0, 1), edge_order=2)
    gz = np.gradient(a, 1.5)[2]
    return np.sum(gx * W_DIFF2 + gy ** 2 + np.sin(gz))


def crossed_along_axis_0(v):
    return np.sum(np.cross(v, v[::-1] * 2.0, axis=0) * W_CROSS)


def crossed_mixed_axes(v):
    return np.sum(np.cross(v, v.T[:, ::-1], axisa=0, axisc=0) * W_CROSS_MIXED)


def dotted(a):
    return np.sum(np.dot(a, B) * W_DOT)


def dotted_with_a_vector(a):
    return np.sum(np.dot(a, np.array([1.0, -2.0])) ** 2)


def traced(a):
    return np.sum(np.trace(a, 1, 0, 1) * W_TRACE)


def traced_last_axes(a):
    return np.sum(np.trace(a, 0, 2, 1) ** 2)


def summed_by_sublists(a):
    return np.sum(np.einsum(a, [0, 1, 2], B_SUB, [2, 1, 3], [0, 3]) * W_SUB)


def summed_by_sublists_implicitly(v):
    return np.einsum(v, [0, 1], v, [0, 1])


def joined_r(v):
    return np.sum(np.r_[v[:2], 0.5, 0:3, v[2:]] * W_R)


def joined_c(v):
    return np.sum(np.c_[v, v * 2.0, v.reshape(4, 1) ** 2] * W_C)


def stacked_rows(v):
    return np.sum(np.row_stack([v, v ** 2]) * W_ROWS)


def vstack_of_one(a):
    return np.sum(np.vstack(a) * W_V)


def hstack_of_one(a):
    return np.sum(np.hstack(a) * W_H)


def vstack_of_a_vector(v):
    return np.sum(np.vstack(v) * W_VV)


def hstack_of_a_matrix(v):
    return np.sum(np.hstack(v) ** 2)


def real_parts(v):
    return np.sum(np.real(v) * np.conj(v) + np.imag(v) + v.real * 2.0 - v.imag + v.conj() ** 3)


ARRAY_CASES = [rotated, rotated_three_times_other_axes, rotated_twice, rolled, rolled_to_the_end,
               differenced, differenced_everywhere, dotted, dotted_with_a_vector, traced,
               traced_last_axes, summed_by_sublists, vstack_of_one, hstack_of_one]
CASES = ([(f, (A,)) for f in ARRAY_CASES]
         + [(f, (V3,)) for f in (crossed_along_axis_0, crossed_mixed_axes,
                                 summed_by_sublists_implicitly, hstack_of_a_matrix)]
         + [(f, (V4,)) for f in (joined_r, joined_c, stacked_rows, vstack_of_a_vector,
                                 real_parts)])
IDS = [f.__name__ for f, _ in CASES]
NOT_TAPED = (joined_r, joined_c)


def numpys(f, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # np.row_stack
        return float(f(*args))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_gradient_against_finite_differences(f, args):
    value, _ = ad.value_and_grad(f)(*args)
    assert value == pytest.approx(numpys(f, args), rel=1e-12)
    check_grads(f, *args)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_forward_mode_against_directional_differences(f, args):
    assert_jvp_matches_differences(f, args, RNG.standard_normal(args[0].shape))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("f, args", [c for c in CASES if c[0] not in NOT_TAPED],
                         ids=[i for i, c in zip(IDS, CASES) if c[0] not in NOT_TAPED])
def test_the_tape_records_what_the_compiler_compiles(f, args):
    assert_tape_matches_compiled(f, args)


def rot90_value(a):
    return np.rot90(a, 1, axes=(1, 2))


def rollaxis_value(a):
    return np.rollaxis(a, 1, 3)


def trace_value(a):
    return np.trace(a, -1, 2, 0)


def r_value(v):
    return np.r_[v, 2, v[::2]]


def c_value(v):
    return np.c_[v, v]


def vstack_value(a):
    return np.vstack(a)


def hstack_value(a):
    return np.hstack(a)


def cross_value(v):
    return np.cross(v, v * v, axisa=0, axisb=0, axisc=0)


def einsum_value(a):
    return np.einsum(a, [Ellipsis, 0], B_SUB, [0, 1, 2], [Ellipsis, 2])


VALUE_CASES = [(rot90_value, A), (rollaxis_value, A), (trace_value, A), (r_value, V4),
               (c_value, V4), (vstack_value, A), (hstack_value, A), (cross_value, V3),
               (r_value, V4.astype(np.float32)), (rot90_value, A.astype(np.float32)),
               (einsum_value, A)]


@pytest.mark.parametrize("f, x", VALUE_CASES, ids=[f"{f.__name__}-{x.dtype}" for f, x in
                                                    VALUE_CASES])
def test_values_shapes_and_dtypes_are_numpys(f, x):
    value, tangent = ad.jvp(f)(x, tangents=np.ones_like(x))   # the compiled function's value
    want = f(x)
    assert value.shape == want.shape and value.dtype == want.dtype
    np.testing.assert_array_equal(value, want)
    assert tangent.shape == want.shape


def gradient_of_coordinates(a):
    return np.sum(np.gradient(a, np.array([0.0, 1.0, 3.0]), axis=0))


def r_with_a_directive(v):
    return np.sum(np.r_["0,2", v])


def trace_of_one_axis_twice(a):
    return np.trace(a, 0, 1, 1)


def test_refusals_are_located():
    for f, construct, words in (
            (gradient_of_coordinates, "np.gradient(a, np.array([0.0, 1.0, 3.0]), axis=0)",
             "uniform spacings"),
            (r_with_a_directive, 'np.r_["0,2", v]', "with a string directive"),
            (trace_of_one_axis_twice, "np.trace(a, 0, 1, 1)", "axis1 and axis2 cannot be")):
        with pytest.raises(ad.CompileError) as info:
            ad.grad(f)(A if f is not r_with_a_directive else V4)
        assert words in str(info.value), str(info.value)
        assert_located(info.value, f, 1, construct)
