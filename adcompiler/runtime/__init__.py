"""Turn generated source into a Python function; tracebacks show the generated lines."""

from .compile import load_function

__all__ = ["load_function"]
