"""Helpers of the CuPy tests (test_cupy_backend, test_cupy_end_to_end, test_tape_cupy): whether
a GPU is there, the values and primitives kernels are checked on, the functions both backends
run, compiling one function for both, comparing results on the host or the device, and a light
NumPy-as-CuPy that evaluates kernels from their trees (tests/fake_cupy.py reads their C).

``NumPyAsCuPy`` runs generated CuPy source on the CPU: ``cp.*`` is NumPy, made as strict as CuPy
where CuPy is stricter (functions that take arrays only refuse Python scalars; reductions return
0-d arrays), ``cupyx.scatter_add`` is ``np.add.at``, and each ``cp.ElementwiseKernel`` is the
NumPy evaluation of the very tree its C body was printed from.
"""

import types

import numpy as np

from adcompiler.backends.cuda_kernels import C_TYPES
from adcompiler.ir import Aval, Block, Literal, Node, Value
from adcompiler.pipeline import compile_gradient, compile_jvp
from adcompiler.runtime.compile import load_function
from adcompiler.api.signature import classify

def _has_gpu() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - not installed, no driver, no device
        return False


HAS_GPU = _has_gpu()
# Values every kernel expression is checked on, and the primitives it is checked for.
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 0.5, 1e-300, 3.0, -1.0])
UNARY = ["negative", "exp", "log", "log1p", "expm1", "sqrt", "square", "sin", "cos", "tan",
         "tanh", "arctan", "arcsin", "arccos", "sinh", "cosh", "abs", "sign", "reciprocal",
         "logical_not"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "greater",
          "greater_equal", "less", "less_equal", "equal", "not_equal", "logical_and",
          "logical_or", "remainder", "floor_divide"]
ARRAY_ONLY = {"sum", "mean", "prod", "max", "min", "transpose", "reshape", "expand_dims",
              "squeeze", "broadcast_to", "where", "clip", "zeros_like", "ones_like", "copy",
              "dot", "outer", "concatenate", "stack"}
REDUCTIONS = {"sum", "mean", "prod", "max", "min"}


def _strict(name, fn):
    def call(*args, **kwargs):
        checked = list(args[0]) if name in ("concatenate", "stack") else \
            list(args[:2]) if name in ("dot", "outer") else [args[0]]
        for a in checked:
            if type(a) in (float, int, bool):
                raise TypeError(f"cupy.{name} takes arrays, not a Python {type(a).__name__}")
        out = fn(*args, **kwargs)
        return np.asarray(out) if name in REDUCTIONS else out
    return call


class NumPyAsCuPy(types.ModuleType):
    """``cupy`` played by NumPy, for the kernels of one compilation (see the module docstring)."""

    def __init__(self, kernels):
        super().__init__("cupy")
        self.kernels = {k.cuda_name: k for k in kernels}
        self.made = []

    def ElementwiseKernel(self, in_params, out_params, operation, name):  # noqa: N802
        kernel = self.kernels[name]
        assert (in_params, out_params, operation) == \
            (kernel.in_params, kernel.out_params, kernel.operation)
        self.made.append(name)
        return kernel.evaluate

    def __getattr__(self, name):
        fn = getattr(np, name)
        return _strict(name, fn) if name in ARRAY_ONLY else fn


CUPYX = types.SimpleNamespace(scatter_add=np.add.at)


def emulate(compiled):
    """``compiled``'s CuPy function, loaded with NumPy playing CuPy."""
    assert compiled.backend == "cupy"
    cp = NumPyAsCuPy(compiled.kernels)
    function = load_function(compiled.source, compiled.fname, compiled.constants, cp,
                             {"cupyx": CUPYX})
    assert sorted(cp.made) == sorted(k.cuda_name for k in compiled.kernels)  # once each, at load
    return function


def compile_both(f, args, wrt=(0,), mode="grad", cotangent=None):
    """``(cupy_compiled, plain_numpy_compiled)`` of ``mode`` of ``f`` for ``args``."""
    names = list(f.__code__.co_varnames[:f.__code__.co_argcount])
    wrt = tuple(names[i] for i in wrt)
    avals = {n: classify(a, n, n in wrt) for n, a in zip(names, args)}
    ct = classify(cotangent, "cotangent", True) if cotangent is not None else None
    if mode == "jvp":
        return (compile_jvp(f, avals, wrt, backend="cupy"), compile_jvp(f, avals, wrt, plain=True))
    return (compile_gradient(f, avals, wrt, mode, ct, backend="cupy"),
            compile_gradient(f, avals, wrt, mode, ct, plain=True))


def assert_close(got, want, rtol):
    """Results (arrays, floats, nested tuples of them, on the host or the device) agree."""
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(g, tuple) or isinstance(w, tuple):
            assert_close(g, w, rtol)
            continue
        g, w = _host(g), _host(w)
        assert np.shape(g) == np.shape(w)
        scale = max(float(np.max(np.abs(w))), 1e-300) if np.size(w) else 1.0
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)


