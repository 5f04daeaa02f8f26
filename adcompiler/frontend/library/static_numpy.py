"""NumPy functions run while compiling, where every argument is known then: their result is a
constant of the compiled code (``i, j = np.tril_indices(n)``, ``np.meshgrid(np.arange(3.0),
np.arange(2.0))``, ``np.result_type(x.dtype, np.float32)``, ``np.fft.fftfreq(n, d=0.1)``).

Invariant: only functions that compute a value from their arguments and nothing else are run:
none that writes into an argument (``np.copyto``, ``np.put``, ``np.fill_diagonal``: a
module-level array would be changed), reads or writes files (``np.load``, ``np.savetxt``),
prints or sets NumPy's state (``np.set_printoptions``, ``np.seterr``), draws random numbers
(``np.random``: refused elsewhere, see README "Sharp bits"), or calls a function of the user's
(``np.vectorize``, ``np.apply_along_axis``, ``np.piecewise``, ``np.fromfunction``: that would
run user code while compiling). A function of traced values is not run here: it compiles
through its handler, or is refused with the reason that fits it.
"""

from __future__ import annotations

import numpy as np

_MODULES = ("numpy", "numpy.linalg", "numpy.fft", "numpy.lib")
_NOT_RUN = {
    # write into an argument
    "copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis",
    # files, buffers, printing, NumPy's own state
    "load", "loadtxt", "genfromtxt", "fromfile", "fromregex", "save", "savez",
    "savez_compressed", "savetxt", "frombuffer", "from_dlpack", "info", "show_config",
    "show_runtime", "test", "set_printoptions", "get_printoptions", "printoptions",
    "seterr", "geterr", "seterrcall", "geterrcall", "setbufsize", "getbufsize", "errstate",
    # call a function of the user's
    "vectorize", "frompyfunc", "apply_along_axis", "apply_over_axes", "piecewise",
    "fromfunction", "fromiter",
}


def foldable(func) -> bool:
    """Whether ``func`` is a NumPy function this module runs while compiling."""
    module = getattr(func, "__module__", None) or ""
    name = getattr(func, "__name__", "")
    if not callable(func) or isinstance(func, type) or name.startswith("_"):
        return False
    if module.startswith("numpy.random") or name in _NOT_RUN:
        return False
    public = any(getattr(_namespace(m), name, None) is func for m in _MODULES)
    return public or isinstance(func, np.ufunc)


def _namespace(module_name):
    parts = module_name.split(".")
    value = np
    for part in parts[1:]:
        value = getattr(value, part, None)
    return value
