"""A stand-in for ``cupy`` and ``cupyx`` backed by NumPy, to run generated CuPy code and the
dynamic tape's CuPy path end to end on a machine without a GPU.

Device arrays are :class:`ndarray` (tests/fake_cupy_array.py), a wrapper around a NumPy array
(not a subclass: CuPy's arrays are not NumPy's, and code that confuses them must fail here as it
would on a GPU). Where CuPy
differs from NumPy in ways that matter, the stand-in does what CuPy does:

- no implicit transfer: ``np.asarray(device_array)`` raises TypeError, and so does mixing a NumPy
  array (or a list) with a device array in an operator, a ufunc or a kernel;
- NumPy functions never run on device arrays (``np.exp(d)`` raises): CuPy dispatches many of them
  through ``__array_function__``, not all, and code that works only by that luck is refused;
- reductions, ``dot`` of vectors and integer indexing give 0-d arrays, never scalars;
- functions that take arrays only (``cupy.sum(2.0)``, ``cupy.broadcast_to(2.0, s)``...) refuse
  Python scalars;
- ``ElementwiseKernel`` reads its C body (tests/fake_cuda_c.py), refuses arrays whose dtype is
  not the declared one ("Type is mismatched") and a call without arrays ("Loop size is
  undecided"); every kernel made and every call is counted;
- ``cupyx.scatter_add`` adds at repeated indices; ``cupyx.scatter_max`` keeps the largest.

Stricter than CuPy (on purpose): a NumPy array stored into a device array raises.
:func:`install` puts fresh modules in ``sys.modules`` (tests only, through a fixture).
"""

from __future__ import annotations

import contextlib
import sys
import types

import numpy as np

from tests.fake_cuda_c import parse_params, run_body, Value
from tests.fake_cupy_array import (_array_arg, _Device, _index, _operand, _refuse_host, _static,
                              _wrap, ndarray)


# ---- module functions ------------------------------------------------------------------------
class ufunc:  # noqa: N801
    """A CuPy ufunc: device arrays and scalars in, a device array out (0-d for scalars)."""

    def __init__(self, fn):
        self.fn, self.__name__ = fn, fn.__name__
        self.nin = fn.nin

    def __call__(self, *args, out=None, dtype=None):
        kw = {"dtype": dtype} if dtype is not None else {}
        if out is not None:
            self.fn(*[_operand(a) for a in args], out=_array_arg(out, "ufunc out"), **kw)
            return out
        return _wrap(np.asarray(self.fn(*[_operand(a) for a in args], **kw)))


UFUNCS = ["add", "subtract", "multiply", "divide", "true_divide", "power", "negative",
          "matmul", "greater", "greater_equal", "less", "less_equal", "equal", "not_equal",
          "exp", "log", "log1p", "expm1", "sqrt", "square", "sin", "cos", "tan", "tanh",
          "arctan", "arcsin", "arccos", "sinh", "cosh", "absolute", "reciprocal", "sign",
          "maximum", "minimum", "logical_and", "logical_or", "logical_not", "isnan",
          "isfinite", "isinf", "floor", "ceil", "bitwise_and", "bitwise_or", "invert",
          "floor_divide", "remainder", "positive"]


def _array_first(name, n_arrays=1):
    """A CuPy function whose first ``n_arrays`` arguments must be device arrays."""
    def fn(*args, **kwargs):
        arrays = [_array_arg(a, name) for a in args[:n_arrays]]
        rest = [_static(a) for a in args[n_arrays:]]
        kwargs = {k: _static(v) for k, v in kwargs.items()}
        result = getattr(np, name)(*arrays, *rest, **kwargs)
        return _wrap(np.asarray(result) if name != "broadcast_to" else result)
    fn.__name__ = name
    return fn


ARRAY_FIRST = {"transpose": 1, "reshape": 1, "expand_dims": 1, "squeeze": 1, "ravel": 1,
               "broadcast_to": 1, "copy": 1, "clip": 1, "zeros_like": 1, "ones_like": 1,
               "empty_like": 1, "full_like": 1, "where": 1, "dot": 2, "outer": 2,
               "sum": 1, "mean": 1, "prod": 1, "max": 1, "min": 1, "amax": 1, "amin": 1}


