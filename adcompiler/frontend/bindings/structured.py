"""Tuples, lists, dicts and dataclasses of traced values carried through loops and joined after
branches, leaf by leaf, and the Python values (str, None, ...) that cannot be.

The IR carries and joins Values, not Python containers: ``state = (x, v)`` rebound in a loop
body is carried as its entries (``state[0]``, ``state[1]``), each one carried value, and rebuilt
after the loop; a branch joins a tuple entry by entry. The structure (nesting and lengths) must
be the same on every path, and so must each entry that is a Python value other than a number (a
str, None, a function): the compiled code runs one body for every iteration and cannot pick a
Python value while running. Where one differs, the name becomes :class:`Diverged` or
:class:`ChangesInLoop` (reading it is a located error), or the loop is a located error.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

import numpy as np

from ...ir import Literal, Value
from .trees import is_dataclass_instance
from .unreadable import Unreadable


def traceable(v) -> bool:
    """A value the IR carries: a Value, or a Python number (bools too: a break flag)."""
    return isinstance(v, (Value, Literal, float, int))


class Attr(str):
    """A step of a path into a dataclass: its field of this name (``params.W``)."""


def opened(v) -> bool:
    """A container whose entries are carried and joined one by one: a tuple or list (a
    NamedTuple too), a dict, a dataclass instance (parameter containers, :mod:`.trees`)."""
    return isinstance(v, (tuple, list, dict)) or is_dataclass_instance(v)


def entries(v) -> list:
    """``[(step, item)]`` of an opened container: an index, a dict key, an :class:`Attr`."""
    if isinstance(v, dict):
        return list(v.items())
    if is_dataclass_instance(v):
        return [(Attr(f.name), getattr(v, f.name)) for f in dataclasses.fields(v)]
    return list(enumerate(v))


def flat(v, path=()) -> list:
    """``[(path, leaf)]`` of ``v``, depth first: containers are opened, nothing else."""
    if opened(v):
        return [pair for k, item in entries(v) for pair in flat(item, path + (k,))]
    return [(path, v)]


def skeleton(v):
    """The nesting, keys and lengths of ``v`` (None for a leaf): values of equal skeletons
    flatten to the same paths. A list and a tuple of one length compare equal (``s = [x, v]``
    before a loop, ``s = step(s)`` returning a tuple in it)."""
    if isinstance(v, (tuple, list)):
        return tuple(skeleton(x) for x in v)
    if opened(v):   # a dict, a dataclass: its keys and type too
        steps = entries(v)
        return ("dict" if isinstance(v, dict) else type(v), tuple(k for k, _ in steps),
                tuple(skeleton(x) for _, x in steps))
    return None


def fill(template, leaves):
    """``template``'s containers holding the next items of the iterator ``leaves``."""
    if not opened(template):
        return next(leaves)
    items = [(k, fill(x, leaves)) for k, x in entries(template)]
    if isinstance(template, dict):
        return dict(items)
    if is_dataclass_instance(template):
        return _dataclass(template, items)
    items = [x for _, x in items]
    if isinstance(template, list):
        return items
    return type(template)._make(items) if hasattr(template, "_make") else tuple(items)


def _dataclass(template, items):
    out = object.__new__(type(template))   # as .trees rebuilds one: no __init__ checks
    for k, x in items:
        object.__setattr__(out, k, x)
    return out


def same(a, b) -> bool:
    """Whether two Python values (not traced ones) are the same value: a str, None, a number,
    a dtype, a function..."""
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, (Value, np.ndarray)):
        return False
    try:
        return (a == b) is True
    except Exception:  # noqa: BLE001 - a value without a usable ==: not the same
        return False


def label(name, path) -> str:
    """How the user writes a leaf: ``state[0][1]``, ``params["W"]``, ``params.W``."""
    return name + "".join(f".{i}" if isinstance(i, Attr) else f"[{i!r}]" for i in path)


def ident(name, path) -> str:
    """An identifier for a leaf's Value (``state_0_1``, ``params_W``): generated code names it
    so."""
    return name + "".join("_" + re.sub(r"\W", "_", str(i)) for i in path)


