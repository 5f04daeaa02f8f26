"""Frontend coverage: every construct of the foundation issue, checked against finite differences.

Each function below is compiled with ``adcompiler.grad`` (or ``value_and_grad``) and its gradient
compared with central differences in float64, including broadcasting and several inputs.
"""

import math
import math as pymath

import numpy
import numpy as np
import pytest
from numpy import exp as npexp

import adcompiler
from tests.helpers import assert_matches_numerical, check_grads, numerical_grad

rng = np.random.default_rng(0)


R2, R3, R4, R6, R12 = (np.arange(float(n)) for n in (2, 3, 4, 6, 12))
IDX, IDX_ROWS, IDX_COLS = np.array([0, 0, 3]), np.array([0, 2, 2]), np.array([1, 1, 1])


def pos(*shape):
    """Positive, distinct values (safe for log, sqrt, division; no ties for max/min)."""
    return rng.uniform(0.5, 1.5, size=shape)


def sym(*shape):
    """Values of both signs, away from zero (safe for abs and sign)."""
    return rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.3, 1.2, size=shape)


# ---- operators ------------------------------------------------------------------------------
def f_arith(x, y):
    return ((x + y) * x - y / (x + 2.0) - 3.0 * y).sum()


def f_power(x, y):
    return (x ** 3 + 2.0 ** x + x ** y + x ** 0.5).sum()


def f_matmul(a, b):
    return (a @ b).sum()


def f_negative(x, y):
    return (-x * y + -(y ** 2)).sum()


def f_compare_where(x, y):
    return np.where(x > y, x * y, y ** 2).sum() + np.where(x <= 1.0, x, 0.0).sum()


def f_compare_all(x, y):
    a = np.where(x >= y, x, y) + np.where(x < y, 2.0 * x, y)
    b = np.where(x == x, x, 0.0) + np.where(x != y, y, 0.0)
    return (a * b).sum()


OPERATORS = [
    (f_arith, (pos(3, 4), pos(4)), (0, 1)),
    (f_arith, (pos(3, 1), pos(1, 4)), (0, 1)),
    (f_arith, (1.3, pos(2, 3)), (0, 1)),
    (f_power, (pos(3), pos(3)), (0, 1)),
    (f_power, (pos(2, 3), pos(3)), (0, 1)),
    (f_matmul, (pos(3, 4), pos(4, 2)), (0, 1)),
    (f_matmul, (pos(4), pos(4, 2)), (0, 1)),
    (f_matmul, (pos(3, 4), pos(4)), (0, 1)),
    (f_matmul, (pos(4), pos(4)), (0, 1)),
    (f_matmul, (pos(2, 3, 4), pos(4, 5)), (0, 1)),
    (f_matmul, (pos(2, 3, 4), pos(1, 4, 5)), (0, 1)),
    (f_negative, (sym(3), sym(2, 3)), (0, 1)),
    (f_compare_where, (pos(3, 4), pos(4)), (0, 1)),
    (f_compare_all, (pos(5), pos(5)), (0, 1)),
]


@pytest.mark.parametrize("f, args, wrt", OPERATORS,
                         ids=[f"{f.__name__}-{i}" for i, (f, _, _) in enumerate(OPERATORS)])
def test_operators(f, args, wrt):
    check_grads(f, *args, wrt=wrt)


# ---- augmented assignment -------------------------------------------------------------------
def f_augmented(x, y):
    z = x * 1.0
    z += y
    z -= 0.5
    z *= x
    z /= 3.0
    z **= 2
    return z.sum()


def f_augmented_alias(x):
    y = x * 1.0
    z = y
    y *= 2.0
    return (z * y).sum()     # NumPy mutated the array z names too: z is 2x


def f_augmented_scalar(a):
    b = a
    a *= 3.0
    return a * b             # floats are immutable: b keeps the old a


def f_augmented_reduction(x):
    s = x.sum()
    t = s
    s *= 2.0
    return s * t             # x.sum() is a NumPy scalar, immutable: t keeps the old s


def f_augmented_matmul(x, w):
    y = x * 1.0
    y @= w
    return y.sum()


def f_augmented_broadcast(x, y):
    z = x * 1.0
    z *= y                   # (3, 4) *= (4,): the target keeps its shape
    return z.sum()


def f_augmented_parameter(x, y):
    x += y
    return (x * x).sum()


