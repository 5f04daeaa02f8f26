"""``math`` functions whose NumPy primitive has another name (fabs, asin, acos, atan) compile,
and so does the first derivative's source read back for the second (abs() of a float emits
``math.fabs``)."""

import math

import pytest

import adcompiler as ad


def f_fabs(x):
    return math.fabs(x) * x


def f_abs(x):
    return abs(x) * x


def f_inverse_trig(x):
    return math.asin(x) * math.acos(x) + math.atan(x)


@pytest.mark.parametrize("f", [f_fabs, f_abs])
def test_abs_of_a_float_twice(f):
    for x in (-2.0, 0.5):
        assert ad.grad(f)(x) == pytest.approx(2 * abs(x), rel=1e-15)
        assert ad.grad(ad.grad(f))(x) == pytest.approx(2 * math.copysign(1.0, x), rel=1e-15)


def test_inverse_trig_first_and_second_derivatives():
    x = 0.3
    r = math.sqrt(1 - x * x)
    want = (math.acos(x) - math.asin(x)) / r + 1 / (1 + x * x)
    assert ad.grad(f_inverse_trig)(x) == pytest.approx(want, rel=1e-14)
    h = 1e-5
    numeric = (ad.grad(f_inverse_trig)(x + h) - ad.grad(f_inverse_trig)(x - h)) / (2 * h)
    assert ad.grad(ad.grad(f_inverse_trig))(x) == pytest.approx(numeric, rel=1e-7)
