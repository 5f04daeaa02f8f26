"""The CuPy backend (``backend="cupy"``): the same gradients as NumPy's, as CuPy source with one
``cupy.ElementwiseKernel`` per fused elementwise chain.

Without a GPU (CI has none): golden CuPy sources; each primitive's kernel expression against
NumPy; every function's whole generated CuPy code run with NumPy playing CuPy, kernels evaluated
from the tree their C body was printed from, against the plain NumPy gradient; the kernel bodies
compiled by nvcc where it is installed; the errors (NumPy arrays for CuPy code, and the reverse;
CuPy code run where CuPy cannot run); the command line. With a GPU (skipped unless CuPy sees a
CUDA device): the same functions on CuPy arrays equal NumPy's gradients to 1e-10 (float64).
The whole code run on a stricter stand-in for CuPy is in test_cupy_end_to_end.py, the tape on
CuPy arrays in test_tape_cupy.py.
"""

import shutil
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import adcompiler as ad
from adcompiler.backends.cuda_kernels import c_code, evaluate, lower_block
from adcompiler.ir.primitives import PRIMS
from adcompiler.passes import fuse
from adcompiler.runtime.compile import BackendUnavailableError, CuPyUnavailable, cupy_modules

from tests.cupy_helpers import (BINARY, HAS_GPU, SPECIAL, UNARY, assert_close, cases, compile_both,
                           cuda_unit, elementwise, emulate, gather, loop, one_node_block,
                           repeated_assignment, seed_loss)
from tests.strategies import load, programs

CASES = cases(np.random.default_rng(8))
CASE_IDS = [c[0] for c in CASES]


needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs CuPy and a CUDA device")
ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


# ---- golden sources ---------------------------------------------------------------------------
SEED_GRAPH = '''\
def grad_seed_loss(w1, w2, w3, inp):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    # grad of: l3 = l1 * w3
    t1 = l2 * w3
    dw3 = 0.25 * float(cp.sum(l2 * l1))
    # grad of: l2 = l1 + w2
    t1 += l3
    dw2 = 0.25 * float(cp.sum(l3))
    # grad of: l1 = inp * w1
    dw1 = 0.25 * float(cp.sum(t1 * inp))
    return dw1, dw2, dw3
'''

ELEMENTWISE = '''\
_k0 = cp.ElementwiseKernel(
    "float64 x0, float64 x1", "float64 out",
    "out = fma(x1, fma(-x0, x0, 7.0), x0) + exp(-x1);",
    "grad_elementwise_k0")


def grad_elementwise(x):
    t1 = cp.tanh(x)
    # grad of: return np.sum(np.tanh(x) * x + 3.0 * x * x - np.exp(-x))
    # dx = t1 + x * (7 - t1 ** 2) + cp.exp(-x)
    dx = _k0(t1, x)
    return dx
'''

GATHER = '''\
# Names this code reads but does not define (bound when it loads; a compiled
# gradient's .constants holds them):
#   const: int64[3] = [0, 2, 0]


def grad_gather(x):
    # grad of: return np.sum(x[[0, 2, 0]] * 2.0)
    dt2 = cp.full((3,), 2.0, dtype=cp.float64)
    dx = cp.zeros((4,), dtype=cp.float64)
    cupyx.scatter_add(dx, const, dt2)
    return dx
'''

LOOP = '''\
_k0 = cp.ElementwiseKernel(
    "float64 x0, float64 x1", "float64 out",
    "out = fma(x1, 0.9, (0.1 * x0) * x0);",
    "grad_loop_k0")


_k1 = cp.ElementwiseKernel(
    "float64 x0, float64 x1, float64 x2", "float64 out",
    "out = x1 * fma(-0.9, x0 * x0, fma(0.2, x2, 0.9));",
    "grad_loop_k1")


def grad_loop(x, n):
    xs = cp.empty((3, 4096), dtype=cp.float64)
    saved = cp.empty((3, 4096), dtype=cp.float64)
    for i in range(3):
        xs[i] = x
        t1 = cp.tanh(x)
        # x = t1 * 0.9 + 0.1 * x * x
        x = _k0(x, t1)
        saved[i] = t1
    # grad of: return np.sum(x * x)
    dx_3 = 2.0 * x
    # grad of: for i in range(n):
    dx_1 = dx_3
    for i_1 in reversed(range(3)):
        x_1 = xs[i_1]
        t2 = saved[i_1]
        # dx_1 = dx_1 * (0.2 * x_1 + 0.9 - 0.9 * t2 ** 2)
        dx_1 = _k1(t2, dx_1, x_1)
    return dx_1
'''


