"""Load a user's module *statically*: its functions, imports and constants, never its top level.

Invariant: nothing the user wrote runs. The file is decoded as Python decodes it (a coding
comment, a UTF-8 BOM; UTF-8 otherwise), with universal newlines, so line numbers are Python's.
Imports of numpy, math, scipy, cupy and adcompiler are resolved to the real modules; module-level
constants are kept when they are literals (or literal arrays); ``def`` statements are compiled
with their decorators removed and their annotations unevaluated, so defining them runs no user
code (defaults must be literals). A decorator naming an adcompiler transform (through any alias)
marks the function; a mistake in it is kept in ``errors`` for that function alone. Everything
else at top level is never executed: the names it binds are recorded in ``unresolved`` with their
location, and removed from the namespace, so the static view never holds a value the running
module would have replaced. A constant the module may change in place after its definition (a
top-level ``W[0] = 1.0``, a function writing into it) is recorded in ``changed``
(:mod:`adcompiler.frontend.reading.module_writes`), and a function reading it is refused.
"""

from __future__ import annotations

import __future__
import ast
import importlib
import io
import math
import os
import tokenize
from dataclasses import dataclass, field

import numpy as np

from ...errors import CompileError, Location
from .parameters import resolve_wrt
from .module_writes import find_changes
from .public import PUBLIC
from . import depth
from .records import record_class

RESOLVABLE = ("numpy", "math", "adcompiler", "cupy", "scipy",
              "typing", "dataclasses")   # (NamedTuple, dataclass: the record classes)
_ARRAY_BUILDERS = {"array", "asarray", "arange", "linspace", "eye", "ones", "zeros", "full"}
_TRANSFORMS = ("grad", "value_and_grad", "vjp", "jvp")    # what the command line compiles
_OTHERS = ("hessian", "jacobian", "custom_vjp")             # adcompiler's, but not compiled


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
    uncompiled: dict = field(default_factory=dict)  # name -> (transform, Location): @ad.hessian...
    changed: dict = field(default_factory=dict)     # constant -> where the module may change it

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
        end = _chars(line, node.end_col_offset) if node.end_lineno == node.lineno else len(line)
        return Location(self.path, node.lineno, _chars(line, node.col_offset), line, end)

    def explain(self, err: CompileError) -> CompileError:
        """``err`` with a hint saying why a name it reports undefined was not resolved; for a
        value the module computes (``W = rng.normal(size=(4, 3))``, a list built in a loop), why
        it has none here and what to write instead."""
        for name, (loc, why) in self.unresolved.items():
            if err.message != f"name `{name}` is not defined":
                continue
            if why is COMPUTED:
                return CompileError(
                    f"`{name}` is computed when {os.path.basename(loc.filename)} runs (line "
                    f"{loc.lineno}: `{loc.line.strip()}`), and compiling reads the file "
                    "without running it: its value is not known here", err.location,
                    f"pass `{name}` to the function as a parameter (and return its value from "
                    "the example function), or write its value literally at line "
                    f"{loc.lineno} (numbers, np.pi, np.array([...]) of numbers, and lists and "
                    "tuples of those)")
            return CompileError(err.message, err.location,
                                f"`{name}` is bound at {loc.filename}:{loc.lineno} by {why}")
        return err


def load_module(path: str) -> StaticModule:
    """The functions, imports and literal constants of the file at ``path``, without running it."""
    text = read_source(path)
    lines = io.StringIO(text).readlines()
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        lineno = min(max(exc.lineno or 1, 1), max(len(lines), 1))
        raise CompileError(f"syntax error: {exc.msg}",
                           Location(path, lineno, max((exc.offset or 1) - 1, 0),
                                    lines[lineno - 1].rstrip("\n") if lines else ""),
                           "fix the syntax error: Python cannot import this file either")
    except ValueError as exc:   # a NUL byte
        raise CompileError(f"{path} cannot be parsed: {exc}",
                           hint="Python cannot import this file either") from None
    except RecursionError:      # (Python's parser has a depth limit of its own)
        raise CompileError(f"{path} nests too deeply for Python's parser",
                           hint="Python cannot import this file either: "
                                f"{depth.HINT}") from None
    module = StaticModule(path, {"__name__": "adcompiler_static", "__file__": path}, lines)
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            _bind_import(module, stmt)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            _bind_constant(module, stmt)
        elif isinstance(stmt, ast.FunctionDef):
            _define(module, stmt)
        elif isinstance(stmt, ast.ClassDef) and (record := record_class(
                stmt, lambda node: _static_value(module.namespace, node), _UNKNOWN)):
            record.__module__ = os.path.splitext(os.path.basename(path))[0]
            _bind(module, stmt.name, record, stmt)   # class Layer(NamedTuple): W: ...
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            _forget(module, stmt, _bound_names(stmt), COMPUTED)   # a value built in a loop
        else:
            _forget(module, stmt, _bound_names(stmt), "a statement adcompiler does not run")
    module.changed = find_changes(module, tree)
    return module


