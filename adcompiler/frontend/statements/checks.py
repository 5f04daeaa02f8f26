"""The handlers of ``raise``, ``assert`` and ``with np.errstate(...)``: input validation and
NumPy's error state.

A ``raise`` reached while compiling (its ``if`` decided by shapes, dtypes or static arguments)
raises the user's own exception for this signature (:class:`~adcompiler.errors.RaisedByUser`,
which the public call turns into that exception; refused after a run-time check, which must run
first); one in a branch not taken is never lowered. A
branch that only raises, under a condition on traced values (``if np.any(x < 0): raise
ValueError("...")``), becomes a ``raise_if`` node: a run-time check, kept by dead-code
elimination, printed as the same ``if``. ``with np.errstate(...)`` lowers its body in place and
records the settings on the graph ('ignore' or 'warn' only); the emitter runs the whole
generated body under them.
An ``assert`` is a ``raise AssertionError`` under ``not test``, the same way (whatever ``python
-O`` says). Invariant: an exception and its message are built while compiling (from static
values only); a run-time check raises a built-in exception with literal arguments.
"""

from __future__ import annotations

import ast
import builtins

import numpy as np

from ...errors import AssertionFailed, CompileError, RaisedByUser
from ...ir import Literal, Node, Value, walk
from . import blocks
from .conditions import check_condition
from .table import continued, statement

_CONVERSIONS = {-1: format, 115: lambda v, spec: format(str(v), spec),
                114: lambda v, spec: format(repr(v), spec),
                97: lambda v, spec: format(ascii(v), spec)}


def is_errstate(item) -> bool:
    """Whether a ``with`` item is ``np.errstate(...)`` (or ``numpy.errstate``), bound to no
    name."""
    call = item.context_expr
    return (item.optional_vars is None and isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute) and call.func.attr == "errstate"
            and isinstance(call.func.value, ast.Name) and call.func.value.id in ("np", "numpy"))


def allowed_parts(stmt) -> set:
    """ids of the nodes in ``stmt`` the fence lets through for this module: a ``raise``'s
    f-string parts (formatted while compiling here, not by the expression lowering) and a
    ``with`` whose every item is ``np.errstate(...)``; other ``with`` stays refused."""
    out = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Raise) and node.exc is not None:
            out |= {id(m) for s in ast.walk(node.exc) if isinstance(s, ast.JoinedStr)
                    for m in ast.walk(s) if isinstance(m, (ast.JoinedStr, ast.FormattedValue))}
        if isinstance(node, ast.With) and all(is_errstate(i) for i in node.items):
            out |= {id(node)} | {id(i) for i in node.items}
    return out