@pytest.mark.parametrize("f, args, wrt, golden", [
    (seed_loss, (2.0, 3.0, 4.0, np.ones((2, 2))), (0, 1, 2), SEED_GRAPH),
    (elementwise, (np.ones(4096),), 0, ELEMENTWISE),   # 4096: fusion's MIN_SIZE
    (gather, (np.ones(4),), 0, GATHER),
    (loop, (np.ones(4096), 3), 0, LOOP),
], ids=["seed_graph", "elementwise", "gather", "loop"])
def test_golden_cupy_source(f, args, wrt, golden):
    g = ad.grad(f, wrt=wrt, backend="cupy")
    assert g.specialize(*args).source == golden   # compiles without CuPy: only running needs it
    numpy_source = ad.grad(f, wrt=wrt).specialize(*args).source
    assert "cp." not in numpy_source and "ElementwiseKernel" not in numpy_source


def test_cupy_code_never_spells_numpy():
    for _, f, args, wrt in CASES:
        source = compile_both(f, args, wrt)[0].source
        code = "\n".join(line.split("#")[0] for line in source.splitlines())
        assert "np." not in code and "cp." in code, source


# ---- one primitive at a time: the kernel expression against NumPy -------------------------------
_OPERATORS = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
              "multiply": lambda a, b: a * b, "divide": lambda a, b: a / b,
              "power": lambda a, b: a ** b, "negative": lambda a: -a}


def _check_prim(prim, *inputs):
    with np.errstate(all="ignore"):
        want = _OPERATORS.get(prim, PRIMS[prim].fn)(*inputs)
    root = lower_block(one_node_block(prim, inputs, np.asarray(want).dtype.name))
    assert root is not None, prim
    got = evaluate(root, [x for x in inputs if isinstance(x, np.ndarray)])
    assert got.dtype == want.dtype, (prim, got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want, err_msg=prim)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_each_primitive_computes_what_numpy_computes(dtype):
    a, b = (v.ravel().astype(dtype) for v in np.meshgrid(SPECIAL, SPECIAL))
    for prim in UNARY:
        _check_prim(prim, a)
    for prim in BINARY:
        _check_prim(prim, a, b)
        _check_prim(prim, a, 2.0)            # a literal: NumPy's weak Python scalar
        _check_prim(prim, 0.5, b)
    for exponent in (2, 0.5, -1, 3.0, 1.5):  # ``**``'s fast paths, and pow
        _check_prim("power", a, exponent)
    _check_prim("where", a > b, a, b)
    _check_prim("where", a > 0, 1.0, b)
    _check_prim("clip", a, -1.0, 1.5)
    _check_prim("clip", a, b, 3.0)


def test_mixed_dtypes_are_cast_as_numpy_casts():
    rng = np.random.default_rng(1)
    f32, f64 = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64)
    ints = rng.integers(-3, 4, 64)
    for prim in ("add", "multiply", "divide", "maximum", "greater", "equal"):
        _check_prim(prim, f32, f64)
        _check_prim(prim, ints, f64)
        _check_prim(prim, f32, 2.5)
    _check_prim("greater", ints, 2.5)        # compared in float64, as NumPy does
    _check_prim("less", ints, ints[::-1].copy())


def test_what_the_printer_cannot_express_stays_cupy_ufuncs():
    ints = np.arange(8)
    assert lower_block(one_node_block("add", (ints, ints), "int64")) is None  # C int semantics
    half = np.ones(8, dtype=np.float16)
    assert lower_block(one_node_block("exp", (half,), "float16")) is None
    assert lower_block(one_node_block("add", (np.ones(8), float("inf")), "float64")) is None


def test_kernel_text_for_nan_aware_maximum_casts_and_float32_literals():
    x32 = np.ones(8, dtype=np.float32)
    block = one_node_block("maximum", (x32, 0.01), "float32")
    assert "out = (isnan(x0) || (x0 > 0.01f)) ? x0 : 0.01f;" == _c(block)
    block = one_node_block("multiply", (np.ones(8, dtype=np.int64), np.ones(8)), "float64")
    assert _c(block) == "out = ((double) x0) * x1;"
    assert _c(one_node_block("square", (np.ones(8),), "float64")) == "out = x0 * x0;"


def _c(block):
    return c_code(lower_block(block))


