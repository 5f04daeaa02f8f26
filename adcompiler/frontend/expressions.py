"""Lower expressions: each AST expression becomes a Value (emitted nodes) or a static Python object.

Static objects (numbers, shapes, modules, functions, dtypes) are computed while compiling; only
what depends on the function's inputs becomes IR. Invariant: an expression that cannot be lowered
raises a CompileError located at that expression.
"""

from __future__ import annotations

import ast
import operator

import numpy as np

from ..ir import Value
from ..ir.builder import NeedsShape
from .calls import ATTRIBUTES, FUNCTIONS, METHODS, CallError, static

BINOPS = {ast.Add: ("add", operator.add), ast.Sub: ("subtract", operator.sub),
          ast.Mult: ("multiply", operator.mul), ast.Div: ("divide", operator.truediv),
          ast.Pow: ("power", operator.pow), ast.MatMult: ("matmul", operator.matmul),
          ast.FloorDiv: (None, operator.floordiv), ast.Mod: (None, operator.mod)}
COMPARE = {ast.Gt: ("greater", operator.gt), ast.GtE: ("greater_equal", operator.ge),
           ast.Lt: ("less", operator.lt), ast.LtE: ("less_equal", operator.le),
           ast.Eq: ("equal", operator.eq), ast.NotEq: ("not_equal", operator.ne)}


class ExpressionLowering:
    """Mixin of the lowering: ``expr(node)`` turns an expression into a Value or a static object."""

    def expr(self, node):
        method = getattr(self, "expr_" + type(node).__name__)
        try:
            return method(node)
        except CallError as exc:
            raise self.src.error(node, str(exc), exc.hint)
        except NeedsShape:
            raise self.src.error(node, "this needs the shape of an input, which is unknown here",
                                 "call the compiled function on example inputs first")

    def expr_Constant(self, node):
        return node.value

    def expr_Name(self, node):
        return self.lookup(node.id, node)

    def expr_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    expr_List = expr_Tuple

    def expr_BinOp(self, node):
        left, right = self.expr(node.left), self.expr(node.right)
        prim, pyop = BINOPS[type(node.op)]
        if not isinstance(left, Value) and not isinstance(right, Value):
            return self.static_op(node, pyop, left, right)
        if prim is None:
            raise self.src.error(node, f"`{type(node.op).__name__}` on arrays is not supported: "
                                 "it has no useful derivative", "use np.floor or a mask instead")
        return self.b.emit(prim, (self.operand(left, node.left), self.operand(right, node.right)))

    def expr_UnaryOp(self, node):
        x = self.expr(node.operand)
        if isinstance(node.op, ast.UAdd):
            return x
        if not isinstance(x, Value):
            ops = {ast.USub: operator.neg, ast.Not: operator.not_, ast.Invert: operator.invert}
            return self.static_op(node, ops[type(node.op)], x)
        if isinstance(node.op, ast.USub):
            return self.b.emit("negative", (x,))
        if isinstance(node.op, ast.Not):
            return self.b.emit("logical_not", (x,))
        raise self.src.error(node, "`~` on arrays is not supported", "use np.logical_not")

    def expr_Compare(self, node):
        if len(node.ops) != 1:
            raise self.src.error(node, "chained comparisons are not supported",
                                 "combine two comparisons with np.logical_and")
        left, right = self.expr(node.left), self.expr(node.comparators[0])
        op = type(node.ops[0])
        if op not in COMPARE:
            raise self.src.error(node, f"`{op.__name__}` comparisons are not supported",
                                 "use ==, !=, <, <=, > or >=")
        prim, pyop = COMPARE[op]
        if not isinstance(left, Value) and not isinstance(right, Value):
            return self.static_op(node, pyop, left, right)
        return self.b.emit(prim, (self.operand(left, node.left),
                                         self.operand(right, node.comparators[0])))

    def expr_Attribute(self, node):
        base = self.expr(node.value)
        if isinstance(base, Value):
            if node.attr in ATTRIBUTES:
                return ATTRIBUTES[node.attr](self.b, base)
            if node.attr in METHODS:
                return ("method", node.attr, base)
            raise self.src.error(node, f"the array attribute `.{node.attr}` is not supported",
                                 f"supported: {', '.join(sorted(ATTRIBUTES) + sorted(METHODS))}")
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise self.src.error(node, f"{_describe(base)} has no attribute `{node.attr}`")

    def expr_Subscript(self, node):
        base = self.expr(node.value)
        if not isinstance(base, Value):
            index = self.expr(node.slice)
            return self.static_op(node, operator.getitem, base, index)
        return self.lower_index(base, node)

    def expr_Call(self, node):
        func = self.expr(node.func)
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        if isinstance(func, tuple) and len(func) == 3 and func[0] == "method":
            return METHODS[func[1]](self.b, func[2], args, kwargs)
        if callable(func) and func in FUNCTIONS:
            return FUNCTIONS[func](self.b, args, kwargs)
        if self.is_user_function(func):
            return self.inline_call(func, args, kwargs, node)
        raise self.unsupported_call(node, func)

    def expr_Slice(self, node):
        return slice(*(static(self.expr(p), "a slice bound") if p is not None else None
                       for p in (node.lower, node.upper, node.step)))

    # ---- helpers ------------------------------------------------------------------------------
    def operand(self, x, node):
        """A node input: Values pass, Python numbers become literals, arrays become constants."""
        if isinstance(x, Value) or isinstance(x, (bool, int, float)):
            return x
        if isinstance(x, np.generic):
            return x.item()
        if isinstance(x, np.ndarray):
            return self.constant(x)
        raise self.src.error(node, f"{_describe(x)} cannot be used as an array here")

    def static_op(self, node, op, *args):
        try:
            return op(*args)
        except Exception as exc:
            raise self.src.error(node, f"evaluating this while compiling failed: {exc}")

    def unsupported_call(self, node, func):
        name = getattr(func, "__name__", None) or _describe(func)
        module = getattr(func, "__module__", "") or ""
        if module.startswith("numpy") or isinstance(func, np.ufunc):
            return self.src.error(node.func, f"np.{name} has no derivative rule in adcompiler",
                                  "supported NumPy functions are listed in the README; "
                                  "write it with supported ones, or register a rule")
        return self.src.error(node.func, f"calling `{name}` is not supported in a compiled "
                              "function", "call NumPy functions, math functions, or your own "
                              "module-level functions (they are inlined)")


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape}"
    return f"`{type(x).__name__}` object"
