"""np.linalg.solve, inv, det and slogdet in compiled code: gradients against finite differences
and the dynamic tape (vector and matrix right-hand sides, stacks of matrices, a loop), values,
jvp, a Hessian through the rules, float32 kept, the CuPy spelling, and located refusals."""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from adcompiler.errors import CompileError
from tests.helpers import (assert_matches_numerical, check_grads, directional_difference,
                           numerical_grad)

RNG = np.random.default_rng(16)
WEIGHTS = RNG.standard_normal((3, 3))


def well_conditioned(*shape):
    """Matrices ``3 I + noise``: far from singular."""
    n = shape[-1]
    return 3.0 * np.eye(n) + 0.5 * RNG.standard_normal(shape)


def solve_vector(A, b):
    return np.sum(np.linalg.solve(A, b) ** 2)


def solve_matrix(A, B):
    return np.sum(np.sin(np.linalg.solve(A, B)))


def solve_then_ops(A, b):
    x = np.linalg.solve(A @ A.T + np.eye(3), b * 2.0)
    return np.sum(np.tanh(x) * b) + x[0]


def solve_in_loop(A, x):
    for i in range(3):
        x = np.tanh(np.linalg.solve(A, x)) + 0.1 * x
    return np.sum(x * x)


def inverse(A):
    return np.sum(np.linalg.inv(A) * WEIGHTS)


def determinant(A):
    return np.linalg.det(A) ** 2 + np.linalg.det(A * 0.5)


def log_determinant(A):
    sign, logdet = np.linalg.slogdet(A)
    return sign * logdet + np.linalg.slogdet(A)[1] * 0.5 + np.linalg.slogdet(A).logabsdet


def all_four(A, b):
    x = np.linalg.solve(A, b)
    return np.sum(x * (np.linalg.inv(A) @ b)) + np.linalg.det(A) - np.linalg.slogdet(A)[1]


def stacked(A, B):
    return np.sum(np.linalg.solve(A, B) ** 2) + np.sum(np.linalg.det(A)) \
        + np.sum(np.linalg.inv(A)[:, 0]) + np.sum(np.linalg.slogdet(A)[1])


def stack_and_vector(A, b):
    return np.sum(np.cos(np.linalg.solve(A, b)))


def broadcast_matrix(A, B):
    return np.sum(np.linalg.solve(A, B) ** 2)


FIXED = 3.0 * np.eye(3) + 0.1


def constants_and_lists(A, b):
    x = np.linalg.solve(FIXED, b) + np.linalg.solve(A, [1.0, 2.0, 3.0])
    return np.sum(x * x) + np.linalg.det(np.stack([b[:2], b[1:]]))


def in_while_and_branch(A, x):
    k = 0
    while k < 3:
        x = np.linalg.solve(A, x) + x
        k += 1
    if np.linalg.det(A) > 0:
        x = np.linalg.inv(A) @ x
    return np.sum(x * x)


CASES = [
    (solve_vector, lambda: (well_conditioned(3, 3), RNG.standard_normal(3))),
    (solve_matrix, lambda: (well_conditioned(4, 4), RNG.standard_normal((4, 2)))),
    (solve_then_ops, lambda: (RNG.standard_normal((3, 3)), RNG.standard_normal(3))),
    (solve_in_loop, lambda: (well_conditioned(3, 3), RNG.standard_normal(3))),
    (inverse, lambda: (well_conditioned(3, 3),)),
    (determinant, lambda: (well_conditioned(2, 2),)),
    (determinant, lambda: (well_conditioned(4, 4),)),
    (log_determinant, lambda: (well_conditioned(3, 3) - 6.0 * np.eye(3),)),  # det < 0
    (all_four, lambda: (well_conditioned(3, 3), RNG.standard_normal(3))),
    (stacked, lambda: (well_conditioned(2, 3, 3), RNG.standard_normal((2, 3, 2)))),
    (stack_and_vector, lambda: (well_conditioned(2, 3, 3), RNG.standard_normal(3))),
    (broadcast_matrix, lambda: (well_conditioned(3, 3), RNG.standard_normal((2, 3, 2)))),
    (broadcast_matrix, lambda: (well_conditioned(2, 3, 3), RNG.standard_normal((1, 3, 2)))),
    (constants_and_lists, lambda: (well_conditioned(3, 3), RNG.standard_normal(3))),
    (in_while_and_branch, lambda: (well_conditioned(3, 3), RNG.standard_normal(3))),
]
IDS = [f"{f.__name__}-{'x'.join(map(str, make()[0].shape))}" for f, make in CASES]


