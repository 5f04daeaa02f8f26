"""backend="dask" (#32) on the synchronous scheduler: gradients of chunked inputs (uneven chunks)
equal to the NumPy backend's to 1e-12 on the workloads Dask scales (elementwise, Rosenbrock,
logistic regression, an MLP, a data-dependent branch, a while loop on a tolerance, a scatter
of repeated indices, a Python loop with residuals); every entry point; compute= both ways and
the default (NumPy parameters: NumPy gradients from one dask.compute; a Dask argument
differentiated: lazy); the source (dask.array calls, no out= buffers, the predicates it
computes said by comments); sums over the data axis reduced chunk by chunk; backend="auto";
the errors (another library's array, NumPy code given a Dask array, unknown chunk sizes, Dask
not installed); adcompiler compile --backend dask's module run where adcompiler is not; random
programs, with and without control flow (ADCOMPILER_DASK_PROGRAMS=60 draws more).
"""

import ast
import os
import sys

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
from dask.callbacks import Callback  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402

import adcompiler as ad  # noqa: E402
from tests.control_strategies import control_programs  # noqa: E402
from tests.strategies import load, programs  # noqa: E402

CHUNKS = (7, 30, 23)   # uneven, over a data axis of 60
N = sum(CHUNKS)


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def chunked(a, chunks=CHUNKS):
    return da.from_array(a, chunks=(chunks,) + a.shape[1:])


# ---- the workloads -------------------------------------------------------------------------
def elementwise(x):
    return np.sum(np.sin(x) * np.exp(-x ** 2) + np.log1p(x ** 2))


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logistic(w, X, y):
    z = X @ w
    return np.sum(np.logaddexp(0.0, z) - y * z) / X.shape[0]


def mlp(W1, b1, W2, X, y):
    h = np.tanh(X @ W1 + b1)
    return np.mean((h @ W2 - y) ** 2)


def branch(x, w):
    if np.sum(x) > 0:
        return np.sum(np.sin(x * w) ** 2)
    return np.sum((x * w) ** 3)


def tolerance(x):
    y = x
    while np.max(np.abs(y)) > 0.01:
        y = 0.5 * y + 0.1 * np.tanh(y)
    return np.sum(y * x)


def scatter(table, idx, x):
    return np.sum(np.tanh(table[idx] * x) ** 2)


def residuals(w, x):
    h = x
    for i in range(5):
        h = np.tanh(h * w[i] + 0.1)
    return np.sum(h ** 2)


def workloads():
    rng = np.random.default_rng(3)
    x = rng.normal(size=N)
    X, y = rng.normal(size=(N, 4)), (rng.random(N) > 0.5).astype(float)
    return [
        (elementwise, (x,), (0,), ("x",)),
        (rosenbrock, (x,), (0,), ("x",)),
        (logistic, (rng.normal(size=4), X, y), (1, 2), ("w",)),
        (mlp, (rng.normal(size=(4, 8)), rng.normal(size=8), rng.normal(size=8), X,
               rng.normal(size=N)), (3, 4), ("W1", "b1", "W2")),
        (branch, (np.abs(x), 0.7), (0,), ("x", "w")),
        (branch, (-np.abs(x), 0.7), (0,), ("x", "w")),
        (tolerance, (x,), (0,), ("x",)),
        (scatter, (rng.normal(size=6), rng.integers(0, 6, size=N), x), (1, 2), ("table",)),
        (residuals, (rng.normal(size=5), x), (1,), ("w", "x")),
    ]


WORKLOADS = workloads()
IDS = [f"{f.__name__}-{i}" for i, (f, *_) in enumerate(WORKLOADS)]


def as_dask(args, data):
    return tuple(chunked(a) if i in data else a for i, a in enumerate(args))


def close(got, want, tol=1e-12):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert not isinstance(g, da.Array)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)


@pytest.mark.parametrize("f, args, data, wrt", WORKLOADS, ids=IDS)
def test_gradients_of_chunked_inputs_equal_numpys(f, args, data, wrt):
    want = ad.grad(f, wrt=wrt)(*args)
    lazy = ad.grad(f, wrt=wrt, backend="dask", compute=False)(*as_dask(args, data))
    lazy = lazy if isinstance(lazy, tuple) else (lazy,)
    close(dask.compute(*lazy), want)