def _host(x):
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else np.asarray(x)


def one_node_block(prim, inputs, out_dtype):
    """A fused block of one ``prim`` node: arrays become params, Python scalars literals."""
    params, ins = [], []
    for x in inputs:
        if isinstance(x, np.ndarray):
            params.append(Value(Aval("array", x.dtype.name, x.shape)))
            ins.append(params[-1])
        else:
            ins.append(Literal(x))
    out = Value(Aval("array", out_dtype, np.broadcast_shapes(*[np.shape(x) for x in inputs])))
    return Block(params=params, nodes=[Node(prim, tuple(ins), {}, (out,))], outputs=[out])


def cuda_unit(kernel, n) -> str:
    """``kernel``'s body in a CUDA kernel shaped as CuPy's ElementwiseKernel writes it: each input
    a ``const`` value read at index ``i``, ``out`` a reference to the output element."""
    types = [t.split() for t in kernel.in_params.split(", ")] + [kernel.out_params.split()]
    params = ", ".join(f"const {C_TYPES[t]}* _raw_{name}" for t, name in types[:-1])
    loads = " ".join(f"const {C_TYPES[t]} {name} = _raw_{name}[i];" for t, name in types[:-1])
    out = C_TYPES[types[-1][0]]
    return (f'extern "C" __global__ void k{n}({params}, {out}* _raw_out, long long n) {{\n'
            f"  long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x;\n"
            f"  if (i >= n) return;\n  {loads}\n  {out}& out = _raw_out[i];\n"
            f"  {kernel.operation}\n}}\n")


# ---- the functions both backends run ------------------------------------------------------------
def seed_loss(w1, w2, w3, inp):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    l4 = l2 * l3
    return l4.mean()


def elementwise(x):
    return np.sum(np.tanh(x) * x + 3.0 * x * x - np.exp(-x))


def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def kitchen(x, y):
    a = np.maximum(x, y) * np.minimum(x, 0.5) + np.clip(x, -0.5, 0.5)
    b = np.where(x > y, np.sqrt(np.abs(y) + 1.0), np.log1p(x * x)) / (1.0 + np.exp(-y))
    c = np.arctan(x) * np.sinh(y * 0.1) + np.cosh(x * 0.1) ** 1.5 - np.expm1(y * 0.01)
    return np.sum(a * b + c * np.sign(x) + np.square(y) * np.tanh(x) + 1.0 / (2.0 + x * x))


def log_softmax(z):
    shifted = z - np.max(z, axis=1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))


def mlp(W1, b1, W2, b2, x, onehot):
    h = np.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    return -np.mean(np.sum(onehot * log_softmax(logits), axis=1))


def loop(x, n):
    for i in range(n):
        x = np.tanh(x) * 0.9 + 0.1 * x * x
    return np.sum(x * x)


def gather(x):
    return np.sum(x[[0, 2, 0]] * 2.0)


def broadcasting(x, w, b):
    h = np.tanh(x * w + b)
    return np.sum(h * h - np.sin(h) * w)


def repeated_assignment(v, idx):
    y = np.zeros(4)
    y[idx] = v * v                        # idx repeats: NumPy keeps the last write
    y[np.array([1, 1, 3])] = v[:3] * 2.0
    return np.sum(y * np.array([1.0, 2.0, 3.0, 4.0]))


def newton_sqrt(a):
    x = a * 0.5 + 0.5
    while np.max(np.abs(x * x - a)) > 1e-12:
        x = 0.5 * (x + a / x)
    return np.sum(x)


def cases(rng):
    """``(id, function, args, wrt)`` for each function both backends run."""
    n = 4096                      # fusion's threshold (adcompiler.passes.fuse.MIN_SIZE)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    mlp_args = (rng.standard_normal((32, 64)) * 0.1, np.zeros(64),
                rng.standard_normal((64, 10)) * 0.1, np.zeros(10),
                rng.standard_normal((128, 32)), np.eye(10)[rng.integers(0, 10, 128)])
    return [
        ("seed_graph", seed_loss, (2.0, 3.0, 4.0, np.ones((2, 2))), (0, 1, 2)),
        ("elementwise", elementwise, (x,), (0,)),
        ("rosenbrock", rosenbrock, (rng.standard_normal(5000),), (0,)),
        ("kitchen", kitchen, (x, y), (0, 1)),
        ("kitchen_f32", kitchen, (x.astype(np.float32), y.astype(np.float32)), (0, 1)),
        ("mlp", mlp, mlp_args, (0, 1, 2, 3)),
        ("loop", loop, (x * 0.5, 3), (0,)),
        ("gather", gather, (rng.standard_normal(4),), (0,)),
        ("broadcasting", broadcasting, (rng.standard_normal((1024, 4)), rng.standard_normal(4),
                                        rng.standard_normal((1, 4))), (0, 1, 2)),
        ("while", newton_sqrt, (rng.uniform(1.0, 4.0, n),), (0,)),
    ]
