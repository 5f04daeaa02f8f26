"""backend="numba": whole elementwise gradients as loops over their outputs' elements.

Every test compares against the NumPy backend's gradient of the same function (itself checked
against finite differences and the tape elsewhere), and reads the generated source for the loop
structure it promises.
"""

import importlib.util
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import adcompiler as ad
from adcompiler.backends import loop_plan, numba_emit
from adcompiler.runtime import compile as runtime_compile
from tests.helpers import examples, import_source

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def elementwise(x):
    return np.sum(np.tanh(x) * x + 3.0 * x * x - np.exp(-x))


def _both(f, *args, **kw):
    return ad.grad(f, backend="numba", **kw), ad.grad(f, **kw)


def _close(got, want, rtol=1e-12, scale=1e-300):
    """Normwise: the largest error against the largest value (elements near a zero of the
    gradient lose digits to cancellation in any evaluation order), or against ``scale`` where
    that is larger: a gradient that cancels to zero is rounding noise in any order."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    err = np.max(np.abs(got - want)) / max(np.max(np.abs(want)), scale)
    assert err <= rtol, err


def test_rosenbrock_is_one_kernel_of_three_pieces():
    x = np.random.default_rng(0).uniform(-2, 2, 1000)
    g, ref = _both(rosenbrock)
    _close(g(x), ref(x))
    src = g.source
    assert src.count("@numba.njit") == 1 and "np.add" not in src and "ne.evaluate" not in src
    assert "for j in range(0, 1):" in src          # dx[0]: x[:-1]'s term only
    assert "for j in range(1, 999):" in src        # both terms: reads x[j - 1] and x[j + 1]
    assert "for j in range(999, 1000):" in src     # dx[n-1]: x[1:]'s term only
    assert "x[j - 1]" in src and "x[j + 1]" in src
    assert "def grad_rosenbrock(x):" in src and "return dx" in src


def test_elementwise_uses_the_vectorisable_exp_and_tanh_and_threads_when_large():
    x = np.random.default_rng(1).uniform(-2, 2, 1 << 16)
    g, ref = _both(elementwise)
    _close(g(x), ref(x))
    assert "numba.prange" in g.source and "parallel=True" in g.source
    assert "vexp_tanh(" in g.source and "math.exp" not in g.source
    small = np.linspace(-3, 3, 50)
    g_small = ad.grad(elementwise, backend="numba")
    _close(g_small(small), ref(small))
    assert "prange" not in g_small.source          # too small to pay for threads


@pytest.mark.parametrize("fn, n, threads", [
    (rosenbrock, 1 << 16, True), (rosenbrock, 1 << 14, False),   # arithmetic: from 2^15
    (elementwise, 1 << 12, True), (elementwise, 1 << 11, False),  # tanh, exp: from 2^12
])
def test_threads_from_the_measured_sizes(fn, n, threads):
    x = np.random.default_rng(3).uniform(-2, 2, n)
    g, ref = _both(fn)
    _close(g(x), ref(x))
    assert ("numba.prange" in g.source) == threads and ("parallel=True" in g.source) == threads


@pytest.mark.parametrize("fn", [rosenbrock, elementwise])
def test_one_numba_thread_means_no_prange(fn, monkeypatch):
    """With NUMBA_NUM_THREADS=1 a prange does a range's work in a parallel region (Rosenbrock
    at 10^6: 605 against 557 µs a call) and compiles in about twice the time: plain loops."""
    import numba
    monkeypatch.undo()                                   # conftest's "numba has threads"
    x = np.random.default_rng(3).uniform(-2, 2, 1 << 16)
    for count, threads in ((1, False), (2, True)):
        monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", count)
        g, ref = _both(fn)
        _close(g(x), ref(x))
        assert ("numba.prange" in g.source) == threads, g.source
        assert ("parallel=True" in g.source) == threads and ("wide_vectors()" in g.source)


def test_parallel_loops_index_unsigned_so_they_load_whole_vectors():
    """numba wraps a signed index that may be negative (``x[-1]``); in a prange loop LLVM cannot
    rule that out, and gathers element by element. Unsigned indices give contiguous loads."""
    def f(x):
        return np.sum(np.tanh(x[1:] - x[:-1] ** 2))

    x = np.random.default_rng(2).uniform(-2, 2, 1 << 16)
    g, ref = _both(f)
    _close(g(x), ref(x))
    src = g.source
    assert "for j in numba.prange(1, 65535):" in src and "i = numba.uint64(j)" in src
    assert "x[numba.uint64(j + 1)]" in src and "x[numba.uint64(j - 1)]" in src and "dx[i]" in src
    assert "for j in range(0, 1):" in src and "dx[j] =" in src   # serial pieces: plain j
    fn = g.specialize(x).function
    kernel = fn.__globals__["_grad_f_loops"]
    llvm = kernel.inspect_llvm(kernel.signatures[0])
    assert re.search(r"load <(4|8) x double>", llvm) and "gather" not in llvm


def _host_has_avx512():
    from llvmlite import binding
    return bool(binding.get_host_cpu_features().get("avx512f"))


def _host_prefers_wide_vectors():
    """LLVM's own tuning for Zen 4 and 5 already picks 512-bit vectors: there the 256 setting
    (no attribute) gives 8-wide code too, and only the 512 side says something."""
    from llvmlite import binding
    return binding.get_host_cpu_name() in ("znver4", "znver5")


@pytest.mark.parametrize("n", [1 << 16, 1000])   # a parallel loop, a serial one
def test_512_bit_vectors_as_set_give_the_same_bits(monkeypatch, n):
    x = np.random.default_rng(4).uniform(-2, 2, n)
    results, kernels = {}, {}
    for bits in ("256", "512"):
        monkeypatch.setenv("ADCOMPILER_NUMBA_VECTOR_BITS", bits)
        for fn in (elementwise, rosenbrock):
            g = ad.grad(fn, backend="numba")
            results[bits, fn] = g(x)
            assert ("wide_vectors()" in g.source) == (bits == "512")
            function = g.specialize(x).function
            kernels[bits, fn] = function.__globals__[f"_grad_{fn.__name__}_loops"]
    for fn in (elementwise, rosenbrock):
        _close(results["512", fn], ad.grad(fn)(x))
        assert np.array_equal(results["256", fn], results["512", fn])
        if _host_has_avx512():   # elsewhere LLVM has no 8-wide double registers to use
            for bits in ("512",) if _host_prefers_wide_vectors() else ("256", "512"):
                kernel = kernels[bits, fn]
                llvm = kernel.inspect_llvm(kernel.signatures[0])
                assert ("<8 x double>" in llvm) == (bits == "512"), (bits, fn.__name__)


@pytest.mark.parametrize("cpu, avx512, wide", [
    ("sapphirerapids", True, True), ("rocketlake", True, True), ("znver4", True, True),
    ("skylake-avx512", True, False),   # its 512-bit instructions lower the clock
    ("sapphirerapids", False, False),  # a virtual machine that hides AVX-512
    ("haswell", False, False),
])
def test_512_bit_vectors_by_default_where_they_cost_no_clock(monkeypatch, cpu, avx512, wide):
    from llvmlite import binding

    from adcompiler.backends import numba_target
    monkeypatch.delenv("ADCOMPILER_NUMBA_VECTOR_BITS", raising=False)
    monkeypatch.setattr(binding, "get_host_cpu_name", lambda: cpu)
    monkeypatch.setattr(binding, "get_host_cpu_features", lambda: {"avx512f": avx512})
    assert numba_target.wide_vectors_pay() is wide
    monkeypatch.setenv("ADCOMPILER_NUMBA_VECTOR_BITS", "256")
    assert numba_target.wide_vectors_pay() is False
    monkeypatch.setenv("ADCOMPILER_NUMBA_VECTOR_BITS", "512")
    assert numba_target.wide_vectors_pay() is True


def _tanh_and_exp_of_minus(x):
    return np.sum(np.tanh(x) * np.exp(-x) + x * x)


def _tanh_and_exp(x):
    return np.sum(np.tanh(x) + 0.5 * np.exp(x))


def _tanh_alone(x):
    return np.sum(np.tanh(x) * x + np.exp(-2.0 * x))


@pytest.mark.parametrize("n", [50, 1 << 16])   # serial, and prange with wide vectors
@pytest.mark.parametrize("fn, shared", [(elementwise, True), (_tanh_and_exp_of_minus, True),
                                        (_tanh_and_exp, True), (_tanh_alone, False)])
def test_tanh_beside_the_exponential_of_its_argument_is_computed_from_it(fn, shared, n):
    x = np.random.default_rng(4).uniform(-3, 3, n)
    x[:8] = [0.0, -0.0, 1e-12, -0.62, 0.63, 25.0, -25.0, 700.0]
    g, ref = _both(fn)
    with np.errstate(over="ignore", invalid="ignore"):   # inf - inf in the NumPy code
        _close(g(x), ref(x))
        special = np.array([np.inf, -np.inf, np.nan, -800.0, 800.0, -30.0, 30.0, 0.0])
        got, want = g(special), ref(special)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[~np.isnan(want)], want[~np.isnan(want)])
    assert ("vexp_tanh(" in g.source) == shared and ("vtanh(" in g.source) == (not shared)
    if shared:   # one exponential per element, for both
        assert g.source.count("vexp_tanh(") == 1 and "vexp(" not in g.source, g.source


def test_the_emitter_names_only_what_numba_math_defines():
    from adcompiler.backends import numba_emit
    from adcompiler.runtime import numba_math
    assert numba_emit.own_math_names() == {"exp", "tanh", "expm1"}
    assert all(callable(getattr(numba_math, name)) for name in numba_emit._OWN.values())
    assert callable(numba_math.vtanh_e) and callable(numba_math.vexp_tanh)  # tanh beside exp


def test_scalar_parameters_and_two_outputs_of_different_lengths():
    def f(x, y, a):
        return np.sum(a * np.sin(x[2:]) * y[:-1] + x[:-2] / a) + np.sum(y * y)

    rng = np.random.default_rng(2)
    x, y = rng.normal(size=52), rng.normal(size=51)
    g, ref = _both(f, wrt=(0, 1))
    for got, want in zip(g(x, y, 1.5), ref(x, y, 1.5)):
        _close(got, want)
    assert "@numba.njit" in g.source and "def grad_f(x, y, a):" in g.source
    for got, want in zip(g(x, y, -0.25), ref(x, y, -0.25)):  # a is an argument, not a constant
        _close(got, want)


def test_parameters_named_like_the_kernels_globals():
    def f(j, numba, vexp):
        return np.sum(np.exp(j[1:]) * numba[:-1] + vexp * j[:-1])

    rng = np.random.default_rng(4)
    j, m = rng.normal(size=20), rng.normal(size=20)
    g, ref = _both(f, wrt=(0, 1))
    for got, want in zip(g(j, m, 0.5), ref(j, m, 0.5)):
        _close(got, want)
    assert "def _grad_f_loops(j_1, numba_1, vexp_1, dj, dnumba):" in g.source


def test_non_contiguous_and_special_values_mean_what_numpy_means():
    def f(x):
        return np.sum(np.log(x) + 1.0 / x + np.sqrt(x) * np.exp(x))

    x = np.array([0.0, -1.0, np.inf, -np.inf, np.nan, 1e-300, 2.0, 800.0, -800.0, 3.0])
    g, ref = _both(f)
    with np.errstate(all="ignore"):
        want = ref(x)
    got = g(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    _close(got[finite], want[finite])
    wide = np.linspace(0.1, 2.0, 40)
    _close(g(wide[::2]), ref(wide[::2]))            # a strided view: another numba signature


def test_what_has_no_loop_form_is_numpy_code_saying_why():
    def f(w, X):
        return np.sum(np.tanh(X @ w))

    rng = np.random.default_rng(3)
    w, X = rng.normal(size=4), rng.normal(size=(6, 4))
    g, ref = _both(f)
    _close(g(w, X), ref(w, X))
    assert "numba" not in g.source.split('"""')[2]           # the body is NumPy code
    assert "backend='numba' writes loops only" in g.source and "computes matmul" in g.source

    def h(x):   # the forward mean is gone from the gradient, which is 2 x / n: a loop
        return np.mean(x * x)
    gh = ad.grad(h, backend="numba")
    _close(gh(np.arange(5.0)), ad.grad(h)(np.arange(5.0)))
    assert "@numba.njit" in gh.source


