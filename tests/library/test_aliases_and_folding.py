"""NumPy functions that are other NumPy functions (frontend/library/aliases.py) compile as those
do, and NumPy functions of values known while compiling run then (static_numpy.py), except the
ones that write, print, read files or call the user's code."""

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import numerical_grad

RNG = np.random.default_rng(7)
A = RNG.normal(size=(4, 5))
S = RNG.normal(size=(3, 4, 4))
V = RNG.normal(size=(6,))

CASES = [
    ("radians", lambda x: np.sum(np.sin(np.radians(x))), V * 90),
    ("degrees", lambda x: np.sum(np.degrees(x) ** 2), V),
    ("fix", lambda x: np.sum(np.fix(x) * x), V * 3),
    ("positive", lambda x: np.sum(np.positive(x) * x), V),
    ("linalg.matmul", lambda a: np.sum(np.linalg.matmul(a, a.T) ** 2), A),
    ("linalg.outer", lambda x: np.sum(np.linalg.outer(x, x ** 2)), V),
    ("linalg.tensordot", lambda a: np.sum(np.linalg.tensordot(a, a, axes=2)), A),
    ("linalg.trace", lambda s: np.sum(np.linalg.trace(s) ** 2), S),
    ("linalg.diagonal", lambda s: np.sum(np.linalg.diagonal(s, offset=1) ** 3), S),
    ("matrix_transpose", lambda s: np.sum(np.matrix_transpose(s) * S), S),
    ("vecdot", lambda s: np.sum(np.vecdot(s, s ** 2)), S),
    ("linalg.cross", lambda a: np.sum(np.linalg.cross(a[:, :3], a[:, 1:4]) ** 2), A),
    ("shape ndim size", lambda a: np.sum(a) * np.shape(a)[1] * np.ndim(a) * np.size(a), A),
    ("ptp", lambda a: np.sum(np.ptp(a, axis=1) ** 2), A),
    ("select", lambda a: np.sum(np.select([a > 0.5, a > -0.5], [a ** 2, 3 * a], default=a)), A),
    ("heaviside", lambda a: np.sum(np.heaviside(a, 0.5) * a ** 2), A),
    ("logical_xor", lambda a: np.sum(np.where(np.logical_xor(a > 0, a > 1), a, -a)), A),
    ("cov", lambda a: np.sum(np.cov(a) ** 2), A),
    ("cov rowvar bias", lambda a: np.sum(np.cov(a, rowvar=False, bias=True) ** 2), A),
    ("cov of two", lambda a: np.sum(np.cov(a[0], a[1] ** 2)), A),
    ("corrcoef", lambda a: np.sum(np.corrcoef(a) ** 3), A),
]
if not hasattr(np, "vecdot"):   # NumPy 1
    CASES = [c for c in CASES if c[0] not in ("matrix_transpose", "vecdot", "linalg.cross",
                                              "linalg.matmul", "linalg.outer",
                                              "linalg.tensordot", "linalg.trace",
                                              "linalg.diagonal")]


def _as_def(name, f):
    def loss(x):
        return f(x)
    loss.__name__ = loss.__qualname__ = "loss_" + name.replace(" ", "_").replace(".", "_")
    return loss


@pytest.mark.parametrize("name, f, x", CASES, ids=[c[0] for c in CASES])
def test_an_alias_compiles_as_what_it_is(name, f, x):
    value, grad = ad.value_and_grad(_as_def(name, f))(x)
    assert value == pytest.approx(f(x), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(grad, numerical_grad(f, [x], 0), rtol=1e-5, atol=1e-6)


def lower_triangle_sum(a):
    i, j = np.tril_indices(4)          # known while compiling: a constant of the code
    return np.sum(a[i, j] ** 2)


def promoted(x):
    kind = np.result_type(x.dtype, np.float32)
    return np.sum(x.astype(kind) * np.fft.fftfreq(6, d=0.5))


def test_numpy_functions_of_known_values_run_while_compiling():
    a = RNG.normal(size=(4, 4))
    g = ad.grad(lower_triangle_sum)
    np.testing.assert_allclose(g(a), 2 * np.tril(a))
    assert "tril_indices" not in g.source                      # folded to constants
    np.testing.assert_allclose(ad.grad(promoted)(V), np.fft.fftfreq(6, d=0.5))


TARGET = np.zeros(3)


def writes_a_module_array(x):
    np.copyto(TARGET, np.ones(3))      # not run while compiling: it would change TARGET
    return np.sum(x)


def test_functions_that_write_are_not_run_while_compiling():
    with pytest.raises(ad.CompileError):
        ad.grad(writes_a_module_array)(V[:3])
    assert not TARGET.any()
