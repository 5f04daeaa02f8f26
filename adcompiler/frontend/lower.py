"""Lower a Python function into an SSA graph, specialised to its inputs' abstract values.

Names resolve as Python resolves them: a name the function assigns anywhere is local (reading
it before its assignment is an error, as Python's UnboundLocalError), others come from the
closure, then the module globals, then builtins. Calls to the user's own functions are inlined.
Invariant: the graph returned verifies, every node carries the user's source line it came from,
and values carry the user's names.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import types

import numpy as np

from ..ir import Aval, Graph, Value
from ..ir.builder import Builder
from . import fence
from .bindings.memory import memory_root, open_producers
from .bindings.trees import Tree, rebuild
from .bindings.unreadable import Unreadable
from .expressions.lowering import ExpressionLowering
from .expressions.windows import WindowLowering
from .library.special import is_library_function
from .reading.parameters import python_call_error
from .reading.scopes import own_names
from .reading.source import read_function
from .statements import assignments, checks, expression_statements, loops  # noqa: F401 (handlers)
from .statements.blocks import run_body
from .statements.context import LoopContext, Scope, Unrolling
from .statements.control import ControlLowering
from .statements.local_functions import LocalFunctionLowering, refuse_escape
from .statements.setitem import assign_subscript
from .statements.unpacking import unpacked

_MISSING = object()
_MAX_INLINE_DEPTH = 32


class Lowering(ExpressionLowering, WindowLowering, ControlLowering, LocalFunctionLowering):
    """The lowering of one function's body (or an inlined call's), into ``graph`` through
    ``builder``: ``src`` is its source, ``depth`` how many calls it is inlined into; its state
    is in three small objects (:mod:`.statements.context`): ``scope`` (the names),
    ``loop`` (the blocks open around the statement lowered now), ``unrolling`` (the
    comprehensions unrolled now)."""

    def __init__(self, fn, graph: Graph, builder: Builder, depth=0, caller=None):
        self.src = read_function(fn, inlined=caller is not None)  # a lambda only if called
        fence.check(self.src)  # starred targets (a, *rest = p) pass: .unpacking binds them
        code = fn.__code__  # a name a nested def or lambda reads is a cell variable
        local_names = set(code.co_varnames + code.co_cellvars) - own_names(self.src.tree)
        self.start(graph, builder, depth, Scope(fn, local_names, _closure_vars(fn), caller))

    def start(self, graph: Graph, builder: Builder, depth, scope: Scope):
        self.graph, self.b, self.depth = graph, builder, depth
        self.scope, self.loop, self.unrolling = scope, LoopContext(), Unrolling()

    # ---- names --------------------------------------------------------------------------------
    def lookup(self, name, node):
        value = self.scope.env.get(name, _MISSING)
        if isinstance(value, Unreadable):
            readable = value.resolve(self, node) if hasattr(value, "resolve") else None
            if readable is not None:   # y = x[m], read inside np.sum(...) (expressions.masked)
                return readable
            raise self.src.error(node, *value.describe(name))
        if value is _MISSING and name in self.scope.locals:
            raise self.src.error(node, f"local variable `{name}` is read before it is assigned",
                                 f"Python treats `{name}` as local because the function "
                                 "assigns it; assign it before this line, or rename it")
        if value is _MISSING:
            value = self.outer(name, node)
        return self.constant(value, name) if isinstance(value, np.ndarray) else value

    def outer(self, name, node):
        """A name the function does not assign: from its closure, module globals or builtins."""
        if self.scope.definer is not None:  # a nested def or lambda: its definer's, when read
            return self.free_name(name, node)
        for scope in (self.scope.closure, self.scope.fn.__globals__, vars(builtins)):
            value = scope.get(name, _MISSING)
            if value is not _MISSING:
                return value
        raise self.src.error(node, f"name `{name}` is not defined", self.spelling_hint(name))

    def spelling_hint(self, name) -> str:
        if name in own_names(self.src.tree):
            return (f"`{name}` is bound only inside a comprehension, whose names are its own (as "
                    "in Python 3): assign it before this line to use it here")
        import difflib  # here, on this error path only: it is slow to import
        known = [*self.scope.env, *self.scope.closure, *self.scope.fn.__globals__, *vars(builtins)]
        close = difflib.get_close_matches(name, known, n=1)
        if close:
            return f"did you mean `{close[0]}`?"
        return "define it before this line, or at module level"

    def constant(self, array: np.ndarray, name=None) -> Value:
        """An array from a closure or global becomes a graph constant (bound, never copied),
        named as the user named it (``x @ W``)."""
        for v, data in self.graph.consts.items():
            if data is array:
                return v
        return self.b.constant(array, name or "const")

    def bind(self, target, value, stmt):
        if isinstance(target, ast.Name):
            if isinstance(value, Value) and value.name is None:
                self.graph.name_value(value, target.id)
                value.origin = target.id
            self.scope.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            stored = {}  # root of an array stored into by an earlier target -> its text
            for t, v in unpacked(self, target, value):  # an array: its rows (.unpacking)
                self.check_unpacked_view(stored, t, v)
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and \
                        isinstance(self.scope.env.get(t.value.id), Value):
                    root = memory_root(self.scope.env[t.value.id], open_producers(self.b))
                    stored[root] = self.src.text(t)
                self.bind(t, v, stmt)
        elif isinstance(target, ast.Subscript):
            assign_subscript(self, target, value, stmt)
        else:
            raise self.src.error(target, "assigning to an attribute is not supported",
                                 "assign to a plain name, and return the value")

    def check_unpacked_view(self, stored, target, value):
        """``Y[0], Y[1] = Y[1], Y[0]``: NumPy stores into ``Y[0]`` before it reads the view
        ``Y[0]`` on the right for the second store (so both rows end up as the old ``Y[1]``).
        The compiled right side holds values, so a view into an array an earlier target of the
        same unpacking stored into is refused."""
        if not stored or not isinstance(value, Value):
            return
        producers = open_producers(self.b)
        root = memory_root(value, producers)
        if root is not value and root in stored:
            raise self.src.error(
                target, f"the value stored here is a view of the array that `{stored[root]} = "
                "...` may just have changed: NumPy would store the changed data", "index with arrays "
                "to swap (Y[[0, 1]] = Y[[1, 0]]), or .copy() the right side's items")

    # ---- calls to the user's own functions ----------------------------------------------------
    def is_user_function(self, func):
        return isinstance(func, types.FunctionType) and not is_library_function(func)

    def inline_call(self, func, args, kwargs, node, result=True):
        if self.depth >= _MAX_INLINE_DEPTH:
            raise self.src.error(node, "calls nest too deep to inline (recursion?)",
                                 "recursion is not supported; write the computation iteratively")
        try:
            bound = inspect.signature(func).bind(*args, **kwargs)
        except TypeError:
            exc = python_call_error(func, args, kwargs)
            raise self.src.error(node, f"TypeError: {exc}",
                                 f"{func.__name__}'s parameters: {_parameters(func)}") from None
        bound.apply_defaults()
        callee = Lowering(func, self.graph, self.b, self.depth + 1, caller=self)
        callee.scope.env.update(bound.arguments)
        saved = self.b.source
        try:
            return run_body(callee, result)
        finally:
            self.b.source = saved


def _parameters(func) -> str:
    return str(inspect.signature(func))[1:-1] or "none"


def _closure_vars(fn) -> dict:
    code, cells = fn.__code__, fn.__closure__ or ()
    out = {}
    for name, cell in zip(code.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell: defined later
            pass
    return out


def lower_function(fn, arguments: dict) -> Graph:
    """The graph of ``fn`` for these arguments: an Aval for a traced parameter, a Tree for a
    container of traced values (bound to the same container of its leaves' Values), else its
    value.

    The graph's parameters are the traced parameters in signature order; its outputs are the
    Values of the returned expression (a tuple gives several).
    """
    graph = Graph(fn.__name__, params=[])
    builder = Builder(graph)
    with builder:
        lowering = Lowering(fn, graph, builder)
        for name, arg in arguments.items():
            if isinstance(arg, Aval):
                v = graph.name_value(Value(arg, origin=name), name)
                graph.params.append(v)
                lowering.scope.env[name] = v
            elif isinstance(arg, Tree):   # a container: its leaves are parameters (.trees)
                leaves = [graph.name_value(Value(a, origin=n), n) for n, a in arg.leaves]
                graph.params.extend(leaves)
                lowering.scope.env[name] = rebuild(arg.structure, iter(leaves))
            else:
                lowering.scope.env[name] = arg
        result = run_body(lowering)
    results = result if isinstance(result, tuple) else (result,)
    refuse_escape(results)
    for v in results:
        if isinstance(v, Value) and v.name is None:
            graph.name_value(v, fn.__name__)  # the returned value reads as the function's name
    graph.outputs = list(results)
    graph.returned = result   # as the function returns it: a container for a vjp (.trees)
    graph.source = lowering.src
    return graph

