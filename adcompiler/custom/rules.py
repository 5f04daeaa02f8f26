"""What the compiler learns from a ``custom_vjp`` function's rules, and how it checks them.

Once per input signature of a call (:meth:`custom_vjp.value_aval`), ``fwd`` runs on the call's
real arguments (recorded while the transform compiles, :mod:`adcompiler.custom.examples`; never
on made-up data): the aval of its value is the call's result, and both rules are checked there,
as JAX does: ``fwd`` returns a pair whose value is like the function's, ``bwd`` (given a
cotangent of ones) a tuple of one cotangent per argument, each of its shape and float dtype, or
None (read as zeros). A wrong rule is a CompileError at the rule's ``def``; an exception the
rule raises is a CompileError at the line of the user's code that raised it.

Where no call ran on real arguments (a branch not taken, no real arguments at all as in
``ad.symbolic``), the result's aval is found by lowering the function's own source, without
running it; where that fails too, the call is a located error saying why. The rules are then
not checked.
"""

from __future__ import annotations

import inspect
import linecache
import traceback

import numpy as np

from . import examples
from ..errors import COMPUTING_ERRORS, CompileError, Location
from ..frontend.library.binding import CallError
from ..ir import Aval, Value


def learn(fn, avals, literals) -> tuple:
    """``(aval of the value, positions where bwd returns None)`` for a call of custom_vjp
    ``fn`` with these avals and literals; the positions are None where the rules could not run
    on real arguments."""
    args = examples.find(fn, avals, literals)
    if args is None:
        return _abstract_value(fn, avals, literals), None
    with examples.quiet():
        out = run_rule(fn, fn.fwd, args)
    check_fwd(fn, out, args)
    return Aval.of(out[0]), _check_bwd(fn, out, args, literals)


def unused(fn, avals, literals):
    """The positions where ``bwd`` returns None, from a call on real arguments (None where no
    such call ran)."""
    args = examples.find(fn, avals, literals)
    if args is None:
        return None
    with examples.quiet():
        out = run_rule(fn, fn.fwd, args)
    return _check_bwd(fn, out, args, literals)


# What a rule's own code raises by mistake (NumPy's complaints, a misspelt name, an import it
# lacks): located at its line. Anything else (a caller's TimeoutError, what a signal handler
# raises) is not the rule's doing and passes through unchanged.
_RULE_ERRORS = (*COMPUTING_ERRORS, NameError, ImportError)


def run_rule(fn, rule, args):
    """``rule(*args)``; a mistake it raises is a CompileError at the user's line that raised it."""
    try:
        out = rule(*args)
    except _RULE_ERRORS as exc:
        what = "fwd" if rule is fn.fwd else "bwd"
        raise CompileError(
            f"{_name(rule)}, the {what} rule of custom_vjp `{fn.__name__}`, raised "
            f"{type(exc).__name__}: {exc} (on the arguments of this call: "
            f"{', '.join(_describe(a) for a in args)})",
            user_location(exc, rule),
            hint=f"{what} runs on the call's real arguments (those the function is compiled "
                 "for) to learn its result's shape; make it work on them") from exc
    if rule is fn.fwd and (not isinstance(out, tuple) or len(out) != 2):
        raise _rule_error(fn, fn.fwd, f"returns {_describe(out)}, not a pair (value, "
                          "residuals)", _FWD_HINT)
    return out


def user_location(exc: BaseException, rule=None) -> Location | None:
    """Where the user's code raised ``exc``: its innermost frame in ``rule``'s file, else in
    any file outside NumPy and adcompiler, else ``rule``'s ``def``."""
    frames = traceback.extract_tb(exc.__traceback__)
    home = getattr(getattr(rule, "__code__", None), "co_filename", None)
    mine = [f for f in frames if f.filename == home] or [f for f in frames if _user_file(f)]
    if mine:
        f = mine[-1]
        line = linecache.getline(f.filename, f.lineno).rstrip("\n")
        if line:
            col = getattr(f, "colno", None)
            col = col if col is not None else len(line) - len(line.lstrip())
            return Location(f.filename, f.lineno, col, line, getattr(f, "end_colno", None))
    return _def_location(rule) if rule is not None else None


def _user_file(frame) -> bool:
    name = frame.filename.replace("\\", "/")
    return not (name.startswith("<") or "/numpy/" in name or "/adcompiler/" in name
                or "/site-packages/" in name or "/lib/python" in name)


def _abstract_value(fn, avals, literals) -> Aval:
    """The aval of ``fn``'s result from its own source, lowered without running it; else a
    located error at the call saying why it is not known."""
    from ..frontend.lower import lower_function
    try:
        params = list(inspect.signature(fn.primal).parameters)
        arguments = {p: (lit if lit is not None else aval)
                     for p, aval, lit in zip(params, avals, literals)}
        outputs = lower_function(fn.primal, arguments).outputs
        if len(outputs) == 1 and isinstance(outputs[0], Value):
            return outputs[0].aval
    except Exception:  # noqa: BLE001 - a black box: said below
        pass
    raise _unknown_result(fn, avals)


def _unknown_result(fn, avals) -> Exception:
    """Why the result of a call of ``fn`` is unknown: running the function on its arguments
    raised (located where), or no call like this one ran (a CallError, located at the call)."""
    shapes = ", ".join(str(a) for a in avals)
    error, f = examples.run_error(), examples.function_name()
    if error is not None:
        return CompileError(
            f"running {f} on the arguments it is compiled for, to learn the shape of "
            f"`{fn.__name__}`'s result ({shapes}) from a real call, raised "
            f"{type(error).__name__}: {error}", user_location(error),
            hint="the result of a custom_vjp function is learnt by running it on real "
                 "arguments: compile for arguments on which the function runs")
    ran = (f"no call of it with arguments like these ({shapes}) ran when {f} ran on the "
           "arguments it is compiled for (a branch not taken, or a loop run no times?)"
           if f else f"there are no real arguments to run it on here ({shapes})")
    return CallError(
        f"is a custom_vjp function whose result's shape is learnt from a call on real "
        f"arguments, and {ran}; its source does not compile either, to find the shape without "
        "running it", "call the transform with arguments that reach this call")