def describe(v) -> str:
    """``v`` in words, for errors: an array's aval, a container's length, a Python value."""
    if opened(v):
        n = len(entries(v))
        return f"a {type(v).__name__} of {n} entr{'y' if n == 1 else 'ies'}"
    if isinstance(v, Value):
        a = v.aval
        return f"an array ({a})" if not a.is_scalar else f"a traced {a.kind}"
    if v is None:
        return "None"
    if isinstance(v, (str, bool, int, float)):
        return f"the {type(v).__name__} {v!r}"
    return getattr(v, "in_words", None) or f"a {type(v).__name__}"


def first_difference(a, b):
    """``(path, leaf of a, leaf of b)`` where ``a`` and ``b`` first differ in structure or in
    a Python value (not a number: those may be joined), else None."""
    if skeleton(a) != skeleton(b):
        return (), a, b
    for (path, x), (_, y) in zip(flat(a), flat(b)):
        if x is not y and not (traceable(x) and traceable(y)) and not same(x, y):
            return path, x, y
    return None


def flag_hint(name) -> str:
    return (f"make `{name}` a number or a boolean flag instead (set it with a comparison such "
            "as `liquid = T > 3.0`, read it with `np.where(liquid, a, b)`), or decide it with a "
            "condition known while compiling")


@dataclass(frozen=True)
class Diverged(Unreadable):
    """A name that is a different Python value (a str, None), or a container of a different
    structure, on each path through an ``if`` on a traced condition: the compiled code cannot
    pick one while running. Fine until it is read after the ``if``."""

    lineno: int
    path: tuple
    first: str
    other: str
    structure: bool   # a container on one path at least (else two Python values)

    @classmethod
    def of(cls, lineno, path, first, other):
        containers = opened(first) or opened(other)
        return cls(lineno, path, describe(first), describe(other), containers)

    def describe(self, name):
        where = label(name, self.path)
        message = (f"`{where}` is {self.first} on one path through the `if` at line "
                   f"{self.lineno} and {self.other} on another: the condition is known only "
                   "while running, and the compiled code cannot choose a Python value then")
        if self.path or self.structure:
            return message, (f"give `{name}` the same structure on both paths: the same length "
                             "(and keys), with the same Python constants (str, None) in the "
                             "same places")
        if "None" in (self.first, self.other):
            return message, (f"give `{name}` a value of one kind on both paths: initialise it "
                             "before the `if` as it is on the other path (an array: "
                             f"`{name} = np.zeros_like(...)`; a number: `{name} = 0.0`)")
        return message, flag_hint(name)


@dataclass(frozen=True)
class ChangesInLoop(Unreadable):
    """A Python value (a str, None) that a loop body changes into another: the compiled loop
    runs one body for every iteration, so no iteration may read the value before the body
    rebinds it."""

    lineno: int
    before: str
    after: str
    start: object = field(default=None, compare=False)  # the value before the loop

    def describe(self, name):
        return (f"`{name}` is {self.before} before the loop at line {self.lineno} and "
                f"{self.after} after an iteration: the compiled loop runs the same code in "
                "every iteration, so it cannot read a Python value that changes between them",
                flag_hint(name))


def carry_error(name, path, before, after) -> tuple:
    """(message, hint) for a name a loop cannot carry: its structure, or a Python value in it,
    changes in an iteration."""
    where = label(name, path)
    message = (f"`{where}` is {describe(before)} before this loop and {describe(after)} after "
               "one iteration: a loop carries a name only if every iteration keeps its kind (an "
               "array or a number; a tuple, list or dict of the same length and keys, with the "
               "same Python constants in the same places)")
    if isinstance(after, Value) and not opened(before):
        return message, f"initialise it before the loop as {_start(where, after)}"
    if opened(before) or opened(after):
        return message, (f"give `{name}` the same structure before the loop as at the end of "
                         "its body (bind the entries a later iteration computes to a starting "
                         "value of their shape, e.g. 0.0 or np.zeros_like(...))")
    if traceable(before):
        return message, f"bind `{where}` to {describe(before)} in every iteration"
    if path:
        return message, (f"keep `{where}` the same Python value in every iteration, or make it "
                         "a number (a flag) that the loop carries")
    return message, flag_hint(name)


