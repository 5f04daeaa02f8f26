"""Found by the numerics trial: np.zeros_like(x, dtype=np.float64) of a float32 x kept float32
in the generated code (the emitter dropped a float64 dtype, the default of np.zeros only), and a
fused chain holding a negated constant (``- 0.3 * x``) crashed the memory planner from 4096
entries on (the size where chains are buffered)."""

import numpy as np

import adcompiler as ad


def acc64(x):
    acc = np.zeros_like(x, dtype=np.float64)
    acc += x
    acc += 1e8
    acc -= 1e8
    return np.sum(acc * acc)


def ones32(x):
    return np.sum(np.ones_like(x, dtype=np.float32) * x)


def damped(x, y):
    return np.sum(np.tanh(np.cos(x) * y - 0.3 * x))


def test_like_constructors_keep_the_dtype_asked_for():
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    value, dx = ad.value_and_grad(acc64)(x)
    assert value == acc64(x) == 14.0 and type(value) is np.float64
    np.testing.assert_array_equal(dx, 2.0 * x)
    assert dx.dtype == np.float32
    x64 = x.astype(np.float64)
    value, dx = ad.value_and_grad(ones32)(x64)
    assert type(value) is type(ones32(x64)) and value == 6.0


def test_a_buffered_chain_with_a_negated_constant():
    for n in (4095, 4096, 5000):
        x, y = np.linspace(0.1, 3.0, n), np.linspace(0.5, 2.0, n)
        dx, dy = ad.grad(damped, wrt=(0, 1))(x, y)
        t = 1.0 - np.tanh(np.cos(x) * y - 0.3 * x) ** 2
        np.testing.assert_allclose(dx, t * (-np.sin(x) * y - 0.3), rtol=1e-12)
        np.testing.assert_allclose(dy, t * np.cos(x), rtol=1e-12)


def power_sum(x, p):
    return np.sum(x ** p)


def test_exponent_gradient_is_nan_at_a_negative_base_as_in_torch_and_jax():
    x = np.array([-2.0, 0.0, 1.5])
    with np.errstate(invalid="ignore"):
        dp = ad.grad(power_sum, wrt="p")(x, 3.0)
        dp_positive = ad.grad(power_sum, wrt="p")(x[1:], 3.0)
    assert np.isnan(dp)                                  # it was 1.368: the -2 entry dropped
    np.testing.assert_allclose(dp_positive, 1.5 ** 3 * np.log(1.5), rtol=1e-14)   # 0 at x = 0
    from adcompiler import tape
    p = tape.tensor(3.0, requires_grad=True)
    with np.errstate(invalid="ignore"):
        power_sum(tape.tensor(x), p).backward()
    assert np.isnan(float(p.grad))
