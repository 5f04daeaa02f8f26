"""What a compiled gradient took from outside its traced arguments, and whether it still holds.

Compiling reads more than the arguments' shapes: module-level floats, arrays and helper
functions, closure cells, and the attributes of objects passed as arguments (``self.w`` in a
method) become constants of the generated code. A :class:`Snapshot` taken when a gradient is
compiled records each of them; before a compiled specialisation runs again, the gradient object
checks that every one is still the same object (or, for numbers and strings, an equal one), and
compiles again where one changed: ``model.w = 5.0`` is seen by the next ``model.loss(x)``, as
rebinding ``W = new_array`` at module level is. Arrays changed in place need no check: the
generated code reads the very array object.

What is recorded is a superset of what the code reads (every global or closure name the
function's code loads, recursively through the plain functions it calls, except modules; the
attributes that the code names of each object argument, of each object a global or a closure
holds (``CFG.c``) and of a passed bound method's instance, two levels deep), so a check can only
cost a compilation too many, never miss a change it covers. A list read from a global, a cell
or an attribute has its items recorded too (``LAYERS[0] = W`` and ``.append`` compile again).
Not covered: a module's own attributes (``np.pi``, ``mymodule.SCALE``), and objects deeper in
containers (a dict's values, a list's list's items).
A function passed as a static argument (``loss(x, act)``, ``loss(x, lambda t: t * k)``) is
scanned as a helper the function calls: rebinding the ``k`` it reads compiles again.
"""

from __future__ import annotations

import dis
import functools
import types

import numpy as np

_EQUAL_TYPES = (int, float, bool, str, type(None))
_STATIC = (int, float, bool, str, bytes, complex, type(None), tuple, frozenset, np.dtype, type,
           np.ndarray, np.generic, types.ModuleType)
_DEPTH = 2        # object attributes: self.w, self.cfg.scale
_CODE = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, functools.partial)
_LOADS = {"LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF"}


class Snapshot:
    """Entries ``(kind, holder, key, value)``: ``holder[key]`` (a dict), ``holder.cell_contents``
    (a cell) or ``getattr(holder, key)`` was ``value`` when the gradient was compiled."""

    __slots__ = ("entries",)

    def __init__(self, entries):
        self.entries = tuple(entries)

    def __bool__(self):
        return bool(self.entries)

    def holds(self) -> bool:
        for kind, holder, key, value in self.entries:
            if kind == "items":   # a list's items, by position
                if len(holder) != len(value) or not all(map(_same, holder, value)):
                    return False
                continue
            try:
                now = (holder[key] if kind == "dict" else holder.cell_contents if kind == "cell"
                       else getattr(holder, key))
            except (KeyError, ValueError, AttributeError):
                return False
            if not _same(now, value):
                return False
        return True


def _same(now, value) -> bool:
    return now is value or (type(now) is type(value) and isinstance(value, _EQUAL_TYPES)
                            and now == value)


def _items(value, entries):
    """A list read by the code (``for W in LAYERS``, ``LAYERS[0]``): its items too, so that
    ``LAYERS[0] = W`` or ``LAYERS.append(W)`` compiles again, as rebinding ``LAYERS`` does."""
    if type(value) is list:
        entries.append(("items", value, None, tuple(value)))


def take(fn, arguments: dict) -> Snapshot:
    """The snapshot of what compiling ``fn`` with these arguments reads from outside them."""
    entries: list = []
    attributes: set = set()  # every attribute name the code (and its helpers) mentions
    functions: set = set()
    while not isinstance(fn, types.FunctionType) and hasattr(fn, "primal"):
        fn = fn.primal   # grad(grad(f)), jvp(grad(f)): what f reads
    _function(fn, entries, functions, attributes)
    for value in arguments.values():  # a function passed as a static argument is inlined:
        for helper in _passed_functions(value):  # what it reads is read as well
            _function(helper, entries, functions, attributes)
    roots = [v.__self__ if isinstance(v, types.MethodType) else v for v in arguments.values()]
    roots += [value for kind, _, _, value in entries   # CFG.c, h.c of a global or closure h
              if kind in ("dict", "cell") and _plain_object(value)]
    objects = [v for v in roots if not isinstance(v, _STATIC)]
    for obj in objects:  # arguments' attributes, and the attributes those hold, by name
        held = getattr(obj, "__dict__", None)
        if isinstance(held, dict):
            objects += [item for name, item in held.items() if name in attributes
                        and not isinstance(item, _STATIC) and len(objects) < 1000]
        if type(obj) is list:   # self.layers: the layer objects it holds
            objects += [item for item in obj if not isinstance(item, _STATIC)][:1000]
        _methods(obj, entries, functions, attributes)
    for value in roots:
        _object(value, entries, _DEPTH, set(), attributes)
    return Snapshot(entries)


