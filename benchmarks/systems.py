"""The systems under test: one adapter each, turning a workload into a zero-argument gradient step.

``prepare(system, workload, args)`` imports nothing heavy itself (the worker imports the system
first, so that import time is excluded) and returns a :class:`Runner`; its ``step()`` computes one
gradient (finished: JAX results are waited for) and ``to_numpy`` turns a result into a tuple of
NumPy arrays and floats for the check against the hand-written gradient. Compiling happens inside
the first ``step()``, as it would for a user.

The peers run the workload's own function, re-bound so that ``np`` and ``math`` name the peer's
NumPy-like namespace (``jax.numpy``, ``autograd.numpy``, a small shim over ``torch``): every system
computes exactly the code in ``workloads.py``.
"""

from __future__ import annotations

import importlib
import importlib.util
import types
from dataclasses import dataclass
from typing import Callable

import numpy as np

# name -> (label in tables, modules imported before anything is timed)
SYSTEMS = {
    "hand": ("hand-written NumPy", ("numpy",)),
    "compiled": ("adcompiler.grad", ("adcompiler",)),
    "generated": ("generated code only", ("adcompiler",)),
    "standalone": ("standalone module", ("adcompiler",)),
    "numba": ("adcompiler.grad, backend='numba'", ("adcompiler", "numba")),
    "tape": ("adcompiler.tape", ("adcompiler", "adcompiler.tape")),
    "torch": ("PyTorch eager", ("torch",)),
    "torch_compile": ("torch.compile (inductor)", ("torch",)),
    "jax": ("jax.jit(jax.grad)", ("jax", "jax.numpy")),
    "autograd": ("HIPS autograd", ("autograd", "autograd.numpy")),
}
ORDER = tuple(SYSTEMS)

# The libraries adcompiler's generated code calls where they are installed (the GP's gradient
# calls scipy.linalg's triangular solves and LAPACK's potri), imported before the baseline as
# each peer's own library is (torch's linalg, jaxlib): their import is a library's, not the
# gradient's working memory (benchmarks/MEMORY.md: SciPy's import is 23 of the GP's 30 MB).
RUNTIME_LIBRARIES = ("scipy.linalg", "scipy.special", "numexpr")
_GENERATED_CODE = ("compiled", "generated", "standalone", "numba")


class Unsupported(Exception):
    """The system cannot take this workload (e.g. adcompiler's CompileError): not a failure."""


@dataclass
class Runner:
    step: Callable[[], object]
    to_numpy: Callable[[object], tuple]
    # adcompiler's default: wait for the background compile of its numba loop (api.tiers), whose
    # time and memory the worker then counts in tier_s and peak_bytes; returns its tier
    settle: Callable[[], str] | None = None


def label(system: str) -> str:
    return SYSTEMS[system][0]


def import_system(system: str) -> None:
    """Import what ``system`` needs (raises ImportError, or Unsupported for a missing tape)."""
    if system == "jax":
        import os
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    if system == "torch_compile":
        _cold_inductor_cache()
    for module in SYSTEMS[system][1]:
        importlib.import_module(module)
    if system in _GENERATED_CODE:
        for module in RUNTIME_LIBRARIES:
            if importlib.util.find_spec(module.split(".")[0]) is not None:
                importlib.import_module(module)
    if system == "jax":
        import jax
        jax.config.update("jax_enable_x64", True)
    if system == "tape":
        import adcompiler.tape as tape
        if not hasattr(tape, "dynamic_grad"):
            raise ImportError("adcompiler.tape has no dynamic_grad yet")


def _cold_inductor_cache() -> None:
    """Point inductor's caches at a fresh folder (before torch is imported), so that
    torch.compile's first call compiles from nothing, as adcompiler's does (the runner sets
    ADCOMPILER_CACHE=0): a warm cache took its first call on the elementwise workload from
    37 s to 3.8 s (benchmarks/README.md)."""
    import os
    import tempfile

    if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_inductor_")


def rebind(fn, np_namespace, math_namespace):
    """``fn`` with its globals ``np`` and ``math`` replaced (same code object, same closure)."""
    scope = dict(fn.__globals__, np=np_namespace, math=math_namespace)
    return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)


def _plain(result) -> tuple:
    return tuple(v if isinstance(v, float) else np.asarray(v) for v in result)


