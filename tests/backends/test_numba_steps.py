"""backend="numba" on counted for loops (step loops), periodic shifts and reshapes (#33).

Every gradient is compared with the NumPy backend's gradient of the same function (checked
against finite differences and the tape elsewhere), at sizes on both sides of the element
loops' thresholds (512-bit vectors from numba_emit.WIDE_MIN, threads from PARALLEL_MIN); the
generated source is read for the loops it promises, and what stays NumPy code says why.
"""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import adcompiler as ad
from adcompiler.backends import numba_emit
from benchmarks import workloads
from tests.helpers import assert_close_normwise, import_source

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")


def _close(got, want, rtol=1e-13):
    assert_close_normwise(got, want, rtol)


def heat(u0, kappa, obs):
    u = u0
    loss = 0.0
    for t in range(obs.shape[0]):
        u = u + kappa * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
        r = u - obs[t]
        loss = loss + np.sum(r * r)
    return loss


def _heat_inputs(n, steps):
    rng = np.random.default_rng(n)
    return rng.normal(size=n), rng.uniform(0.1, 0.3, n), rng.normal(size=(steps, n))


@pytest.mark.parametrize("n", [16, numba_emit.WIDE_MIN + 3, numba_emit.PARALLEL_MIN + 5])
def test_heat_stencil_is_one_kernel_of_step_loops(n):
    args = _heat_inputs(n, 6)
    g = ad.grad(heat, wrt=(0, 1), backend="numba")
    _close(g(*args), ad.grad(heat, wrt=(0, 1))(*args))
    src = g.source
    assert src.count("@numba.njit") == 1 and "NumPy code" not in src
    assert "for t_1 in range(6):" in src and "for t_1_1 in range(5, -1, -1):" in src
    assert "rs[t_1, j] = " in src and "rs[t_1_1, j]" in src       # a stack, filled then read
    assert "u_2, u_2_next = u_2_next, u_2" in src                  # two buffers, swapped
    assert f"u_2[j + {n - 1}]" in src and f"u_2[j - {n - 1}]" in src   # np.roll's wrap-around
    assert "prange" not in src and "np.roll" not in src and "np.add" not in src


def test_the_heat_workload_compiles_to_numba_loops():
    args = workloads.make_heat(n=64, steps=5)
    w = workloads.get("heat")
    g = ad.grad(w.fn, wrt=w.wrt, backend="numba")
    _close(g(*args), ad.grad(w.fn, wrt=w.wrt)(*args))
    _close(g(*args), w.hand(*args), rtol=1e-12)
    assert "@numba.njit" in g.source and "NumPy code" not in g.source


def decay(x, w, obs):
    s = 1.0
    for t in range(obs.shape[0]):
        x = s * x + w * np.tanh(x) - obs[t]
        s = 0.5 * s + 0.25
    return np.sum(x * x) + s


def test_a_carried_scalar_and_array_step_together():
    rng = np.random.default_rng(3)
    for n in (7, 5000):
        x, w, obs = rng.normal(size=n), rng.normal(size=n), rng.normal(size=(4, n))
        g = ad.grad(decay, wrt=(0, 1), backend="numba")
        _close(g(x, w, obs), ad.grad(decay, wrt=(0, 1))(x, w, obs))
        assert "@numba.njit" in g.source and "for t_" in g.source and "vtanh(" in g.source


def tanh_and_exp_steps(x, obs):
    for t in range(obs.shape[0]):
        x = 0.5 * np.tanh(x) + 0.2 * np.exp(-x) - obs[t]
    return np.sum(x * x)


def test_a_step_loop_computes_tanh_from_the_exponential_beside_it():
    rng = np.random.default_rng(5)
    for n in (7, 5000):
        x, obs = rng.normal(size=n), rng.normal(size=(4, n))
        g = ad.grad(tanh_and_exp_steps, backend="numba")
        _close(g(x, obs), ad.grad(tanh_and_exp_steps)(x, obs))
        assert "for t_" in g.source and "vexp_tanh(" in g.source and "vtanh(" not in g.source


def shifted(x, k):
    return np.sum(np.tanh(np.roll(x, 1)) * x + k * np.roll(x, -2) ** 2)


@pytest.mark.parametrize("n", [9, numba_emit.PARALLEL_MIN + 1])
def test_periodic_shifts_without_a_loop_are_element_loops(n):
    rng = np.random.default_rng(n)
    x, k = rng.normal(size=n), rng.normal(size=n)
    g = ad.grad(shifted, wrt=(0, 1), backend="numba")
    _close(g(x, k), ad.grad(shifted, wrt=(0, 1))(x, k))
    assert "@numba.njit" in g.source and "np.concatenate" not in g.source
    assert ("numba.prange" in g.source) == (n >= numba_emit.PARALLEL_MIN_CALLS)


def flattened(x, y):
    v = x.reshape(-1)
    return np.sum(np.exp(-v) * y.reshape(x.size) + v * v)


def test_a_reshape_is_the_same_elements():
    rng = np.random.default_rng(4)
    for shape in ((3, 5), (128, 300)):
        x, y = rng.normal(size=shape), rng.normal(size=shape)
        g = ad.grad(flattened, wrt=(0, 1), backend="numba")
        _close(g(x, y), ad.grad(flattened, wrt=(0, 1))(x, y))
        assert "@numba.njit" in g.source and "reshape(-1)" in g.source


def until(x):
    while np.sum(x * x) < 10.0:
        x = 2.0 * x
    return np.sum(x)


