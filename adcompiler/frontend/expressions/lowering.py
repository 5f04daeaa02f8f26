"""Lower expressions: each AST expression becomes a Value (emitted nodes) or a static Python object.

Static objects (numbers, shapes, modules, functions, dtypes) are computed while compiling; only
what depends on the function's inputs becomes IR, and a static array becomes a graph constant.
Invariant: an expression that cannot be lowered, for any reason, raises a CompileError located
at the innermost expression that failed; no other exception escapes.
"""

from __future__ import annotations

import ast
import builtins
import functools
import operator
import types

import numpy as np

from ...errors import COMPUTING_ERRORS, CompileError
from ...ir import Value
from ...ir.builder import NeedsShape
from ...ir.primitives import MATH_PRIMS
from ..library import static_numpy
from ..library import concatenators, factorizations, refusals, special
from . import masked
from ..library.binding import CallError, call
from ..library.creation import contains_value
from ..calls import ATTRIBUTES, CALLABLE_TYPES, FUNCTIONS, METHODS, Method
from ..desugaring.chains import lower_chain
from ..bindings.lists import is_list
from ..bindings.unreadable import Unreadable
from ..bindings.functions import LocalFunction
from .comprehensions import consumed_by, lower_consumed
from .containers import builds_container, dict_item, double_starred, starred
from .indexing import lower_index
from .lists import arithmetic_error, attribute_error, refuse_building
from .table import expression, handler_of
from .windows import MovingSlice

BINOPS = {ast.Add: ("add", operator.add), ast.Sub: ("subtract", operator.sub),
          ast.Mult: ("multiply", operator.mul), ast.Div: ("divide", operator.truediv),
          ast.Pow: ("power", operator.pow), ast.MatMult: ("matmul", operator.matmul),
          ast.FloorDiv: ("floor_divide", operator.floordiv),
          ast.Mod: ("remainder", operator.mod),
          ast.LShift: (None, operator.lshift), ast.RShift: (None, operator.rshift),
          ast.BitAnd: (None, operator.and_), ast.BitOr: (None, operator.or_),
          ast.BitXor: (None, operator.xor)}
COMPARE = {ast.Gt: ("greater", operator.gt), ast.GtE: ("greater_equal", operator.ge),
           ast.Lt: ("less", operator.lt), ast.LtE: ("less_equal", operator.le),
           ast.Eq: ("equal", operator.eq), ast.NotEq: ("not_equal", operator.ne)}


NOT_USER = object()  # what call_user gives for a callable that is not the user's
PRINT_HINT = "print in the caller; the gradient's generated code is in its `.source`"