def test_value_and_grad_fills_value_terms_in_the_gradient_loops_and_sums_them_with_numpy():
    x = np.random.default_rng(4).uniform(-2, 2, 1 << 16)
    v, d = ad.value_and_grad(rosenbrock, backend="numba")(x)
    v0, d0 = ad.value_and_grad(rosenbrock)(x)
    assert v == pytest.approx(v0, rel=1e-14) and type(v) is type(v0)
    _close(d, d0)
    src = ad.value_and_grad(rosenbrock, backend="numba").specialize(x).source
    assert "NumPy code" not in src and "rosen = np.sum(terms)" not in src
    assert "    rosenbrock = np.sum(terms)\n    return rosenbrock, dx" in src
    # the value's terms (x[:-1]: 0 <= j < n-1) share the loops of dx's pieces
    assert src.count("terms[i] = ") == 1 and src.count("terms[j] = ") == 1
    assert src.count("for j in") == 3


def test_a_scalar_output_is_reduced_in_numpys_order():
    """np.sum of the buffer: the same pairwise summation as NumPy's, so exact terms give the
    very same value (a running sum in the loop would round these terms differently)."""
    def f(x, y, z):
        return 0.5 * np.mean(x * y) + np.sum(y * y) / 3.0 - np.sum(z)

    rng = np.random.default_rng(5)
    x = np.concatenate([[1e16], rng.integers(0, 9, 4099), [-1e16]]).astype(np.float64)
    y = rng.integers(1, 3, 4101).astype(np.float64)             # x * y and y * y: exact
    z = rng.normal(size=7)
    g = ad.value_and_grad(f, wrt=(0, 1, 2), backend="numba")
    value, grads = g(x, y, z)
    src = g.source
    assert "np.mean(terms)" in src and "np.sum(terms_1)" in src
    assert "np.sum(z)" in src and "_loops(x, y, z, dx, dy, dz, terms, terms_1)" in src  # no copy
    assert value == 0.5 * np.mean(x * y) + np.sum(y * y) / 3.0 - np.sum(z)
    running = 0.0
    for term in x * y:
        running += term
    assert running != np.sum(x * y)                              # the order matters here
    ref_value, ref_grads = ad.value_and_grad(f, wrt=(0, 1, 2))(x, y, z)
    assert value == ref_value
    for got, want in zip(grads, ref_grads):
        _close(got, want)


