"""Which backend an array belongs to: NumPy, CuPy and Dask arrays told by their types, any other
array by its namespace as ``array-api-compat`` reads it, so every array comes in one way.

Invariants: nothing here imports Dask, CuPy or ``array-api-compat`` until an array that is
neither a NumPy array nor a Python number is met (an array of that library exists, so its
library is imported already); an array of a library adcompiler does not compile for is a
TypeError naming its type and the backends that exist.
"""

from __future__ import annotations

import importlib.util

import numpy as np

# array-api-compat's namespace module -> the backend whose code runs on that library's arrays
_BY_NAMESPACE = {"numpy": "numpy", "cupy": "cupy", "dask.array": "dask"}
DASK_HINT = 'pip install "adcompiler[dask]"'


def is_dask_array(value) -> bool:
    """A ``dask.array.Array`` (told by its type's module, so Dask is not imported to find out)."""
    return type(value).__module__.startswith("dask.") and hasattr(value, "chunks")


def backend_of(value, name="x"):
    """``"numpy"``, ``"cupy"`` or ``"dask"`` for an array of that library; None for a Python
    number, a list or a static value; a TypeError for another library's array."""
    if isinstance(value, (np.ndarray, np.generic)):
        return "numpy"
    if type(value).__module__.split(".")[0] == "cupy" and hasattr(value, "shape"):
        return "cupy"   # (told by the module: array-api-compat would import cupy's wrapper)
    if is_dask_array(value):
        return "dask"
    if not (hasattr(value, "__array_namespace__") or _compat_array(value)):
        return None
    namespace = _namespace_name(value)
    if namespace in _BY_NAMESPACE:
        return _BY_NAMESPACE[namespace]
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    raise TypeError(f"{name!r} is a {kind} (array namespace {namespace}), which adcompiler does "
                    "not compile for: its backends are 'numpy', 'cupy' (CuPy arrays), 'dask' "
                    "(dask.array) and 'numba' (NumPy arrays); pass a NumPy array "
                    f"(np.asarray({name})), or one of those libraries' arrays")


def _compat_array(value) -> bool:
    """An array array-api-compat knows without its own ``__array_namespace__`` (a PyTorch
    tensor); False where array-api-compat is not installed, or for a Python number."""
    if isinstance(value, (int, float, complex, str, bytes, type(None))) or \
            importlib.util.find_spec("array_api_compat") is None:
        return False
    import array_api_compat
    return array_api_compat.is_array_api_obj(value)


def _namespace_name(value) -> str:
    """The short name of ``value``'s array namespace (``"dask.array"``, ``"cupy"``...), from
    array-api-compat where it is installed, else from the array's own ``__array_namespace__``."""
    if importlib.util.find_spec("array_api_compat") is not None:
        import array_api_compat
        try:
            module = array_api_compat.array_namespace(value).__name__
        except Exception:  # noqa: BLE001 - not an array it knows, or its wrapper fails to load
            module = type(value).__module__
        return module.removeprefix("array_api_compat.")
    if is_dask_array(value):
        return "dask.array"
    return value.__array_namespace__().__name__


def backend_for(values) -> str:
    """The backend of the arrays among ``values`` (``"numpy"`` where there are none): ``"dask"``
    where any is a Dask array (NumPy arrays beside it are read as Dask reads them)."""
    found = {backend_of(v, n) for n, v in values} - {None}
    if "dask" in found:
        return "dask"
    return "cupy" if "cupy" in found else "numpy"


def dask_array():
    """``dask.array``, or an ImportError saying how to install it."""
    try:
        import dask.array
    except ImportError as exc:
        raise ImportError(f"backend='dask' needs dask.array, which cannot be imported ({exc}): "
                          f"{DASK_HINT}") from None
    return dask.array
