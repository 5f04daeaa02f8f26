"""The algebra pass (fused chains, from 4096 entries) keeps a rewrite only where it stays finite
wherever the expression it replaces was: collecting the Langevin function's adjoint into
``1 + 1/x**2 - cosh**2/sinh**2`` overflowed to NaN from x = 355 on (passes/algebra_probe.py)."""

import numpy as np

import adcompiler as ad
from adcompiler.passes.algebra_probe import keeps_finite
from adcompiler.ir import Block, Value, Aval, Node


def langevin_total(x):
    return np.sum(np.cosh(x) / np.sinh(x) - 1.0 / x)


def test_langevin_gradient_is_finite_on_a_large_array():
    x = np.linspace(1.0, 500.0, 4096)
    dx = ad.grad(langevin_total)(x)
    assert np.isfinite(dx).all()
    with np.errstate(over="ignore"):
        want = 1.0 / x ** 2 - 1.0 / np.sinh(x) ** 2
    np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-12)


def _block(build):
    """A one-output block of two float inputs, nodes from ``build(a, b, emit)``."""
    a, b = (Value(Aval("array", "float64", (4,))) for _ in range(2))
    nodes = []

    def emit(prim, *inputs):
        out = Value(Aval("array", "float64", (4,)))
        nodes.append(Node(prim, tuple(inputs), {}, [out]))
        return out
    out = build(a, b, emit)
    return Block(params=[a, b], nodes=nodes, outputs=[out])


def test_the_probe_refuses_squares_that_overflow_and_takes_equal_forms():
    quotient = _block(lambda a, b, e: e("multiply", e("divide", a, b), e("divide", a, b)))
    squares = _block(lambda a, b, e: e("divide", e("multiply", a, a), e("multiply", b, b)))
    a, b = quotient.params
    free = {}   # no producers: a and b are probed as independent values
    assert not keeps_finite(quotient, squares, [a, b], free)   # a*a overflows at 1e200
    assert keeps_finite(squares, quotient, [a, b], free)
    assert keeps_finite(quotient, quotient, [a, b], free)
