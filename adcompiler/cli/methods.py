"""Methods marked with an adcompiler transform: found in the source, said to be unsupported.

The command line compiles module-level functions only (a method needs its instance, which a
module read without running it does not have). Invariant: a method (or a class) carrying an
adcompiler decorator is never passed over in silence: naming it is a located error, and a module
it is in says, at its decorator, that it is left out and what to write instead (a module-level
function, called from the method). Decorators are resolved as the module's are (through
aliases, by identity), from the static namespace: nothing the user wrote runs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..errors import CompileError, Location
from ..frontend.reading.module import transform_named


@dataclass
class Method:
    qualname: str        # "Model.loss"; a decorated class is its own name
    transform: str       # "grad"...
    location: Location   # the decorator
    is_class: bool = False

    @property
    def name(self) -> str:
        return self.qualname.rpartition(".")[2]

    def what(self) -> str:
        kind = "a class" if self.is_class else "a method"
        return f"{self.qualname} is {kind} marked @adcompiler.{self.transform}"


def marked_methods(module) -> list:
    """The methods (and classes) of the module's top-level classes, nested classes included,
    that carry an adcompiler decorator, in source order."""
    try:
        tree = ast.parse("".join(module.lines))
    except (SyntaxError, ValueError):
        return []
    found = []
    todo = [(stmt, "") for stmt in tree.body if isinstance(stmt, ast.ClassDef)]
    while todo:
        cls, prefix = todo.pop(0)
        qualname = prefix + cls.name
        _marked(module, cls, qualname, True, found)
        for stmt in cls.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                _marked(module, stmt, f"{qualname}.{stmt.name}", False, found)
            elif isinstance(stmt, ast.ClassDef):
                todo.append((stmt, qualname + "."))
    return sorted(found, key=lambda m: (m.location.lineno, m.location.col))


def _marked(module, stmt, qualname, is_class, found):
    for dec in stmt.decorator_list:
        transform = transform_named(module.namespace,
                                    dec.func if isinstance(dec, ast.Call) else dec)
        if transform:
            found.append(Method(qualname, transform, module.location(dec), is_class))
            return


def error(method: Method, also=()) -> CompileError:
    """The located error for a marked method: not supported, and what to write instead."""
    others = f" (also marked: {', '.join(m.qualname for m in also)})" if also else ""
    if method.is_class:
        return CompileError(f"{method.what()}{others}: adcompiler transforms functions, and the "
                            "command line compiles module-level functions only",
                            method.location, "mark a module-level function (def loss(W, x): "
                            "...) with @adcompiler." + method.transform)
    return CompileError(
        f"{method.what()}{others}: the command line compiles module-level functions only, not "
        "methods (yet)", method.location,
        f"move the code into a module-level function taking what it reads from self as "
        f"parameters (@adcompiler.{method.transform} def {method.name}(W, b, x): ...), mark that "
        f"one, and call it from the method; or call adcompiler.{method.transform} in Python")


def note(method: Method, what="left out") -> str:
    """``path:line:col: note: Model.loss is a method ... left out``: for a module whose other
    functions are compiled (``what``: ``left out of m_grad.py``) or checked (``not checked``)."""
    loc = method.location
    return (f"{loc.filename}:{loc.lineno}:{loc.col + 1}: note: {method.what()}, {what}: the "
            f"command line compiles module-level functions only; move its code into a "
            f"module-level function marked @adcompiler.{method.transform} and call it from the "
            "method")


def check_named(module, fname):
    """Raise the located error when ``fname`` (``loss`` or ``Model.loss``) names a marked
    method rather than a module-level function; or an unmarked method, named ``Class.method``."""
    methods = marked_methods(module)
    for m in methods:
        if fname in (m.qualname, m.name):
            raise error(m)
    if "." in fname:
        cls = _class_method(module, fname)
        if cls is not None:
            raise CompileError(f"{fname} is a method: the command line works on module-level "
                               "functions only, not methods (yet)", cls,
                               "move its code into a module-level function and name that one")


def _class_method(module, qualname):
    """The location of the method ``Class.method`` (a nested class's too), or None."""
    try:
        tree = ast.parse("".join(module.lines))
    except (SyntaxError, ValueError):
        return None
    body, parts = tree.body, qualname.split(".")
    for i, part in enumerate(parts):
        kinds = (ast.ClassDef,) if i < len(parts) - 1 else \
            (ast.FunctionDef, ast.AsyncFunctionDef)
        stmt = next((s for s in body if isinstance(s, kinds) and s.name == part), None)
        if stmt is None:
            return None
        body = stmt.body
    return module.location(stmt)