def test_augmented_assignment():
    check_grads(f_augmented, pos(3, 4), pos(4), wrt=(0, 1))
    check_grads(f_augmented_broadcast, pos(3, 4), pos(4), wrt=(0, 1))
    check_grads(f_augmented_parameter, pos(3), pos(3), wrt=(0, 1))
    check_grads(f_augmented_matmul, pos(2, 3), pos(3, 3), wrt=(0, 1))


def test_augmented_assignment_aliases_arrays_like_numpy():
    x = pos(4)
    (g,) = check_grads(f_augmented_alias, x)
    np.testing.assert_allclose(g, 8.0 * x)       # d/dx sum(2x * 2x)


def test_augmented_assignment_on_scalars_rebinds_only():
    (g,) = check_grads(f_augmented_scalar, 1.7)
    assert g == pytest.approx(6.0 * 1.7)         # d/da 3a * a
    x = pos(4)
    (g,) = check_grads(f_augmented_reduction, x)
    np.testing.assert_allclose(g, 4.0 * x.sum() * np.ones(4))   # d/dx 2 s^2


def f_augmented_float32(x, y):
    z = x * 1.0
    z *= y                   # float32 *= float64 stays float32, as in NumPy
    return z.sum()


def f_unary_plus_copies(x):
    y = x * 1.0
    z = +y                   # NumPy's +y is a new array: z does not see the update
    y *= 2.0
    return (z * y).sum()


def _double_in_place(v):
    v *= 2.0
    return v


def f_callee_mutates_caller(x):
    y = x * 1.0
    z = _double_in_place(y)  # the callee doubles the caller's array: y and z are both 2x
    return (y * z * x).sum()


def f_alias_in_tuple(x):
    y = x * 1.0
    t = (y, x)
    y *= 2.0
    a, b = t                 # the tuple holds the array object, which was updated
    return (a * b).sum()


def test_augmented_assignment_updates_every_alias():
    x = pos(3)
    np.testing.assert_allclose(check_grads(f_unary_plus_copies, x)[0], 4.0 * x)
    np.testing.assert_allclose(check_grads(f_callee_mutates_caller, x)[0], 12.0 * x ** 2)
    np.testing.assert_allclose(check_grads(f_alias_in_tuple, x)[0], 4.0 * x)


def f_alias_updated_in_loop(x):
    y = x * 1.0
    z = y
    for i in range(3):
        y *= 2.0             # NumPy doubles the one array that y and z name: z is 8x
    return (z * x).sum()


def test_augmented_assignment_in_a_loop_updates_aliases_or_is_rejected():
    x = pos(3)
    try:
        g = adcompiler.grad(f_alias_updated_in_loop)(x)
    except adcompiler.CompileError:
        return                                   # a located refusal is also right
    np.testing.assert_allclose(g, numerical_grad(f_alias_updated_in_loop, [x], 0), rtol=1e-6)


