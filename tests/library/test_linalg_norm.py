"""np.linalg.norm in compiled code: NumPy's values for the vector and matrix norms that are
sums and maxima over entries, gradients against finite differences (and PyTorch where it is
installed), 0 at the zero vector as in PyTorch, the singular-value norms (ord=2, -2, 'nuc')
by svd's rules, and a located refusal for an ord NumPy does not take."""

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import numerical_grad


def two(x):
    return np.linalg.norm(x)


def one(x):
    return np.linalg.norm(x, 1)


def largest(x):
    return np.linalg.norm(x, np.inf)


def three(x):
    return np.linalg.norm(x, ord=3)


def row_norms_cubed(X):
    return np.sum(np.linalg.norm(X, axis=1) ** 3)


def normalised(X):
    return np.sum(np.linalg.norm(X, axis=-1, keepdims=True) * X)


def frobenius(X):
    return np.linalg.norm(X, "fro")


def column_sums(X):
    return np.linalg.norm(X, 1)


def smallest_row_sum(X):
    return np.linalg.norm(X, -np.inf)


def spectral(X):
    return np.linalg.norm(X, 2)


def nuclear(X):
    return np.linalg.norm(X, "nuc")


def smallest_singular_per_matrix(X):
    return np.sum(np.linalg.norm(X, -2, axis=(0, 2), keepdims=True) ** 2)


def flattened(X):
    return np.linalg.norm(X)


def of_ints(x, k):
    return x * np.linalg.norm(k)


RNG = np.random.default_rng(0)
VEC, MAT, CUBE = RNG.standard_normal(5), RNG.standard_normal((4, 3)), RNG.standard_normal((2, 3, 2))
CASES = [(two, VEC), (one, VEC), (largest, VEC), (three, VEC), (row_norms_cubed, MAT),
         (normalised, MAT), (frobenius, MAT), (column_sums, MAT), (smallest_row_sum, MAT),
         (flattened, CUBE), (spectral, MAT), (nuclear, MAT), (smallest_singular_per_matrix, CUBE)]


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_value_and_gradient(f, x):
    value, g = ad.value_and_grad(f)(x)
    np.testing.assert_allclose(value, f(x), rtol=1e-13)
    np.testing.assert_allclose(g, numerical_grad(f, [x], 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f, x", [(two, VEC), (frobenius, MAT), (row_norms_cubed, MAT)])
def test_against_torch(f, x):
    torch = pytest.importorskip("torch")
    t = torch.tensor(x, requires_grad=True)
    ord_, dim = {"two": (None, None), "frobenius": ("fro", None), "row_norms_cubed": (None, 1)}[
        f.__name__]
    out = torch.linalg.norm(t, ord=ord_, dim=dim)
    (out ** 3).sum().backward() if f is row_norms_cubed else out.backward()
    np.testing.assert_allclose(ad.grad(f)(x), t.grad.numpy(), rtol=1e-12)


def test_zero_vector_has_gradient_zero():
    np.testing.assert_array_equal(ad.grad(two)(np.zeros(3)), np.zeros(3))
    X = np.array([[0.0, 0.0], [3.0, 4.0]])
    np.testing.assert_allclose(ad.grad(row_norms_cubed)(X), [[0, 0], [45.0, 60.0]])


def test_forward_mode_and_hessian():
    t = RNG.standard_normal(5)
    _, tangent = ad.jvp(two)(VEC, tangents=t)
    np.testing.assert_allclose(tangent, VEC @ t / np.linalg.norm(VEC), rtol=1e-12)
    n = np.linalg.norm(VEC)
    want = (np.eye(5) - np.outer(VEC, VEC) / n ** 2) / n
    np.testing.assert_allclose(ad.hessian(two)(VEC), want, rtol=1e-10, atol=1e-12)


def test_integer_input_is_a_float_norm():
    np.testing.assert_allclose(ad.grad(of_ints)(2.0, np.arange(3)), np.sqrt(5.0), rtol=1e-15)


def not_a_matrix_norm(X):
    return np.linalg.norm(X, 3)


def test_a_matrix_ord_numpy_refuses_is_refused_where_called():
    with pytest.raises(ad.CompileError) as err:
        ad.grad(not_a_matrix_norm)(MAT)
    assert "ord=3 of a matrix is not one of NumPy's matrix norms" in err.value.message
    assert "'nuc'" in err.value.hint
    assert "test_linalg_norm.py" in str(err.value)


@pytest.mark.parametrize("f, x", CASES + [(two, np.zeros(3))],
                         ids=[f.__name__ for f, _ in CASES] + ["two_at_zero"])
def test_the_tape_gives_the_compiled_gradient(f, x):
    from adcompiler import tape
    np.testing.assert_allclose(tape.dynamic_grad(f)(x), ad.grad(f)(x), rtol=1e-12, atol=1e-15)


def tensorinv_sum(A):
    return np.sum(np.linalg.tensorinv(A, ind=1))


def test_the_tape_names_a_linalg_function_by_its_public_name():
    from adcompiler import tape
    with pytest.raises(TypeError, match=r"^np\.linalg\.tensorinv is not differentiable on "
                                        r"the tape"):
        tape.dynamic_grad(tensorinv_sum)(np.eye(2) * 2.0)
