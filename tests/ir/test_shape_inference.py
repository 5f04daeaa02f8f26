"""Dtype inference against NumPy itself, asked twice: the second answer comes from the memo in
``adcompiler.ir.shapes``, whose key must tell apart what promotes differently: ``1``, ``1.0``
and ``True`` (equal as Python values), and literal values (uint8 + 300 overflows, + 1 does not)."""

import itertools

import numpy as np
import pytest

from adcompiler.ir import Aval
from adcompiler.ir.shapes import infer

DTYPES = ["float64", "float32", "int64", "int8", "uint8", "bool"]
LITERALS = [1, 1.0, True, 300, -1, 0.5]
PRIMS = {"add": np.add, "multiply": np.multiply, "divide": np.divide, "power": np.power,
         "maximum": np.maximum}


def numpy_says(ufunc, dtype, literal, literal_first):
    a = np.ones(3, dtype=dtype)
    try:
        with np.errstate(all="ignore"):
            out = ufunc(literal, a) if literal_first else ufunc(a, literal)
    except (OverflowError, TypeError, ValueError) as exc:
        return type(exc)
    return out.dtype.name


def inferred(prim, dtype, literal, literal_first):
    array, lit = Aval("array", dtype, (3,)), Aval.of(literal)
    avals, literals = ([lit, array], [literal, None]) if literal_first else \
        ([array, lit], [None, literal])
    try:
        return infer(prim, avals, literals, {}).dtype
    except (OverflowError, TypeError, ValueError) as exc:
        return type(exc)


@pytest.mark.parametrize("prim", sorted(PRIMS))
def test_literal_promotion_matches_numpy_on_every_ask(prim):
    cases = list(itertools.product(DTYPES, LITERALS, (False, True)))
    want = [numpy_says(PRIMS[prim], *case) for case in cases]
    for _ in range(2):  # the second pass answers from the memo
        got = [inferred(prim, *case) for case in cases]
        assert got == want
    # the keys that compare equal as Python values still differ as NumPy literals
    assert inferred(prim, "int64", 1, False) != inferred(prim, "int64", 1.0, False) or \
        prim == "divide"
    assert inferred("add", "bool", True, False) == "bool"
    assert inferred("add", "bool", 1, False) == "int64"


def test_params_of_equal_value_and_different_type_are_different_keys():
    x = Aval("array", "int64", (4,))
    assert infer("sum", [x], [None], {"axis": 0}).dtype == "int64"
    assert infer("sum", [x], [None], {"axis": 0, "dtype": "float32"}).dtype == "float32"
    assert infer("sum", [x], [None], {"axis": 0}).dtype == "int64"
