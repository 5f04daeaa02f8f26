"""The syntax fence: reject, up front and located, every construct the compiler does not take.

Invariant: a function body that passes :func:`check` contains only the statement and expression
kinds listed in ``ALLOWED``; lowering may still reject a *name* it cannot resolve.
"""

from __future__ import annotations

import ast

from .statements.checks import allowed_parts
from .statements.expression_statements import bare_expression, may_call_user
from .statements.lists import is_append
from .statements.local_functions import check_definition
from .statements.setitem import is_add_at
from .reading.source import FunctionSource

ALLOWED = (
    ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr, ast.Pass,
    ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call, ast.Attribute, ast.Name, ast.Constant,
    ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.keyword,
    ast.Load, ast.Store, ast.operator, ast.unaryop, ast.cmpop, ast.arguments, ast.arg,
    ast.If, ast.For, ast.While, ast.IfExp, ast.BoolOp, ast.boolop, ast.Break, ast.Continue,
    ast.Assert, ast.Raise, ast.ListComp, ast.GeneratorExp, ast.comprehension,  # unrolled: .comprehensions
    ast.Dict, ast.DictComp, ast.Starred,  # built while compiling: .expressions.containers
)

_WHY = {
    ast.Try: ("`try` is not supported in a compiled function",
              "move error handling to the caller; the compiled gradient raises what NumPy raises"),
    ast.Yield: ("generators (`yield`) cannot be differentiated", "return an array instead"),
    ast.YieldFrom: ("generators (`yield from`) cannot be differentiated",
                    "return an array instead"),
    ast.ClassDef: ("a `class` definition is not supported in a compiled function",
                   "define the class outside the function"),
    ast.With: ("`with` is not supported in a compiled function", "move it to the caller"),
    ast.Global: ("`global` is not supported: compiled functions do not write module state",
                 "return the value instead"),
    ast.Nonlocal: ("`nonlocal` is not supported: compiled functions do not write outer state",
                   "return the value instead"),
    ast.Delete: ("`del` is not supported in a compiled function", "just stop using the name"),
    ast.Import: ("`import` inside a compiled function is not supported",
                 "import at module level"),
    ast.ImportFrom: ("`import` inside a compiled function is not supported",
                     "import at module level"),
    ast.SetComp: ("set comprehensions are not supported", "use a list comprehension"),
    ast.Set: ("sets are not supported in a compiled function", "use arrays"),
    ast.JoinedStr: ("f-strings are not supported in a compiled function",
                    "format strings in the caller"),
    ast.NamedExpr: ("`:=` is not supported", "use a separate assignment"),
    ast.Await: ("`await` is not supported", "compile a synchronous function"),
    ast.AsyncFunctionDef: ("async functions cannot be compiled", "use a plain def"),
    ast.AsyncFor: ("`async for` is not supported", "compile a synchronous function"),
    ast.AsyncWith: ("`async with` is not supported", "compile a synchronous function"),
}
for _name, _why in [("Match", ("`match` statements are not supported (straight-line code only)",
                               "use np.where(cond, a, b) for elementwise choices")),
                    ("TryStar", _WHY[ast.Try])]:
    if hasattr(ast, _name):  # newer Python versions only
        _WHY[getattr(ast, _name)] = _why


def check(src: FunctionSource) -> None:
    """Raise a located CompileError at the first unsupported construct of ``src``'s body."""
    tree = src.tree
    if isinstance(tree, ast.AsyncFunctionDef):
        raise src.error(tree, *_WHY[ast.AsyncFunctionDef])
    # `*args` / `**kwargs` parameters bind a tuple / a dict: containers (..bindings.trees)
    for stmt in tree.body:
        messages = {id(m) for a in ast.walk(stmt) if isinstance(a, ast.Assert) and a.msg
                    for m in ast.walk(a.msg)}  # shown as written, never lowered
        messages |= allowed_parts(stmt)  # raise's f-strings, `with np.errstate(...)`
        for node in ast.walk(stmt):
            if isinstance(node, ALLOWED) or id(node) in messages:
                continue
            if isinstance(node, (ast.FunctionDef, ast.Lambda)):  # inlined: .local_functions
                check_definition(src, node)
                continue
            message, hint = _WHY.get(type(node), (
                f"`{type(node).__name__}` syntax is not supported in a compiled function",
                "write straight-line NumPy code: assignments, arithmetic, NumPy calls"))
            raise src.error(node, message, hint)
        for node in ast.walk(stmt):  # in blocks too; xs.append, np.add.at are lowered
            if isinstance(node, ast.Expr) and not (_is_constant(node) or is_append(node)
                                                   or is_add_at(node) or may_call_user(node)):
                raise bare_expression(src, node)


def _is_constant(stmt) -> bool:
    """A docstring, or ``...`` standing for ``pass``: no effect, nothing to lower."""
    return isinstance(stmt.value, ast.Constant) and (isinstance(stmt.value.value, str)
                                                     or stmt.value.value is Ellipsis)
