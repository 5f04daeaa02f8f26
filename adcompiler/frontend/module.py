"""Load a user's module *statically*: its functions, imports and constants, never its top level.

Invariant: nothing the user wrote runs. Imports of numpy, math, cupy and adcompiler are resolved
to the real modules; module-level constants are kept when they are literals (or literal arrays);
``def`` statements are compiled with their decorators removed and their annotations unevaluated,
so defining them runs no user code (defaults must be literals). Everything else at top level is
never executed: the names it binds are recorded in ``unresolved`` with their location, and
removed from the namespace, so the static view never holds a value the running module would
have replaced.
"""

from __future__ import annotations

import __future__
import ast
import importlib
import math
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
    lines: list = field(default_factory=list)       # the file's lines, with their newlines
    functions: dict = field(default_factory=dict)   # name -> function object
    marked: dict = field(default_factory=dict)      # name -> (mode, wrt) from its decorator
    definitions: dict = field(default_factory=dict)  # name -> the top-level statement binding it
    unresolved: dict = field(default_factory=dict)  # name -> (Location, why it is not resolved)
    errors: dict = field(default_factory=dict)      # function name -> CompileError defining it

    def function(self, name):
        """The function ``name``, or the located error that kept it from being defined."""
        if name in self.errors:
            raise self.errors[name]
        if name not in self.functions:
            raise CompileError(f"{self.path} defines no function {name!r} (it defines: "
                               f"{', '.join(self.functions) or 'none'})")
        return self.functions[name]

    def location(self, node) -> Location:
        line = self.lines[node.lineno - 1].rstrip("\n") if self.lines else ""
        end = node.end_col_offset if node.end_lineno == node.lineno else len(line)
        return Location(self.path, node.lineno, node.col_offset, line, end)

    def explain(self, err: CompileError) -> CompileError:
        """``err`` with a hint saying why a name it reports undefined was not resolved."""
        for name, (loc, why) in self.unresolved.items():
            if err.message == f"name `{name}` is not defined":
                return CompileError(err.message, err.location,
                                    f"`{name}` is bound at {loc.filename}:{loc.lineno} by {why}")
        return err


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
    module = StaticModule(path, {"__name__": "adcompiler_static", "__file__": path}, lines)
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            _bind_import(module, stmt)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            _bind_constant(module, stmt)
        elif isinstance(stmt, ast.FunctionDef):
            _define(module, stmt)
        else:
            _forget(module, stmt, _bound_names(stmt), "a statement adcompiler does not run")
    return module


def _bind(module, name, value, stmt):
    module.namespace[name] = value
    module.definitions[name] = stmt
    module.unresolved.pop(name, None)


def _forget(module, stmt, names, why):
    """``names`` are bound by ``stmt``, which is never run: they are unresolved from here on."""
    for name in names:
        module.namespace.pop(name, None)
        module.definitions.pop(name, None)
        module.functions.pop(name, None)
        module.marked.pop(name, None)
        module.unresolved[name] = (module.location(stmt), why)


def _bound_names(stmt) -> list:
    names = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.alias):
            names.append(node.asname or node.name.split(".")[0])
    return names


def _bind_import(module, stmt):
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            root = alias.name.split(".")[0]
            if root in RESOLVABLE and _importable(alias.name):
                target = importlib.import_module(alias.name if alias.asname else root)
                _bind(module, alias.asname or root, target, stmt)
            else:
                _forget(module, stmt, [alias.asname or root], f"`import {alias.name}`: only "
                        "imports of numpy, math and cupy are resolved without running code")
        return
    source = stmt.module or ""
    if stmt.level == 0 and source.split(".")[0] in RESOLVABLE and _importable(source):
        mod = importlib.import_module(source)
        for alias in stmt.names:
            if hasattr(mod, alias.name):
                _bind(module, alias.asname or alias.name, getattr(mod, alias.name), stmt)
            else:
                _forget(module, stmt, [alias.asname or alias.name],
                        f"`from {source} import {alias.name}`: {source} has no `{alias.name}`")
        return
    _forget(module, stmt, [a.asname or a.name for a in stmt.names],
            f"`from {'.' * stmt.level}{source} import ...`: only imports of numpy, math and "
            "cupy are resolved without running code")


