"""Values a gradient takes from outside its traced arguments (module globals, closure cells,
helper functions, an object argument's attributes) are checked before compiled code runs again:
rebinding one compiles again, so a gradient never answers with the old value."""

import numpy as np
import pytest

import adcompiler as ad
from tests import state_module as sm

X = np.array([1.0, 2.0, 3.0])


class Model:
    def __init__(self, w, scale):
        self.w = w
        self.config = Config(scale)

    @ad.grad(wrt="x")
    def loss(self, x):
        return np.sum(x * self.w) * self.config.scale

    def plain_loss(self, x):
        return np.sum(x * self.w)


class Config:
    def __init__(self, scale):
        self.scale = scale


def closure_over(value):
    factor = value

    def f(x):
        return np.sum(x * factor)

    def rebind(v):
        nonlocal factor
        factor = v
    return f, rebind


def test_a_method_decorated_in_its_class_binds_the_instance_and_sees_new_attributes():
    m = Model(2.0, 1.0)
    np.testing.assert_array_equal(m.loss(X), [2.0, 2.0, 2.0])
    m.w = 5.0
    np.testing.assert_array_equal(m.loss(X), [5.0, 5.0, 5.0])
    m.config.scale = 10.0
    np.testing.assert_array_equal(m.loss(X), [50.0, 50.0, 50.0])
    other = Model(np.array([1.0, 0.0, -1.0]), 1.0)
    np.testing.assert_array_equal(other.loss(X), [1.0, 0.0, -1.0])
    other.w = other.w * 3                       # a new array: compiled again
    np.testing.assert_array_equal(other.loss(X), [3.0, 0.0, -3.0])
    other.w[0] = 7.0                            # the same array changed: read as it is
    np.testing.assert_array_equal(other.loss(X), [7.0, 0.0, -3.0])
    assert isinstance(Model.loss, ad.GradientFunction)


def test_a_bound_method_is_refused_with_what_to_write():
    with pytest.raises(TypeError, match=r"grad\(Model.plain_loss, wrt=\.\.\.\)"):
        ad.grad(Model(1.0, 1.0).plain_loss)


def test_rebound_globals_and_helpers_are_seen_on_the_fast_path():
    g = ad.grad(sm.uses_globals)
    try:
        np.testing.assert_array_equal(g(X), [2.0, 2.0, 2.0])
        np.testing.assert_array_equal(g(X), [2.0, 2.0, 2.0])
        assert len(g._fast) == 1                 # the fast path holds it, checked
        sm.SCALE = 3.0
        np.testing.assert_array_equal(g(X), [3.0, 3.0, 3.0])
        sm.WEIGHTS = np.full(3, 2.0)
        np.testing.assert_array_equal(g(X), [6.0, 6.0, 6.0])
        sm.helper = sm.other_helper
        np.testing.assert_array_equal(g(X), [20.0, 20.0, 20.0])
        assert len(g._cache) == 1 and len(g._snapshots) == 1   # replaced, not piled up
    finally:
        sm.reset()


def test_a_rebound_closure_cell_is_seen():
    f, rebind = closure_over(2.0)
    g = ad.grad(f)
    np.testing.assert_array_equal(g(X), [2.0, 2.0, 2.0])
    rebind(4.0)
    np.testing.assert_array_equal(g(X), [4.0, 4.0, 4.0])


def test_functions_reading_only_modules_take_no_snapshot():
    g = ad.grad(sm.pure)
    g(X)
    assert not any(g._snapshots.values())
    assert g._fast and all(run is c.function for run, c in
                           zip(g._fast.values(), g._cache.values()))


def test_an_attribute_the_code_never_reads_does_not_compile_again():
    m = Model(2.0, 1.0)
    m.step = 0
    m.loss(X)
    first = Model.loss._last
    m.step += 1                     # a training-loop counter, not read by loss
    np.testing.assert_array_equal(m.loss(X), [2.0, 2.0, 2.0])
    assert Model.loss._last is first
    m.w = 3.0                       # read by loss: compiled again
    np.testing.assert_array_equal(m.loss(X), [3.0, 3.0, 3.0])
    assert Model.loss._last is not first