def parameters(f, data, wrt):
    return tuple(w for w in wrt if f.__code__.co_varnames.index(w) not in data)


WITH_PARAMETERS = [(w, i) for w, i in zip(WORKLOADS, IDS) if parameters(w[0], w[2], w[3])]


@pytest.mark.parametrize("f, args, data, wrt", [w for w, _ in WITH_PARAMETERS],
                         ids=[i for _, i in WITH_PARAMETERS])
def test_value_and_grad_of_chunked_inputs(f, args, data, wrt):
    """The differentiated arguments that are not data (NumPy arrays, floats): their gradients
    and the value computed."""
    params = parameters(f, data, wrt)
    value, grads = ad.value_and_grad(f, wrt=params, backend="dask")(*as_dask(args, data))
    want_value, want = ad.value_and_grad(f, wrt=params)(*args)
    close((value,) + grads, (want_value,) + want)


# ---- what comes back: computed once, or lazy --------------------------------------------------
class Computes(Callback):
    """Counts the graphs Dask runs (one per dask.compute, persist or .compute())."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def _start(self, dsk):
        self.count += 1


def test_numpy_parameters_get_numpy_gradients_from_one_compute():
    f, args, data, wrt = WORKLOADS[3]   # the MLP: three gradients and the value share a pass
    inputs = as_dask(args, data)
    g = ad.value_and_grad(f, wrt=wrt, backend="dask")
    with Computes() as computes:
        value, grads = g(*inputs)
    assert computes.count == 1
    assert all(type(x) is np.ndarray for x in grads) and np.ndim(value) == 0
    want_value, want = ad.value_and_grad(f, wrt=wrt)(*args)
    close((value,) + grads, (want_value,) + want)


def test_a_dask_argument_differentiated_gets_a_lazy_gradient():
    f, args, data, _ = WORKLOADS[2]
    inputs = as_dask(args, data)
    with Computes() as computes:
        dw, dX = ad.grad(f, wrt=("w", "X"), backend="dask")(*inputs)
    assert computes.count == 0
    assert isinstance(dw, da.Array) and isinstance(dX, da.Array)
    assert dX.chunks[0] == CHUNKS   # the data's own chunks
    close(dask.compute(dw, dX), ad.grad(f, wrt=("w", "X"))(*args))


@pytest.mark.parametrize("compute", [True, False])
def test_compute_chooses(compute):
    f, args, data, _ = WORKLOADS[2]
    inputs = as_dask(args, data)
    for wrt in ("w", ("w", "X")):
        with Computes() as computes:
            out = ad.grad(f, wrt=wrt, backend="dask", compute=compute)(*inputs)
        out = out if isinstance(out, tuple) else (out,)
        assert computes.count == (1 if compute else 0)
        assert all(isinstance(x, da.Array) != compute for x in out)
        close(out if compute else dask.compute(*out), ad.grad(f, wrt=wrt)(*args))


def test_compute_is_for_dask_code_only():
    with pytest.raises(ValueError, match="compute=True is for backend='dask'"):
        ad.grad(elementwise, compute=True)
    with pytest.raises(ValueError, match="compute='yes'"):
        ad.grad(elementwise, backend="dask", compute="yes")


# ---- every entry point ------------------------------------------------------------------------
def test_vjp_and_jvp():
    rng = np.random.default_rng(5)
    x, ct = rng.normal(size=N), rng.normal(size=N)

    def f(x):
        return np.tanh(x) * x

    got = ad.vjp(f, backend="dask")(chunked(x), cotangent=chunked(ct))   # lazy: x is Dask
    assert isinstance(got, da.Array)
    close(got.compute(), ad.vjp(f)(x, cotangent=ct))
    w, X, y = WORKLOADS[2][1]
    t = rng.normal(size=4)
    close(ad.jvp(logistic, backend="dask")(w, chunked(X), chunked(y), tangents=t),
          ad.jvp(logistic)(w, X, y, tangents=t))


def test_jacobian_and_hessian_are_numpy_arrays():
    w, X, y = WORKLOADS[2][1]
    h = ad.hessian(logistic, backend="dask")(w, chunked(X), chunked(y))
    assert type(h) is np.ndarray
    close(h, ad.hessian(logistic)(w, X, y))
    x = np.linspace(-1.0, 1.0, 5)

    def f(x):
        return np.sin(x) * np.sum(x)

    for mode in ("fwd", "rev"):
        close(ad.jacobian(f, mode=mode, backend="dask")(x), ad.jacobian(f, mode=mode)(x))


# ---- the generated source -------------------------------------------------------------------
def calls(source) -> set:
    """The dotted names the source calls (``da.tanh``, ``np.add.at``), comments left out."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            out.add(ast.unparse(node.func))
    return out


