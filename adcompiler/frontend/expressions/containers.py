"""Python containers built and read while compiling: dict displays and comprehensions, a dict
read by key, and ``*`` / ``**`` unpacking of a tuple, list or dict into a call or a display.

A container argument (:mod:`..bindings.trees`) is a Python container of Values, and so is what
these build: ``{"W": W, "b": b}``, ``{**params, "W": W2}``, ``{k: v * 2 for k, v in
p.items()}``, ``helper(*args, **kwargs)``. The keys are Python values known while compiling
(a key that is a traced value is a located error: the compiled code has one dict layout);
the entries are anything a name may hold. Invariant: nothing here emits a node; a dict is
never written in place (``d[k] = v`` is refused where it is written, with the rebinding to
write instead: a dict changed under a traced condition or in a compiled loop would be
changed on every path).
"""

from __future__ import annotations

import ast
import dataclasses

from ...ir import Value
from .comprehensions import unroll
from .table import expression

KEY_HINT = "use keys known while compiling: string or int constants, or a loop over a dict's keys"


@expression(ast.Dict)
def lower_dict(lowering, node):
    """``{k: v, **other}``: a Python dict, in Python's order."""
    out = {}
    for k, v in zip(node.keys, node.values):
        value = lowering.expr(v)
        if k is None:   # {**other}
            if not isinstance(value, dict):
                raise lowering.src.error(v, f"`**` of {_kind(value)}: only a dict unpacks "
                                         "into a dict here", "unpack a dict")
            out.update(value)
        else:
            out[key(lowering, k, lowering.expr(k))] = value
    return out


@expression(ast.DictComp)
def lower_dictcomp(lowering, node):
    """``{k: v for ...}``: unrolled as a list comprehension of ``(k, v)`` pairs is."""
    pair = ast.copy_location(ast.Tuple([node.key, node.value], ast.Load()), node)
    comprehension = ast.copy_location(ast.ListComp(pair, node.generators), node)
    out = {}
    for k, v in unroll(lowering, comprehension):
        out[key(lowering, node.key, k)] = v
    return out


def key(lowering, node, k):
    """``k`` as a dict key: a Python value known while compiling."""
    if isinstance(k, Value):
        raise lowering.src.error(node, "a dict key here is a traced value, known only while "
                                 "the compiled code runs", KEY_HINT)
    try:
        hash(k)
    except TypeError:
        raise lowering.src.error(node, f"a dict key cannot be {_kind(k)} (unhashable)",
                                 KEY_HINT) from None
    return k


def dict_item(lowering, node, base: dict, index):
    """``d[k]`` of a Python dict: its entry, or a located error naming its keys."""
    k = key(lowering, node.slice, index)
    if k not in base:
        keys = ", ".join(map(repr, base)) or "none"
        raise lowering.src.error(node, f"KeyError: {k!r}: `{lowering.src.text(node.value)}` "
                                 f"has no key {k!r}", f"its keys: {keys}")
    return base[k]


def setitem_error(lowering, target, name):
    """``d[k] = v`` of a dict: refused, with the rebinding that means the same."""
    key_text = lowering.src.text(target.slice)
    return lowering.src.error(target, f"`{name}` is a dict: assigning into it is not "
                              "supported (a dict is built while compiling, not changed)",
                              f"rebind the name to a new dict: "
                              f"`{name} = {{**{name}, {key_text}: ...}}`")


def starred(lowering, elts) -> list:
    """The lowered ``elts`` of a call's arguments or a display, a ``*items`` among them
    spread out: ``items`` a tuple, a list or a dict (its keys), known while compiling."""
    out = []
    for e in elts:
        if not isinstance(e, ast.Starred):
            out.append(lowering.expr(e))
            continue
        items = lowering.expr(e.value)
        if isinstance(items, Value) or not isinstance(items, (tuple, list, dict)):
            raise lowering.src.error(e, f"`*` of {_kind(items)} is not supported: only a tuple, "
                                     "a list or a dict unpacks here",
                                     "index the array (f(x[0], x[1])), or pass it whole")
        out.extend(items)
    return out


def double_starred(lowering, keywords) -> dict:
    """A call's keyword arguments, a ``**kwargs`` among them (a dict of str keys) merged in."""
    out = {}
    for k in keywords:
        value = lowering.expr(k.value)
        if k.arg is not None:
            out[k.arg] = value
            continue
        if not isinstance(value, dict) or not all(isinstance(n, str) for n in value):
            raise lowering.src.error(k, f"`**` of {_kind(value)}: only a dict with string keys "
                                     "unpacks into keyword arguments",
                                     "pass the keyword arguments one by one")
        out.update(value)
    return out


def _kind(value) -> str:
    if isinstance(value, Value):
        return "an array" if value.aval.kind == "array" else "a traced number"
    return f"a {type(value).__name__}"


@expression(ast.Starred)
def lower_starred(lowering, node):
    """A ``*items`` anywhere but a call's arguments or a display (``x[*idx]``)."""
    raise lowering.src.error(node, "`*` unpacking is supported in a call's arguments and in a "
                             "tuple or list display only", "write the items out")


def builds_container(func) -> bool:
    """A call that builds one of the user's containers, run while compiling on its Values:
    a NamedTuple or dataclass class (``State(h, c)``), a NamedTuple's ``_replace`` /
    ``_asdict``, ``dataclasses.replace``."""
    if isinstance(func, type):
        return (issubclass(func, tuple) and hasattr(func, "_fields")) or (
            dataclasses.is_dataclass(func) and not func.__module__.startswith("adcompiler."))
    owner = getattr(func, "__self__", None)
    if isinstance(owner, tuple) and hasattr(owner, "_fields"):
        return getattr(func, "__name__", "") in ("_replace", "_asdict")
    return func is dataclasses.replace
