"""The survey seed's f(x1, x2) = ln(x1) + x1*x2 - sin(x2), on Python floats.

    adcompiler show samples/seed_f.py:f
"""

import math

import adcompiler as ad


@ad.value_and_grad(wrt=("x1", "x2"))
def f(x1, x2):
    v1 = math.log(x1)
    v2 = x1 * x2
    v3 = math.sin(x2)
    v4 = v1 + v2
    return v4 - v3


def example_f():
    return 2.0, 5.0


if __name__ == "__main__":
    print(f(*example_f()))  # (11.652071455223084, (5.5, 1.7163378145367738))
