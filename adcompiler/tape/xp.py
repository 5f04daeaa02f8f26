"""The array-module seam: NumPy by default, CuPy only for CuPy data, Dask only for Dask arrays
(neither imported otherwise; Dask's spelling is :mod:`.lazy`).

Invariants: every array the tape stores is an ``xp.ndarray`` of the module returned by
:func:`array_module` for it (0-d arrays, never NumPy scalars), so rules run with
``ArrayOps(xp)`` on the device where the data already lives; :func:`compute` runs a primitive
with the module of its arrays, chosen here (NumPy's functions are never handed CuPy arrays in
the hope that they dispatch), and refuses NumPy arrays mixed with CuPy ones (no implicit copy);
NumPy arrays mixed with Dask ones are Dask's operands as they are (it chunks them itself).
"""

from __future__ import annotations

import numpy

from adcompiler.ir.primitives import (ELEMENTWISE, PRIMS, build_index, evaluate, kept_writes,
                                     store)
from adcompiler.templates.ops import ArrayOps

from .lazy import DaskModule, DaskOps, dask_module, is_dask_array, missing

_OPS: dict = {}


def is_device_array(value) -> bool:
    """True for a CuPy array (checked by module name, so CuPy is not imported to find out)."""
    return type(value).__module__.startswith("cupy") and hasattr(value, "shape")


def is_foreign_array(value) -> bool:
    """True for an array of another module than NumPy's: CuPy's or Dask's."""
    return type(value).__module__.startswith(("cupy", "dask.")) and hasattr(value, "shape")


def array_module(*values):
    """``cupy`` when any value is a CuPy array, the tape's ``dask.array`` when one is a Dask
    array, else ``numpy``."""
    for value in values:
        if is_device_array(value):
            import cupy
            return cupy
        if is_dask_array(value):
            return dask_module()
    return numpy


def array_ops(xp):
    """The (cached) :class:`templates.ops.ArrayOps` namespace over ``xp``."""
    ops = _OPS.get(xp)
    if ops is None:
        ops = _OPS[xp] = DaskOps(xp) if isinstance(xp, DaskModule) else ArrayOps(xp)
    return ops


def as_array(data, dtype=None, copy=False):
    """``data`` as an array of its own module (a 0-d array for a scalar)."""
    xp = array_module(data)
    if copy:
        return xp.array(data, dtype=dtype, copy=True)
    return xp.asarray(data, dtype=dtype)


def to_numpy(array):
    """A NumPy array with ``array``'s values (copied from the device for CuPy)."""
    if is_device_array(array):
        return array.get()
    return numpy.asarray(array)   # a Dask array computes


def device_of(array) -> str:
    """``"cpu"`` or ``"cuda:N"``, the way PyTorch names devices."""
    if is_device_array(array):
        return f"cuda:{array.device.id}"
    return "cpu"


def on_device(array, device):
    """``array`` on ``device`` (None or "cpu": NumPy; "cuda" or "cuda:N": CuPy)."""
    if device is None or str(device) == "cpu":
        return to_numpy(array) if is_device_array(array) else array
    if not str(device).startswith("cuda"):
        raise ValueError(f"unknown device {device!r}: use 'cpu' or 'cuda[:N]'")
    try:
        import cupy
    except ImportError:
        raise RuntimeError(f"device={device!r} needs CuPy, which is not installed "
                           "(pip install 'adcompiler[cuda12]': the cupy-cuda12x wheel)") from None
    index = int(str(device).partition(":")[2] or 0)
    with cupy.cuda.Device(index):
        return cupy.asarray(array)


def shares(out, data) -> bool:
    """Whether the array ``out`` (not empty) may share memory with the array ``data``."""
    if isinstance(data, numpy.ndarray):
        return isinstance(out, numpy.ndarray) and out.size > 0 and \
            numpy.may_share_memory(out, data)
    check = getattr(array_module(data), "may_share_memory", None)   # CuPy's
    try:
        return check is not None and getattr(out, "size", 0) > 0 and bool(check(out, data))
    except (TypeError, ValueError):
        return False


# ---- one primitive, computed by its arrays' module ------------------------------------------
def compute(prim: str, data, params: dict):
    """``prim[params](*data)`` with NumPy (the compiler's reference, ``evaluate``), or with CuPy
    when an argument is a CuPy array: then every array argument must be one."""
    xp = common_module(data, prim)
    if xp is numpy:
        return evaluate(prim, data, params)
    if isinstance(xp, DaskModule):
        return _on_dask(xp, prim, data, params)
    data = [d[()] if isinstance(d, numpy.ndarray) else d for d in data]   # 0-d: a scalar
    kw = {k: v for k, v in params.items() if k != "py"}
    special = _ON_DEVICE.get(prim)
    if special is not None:
        return special(xp, *data, **kw)
    if prim not in _MODULE_FREE and PRIMS[prim].family in (
            "elementwise", "reduction", "linalg", "shape", "creation"):
        if not is_device_array(data[0]) and prim in _ARRAYS_ONLY:
            data[0] = xp.asarray(data[0])   # CuPy's functions take arrays; ufuncs take scalars
        if prim in _BOTH_ARRAYS:            # np.outer(x, 0.0): a scalar second operand too
            data = [d if is_device_array(d) else xp.asarray(d) for d in data]
        return getattr(xp, prim)(*data, **kw)
    return evaluate(prim, data, params)     # module-free: getitem, list_get, to_float, custom