class ExpressionLowering:
    """Mixin of the lowering: ``expr(node)`` turns an expression into a Value or a static object,
    through the handler registered for the node's type (:mod:`.table`), and locates what it
    raises; the helpers the handlers share."""

    def expr(self, node):
        handler = handler_of(node)
        try:
            out = handler(self, node)
        except CompileError:
            raise
        except CallError as exc:
            raise self.src.error(node, str(exc), exc.hint) from None
        except NeedsShape:
            raise self.src.error(node, "this needs the shape of an input, which is unknown here",
                                 "call the compiled function on example inputs first") from None
        except RecursionError:  # compiled again with room (reading.depth)
            raise
        except COMPUTING_ERRORS as exc:  # NumPy's own complaint (shapes, axes...), located
            raise self.src.error(node, f"{type(exc).__name__}: {exc}",
                                 self.operand_summary(node)) from exc
        if isinstance(out, Unreadable) and not masked.deferred_here(self.b, node, out):
            raise self.src.error(node, *out.describe(self.src.text(node)))   # `rows[0]` stale
        return self.constant(out) if isinstance(out, np.ndarray) else out

    def call_arguments(self, node) -> tuple:
        """A call's lowered ``(args, kwargs)``."""
        args = starred(self, node.args)   # f(*args, **kwargs) spread out: .containers
        kwargs = double_starred(self, node.keywords)
        spread = len(args) != len(node.args) or len(kwargs) != len(node.keywords)
        for arg, value in [*zip(node.args, args), *zip(node.keywords, kwargs.values())] \
                if not spread else [(node, v) for v in [*args, *kwargs.values()]]:
            self.refuse_unreadable_items(arg, value)
        return args, kwargs

    def refuse_unreadable_items(self, node, value, path=()):
        """The located error for a list or tuple passed on with an item that cannot be read
        (``np.stack(rows)`` after ``rows``' views went stale), named as ``rows[0]``. (The
        name is written only for the error: a literal of 10^5 numbers passes in linear time.)"""
        if not isinstance(value, (list, tuple)):
            return
        for k, item in enumerate(value):
            if isinstance(item, Unreadable):
                where = "".join(f"[{i}]" for i in (*path, k))
                raise self.src.error(node, *item.describe(self.src.text(node) + where))
            if isinstance(item, (list, tuple)):
                self.refuse_unreadable_items(node, item, (*path, k))

    def call_user(self, func, args, kwargs, node, result=True):
        """The user's function (or a method of theirs, ``self.helper(x)``, with its instance
        or class first; or an object of theirs called, ``self.l1(x)``, its class's ``__call__``
        with the object first) inlined, as is a nested def or lambda; ``NOT_USER`` for any
        other callable."""
        func, args, kwargs = self.unpartial(func, args, kwargs)
        if isinstance(func, LocalFunction):
            return self.inline_local(func, args, kwargs, node, result)
        for kind, resolve in CALLABLE_TYPES:   # a gradient object, G(x): its generated code
            if isinstance(func, kind):
                try:
                    inlined, args, kwargs = resolve(func, args, kwargs)
                except CallError as exc:
                    raise self.src.error(node, str(exc), exc.hint) from None
                return self.inline_call(inlined, args, kwargs, node, result)
        if self.is_user_function(func):
            return self.inline_call(func, args, kwargs, node, result)
        if isinstance(func, types.MethodType) and self.is_user_function(func.__func__):
            return self.inline_call(func.__func__, [func.__self__, *args], kwargs, node, result)
        call = getattr(type(func), "__call__", None)   # a layer object: self.l1(x)
        if (not isinstance(func, type) and isinstance(call, types.FunctionType)
                and self.is_user_function(call)):
            return self.inline_call(call, [func, *args], kwargs, node, result)
        return NOT_USER

    def unpartial(self, func, args, kwargs):
        """``functools.partial(g, *a, **k)`` made before compiling (at module level, or passed
        as an argument) called: ``g`` called with its arguments first, as Python's."""
        while isinstance(func, functools.partial):
            fixed = [self.constant(a) if isinstance(a, np.ndarray) else a for a in func.args]
            keywords = {k: self.constant(v) if isinstance(v, np.ndarray) else v
                        for k, v in func.keywords.items()}
            func, args, kwargs = func.func, [*fixed, *args], {**keywords, **kwargs}
        return func, args, kwargs

    # ---- helpers ------------------------------------------------------------------------------
    def operand(self, x, node):
        """A node input: Values pass, Python numbers become literals, lists of numbers become
        constant arrays (as NumPy converts ``x * [1.0, 2.0]``)."""
        if is_list(x):
            raise arithmetic_error(self, node)
        if isinstance(x, Value) or isinstance(x, (bool, int, float)):
            return x
        if isinstance(x, np.generic):
            return x.item()
        if isinstance(x, (list, tuple)) and not any(isinstance(v, Value) for v in x):
            return self.constant(np.asarray(x))
        raise self.src.error(node, f"{_describe(x)} cannot be used as an array here",
                             "use arrays, floats or ints in arithmetic")

    def static_op(self, node, op, *args):
        try:
            return op(*args)
        except RecursionError:  # compiled again with room (reading.depth)
            raise
        except COMPUTING_ERRORS as exc:
            raise self.src.error(node, f"evaluating this while compiling failed: "
                                 f"{type(exc).__name__}: {exc}",
                                 "only arrays and floats are traced; this part runs as plain "
                                 "Python, and Python raises here") from exc

    def unsupported_call(self, node, func):
        text = self.src.text(node.func)
        if func is builtins.print:
            return self.src.error(node, "`print` is not supported in a compiled function: the "
                                  "generated code has no side effects", PRINT_HINT)
        module = getattr(func, "__module__", "") or ""
        owner = getattr(func, "__self__", None)  # np.random.randn is a bound method
        if module.startswith("numpy.random") or isinstance(owner, (np.random.RandomState,
                                                                   np.random.Generator)):
            return self.src.error(node.func, f"`{text}` draws random numbers, which compiled "
                                  "code does not do: a gradient would differ from call to "
                                  "call", "draw them in the caller and pass them as an "
                                  "argument (e.g. noise = rng.normal(size=n); grad(f)(x, noise))")
        why = refusals.reason(func)   # a shape that depends on the values, integer results
        if why is not None:
            return self.src.error(node.func, f"`{text}` {why[0]}", why[1])
        owner = _rule_owner(self.scope.fn)
        if owner is not None and (module.startswith("numpy") or isinstance(func, np.ufunc)):
            return self.src.error(
                node.func, f"`{text}` has no derivative rule in adcompiler, and second "
                f"derivatives differentiate `{owner.__name__}`'s rules as code",
                f"in {owner.fwd.__name__} and {owner.bwd.__name__}, call a custom_vjp function "
                f"in place of `{text}` (`{owner.__name__}(...)` itself where it computes the "
                "same), or take second derivatives by finite differences of adcompiler.grad")
        if module.startswith(("numpy", "scipy")) or isinstance(func, np.ufunc):
            rewrite = refusals.rewrite(func)
            return self.src.error(node.func, f"`{text}` has no derivative rule in adcompiler",
                                  (f"instead of `{text}`: {rewrite}" if rewrite else
                                   "write it with supported NumPy functions (np.exp, np.where, "
                                   "np.sum, ...; the docs list them: docs/reference/numpy.md)")
                                  + ", or give it a rule of your own: "
                                  "call it in a module-level function decorated with "
                                  "@adcompiler.custom_vjp, and give that function its "
                                  "backward with .defvjp(fwd, bwd)")
        if module == "math":
            return self.src.error(node.func, *_math_refusal(text, func))
        what = "" if callable(func) else f" ({_describe(func)})"
        return self.src.error(node.func, f"calling `{text}`{what} is not supported in a "
                              "compiled function", "call NumPy functions, math functions, or "
                              "your own module-level functions (they are inlined)")

    def unsupported_operator(self, node, left, right):
        """The located error for a bitwise or shift operator on a traced value."""
        text = _OP_TEXT[type(node.op)]
        traced = [x for x in (left, right) if isinstance(x, Value)]
        what = ("arrays" if all(x.aval.kind == "array" and x.aval.ndim != 0 for x in traced)
                else "traced values")
        masks = " (`&`, `|`, `^` combine boolean masks)" if text in "&|^" else ""
        return self.src.error(node, f"`{text}` on {what} is not supported: bitwise and shift "
                              f"operators on numbers have no derivative{masks}",
                              "write it with + - * / // % ** @ and np.where (a comparison "
                              "such as `x > 0` makes a mask), or compute it from Python "
                              "constants, which run while compiling")

    def operand_summary(self, node) -> str:
        """The shapes of the traced names ``node`` reads, as a hint: ``x: f64[3], w: f64[4,2]``."""
        seen = []
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id not in seen:
                seen.append(sub.id)
        shapes = [f"{n}: {v.aval}" for n in seen
                  if isinstance(v := self.scope.env.get(n), Value)]
        return ("NumPy raises this too on inputs of these shapes"
                + (f" ({', '.join(shapes)})" if shapes else ""))


