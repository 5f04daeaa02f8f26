"""The dynamic tape on Dask arrays (#32): gradients of the benchmark workloads with chunked inputs
of uneven chunk sizes equal the tape's on NumPy arrays and the compiled gradient to 1e-12; a
Dask input's gradient is lazy and chunked, NumPy parameters get NumPy gradients (computed
together, as backend="dask" does); what Dask lacks is a clear TypeError. On Dask's threaded
scheduler (tests/dask/test_cluster.py runs the tape on worker processes)."""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from benchmarks import workloads as W

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")


@pytest.fixture(autouse=True)
def threads():
    with dask.config.set(scheduler="threads"):
        yield


def branch(w, X):
    z = X @ w
    if np.sum(z) > 0:
        return np.sum(np.tanh(z) ** 2)
    return np.mean(np.exp(-z))


def _cases():
    rng = np.random.default_rng(5)
    x = rng.uniform(-2.0, 2.0, 1000)
    w, X = rng.standard_normal(5), rng.standard_normal((900, 5))
    rows = ((400, 300, 200), (5,))
    return {   # name: (fn, wrt, arguments, chunks of each (None: NumPy))
        "elementwise": (W.elementwise, ("x",), (x,), [(317, 400, 283)]),
        "rosenbrock": (W.rosenbrock, ("x",), (x,), [(317, 400, 283)]),
        "logistic": (W.logistic, ("w",), W.make_logistic(1000, 7),
                     [None, ((300, 500, 200), (7,)), ((300, 500, 200),)]),
        "mlp": (W.mlp, ("W1", "b1", "W2", "b2"),
                W.make_mlp(batch=50, d_in=12, hidden=9, classes=4),
                [None] * 4 + [((17, 20, 13), (12,)), ((17, 20, 13), (4,))]),
        "branch+": (branch, ("w",), (w, X), [None, rows]),
        "branch-": (branch, ("w",), (-w, X), [None, rows]),
        "branch wrt data": (branch, ("w", "X"), (w, X), [None, rows]),
    }


CASES = _cases()


def _chunked(args, chunks):
    return [a if c is None else da.from_array(a, chunks=c) for a, c in zip(args, chunks)]


def close(got, want):
    for g, r in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), r, rtol=1e-12,
                                   atol=1e-12 * max(1.0, np.max(np.abs(r))))


@pytest.mark.parametrize("name", sorted(CASES))
def test_tape_on_dask_equals_numpy_and_the_compiled_gradient(name):
    fn, wrt, args, chunks = CASES[name]
    want = tape.dynamic_grad(fn, wrt=wrt)(*args)
    got = tape.dynamic_grad(fn, wrt=wrt)(*_chunked(args, chunks))
    close(got, want)
    if name != "branch wrt data":   # the compiled gradient takes the branch's predicate too
        close(got, ad.grad(fn, wrt=wrt)(*args))
    where = [fn.__code__.co_varnames.index(n) for n in wrt]
    lazy = any(chunks[i] is not None for i in where)   # backend="dask"'s compute=None
    for g, i in zip(got, where):
        assert isinstance(g, da.Array) == lazy
        assert g.shape == args[i].shape and g.dtype == args[i].dtype


def test_a_dask_gradient_keeps_its_chunks_bounded():
    x = np.random.default_rng(1).uniform(-2.0, 2.0, 1000)
    for fn in (W.elementwise, W.rosenbrock):
        g = tape.dynamic_grad(fn)(da.from_array(x, chunks=(317, 400, 283)))
        assert isinstance(g, da.Array) and max(g.chunks[0]) <= 400   # never one big chunk
        close([g], [tape.dynamic_grad(fn)(x)])


def test_value_and_grad_computes_numpy_results_together():
    w, X, y = W.make_logistic(600, 4)
    Xd, yd = da.from_array(X, chunks=(250, 4)), da.from_array(y, chunks=250)
    value, g = tape.dynamic_value_and_grad(W.logistic)(w, Xd, yd)
    want_value, want = tape.dynamic_value_and_grad(W.logistic)(w, X, y)
    assert isinstance(g, np.ndarray) and not isinstance(value, da.Array)
    assert abs(float(value) - float(want_value)) <= 1e-12 * abs(float(want_value))
    close([g], [want])


