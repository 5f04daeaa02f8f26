"""adcompiler: compile NumPy functions into readable reverse-mode gradient code, ahead of time."""

import os as _os
import sys as _sys

# The derivative templates live at the top of the repository (templates/) and install as the
# subpackage adcompiler.templates. In a source checkout imported directly (the package folder
# shadowing an installed copy), find them beside the package.
_checkout = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), _os.pardir)
if _os.path.isfile(_os.path.join(_checkout, "templates", "elementwise.py")):
    __path__.append(_os.path.normpath(_checkout))  # noqa: F821  (the package's own __path__)

from .api.gradients import GradientFunction, grad, jvp, value_and_grad, vjp  # noqa: E402
from .checking.check_grad import GradientCheckError, check_grad  # noqa: E402
from .custom.vjp import custom_vjp, stop_gradient  # noqa: E402
from .transforms.checkpointing import Checkpoint  # noqa: E402
from .api.checkpoint import checkpoint  # noqa: E402
from .errors import AssertionFailed, CompileError  # noqa: E402
from .api.higher import hessian, jacobian  # noqa: E402
from .checking.symbolic import symbolic  # noqa: E402

# Registers how a call to a gradient object lowers (pipeline.LOWERINGS), which compiling
# grad(grad(f)) needs: loaded with the package.
from .api import regradient as _regradient  # noqa: E402,F401

from .version import __version__  # noqa: E402
from .frontend.reading.public import PUBLIC as _PUBLIC  # noqa: E402

__all__ = ["grad", "value_and_grad", "vjp", "CompileError", "AssertionFailed", "GradientFunction",
           "jvp", "jacobian", "hessian", "custom_vjp", "stop_gradient", "check_grad",
           "GradientCheckError", "symbolic", "Checkpoint", "checkpoint"]

# The module reader (adcompiler compile, check) finds the decorators a user's module names here.
_PUBLIC.update({name: globals()[name] for name in __all__}, adcompiler=_sys.modules[__name__])


def __getattr__(name):
    """``adcompiler.tape`` without ``import adcompiler.tape``: the dynamic tape loads on first
    use (it is not needed to compile, so ``import adcompiler`` does not pay for it)."""
    if name == "tape":
        import importlib
        return importlib.import_module(".tape", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
