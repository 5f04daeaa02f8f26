"""`&`, `|`, `^` and `~` combine boolean masks as NumPy's logical and, or, xor and not; on
numbers they stay refused. A parameter may be named `cp` (CuPy's name) in NumPy code."""

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import assert_matches_numerical


def lj_cut(r, rc):
    mask = (r > 0.5) & (r < rc)
    sr6 = (1.0 / r) ** 6
    return np.sum(np.where(mask, 4 * (sr6 * sr6 - sr6), 0.0))


def either(x):
    m = (x < -1.0) | (x > 1.0) ^ (x > 2.0)
    return np.sum(np.where(~m, x * x, 3.0 * x))


def updated_mask(x):
    m = x > 0.0
    m &= x < 2.0
    m |= x < -3.0
    return np.sum(np.where(m, x ** 3, x))


def with_python_bool(x, flag):
    return np.sum(np.where((x > 0.0) & flag, x * x, 0.0))


def bits_of_ints(x, k):
    return np.sum(x * (k & 1))


def mask_and_float(x):
    return np.sum(np.where((x > 0) & x, x, 0.0))


def invert_float(x):
    return np.sum(~x)


def enthalpy(cp, T):
    local = cp * T
    return np.sum(local * T)


def shadows_math(x, math):
    return x * math


X = np.array([-3.5, -2.0, -0.5, 0.5, 1.5, 2.5])


@pytest.mark.parametrize("f, args, want", [
    (lj_cut, (np.array([0.9, 1.1, 1.5, 3.0]), 2.5),
     lambda r, rc: np.where((r > 0.5) & (r < rc), 4 * (-12 * r ** -13 + 6 * r ** -7), 0.0)),
    (either, (X,), lambda x: np.where((x < -1) | ((x > 1) ^ (x > 2)), 3.0, 2 * x)),
    (updated_mask, (X,), lambda x: np.where(((x > 0) & (x < 2)) | (x < -3), 3 * x * x, 1.0)),
    (with_python_bool, (X, True), lambda x, flag: np.where(x > 0, 2 * x, 0.0)),
    (with_python_bool, (X, False), lambda x, flag: np.zeros_like(x)),
])
def test_masks_combine_as_numpy(f, args, want):
    g = ad.grad(f)(*args)
    np.testing.assert_allclose(g, want(*args), rtol=1e-12, atol=0)
    assert_matches_numerical(f, list(args), (0,), (g,))


@pytest.mark.parametrize("f, args, text", [
    (bits_of_ints, (X, np.arange(6)), "`&` on arrays is not supported"),
    (mask_and_float, (X,), "`&` on arrays is not supported"),
    (invert_float, (X,), "`~` on arrays other than boolean masks"),
])
def test_bitwise_on_numbers_stays_refused(f, args, text):
    with pytest.raises(ad.CompileError, match=text) as err:
        ad.grad(f)(*args)
    assert "test_mask_operators_and_reserved_names.py" in str(err.value)


def test_a_parameter_named_cp_in_numpy_code():
    cp, T = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    g = ad.grad(enthalpy, wrt=(0, 1))
    dcp, dT = g(cp, T)
    np.testing.assert_allclose(dcp, T * T)
    np.testing.assert_allclose(dT, 2 * cp * T)
    assert "def grad_enthalpy(cp, T):" in g.source


def test_a_parameter_named_like_a_module_the_code_reads_names_it():
    with pytest.raises(ad.CompileError, match="has the name of the module `math`") as err:
        ad.grad(shadows_math)(1.0, 2.0)
    assert "rename `math`" in str(err.value)


def test_the_tape_is_an_attribute_of_the_package():
    script = ("import sys, adcompiler as ad\n"
              "assert 'adcompiler.tape' not in sys.modules\n"
              "t = ad.tape.tensor([1.0, 2.0], requires_grad=True)\n"
              "(t * t).sum().backward()\n"
              "print(t.grad.tolist())\n")
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[2.0, 4.0]"