def _nd(x, y, c):
    return np.sum(np.tanh(x) * y + c * x * x - np.exp(-y))


@pytest.mark.parametrize("shape", [(37, 29), (5, 6, 7), (1 << 9, 1 << 8)])   # the last: threads
def test_arrays_of_more_dimensions_loop_over_their_elements_in_c_order(shape):
    rng = np.random.default_rng(6)
    x, y = rng.uniform(-2, 2, shape), rng.uniform(-2, 2, shape)
    g = ad.grad(_nd, wrt=(0, 1), backend="numba")
    dx, dy = g(x, y, 0.5)
    for got, want in zip((dx, dy), ad.grad(_nd, wrt=(0, 1))(x, y, 0.5)):
        assert got.shape == shape and got.flags.c_contiguous
        _close(got, want)
    src = g.source
    big = math.prod(shape) >= numba_emit.APART_MIN           # not at x's or y's page offset
    alloc = f"empty_apart({shape!r}, x, y)" if big else f"np.empty({shape!r}, dtype=np.float64)"
    assert "@numba.njit" in src and f"dx = {alloc}" in src, src
    assert "(x.reshape(-1), y.reshape(-1), c, dx.reshape(-1), dy.reshape(-1))" in src
    assert ("numba.prange" in src) == (math.prod(shape) >= numba_emit.PARALLEL_MIN_CALLS)
    # views that are not C-contiguous: reshape copies them in C order, so j still matches
    xt, ys = rng.uniform(-2, 2, shape[::-1]).T, rng.uniform(-2, 2, shape[:-1] + (2 * shape[-1],))
    ys = ys[..., ::2]
    for got, want in zip(g(xt, ys, 0.5), ad.grad(_nd, wrt=(0, 1))(xt, ys, 0.5)):
        _close(got, want)