def _math_refusal(text, func) -> tuple:
    """``(message, hint)`` for a ``math`` function the compiler does not take (``math.floor``):
    which ones it takes, and NumPy's function of the same name where that one compiles."""
    taken = ", ".join(sorted(f"math.{n}" for n in MATH_PRIMS))
    same = getattr(np, func.__name__, None)
    hint = (f"use np.{func.__name__}, which compiles (on Python floats too)"
            if _hashable(same) and same in FUNCTIONS else
            "compute it before the call and pass the result in, or write it with the functions "
            "that compile")
    return f"`{text}` is not one of the math functions that compile ({taken})", hint


# ---- the handlers, one per expression form -------------------------------------------------
@expression(ast.Constant)
def lower_constant(lowering, node):
    return node.value


@expression(ast.Name)
def lower_name(lowering, node):
    value = lowering.lookup(node.id, node)
    refuse_building(lowering, node, value)  # a while loop's list, while the loop is lowered
    return value


@expression(ast.Tuple)
def lower_tuple(lowering, node):
    return tuple(starred(lowering, node.elts))   # (*a, b): .containers


@expression(ast.List)
def lower_list(lowering, node):  # a list, not a tuple: in an index it is one integer array
    return starred(lowering, node.elts)


@expression(ast.BinOp)
def lower_binop(lowering, node):
    left, right = lowering.expr(node.left), lowering.expr(node.right)
    prim, pyop = BINOPS[type(node.op)]
    if not isinstance(left, Value) and not isinstance(right, Value):
        return lowering.static_op(node, pyop, left, right)
    if prim is None:
        prim = _MASK_OPS.get(type(node.op)) if _masks(left, right) else None
        if prim is None:
            raise lowering.unsupported_operator(node, left, right)
    return lowering.b.emit(prim, (lowering.operand(left, node.left),
                                  lowering.operand(right, node.right)))