def test_the_source_is_dask_code_without_buffers():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20_000, 8))   # far above the planner's and numexpr's thresholds
    args = (rng.normal(size=(8, 16)), rng.normal(size=16), rng.normal(size=16), X,
            rng.normal(size=20_000))
    g = ad.grad(mlp, wrt=("W1", "b1", "W2"), backend="dask")
    got = g(*args[:3], chunked(X, (5000, 7000, 8000)), chunked(args[4], (5000, 7000, 8000)))
    source = g.source
    assert "out=" not in source and "ne." not in source and "_buffers" not in source
    assert "da.tanh" in calls(source) and not any(c.startswith("np.") for c in calls(source))
    close(got, ad.grad(mlp, wrt=("W1", "b1", "W2"))(*args), 1e-11)


def test_predicates_are_computed_once_and_said_so():
    g = ad.grad(branch, backend="dask")
    g(chunked(np.ones(N)), 0.5)
    assert g.source.count("# computes the predicate np.sum(x) > 0 (once, here)") == 1
    assert g.source.count("bool(") == 1   # the adjoint's `if` reads the Python bool
    t = ad.grad(tolerance, backend="dask")
    t(chunked(np.ones(N)))
    assert "# computes the predicate each iteration" in t.source
    assert "y = da.asarray(y).persist()" in t.source
    with Computes() as computes:
        ad.grad(branch, backend="dask", compute=False)(chunked(np.ones(N)), 0.5)
    assert computes.count == 1   # the predicate; the gradient stays lazy


def test_a_while_test_computes_one_iteration_each():
    """The loop's values are persisted before each test: a run of n iterations computes
    2 n + 2 graphs (the first persist, n + 1 tests, n persists; the gradient stays lazy),
    each of one step's tasks, not of the loop from its start."""
    x = np.random.default_rng(6).normal(size=N)
    y, n = x, 0
    while np.max(np.abs(y)) > 0.01:
        y, n = 0.5 * y + 0.1 * np.tanh(y), n + 1
    sizes = []

    class Tasks(Computes):
        def _start(self, dsk):
            super()._start(dsk)
            sizes.append(len(dsk))

    with Tasks() as computes:
        got = ad.grad(tolerance, backend="dask")(chunked(x))
    assert n > 5 and computes.count == 2 * n + 2
    assert max(sizes) < 12 * len(CHUNKS) < n * len(CHUNKS) * 3   # one step: a few per chunk
    close(got.compute(), ad.grad(tolerance)(x))


def test_residuals_are_stacked_lists_and_scatters_bincounts():
    g = ad.grad(residuals, wrt=("w", "x"), backend="dask")
    g(*as_dask(WORKLOADS[-1][1], (1,)))
    assert ".append(" in g.source and "da.stack(" in g.source and "da.empty" not in g.source
    s = ad.grad(scatter, backend="dask")
    s(*as_dask(WORKLOADS[-2][1], (1, 2)))
    assert "_add_at" in calls(s.source) and "np.add.at" not in calls(s.source)
    assert "da.bincount" in calls(s.source)


def embedding(table, idx, X):
    return np.sum(np.tanh(table[idx] * X) ** 2)


def pairs(table, i, j, x):
    return np.sum(np.tanh(table[i, j] * x))


