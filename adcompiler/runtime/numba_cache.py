"""Load a numba backend module so that numba caches its kernel on disk.

numba's ``njit(cache=True)`` keeps compiled machine code next to the function's source file
(in its ``__pycache__``), and on loading it imports the function's module by name to rebuild its
globals. Code exec'd from a string has neither a file nor an importable module, so
:func:`load` writes the generated source to ``<adcompiler cache dir>/numba/<name>.py`` (once;
never modified afterwards, since numba checks the file's time stamp and size) and executes it
as a module registered in ``sys.modules`` under a name made from the same digest.

The digest covers the source and adcompiler's own sources (``cache.compiler_fingerprint``):
numba does not notice when an inlined helper such as ``numba_math.vtanh`` changes, so a new
adcompiler must not find an old kernel. Measured (elementwise gradient at 10^6, two cores):
the first call in a fresh process took 1.25 s compiling, 0.31 s loading from the cache.

Where the cache is off (``ADCOMPILER_CACHE=0``) the emitter leaves ``cache=True`` out and the
source is exec'd as other backends' code is: nothing is written.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
import tempfile
import types

import numpy as np

from . import cache
from .cache import enabled  # noqa: F401 (the same switch as the NumPy code's cache)


def load(source: str, fname: str, constants: dict):
    """The function ``fname`` of ``source``, executed as a module whose file holds ``source``."""
    digest = hashlib.sha256((cache.compiler_fingerprint() + source).encode()).hexdigest()[:20]
    folder = cache.cache_dir() / "numba"
    path = folder / f"{fname}_{digest}.py"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    name = f"adcompiler_numba_{digest}"
    module = sys.modules.get(name)
    if module is None:
        module = types.ModuleType(name)
        module.__file__ = str(path)
        module.__dict__.update({"np": np, "math": math, **constants})
        exec(compile(source, str(path), "exec"), module.__dict__)
        sys.modules[name] = module
    return module.__dict__[fname]