def read_source(path: str) -> str:
    """The text of the file at ``path``, decoded as Python decodes a module (its coding comment,
    a UTF-8 BOM, else UTF-8) and with its newlines made ``\\n``; undecodable bytes raise a
    CompileError naming the file and the line."""
    if os.path.isdir(path):
        raise CompileError(f"{path} is a directory, not a Python file",
                           hint="name a .py file (PATH.py, or PATH.py:FUNCTION)")
    with open(path, "rb") as fh:
        data = fh.read()
    hint = ("save the file as UTF-8, or declare its encoding on line 1 or 2 (# -*- coding: "
            "latin-1 -*-): Python cannot import it either")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # an unknown coding, or a line 1-2 that is not UTF-8
        if "unknown encoding" in exc.msg or "encoding problem" in exc.msg:
            raise CompileError(f"{path} cannot be decoded: {exc.msg}", hint=hint) from None
        encoding = "utf-8"   # the bytes that are not are located below
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        lineno = data.count(b"\n", 0, exc.start) + 1
        start = data.rfind(b"\n", 0, exc.start) + 1
        end = data.find(b"\n", exc.start)
        line = data[start:end if end >= 0 else len(data)].decode(encoding, "replace")
        col = len(data[start:exc.start].decode(encoding, "replace"))
        raise CompileError(f"{path} is not valid {encoding.replace('-sig', '')} text: byte "
                           f"0x{data[exc.start]:02x} on line {lineno} cannot be decoded",
                           Location(path, lineno, col, line.rstrip("\r"), col + 1),
                           hint) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _chars(line: str, byte_offset: int) -> int:
    """The ast module counts columns in UTF-8 bytes; carets count characters."""
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace"))


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
        module.uncompiled.pop(name, None)
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
                        "imports of numpy, math, scipy and cupy are resolved without running code")
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
            f"`from {'.' * stmt.level}{source} import ...`: only imports of numpy, math, "
            "scipy and cupy are resolved without running code")


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
        _forget(module, stmt, _bound_names(stmt), COMPUTED)
        return
    for target in targets:
        _bind(module, target.id, value, stmt)


_UNKNOWN = object()
# why a module-level value is not resolved: code computes it (compiling runs none)
COMPUTED = ("an expression adcompiler does not evaluate (it keeps literals, np.pi, "
            "np.array(...) of literals, and lists and tuples of those)")


def _static_value(ns, node):
    """A literal, a numpy constant (np.pi), np.array(...) of literals, or a list or tuple of
    those; else _UNKNOWN."""
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
    if isinstance(node, (ast.List, ast.Tuple)):  # LAYERS = [np.array(...), np.array(...)]
        items = [_static_value(ns, e) for e in node.elts]
        if not any(item is _UNKNOWN for item in items):
            return items if isinstance(node, ast.List) else tuple(items)
    return _UNKNOWN


def _define(module: StaticModule, stmt: ast.FunctionDef):
    for table in (module.errors, module.marked, module.uncompiled):
        table.pop(stmt.name, None)
    for default in stmt.args.defaults + [d for d in stmt.args.kw_defaults if d is not None]:
        if _static_value(module.namespace, default) is _UNKNOWN:
            _forget(module, stmt, [stmt.name], "a `def` whose default values are not literals")
            _mark(module, stmt)  # compiling it reports the error
            module.errors[stmt.name] = CompileError(
                "a default value must be a literal to compile without running the module",
                module.location(default), "use a number, string, tuple or None")
            return
    bare = ast.FunctionDef(stmt.name, stmt.args, stmt.body, [], stmt.returns,
                           getattr(stmt, "type_comment", None), **_loc(stmt))
    bare.type_params = []
    # Annotations stay strings (PEP 563), so that defining the function evaluates none of them.
    try:
        code = depth.run_with_room(lambda: compile(
            ast.Module([bare], []), module.path, "exec",
            flags=__future__.annotations.compiler_flag, dont_inherit=True))
    except RecursionError:
        _forget(module, stmt, [stmt.name], "a `def` that nests too deeply to compile")
        _mark(module, stmt)  # compiling it reports the error
        module.errors[stmt.name] = CompileError(depth.MESSAGE, module.location(stmt),
                                                depth.HINT)
        return
    exec(code, module.namespace)  # defines the function; its body does not run
    _bind(module, stmt.name, module.namespace[stmt.name], stmt)
    module.functions[stmt.name] = module.namespace[stmt.name]
    _mark(module, stmt)