@expression(ast.UnaryOp)
def lower_unaryop(lowering, node):
    x = lowering.expr(node.operand)
    if not isinstance(x, Value):
        ops = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
               ast.Invert: operator.invert}
        return lowering.static_op(node, ops[type(node.op)], x)
    if isinstance(node.op, ast.UAdd):   # NumPy's +x is a new array, not x itself
        return x if x.aval.is_scalar else lowering.b.emit("copy", (x,))
    if isinstance(node.op, ast.USub):
        return lowering.b.emit("negative", (x,))
    if isinstance(node.op, ast.Not):
        if x.aval.known_shape == ():  # a condition: Python's not of one truth value
            return lowering.b.emit("logical_not", (x,))
        raise lowering.src.error(node, "`not` of an array with more than one element is "
                                 "ambiguous", "use np.logical_not(x) for an elementwise not")
    if _masks(x):   # NumPy's ~ of booleans is their logical not
        return lowering.b.emit("logical_not", (x,))
    raise lowering.src.error(node, "`~` on arrays other than boolean masks is not supported",
                             "use np.logical_not(x) on a condition")


@expression(ast.Compare)
def lower_compare(lowering, node):
    if len(node.ops) != 1:  # lo < x < hi: Python's `lo < x and x < hi`, x read once
        return lower_chain(lowering, node)
    left, right = lowering.expr(node.left), lowering.expr(node.comparators[0])
    op = type(node.ops[0])
    if not isinstance(left, Value) and not isinstance(right, Value):
        return lowering.static_op(node, _STATIC_COMPARE[op], left, right)
    if op in (ast.Is, ast.IsNot) and (left is None or right is None):
        return op is ast.IsNot  # a traced value is an array or a number: never None
    if op not in COMPARE:
        raise lowering.src.error(node, f"`{_CMP_TEXT[op]}` on arrays is not supported",
                                 "compare arrays with ==, !=, <, <=, > or >=")
    return lowering.b.emit(COMPARE[op][0], (lowering.operand(left, node.left),
                                            lowering.operand(right, node.comparators[0])))


@expression(ast.Attribute)
def lower_attribute(lowering, node):
    base = lowering.expr(node.value)
    if isinstance(base, Value):
        if base.aval.kind == "list":  # a while loop's stack (see ..statements.lists)
            raise attribute_error(lowering, node)
        if node.attr in ATTRIBUTES:
            return ATTRIBUTES[node.attr](lowering.b, base)
        if node.attr == "dtype" and base.aval.kind == "array":  # fixed by the signature
            return np.dtype(base.aval.dtype)
        if node.attr in METHODS:
            return Method(node.attr, base)
        raise lowering.src.error(node, f"the array attribute `.{node.attr}` is not supported",
                                 f"supported: {', '.join(sorted(ATTRIBUTES) + sorted(METHODS))}")
    try:
        return getattr(base, node.attr)
    except AttributeError:
        raise lowering.src.error(node, f"{_describe(base)} has no attribute `{node.attr}`",
                                 _attribute_hint(lowering, node, base)) from None


def _attribute_hint(lowering, node, base) -> str:
    """``did you mean `np.tanh`?`` for ``np.tanhh``: the closest of the object's own public
    names, as for a misspelt local name."""
    import difflib  # here, on this error path only: it is slow to import
    text = lowering.src.text(node)
    try:
        names = [n for n in dir(base) if not n.startswith("_")]
    except Exception:  # noqa: BLE001 - an object whose dir() fails: no suggestion
        names = []
    close = difflib.get_close_matches(node.attr, names, n=1)
    if close:
        return f"did you mean `{text[:len(text) - len(node.attr)]}{close[0]}`?"
    return f"check the spelling of `{text}`"


@expression(ast.Subscript)
def lower_subscript(lowering, node):
    base = lowering.expr(node.value)
    if not isinstance(base, Value):
        index = lowering.expr(node.slice)
        for item in index if isinstance(index, tuple) else (index,):
            if isinstance(item, MovingSlice):
                raise lowering.refuse_moving(item)
        if isinstance(base, concatenators.CONCATENATORS) and contains_value(index):
            try:   # np.r_[x, 0.0, y], np.c_[a, b]
                return concatenators.concatenate(lowering.b, base, index)
            except CallError as exc:
                raise lowering.src.error(node, str(exc), exc.hint) from None
        if isinstance(base, dict):   # params["W"]: a container's entry (.containers)
            return dict_item(lowering, node, base, index)
        if isinstance(index, Value) or isinstance(base, (int, float)):
            raise lowering.src.error(node, f"{_describe(base)} cannot be indexed here",
                                     "index arrays, or tuples and shapes with Python ints")
        return lowering.static_op(node, operator.getitem, base, index)
    return lower_index(lowering, base, node)