# ---- whole functions, with NumPy playing CuPy ----------------------------------------------------
@pytest.mark.parametrize("cid, f, args, wrt", CASES, ids=CASE_IDS)
def test_generated_cupy_code_computes_the_numpy_gradient(cid, f, args, wrt):
    cupy_code, plain = compile_both(f, args, wrt)
    if cid not in ("seed_graph", "gather"):
        assert cupy_code.kernels, "a fused chain should have become a kernel"
    assert cupy_code.source.count("cp.ElementwiseKernel(") == len(cupy_code.kernels)
    got = emulate(cupy_code)(*args)
    assert_close(got, plain.function(*args), 1e-5 if "f32" in cid else 1e-12)


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(program=programs())
def test_random_programs_fused_everywhere_compute_the_numpy_gradient(tmp_path_factory, program):
    """Random straight-line programs (tests/strategies.py) with fusion forced down to one
    element, so every elementwise chain becomes a kernel."""
    _, f, args = load(program, tmp_path_factory.mktemp("programs"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fuse, "MIN_SIZE", 1)
        cupy_code, plain = compile_both(f, args, (0, 1, 2))
    with np.errstate(all="ignore"):
        assert_close(emulate(cupy_code)(*args), plain.function(*args), 1e-12)


def test_every_mode_compiles_for_cupy():
    x = np.random.default_rng(2).standard_normal(4096)
    for mode, extra, ct in [("value_and_grad", (), None), ("vjp", (np.ones(4096),), np.ones(4096)),
                            ("jvp", (np.ones(4096),), None)]:
        f = elementwise if mode != "vjp" else _vector
        cupy_code, plain = compile_both(f, (x,), (0,), mode, ct)
        assert_close(emulate(cupy_code)(x, *extra), plain.function(x, *extra), 1e-12)


def _vector(x):
    return np.tanh(x) * x + 3.0 * x * x


def test_kernels_are_defined_once_and_shared_between_identical_chains():
    def twice(x, y):
        return np.sum(np.tanh(x * 2.0 + 1.0) + np.tanh(y * 2.0 + 1.0))
    x = np.ones(4096)
    source = ad.grad(twice, wrt=(0, 1), backend="cupy").specialize(x, x).source
    assert source.count("cp.ElementwiseKernel(") < source.count("= _k")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_kernel_bodies_compile_as_cuda(tmp_path):
    """Each kernel body inside a kernel shaped as CuPy's ElementwiseKernel writes it (inputs as
    ``const`` values, ``out`` a reference); nvcc compiles device code without a GPU."""
    kernels = {k.operation: k for _, f, args, wrt in CASES
               for k in compile_both(f, args, wrt)[0].kernels}
    assert len(kernels) > 20
    (tmp_path / "kernels.cu").write_text("\n".join(cuda_unit(k, n)
                                                   for n, k in enumerate(kernels.values())))
    done = subprocess.run(["nvcc", "--ptx", "-arch=sm_80", "kernels.cu", "-o", "kernels.ptx"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "fma.rn.f64" in (tmp_path / "kernels.ptx").read_text()


# ---- errors -------------------------------------------------------------------------------------
def test_numpy_arrays_given_to_cupy_code_are_refused():
    g = ad.grad(elementwise, backend="cupy")
    with pytest.raises(TypeError, match=r"compiled for CuPy .*'x' is a NumPy ndarray: pass "
                                        r"cupy.asarray\(x\)"):
        g(np.ones(4096))
    with pytest.raises(TypeError, match="is a list"):
        g([1.0, 2.0])
    with pytest.raises(TypeError, match="'tangents\\[0\\]' is a NumPy ndarray"):
        ad.jvp(elementwise, backend="cupy")(_FakeDeviceArray(), tangents=np.ones(3))
    with pytest.raises(ValueError, match="backend='tpu'"):
        ad.grad(elementwise, backend="tpu")


class _FakeDeviceArray:
    """Looks like a CuPy array to the checks (its type's module is cupy); never computed on."""
    __module__ = "cupy"
    shape, dtype = (3,), np.dtype("float64")


def test_cupy_arrays_given_to_numpy_code_are_refused():
    with pytest.raises(TypeError, match="compiled for NumPy, but 'x' is a CuPy array"):
        ad.grad(elementwise)(_FakeDeviceArray())


@pytest.mark.skipif(HAS_GPU, reason="checks the stand-in used where CuPy cannot run")
def test_cupy_code_loads_where_cupy_cannot_run_and_says_why_when_run():
    compiled = ad.grad(elementwise, backend="cupy").specialize(np.ones(4096))
    kernel = compiled.function.__globals__["_k0"]
    assert kernel.operation == compiled.kernels[0].operation
    with pytest.raises(BackendUnavailableError, match="needs (CuPy|a CUDA GPU)"):
        compiled.function(np.ones(4096))
    assert isinstance(cupy_modules()[0], CuPyUnavailable)


def test_importing_and_compiling_for_cupy_never_needs_cupy(tmp_path):
    code = textwrap.dedent("""
        import sys
        sys.modules["cupy"] = None          # any import of cupy fails
        import numpy as np
        import adcompiler as ad
        def f(x):
            return np.sum(np.tanh(x) * x)
        source = ad.grad(f, backend="cupy").specialize(np.ones(4096)).source
        assert "ElementwiseKernel" in source
        print("ok")
    """)
    (tmp_path / "uses_no_cupy.py").write_text(code)
    done = subprocess.run([sys.executable, "uses_no_cupy.py"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr
    done = subprocess.run([sys.executable, "-c", "import sys, adcompiler; "
                           "print('cupy' in sys.modules)"], capture_output=True, text=True)
    assert done.stdout == "False\n", done.stderr


# ---- the command line ---------------------------------------------------------------------------
def test_command_line_writes_a_cupy_module(tmp_path):
    from adcompiler import cli
    out = tmp_path / "seed_graph_grad.py"
    assert cli.main(["compile", str(ROOT / "samples" / "seed_graph.py"), "--backend", "cupy",
                     "-o", str(out)]) == 0
    text = out.read_text()
    assert "import cupy as cp" in text and "--backend cupy" in text and "device=True" in text
    assert "dw3 = (1 / (d1 * d2)) * float(cp.sum(l2 * l1))" in text   # 1/size, on the float
    assert "_k0 = cp.ElementwiseKernel(" in text   # fused at every size, ahead of time
    # run with a CuPy that has no device: the dispatcher refuses NumPy data first
    namespace = {"_NoDevice": types.SimpleNamespace(ElementwiseKernel=lambda *a: None,
                                                     ndarray=type("ndarray", (), {}))}
    exec(compile(text.replace("import cupy as cp", "cp = _NoDevice"), str(out), "exec"),
         namespace)
    with pytest.raises(TypeError, match=r"runs on the GPU, but inp is a ndarray: pass "
                                        r"cupy.asarray\(inp\)"):
        namespace["grad_loss"](2.0, 3.0, 4.0, np.ones((2, 2)))


def test_show_prints_cupy_source(capsys):
    from adcompiler import cli
    assert cli.main(["show", f"{ROOT / 'samples' / 'mlp.py'}:loss", "--backend", "cupy"]) == 0
    shown = capsys.readouterr().out
    code = "\n".join(line.split("#")[0] for line in shown.splitlines())
    assert "cp.tanh(x @ W1 + b1)" in code and "np." not in code


# ---- on the GPU ---------------------------------------------------------------------------------
@needs_gpu
@pytest.mark.parametrize("cid, f, args, wrt", CASES, ids=CASE_IDS)
def test_gpu_gradients_equal_numpy_gradients(cid, f, args, wrt):
    import cupy
    on_gpu = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
    g = ad.grad(f, wrt=wrt, backend="cupy")
    want = ad.grad(f, wrt=wrt)(*args)
    for _ in range(2):  # the second call takes the fast path, with the same kernels
        got = g(*on_gpu)
        assert_close(got, want, 1e-5 if "f32" in cid else 1e-10)
    for grad_, arg in zip(got if isinstance(got, tuple) else (got,), [args[i] for i in wrt]):
        assert type(grad_) is float if isinstance(arg, float) else \
            isinstance(grad_, cupy.ndarray) and grad_.dtype == arg.dtype
    for k in g.specialize(*args).kernels:
        assert isinstance(g.specialize(*args).function.__globals__[k.name],
                          cupy.ElementwiseKernel)


@needs_gpu
def test_gpu_value_and_grad_returns_a_0d_device_value():
    import cupy
    x = np.random.default_rng(3).standard_normal(4096)
    value, dx = ad.value_and_grad(elementwise, backend="cupy")(cupy.asarray(x))
    want_value, want_dx = ad.value_and_grad(elementwise)(x)
    assert isinstance(value, cupy.ndarray) and value.shape == ()
    assert_close((value, dx), (want_value, want_dx), 1e-10)


@needs_gpu
def test_gpu_repeated_indices_in_assignment_keep_numpys_last_write():
    import cupy
    v, idx = np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([0, 0, 2, 1, 2])
    got = ad.value_and_grad(repeated_assignment, backend="cupy")(cupy.asarray(v), cupy.asarray(idx))
    assert_close(got, ad.value_and_grad(repeated_assignment)(v, idx), 1e-12)