def test_augmented_assignment_keeps_the_target_dtype():
    x, y = pos(3).astype(np.float32), pos(3)
    gx, gy = adcompiler.grad(f_augmented_float32, wrt=(0, 1))(x, y)
    assert gx.dtype == np.float32 and gy.dtype == np.float64
    np.testing.assert_allclose(gx, y.astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(gy, x, rtol=1e-6)


# ---- NumPy elementwise functions ------------------------------------------------------------
def f_exp(x):
    return np.exp(x).sum()


def f_log(x):
    return np.log(x).sum()


def f_log1p(x):
    return np.log1p(x).sum()


def f_expm1(x):
    return np.expm1(x).sum()


def f_sqrt(x):
    return np.sqrt(x).sum()


def f_square(x):
    return np.square(x).sum()


def f_sin(x):
    return np.sin(x).sum()


def f_cos(x):
    return np.cos(x).sum()


def f_tan(x):
    return np.tan(x).sum()


def f_tanh(x):
    return np.tanh(x).sum()


def f_arctan(x):
    return np.arctan(x).sum()


def f_negative_fn(x):
    return np.negative(x).sum() * 2.0


def f_abs(x):
    return (np.abs(x) * x).sum()


def f_sign(x):
    return (np.sign(x) * x ** 2).sum()


def f_ufunc_binary(x, y):
    return (np.add(x, y) * np.subtract(x, y) + np.multiply(x, y) + np.divide(x, y)
            + np.power(x, y)).sum()


def f_maximum_minimum(x, y):
    return (np.maximum(x, y) * 2.0 + np.minimum(x, y) * 3.0).sum()


def f_maximum_scalar(x):
    return (np.maximum(x, 1.0) + np.minimum(0.8, x)).sum()


def f_clip(x):
    return (np.clip(x, 0.7, 1.2) * x).sum()


def f_clip_arrays(x, lo, hi):
    return np.clip(x, lo, hi).sum()


def f_where(c, x, y):
    return np.where(c, x, y * 2.0).sum()


ELEMENTWISE = [
    (f_exp, (pos(3, 2),)), (f_log, (pos(4),)), (f_log1p, (pos(4),)), (f_expm1, (pos(4),)),
    (f_sqrt, (pos(2, 2),)), (f_square, (sym(4),)), (f_sin, (sym(4),)), (f_cos, (sym(4),)),
    (f_tan, (sym(4),)), (f_tanh, (sym(4),)), (f_arctan, (sym(4),)), (f_negative_fn, (sym(3),)),
    (f_abs, (sym(5),)), (f_sign, (sym(5),)), (f_maximum_scalar, (pos(6),)), (f_clip, (pos(6),)),
]


@pytest.mark.parametrize("f, args", ELEMENTWISE, ids=[f.__name__ for f, _ in ELEMENTWISE])
def test_numpy_unary(f, args):
    check_grads(f, *args)


def test_numpy_binary_broadcasting():
    check_grads(f_ufunc_binary, pos(2, 3), pos(3), wrt=(0, 1))
    check_grads(f_maximum_minimum, pos(3, 4), pos(4), wrt=(0, 1))
    check_grads(f_maximum_minimum, pos(3, 1), pos(1, 4), wrt=("x", "y"))


def f_clip_one_sided(x):
    return (np.clip(x, None, 1.0) + np.clip(x, 0.8, None) * 2.0 + x.clip(0.7, 1.1) * 3.0
            + np.clip(x, a_min=0.9, a_max=1.2) * 4.0).sum()


def test_clip_one_sided_and_keywords():
    x = np.array([0.6, 0.75, 0.85, 0.95, 1.05, 1.15, 1.3])
    (g,) = check_grads(f_clip_one_sided, x)
    np.testing.assert_allclose(g, [1, 4, 6, 10, 9, 6, 2])


def test_clip_with_array_bounds():
    x = np.array([0.1, 0.5, 0.9, 1.3])
    check_grads(f_clip_arrays, x, np.full(4, 0.4), np.array([0.6, 0.6, 1.0, 1.0]),
                wrt=(0, 1, 2))


def test_where_with_a_boolean_array_input():
    c = np.array([True, False, True])
    gx, gy = check_grads(f_where, c, pos(2, 3), pos(3), wrt=(1, 2))
    np.testing.assert_allclose(gy, 2.0 * 2 * ~c)


# ---- reductions -----------------------------------------------------------------------------
def f_sum_axis(x):
    return (np.sum(x, axis=0) * np.sum(x, 1)[0]).sum()


def f_sum_keepdims(x):
    return (x / np.sum(x, axis=1, keepdims=True)).max()


def f_sum_positional_keepdims(x):
    return (x * np.sum(x, 1, None, None, True)).sum()


def f_sum_tuple_axis(x):
    return (np.sum(x, axis=(0, 2)) ** 2).sum()


def f_mean(x):
    return (np.mean(x, axis=-1) ** 2).sum() + np.mean(x)


def f_prod(x):
    return np.prod(x, axis=0).sum() + np.prod(x)


def f_max_min(x):
    return np.max(x, axis=1).sum() + np.min(x, 0, keepdims=True).sum() * np.max(x) - np.min(x)


def f_amax(x):
    return np.amax(x, axis=0).sum() + np.amin(x)


def f_reduction_signatures(x):
    a = np.max(x, 1, None, True) * np.sum(x, (0, 2), keepdims=True)
    b = x.max(axis=(0, 1)) + x.min(0).sum(0) + np.prod(x, -1, None, None, False).sum()
    return a.sum() + b.sum() + np.mean(x, axis=None)


REDUCTIONS = [
    (f_sum_axis, pos(3, 4)), (f_sum_keepdims, pos(3, 4)), (f_sum_tuple_axis, pos(2, 3, 4)),
    (f_mean, pos(3, 4)), (f_prod, pos(3, 4)), (f_max_min, pos(3, 4)), (f_amax, pos(3, 4)),
    (f_reduction_signatures, pos(2, 3, 4)),
]


@pytest.mark.parametrize("f, x", REDUCTIONS, ids=[f.__name__ for f, _ in REDUCTIONS])
def test_reductions(f, x):
    check_grads(f, x)


def test_reduction_positional_keepdims():
    check_grads(f_sum_positional_keepdims, pos(3, 4))


# ---- linear algebra and shapes --------------------------------------------------------------
def f_dot(a, b):
    return np.dot(a, b).sum()


def f_dot_scalar(a, x):
    return np.dot(a, x).sum()


def f_outer(a, b):
    return (np.outer(a, b) ** 2).sum()


def f_matmul_fn(a, b):
    return np.matmul(a, b).sum()


def f_transpose(x, w):
    return (np.transpose(x) @ w).sum() + (np.transpose(x, (1, 0)) ** 2).sum()


def f_transpose3(x):
    return (np.transpose(x, axes=(2, 0, 1)) * R4[:, None, None]).sum()


def f_reshape(x):
    return (np.reshape(x, (4, 3)) * R3).sum() + (np.reshape(x, -1) ** 2).sum()


def f_expand_squeeze(x, y):
    a = np.expand_dims(x, 1) * y             # (3, 1) * (4,) -> (3, 4)
    b = np.squeeze(np.expand_dims(x, axis=0), axis=0)
    return (a ** 2).sum() + (b * x).sum()


def f_broadcast_to(x):
    return (np.broadcast_to(x, (3, 4)) * R12.reshape(3, 4)).sum()


def f_concatenate(x, y):
    return (np.concatenate([x, y]) ** 2).sum() + (np.concatenate((x, y), axis=1) * 3.0).max()


def f_stack(x, y):
    return (np.stack([x, y]) ** 2).sum() + (np.stack((x, y), axis=-1) * R2).sum()


def f_creation(x):
    a = x + np.ones_like(x) * 2.0 + np.zeros_like(x)
    b = np.zeros(3) + np.ones((3,)) + np.full((3,), 2.5) + np.full(3, np.pi)
    c = np.ones((2, 3), dtype=np.float64) * x
    return (a * b).sum() + c.sum()


def f_full_of_a_float(a, x):
    return (np.full((2, 3), a) * x).sum()


def f_full_of_an_array(x):
    return (np.full((2, 3), x) * x).sum()


def test_full_with_a_traced_float():
    ga, gx = check_grads(f_full_of_a_float, 0.5, pos(2, 3), wrt=(0, 1))
    assert type(ga) is float


def test_full_with_an_array_fill_value():
    check_grads(f_full_of_an_array, pos(3))


def f_shapes_more(x):
    a = np.expand_dims(x, axis=(0, 2)) * R2                      # (1, 3, 1) * (2,)
    b = np.squeeze(x[None, :, None]) * np.concatenate([x, x], axis=-1)[:3]
    return (a ** 2).sum() + b.sum() + np.stack((x, x * 2.0), 1).sum()


def f_constants(x):
    return (x * np.pi + np.e * x ** 2 + math.pi - math.e).sum()


def f_newaxis(x, y):
    return (x[:, np.newaxis] * y[np.newaxis, :]).sum() + (x[None] ** 2).sum()


LINALG_SHAPES = [
    (f_dot, (pos(3, 4), pos(4, 2)), (0, 1)), (f_dot, (pos(4), pos(4)), (0, 1)),
    (f_dot, (pos(3, 4), pos(4)), (0, 1)), (f_dot, (pos(4), pos(4, 2)), (0, 1)),
    (f_dot_scalar, (1.5, pos(3)), (0, 1)),
    (f_outer, (pos(3), pos(4)), (0, 1)), (f_outer, (pos(2, 2), pos(3)), (0, 1)),
    (f_matmul_fn, (pos(2, 3, 4), pos(4, 2)), (0, 1)),
    (f_transpose, (pos(3, 4), pos(3, 2)), (0, 1)), (f_transpose3, (pos(2, 3, 4),), (0,)),
    (f_reshape, (pos(2, 6),), (0,)), (f_expand_squeeze, (pos(3), pos(4)), (0, 1)),
    (f_broadcast_to, (pos(4),), (0,)), (f_broadcast_to, (pos(3, 1),), (0,)),
    (f_concatenate, (pos(2, 3), pos(2, 3)), (0, 1)), (f_stack, (pos(3), pos(3)), (0, 1)),
    (f_creation, (pos(3),), (0,)), (f_constants, (pos(3),), (0,)),
    (f_newaxis, (pos(3), pos(4)), (0, 1)), (f_shapes_more, (pos(3),), (0,)),
]


@pytest.mark.parametrize("f, args, wrt", LINALG_SHAPES,
                         ids=[f"{f.__name__}-{i}" for i, (f, _, _) in enumerate(LINALG_SHAPES)])
def test_linalg_and_shapes(f, args, wrt):
    check_grads(f, *args, wrt=wrt)


# ---- the math module on Python floats -------------------------------------------------------
def f_math(a, b):
    return (math.exp(a) * math.log(b) + math.sqrt(b) * math.sin(a) + math.cos(b)
            + math.tan(a) * math.tanh(b) + math.pi * a + math.e * b)


def f_math_alias(a):
    return pymath.exp(a) * pymath.sin(a)


def test_math_on_python_floats():
    ga, gb = check_grads(f_math, 0.4, 1.3, wrt=(0, 1))
    assert type(ga) is float and type(gb) is float
    (g,) = check_grads(f_math_alias, 0.7)
    assert g == pytest.approx(math.exp(0.7) * (math.sin(0.7) + math.cos(0.7)))


def f_math_and_array(a, x):
    return (math.exp(a) * x).sum() + math.sqrt(a)


def test_math_float_times_array():
    ga, gx = check_grads(f_math_and_array, 0.3, pos(3), wrt=(0, 1))
    assert type(ga) is float


def f_math_of_numpy_scalar(y):
    v = np.tanh(math.sin(y)) * 1.5  # an np.float64, which math accepts as NumPy does
    return math.sin(v) * y + math.exp(np.sum(y * np.ones(2)))


def f_math_of_0d_array(x):
    return math.log1p(np.sum(x * x)) * np.sum(x)


def test_math_of_numpy_scalars_and_0d_arrays():
    (g,) = check_grads(f_math_of_numpy_scalar, 0.7)
    assert type(g) is float
    v = np.tanh(math.sin(0.7)) * 1.5
    dv = 1.5 * (1 - np.tanh(math.sin(0.7)) ** 2) * math.cos(0.7)
    want = math.cos(v) * dv * 0.7 + math.sin(v) + 2 * math.exp(1.4)
    assert g == pytest.approx(want)
    x = np.array([0.3, -0.8])
    (gx,) = check_grads(f_math_of_0d_array, x)
    s = float(np.sum(x * x))
    assert gx == pytest.approx(np.full(2, math.log1p(s)) + 2 * x * x.sum() / (1 + s))


# ---- constructors of known arguments, flattening ------------------------------------------
TRIANGLE = np.triu(np.ones((3, 3)))


def f_constant_arrays(x):
    w = np.linspace(0.0, 1.0, x.shape[0]) * np.arange(x.shape[0])
    return np.sum(x * w) + np.sum(np.eye(3) @ x[:3]) + np.sum(np.tril(TRIANGLE) @ x[:3] ** 2)


def f_flat_views(x):
    y = x.reshape(2, 2) * 1.5
    return np.sum(np.ravel(y) * y.flatten() * x) + np.sum(y.view() ** 3) + np.sum(y.ravel()[1:])


def f_write_through_flatten(x):
    y = x * 2.0
    v = y.flatten()          # a copy: writing it leaves y alone
    v[0] = 5.0
    w = y.view()             # the same array: writing it changes y
    w[1] = 0.5
    return np.sum(y * v)


def f_triu_of_input(x):
    return np.sum(np.triu(x))


def f_vander_of_input(x):
    return np.sum(np.vander(x, 2))


def test_constructors_of_known_arguments_are_computed_while_compiling():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    (g,) = check_grads(f_constant_arrays, x)
    lower = np.tril(TRIANGLE).sum(axis=0)
    want = np.linspace(0, 1, 4) * np.arange(4) + np.r_[1.0, 1.0, 1.0, 0.0]
    want[:3] += 2 * x[:3] * lower
    np.testing.assert_allclose(g, want, rtol=1e-12)
    (g,) = check_grads(f_triu_of_input, np.ones((3, 3)))   # np.where(triu_mask, x, 0)
    np.testing.assert_array_equal(g, np.triu(np.ones((3, 3))))
    (g,) = check_grads(f_vander_of_input, np.array([0.5, 2.0, -1.0]))   # [x, 1] per row
    np.testing.assert_array_equal(g, np.ones(3))


def test_ravel_flatten_and_view():
    x = np.array([0.5, -1.0, 2.0, 1.5])
    (g,) = check_grads(f_flat_views, x)
    y = 1.5 * x
    want = 2 * 1.5 * y * x + y * y + 3 * 1.5 * y ** 2 + np.r_[0.0, 1.5, 1.5, 1.5]
    np.testing.assert_allclose(g, want, rtol=1e-12)
    (g,) = check_grads(f_write_through_flatten, x)
    # sum(y * v) = 10 x0 + x1 + 4 x2^2 + 4 x3^2: v kept y's old x1 term, y lost it
    np.testing.assert_allclose(g, [10.0, 1.0, 8 * x[2], 8 * x[3]], rtol=1e-12)


# ---- array methods and attributes -----------------------------------------------------------
def f_attrs(x):
    n = x.shape[0] * x.ndim + x.size + len(x)
    return (x.T * n).sum() / x.size


def f_method_reductions(x):
    return x.sum(axis=0).sum() + x.mean() * x.max() - x.min(axis=1).sum() + x.sum(1).max()


def f_method_keepdims(x):
    return (x / x.max(axis=1, keepdims=True) + x.mean(0, keepdims=True)).sum()


def f_method_reshape(x):
    a = x.reshape((3, 4)) * R4
    b = x.reshape(4, 3) * R3
    c = x.reshape(x.shape[0], -1)
    return a.sum() + (b ** 2).sum() + (c ** 3).sum()


def f_method_transpose(x):
    a = x.transpose()
    b = x.transpose(1, 2, 0)
    c = x.transpose((2, 1, 0))
    return (a ** 2).sum() + (b * R2).sum() + (c * R4[:, None, None]).sum()


def f_method_dot(x, w):
    return x.dot(w).sum()


def f_method_copy(x):
    y = x.copy()
    return (y * x).sum()


def f_method_astype(x):
    return (x.astype(np.float32) * 2.0).sum() + x.astype(np.float64).sum()


def f_method_astype_float64(x):
    return (x.astype(np.float64) ** 2).sum()


METHODS = [
    (f_attrs, (pos(3, 4),), (0,)), (f_method_reductions, (pos(3, 4),), (0,)),
    (f_method_keepdims, (pos(3, 4),), (0,)), (f_method_reshape, (pos(2, 6),), (0,)),
    (f_method_transpose, (pos(2, 3, 4),), (0,)), (f_method_dot, (pos(2, 3), pos(3, 4)), (0, 1)),
    (f_method_dot, (pos(3), pos(3)), (0, 1)), (f_method_copy, (pos(3),), (0,)),
    (f_method_astype_float64, (pos(3),), (0,)),
]


@pytest.mark.parametrize("f, args, wrt", METHODS,
                         ids=[f"{f.__name__}-{i}" for i, (f, _, _) in enumerate(METHODS)])
def test_methods_and_attributes(f, args, wrt):
    check_grads(f, *args, wrt=wrt)


def test_astype_float32_then_back():
    g = adcompiler.grad(f_method_astype)(pos(3))    # too coarse for finite differences
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, [3.0, 3.0, 3.0])


