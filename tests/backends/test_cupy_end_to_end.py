"""Generated CuPy code run end to end on tests/fake_cupy.py (NumPy playing CuPy, strict where
CuPy is strict, its kernels running the C text of their bodies): gradients equal to the NumPy
backend's to 1e-10 in float64 on every workload of tests/backends/test_cupy_backend.py, every mode,
random programs with and without control flow, repeated-index assignment, the command line's
modules, benchmarks/gpu.py's set-up; kernels made once per module and reused by every call; the
errors for NumPy inputs.

The stand-in is checked first: it refuses what CuPy refuses, and its reading of a kernel's C
agrees with the tree the C was printed from on every primitive.
"""

import importlib
import sys
import textwrap
import tomllib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import adcompiler as ad
from adcompiler.backends.cuda_kernels import Kernel, kernel_signature, lower_block
from adcompiler.ir.primitives import PRIMS
from adcompiler.passes import fuse

from tests import fake_cupy
from tests.fake_cupy import on_device
from tests.control_strategies import control_programs
from tests.cupy_helpers import (BINARY, SPECIAL, UNARY, assert_close, cases, elementwise,
                           one_node_block, repeated_assignment)
from tests.strategies import load, programs

CASES = cases(np.random.default_rng(8))
ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
# derandomized, as the other random-program tests: a fixed set of programs each run, so a
# CI run cannot fail on a program no earlier run drew (a constant array meeting device
# tensors, say, which raises PyTorch's device error by design)
SETTINGS = dict(deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))


@pytest.fixture
def cp():
    with fake_cupy.install() as module:
        yield module


# ---- the stand-in is as strict as CuPy --------------------------------------------------------
def test_the_stand_in_refuses_what_cupy_refuses(cp):
    x = cp.asarray(np.arange(4.0))
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array"):
        np.asarray(x)
    for mixed in (lambda: x + np.ones(4), lambda: cp.exp(np.ones(4)), lambda: np.exp(x),
                  lambda: cp.sum(2.0), lambda: cp.broadcast_to(2.0, (3,)),
                  lambda: x.__setitem__(slice(None), np.ones(4))):   # (this one on purpose)
        with pytest.raises(TypeError):
            mixed()
    total = cp.sum(x)
    assert type(total) is fake_cupy.ndarray and total.shape == () and float(total) == 6.0
    assert x[0].shape == () and cp.dot(x, x).shape == ()
    kernel = cp.ElementwiseKernel("float64 x0", "float64 out", "out = x0 * 2.0;", "k")
    with pytest.raises(TypeError, match="Type is mismatched"):
        kernel(x.astype(np.float32))
    with pytest.raises(ValueError, match="Loop size is undecided"):
        kernel(1.0)
    assert kernel(x).get().tolist() == [0.0, 2.0, 4.0, 6.0]


def test_repeated_indices_keep_the_first_write_on_the_stand_in(cp):
    """CuPy keeps an unspecified write where an index repeats; the stand-in keeps the first,
    NumPy's opposite, so code that counts on NumPy's last write fails here."""
    y = cp.zeros(3)
    y[cp.asarray(np.array([0, 0, 2]))] = cp.asarray(np.array([1.0, 2.0, 3.0]))
    assert y.get().tolist() == [1.0, 0.0, 3.0]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_stand_in_reads_every_kernel_body_as_printed(dtype):
    """Each primitive's kernel, as C text run by the stand-in, equals the evaluation of the tree
    it was printed from (itself checked against NumPy in test_cupy_backend), bit for bit."""
    a, b = (v.ravel().astype(dtype) for v in np.meshgrid(SPECIAL, SPECIAL))
    cases = [(p, (a,)) for p in UNARY] + [
        (p, ins) for p in BINARY for ins in ((a, b), (a, 2.0), (0.5, b))] + [
        ("power", (a, e)) for e in (2, 0.5, -1, 3.0, 1.5)] + [
        ("where", (a > b, a, b)), ("where", (a > 0, 1.0, b)), ("clip", (a, -1.0, 1.5))]
    for prim, ins in cases:
        with np.errstate(all="ignore"):
            out = np.asarray(PRIMS[prim].fn(*ins)).dtype.name
        root = lower_block(one_node_block(prim, ins, out))
        kernel = Kernel("_k", "k", *kernel_signature(one_node_block(prim, ins, out), root), root)
        arrays = [x for x in ins if isinstance(x, np.ndarray)]
        run = fake_cupy.ElementwiseKernel(kernel.in_params, kernel.out_params, kernel.operation)
        got = run(*[fake_cupy.ndarray(x) for x in arrays]).get()
        np.testing.assert_array_equal(got, kernel.evaluate(*arrays), err_msg=kernel.operation)
        assert got.dtype == out, (prim, got.dtype, out)


