"""What the command line checks in its inputs before compiling: option values, ``--shape`` names,
the arguments ``example_<FUNC>()`` returns, and transforms it does not compile.

Invariants: a bad option value is an argparse error (exit 2, the usage line and the option's
name); a mistake about the user's module is a CompileError located at their line where there is
one (``example_<FUNC>``'s ``def``, the decorator), naming what to write instead. Nothing here
runs user code: example values are checked after ``example_<FUNC>()`` has run.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import math
import re

import numpy as np

from ..frontend.bindings.trees import holds_traced
from ..errors import CompileError
from ..aot.examples import bind_example, signature_text

COMPILED = "grad, value_and_grad, vjp and jvp"
_DIMS = re.compile(r"\(?\s*(\d+\s*(,\s*\d+\s*)*,?\s*)?\)?")


# ---- option values (argparse types) -------------------------------------------------------------
def positive_float(text: str) -> float:
    """A tolerance: a finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a number above 0 (such as 1e-5), got {text}")
    return value


def count(text: str) -> int:
    """A number of entries: a whole number of at least 1."""
    return _whole(text, 1, "at least 1")


def seed(text: str) -> int:
    """A random seed: a whole number of 0 or more (what NumPy accepts)."""
    return _whole(text, 0, "0 or more")


def _whole(text, least, what) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text}")
    return value


def shape(text: str) -> str:
    """``NAME=DIMS`` as :func:`adcompiler.aot.examples.parse_shape` reads it, checked: a parameter
    name, then ``float``, ``int:N``, or sizes (whole numbers, comma-separated, none empty; ``()``
    for a 0-d array) with an optional ``:dtype``."""
    name, eq, spec = text.partition("=")
    example = "x=3,4, x=3,4:float32, x=(), x=float or x=int:5"
    if not eq or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"expected NAME=DIMS ({example}), got {text!r}")
    if spec == "float":
        return text
    if spec.startswith("int:"):
        if not re.fullmatch(r"[+-]?\d+", spec[4:]):
            raise argparse.ArgumentTypeError(f"{text!r}: int: takes a whole number, as x=int:5")
        return text
    dims, colon, dtype = spec.partition(":")
    if not dims.strip() or not _DIMS.fullmatch(dims.strip()):
        raise argparse.ArgumentTypeError(
            f"{text!r}: the sizes must be whole numbers of 0 or more separated by commas, none "
            f"missing ({example})")
    if colon:
        try:
            kind = np.dtype(dtype).kind
        except TypeError:
            kind = ""
        if not (dtype and kind and kind in "biufc"):
            raise argparse.ArgumentTypeError(f"{text!r}: {dtype!r} is not a NumPy number dtype "
                                             "(float64, float32, int64...)")
    return text


# ---- the module ---------------------------------------------------------------------------------
def check_shape_names(module, fnames, shapes):
    """Every ``--shape NAME=...`` names a parameter of one of ``fnames``, once."""
    params = {p: None for f in fnames for p in inspect.signature(module.function(f)).parameters}
    seen = set()
    for text in shapes:
        name = text.partition("=")[0]
        if name in seen:
            raise CompileError(f"--shape names {name} twice: give one --shape per parameter")
        seen.add(name)
        if name not in params:
            what = f"{fnames[0]} has no" if len(fnames) == 1 else \
                f"none of {', '.join(fnames)} has a"
            raise CompileError(f"--shape {text}: {what} parameter {name!r}",
                               hint=f"name one of its parameters: {', '.join(params) or 'none'}"
                               if len(fnames) == 1 else
                               f"name one of their parameters: {', '.join(params)}")


def check_examples(module, fname, examples, shapes=()):
    """Each example argument tuple fits ``fname``'s parameters, with arrays where lists are."""
    fn = module.function(fname)
    signature = inspect.signature(fn)
    params = list(signature.parameters)
    wanted = signature_text(fname, signature)
    if {s.partition("=")[0] for s in shapes} >= set(params):
        return   # --shape names every parameter: example_<FUNC>() was not run
    stmt = module.definitions.get(f"example_{fname}")
    where = module.location(stmt) if stmt is not None else None
    hint = (f"return one value per parameter of {wanted}, in a tuple: return "
            f"({', '.join('...' for _ in params)}{',' if len(params) == 1 else ''}); or a list "
            "of such tuples, one per input signature")
    for args in examples:
        try:
            bound = bind_example(signature, args)
        except TypeError as exc:
            n = len(args)
            raise CompileError(f"example_{fname}() gives {n} argument{'s' * (n != 1)} for "
                               f"{wanted}: {exc}", where, hint) from None
        for name, value in bound.arguments.items():
            if isinstance(value, list) and not value:
                raise CompileError(f"example_{fname}() gives {name} = [], an empty list, so no "
                                   f"example inputs for {wanted}", where, hint)
            if isinstance(value, list) and not holds_traced(value):   # of arrays: a container
                raise CompileError(f"example_{fname}() gives {name} = a list "
                                   f"({_short(value)}): {fname} is compiled for arrays",
                                   where, f"return np.asarray(...) for {name}; {hint}")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 30 else text[:27] + "..."


def check_transform(module, fname):
    """``fname`` is neither marked with a transform the command line does not compile
    (``@ad.hessian``, ``@ad.jacobian``, ``@ad.custom_vjp``) nor reaches a custom_vjp function,
    whose own rule a compiled gradient would ignore."""
    if fname in module.uncompiled:
        transform, loc = module.uncompiled[fname]
        raise CompileError(f"{fname} is marked @adcompiler.{transform}, which the command line "
                           f"does not compile (it compiles {COMPILED})", loc,
                           f"call adcompiler.{transform} in Python, where it is installed")
    for name in sorted(_reached(module, fname) - {fname}):
        if module.uncompiled.get(name, ("",))[0] == "custom_vjp":
            raise CompileError(f"{fname} calls {name}, a custom_vjp function: the command line "
                               f"does not compile custom rules (its gradient would "
                               f"differentiate {name}'s body, not use your rule)",
                               module.uncompiled[name][1],
                               f"differentiate {fname} with adcompiler.grad in Python, where it "
                               "is installed")


def _reached(module, fname) -> set:
    """The module's names ``fname`` reads, directly or through the functions it calls."""
    seen, todo = set(), [fname]
    while todo:
        name = todo.pop()
        stmt = module.definitions.get(name)
        if name in seen or not isinstance(stmt, ast.FunctionDef):
            seen.add(name)
            continue
        seen.add(name)
        todo += [n.id for p in [stmt.args, *stmt.body] for n in ast.walk(p)
                 if isinstance(n, ast.Name)]
    return seen