def _wrt(args):
    return tuple(range(len(args)))


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_gradient_matches_finite_differences_and_tape(f, make):
    args = make()
    grads = check_grads(f, *args, wrt=_wrt(args), rtol=1e-6, atol=1e-8)
    taped = tape.dynamic_grad(f, wrt=_wrt(args))(*args)
    for got, want in zip(taped, grads):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_value_and_grad(f, make):
    args = make()
    value, grads = ad.value_and_grad(f, wrt=_wrt(args))(*args)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12)
    assert_matches_numerical(f, args, _wrt(args), grads, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_jvp_matches_directional_difference(f, make):
    args = make()
    tangents = tuple(RNG.standard_normal(np.shape(a)) for a in args)
    value, dot = ad.jvp(f, wrt=_wrt(args))(*args, tangents=tangents)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12)
    np.testing.assert_allclose(dot, directional_difference(f, args, tangents), rtol=1e-6,
                               atol=1e-8)


def solved(A, b):
    return np.linalg.solve(A, b)


def inverted(A):
    return np.linalg.inv(A)


@pytest.mark.parametrize("f, args", [
    (solved, (well_conditioned(3, 3), RNG.standard_normal((3, 2)))),
    (solved, (well_conditioned(2, 3, 3), RNG.standard_normal(3))),
    (inverted, (well_conditioned(3, 3),)),
], ids=["solve", "solve-stack-vector", "inv"])
def test_vjp_of_array_results(f, args):
    c = RNG.standard_normal(np.shape(f(*args)))
    compiled = ad.vjp(f, wrt=_wrt(args))(*args, cotangent=c)
    assert_matches_numerical(lambda *a: np.sum(c * f(*a)), args, _wrt(args), compiled,
                             rtol=1e-6, atol=1e-8)


def det_squared(A):
    return np.linalg.det(A) ** 2


def logdet_plus(A):
    return np.linalg.slogdet(A)[1] + np.sum(np.linalg.solve(A, np.ones(2)))


def stack_and_vector_mix(A, b):
    return np.sum(np.cos(np.linalg.solve(A, b))) + np.sum(np.linalg.slogdet(A)[1]) \
        + np.sum(np.linalg.det(A) ** 2)


@pytest.mark.parametrize("f, args", [
    (det_squared, (well_conditioned(2, 2),)),
    (logdet_plus, (well_conditioned(2, 2),)),
    (stack_and_vector_mix, (well_conditioned(2, 2, 2), RNG.standard_normal(2))),
], ids=["det", "logdet-solve", "stack-vector"])
def test_hessian_through_the_rules(f, args):
    """Forward over reverse: the tangent rules of what the adjoint rules emit."""
    A, rest = args[0], args[1:]
    hessian = ad.hessian(f, wrt=0)(*args)
    gradient = ad.grad(f, wrt=0)
    expected = np.zeros(A.shape + A.shape)
    for i in np.ndindex(A.shape):
        step = np.zeros(A.shape)
        step[i] = 1e-5
        expected[(...,) + i] = (gradient(A + step, *rest) - gradient(A - step, *rest)) / 2e-5
    assert hessian.shape == A.shape + A.shape
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-7)
    flat = hessian.reshape(A.size, A.size)
    np.testing.assert_allclose(flat, flat.T, rtol=1e-8, atol=1e-10)   # symmetric


@pytest.mark.parametrize("f, make", CASES[:10], ids=IDS[:10])
def test_float32_gradients_stay_float32(f, make):
    args = tuple(a.astype(np.float32) for a in make())
    grads = ad.grad(f, wrt=_wrt(args))(*args)
    expected = ad.grad(f, wrt=_wrt(args))(*[a.astype(np.float64) for a in args])
    for g, want in zip(grads, expected):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, want, rtol=2e-3, atol=2e-4)