def _joined(name):
    def fn(arrays, axis=0):
        return ndarray(getattr(np, name)([_array_arg(a, name) for a in arrays], axis=axis))
    fn.__name__ = name
    return fn


def _linalg(name):
    """``cupy.linalg.<name>``: device arrays only, device arrays out (slogdet's pair too)."""
    def fn(*arrays):
        result = getattr(np.linalg, name)(*[_array_arg(a, f"linalg.{name}") for a in arrays])
        return _wrap(tuple(result) if name == "slogdet" else result)
    fn.__name__ = name
    return fn


def einsum(subscripts, *operands, dtype=None, optimize=False):
    """``cupy.einsum``: device arrays only (as every CuPy function that is not a ufunc)."""
    arrays = [_array_arg(a, "einsum") for a in operands]
    return ndarray(np.asarray(np.einsum(_static(subscripts), *arrays, dtype=dtype,
                                        optimize=_static(optimize))))


def array(obj, dtype=None, copy=True, **kwargs):
    """An explicit transfer (or copy): NumPy arrays, lists, scalars, device arrays."""
    data = obj._a if isinstance(obj, ndarray) else obj
    return ndarray(np.array(data, dtype=dtype, copy=copy))


def asarray(obj, dtype=None, **kwargs):
    if isinstance(obj, ndarray):
        return obj if dtype is None or obj.dtype == dtype else obj.astype(dtype)
    return ndarray(np.asarray(obj, dtype=dtype).copy())


def asnumpy(a):
    return a.get() if isinstance(a, ndarray) else np.asarray(a)


def full(shape, fill_value, dtype=None):
    if isinstance(fill_value, ndarray):
        if fill_value.shape != ():
            raise ValueError("non-scalar cupy.ndarray cannot be used for fill")
        dtype = dtype or fill_value.dtype
        fill_value = fill_value._a[()]
    _refuse_host(fill_value, "the fill value")
    return ndarray(np.full(shape, fill_value, dtype=dtype))


def result_type(*args):
    return np.result_type(*[a.dtype if isinstance(a, ndarray) else a for a in args])


def get_array_module(*args):
    return sys.modules["cupy"] if any(isinstance(a, ndarray) for a in args) else np


# ---- cupyx -----------------------------------------------------------------------------------
def scatter_add(a, slices, value):
    np.add.at(_array_arg(a, "scatter_add"), _index(slices), _operand(value))


def scatter_max(a, slices, value):
    np.maximum.at(_array_arg(a, "scatter_max"), _index(slices), _operand(value))


def _special_module():
    """``cupyx.scipy.special``: SciPy's ufuncs as CuPy ufuncs (device arrays in and out), and
    ``polygamma(n, x)``."""
    import scipy.special
    from adcompiler.ir.primitives import ELEMENTWISE
    module = types.ModuleType("cupyx.scipy.special")
    for row in ELEMENTWISE:
        if row.module == "scipy.special" and row.name != "polygamma":
            setattr(module, row.name, ufunc(getattr(scipy.special, row.name)))
    module.polygamma = lambda n, x: _wrap(np.asarray(scipy.special.polygamma(
        _static(n), _array_arg(x, "polygamma"))))
    return module


# ---- kernels ---------------------------------------------------------------------------------
class ElementwiseKernel:
    """Runs its C body with NumPy (tests/fake_cuda_c.py), with CuPy's argument checks."""

    def __init__(self, in_params, out_params, operation, name="kernel", **kwargs):
        self.in_params, self.out_params = parse_params(in_params), parse_params(out_params)
        self.operation, self.name = operation, name
        self.calls = 0
        _STATE["made"].append(self)

    def __call__(self, *args):
        if len(args) != len(self.in_params):
            raise TypeError(f"Wrong number of arguments for {self.name!r}")
        inputs, arrays = {}, []
        for (pname, dtype), a in zip(self.in_params, args):
            _refuse_host(a, f"argument {pname} of kernel {self.name}")
            if isinstance(a, ndarray):
                if a.dtype != dtype:
                    raise TypeError(f"Type is mismatched. {pname} {a.dtype} {dtype}")
                arrays.append(a._a)
            inputs[pname] = Value(_operand(a), dtype)
        if not arrays:
            raise ValueError("Loop size is undecided.")
        self.calls += 1
        (out_name, out_dtype), = self.out_params
        shape = np.broadcast_shapes(*[x.shape for x in arrays])
        return ndarray(run_body(self.operation, inputs, out_name, out_dtype, shape))