def f_astype_to_float32_input(x):
    return (x.astype(np.float64) ** 2).sum()


def test_astype_of_float32_input():
    x = pos(3).astype(np.float32)
    g = adcompiler.grad(f_astype_to_float32_input)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2.0 * x, rtol=1e-6)


# ---- reading by index -----------------------------------------------------------------------
def f_slices(x):
    return (x[1:] * x[:-1]).sum() + (x[::-1] * R6).sum() + (x[::-2] ** 2).sum()


def f_integer_index(x):
    return x[2] * x[-1] + x[0] ** 2


def f_int_array_index(x):
    return (x[IDX] * (R3 + 1.0)).sum()


def f_list_index(x):
    return (x[[1, 1, 1, 2]] ** 2).sum()


def f_index_param(x, idx):
    return (x[idx] * R4).sum()


def f_multi_dim(x):
    return ((x[:, 1:] ** 2).sum() + (x[..., 0] * 3.0).sum() + (x[1, :] * x[0]).sum()
            + (x[1:3, ::2] ** 3).sum() + (x[-1, ::-1] * x[0, ::-1]).sum())


def f_newaxis_index(x):
    return (x[None, :, np.newaxis] * R2).sum() + (x[:, None] * x).sum()


def f_2d_int_arrays(x):
    rows, cols = IDX_ROWS, IDX_COLS
    return (x[rows, cols] ** 2).sum() + x[rows][:, 0].sum()


