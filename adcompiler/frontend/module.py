"""Load a user's module *statically*: its functions, imports and constants, never its top level.

Invariant: nothing the user wrote runs. Imports of numpy, math and adcompiler are resolved to the
real modules; module-level constants are kept when they are literals (or literal arrays);
``def`` statements are compiled with their decorators removed, so defining them runs no user code
(defaults must be literals). Everything else at top level is ignored, never executed.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass, field

import numpy as np

from ..errors import CompileError, Location

RESOLVABLE = ("numpy", "math", "adcompiler", "cupy")
_ARRAY_BUILDERS = {"array", "asarray", "arange", "linspace", "eye", "ones", "zeros", "full"}
_TRANSFORMS = ("grad", "value_and_grad", "vjp", "jvp")


@dataclass
class StaticModule:
    path: str
    namespace: dict
    functions: dict = field(default_factory=dict)   # name -> function object
    marked: dict = field(default_factory=dict)      # name -> (mode, wrt) from its decorator


def load_module(path: str) -> StaticModule:
    """The functions, imports and literal constants of the file at ``path``, without running it."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    lines = text.splitlines(True)
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise CompileError(f"syntax error: {exc.msg}",
                           Location(path, exc.lineno or 1, (exc.offset or 1) - 1,
                                    lines[(exc.lineno or 1) - 1] if lines else ""),
                           "fix the syntax error: Python cannot import this file either")
    module = StaticModule(path, {"__name__": "adcompiler_static", "__file__": path})
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            _bind_import(module.namespace, stmt)
        elif isinstance(stmt, ast.Assign):
            _bind_constant(module.namespace, stmt)
        elif isinstance(stmt, ast.FunctionDef):
            _define(module, stmt, path, lines)
    return module


def _bind_import(ns, stmt):
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            root = alias.name.split(".")[0]
            if root in RESOLVABLE:
                target = importlib.import_module(alias.name if alias.asname else root)
                ns[alias.asname or root] = target
    elif stmt.module and stmt.module.split(".")[0] in RESOLVABLE and stmt.level == 0:
        mod = importlib.import_module(stmt.module)
        for alias in stmt.names:
            if hasattr(mod, alias.name):
                ns[alias.asname or alias.name] = getattr(mod, alias.name)


def _bind_constant(ns, stmt):
    value = _static_value(ns, stmt.value)
    if value is _UNKNOWN:
        return
    for target in stmt.targets:
        if isinstance(target, ast.Name):
            ns[target.id] = value


_UNKNOWN = object()


def _static_value(ns, node):
    """A literal, a numpy constant (np.pi), or np.array(...) of literals; else _UNKNOWN."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        mod = ns.get(node.value.id)
        if mod in (np, importlib.import_module("math")):
            value = getattr(mod, node.attr, _UNKNOWN)
            return value if isinstance(value, (int, float)) else _UNKNOWN
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and ns.get(node.func.value.id) is np
            and node.func.attr in _ARRAY_BUILDERS):
        args = [_static_value(ns, a) for a in node.args]
        kwargs = {k.arg: _static_value(ns, k.value) for k in node.keywords}
        if _UNKNOWN not in args and _UNKNOWN not in kwargs.values():
            try:
                return getattr(np, node.func.attr)(*args, **kwargs)
            except Exception:  # NumPy rejects it: leave the name unbound, as if not a literal
                return _UNKNOWN
    return _UNKNOWN


def _define(module: StaticModule, stmt: ast.FunctionDef, path, lines):
    marked = _marking(stmt, path, lines)
    if marked:
        module.marked[stmt.name] = marked
    for default in stmt.args.defaults + [d for d in stmt.args.kw_defaults if d is not None]:
        if _static_value(module.namespace, default) is _UNKNOWN:
            loc = Location(path, default.lineno, default.col_offset,
                           lines[default.lineno - 1].rstrip("\n"), default.end_col_offset)
            raise CompileError("a default value must be a literal to compile without running "
                               "the module", loc, "use a number, string, tuple or None")
    bare = ast.FunctionDef(stmt.name, stmt.args, stmt.body, [], stmt.returns,
                           getattr(stmt, "type_comment", None), **_loc(stmt))
    bare.type_params = []
    code = compile(ast.Module([bare], []), path, "exec")
    exec(code, module.namespace)  # defines the function; its body does not run
    module.functions[stmt.name] = module.namespace[stmt.name]


def _marking(stmt, path, lines):
    """("grad", wrt) for ``@adcompiler.grad(wrt=...)`` / ``@ad.value_and_grad`` / ..., else None."""
    for dec in stmt.decorator_list:
        call = dec if isinstance(dec, ast.Call) else None
        func = dec.func if call else dec
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name not in _TRANSFORMS:
            continue
        wrt = None
        for kw in (call.keywords if call else []):
            if kw.arg == "wrt":
                wrt = _literal_wrt(kw.value, path, lines)
        return name, wrt
    return None


def _literal_wrt(node, path, lines):
    try:
        return ast.literal_eval(node)
    except ValueError:
        loc = Location(path, node.lineno, node.col_offset, lines[node.lineno - 1].rstrip("\n"),
                       node.end_col_offset)
        raise CompileError("wrt= must be a literal to compile without running the module", loc,
                           "write the parameter names or positions: wrt=(\"w\", \"b\")") from None


def _loc(node):
    return {k: getattr(node, k) for k in ("lineno", "col_offset", "end_lineno", "end_col_offset")}
