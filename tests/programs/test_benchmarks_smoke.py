"""The benchmark workloads' hand-written gradients against central finite differences."""

import math

import numpy as np
import pytest

from benchmarks import workloads as W

TINY = {
    "seed_graph": W.make_seed_graph,
    "seed_f": W.make_seed_f,
    "elementwise": W.make_vector(7),
    "rosenbrock": W.make_vector(6),
    "logistic": lambda: W.make_logistic(n=20, d=5),
    "mlp": lambda: W.make_mlp(batch=4, d_in=6, hidden=5, classes=3),
    "rnn": lambda: W.make_rnn(T=3, hidden=4, d_in=3, batch=2),
    "small_mlp": lambda: W.make_small_mlp(batch=3, d_in=4, hidden=5),
    "gmm": lambda: W.make_gmm(n=10, k=3, d=2),
    "heat": lambda: W.make_heat(n=8, steps=4),
    "gp_nll": lambda: W.make_gp(n=6, d=2),
    "matfact": lambda: W.make_matfact(users=4, items=5, rank=3, pairs=12),
    "gru": lambda: W.make_gru(T=3, hidden=4, d_in=3, batch=2),
    "transformer": lambda: W.make_transformer(seq=5, d_model=8, d_ff=12),
    "ode_rk4": lambda: W.make_ode(batch=4, d=3, hidden=5, steps=6),
}
FUNCTIONS = {w.fn.__name__: w for w in W.WORKLOADS}


def numeric_gradient(fn, args, position, eps=1e-6):
    """Central differences of ``fn`` in argument ``position`` (a float or an array)."""
    args = list(args)
    base = args[position]
    if isinstance(base, float):
        hi, lo = list(args), list(args)
        hi[position], lo[position] = base + eps, base - eps
        return (fn(*hi) - fn(*lo)) / (2 * eps)
    grad = np.zeros_like(base)
    for index in np.ndindex(base.shape):
        for sign in (1, -1):
            moved = base.copy()
            moved[index] += sign * eps
            args[position] = moved
            grad[index] += sign * fn(*args) / (2 * eps)
    return grad


def test_every_workload_function_has_a_tiny_input():
    assert set(FUNCTIONS) == set(TINY)


@pytest.mark.parametrize("name", sorted(TINY))
def test_hand_written_gradient_matches_finite_differences(name):
    workload = FUNCTIONS[name]
    args = TINY[name]()
    params = list(workload.fn.__code__.co_varnames[:workload.fn.__code__.co_argcount])
    got = workload.hand(*args)
    assert isinstance(got, tuple) and len(got) == len(workload.wrt)
    for grad, wrt in zip(got, workload.wrt):
        position = params.index(wrt)
        want = numeric_gradient(workload.fn, args, position)
        assert np.shape(grad) == np.shape(args[position])
        np.testing.assert_allclose(grad, want, rtol=1e-5, atol=1e-7, err_msg=f"{name}: {wrt}")


def test_float_inputs_get_float_gradients():
    for name in ("seed_graph", "seed_f"):
        grads = FUNCTIONS[name].hand(*TINY[name]())
        assert all(isinstance(g, float) and math.isfinite(g) for g in grads)


def test_the_registry_names_each_workload_once():
    names = [w.name for w in W.WORKLOADS]
    assert len(names) == len(set(names))
    assert all(W.get(n).name == n for n in names)