def f_ellipsis(x):
    return (x[..., ::-1] * R4).sum() + (x[0, ..., 1] ** 2).sum()


def test_index_slices_and_negative_steps():
    check_grads(f_slices, pos(6))


def test_index_integers():
    x = pos(5)
    (g,) = check_grads(f_integer_index, x)
    np.testing.assert_allclose(g, [2 * x[0], 0, x[4], 0, x[2]])


def test_index_integer_arrays_accumulate():
    x = pos(5)
    (g,) = check_grads(f_int_array_index, x)
    np.testing.assert_allclose(g, [3.0, 0.0, 0.0, 3.0, 0.0])
    (g,) = check_grads(f_list_index, x)
    np.testing.assert_allclose(g, [0, 6 * x[1], 2 * x[2], 0, 0])


def test_index_with_an_integer_array_argument():
    x, idx = pos(5), np.array([4, 4, 0, 4])
    (g,) = check_grads(f_index_param, x, idx)
    np.testing.assert_allclose(g, [2.0, 0, 0, 0, 4.0])


def test_index_multi_dim():
    check_grads(f_multi_dim, pos(3, 4))
    check_grads(f_multi_dim, pos(2, 3, 4))
    check_grads(f_newaxis_index, pos(3))
    check_grads(f_2d_int_arrays, pos(3, 4))
    check_grads(f_ellipsis, pos(2, 3, 4))