_STATE = {"made": []}


def _module_dict():
    names = {n: ufunc(getattr(np, n)) for n in UFUNCS}
    names["abs"] = names["absolute"]
    names.update({n: _array_first(n, k) for n, k in ARRAY_FIRST.items()})
    names.update(concatenate=_joined("concatenate"), stack=_joined("stack"), einsum=einsum)
    names["linalg"] = types.SimpleNamespace(**{n: _linalg(n)
                                               for n in ("solve", "inv", "det", "slogdet")})
    names.update({n: getattr(np, n) for n in (
        "float64", "float32", "float16", "int64", "int32", "int8", "uint8", "bool_", "dtype",
        "pi", "e", "inf", "nan", "newaxis", "can_cast")})
    names.update(shape=lambda a: tuple(a.shape) if hasattr(a, "shape") else np.shape(a),
                 ndim=lambda a: a.ndim if hasattr(a, "ndim") else np.ndim(a),
                 size=lambda a: a.size if hasattr(a, "size") else np.size(a))
    names.update({n: (lambda fn: lambda *a, **k: ndarray(fn(*a, **k)))(getattr(np, n))
                  for n in ("zeros", "ones", "empty", "arange", "eye")})
    names.update(ndarray=ndarray, array=array, asarray=asarray, asnumpy=asnumpy, full=full,
                 result_type=result_type, get_array_module=get_array_module,
                 may_share_memory=lambda a, b: np.may_share_memory(a._a, b._a),
                 ElementwiseKernel=ElementwiseKernel)
    runtime = types.SimpleNamespace(getDeviceCount=lambda: 1, getDevice=lambda: 0)
    names["cuda"] = types.SimpleNamespace(Device=_Device, runtime=runtime)
    return names


def make_modules():
    """Fresh ``(cupy, cupyx)`` module objects, with an empty record of kernels made."""
    _STATE["made"] = []
    cupy = types.ModuleType("cupy", "NumPy playing CuPy (tests/fake_cupy.py)")
    cupy.__dict__.update(_module_dict())
    cupy.kernels_made = _STATE["made"]
    cupyx = types.ModuleType("cupyx")
    cupyx.scatter_add, cupyx.scatter_max = scatter_add, scatter_max
    cupyx.scipy = types.ModuleType("cupyx.scipy")
    try:   # (SciPy is optional: without it the stand-in has no cupyx.scipy.special)
        cupyx.scipy.special = _special_module()
    except ImportError:
        pass
    return cupy, cupyx


@contextlib.contextmanager
def install():
    """``cupy`` and ``cupyx`` in ``sys.modules`` as the stand-in, for the ``with`` block;
    adcompiler's cached probe of CuPy is reset on entry and exit."""
    from adcompiler.runtime.compile import cupy_modules
    cupy, cupyx = make_modules()
    modules = {"cupy": cupy, "cupyx": cupyx, "cupyx.scipy": cupyx.scipy,
               "cupyx.scipy.special": getattr(cupyx.scipy, "special", None)}
    modules = {n: m for n, m in modules.items() if m is not None}   # (no SciPy: no special)
    saved = {n: sys.modules.get(n) for n in modules}
    sys.modules.update(modules)
    cupy_modules.cache_clear()
    try:
        yield cupy
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m
        cupy_modules.cache_clear()


def on_device(cp, args):
    """The arguments with every NumPy array moved to the (fake) device."""
    return tuple(cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
