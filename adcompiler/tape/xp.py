"""The array-module seam: NumPy by default, CuPy only for CuPy data (never imported otherwise).

Invariant: every array the tape stores is an ``xp.ndarray`` of the module returned by
:func:`array_module` for it (0-d arrays, never NumPy scalars), so rules run with
``ArrayOps(xp)`` on the device where the data already lives.
"""

from __future__ import annotations

import numpy

from adcompiler.templates.ops import ArrayOps

_OPS: dict = {}


def is_device_array(value) -> bool:
    """True for a CuPy array (checked by module name, so CuPy is not imported to find out)."""
    return type(value).__module__.startswith("cupy") and hasattr(value, "shape")


def array_module(*values):
    """``cupy`` when any value is a CuPy array, else ``numpy``."""
    for value in values:
        if is_device_array(value):
            import cupy
            return cupy
    return numpy


def array_ops(xp):
    """The (cached) :class:`templates.ops.ArrayOps` namespace over ``xp``."""
    ops = _OPS.get(xp)
    if ops is None:
        ops = _OPS[xp] = ArrayOps(xp)
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
    return numpy.asarray(array)


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