def test_gathers_by_index_arrays_given_as_numpy_or_dask():
    """Rows of a table picked by an index (the data's labels, NumPy or Dask): the adjoint's
    repeated-index sum; and a table read at (i, j) pairs, which Dask writes x.vindex[i, j]."""
    rng = np.random.default_rng(7)
    table, idx, X = rng.normal(size=(6, 4)), rng.integers(0, 6, size=N), rng.normal(size=(N, 4))
    want = ad.grad(embedding)(table, idx, X)
    for index in (idx, chunked(idx)):
        close(ad.grad(embedding, backend="dask")(table, index, chunked(X)), want)
    i, j, x = rng.integers(0, 6, size=N), rng.integers(0, 4, size=N), rng.normal(size=N)
    g = ad.grad(pairs, backend="dask")
    close(g(table, i, j, chunked(x)), ad.grad(pairs)(table, i, j, x))
    assert "table.vindex[i, j]" in g.source
    f32 = ad.grad(embedding, backend="dask")(table.astype(np.float32), idx,
                                             chunked(X.astype(np.float32)))
    assert f32.dtype == np.float32   # (summed in float64 by the bincount: within float32's eps)
    close(f32, ad.grad(embedding)(table.astype(np.float32), idx, X.astype(np.float32)), 1e-5)


def test_sums_over_the_data_axis_reduce_chunk_by_chunk():
    """No task of the gradient's graph makes an array larger than a chunk of the data: the
    data axis is reduced chunk by chunk, never held whole."""
    rng = np.random.default_rng(2)
    n, chunk = 40_000, 2_000
    X, y = rng.normal(size=(n, 4)), (rng.random(n) > 0.5).astype(float)
    largest = []

    class Sizes(Callback):
        def _posttask(self, key, result, dsk, state, id):
            largest.append(getattr(result, "nbytes", 0))

    with Sizes():
        got = ad.grad(logistic, backend="dask")(np.ones(4), chunked(X, (chunk,) * 20),
                                                chunked(y, (chunk,) * 20))
    assert max(largest) <= chunk * 4 * 8 < X.nbytes / 10
    close(got, ad.grad(logistic)(np.ones(4), X, y))


# ---- one way in: the array's namespace ------------------------------------------------------
def test_auto_picks_the_backend_of_the_arrays():
    f, args, data, _ = WORKLOADS[2]
    g = ad.grad(f, backend="auto")
    close(g(*as_dask(args, data)), ad.grad(f)(*args))
    assert "da." in g.source
    close(g(*args), ad.grad(f)(*args))
    assert "da." not in g.source and "np." in g.source


class Elsewhere:
    """An array of a library adcompiler has no backend for."""
    shape, dtype = (3,), np.dtype("float64")

    def __array_namespace__(self, api_version=None):
        return type(sys)("other_arrays")


@pytest.mark.parametrize("backend", ["numpy", "dask", "auto"])
def test_an_array_of_another_library_is_named(backend):
    with pytest.raises(TypeError, match=r"'x' is a .*Elsewhere \(array namespace "
                       r"other_arrays\).*'numpy', 'cupy' .*'dask'"):
        ad.grad(elementwise, backend=backend)(Elsewhere())


def test_a_torch_tensor_is_named():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match=r"'x' is a torch.Tensor"):
        ad.grad(elementwise)(torch.ones(3, dtype=torch.float64))


def test_numpy_code_refuses_a_dask_array():
    with pytest.raises(TypeError, match="compile it with backend='dask'"):
        ad.grad(elementwise)(chunked(np.ones(N)))


def test_unknown_chunk_sizes_are_refused():
    x = chunked(np.arange(N, dtype=float))
    with pytest.raises(TypeError, match="compute_chunk_sizes"):
        ad.grad(elementwise, backend="dask")(x[x > 3.0])


def test_without_dask_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(ImportError, match=r'pip install "adcompiler\[dask\]"'):
        ad.grad(elementwise, backend="dask")


# ---- adcompiler compile --backend dask --------------------------------------------------------
MODULE = '''
import numpy as np
import adcompiler


@adcompiler.value_and_grad(wrt="w")
def loss(w, X, y):
    z = X @ w
    return np.sum(np.logaddexp(0.0, z) - y * z) / X.shape[0]


@adcompiler.grad(wrt="x")
def branchy(x, w):
    if np.sum(x) > 0:
        return np.sum(np.sin(x * w) ** 2)
    return np.sum((x * w) ** 3)


def example_loss():
    rng = np.random.default_rng(0)
    return rng.normal(size=3), rng.normal(size=(40, 3)), (rng.random(40) > 0.5) * 1.0


def example_branchy():
    return np.linspace(-1.0, 2.0, 40), 0.5
'''