# ---- checking the user's rules, on a call's real arguments -------------------------------------
_FWD_HINT = "fwd(*args) must return the pair (value, residuals), its value like the function's"


def check_fwd(fn, out, args):
    """``fwd`` returns a pair whose value is like the function's (where it runs on ``args``)."""
    if not isinstance(out[0], (float, np.ndarray, np.generic)) and not _device_array(out[0]):
        raise _rule_error(fn, fn.fwd, f"returns {_describe(out[0])} as its value, not an array "
                          "or a float", _FWD_HINT)
    try:
        with examples.quiet():
            want = fn.primal(*args)
    except Exception:  # noqa: BLE001 - a function that does not run here is not compared
        return
    if np.shape(out[0]) != np.shape(want) or _dtype(out[0]) != _dtype(want):
        raise _rule_error(fn, fn.fwd, f"returns {_describe(out[0])} as its value, where "
                          f"{fn.__name__} returns {_describe(want)} (on this call's arguments)",
                          _FWD_HINT)


def _check_bwd(fn, out, args, literals) -> frozenset:
    """Run ``bwd`` on ``fwd``'s residuals and a cotangent of ones and check its cotangents: the
    positions where it returns None. A ``bwd`` that raises here is not checked (its gradient
    call will raise the same)."""
    value, residuals = out
    try:
        with examples.quiet():
            cts = fn.bwd(residuals, 1.0 if isinstance(value, float) else np.ones_like(value))
    except Exception:  # noqa: BLE001 - see the docstring
        return frozenset()
    _check_cotangents(fn, cts, args, literals)
    return frozenset(i for i, ct in enumerate(cts) if ct is None)


def _check_cotangents(fn, cts, args, literals):
    """Raise a CompileError at ``bwd``'s ``def`` unless ``cts`` is a tuple (or list) of one
    cotangent per argument in ``args``: None, or for a float argument (not a literal, static
    number) an array of its shape and dtype (any float for a Python float)."""
    note = " (on this call's arguments)"
    if not isinstance(cts, (tuple, list)) or len(cts) != len(args):
        raise _rule_error(fn, fn.bwd, f"returns {_describe(cts)}, not a tuple of {len(args)} "
                          f"cotangent{'s' * (len(args) != 1)}{note}", _bwd_hint(fn, args))
    for i, (ct, arg, lit) in enumerate(zip(cts, args, literals)):
        if ct is not None and lit is None and _float(arg) and not _like(ct, arg):
            raise _rule_error(fn, fn.bwd, f"returns {_describe(ct)} as the cotangent of "
                              f"`{_param(fn, i)}`, {_describe(arg)}{note}", _bwd_hint(fn, args))


def _like(ct, arg) -> bool:
    """Whether ``ct`` is a cotangent for ``arg``: its shape and float dtype (any float for a
    Python float)."""
    if not (isinstance(ct, (float, np.ndarray, np.floating)) or _device_array(ct)) or \
            tuple(np.shape(ct)) != tuple(np.shape(arg)):
        return False
    return _dtype(ct).kind == "f" if isinstance(arg, float) else _dtype(ct) == _dtype(arg)


def _float(x) -> bool:
    return isinstance(x, float) or ((isinstance(x, np.ndarray) or _device_array(x))
                                    and np.dtype(x.dtype).kind in "fc")


def _device_array(x) -> bool:
    return type(x).__module__.startswith("cupy") and hasattr(x, "shape")


def _dtype(x):
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype


def _describe(x) -> str:
    if isinstance(x, (np.ndarray, np.generic)) or _device_array(x):
        return f"a {x.dtype} array of shape {x.shape}"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)}"
    return {float: "a float", type(None): "None"}.get(type(x), f"a {type(x).__name__}")


def _param(fn, i) -> str:
    try:
        return list(inspect.signature(fn.primal).parameters)[i]
    except (TypeError, ValueError, IndexError):
        return f"argument {i}"


def _bwd_hint(fn, args) -> str:
    like = ", ".join(f"{_param(fn, i)}: {_describe(a)}" if _float(a) else f"{_param(fn, i)}: any"
                     for i, a in enumerate(args))
    return (f"bwd(residuals, g) must return a tuple with one cotangent per argument of "
            f"{fn.__name__}, each of its argument's shape and float dtype, or None where no "
            f"gradient flows; here ({like})")


def _name(rule) -> str:
    return getattr(rule, "__name__", repr(rule))


def _def_location(rule) -> Location | None:
    code = getattr(rule, "__code__", None)
    if code is None:
        return None
    line = linecache.getline(code.co_filename, code.co_firstlineno).rstrip("\n")
    return Location(code.co_filename, code.co_firstlineno, 0, line) if line else None


def _rule_error(fn, rule, problem, hint) -> CompileError:
    """A CompileError at the ``def`` of ``rule``, one of the rules of custom_vjp ``fn``."""
    what = "fwd" if rule is fn.fwd else "bwd"
    return CompileError(f"{_name(rule)}, the {what} rule of custom_vjp `{fn.__name__}`, "
                        f"{problem}", _def_location(rule), hint=hint)


__all__ = ["learn", "unused", "run_rule", "check_fwd", "user_location"]