@expression(ast.Call)
def lower_call(lowering, node):
    consumer = consumed_by(lowering, node)  # sum(... for ...), max(xs)...: .comprehensions
    if consumer is not None:
        return lower_consumed(lowering, node, consumer)
    with masked.collecting(lowering.b, masked.reduction_call(node)) as reads:
        func = lowering.expr(node.func)   # np.sum(x[x > 0]): the mask reads it makes, collected
        args, kwargs = lowering.call_arguments(node)
    if reads is not None and reads.read is not None:
        return masked.masked_call(lowering, reads, func, args, kwargs, Method)
    func, args, kwargs = lowering.unpartial(func, args, kwargs)
    try:
        if isinstance(func, Method):
            return call(lambda b, a, k: METHODS[func.name](b, func.base, a, k),
                        lowering.b, args, kwargs)
        if _hashable(func) and func in FUNCTIONS:
            return call(FUNCTIONS[func], lowering.b, args, kwargs)
        library = special.handler_for(func) or factorizations.handler_for(func)  # SciPy's
        if library is not None:
            return call(library, lowering.b, args, kwargs)
        if container_method(func) or builds_container(func):   # params.items(), State(h, c)
            return lowering.static_op(node, lambda *a: func(*a, **kwargs), *args)
    except CallError as exc:
        raise lowering.src.error(node, f"`{lowering.src.text(node.func)}()` {exc}",
                                 exc.hint) from None
    inlined = lowering.call_user(func, args, kwargs, node)
    if inlined is NOT_USER and (getattr(func, "__module__", None) == "math"
                                or static_numpy.foldable(func)) and \
            not contains_value([args, list(kwargs.values())]):   # np.tril_indices(3): known
        return lowering.static_op(node, functools.partial(func, **kwargs), *args)
    if inlined is NOT_USER:
        raise lowering.unsupported_call(node, func)
    return inlined


@expression(ast.Slice)
def lower_slice(lowering, node):
    bounds = [None if p is None else lowering.expr(p)
              for p in (node.lower, node.upper, node.step)]
    if any(isinstance(p, Value) for p in bounds):
        return MovingSlice(*bounds, node)  # x[t:t + 2] in a loop: see .windows
    return slice(*bounds)


# The methods of a Python container (a container argument, a dict or list display) that read
# it: they run while compiling, on its Values as on anything else
_READING_METHODS = {dict: {"items", "keys", "values", "get", "copy"},
                    list: {"index", "count", "copy"}, tuple: {"index", "count"}}


def container_method(func) -> bool:
    """Whether ``func`` is a reading method of a dict, list or tuple (``params.items``)."""
    owner = getattr(func, "__self__", None)
    return isinstance(func, types.BuiltinMethodType) and any(
        isinstance(owner, kind) and func.__name__ in names
        for kind, names in _READING_METHODS.items())


def _rule_owner(fn):
    """The custom_vjp function whose ``fwd`` or ``bwd`` ``fn`` is (hessian lowers those rules
    as code), found among ``fn``'s module globals; None for other functions."""
    for obj in list(getattr(fn, "__globals__", {}).values()):
        if callable(getattr(obj, "defvjp", None)) and any(
                getattr(obj, rule, None) is fn for rule in ("fwd", "bwd")):
            return obj
    return None


# `&`, `|` and `^` of boolean masks (`(r > a) & (r < b)`): NumPy computes them as logical and,
# or and xor, which need no derivative; on numbers they are bitwise and stay refused.
_MASK_OPS = {ast.BitAnd: "logical_and", ast.BitOr: "logical_or", ast.BitXor: "not_equal"}


def _masks(*operands) -> bool:
    """Whether every operand is boolean: a traced mask, or a Python or NumPy bool."""
    return all(x.aval.dtype == "bool" if isinstance(x, Value) else isinstance(x, (bool, np.bool_))
               for x in operands)


_OP_TEXT = {ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
            ast.BitXor: "^"}
_CMP_TEXT = {ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
_STATIC_COMPARE = {**{k: v[1] for k, v in COMPARE.items()}, ast.Is: operator.is_,
                   ast.IsNot: operator.is_not, ast.In: lambda a, b: a in b,
                   ast.NotIn: lambda a, b: a not in b}


def _hashable(x) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape}"
    if callable(x) and hasattr(x, "__name__"):
        return f"the {type(x).__name__} `{x.__name__}`"
    return f"a `{type(x).__name__}` object"