@pytest.mark.parametrize("shape", [(65, 63), (4095,)])
def test_a_value_is_summed_as_numpy_sums_it_and_a_gradient_equal_to_a_parameter_is_a_copy(shape):
    """dy = x while np.mean(x) reads x itself: dy must still be an array of its own (it was
    once left without one)."""
    def f(x, y):
        return np.sum(x * y) - np.mean(x)

    rng = np.random.default_rng(7)
    x = rng.integers(0, 9, shape).astype(np.float64)
    x.flat[0], x.flat[-1] = 1e16, -1e16
    y = rng.integers(1, 3, shape).astype(np.float64)           # x * y: exact
    value, (dx, dy) = ad.value_and_grad(f, wrt=(0, 1), backend="numba")(x, y)
    ref_value, ref_grads = ad.value_and_grad(f, wrt=(0, 1))(x, y)
    assert value == ref_value == np.sum(x * y) - np.mean(x)
    _close(dx, ref_grads[0])
    _close(dy, ref_grads[1])
    assert np.array_equal(dy, x) and not np.shares_memory(dy, x)


def _bias(x, b):
    return np.sum(np.tanh(x + b))


def _rows(x, b):
    return np.sum(np.tanh(x[1:]) * x[:-1])


def _columns(x, b):
    return np.sum(np.sum(x * x, axis=0) * b)