# ---- whole gradients --------------------------------------------------------------------------
@pytest.mark.parametrize("cid, f, args, wrt", CASES, ids=[c[0] for c in CASES])
def test_compiled_cupy_gradients_equal_numpy_gradients(cp, cid, f, args, wrt):
    g = ad.grad(f, wrt=wrt, backend="cupy")
    want = ad.grad(f, wrt=wrt)(*args)
    for _ in range(2):   # the second call takes the fast path, with the same kernels
        got = g(*on_device(cp, args))
        assert_close(got, want, 1e-5 if "f32" in cid else 1e-10)
    for grad_, arg in zip(got if isinstance(got, tuple) else (got,), [args[i] for i in wrt]):
        if isinstance(arg, float):
            assert type(grad_) is float
        else:
            assert type(grad_) is fake_cupy.ndarray and grad_.dtype == arg.dtype
    assert len(cp.kernels_made) == len(g.specialize(*args).kernels)


def test_every_mode_runs_on_the_device(cp):
    x = np.random.default_rng(2).standard_normal(4096)
    value, dx = ad.value_and_grad(elementwise, backend="cupy")(cp.asarray(x))
    want_value, want_dx = ad.value_and_grad(elementwise)(x)
    assert type(value) is fake_cupy.ndarray and value.shape == ()   # 0-d, not a float
    assert_close((value, dx), (want_value, want_dx), 1e-10)

    def vector(x):
        return np.tanh(x) * x + 3.0 * x * x
    ct = np.cos(x)
    got = ad.vjp(vector, backend="cupy")(cp.asarray(x), cotangent=cp.asarray(ct))
    assert_close(got, ad.vjp(vector)(x, cotangent=ct), 1e-10)
    got = ad.jvp(elementwise, backend="cupy")(cp.asarray(x), tangents=cp.asarray(ct))
    assert_close(got, ad.jvp(elementwise)(x, tangents=ct), 1e-10)


def test_kernels_are_made_once_per_module_and_reused_by_every_call(cp):
    g = ad.grad(elementwise, backend="cupy")
    x = np.random.default_rng(5).standard_normal(4096)
    for k in range(3):
        assert_close(g(cp.asarray(x + k)), ad.grad(elementwise)(x + k), 1e-10)
    (kernel,) = g.specialize(x).kernels
    assert [(k.name, k.calls) for k in cp.kernels_made] == [(kernel.cuda_name, 3)]


def test_numpy_inputs_are_refused_on_the_fast_path_too(cp):
    g = ad.grad(elementwise, backend="cupy")
    x = np.ones(4096)
    g(cp.asarray(x))   # a device call primes the fast path for this shape and dtype
    with pytest.raises(TypeError, match=r"'x' is a NumPy ndarray: pass cupy.asarray\(x\)"):
        g(x)


def test_repeated_indices_in_assignment_keep_numpys_last_write(cp):
    """The stand-in keeps the first write where an index repeats (CuPy: an unspecified one);
    the generated code still computes NumPy's value and gradient (the last write stays)."""
    v, idx = np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([0, 0, 2, 1, 2])
    got = ad.value_and_grad(repeated_assignment, backend="cupy")(cp.asarray(v), cp.asarray(idx))
    want = ad.value_and_grad(repeated_assignment)(v, idx)
    assert float(want[0]) == 1 * 4 + 2 * 4.0 + 3 * 25 + 4 * 6.0   # NumPy: the last writes
    assert_close(got, want, 1e-12)


# ---- random programs ----------------------------------------------------------------------------
def _compare_on_device(program, tmp_path, rtol=1e-10):
    _, f, args = load(program, tmp_path)
    want = ad.grad(f, wrt=(0, 1, 2))(*args)
    with fake_cupy.install() as cp, np.errstate(all="ignore"):
        got = ad.grad(f, wrt=(0, 1, 2), backend="cupy")(*on_device(cp, args))
    assert_close(got, want, rtol)


