"""Record classes a module defines, built from their syntax without running the module: a
``NamedTuple`` subclass or a ``@dataclass`` whose body holds only annotated fields (with literal
defaults), a docstring or ``pass``, the parameter containers of Flax-style code (``class
Layer(NamedTuple): W: np.ndarray; b: np.ndarray``).

The command line runs ``example_<FUNC>()`` in the module's static namespace
(:mod:`.module`), so an example that builds ``Layer(W, b)`` needs the class there. The class
built here has the definition's name, fields, order, defaults and (for a dataclass) its
``frozen``/``eq``/``order`` options: what a container's structure is made of
(:mod:`adcompiler.frontend.bindings.trees`). A class with methods, properties, base classes of
its own or decorators other than ``dataclass`` is not built (it stays unresolved, as before).
"""

from __future__ import annotations

import ast
import collections
import dataclasses

_NO_DEFAULT = object()
_OPTIONS = ("frozen", "eq", "order", "init", "repr", "unsafe_hash")


def record_class(stmt: ast.ClassDef, literal, unknown):
    """The class ``stmt`` defines, or None; ``literal(node)`` evaluates a default, giving
    ``unknown`` where it is not a literal."""
    fields = _fields(stmt, literal, unknown)
    if fields is None or stmt.keywords:
        return None
    if _is_named_tuple(stmt) and not stmt.decorator_list:
        names = [name for name, _ in fields]
        defaults = [v for _, v in fields if v is not _NO_DEFAULT]
        if any(v is _NO_DEFAULT for _, v in fields[len(fields) - len(defaults):]):
            return None   # (a field without a default after one with: Python refuses it)
        return collections.namedtuple(stmt.name, names, defaults=defaults or None)
    options = _dataclass_options(stmt, literal, unknown)
    if options is None or stmt.bases:
        return None
    spec = [(name, object) if value is _NO_DEFAULT else
            (name, object, dataclasses.field(default=value)) for name, value in fields]
    return dataclasses.make_dataclass(stmt.name, spec, **options)


def _fields(stmt, literal, unknown):
    """``[(name, its default or _NO_DEFAULT)]`` of a body of annotated fields only, else
    None."""
    out = []
    for item in stmt.body:
        if isinstance(item, ast.Pass) or (isinstance(item, ast.Expr)
                                          and isinstance(item.value, ast.Constant)):
            continue
        if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                and item.simple):
            return None
        value = _NO_DEFAULT if item.value is None else literal(item.value)
        if value is unknown:
            return None
        out.append((item.target.id, value))
    return out


def _is_named_tuple(stmt) -> bool:
    return len(stmt.bases) == 1 and _dotted(stmt.bases[0]) in ("NamedTuple", "typing.NamedTuple")


def _dataclass_options(stmt, literal, unknown):
    """The options of a lone ``@dataclass`` / ``@dataclass(frozen=True)``, else None."""
    if len(stmt.decorator_list) != 1:
        return None
    dec = stmt.decorator_list[0]
    call = dec if isinstance(dec, ast.Call) else None
    if _dotted(call.func if call else dec) not in ("dataclass", "dataclasses.dataclass"):
        return None
    if call is None:
        return {}
    options = {}
    for keyword in call.keywords:
        value = literal(keyword.value)
        if keyword.arg not in _OPTIONS or not isinstance(value, bool):
            return None
        options[keyword.arg] = value
    return None if call.args else options


def _dotted(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""