def only_raise(stmts):
    """The ``raise`` statement that is the whole of ``stmts`` (docstrings and ``pass`` aside),
    else None."""
    rest = [s for s in stmts if not isinstance(s, ast.Pass)
            and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return rest[0] if len(rest) == 1 and isinstance(rest[0], ast.Raise) else None


# ---- raise --------------------------------------------------------------------------------
@statement(ast.Raise)
def lower_raise(lowering, stmt: ast.Raise):
    """A ``raise`` reached while compiling: raise the user's exception (for this signature)
    where it is certain to run, else refuse it (it would run only under a traced condition
    that is not the ``if`` right around it)."""
    exception = exception_of(lowering, stmt)
    if lowering.b.target is not lowering.graph.nodes:
        raise lowering.src.error(stmt, "this `raise` runs only on some paths of a loop or of a "
                                 "condition on traced values, which the compiled code cannot "
                                 "check here", "write the check as `if <condition>: raise "
                                 "...` with the raise alone in its branch, or validate in the "
                                 "caller")
    refuse_after_checks(lowering, stmt, "`raise`")
    raise RaisedByUser(exception, lowering.src.location(stmt))


def refuse_after_checks(lowering, stmt, what):
    """Refuse a ``raise`` (or failing ``assert``) decided while compiling where a run-time
    check comes first: Python would run that check, and it may raise another exception."""
    if any(n.prim == "raise_if" for n in walk(lowering.graph.nodes)):
        raise lowering.src.error(stmt, f"this {what} is decided while compiling, but a "
                                 "run-time check on array values before it (or around it) "
                                 "must run first, and may raise another exception",
                                 "put the checks on shapes, dtypes and static arguments "
                                 "before the checks on array values")


def exception_of(lowering, stmt: ast.Raise) -> BaseException:
    """The exception ``stmt`` raises, built while compiling from static values."""
    if stmt.exc is None:
        raise lowering.src.error(stmt, "a bare `raise` re-raises the exception being handled, "
                                 "and a compiled function handles none",
                                 "raise a specific exception: raise ValueError(\"...\")")
    if stmt.cause is not None and not (isinstance(stmt.cause, ast.Constant)
                                       and stmt.cause.value is None):
        raise lowering.src.error(stmt.cause, "`raise ... from ...` is not supported in a "
                                 "compiled function (only `from None`)",
                                 "drop the `from` clause: raise ValueError(\"...\")")
    node = stmt.exc
    if isinstance(node, ast.Call):
        kind = lowering.expr(node.func)
        args = [static_argument(lowering, a) for a in node.args]
        kwargs = {k.arg: static_argument(lowering, k.value) for k in node.keywords}
    else:
        kind, args, kwargs = lowering.expr(node), [], {}
    if isinstance(kind, type) and issubclass(kind, BaseException):
        exception = construct(lowering, node, kind, args, kwargs)
    elif isinstance(kind, BaseException) and not isinstance(node, ast.Call):
        exception = kind
    else:
        raise lowering.src.error(node, "`raise` needs an exception class or instance here",
                                 "raise ValueError(\"...\") or another exception class")
    if stmt.cause is not None:
        exception.__cause__, exception.__suppress_context__ = None, True
    return exception


def construct(lowering, node, kind, args, kwargs) -> BaseException:
    try:
        return kind(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the user's class refused its arguments
        raise lowering.src.error(node, f"building the exception failed: {type(exc).__name__}: "
                                 f"{exc}", f"call {kind.__name__} as it takes its "
                                 "arguments") from None


def static_argument(lowering, node):
    """An argument of the exception (its message): known while compiling, f-strings of
    static values included."""
    value = format_text(lowering, node) if isinstance(node, ast.JoinedStr) else lowering.expr(node)
    if isinstance(value, Value) or (isinstance(value, (list, tuple))
                                    and any(isinstance(v, Value) for v in value)):
        raise lowering.src.error(node, "the exception's message reads a traced value (array "
                                 "contents or a float argument), known only while running",
                                 "format only shapes, dtypes and static arguments into the "
                                 "message, or validate in the caller")
    return value


def format_text(lowering, node: ast.JoinedStr) -> str:
    parts = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            parts.append(part.value)
            continue
        value = static_argument(lowering, part.value)
        spec = format_text(lowering, part.format_spec) if part.format_spec else ""
        parts.append(_CONVERSIONS[part.conversion](value, spec))
    return "".join(parts)



# ---- assert -----------------------------------------------------------------------------------
@statement(ast.Assert)
def lower_assert(lowering, stmt: ast.Assert):
    """``assert`` on what is known while compiling (shapes, dtypes, static arguments) is
    checked then, for each signature compiled; one on traced values is a run-time check
    raising AssertionError (always, whatever ``python -O`` says)."""
    test = lowering.expr(stmt.test)
    if isinstance(test, Value):
        return lower_assert_check(lowering, stmt, test)
    if not test:
        refuse_after_checks(lowering, stmt, "failing `assert`")
        said = "" if stmt.msg is None else f": {assert_message(lowering, stmt.msg)}"
        raise AssertionFailed(f"AssertionError for these inputs{said}",
                              lowering.src.location(stmt), "the assertion fails for every "
                              "call with these shapes, dtypes and static arguments")
    return None


def assert_message(lowering, msg) -> str:
    """The failing assert's message as Python formats it; its source text where it reads
    traced values."""
    try:
        return str(static_argument(lowering, msg))
    except CompileError:
        return lowering.src.text(msg)

# ---- run-time checks ----------------------------------------------------------------------
def lower_checked_if(lowering, stmt: ast.If, test: Value, rest=None):
    """``if <traced>: raise E(...)`` (or the raise in the ``else``): a ``raise_if`` node,
    then the other branch as if unconditional. None where neither branch only raises."""
    for raising, other, negate in ((stmt.body, stmt.orelse, False),
                                   (stmt.orelse, stmt.body, True)):
        found = only_raise(raising)
        if found is not None:
            check_condition(lowering.src, stmt.test, test)
            emit_check(lowering, found, test, negate)
            return blocks.run_statements(lowering, other) if rest is None else \
                blocks.run_block(lowering, other + rest)
    return NOT_A_CHECK


def emit_check(lowering, stmt, test, negate=False):
    """A ``raise_if`` node: the generated code raises the exception of ``stmt`` where
    ``test`` (``not test`` with ``negate``) holds while running."""
    exception = exception_of(lowering, stmt)
    kind = type(exception)
    if getattr(builtins, kind.__name__, None) is not kind:
        raise lowering.src.error(stmt.exc, f"a check on traced values raises a built-in "
                                 f"exception only, and `{kind.__name__}` is not one",
                                 "raise ValueError (or another built-in exception) here, or "
                                 "validate in the caller")
    if not all(_literal(a) for a in exception.args):
        raise lowering.src.error(stmt.exc, "a check on traced values takes strings and numbers "
                                 "as the exception's arguments", "pass a message string")
    pred = test if isinstance(test, Value) else Literal(bool(test))  # `if pred:` as Python
    params = {"exception": kind.__name__, "args": tuple(exception.args), "negate": negate}
    lowering.b.target.append(Node("raise_if", (pred,), params, (), lowering.b.source, "forward"))


def lower_assert_check(lowering, stmt: ast.Assert, test: Value):
    """``assert <traced>, msg``: a run-time check raising AssertionError(msg)."""
    check_condition(lowering.src, stmt.test, test)
    msg = () if stmt.msg is None else (static_argument(lowering, stmt.msg),)
    fake = ast.Raise(ast.Call(ast.Name("AssertionError", ast.Load()),
                              [ast.Constant(m) for m in msg], []), None)
    ast.copy_location(fake, stmt)
    ast.copy_location(fake.exc, stmt)
    ast.fix_missing_locations(fake)
    emit_check(lowering, fake, test, negate=True)


# ---- with np.errstate ---------------------------------------------------------------------
def enter_with(lowering, stmt: ast.With):
    """Record the settings of ``with np.errstate(...)`` on the graph (one set per function:
    a different one is a located error; 'ignore' and 'warn' only, as the whole body runs
    under them); its body is then lowered in place."""
    for item in stmt.items:
        call = item.context_expr
        if call.args:
            raise lowering.src.error(call, "np.errstate takes keywords only here",
                                     "write np.errstate(divide='ignore', invalid='ignore')")
        settings = {k.arg: static_argument(lowering, k.value) for k in call.keywords}
        if None in settings:
            raise lowering.src.error(call, "np.errstate(**settings) is not supported",
                                     "name each setting: np.errstate(divide='ignore')")
        try:
            with np.errstate(**settings):
                pass
        except (TypeError, ValueError, KeyError) as exc:
            raise lowering.src.error(call, f"np.errstate refuses these settings: "
                                     f"{type(exc).__name__}: {exc}",
                                     "use over/under/divide/invalid/all with 'ignore', 'warn', "
                                     "'raise', 'call', 'print' or 'log'") from None
        if strict := {k: v for k, v in settings.items() if v not in ("ignore", "warn")}:
            raise lowering.src.error(call, f"np.errstate({_spell(strict)}) is not supported: "
                                     "the generated code, gradients included, runs all of "
                                     "its body under one np.errstate, so it would act "
                                     "outside this block too", "use 'ignore' or 'warn' here, "
                                     "and check explicitly: `if not np.all(np.isfinite(y)): "
                                     "raise FloatingPointError(\"...\")`")
        known = lowering.graph.errstate
        if known and known != settings:
            raise lowering.src.error(call, f"this np.errstate({_spell(settings)}) differs from "
                                     f"the np.errstate({_spell(known)}) before it: the "
                                     "generated code runs all of its body under one",
                                     "use one np.errstate for the whole function")
        lowering.graph.errstate.update(settings)


@statement(ast.With)
def lower_with(lowering, stmt: ast.With):
    enter_with(lowering, stmt)
    blocks.run_statements(lowering, stmt.body)


@continued(ast.With)
def lower_with_rest(lowering, stmt: ast.With, rest):
    """At a function's level: the body in place, then the statements after the block, which
    may ``return``."""
    enter_with(lowering, stmt)
    return blocks.run_block(lowering, stmt.body + rest)


NOT_A_CHECK = object()  # what lower_checked_if gives for an ``if`` that is not a check


def _literal(value) -> bool:
    return value is None or type(value) in (str, int, float, bool)


def _spell(settings) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in settings.items())