def test_against_torch():
    torch = pytest.importorskip("torch")
    A, b = well_conditioned(3, 3), RNG.standard_normal(3)
    got = ad.grad(all_four, wrt=(0, 1))(A, b)
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (A, b))
    x = torch.linalg.solve(ta, tb)
    out = torch.sum(x * (torch.linalg.inv(ta) @ tb)) + torch.linalg.det(ta) \
        - torch.linalg.slogdet(ta)[1]
    out.backward()
    np.testing.assert_allclose(got[0], ta.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(got[1], tb.grad.numpy(), rtol=1e-10)


def test_generated_code_reuses_the_forward_result():
    source = ad.grad(solve_vector, wrt=(0, 1)).specialize(well_conditioned(3, 3),
                                                          np.ones(3)).source
    code = [line for line in source.splitlines() if not line.strip().startswith("#")]
    assert sum("np.linalg.solve(" in line for line in code) == 2   # x, and one with A.T
    assert any("np.outer(" in line for line in code)


def test_cupy_spelling():
    from tests.cupy_helpers import compile_both, emulate
    args = (well_conditioned(3, 3), RNG.standard_normal(3))
    on_device, _ = compile_both(all_four, args, wrt=(0, 1))
    for name in ("cp.linalg.solve(", "cp.linalg.inv(", "cp.linalg.det("):
        assert name in on_device.source
    got = emulate(on_device)(*args)
    for g, want in zip(got, ad.grad(all_four, wrt=(0, 1))(*args)):
        np.testing.assert_allclose(g, want, rtol=1e-12)


def traced_entries(x, y):
    """Lists holding traced numbers (compiled only: NumPy converts a list without dispatching,
    so the tape cannot record one, as the tape reference says of np.array([t0, t1]))."""
    return np.linalg.det([[x, 1.0], [2.0, y]]) + np.linalg.solve([[x, 0.0], [0.0, 2.0]],
                                                                 [1.0, y])[1]


def test_matrices_of_traced_numbers():
    assert ad.grad(traced_entries, wrt=(0, 1))(3.0, 4.0) == pytest.approx((4.0, 3.5), rel=1e-14)


def singular(A, b):
    return np.sum(np.linalg.solve(A, b))


def test_singular_matrix_raises_numpys_error():
    """In solve's forward, as NumPy; in det's gradient, which inverts the matrix."""
    with pytest.raises(np.linalg.LinAlgError):
        ad.grad(singular)(np.ones((3, 3)), np.ones(3))
    with pytest.raises(np.linalg.LinAlgError):
        ad.grad(not_square)(np.ones((3, 3)))


def not_square(A):
    return np.linalg.det(A)


def ambiguous(A, b):
    return np.sum(np.linalg.solve(A, b))


def rows_differ(A, b):
    return np.sum(np.linalg.solve(A, b))


@pytest.mark.parametrize("f, args, message", [
    (not_square, (np.ones((2, 3)),), "needs a square matrix (..., n, n), but `a` has shape "
                                     "(2, 3)"),
    (ambiguous, (well_conditioned(2, 3, 3), np.ones((2, 3))), "is ambiguous: NumPy 1 reads"),
    (rows_differ, (well_conditioned(3, 3), np.ones(4)), "needs `b` of shape (3,) or (..., 3, k)"),
])
def test_located_refusals(f, args, message):
    with pytest.raises(CompileError) as info:
        ad.grad(f)(*args)
    err = info.value
    assert message in str(err)
    assert (err.filename, err.lineno) == (__file__, f.__code__.co_firstlineno + 1)


def test_the_sign_of_slogdet_carries_no_gradient():
    """The sign carries no gradient: sign * logdet differentiates as the sign times logdet's."""
    A = well_conditioned(3, 3) - 6.0 * np.eye(3)
    sign = np.linalg.slogdet(A)[0]
    np.testing.assert_allclose(ad.grad(log_determinant)(A),
                               numerical_grad(log_determinant, [A], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ad.grad(log_determinant)(A),
                               (sign + 1.5) * np.linalg.inv(A).T, rtol=1e-10)


def stack_and_one_matrix(A, b):
    return np.sum(np.linalg.solve(A, b) ** 2)


def test_a_b_of_one_dimension_fewer_that_numpy_1_could_not_read_is_numpy_2s_matrix():
    """(2, 3, 3) with b (3, 2): NumPy 1 raises (b's rows are not vectors of 3), so only NumPy 2's
    reading, one (3, 2) matrix for every matrix of the stack, applies: not refused."""
    A, b = well_conditioned(2, 3, 3), np.arange(6.0).reshape(3, 2) - 2.0
    grads = ad.grad(stack_and_one_matrix, wrt=(0, 1))(A, b)
    assert_matches_numerical(stack_and_one_matrix, (A, b), (0, 1), grads)
    for got, want in zip(grads, tape.dynamic_grad(stack_and_one_matrix, wrt=(0, 1))(A, b)):
        np.testing.assert_allclose(got, want, rtol=1e-10)