def _positions(workload):
    import inspect
    names = list(inspect.signature(workload.fn).parameters)
    return tuple(names.index(n) for n in workload.wrt)


# ---- adapters ------------------------------------------------------------------------------------


def _hand(workload, args):
    hand = workload.hand
    return Runner(lambda: hand(*args), _plain)


def _compiled(workload, args):
    import adcompiler

    g = adcompiler.grad(workload.fn, wrt=workload.wrt)
    runner = _warm_as_one_call(lambda: g, args, adcompiler.CompileError)
    runner.settle = lambda: g.wait_tier(120)
    return runner


def _numba(workload, args):
    """The opt-in numba backend: one loop per output where the gradient is elementwise on 1-D
    arrays, the NumPy code (as ``compiled``) elsewhere."""
    import adcompiler

    g = adcompiler.grad(workload.fn, wrt=workload.wrt, backend="numba")
    return _warm_as_one_call(lambda: g, args, adcompiler.CompileError)


def _generated(workload, args):
    """adcompiler's generated function called directly: the compiled code without the dispatch."""
    import adcompiler

    g = adcompiler.grad(workload.fn, wrt=workload.wrt)
    return _warm_as_one_call(lambda: g.specialize(*args).function, args,
                             adcompiler.CompileError)


def _standalone(workload, args):
    """The module ``adcompiler compile`` writes for the workload (compiled for these arguments'
    shapes, one body for every size), imported and called as its users call it: its guards,
    then its body, with no adcompiler at run time. Compiling is part of the first step."""
    import adcompiler

    return _warm_as_one_call(lambda: _compiled_module(workload, args), args,
                             adcompiler.CompileError)


