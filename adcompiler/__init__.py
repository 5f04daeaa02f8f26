"""adcompiler: compile NumPy functions into readable reverse-mode gradient code, ahead of time."""

from .api import GradientFunction, grad, value_and_grad, vjp
from .errors import CompileError

__version__ = "0.1.0"
__all__ = ["grad", "value_and_grad", "vjp", "CompileError", "GradientFunction"]