def _mark(module, stmt):
    """Record what adcompiler decorator ``stmt`` carries: ``marked[name] = (mode, wrt)`` for
    grad, value_and_grad, vjp and jvp, ``uncompiled`` for the others; a mistake in the
    decorator goes to ``errors``, for this function alone."""
    for dec in stmt.decorator_list:
        call = dec if isinstance(dec, ast.Call) else None
        transform = _transform(module, call.func if call else dec)
        if transform in _OTHERS:
            module.uncompiled[stmt.name] = (transform, module.location(dec))
            return
        if transform in _TRANSFORMS:
            wrt = None
            for kw in (call.keywords if call else []):
                if kw.arg == "wrt":
                    try:
                        wrt = _literal_wrt(module, kw.value)
                        _check_wrt(module, stmt.name, wrt, kw.value)
                    except CompileError as exc:
                        module.errors.setdefault(stmt.name, exc)
            module.marked[stmt.name] = (transform, wrt)
            return


def _check_wrt(module, name, wrt, node):
    """``wrt`` names parameters of the function ``name`` (when it is defined)."""
    if name in module.functions:
        try:
            resolve_wrt(module.functions[name], wrt)
        except ValueError as exc:
            raise CompileError(str(exc), module.location(node),
                               "name parameters of the function, or their positions") from None


def _transform(module, func):
    return transform_named(module.namespace, func)


def transform_named(namespace, func):
    """The name of the adcompiler transform a decorator names (``grad`` for ``ad.grad``,
    ``value_and_grad`` for ``vag`` imported ``as vag``), else None. Resolved by identity."""
    value = _resolved(namespace, func)
    return next((name for name in _TRANSFORMS + _OTHERS
                 if value is PUBLIC.get(name, _UNKNOWN)), None)


def _resolved(ns, node):
    """What a name or a dotted name (``ad.grad``) is bound to in the static namespace."""
    if isinstance(node, ast.Name):
        return ns.get(node.id, _UNKNOWN)
    if isinstance(node, ast.Attribute):
        base = _resolved(ns, node.value)
        if isinstance(base, type(math)):  # only modules: never an attribute of user code
            return getattr(base, node.attr, _UNKNOWN)
    return _UNKNOWN


def _literal_wrt(module, node):
    """``wrt=`` as written: a literal, or a module-level name bound to one (``WRT = ("a", "b")``)
    before the decorator, evaluated with ``ast.literal_eval``, never by running the module."""
    hint = "write the parameter names or positions: wrt=(\"w\", \"b\")"
    value = node
    if isinstance(node, ast.Name):
        stmt = module.definitions.get(node.id)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            value = stmt.value
        elif node.id in module.unresolved:
            loc, why = module.unresolved[node.id]
            raise CompileError(f"wrt={node.id} is not a literal: `{node.id}` is bound at "
                               f"{loc.filename}:{loc.lineno} by {why}",
                               module.location(node), hint) from None
        else:
            raise CompileError(f"wrt={node.id}: `{node.id}` is not a module-level constant "
                               "defined above the function", module.location(node), hint)
    try:
        return ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        if value is not node:
            raise CompileError(f"wrt={node.id}: `{node.id}` is not bound to a literal (names or "
                               "positions of parameters)", module.location(node), hint) from None
        raise CompileError("wrt= must be a literal (or a module-level name bound to one) to "
                           "compile without running the module", module.location(node),
                           hint) from None


def _loc(node):
    return {k: getattr(node, k) for k in ("lineno", "col_offset", "end_lineno", "end_col_offset")}
