"""Compile generated source into a function, registering it with ``linecache``; bind the array
module of its backend (NumPy, or CuPy imported only here, only for CuPy code).

Invariants: the filename is derived from the source's hash, so a traceback through generated
code shows the generated line, and identical source maps to the same entry. ``np`` is always
NumPy; CuPy code also sees ``cp`` and ``cupyx``, and its NumPy array (and NumPy scalar)
constants as device copies made once, at load. Where CuPy cannot run (not installed, or no CUDA
device) CuPy code still loads, against :class:`CuPyUnavailable`, so its source can be read and
written out; running it raises :class:`BackendUnavailableError` saying why.
"""

from __future__ import annotations

import hashlib
import importlib.util
import linecache
import math
import re
import types
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .namespaces import dask_array

@dataclass
class Compiled:
    graph: object          # the optimised graph (forward and adjoint)
    source: str            # the generated function's source
    function: object       # the loaded function
    fname: str
    backend: str = "numpy"   # "numpy", "cupy", "dask" or "numba" (NumPy code where no loop
                             # plan fits)
    kernels: tuple = ()      # the CuPy backend's ElementwiseKernels (backends.cuda_kernels)
    constants: dict = field(default_factory=dict)  # what the source reads, as given (host)
    tier: object = None      # NumPy code moving to a numba loop: its api.tiers.Tier


BACKENDS = ("numpy", "cupy", "dask", "numba")
# how the generated source spells the array module (numba's Python wrapper is NumPy code)
XP_NAMES = {"numpy": "np", "cupy": "cp", "dask": "da", "numba": "np"}
INSTALL_HINT = 'pip install "adcompiler[cuda12]" (or [cuda13]: the cupy-cuda12x/13x wheels)'


def check_backend(backend) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: use 'numpy', 'cupy', 'dask' or 'numba'")
    if backend == "numba" and importlib.util.find_spec("numba") is None:
        raise ImportError("backend='numba' needs numba, which is not installed: "
                          'pip install "adcompiler[numba]"')
    if backend == "dask":
        dask_array()   # an ImportError saying how to install it
    return backend


def load_function(source: str, fname: str, constants: dict, xp=np, extra=None):
    """Exec ``source`` in a fresh namespace holding NumPy (and ``xp`` as ``cp`` where it is not
    NumPy), math, ``extra`` names and ``constants``."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:10]
    filename = f"<adcompiler {fname} {digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"np": np, "math": math, "__name__": "adcompiler_generated"}
    if xp is not np:
        namespace["cp"] = xp
    namespace.update(extra or {})
    namespace.update(constants)
    exec(compile(source, filename, "exec"), namespace)
    return namespace[fname]


def load_backend(source: str, fname: str, constants: dict, backend="numpy"):
    """:func:`load_function` for ``backend``: CuPy code gets ``cp``, ``cupyx``, and device
    copies of its array constants (or the stand-in, where CuPy cannot run)."""
    if check_backend(backend) == "dask":   # Dask code reads `da` (and NumPy's `np`)
        return load_function(source, fname, constants, extra={"da": dask_array()})
    if backend != "cupy":   # numba code imports numba itself
        return load_function(source, fname, constants)
    cp, cupyx = cupy_modules()
    if not isinstance(cp, CuPyUnavailable):
        constants = {k: cp.asarray(v) if isinstance(v, (np.ndarray, np.generic)) else v
                     for k, v in constants.items()}
        for module in sorted(set(re.findall(r"\bcupyx\.scipy\.\w+", source))):
            importlib.import_module(module)   # cupyx.scipy.special, for cupyx.scipy.special.erf
    return load_function(source, fname, constants, cp, {"cupyx": cupyx})


@lru_cache(maxsize=1)
def cupy_modules():
    """``(cupy, cupyx)``, or a :class:`CuPyUnavailable` for both, saying why."""
    try:
        import cupy
        import cupyx
    except ImportError as exc:
        return (CuPyUnavailable(f"the CuPy backend needs CuPy, which cannot be imported ({exc}): "
                                f"{INSTALL_HINT}"),) * 2
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - CUDARuntimeError, or no driver at all
        count, why = 0, f"CUDA reports: {exc}"
    else:
        why = "CUDA reports no device"
    if count == 0:
        return (CuPyUnavailable(f"the CuPy backend needs a CUDA GPU: {why}"),) * 2
    return cupy, cupyx


class BackendUnavailableError(RuntimeError):
    """CuPy code was run where CuPy cannot run."""


class CuPyUnavailable(types.ModuleType):
    """Stands in for ``cupy`` and ``cupyx`` where they cannot run: kernels can be defined (as
    :class:`UnavailableKernel`), everything else raises :class:`BackendUnavailableError`."""

    def __init__(self, reason: str):
        super().__init__("cupy")
        self.reason = reason

    def ElementwiseKernel(self, in_params, out_params, operation, name="kernel", **_):  # noqa: N802
        return UnavailableKernel(self.reason, in_params, out_params, operation, name)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise BackendUnavailableError(f"cp.{name}: {self.reason}")


class UnavailableKernel:
    """A kernel defined where CuPy cannot run: it keeps its definition; calling it raises."""

    def __init__(self, reason, in_params, out_params, operation, name):
        self.reason, self.name = reason, name
        self.in_params, self.out_params, self.operation = in_params, out_params, operation

    def __call__(self, *args, **kwargs):
        raise BackendUnavailableError(f"kernel {self.name}: {self.reason}")