@pytest.mark.parametrize("body", [_bias, _rows, _columns])
def test_what_a_flat_loop_cannot_do_on_2d_arrays_is_loop_nests(body):
    """A bias row, a slice of rows, a sum over an axis: no flat loop, but loop nests
    (backends/numba_nests.py), one kernel."""
    rng = np.random.default_rng(8)
    x, b = rng.normal(size=(3, 4)), rng.normal(size=4)
    g = ad.grad(body, backend="numba")
    _close(g(x, b), ad.grad(body)(x, b))
    assert "@numba.njit" in g.source and "_nests(" in g.source and "NumPy code" not in g.source


def test_buffers_named_like_the_loop_locals_keep_their_names():
    """The reduced values are named by the user's variables (t, i), which are also the names
    the loop would give its shared tanh and its unsigned index."""
    def f(x):
        t = np.tanh(x) * x
        i = x * x
        return np.sum(t) + np.mean(i)

    x = np.linspace(-1, 1, 5000)
    g = ad.value_and_grad(f, backend="numba")
    (v, d), (v0, d0) = g(x), ad.value_and_grad(f)(x)
    assert v == pytest.approx(v0, rel=1e-14)
    _close(d, d0)
    assert "numba.prange" in g.source and "np.sum(t) + np.mean(i)" in g.source
    assert "t[i_1] = t_1 * x_j" in g.source


def test_jvp_of_a_loss_is_two_reductions_in_one_loop():
    x = np.random.default_rng(6).uniform(-2, 2, 300)
    t = np.random.default_rng(7).normal(size=300)
    j = ad.jvp(elementwise, backend="numba")
    (v, dv), (v0, dv0) = j(x, tangents=t), ad.jvp(elementwise)(x, tangents=t)
    assert v == pytest.approx(v0, rel=1e-14) and dv == pytest.approx(dv0, rel=1e-13)
    assert "@numba.njit" in j.source and j.source.count("np.sum(") == 2


def test_a_reduction_inside_an_elementwise_expression_is_a_loop_nest():
    def centred(x):
        return np.sum((x - np.mean(x)) ** 2)

    x = np.linspace(-1, 3, 25)
    g = ad.value_and_grad(centred, backend="numba")
    v, d = g(x)
    v0, d0 = ad.value_and_grad(centred)(x)
    assert v == pytest.approx(v0, rel=1e-14)
    _close(d, d0)
    assert "NumPy code" not in g.source and "_nests(" in g.source


def test_too_many_pieces_or_terms_fall_back_to_loop_nests(monkeypatch):
    """Past the element loops' limits, the gradient is loop nests (numba_nests): one nest per
    stored value, each small."""
    x = np.linspace(-1, 1, 40)
    want = ad.grad(rosenbrock)(x)
    monkeypatch.setattr(loop_plan, "MAX_PIECES", 2)       # Rosenbrock's dx needs 3
    g = ad.grad(rosenbrock, backend="numba")
    _close(g(x), want)
    assert "_loops(" not in g.source and "_nests(" in g.source
    monkeypatch.setattr(loop_plan, "MAX_PIECES", 16)
    monkeypatch.setattr(loop_plan, "MAX_TERMS", 5)
    g = ad.grad(rosenbrock, backend="numba")
    _close(g(x), want)
    assert "_loops(" not in g.source and "_nests(" in g.source


_CACHED_RUN = """
import numpy as np, adcompiler as ad

def loss(x):
    return np.sum(np.tanh(x) * x + np.exp(-x))

x = np.linspace(-2, 2, 5000)
g = ad.grad(loss, backend="numba")
d = g(x)
kernel = g.specialize(x).function.__globals__["_grad_loss_loops"]
print(sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values()),
      "cache=True" in g.source, repr(float(d @ np.arange(5000.0))))
"""


