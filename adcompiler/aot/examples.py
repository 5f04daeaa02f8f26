"""Example inputs for ahead-of-time compilation: ``--shape NAME=DIMS`` or ``example_<name>()``.

Invariants: ``example_<name>()`` (the only user code the command line runs, and only when no
``--shape`` covers the function) may return one tuple of arguments or a list of tuples, one per
input signature; any exception it raises becomes a CompileError located at the user's line.
The shape of a ``vjp``'s cotangent comes from lowering the function, never from running it.
An example tuple gives one value per parameter in signature order, keyword-only ones included
(bound by name); ``--shape`` binds by name.
"""

from __future__ import annotations

import inspect
import sys
import traceback
import types

import numpy as np

from ..frontend.bindings.trees import LEAF, is_container, leaves_of, rebuild, structure_of
from ..errors import CompileError, Location
from ..frontend.reading.module_writes import check_unchanged
from ..api.signature import bind_arguments, classify

SHAPES_HELP = """\
input shapes (code is specialised to them, as jax.jit's; `compile` then makes each gradient
hold for every size with their dtypes, ranks and sizes of 1):
  --shape x=3,4        x is a float64 array of shape (3, 4); x=3,4:float32 sets the dtype;
                       x=float a Python float; x=() a 0-d array; x=int:5 a static int 5
  example_<FUNC>()     a function in the module returning the example arguments: a tuple, or
                       a list of tuples for several signatures; --shape replaces the arguments
                       it names; example_<FUNC>() is not run when --shape names them all (it is
                       the only user code the command line runs, with FUNC itself under check)
"""


def example_arguments(module, fname, shapes=()) -> list:
    """The example argument tuples of ``fname``: from ``shapes`` when they name every parameter,
    else from ``example_<fname>()``, with the parameters ``shapes`` names replaced."""
    fn = module.function(fname)
    params = list(inspect.signature(fn).parameters)
    given = dict(parse_shape(s) for s in shapes)
    if shapes and all(p in given for p in params):
        return [tuple(given[p] for p in params)]
    if f"example_{fname}" not in module.functions:
        missing = ", ".join(p for p in params if p not in given)
        raise CompileError(f"{fname} needs example inputs (code is compiled for their shapes): "
                           f"pass --shape NAME=DIMS for {missing}, or define example_{fname}() "
                           f"in {module.path}", _def_location(module, fname),
                           f"def example_{fname}(): return (np.ones((3, 4)), ...)")
    result = _run_example(module, fname)
    if isinstance(result, list) and result and all(isinstance(r, tuple) for r in result):
        examples = result
    else:
        examples = [result if isinstance(result, tuple) else (result,)]
    return [_complete(fn, tuple(given.get(p, a) for p, a in zip(params, ex)) +
                      tuple(ex[len(params):])) for ex in examples]


# Keyword-only parameters: an example tuple gives one value per parameter in signature order,
# the keyword-only ones included (bound by name), and the command line compiles and calls a
# positional twin of the function with the whole tuple; the generated module keeps the `*`.
def bind_example(signature, args):
    """``signature.bind`` of one value per parameter, in signature order: the values past the
    positional parameters go to the keyword-only ones, by name."""
    params = list(signature.parameters.values())
    if any(p.kind is p.VAR_POSITIONAL for p in params) or \
            not any(p.kind is p.KEYWORD_ONLY for p in params):
        return signature.bind(*args)
    n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    named = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
    if len(args) > n + len(named):
        raise TypeError(f"too many arguments ({len(args)} for {n + len(named)} parameters)")
    return signature.bind(*args[:n], **dict(zip(named, args[n:])))


def positional(fn):
    """``fn``, or, where it has keyword-only parameters (and no ``*args``), its twin taking
    every parameter positionally, in signature order, without defaults: the same code, globals
    and name (so the same source is compiled), called with whole example tuples."""
    code = fn.__code__
    if not code.co_kwonlyargcount or code.co_flags & (inspect.CO_VARARGS |
                                                      inspect.CO_VARKEYWORDS):
        return fn
    twin = types.FunctionType(code.replace(co_argcount=code.co_argcount +
                                           code.co_kwonlyargcount, co_kwonlyargcount=0),
                              fn.__globals__, fn.__name__, None, fn.__closure__)
    twin.__qualname__, twin.__module__, twin.__doc__ = fn.__qualname__, fn.__module__, \
        fn.__doc__
    twin.__annotations__ = dict(fn.__annotations__)
    return twin


