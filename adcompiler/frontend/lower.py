"""Lower a Python function into an SSA graph, specialised to its inputs' abstract values.

Names resolve through locals, then the function's closure, then its module globals, then
builtins. Calls to the user's own functions are inlined. Invariant: the graph returned verifies,
every node carries the user's source line it came from, and values carry the user's names.
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
from .expressions import ExpressionLowering
from .indexing import IndexLowering
from .source import read_function

_MISSING = object()
_MAX_INLINE_DEPTH = 32


class Lowering(ExpressionLowering, IndexLowering):
    def __init__(self, fn, graph: Graph, builder: Builder, depth=0):
        self.fn = fn
        self.src = read_function(fn)
        fence.check(self.src)
        self.graph, self.b, self.depth = graph, builder, depth
        self.env: dict = {}
        self.consts: dict = {}  # id(array) -> Value, shared with inlined callees via the graph
        self.closure = _closure_vars(fn)

    # ---- names --------------------------------------------------------------------------------
    def lookup(self, name, node):
        for scope in (self.env, self.closure, self.fn.__globals__, vars(builtins)):
            value = scope.get(name, _MISSING)
            if value is not _MISSING:
                return self.constant(value) if isinstance(value, np.ndarray) else value
        raise self.src.error(node, f"name `{name}` is not defined")

    def constant(self, array: np.ndarray) -> Value:
        """An array from a closure or global becomes a graph constant (bound, never copied)."""
        for v, data in self.graph.consts.items():
            if data is array:
                return v
        v = Value(Aval.of(array))
        self.graph.name_value(v, "const")
        self.graph.consts[v] = array
        return v

    def bind(self, target, value, stmt):
        if isinstance(target, ast.Name):
            if isinstance(value, Value) and value.name is None:
                self.graph.name_value(value, target.id)
                value.origin = target.id
            self.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                raise self.src.error(target, "cannot unpack this value into "
                                     f"{len(target.elts)} names",
                                     "unpack tuples of matching length only")
            for t, v in zip(target.elts, value):
                self.bind(t, v, stmt)
        else:
            raise self.src.error(target, "assigning into an array (`x[i] = ...`) or an "
                                 "attribute is not supported yet",
                                 "build the array with np.where or np.concatenate instead")

    # ---- statements ---------------------------------------------------------------------------
    def run_body(self):
        """Lower the statements; returns the lowered return value."""
        for stmt in self.src.tree.body:
            self.b.source = self.src.text(stmt)
            if isinstance(stmt, ast.Return):
                if stmt is not self.src.tree.body[-1]:
                    raise self.src.error(stmt, "an early `return` is not supported yet",
                                         "return once, at the end of the function")
                if stmt.value is None:
                    raise self.src.error(stmt, "the function returns nothing",
                                         "return the value to differentiate")
                return self.expr(stmt.value)
            self.statement(stmt)
        raise self.src.error(self.src.tree, f"`{self.src.tree.name}` has no `return` statement",
                             "return the value to differentiate")

    def statement(self, stmt):
        if isinstance(stmt, ast.Assign):
            value = self.expr(stmt.value)
            for target in stmt.targets:
                self.bind(target, value, stmt)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.bind(stmt.target, self.expr(stmt.value), stmt)
        elif isinstance(stmt, ast.AugAssign):
            self.augmented(stmt)
        # Pass and docstrings do nothing.

    def augmented(self, stmt):
        """``y op= v``: SSA rebinding. Names aliasing the same array see the update, as in NumPy."""
        target = stmt.target
        if not isinstance(target, ast.Name):
            raise self.src.error(target, "augmented assignment into an array element is not "
                                 "supported yet", "write y = y + v on the whole array")
        old = self.lookup(target.id, target)
        new = self.expr(ast.BinOp(left=target, op=stmt.op, right=stmt.value,
                                  **_loc(stmt)))
        if isinstance(old, Value) and not old.aval.is_scalar:
            for name, value in list(self.env.items()):
                if value is old and name != target.id:
                    self.env[name] = new
        self.bind(target, new, stmt)

    # ---- calls to the user's own functions ----------------------------------------------------
    def is_user_function(self, func):
        return isinstance(func, types.FunctionType) and not func.__module__.startswith("numpy")

    def inline_call(self, func, args, kwargs, node):
        if self.depth >= _MAX_INLINE_DEPTH:
            raise self.src.error(node, "calls nest too deep to inline (recursion?)",
                                 "recursion is not supported; write the computation iteratively")
        try:
            bound = _signature(func).bind(*args, **kwargs)
        except TypeError as exc:
            raise self.src.error(node, f"calling {func.__name__}: {exc}")
        bound.apply_defaults()
        callee = Lowering(func, self.graph, self.b, self.depth + 1)
        callee.env.update(bound.arguments)
        saved = self.b.source
        try:
            return callee.run_body()
        finally:
            self.b.source = saved


def _signature(func):
    return inspect.signature(func)


def _closure_vars(fn) -> dict:
    code, cells = fn.__code__, fn.__closure__ or ()
    out = {}
    for name, cell in zip(code.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell: defined later
            pass
    return out


def _loc(node) -> dict:
    return {k: getattr(node, k) for k in ("lineno", "col_offset", "end_lineno", "end_col_offset")}


def lower_function(fn, arguments: dict) -> Graph:
    """The graph of ``fn`` for these arguments: an Aval for a traced parameter, else its value.

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
                lowering.env[name] = v
            else:
                lowering.env[name] = arg
        result = lowering.run_body()
    results = result if isinstance(result, tuple) else (result,)
    for v in results:
        if isinstance(v, Value) and v.name is None:
            graph.name_value(v, fn.__name__)  # the returned value reads as the function's name
    graph.outputs = list(results)
    graph.source = lowering.src
    return graph