def _compiled_module(workload, args):
    """``grad_<fn>`` of the module compiled from the workload's own function (its source, with
    ``@ad.grad(wrt=...)``), for shapes given as ``--shape``, in a temporary folder (removed
    once the module is imported)."""
    import shutil
    import tempfile

    import adcompiler
    from adcompiler.cli.main import main

    fn = workload.fn
    folder = tempfile.mkdtemp(prefix="adcompiler_bench_")
    try:
        return _compile_in(folder, fn, workload, args, main, adcompiler.CompileError)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _compile_in(folder, fn, workload, args, main, refused):
    """:func:`_compiled_module`'s work in ``folder``: the module written, compiled, imported."""
    import contextlib
    import importlib.util
    import inspect
    import io
    import os

    path = os.path.join(folder, f"{fn.__name__}_module.py")
    with open(path, "w") as f:
        f.write("import math\n\nimport numpy as np\n\nimport adcompiler as ad\n\n\n"
                f"@ad.grad(wrt={tuple(workload.wrt)!r})\n{inspect.getsource(fn)}")
    shapes = shape_options(fn, args)
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        code = main(["compile", path, "-o", os.path.join(folder, "compiled.py"), *shapes])
    if code != 0:
        raise refused(errors.getvalue().strip() or f"exit status {code}")
    spec = importlib.util.spec_from_file_location("compiled", os.path.join(folder, "compiled.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, f"grad_{fn.__name__}")


def shape_options(fn, args) -> list:
    """``adcompiler compile``'s ``--shape`` options giving each parameter of ``fn`` the shape
    (and a dtype other than float64) of ``args``."""
    import inspect

    options = []
    for name, value in zip(inspect.signature(fn).parameters, args):
        dims = "float" if isinstance(value, float) else ",".join(map(str, np.shape(value)))
        dtype = "" if isinstance(value, float) or np.asarray(value).dtype == np.float64 else \
            f":{np.asarray(value).dtype}"      # index arrays (matrix factorization): int64
        options += ["--shape", f"{name}={dims or '()'}{dtype}"]
    return options


def _warm_as_one_call(load, args, refused):
    """A runner whose first step compiles (``load``, then one call), turning ``refused`` into
    Unsupported, and whose warm steps are ``lambda: fn(*args)``: one Python call around the
    system's, exactly as the hand-written gradient is timed."""
    runner = Runner(None, lambda r: _plain(r if isinstance(r, tuple) else (r,)))

    def first():
        try:
            fn = load()
            out = fn(*args)
        except refused as e:
            raise Unsupported(str(e).splitlines()[0]) from None
        runner.step = lambda: fn(*args)
        return out
    runner.step = first
    return runner


def _tape(workload, args):
    from adcompiler.tape import dynamic_grad

    # math.* on a tensor that requires grad raises (it would drop the gradient): the tape runs
    # the same function with math bound to NumPy, which dispatches to tensors.
    g = dynamic_grad(rebind(workload.fn, np, np), wrt=workload.wrt)
    return Runner(lambda: g(*args), _plain)


def _jax(workload, args):
    import jax
    import jax.numpy as jnp

    fn = rebind(workload.fn, jnp, jnp)
    g = jax.jit(jax.grad(fn, argnums=_positions(workload)))
    jargs = [a if isinstance(a, float) else jnp.asarray(a) for a in args]
    jax.block_until_ready(jargs)
    return Runner(lambda: jax.block_until_ready(g(*jargs)),
                  lambda r: tuple(np.asarray(v) for v in r))


def _autograd(workload, args):
    import autograd
    import autograd.numpy as anp

    g = autograd.grad(rebind(workload.fn, anp, anp), argnum=_positions(workload))
    return Runner(lambda: g(*args), lambda r: tuple(np.asarray(v) for v in r))


def _torch_namespace():
    import torch

    def reduction(name):
        op = getattr(torch, name)

        def reduce(x, axis=None, keepdims=False):
            return op(x) if axis is None else op(x, dim=axis, keepdim=keepdims)
        return reduce
    def maximum(a, b):
        return torch.clamp_min(a, b) if isinstance(b, (int, float)) else torch.maximum(a, b)

    ns = types.SimpleNamespace(sum=reduction("sum"), mean=reduction("mean"),
                               max=reduction("amax"), maximum=maximum,
                               transpose=torch.permute, swapaxes=torch.swapaxes,
                               roll=torch.roll, diag=torch.diag,
                               eye=lambda n: torch.eye(n, dtype=torch.float64),
                               linalg=types.SimpleNamespace(cholesky=torch.linalg.cholesky,
                                                            solve=torch.linalg.solve))
    for name in ("tanh", "exp", "log", "log1p", "sin", "cos", "sqrt"):
        setattr(ns, name, getattr(torch, name))
    return ns


def _torch(workload, args, compile=None):
    """PyTorch eager: the workload on the NumPy shim, then ``torch.autograd.grad``. With
    ``compile`` (a backend: "inductor" for the system), the function is ``torch.compile``d:
    dynamo traces it (Python loops unrolled) and AOTAutograd has the backend compile the
    forward and the backward graphs, all inside the first step, so the first gradient reports
    that cost, apart from the warm per-call median."""
    import torch

    fn = rebind(workload.fn, *(2 * (_torch_namespace(),)))
    if compile:
        fn = torch.compile(fn, backend=compile)
    wrt = set(_positions(workload))
    targs = [torch.tensor(a, dtype=torch.float64, requires_grad=i in wrt)
             if isinstance(a, float) else torch.from_numpy(a).requires_grad_(i in wrt)
             for i, a in enumerate(args)]
    leaves = [targs[i] for i in _positions(workload)]

    def step():
        return torch.autograd.grad(fn(*targs), leaves)
    return Runner(step, lambda r: tuple(v.detach().numpy() for v in r))


_ADAPTERS = {"hand": _hand, "compiled": _compiled, "generated": _generated, "tape": _tape,
             "standalone": _standalone, "numba": _numba, "jax": _jax, "autograd": _autograd,
             "torch": _torch,
             "torch_compile": lambda workload, args: _torch(workload, args, compile="inductor")}


def prepare(system: str, workload, args) -> Runner:
    """A runner of ``system``'s gradient of ``workload`` at ``args`` (compiles on first step)."""
    return _ADAPTERS[system](workload, args)


def compare(got: tuple, want: tuple, rtol: float = 1e-6) -> str | None:
    """None when ``got`` matches the hand-written ``want``; otherwise what differs."""
    if len(got) != len(want):
        return f"{len(got)} gradients, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
        if g.shape != w.shape:
            return f"gradient {i}: shape {g.shape}, expected {w.shape}"
        if not np.allclose(g, w, rtol=rtol):
            err = float(np.max(np.abs(g - w)))
            return f"gradient {i}: max abs error {err:.3g} (rtol {rtol})"
    return None