# ---- tuples, inlined calls, closures, globals -----------------------------------------------
def f_tuples(x, y):
    a, b = x * 2.0, y + 1.0
    t = (a, b)
    (c, d) = t
    [e, f] = [d, c]
    return (c * d).sum() + (e * f).sum()


def _pair(v):
    return v * 2.0, v ** 2


def f_tuple_from_call(x):
    p, q = _pair(x)
    return (p * q).sum()


def _scale(v, k=2.0, shift=0.0):
    return v * k + shift


def _nested(v, w):
    return _scale(v, shift=w) * _scale(w, 3.0)


def f_inline_defaults(x, y):
    return (_scale(x) + _scale(x, 0.5) + _scale(v=x, shift=y) + _nested(x, y)).sum()


def _identity(v):
    return v


def f_inline_alias(x):
    y = x * 1.0
    z = _identity(y)
    y *= 3.0
    return (z * x).sum()     # z is the same array as y: it sees the update


def f_list_operands(x):
    return (x * [1.0, 2.0, 3.0] + (0.5, 0.5, 0.5)).sum()


def test_lists_and_tuples_of_numbers_are_arrays():
    (g,) = check_grads(f_list_operands, pos(2, 3))
    np.testing.assert_allclose(g, np.broadcast_to([1.0, 2.0, 3.0], (2, 3)))


