"""Static function arguments as cache keys: a lambda made afresh on every call is the same key.

A function passed as a static argument (``loss(x, lambda t: t * t)``, ``loss(x, act)``,
``loss(x, functools.partial(scale, k=2.0))``) is inlined while compiling, so its code, what its
closure cells and defaults hold, and the globals it reads decide the compiled code, not the
function object's identity. Keyed by identity, a lambda written in the call compiled again on
every call and each compilation stayed in the gradient's cache (one per call, for good).

:class:`FunctionKey` compares two functions by what compiling them reads: the same code object
(so the same source line), the same globals dict, and the same objects in their closure cells
and defaults, taken when the key is made (a cell a later call rebinds is a new key). Numbers and
strings count as the same when equal, with their type and a zero's sign (``-0.0`` is not
``0.0``); anything else only when it is the very object. A function with attributes of its own
(``f.scale = 2``) keeps identity. What a compiled function read from globals, cells and
attributes is still checked before each call (:mod:`adcompiler.api.state`).
"""

from __future__ import annotations

import functools
import math
import types

_EMPTY = object()  # a closure cell not yet bound
_SCALARS = (bool, int, float, str, bytes, type(None))
_DEPTH = 4  # helpers inside helpers compared this deep (a recursive one: then by identity)


class FunctionKey:
    """A function, or a ``functools.partial`` of one, as a hashable key compared by what
    compiling it reads; ``function`` is the first one seen (the fast path's identity guard)."""

    __slots__ = ("function", "code", "scope", "values", "_hash")

    def __init__(self, function):
        self.function = function
        self.code, self.scope, self.values = _parts(function)
        self._hash = hash((id(self.code), id(self.scope), len(self.values)))

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return type(other) is FunctionKey and _same_parts(self, other, 0)

    def __repr__(self):  # the function's own (its " at 0x..." keeps it out of the disk cache)
        return repr(self.function)


def static_key(value):
    """``value`` as the key of a static argument: a :class:`FunctionKey` for a plain function
    or a partial of one, ``value`` itself otherwise."""
    if type(value) is types.FunctionType or type(value) is functools.partial:
        return FunctionKey(value)
    return value


def _parts(function) -> tuple:
    """(code, scope, values) of a function: see the module docstring."""
    if type(function) is functools.partial:
        inner = static_key(function.func)
        keywords = tuple(sorted(function.keywords.items()))
        return (getattr(inner, "code", inner), getattr(inner, "scope", None),
                (*getattr(inner, "values", ()), function.args, *keywords))
    if function.__dict__:  # attributes of its own: itself
        return function, None, ()
    cells = tuple(_contents(c) for c in function.__closure__ or ())
    keywords = tuple(sorted((function.__kwdefaults__ or {}).items()))
    return function.__code__, function.__globals__, (*(function.__defaults__ or ()), *keywords,
                                                     *cells)


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY


def _same_parts(p: FunctionKey, q: FunctionKey, depth: int) -> bool:
    return (p.code is q.code and p.scope is q.scope and len(p.values) == len(q.values)
            and all(_same(a, b, depth) for a, b in zip(p.values, q.values)))


def _same(a, b, depth: int) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return len(a) == len(b) and all(_same(x, y, depth) for x, y in zip(a, b))
    if type(a) is float:
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if type(a) in _SCALARS:
        return a == b
    if type(a) in (types.FunctionType, functools.partial) and depth < _DEPTH:
        return _same_parts(FunctionKey(a), FunctionKey(b), depth + 1)  # a helper closed over
    return False