def _plain_object(value) -> bool:
    """An instance of a class of the user's (a config, a model), whose attributes the code
    may read: not a number, array, module, function or class."""
    return not isinstance(value, _STATIC + _CODE + (type,)) and isinstance(
        getattr(value, "__dict__", None), dict)


def _passed_functions(value):
    """The plain functions a static argument holds: itself, a partial's function and its bound
    arguments, a tuple's items."""
    if isinstance(value, types.FunctionType):
        yield value
    elif isinstance(value, types.MethodType):   # m.act: its function (and m, in take)
        yield from _passed_functions(value.__func__)
    elif isinstance(value, functools.partial):
        for held in (value.func, *value.args, *value.keywords.values()):
            yield from _passed_functions(held)
    elif isinstance(value, tuple):
        for item in value:
            yield from _passed_functions(item)


def _methods(obj, entries, functions, attributes):
    """The methods of ``obj``'s class that the code names (``self.forward(x)``, inlined where it
    is called): each class entry recorded, and its code scanned like a helper's, so that the
    attributes it reads (``self.W``) are recorded too."""
    done: set = set()
    while (attributes | {"__call__"}) - done:   # a layer object called: its __call__
        name = min((attributes | {"__call__"}) - done)
        done.add(name)
        owner = next((c for c in type(obj).__mro__ if name in vars(c)), None)
        if owner is None or isinstance(obj, type):
            continue
        raw = vars(owner)[name]
        fn = getattr(raw, "__func__", raw)  # a staticmethod's or classmethod's function
        if isinstance(fn, types.FunctionType):
            entries.append(("dict", vars(owner), name, raw))
            _function(fn, entries, functions, attributes)


def _function(fn, entries, seen, attributes):
    code = getattr(fn, "__code__", None)
    if code is None or id(fn) in seen:
        return
    seen.add(id(fn))
    loads, mentioned = _names(code)
    attributes |= mentioned
    for value in (*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()):
        _items(value, entries)   # def mlp(h, layers=LAYERS): LAYERS[0] = W compiles again
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    for name in sorted(loads):
        if name in cells:
            try:
                value = cells[name].cell_contents
            except ValueError:   # an empty cell: not bound yet
                continue
            kind, holder = "cell", cells[name]
        elif name in fn.__globals__:
            value, kind, holder = fn.__globals__[name], "dict", fn.__globals__
        else:
            continue          # a builtin, or the name of an attribute
        if isinstance(value, types.ModuleType):
            continue
        entries.append((kind, holder, name, value))
        _items(value, entries)
        if isinstance(value, types.FunctionType):
            _function(value, entries, seen, attributes)


def _names(code) -> tuple:
    """``(loads, mentioned)`` of ``code`` and the code nested in it: the global and closure
    names it loads (not attribute names, which ``co_names`` holds too: ``x.T`` must not make a
    global ``T`` a dependency), and every name it mentions (attribute names included)."""
    loads = {ins.argval for ins in dis.get_instructions(code) if ins.opname in _LOADS}
    mentioned = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            more_loads, more_mentioned = _names(const)
            loads |= more_loads
            mentioned |= more_mentioned
    return loads, mentioned


def _object(value, entries, depth, seen, attributes):
    """The attributes of an object argument (a model, a config) that the code may read, by
    name, ``depth`` levels down (a ``self.step`` counter the code never reads is no entry)."""
    if depth == 0 or isinstance(value, _STATIC + _CODE) or id(value) in seen:
        return
    if type(value) is list:   # a list attribute's objects, at the list's own depth
        seen.add(id(value))
        for item in value[:1000]:
            _object(item, entries, depth, seen, attributes)
        return
    held = getattr(value, "__dict__", None)
    if not isinstance(held, dict):
        return
    seen.add(id(value))
    for name, item in list(held.items()):
        if name in attributes:
            entries.append(("attr", value, name, item))
            _items(item, entries)
            _object(item, entries, depth - 1, seen, attributes)