def test_tuple_packing_and_unpacking():
    check_grads(f_tuples, pos(3), pos(3), wrt=(0, 1))
    check_grads(f_tuple_from_call, pos(4))


def test_inlined_calls_with_keywords_and_defaults():
    check_grads(f_inline_defaults, pos(3), pos(3), wrt=(0, 1))
    x = pos(3)
    (g,) = check_grads(f_inline_alias, x)
    np.testing.assert_allclose(g, 6.0 * x)


W = rng.uniform(0.5, 1.5, size=(3, 2))
SCALE = 0.75


def f_globals(x):
    return ((x @ W) * SCALE).sum()


def make_closure(c, offset):
    def f_closure(x):
        return ((x - offset) * c).sum()
    return f_closure


def test_constants_from_globals_and_closures():
    x = pos(4, 3)
    (g,) = check_grads(f_globals, x)
    np.testing.assert_allclose(g, np.broadcast_to(W.sum(axis=1) * SCALE, (4, 3)))
    c = pos(3)
    (g,) = check_grads(make_closure(c, 0.25), pos(2, 3))
    np.testing.assert_allclose(g, np.broadcast_to(c, (2, 3)))


class Model:
    @staticmethod
    def loss(x, w):
        """A method's source is indented, and this docstring
is not: the lines must keep their own columns."""
        return np.tanh(x @ w).sum()