def _complete(fn, args):
    """An example for a function with keyword-only parameters, with the defaults of those it
    does not give (the positional twin has none); as it is where it does not bind (the check
    of the examples says why)."""
    if positional(fn) is fn:
        return args
    try:
        bound = bind_example(inspect.signature(fn), args)
    except TypeError:
        return args
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def signature_text(fname, signature) -> str:
    """``f(x, *, w)``: the parameter names, with the ``/`` and ``*`` Python's signature has."""
    text = str(signature.replace(parameters=[
        p.replace(annotation=p.empty, default=p.empty) for p in signature.parameters.values()],
        return_annotation=signature.empty))
    return fname + text


def _run_example(module, fname):
    check_unchanged(module, f"example_{fname}")
    return call_user(module, f"example_{fname}()", module.functions[f"example_{fname}"])


def call_user(module, what, fn, *args):
    """``fn(*args)``, the user's code: an exception it raises becomes a CompileError at the
    user's line that raised it (or at the definition)."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - the user's code: report it at their line
        frames = [f for f in traceback.extract_tb(sys.exc_info()[2])
                  if f.filename == module.path]
        if frames:
            line = module.lines[frames[-1].lineno - 1].rstrip()
            indent = len(line) - len(line.lstrip())
            loc = Location(module.path, frames[-1].lineno, indent, line, len(line))
        else:
            loc = _def_location(module, fn.__name__)
        hint = ("the command line runs your functions in a namespace holding only what "
                "adcompiler resolves without running the module: imports of numpy and math, "
                "literal constants, and functions") if isinstance(exc, NameError) else ""
        raise CompileError(f"{what} raised {type(exc).__name__}: {exc}", loc, hint) from None


def _def_location(module, fname):
    stmt = module.definitions.get(fname)
    return module.location(stmt) if stmt is not None else None


def parse_shape(text):
    """``("x", value)`` for ``x=3,4`` (ones), ``x=3,4:float32``, ``x=float`` or ``x=int:5``."""
    name, eq, spec = text.partition("=")
    if not name or not eq:
        raise ValueError(f"--shape expects NAME=DIMS, got {text!r}")
    try:
        if spec == "float":
            return name, 1.0
        if spec.startswith("int:"):
            return name, int(spec[4:])
        dims, _, dtype = spec.partition(":")
        shape = tuple(int(d) for d in dims.strip("()").split(",") if d.strip())
        return name, np.ones(shape, dtype=dtype or "float64")
    except (ValueError, TypeError) as exc:
        raise ValueError(f"--shape {text!r}: {exc} (expected e.g. x=3,4 or x=3,4:float32, "
                         "x=float, x=int:5)") from None


def cotangent_for(gradient, args, rng=None):
    """A cotangent for ``vjp``: shaped like the function's result (found by lowering it, not by
    running it); ones, or standard normal draws from ``rng``."""
    from ..frontend.lower import lower_function
    arguments = bind_arguments(gradient.primal, args, {})
    avals = {n: classify(v, n, n in gradient.wrt) for n, v in arguments.items()}
    aval = lower_function(gradient.primal, avals).outputs[0].aval
    shape = aval.known_shape
    if rng is None:
        return np.ones(shape, dtype=aval.dtype)
    return rng.standard_normal(shape).astype(aval.dtype)


def perturb(args, rng):
    """Random inputs near the example: float entries scaled by a factor in [0.9, 1.1] (zeros
    become draws from [-0.1, 0.1]), so the example's signs and domains are kept."""
    return tuple(_perturbed(a, rng) for a in args)


def _perturbed(a, rng):
    """``a`` near itself: a float or float array moved, a container's entries each."""
    if isinstance(a, float):
        return float(_near(np.float64(a), rng))
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        return _near(a, rng).astype(a.dtype)
    if is_container(a):   # a container argument (adcompiler.frontend.bindings.trees)
        structure = structure_of(a, lambda path, x: LEAF)
        return rebuild(structure, iter([_perturbed(x, rng) for _, x in leaves_of(a)]))
    return a


def _near(x, rng):
    u = rng.uniform(-0.1, 0.1, np.shape(x))
    return np.where(x == 0, u, x * (1 + u))
