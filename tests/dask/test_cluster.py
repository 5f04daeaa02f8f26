"""Gradients on a real Dask cluster (#32): a ``LocalCluster`` of two worker processes (not
threads), one for the module. The benchmark workloads' gradients, with chunked inputs of uneven
chunk sizes, computed by ``backend="dask"`` and by the tape on Dask arrays, equal NumPy's
(``adcompiler.grad``) to 1e-12, and their tasks ran in the worker processes."""

import os

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from benchmarks import workloads as W

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", memory_limit="1GiB",
                                       silence_logs=50)
    with cluster, distributed.Client(cluster, set_as_default=True) as client:
        client.wait_for_workers(2)
        yield client


def branch(w, X):
    z = X @ w
    if np.sum(z) > 0:
        return np.sum(np.tanh(z) ** 2)
    return np.mean(np.exp(-z))


def _cases():
    rng = np.random.default_rng(11)
    x = rng.uniform(-2.0, 2.0, 3000)
    w, X = rng.standard_normal(6), rng.standard_normal((2500, 6))
    rows = ((1100, 900, 500), (6,))
    return {   # name: (fn, wrt, arguments, chunks of each (None: a NumPy array))
        "elementwise": (W.elementwise, ("x",), (x,), [(1300, 1000, 700)]),
        "rosenbrock": (W.rosenbrock, ("x",), (x,), [(1300, 1000, 700)]),
        "logistic": (W.logistic, ("w",), W.make_logistic(3000, 8),
                     [None, ((1400, 1000, 600), (5, 3)), ((1400, 1000, 600),)]),
        "mlp": (W.mlp, ("W1", "b1", "W2", "b2"),
                W.make_mlp(batch=300, d_in=20, hidden=16, classes=5),
                [None] * 4 + [((130, 100, 70), (20,)), ((130, 100, 70), (5,))]),
        "branch, true": (branch, ("w",), (w, X), [None, rows]),
        "branch, false": (branch, ("w",), (-w, X), [None, rows]),
    }


CASES = _cases()


def _chunked(args, chunks):
    return [a if c is None else da.from_array(a, chunks=c) for a, c in zip(args, chunks)]


def _tuple(value):
    return value if isinstance(value, tuple) else (value,)


def _check(client, got, want, lazy):
    """``got`` (lazy Dask arrays where a differentiated argument is one, else NumPy arrays)
    equals ``want`` to 1e-12, computed on the cluster."""
    got, want = _tuple(got), _tuple(want)
    assert all(isinstance(g, da.Array if lazy else np.ndarray) for g in got)
    if lazy:
        got = client.compute(list(got), sync=True)
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12 * max(1.0, np.max(np.abs(r))))


def _lazy(fn, wrt, chunks):
    return any(chunks[fn.__code__.co_varnames.index(n)] is not None for n in wrt)


def _ran_on_workers(client, stream):
    """The tasks of the computation ran, in worker processes other than this one."""
    pids = client.run(os.getpid)
    assert len(pids) == 2 and os.getpid() not in pids.values()
    assert stream.data and {t["worker"] for t in stream.data} <= set(pids)


@pytest.mark.parametrize("name", sorted(CASES))
def test_dask_backend_on_the_cluster_equals_numpy(client, name):
    fn, wrt, args, chunks = CASES[name]
    want = ad.grad(fn, wrt=wrt)(*args)
    with distributed.get_task_stream(client) as stream:
        got = ad.grad(fn, wrt=wrt, backend="dask")(*_chunked(args, chunks))
        _check(client, got, want, _lazy(fn, wrt, chunks))
    _ran_on_workers(client, stream)


@pytest.mark.parametrize("name", sorted(CASES))
def test_tape_on_the_cluster_equals_numpy(client, name):
    fn, wrt, args, chunks = CASES[name]
    want = ad.grad(fn, wrt=wrt)(*args)
    with distributed.get_task_stream(client) as stream:
        got = tape.dynamic_grad(fn, wrt=wrt)(*_chunked(args, chunks))
        _check(client, got, want, _lazy(fn, wrt, chunks))
    _ran_on_workers(client, stream)


def test_compute_true_gives_numpy_gradients_of_chunked_parameters(client):
    x = CASES["rosenbrock"][2][0]
    with distributed.get_task_stream(client) as stream:
        g = ad.grad(W.rosenbrock, backend="dask", compute=True)(
            da.from_array(x, chunks=(1300, 1000, 700)))
    _check(client, g, ad.grad(W.rosenbrock)(x), lazy=False)
    _ran_on_workers(client, stream)
