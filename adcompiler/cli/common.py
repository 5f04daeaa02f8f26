"""What the command line's commands share: targets, loading a module, compiling one function.

Invariants: a target names a Python file and a module-level function in it (``PATH.py:FUNC``); a
method, named as ``Class.method`` or alone, gets a located error saying that the command line
does not compile methods (:mod:`adcompiler.cli.methods`); a CompileError about a name the
module does not resolve says why the name was not resolved.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from . import inputs as cli_inputs, methods as cli_methods
from ..aot import standalone
from ..api.gradients import GradientFunction, TangentFunction
from ..aot.examples import example_arguments, positional
from ..frontend.reading.module import load_module
from ..frontend.reading.module_writes import check_unchanged
from ..errors import CompileError


class UsageError(Exception):
    """A mistake in the command line itself (no file location to point at)."""


def target(text, need_function=True):
    """``(path, function)`` from ``PATH.py:FUNC`` (``PATH.py`` alone when allowed); a method's
    ``PATH.py:Class.method`` is returned as is, for :func:`load` to refuse at its line."""
    if text.endswith(".py") and not need_function:
        return text, None
    if os.path.isdir(text):
        raise UsageError(f"{text} is a directory: expected PATH.py:FUNCTION, naming a Python "
                         "file and a function in it")
    path, _, fname = text.rpartition(":")
    if not path or not fname or not all(p.isidentifier() for p in fname.split(".")):
        raise UsageError(f"expected PATH.py:FUNCTION, got {text!r}")
    return path, fname


def load(path, fname=None):
    """The module at ``path``; with ``fname``, checked to define that module-level function (a
    method of that name gets a located error)."""
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory: expected PATH.py:FUNCTION, naming a Python "
                         "file and a function in it")
    module = load_module(path)
    if fname is not None and fname not in module.functions and fname not in module.errors:
        cli_methods.check_named(module, fname)
        if "." in fname:
            raise UsageError(f"expected PATH.py:FUNCTION naming a module-level function, got "
                             f"{path}:{fname} ({path} has no method {fname})")
    return module


@contextmanager
def explained(module):
    """A CompileError about an undefined name says why the name was not resolved."""
    try:
        yield
    except CompileError as exc:
        raise module.explain(exc) from None


def gradient(module, fname, wrt_text=None, backend="numpy", forward=False) -> GradientFunction:
    """The transform the decorator asks for (``grad`` of the first parameter if unmarked); with
    ``forward``, its jvp (``compile --mode forward`` assembles the gradient from jvps)."""
    fn = module.function(fname)
    cli_inputs.check_transform(module, fname)
    mode, wrt = module.marked.get(fname, ("grad", None))
    if wrt_text:
        wrt = tuple(w.strip() for w in wrt_text.split(","))
    mode = "jvp" if forward else mode
    return (TangentFunction if mode == "jvp" else GradientFunction)(positional(fn), wrt, mode,
                                                                    backend)


def specialised(module, fname, args, forward=False):
    """``(gradient, examples, specialisations)``: ``fname``'s transform compiled for each of its
    example signatures."""
    with explained(module):
        check_unchanged(module, fname)
        grad = gradient(module, fname, getattr(args, "wrt", None),
                        getattr(args, "backend", "numpy"), forward)
        examples = example_arguments(module, fname, args.shape)
        cli_inputs.check_examples(module, fname, examples, args.shape)
        return grad, examples, standalone.specialise(grad, examples)
