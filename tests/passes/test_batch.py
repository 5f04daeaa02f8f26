"""Batching of per-iteration accumulations (passes/batch.py): a loop's ``acc += a[k].T @ g``
and ``acc += sum(g, axis=0)`` become one product and one reduction after the loop, with the
same values; accumulations the pattern does not cover stay in the loop."""

import numpy as np

import adcompiler as ad
from tests.helpers import check_grads

RNG = np.random.default_rng(11)


def rnn(Wh, Wx, b, x, h0):
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(h @ Wh + x[t] @ Wx + b)
    return np.sum(h * h)


def rnn_inputs(T=5, batch=3, hidden=4, d_in=2):
    return (RNG.standard_normal((hidden, hidden)) / 2, RNG.standard_normal((d_in, hidden)),
            RNG.standard_normal(hidden), RNG.standard_normal((T, batch, d_in)),
            RNG.standard_normal((batch, hidden)))


def test_weight_gradients_of_a_loop_are_one_product_each():
    args = rnn_inputs()
    dWh, dWx, db = check_grads(rnn, *args, wrt=(0, 1, 2))
    g = ad.grad(rnn, wrt=(0, 1, 2))
    g(*args)
    loop_body = g.source.split("for t_1 in reversed(range(5)):")[1].split("\n    dWh")[0]
    assert "dWx" not in loop_body and "dWh" not in loop_body and "db" not in loop_body
    assert "dWx = np.reshape(x, (15, 2)).T @ " in g.source
    assert "db = np.sum(dt2s, axis=(0, 1))" in g.source
    # the hand-written batched form
    hs = [args[4]]
    for t in range(5):
        hs.append(np.tanh(hs[-1] @ args[0] + args[3][t] @ args[1] + args[2]))
    da, dh = np.empty((5, 3, 4)), 2.0 * hs[-1]
    for t in reversed(range(5)):
        da[t] = dh * (1.0 - hs[t + 1] ** 2)
        dh = da[t] @ args[0].T
    np.testing.assert_allclose(dWh, np.reshape(hs[:5], (15, 4)).T @ da.reshape(15, 4),
                               rtol=1e-12)
    np.testing.assert_allclose(dWx, args[3].reshape(15, 2).T @ da.reshape(15, 4), rtol=1e-12)
    np.testing.assert_allclose(db, da.sum(axis=(0, 1)), rtol=1e-12)


def used_after_the_loop(W, x):
    s = np.sum((x[0] @ W) ** 2)          # W's gradient does not start from zeros
    h = x[0]
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ W + h)
    return s + np.sum(h)


def read_inside(W, x):
    acc = 0.0
    for t in range(x.shape[0]):
        acc = acc + np.sum(np.sin(x[t] @ W) * W[0, 0])   # W's running cotangent is read
    return acc


def fewer_iterations_than_rows(W, x):
    h = x[0]
    for t in range(2):                   # x has 4 rows: only 2 are read
        h = np.tanh(x[t] @ W + h)
    return np.sum(h * h)


def test_a_gradient_that_does_not_start_from_zeros_is_added_to():
    W, x = RNG.standard_normal((3, 3)), RNG.standard_normal((4, 2, 3))
    check_grads(used_after_the_loop, W, x, wrt=(0, 1))
    g = ad.grad(used_after_the_loop)
    g(W, x)
    assert "np.reshape(x, (8, 3)).T @ " in g.source


def test_accumulations_outside_the_pattern_stay_in_the_loop():
    W, x = RNG.standard_normal((3, 3)), RNG.standard_normal((4, 2, 3))
    for f in (read_inside, fewer_iterations_than_rows):
        check_grads(f, W, x, wrt=(0, 1))
        g = ad.grad(f)
        g(W, x)
        assert "np.reshape(x, (8, 3)).T" not in g.source, f.__name__   # not batched


def loop_loss(W, x):
    h = x[0]
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ W + h)
    return np.sum(h * h)


def test_the_hessian_through_a_batched_loop():
    """Plain code (read again for the second derivative) keeps the accumulation in its loop;
    the Hessian agrees with differences of the (batched) gradient."""
    W, x = RNG.standard_normal((3, 3)) / 2, RNG.standard_normal((4, 2, 3))
    h = ad.hessian(loop_loss)(W, x)
    grad = ad.grad(loop_loss)
    assert "np.reshape(x, (8, 3)).T @ " in (grad(W, x), grad.source)[1]
    eps = 1e-6
    for i, j in [(0, 0), (1, 2), (2, 1)]:
        Wp, Wm = W.copy(), W.copy()
        Wp[i, j] += eps
        Wm[i, j] -= eps
        np.testing.assert_allclose(h[:, :, i, j], (grad(Wp, x) - grad(Wm, x)) / (2 * eps),
                                   rtol=1e-5, atol=1e-7)