def nested(x, obs):
    for t in range(obs.shape[0]):
        for s in range(2):
            x = np.sin(x) + obs[t]
    return np.sum(x * x)


def recurrent(W, x, h):
    for t in range(x.shape[0]):
        h = np.tanh(h @ W + x[t])
    return np.sum(h * h)


def indexed_in_a_loop(U, iu):
    for t in range(2):
        U = np.sin(U)
    return np.sum(U[iu] * U[iu])


@pytest.mark.parametrize("fn, args, reason", [
    (until, (np.array([0.5, 1.0]),), "a Python `while` loop (`while np.sum(x * x) < 10.0:`); "
     "only counted `for` loops become step loops"),
    (nested, (np.ones(3), np.ones((2, 3))), "it sits inside another loop"),
    (recurrent, (np.eye(3), np.ones((2, 3)), np.ones(3)), "it computes matmul, which has no "
     "loop form (a matrix product or factorization, which stays with NumPy's BLAS and LAPACK); "
     "from `h = np.tanh(h @ W + x[t])`"),
    (indexed_in_a_loop, (np.ones(4), np.array([0, 2, 2])), "parameter iu is i64[3], an index "
     "or mask array: gathers and np.add.at scatter-adds are loop nests only outside `for` loops"),
])
def test_what_stays_numpy_code_says_which_construct(fn, args, reason):
    g = ad.grad(fn, backend="numba")
    _close(g(*args), ad.grad(fn)(*args))
    assert "@numba" not in g.source and reason in " ".join(g.source.split()), g.source


def test_value_and_grad_of_a_loop_stays_numpy_code():
    args = _heat_inputs(8, 3)
    g = ad.value_and_grad(heat, wrt=(0, 1), backend="numba")
    (v, d), (v0, d0) = g(*args), ad.value_and_grad(heat, wrt=(0, 1))(*args)
    assert v == pytest.approx(v0, rel=1e-14)
    _close(d, d0)
    assert "@numba" not in g.source and ("it computes sum, which has no loop form (a reduction "
                                         "inside an expression, along an axis or in a loop step"
                                         ) in " ".join(g.source.split())
    assert "from `loss = loss + np.sum(r * r)`" in g.source


@pytest.mark.parametrize("name, make, reason", [
    ("rnn", lambda: workloads.make_rnn(T=2, hidden=3, d_in=2, batch=2), "computes matmul"),
    ("ode_rk4", lambda: workloads.make_ode(batch=2, d=2, hidden=3, steps=2),
     "computes matmul"),
])
def test_the_workloads_that_stay_numpy_code_say_why(name, make, reason):
    w, args = workloads.get(name), make()
    g = ad.grad(w.fn, wrt=w.wrt, backend="numba")
    _close(g(*args), ad.grad(w.fn, wrt=w.wrt)(*args))
    assert "@numba" not in g.source and reason in " ".join(g.source.split())


def test_step_kernels_load_from_numba_s_disk_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("ADCOMPILER_CACHE")
    monkeypatch.setenv("ADCOMPILER_CACHE_DIR", str(tmp_path))
    args = _heat_inputs(32, 4)
    g = ad.grad(heat, wrt=(0, 1), backend="numba")
    _close(g(*args), ad.grad(heat, wrt=(0, 1))(*args))
    assert "cache=True" in g.source
    (source,) = (tmp_path / "numba").glob("grad_heat_*.py")
    assert "for t_1 in range(4):" in source.read_text()



SETTINGS = dict(deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
EXAMPLES = int(os.environ.get("ADCOMPILER_NUMBA_STEP_EXAMPLES", "4"))   # each compiles 2-10 s
_LEAVES = ["u", "k", "obs[t]", "np.roll(u, 1)", "np.roll(u, -1)", "np.roll(u, 2)", "0.5"]


@st.composite
def _expr(draw, depth=2):
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(_LEAVES))
    a, b = draw(_expr(depth - 1)), draw(_expr(depth - 1))
    return draw(st.sampled_from([f"np.tanh({a})", f"np.sin({a}) * {b}", f"({a} - {b})",
                                 f"0.5 * ({a} + {b})", f"np.exp(-{a} * {a})"]))


@st.composite
def stencil_programs(draw):
    """``u`` stepped by random elementwise expressions of itself, its periodic shifts, ``k``
    and ``obs[t]``: the construct step loops are for."""
    n = draw(st.sampled_from([3, numba_emit.WIDE_MIN + 1, numba_emit.PARALLEL_MIN_CALLS + 7]))
    lines = ["import numpy as np", "", "", "def f(u, k, obs):", "    for t in range(obs.shape[0]):",
             f"        v = {draw(_expr())}", f"        u = 0.5 * u + 0.25 * np.tanh(v + {draw(_expr())})",
             "    return np.sum(u * u * k)", ""]
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    args = (rng.normal(size=n), rng.uniform(0.5, 1.5, n),
            rng.normal(size=(draw(st.integers(1, 4)), n)))
    return "\n".join(lines), args


@settings(max_examples=EXAMPLES, **SETTINGS)
@given(case=stencil_programs())
def test_random_stencil_loops_agree_with_the_numpy_backend(tmp_path_factory, case):
    source, args = case
    f = import_source(source, tmp_path_factory.mktemp("p"), "stencil").f
    g = ad.grad(f, wrt=(0, 1), backend="numba")
    _close(g(*args), ad.grad(f, wrt=(0, 1))(*args), rtol=1e-12)
    assert "@numba.njit" in g.source and "for t_" in g.source, g.source