# run where adcompiler cannot be imported: the module needs NumPy and Dask only
ISOLATED = '''
import sys
class _NoAdcompiler:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "adcompiler":
            raise ImportError("adcompiler is blocked in this process")
sys.meta_path.insert(0, _NoAdcompiler())
sys.path.insert(0, sys.argv[1])
import numpy as np, dask, dask.array as da
dask.config.set(scheduler="synchronous")
import model_grad as m
w, X, y, x = (np.load(sys.argv[1] + "/inputs.npz")[k] for k in "wXyx")
chunked = lambda a: da.from_array(a, chunks=((7, 50, 43),) + a.shape[1:])
value, dw = m.value_and_grad_loss(w, chunked(X), chunked(y))
assert type(dw) is np.ndarray, type(dw)          # NumPy parameters: computed
dx = m.grad_branchy(chunked(x), 0.5)
assert isinstance(dx, da.Array), type(dx)          # a Dask argument differentiated: lazy
np.savez(sys.argv[1] + "/out.npz", value=value, dw=dw, dx=dx.compute())
assert not any(k.split(".")[0] == "adcompiler" for k in sys.modules)
'''


def test_a_compiled_module_runs_on_dask_without_adcompiler(tmp_path):
    import subprocess
    (tmp_path / "model.py").write_text(MODULE)
    done = subprocess.run([sys.executable, "-m", "adcompiler", "compile", "model.py",
                           "--backend", "dask"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    source = (tmp_path / "model_grad.py").read_text()
    assert "import dask.array as da" in source and "--backend dask" in source
    assert "out=" not in source and "adcompiler" not in calls(source)
    rng = np.random.default_rng(4)
    inputs = dict(w=rng.normal(size=3), X=rng.normal(size=(100, 3)),
                  y=(rng.random(100) > 0.5) * 1.0, x=rng.normal(size=100) + 0.2)
    np.savez(tmp_path / "inputs.npz", **inputs)
    run = subprocess.run([sys.executable, "-I", "-c", ISOLATED, str(tmp_path)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = np.load(tmp_path / "out.npz")
    close((out["value"], out["dw"]),
          ad.value_and_grad(logistic)(inputs["w"], inputs["X"], inputs["y"]))
    close(out["dx"], ad.grad(branch)(inputs["x"], 0.5))


# ---- random programs ------------------------------------------------------------------------
# a few by default (each compiles twice); ADCOMPILER_DASK_PROGRAMS=60 for a campaign
PROGRAMS = int(os.environ.get("ADCOMPILER_DASK_PROGRAMS", "5"))
RANDOM = dict(max_examples=PROGRAMS, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))


def compare_program(program, directory):
    """The program's gradient with respect to its float arguments, each array of two or more
    rows in two uneven chunks, equal to the NumPy backend's."""
    source, f, args = load(program, directory)
    wrt = tuple(n for n, a in zip("xyz", args)
                if isinstance(a, float) or getattr(a, "dtype", np.dtype(int)).kind == "f")
    want = ad.grad(f, wrt=wrt)(*args)
    inputs = [da.from_array(a, chunks=((1, a.shape[0] - 1),) + a.shape[1:])
              if isinstance(a, np.ndarray) and a.ndim and a.shape[0] >= 2 else a for a in args]
    got = ad.grad(f, wrt=wrt, backend="dask", compute=True)(*inputs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, dtype=float), np.asarray(w, dtype=float),
                                   rtol=1e-10, atol=1e-10, err_msg=source)


@settings(**RANDOM)
@given(program=programs())
def test_random_programs(tmp_path_factory, program):
    compare_program(program, tmp_path_factory.mktemp("p"))


@settings(**RANDOM)
@given(program=control_programs())
def test_random_programs_with_control_flow(tmp_path_factory, program):
    compare_program(program, tmp_path_factory.mktemp("p"))