def common_module(values, what="an operation"):
    """``cupy`` if any value is a CuPy array, else the tape's ``dask.array`` if one is a Dask
    array, else ``numpy``; a NumPy array of one or more dimensions among CuPy arrays raises
    PyTorch's error (0-d ones count as scalars)."""
    device = next((v for v in values if type(v) is not numpy.ndarray and is_device_array(v)),
                  None)
    if device is None:
        lazy = any(type(v) is not numpy.ndarray and is_dask_array(v) for v in values)
        return dask_module() if lazy else numpy
    if any(is_dask_array(v) for v in values):
        raise TypeError(f"{what} was given a CuPy array and a Dask array: the tape runs on one "
                        "array module at a time")
    for v in values:
        if isinstance(v, numpy.ndarray) and v.ndim:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two "
                f"devices, {device_of(device)} and cpu! ({what} was given a CuPy array and a "
                f"NumPy array of shape {v.shape}: nothing is copied implicitly; move it with "
                f"tape.tensor(x, device='cuda') or cupy.asarray(x))")
    return array_module(device)


def _on_dask(xp, prim, data, params):
    """``prim[params](*data)`` on Dask arrays (lazily): NumPy's spelling in ``dask.array``,
    the templates' (:class:`.lazy.DaskOps`) where it differs; what Dask lacks, a TypeError."""
    kw = {k: v for k, v in params.items() if k != "py"}
    ops = array_ops(xp)
    try:
        special = _DASK_SPECIAL.get(prim)
        if special is not None:
            return special(ops, *data, **kw)
        if prim == "sum_to" or prim not in _MODULE_FREE and PRIMS[prim].family in (
                "elementwise", "reduction", "linalg", "shape", "creation"):
            return getattr(ops, prim)(*data, **kw)
        return evaluate(prim, data, params)     # to_float, to_int (compute), custom
    except (AttributeError, NotImplementedError) as error:
        raise missing(f"{PRIMS[prim].spell} ({error})") from None


def _scatter(xp, out, index, g):
    """``out[index] += g`` where repeated indices add up (``cupyx.scatter_add`` on CuPy)."""
    import cupyx
    cupyx.scatter_add(out, index, g)
    return out


_MODULE_FREE = {"getitem", "to_float", "to_int"}   # ``evaluate`` runs them on any array
_ARRAYS_ONLY = {p for p, spec in PRIMS.items()     # a Python scalar first: a 0-d array
                if spec.family in ("reduction", "linalg", "shape", "creation")} | {"where", "clip"}
_BOTH_ARRAYS = {"dot", "outer", "matmul"}   # cupy.outer(x, 0.0) raises: every operand
_ON_DEVICE = {   # where CuPy's spelling is not ``getattr(cupy, prim)(*data, **params)``
    # scipy.special's: cupyx.scipy.special's (templates.ops.library_function)
    **{r.name: lambda xp, *data, _p=r.name: getattr(array_ops(xp), _p)(*data)
       for r in ELEMENTWISE if r.module != "numpy"},
    "concatenate": lambda xp, *xs, axis=0: xp.concatenate([xp.asarray(x) for x in xs], axis),
    "stack": lambda xp, *xs, axis=0: xp.stack([xp.asarray(x) for x in xs], axis),
    "einsum": lambda xp, *xs, subscripts, optimize=False:
        xp.einsum(subscripts, *[xp.asarray(x) for x in xs], optimize=optimize),
    "full": lambda xp, fill, shape, dtype=None: xp.full(shape, fill, dtype=dtype),
    "reshape": lambda xp, x, shape: xp.asarray(x).reshape(shape),   # CuPy's is ``newshape``
    "astype": lambda xp, x, dtype: xp.asarray(x).astype(dtype),
    "sum_to": lambda xp, g, shape: array_ops(xp).sum_to(g, shape),
    "scatter_add": lambda xp, g, *arrays, shape, index:
        array_ops(xp).scatter_add(g, arrays, shape, index),
    "index_add": lambda xp, acc, g, *arrays, index:
        _scatter(xp, xp.array(acc, copy=True), build_index(index, arrays), g),
    "setitem": lambda xp, x, v, *arrays, index:
        store(xp, xp.array(x, copy=True), build_index(index, arrays), v),
    "last_writes": lambda xp, x, *arrays, index:
        kept_writes(xp, x.shape, build_index(index, arrays)),
    **{p: lambda xp, *data, _p=p: getattr(array_ops(xp), _p)(*data)   # cupy.linalg's
       for p in ("solve", "inv", "det", "slogdet_sign", "logabsdet")},
    **{p: lambda xp, *data, _p=p, **params: getattr(array_ops(xp), _p)(*data, **params)
       for p in ("cholesky", "solve_triangular", "eigh_values", "eigh_vectors", "eigvalsh",
                 "svd_u", "svd_s", "svd_vh", "svdvals", "qr_q", "qr_r", "pinv", "lstsq_x")},
}
_DASK_SPECIAL = {   # the templates' ops take the index as (arrays, spec)
    "getitem": lambda ops, x, *arrays, index: ops.getitem(x, arrays, index),
    "setitem": lambda ops, x, v, *arrays, index: ops.setitem(x, v, arrays, index),
    "last_writes": lambda ops, x, *arrays, index: ops.last_writes(x, arrays, index),
    "scatter_add": lambda ops, g, *arrays, shape, index: ops.scatter_add(g, arrays, shape,
                                                                         index),
    "index_add": lambda ops, acc, g, *arrays, index: acc + ops.scatter_add(
        g, arrays, ops.shape(acc), index),
    "full": lambda ops, fill, shape, dtype=None: ops.xp.full(shape, fill, dtype=dtype),
}