def test_functions_defined_inside_a_class():
    check_grads(Model.loss, pos(2, 3), pos(3, 2), wrt=(0, 1))


def f_import_aliases(x):
    return (numpy.tanh(x) + npexp(x) + pymath.pi * np.sin(x)).sum()


def test_import_aliases():
    check_grads(f_import_aliases, pos(3))


# ---- argument kinds -------------------------------------------------------------------------
def f_static_int(x, n):
    return (x[:n] ** n).sum() + np.sum(x.reshape(2, 2), axis=n - 2)[0]


def test_integer_inputs_are_static():
    x = pos(4)
    g2 = check_grads(f_static_int, x, 2)[0]
    g3 = check_grads(f_static_int, x, 3)[0]
    assert not np.allclose(g2, g3)


def f_two_inputs(x, w):
    return np.tanh(x @ w).sum()


def test_gradients_with_respect_to_several_inputs_by_name_and_position():
    x, w = pos(2, 3), pos(3, 4)
    by_name = adcompiler.grad(f_two_inputs, wrt=("w", "x"))(x, w)
    by_pos = adcompiler.grad(f_two_inputs, wrt=(1, 0))(x, w)
    np.testing.assert_allclose(by_name[0], numerical_grad(f_two_inputs, [x, w], 1), rtol=1e-6)
    np.testing.assert_allclose(by_name[1], numerical_grad(f_two_inputs, [x, w], 0), rtol=1e-6)
    for a, b in zip(by_name, by_pos):
        np.testing.assert_array_equal(a, b)
    single = adcompiler.grad(f_two_inputs, wrt="w")(x, w)
    np.testing.assert_array_equal(single, by_name[0])
    default = adcompiler.grad(f_two_inputs)(x, w)
    np.testing.assert_array_equal(default, by_name[1])


def test_float32_inputs_give_float32_gradients():
    x, w = pos(2, 3).astype(np.float32), pos(3, 4).astype(np.float32)
    gx, gw = adcompiler.grad(f_two_inputs, wrt=(0, 1))(x, w)
    assert gx.dtype == np.float32 and gw.dtype == np.float32
    assert_matches_numerical(f_two_inputs, [x, w], (0, 1), (gx, gw), rtol=1e-4, atol=1e-5)


def f_python_float(a, x):
    return a * (x ** 2).sum() + a ** 2


def test_python_float_inputs_give_python_float_gradients():
    x = pos(3)
    ga, gx = check_grads(f_python_float, 1.5, x, wrt=(0, 1))
    assert type(ga) is float
    assert ga == pytest.approx((x ** 2).sum() + 3.0)


def test_value_and_grad():
    x, w = pos(2, 3), pos(3, 4)
    value, (gx, gw) = adcompiler.value_and_grad(f_two_inputs, wrt=(0, 1))(x, w)
    assert value == pytest.approx(f_two_inputs(x, w))
    np.testing.assert_allclose(gx, numerical_grad(f_two_inputs, [x, w], 0), rtol=1e-6)
    np.testing.assert_allclose(gw, numerical_grad(f_two_inputs, [x, w], 1), rtol=1e-6)
    value, ga = adcompiler.value_and_grad(f_math)(0.4, 1.3)
    assert value == pytest.approx(f_math(0.4, 1.3))
    assert type(ga) is float and ga == pytest.approx(numerical_grad(f_math, [0.4, 1.3], 0))


def f_unused_input(x, y):
    return (x ** 2).sum()


def test_gradient_of_an_unused_input_is_zero():
    gx, gy = adcompiler.grad(f_unused_input, wrt=(0, 1))(pos(3), pos(2, 2))
    np.testing.assert_array_equal(gy, np.zeros((2, 2)))
    ga = adcompiler.grad(f_python_float_unused, wrt=1)(pos(2), 1.0)
    assert type(ga) is float and ga == 0.0


def f_python_float_unused(x, a):
    return x.sum()