@settings(max_examples=60, **SETTINGS)
@given(program=programs())
def test_random_programs_fused_everywhere_run_on_the_device(tmp_path_factory, program):
    """Fusion forced down to one element, so every elementwise chain becomes a kernel."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fuse, "MIN_SIZE", 1)
        _compare_on_device(program, tmp_path_factory.mktemp("p"))


@settings(max_examples=60, **SETTINGS)
@given(program=control_programs())
def test_random_control_flow_runs_on_the_device(tmp_path_factory, program):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fuse, "MIN_SIZE", 1)
        _compare_on_device(program, tmp_path_factory.mktemp("p"))


# ---- the command line's modules, and packaging ---------------------------------------------------
MODULE = '''
import numpy as np
import adcompiler

IDX = np.array([0, 3, 3, 1])


@adcompiler.value_and_grad(wrt=("x", "w"))
def model(x, w, n):
    h = x
    for i in range(n):
        h = np.tanh(h * w + 0.1 * h * h)
    h[IDX] = h[:4] * 2.0
    return np.sum(h * h) + np.max(x)


@adcompiler.jvp
def bump(x):
    return np.sum(np.exp(-x * x) * np.sin(x))


def example_model():
    r = np.random.default_rng(0)
    return r.standard_normal(8192), 0.7, 3


def example_bump():
    return (np.linspace(-2.0, 2.0, 8192),)
'''


def test_command_line_cupy_modules_run_and_make_their_kernels_once(cp, tmp_path, monkeypatch):
    from adcompiler import cli
    (tmp_path / "work.py").write_text(textwrap.dedent(MODULE))
    for backend, out in (("cupy", "work_cupy.py"), ("numpy", "work_numpy.py")):
        assert cli.main(["compile", str(tmp_path / "work.py"), "--backend", backend,
                         "-o", str(tmp_path / out)]) == 0
    monkeypatch.syspath_prepend(str(tmp_path))
    before = len(cp.kernels_made)   # compiling made some: the command line loads its code
    on_gpu, on_cpu, source = (importlib.import_module(m)
                              for m in ("work_cupy", "work_numpy", "work"))
    kernels = cp.kernels_made[before:]   # made once, when the module is imported
    assert kernels and "cupyx.scatter_max" in (tmp_path / "work_cupy.py").read_text()
    x, w, n = source.example_model()
    for _ in range(2):
        assert_close(on_gpu.value_and_grad_model(cp.asarray(x), w, n),
                     on_cpu.value_and_grad_model(x, w, n), 1e-10)
    (t,) = source.example_bump()
    assert_close(on_gpu.jvp_bump(cp.asarray(t), tangents=cp.asarray(np.cos(t))),
                 on_cpu.jvp_bump(t, tangents=np.cos(t)), 1e-10)
    assert cp.kernels_made[before:] == kernels, "a call made a kernel"
    assert sorted(k.calls for k in kernels)[0] >= 1 and max(k.calls for k in kernels) >= 2
    with pytest.raises(TypeError, match=r"runs on the GPU, but x is a ndarray"):
        on_gpu.value_and_grad_model(x, w, n)
    for name in ("work_cupy", "work_numpy", "work"):
        sys.modules.pop(name)


def test_packaging_names_the_cuda_wheels_and_import_needs_no_cupy():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert extras["cuda12"] == ["cupy-cuda12x"] and extras["cuda13"] == ["cupy-cuda13x"]
    assert not any("cupy" in d for d in project["dependencies"])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_gpu_benchmarks_adcompiler_system_runs_its_workloads(cp, dtype):
    """benchmarks/gpu.py's own set-up of the compiled CuPy gradient, on its quick workloads."""
    from benchmarks import gpu
    for label, name, fn, args, wrt in gpu.workloads(True, dtype):
        step, sync = gpu.adcompiler_cupy(cp, fn, args, wrt, name)
        got = step()
        sync()
        assert_close(got, ad.grad(fn, wrt=wrt)(*args), 1e-10 if dtype == "float64" else 2e-4)
