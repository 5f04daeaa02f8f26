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


# x's shape, the index spec (primitives.build_index), the index arrays' shapes
GATHERS = [
    ((50, 4), (("a", 0),), [(7,)]),                                   # rows
    ((50, 4), (("a", 0), ("a", 1)), [(7, 1), (1, 3)]),               # broadcast pair
    ((6, 5, 4), (("s", None, None, None), ("a", 0)), [(2, 3)]),       # after a slice
    ((6, 5, 4), (("a", 0), ("s", 1, 3, None), ("a", 1)), [(3,), (3,)]),  # split: to the front
    ((6, 5, 4), (("e",), ("n",), ("a", 0)), [(2,)]),
    ((6, 5, 4), (("i", 2), ("a", 0)), [(9,)]),
    ((6, 5), (("a", 0),), [()]),                                      # a 0-d index array
]


@pytest.mark.parametrize("shape, index, arrays", GATHERS)
def test_a_gathers_shape_is_numpys(shape, index, arrays):
    from adcompiler.ir.primitives import build_index
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    real = [rng.integers(0, 2, size=s) for s in arrays]
    avals = [Aval("array", "float64", shape)] + [Aval("array", "int64", s) for s in arrays]
    got = infer("getitem", avals, [None] * len(avals), {"index": index})
    assert got.shape == x[build_index(index, real)].shape and got.dtype == "float64"


def test_a_large_gathers_shape_allocates_nothing():
    """The stand-ins hold no bytes: the matrix factorization's U[iu] (10^5 rows of 32) made its
    26 MB result at compile time before (#33); 10^6 rows of 64 here would be 512 MB."""
    import tracemalloc
    avals = [Aval("array", "float64", (1000, 64)), Aval("array", "int64", (10**6,))]
    tracemalloc.start()
    try:
        got = infer("getitem", avals, [None, None], {"index": (("a", 0),)})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.shape == (10**6, 64) and peak < 100_000