def _start(where, value) -> str:
    a = value.aval
    if a.is_scalar or a.known_shape == ():
        return f"a number (`{where} = 0.0`)"
    if a.kind == "array" and a.shape is not None:
        return (f"an array of shape {a.shape} (`{where} = np.zeros({a.shape!r})`, or "
                "np.zeros_like(...) of an input of that shape)")
    return f"an array of its shape (`{where} = np.zeros_like(...)`)"


class LoopState:
    """The names a loop body rebinds that were bound before it, flattened: ``slots`` are the
    ``(name, path)`` of the leaves the loop carries (Values; Python numbers at the top level,
    as a counter; a number inside a tuple once an iteration changes it), the other leaves stay
    the Python values they were before the loop (checked by :meth:`mismatch`)."""

    def __init__(self, env, names):
        self.starts = {n: env[n] for n in names if not isinstance(env[n], Unreadable)}
        self.slots = [(n, p) for n, v in self.starts.items() for p, leaf in flat(v)
                      if isinstance(leaf, Value) or (p == () and traceable(leaf))]
        self.changing = {}  # name -> ChangesInLoop: a Python value an iteration changes

    @property
    def names(self) -> list:
        return list(self.starts)

    def labels(self) -> list:
        return [ident(n, p) for n, p in self.slots]

    def start_leaves(self) -> list:
        return [leaf_at(self.starts[n], p) for n, p in self.slots]

    def results(self, env) -> list:
        return [leaf_at(env[n], p) for n, p in self.slots]

    def add(self, env, names):
        """Carry these names too, from their values in ``env`` (before the loop)."""
        for n in names:
            self.starts[n] = env[n]
            self.slots += [(n, p) for p, leaf in flat(env[n])
                           if isinstance(leaf, Value) or (p == () and traceable(leaf))]

    def drop(self, names):
        for n in names:
            self.starts.pop(n, None)
        self.slots = [(n, p) for n, p in self.slots if n in self.starts]

    def promote(self, name, paths):
        """Carry these leaves too: Python numbers in a tuple that an iteration changed."""
        self.slots += [(name, p) for p in paths]

    def enter(self, env, values):
        """Bind every name to its value before the loop, the carried leaves replaced by
        ``values`` (a block's parameters)."""
        self._bind(env, self.starts, values)

    def leave(self, env, body_env, outs):
        """After the loop: each name as the body left it (its containers, its Python values),
        the carried leaves replaced by the loop's outputs ``outs``."""
        self._bind(env, {n: body_env[n] for n in self.starts}, outs)

    def _bind(self, env, templates, values):
        by_slot = dict(zip(self.slots, values))
        for name, template in templates.items():
            leaves = [by_slot.get((name, p), leaf) for p, leaf in flat(template)]
            env[name] = fill(template, iter(leaves))

    def mismatch(self, name, end):
        """How ``end`` (``name`` at the end of an iteration) fails to match its start:
        ``("promote", paths)`` for numbers in a container that the iteration changed (carry
        them), ``("changes", (), start, end)`` for a Python value at the top level changed into
        another, ``("carry", path, start leaf, end leaf)`` for what a loop cannot carry, or
        None."""
        start = self.starts[name]
        if skeleton(start) != skeleton(end):
            return "carry", (), start, end
        carried = {p for n, p in self.slots if n == name}
        promote = []
        for (path, a), (_, b) in zip(flat(start), flat(end)):
            if path in carried:
                if not traceable(b):
                    return "carry", path, a, b
            elif not same(a, b) and traceable(a) and traceable(b):
                promote.append(path)
            elif not same(a, b):
                kind = "changes" if path == () and not traceable(b) else "carry"
                return kind, path, a, b
        return ("promote", promote) if promote else None


def leaf_at(v, path):
    for i in path:
        v = getattr(v, i) if isinstance(i, Attr) else v[i]
    return v
