"""Backends: a graph emitted as readable source for NumPy (``generated_module.py``, ``emit.py``),
CuPy (``cupy_emit.py``, ``cuda_kernels.py``) or numba loops (``numba_emit.py``), with the memory
planner and its checker, numexpr chains and in-place updates."""
