"""Compile generated source into a function, registering it with ``linecache``.

Invariant: the filename is derived from the source's hash, so a traceback through generated
code shows the generated line, and identical source maps to the same entry.
"""

from __future__ import annotations

import hashlib
import linecache
import math

import numpy as np


def load_function(source: str, fname: str, constants: dict, xp=np):
    """Exec ``source`` in a fresh namespace holding the array module, math and ``constants``."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:10]
    filename = f"<adcompiler {fname} {digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"np": xp, "math": math, "__name__": "adcompiler_generated"}
    if xp is not np:
        namespace["cp"] = xp
    namespace.update(constants)
    exec(compile(source, filename, "exec"), namespace)
    return namespace[fname]
