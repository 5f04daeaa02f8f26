"""A list given for an argument is compiled as ``np.asarray`` of it (docs: Semantics in
detail), and now also runs as that array: the generated code once received the list itself, whose ``*`` repeats it, ``+``
concatenates it and ``==`` compares it whole, so ``np.multiply(c, 2)`` (written ``c * 2``) gave
a list of twice the length and a gradient half the right one, silently. ``np.matrix`` and
masked arrays, which compute otherwise than ndarrays, are refused instead of read as them."""

from __future__ import annotations

import re

import numpy as np
import pytest

import adcompiler as ad

from tests.helpers import assert_matches_numerical
from tests.cli.test_cli import adcompiler, import_path, write

X = np.array([1.0, 2.0, 3.0])
C = [1.0, 3.0, 2.0]


def scaled_by_a_list(x, c):
    return np.sum(x * (np.asarray(c) * 2))


def max_of_a_product(x, c):
    return np.max(np.multiply(c, 2)) * np.sum(x)


def mean_of_a_sum(x, c, d):
    return np.mean(np.add(c, d)) * np.sum(x * x)


def selected(x, c, d):
    return np.sum(np.where(np.greater(c, d), x, 0.0))


@pytest.mark.parametrize("f, extra", [(scaled_by_a_list, ()), (max_of_a_product, ()),
                                      (mean_of_a_sum, ([0.5, 0.5, 1.5],)),
                                      (selected, ([0.5, 4.0, 1.5],))],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_a_list_argument_computes_as_its_array(f, extra):
    args = (X, C, *extra)
    want_value = f(X, *(np.asarray(a) for a in args[1:]))
    value, dx = ad.value_and_grad(f)(*args)
    assert value == pytest.approx(want_value, rel=1e-12)
    assert_matches_numerical(f, (X,) + tuple(np.asarray(a) for a in args[1:]), (0,), (dx,))
    assert type(args[1]) is list and args[1] == [1.0, 3.0, 2.0]   # the caller's list unchanged


def test_jvp_and_hessian_take_the_list_as_its_array():
    (_, tangent) = ad.jvp(max_of_a_product)(X, C, tangents=np.ones(3))
    assert tangent == pytest.approx(6.0 * 3)
    d = [0.5, 0.5, 1.5]
    np.testing.assert_allclose(ad.hessian(mean_of_a_sum)(X, C, d),
                               2 * np.mean(np.add(C, d)) * np.eye(3), rtol=1e-12)


def test_a_standalone_module_converts_the_list_too(tmp_path):
    write(tmp_path, "listy.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def f(x, c):
            return np.max(np.multiply(c, 2)) * np.sum(x)


        def example_f():
            return (np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0]))
    ''')
    done = adcompiler("compile", tmp_path / "listy.py")
    assert done.returncode == 0, done.stderr
    module = import_path(tmp_path / "listy_grad.py")
    np.testing.assert_array_equal(module.grad_f(X, C), [6.0, 6.0, 6.0])


def total(x, m):
    return np.sum(x * m)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")   # np.matrix's own
def test_matrix_and_masked_arrays_are_refused_with_what_to_pass():
    with pytest.raises(TypeError, match=re.escape(
            "'x' is a numpy.matrix, whose `*` is a matrix product: pass np.asarray(x)")):
        ad.grad(total)(np.matrix([[1.0, 2.0], [3.0, 4.0]]), np.ones((2, 2)))
    masked = np.ma.masked_array([1.0, 2.0], mask=[False, True])
    with pytest.raises(TypeError, match=re.escape(
            "'m' is a masked array (MaskedArray), whose reductions skip masked entries: pass "
            "the values to use, such as m.filled(0.0)")):
        ad.grad(total)(np.ones(2), masked)


def test_a_memmap_is_an_array(tmp_path):
    m = np.memmap(tmp_path / "m.dat", dtype=np.float64, mode="w+", shape=(2,))
    m[:] = [2.0, -1.0]
    np.testing.assert_allclose(ad.grad(total)(np.ones(2), m), [2.0, -1.0])


W = [1.0, 3.0, 2.0]   # a module-level list


def times_a_module_list(x):
    return np.sum(x * np.multiply(W, 2))


def times_a_static_tuple(x, t):
    return np.sum(x * np.multiply(t, 2))


def floor_of_traced_items(x, a):
    return np.sum(np.maximum([a, 0.5, a * 2.0], x) + np.where(x > 1.5, [1.0, 2.0, 3.0], x))


M = [[1.0, 2.0], [3.0, 4.0]]


def dot_of_a_module_list(x):
    return np.sum(np.dot(M, x)) + np.sum(np.clip(x, [0.0, 0.1], 1.0))


def joined_with_a_list_row(x):
    return np.sum(np.concatenate([x, M[0]]) ** 2)


def test_every_operand_position_takes_a_list():
    """The conversion is the IR builder's (any array operand), not one handler's: np.dot,
    np.clip's bounds and a list item of np.concatenate once gave 'cannot use list as an IR
    input' with the false hint that NumPy raises too."""
    x = np.array([0.5, 2.0])
    np.testing.assert_allclose(ad.grad(dot_of_a_module_list)(x), [4.0 + 1.0, 6.0 + 0.0])
    np.testing.assert_allclose(ad.grad(joined_with_a_list_row)(x), 2 * x)


def test_numpy_functions_take_lists_and_tuples_as_arrays():
    """NumPy's functions read a list or tuple operand as its array (it once was 'cannot use
    list as an IR input', with the hint that NumPy raises too, which it does not)."""
    np.testing.assert_allclose(ad.grad(times_a_module_list)(X), [2.0, 6.0, 4.0])
    np.testing.assert_allclose(ad.grad(times_a_static_tuple)(X, (1.0, 2.0, 3.0)), [2.0, 4.0, 6.0])
    args = (np.array([0.2, 1.0, 2.5]), 0.7)
    value, grads = ad.value_and_grad(floor_of_traced_items, wrt=(0, 1))(*args)
    assert value == pytest.approx(floor_of_traced_items(*args), rel=1e-12)
    assert_matches_numerical(floor_of_traced_items, args, (0, 1), grads)