def _importable(name) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:  # cupy without a GPU install
        return False
    return True


def _bind_constant(module, stmt):
    value = _static_value(module.namespace, stmt.value)
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    if value is _UNKNOWN or not all(isinstance(t, ast.Name) for t in targets):
        _forget(module, stmt, _bound_names(stmt),
                "an expression adcompiler does not evaluate (it keeps literals, np.pi and "
                "np.array(...) of literals)")
        return
    for target in targets:
        _bind(module, target.id, value, stmt)


_UNKNOWN = object()


def _static_value(ns, node):
    """A literal, a numpy constant (np.pi), or np.array(...) of literals; else _UNKNOWN."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        mod = ns.get(node.value.id)
        if mod is np or mod is math:
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


def _define(module: StaticModule, stmt: ast.FunctionDef):
    module.errors.pop(stmt.name, None)
    marked = _marking(module, stmt)
    for default in stmt.args.defaults + [d for d in stmt.args.kw_defaults if d is not None]:
        if _static_value(module.namespace, default) is _UNKNOWN:
            _forget(module, stmt, [stmt.name], "a `def` whose default values are not literals")
            module.errors[stmt.name] = CompileError(
                "a default value must be a literal to compile without running the module",
                module.location(default), "use a number, string, tuple or None")
            if marked:  # compiling it reports the error
                module.marked[stmt.name] = marked
            return
    bare = ast.FunctionDef(stmt.name, stmt.args, stmt.body, [], stmt.returns,
                           getattr(stmt, "type_comment", None), **_loc(stmt))
    bare.type_params = []
    # Annotations stay strings (PEP 563), so that defining the function evaluates none of them.
    code = compile(ast.Module([bare], []), module.path, "exec",
                   flags=__future__.annotations.compiler_flag, dont_inherit=True)
    exec(code, module.namespace)  # defines the function; its body does not run
    _bind(module, stmt.name, module.namespace[stmt.name], stmt)
    module.functions[stmt.name] = module.namespace[stmt.name]
    module.marked.pop(stmt.name, None)
    if marked:
        module.marked[stmt.name] = marked


def _marking(module, stmt):
    """("grad", wrt) for ``@adcompiler.grad(wrt=...)`` / ``@ad.value_and_grad`` / ..., else None."""
    for dec in stmt.decorator_list:
        call = dec if isinstance(dec, ast.Call) else None
        func = dec.func if call else dec
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name not in _TRANSFORMS or not _from_adcompiler(module, func):
            continue
        wrt = None
        for kw in (call.keywords if call else []):
            if kw.arg == "wrt":
                wrt = _literal_wrt(module, kw.value)
        return name, wrt
    return None


def _from_adcompiler(module, func) -> bool:
    """Whether a decorator names adcompiler's transform: ``ad.grad``, or ``grad`` imported from
    adcompiler (``jvp`` too, before adcompiler has it, so that the error can say so)."""
    if isinstance(func, ast.Attribute):
        base = module.namespace.get(func.value.id) if isinstance(func.value, ast.Name) else None
        return getattr(base, "__name__", "").split(".")[0] == "adcompiler"
    value = module.namespace.get(func.id)
    if value is None:
        return module.unresolved.get(func.id, (None, ""))[1].startswith("`from adcompiler ")
    return getattr(value, "__module__", "").split(".")[0] == "adcompiler"


def _literal_wrt(module, node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise CompileError("wrt= must be a literal to compile without running the module",
                           module.location(node),
                           "write the parameter names or positions: wrt=(\"w\", \"b\")") from None


def _loc(node):
    return {k: getattr(node, k) for k in ("lineno", "col_offset", "end_lineno", "end_col_offset")}
