"""Run generated code: load its source as a Python function (tracebacks show the generated
lines), the on-disk cache, and what generated code calls."""

from .compile import load_function

__all__ = ["load_function"]