def test_kernels_are_cached_on_disk_by_numba_across_processes(tmp_path, monkeypatch):
    script = tmp_path / "run.py"
    script.write_text(_CACHED_RUN)
    env = {**os.environ, "ADCOMPILER_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("ADCOMPILER_CACHE", None)
    runs = [subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                           text=True, check=True).stdout.split() for _ in range(2)]
    assert runs[0][:3] == ["0", "1", "True"]      # compiled, and stored
    assert runs[1][:3] == ["1", "0", "True"]      # loaded: no compile
    assert runs[0][3] == runs[1][3]
    (source,) = (tmp_path / "cache" / "numba").glob("grad_loss_*.py")
    assert "cache=True" in source.read_text()
    # with the cache off, nothing is written and the kernel is not marked for caching
    monkeypatch.setenv("ADCOMPILER_CACHE_DIR", str(tmp_path / "off"))   # (ADCOMPILER_CACHE=0)
    g = ad.grad(elementwise, backend="numba")
    g(np.linspace(-1, 1, 30))
    assert "cache=True" not in g.source and not (tmp_path / "off").exists()
    # a cache directory that cannot be made: compiled in this process only, still right
    (tmp_path / "a_file").write_text("")
    monkeypatch.delenv("ADCOMPILER_CACHE")
    monkeypatch.setenv("ADCOMPILER_CACHE_DIR", str(tmp_path / "a_file" / "cache"))
    g = ad.grad(elementwise, backend="numba")
    _close(g(np.linspace(-1, 1, 30)), ad.grad(elementwise)(np.linspace(-1, 1, 30)))
    assert "cache=True" not in g.source


def test_a_missing_numba_is_an_install_hint():
    assert not loop_plan.Unplanned("x")
    assert "needs numba" in _missing_numba_message()


def _missing_numba_message():
    real = importlib.util.find_spec
    try:
        importlib.util.find_spec = lambda name, *a: None if name == "numba" else real(name, *a)
        with pytest.raises(ImportError) as info:
            ad.grad(rosenbrock, backend="numba")
    finally:
        importlib.util.find_spec = real
    assert 'pip install "adcompiler[numba]"' in str(info.value)
    return str(info.value)


def test_an_unknown_backend_lists_the_backends():
    with pytest.raises(ValueError, match="'numpy', 'cupy', 'dask' or 'numba'"):
        runtime_compile.check_backend("jax")


# ---- random elementwise expressions of shifted slices: numba against NumPy -------------------
N = 3000


@st.composite
def expressions(draw, depth=3):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(["a", "b", "c", "0.5", "2.0"]))
    kind = draw(st.sampled_from(["+", "-", "*", "/", "neg", "pow", "call"]))
    a = draw(expressions(depth - 1))
    if kind in "+-*":
        return f"({a} {kind} {draw(expressions(depth - 1))})"
    if kind == "/":
        return f"({a} / {draw(st.sampled_from(['b', 'np.exp(c)', '(a * a + 1.0)']))})"
    if kind == "neg":
        return f"(-{a})"
    if kind == "pow":
        return f"({a}) ** {draw(st.sampled_from([2, 3]))}"
    fn = draw(st.sampled_from(["tanh", "sin", "exp", "log1p", "expm1"]))
    return f"np.{fn}({a} * 0.25)" if fn != "log1p" else f"np.log1p(np.abs({a}))"


def _load(expr, directory):
    source = ("import numpy as np\n\n\ndef f(x, y):\n    a, b, c = x[1:], x[:-1], y[2:]\n"
              f"    return np.sum({expr} * b)\n")
    return import_source(source, directory, "nb").f


@settings(max_examples=examples(15, 6), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=expressions())
def test_random_gradients_match_numpy(expr, tmp_path):
    f = _load(expr, tmp_path)
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.5, 1.5, N + 1), rng.uniform(0.5, 1.5, N + 2)
    g = ad.grad(f, wrt=(0, 1), backend="numba")
    got = g(x, y)
    assert "@numba.njit" in g.source, expr
    for have, want in zip(got, ad.grad(f, wrt=(0, 1))(x, y)):
        # inputs in [0.5, 1.5] give terms of order 1: c * (c/b + c/b) * b has a gradient in x
        # that is 0 exactly, and both backends return rounding noise of 1e-16 for it
        _close(have, want, rtol=1e-11, scale=1.0)
    assert math.isfinite(float(np.sum(got[0])))


def test_piecewise_functions_split_ties_as_the_numpy_code_does():
    def f(x, y):
        return np.sum(np.maximum(x, y) * np.abs(x) + np.minimum(x, 0.5) + np.where(x > y, x, y * y))

    x = np.array([-1.0, 0.0, 0.5, 0.5, 2.0, np.nan, 1.0])
    y = np.array([-1.0, 1.0, 0.5, 3.0, 1.0, 0.0, np.nan])
    g, ref = _both(f, wrt=(0, 1))
    for got, want in zip(g(x, y), ref(x, y)):
        np.testing.assert_array_equal(got, want)
    assert "@numba.njit" in g.source