def test_backward_on_a_dask_tensor_is_lazy():
    x = np.linspace(-1.0, 1.0, 10)
    t = tape.tensor(da.from_array(x, chunks=3), requires_grad=True)
    (np.exp(t) * t).sum().backward()
    assert isinstance(t.grad._data, da.Array)
    close([t.grad._data.compute()], [np.exp(x) * (1.0 + x)])


def test_gather_with_repeated_indices_on_dask():
    x = np.random.default_rng(2).standard_normal(40)
    idx = np.array([3, 3, 7, 0, 3, 39])

    def f(x):
        return np.sum(np.sin(x[idx]) * x[idx])

    g = tape.dynamic_grad(f)(da.from_array(x, chunks=(13, 27)))
    close([g.compute()], [tape.dynamic_grad(f)(x)])


def test_an_operation_dask_lacks_is_a_clear_error():
    a = np.random.default_rng(3).standard_normal((4, 4)) + 4 * np.eye(4)

    def f(a):
        return np.linalg.det(a)

    with pytest.raises(TypeError, match="cannot run on Dask arrays.*compute"):
        tape.dynamic_grad(f)(da.from_array(a, chunks=2))


def test_a_dask_tensor_prints_its_graph_and_computes_nothing(monkeypatch):
    t = tape.tensor(da.from_array(np.arange(6.0), chunks=4), requires_grad=True)

    def no_compute(*args, **kwargs):
        raise AssertionError("repr computed the Dask array")
    monkeypatch.setattr(da.Array, "__array__", no_compute)
    monkeypatch.setattr(da.Array, "compute", no_compute)
    text = repr(np.exp(t))
    assert text.startswith("tensor(dask.array<exp, shape=(6,)") and "ExpBackward0" in text


def test_a_predicate_on_a_dask_tensor_computes_it():
    t = tape.tensor(da.from_array(np.array([0.5, -2.0, 1.0]), chunks=2), requires_grad=True)
    assert bool(np.sum(t) < 0) and float(np.sum(t).detach()) == -0.5


def halving(w, X):
    s = np.sum(np.tanh(X @ w) ** 2)
    while s > 1.0:   # a tolerance on data: each test computes its one value
        s = s * 0.5
    return s


def test_a_while_on_a_dask_value_equals_numpy():
    rng = np.random.default_rng(9)
    w, X = rng.standard_normal(4), rng.standard_normal((700, 4))
    want = tape.dynamic_grad(halving)(w, X)
    close([tape.dynamic_grad(halving)(w, da.from_array(X, chunks=((300, 250, 150), (4,))))],
          [want])
    close([want], [ad.grad(halving)(w, X)])


def test_numpy_and_cupy_tensors_never_import_dask():
    import subprocess
    import sys
    code = ("import sys; sys.modules['dask'] = None\n"   # importing Dask would raise
            "import numpy as np\nfrom adcompiler import tape\nfrom tests import fake_cupy\n"
            "g = tape.dynamic_grad(lambda x: np.sum(np.tanh(x) * x))(np.linspace(-1, 1, 5))\n"
            "with fake_cupy.install() as cp:\n"
            "    t = tape.tensor(cp.asarray(np.ones(3)), requires_grad=True)\n"
            "    (np.exp(t) * t).sum().backward()\n"
            "    print(round(float(g.sum()), 6), t.grad.device)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    x = np.linspace(-1, 1, 5)
    want = np.sum(np.tanh(x) + x * (1 - np.tanh(x) ** 2))
    assert done.stdout.split() == [str(round(float(want), 6)), "cuda:0"]


def test_an_assignment_into_a_dask_tensor():
    x = np.arange(6.0)

    def sliced(x):
        y = x * 1.0
        y[1:3] = x[:2] * 2.0
        return np.sum(y ** 2)

    def repeated(x):
        y = x * 1.0
        y[np.array([0, 0, 2])] = x[:3] * 2.0
        return np.sum(y ** 2)

    close([tape.dynamic_grad(sliced)(da.from_array(x, chunks=4)).compute()],
          [tape.dynamic_grad(sliced)(x)])
    with pytest.raises(TypeError, match="may repeat.*cannot run on Dask arrays"):
        tape.dynamic_grad(repeated)(da.from_array(x, chunks=4))
