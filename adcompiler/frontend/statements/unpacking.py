"""Unpack a value into a tuple or list of targets as Python does (``a, b = p``, ``a, *rest = p``).

A tuple, list, range or str gives its items; a traced array whose first dimension is known while
compiling gives its rows, as NumPy iterates over the first axis (``a, b = p`` is ``a, b = p[0],
p[1]``); a starred target takes a Python list of what the others leave. Invariant: the number of
items matches the targets, else the located ValueError Python (and NumPy) would raise; a value
Python cannot iterate is its located TypeError.
"""

from __future__ import annotations

import ast

import numpy as np

from ..expressions.comprehensions import MAX_ITERATIONS
from ...ir import Value


def unpacked(lowering, target, value) -> list:
    """(target, value) for each element of the tuple or list ``target``: a starred one
    (``*rest``) pairs its name with a list of the items the others leave."""
    elts = target.elts
    count, item = unpack_source(lowering, target, value)
    starred = [k for k, t in enumerate(elts) if isinstance(t, ast.Starred)]
    if not starred:
        if count != len(elts):
            raise lowering.src.error(target, _count_error(len(elts), count, False),
                                     _count_hint(count, False))
        return [(t, item(k)) for k, t in enumerate(elts)]
    s, after = starred[0], len(elts) - starred[0] - 1
    if count < len(elts) - 1:
        raise lowering.src.error(target, _count_error(len(elts), count, True),
                                 _count_hint(count, True))
    if count - len(elts) + 1 > MAX_ITERATIONS:
        raise lowering.src.error(elts[s], f"`{lowering.src.text(elts[s])}` would take more than "
                                 f"{MAX_ITERATIONS} rows, each its own value",
                                 "slice the array instead: `rest = p[1:]`")
    rest = [item(k) for k in range(s, count - after)]
    return ([(t, item(k)) for k, t in enumerate(elts[:s])] + [(elts[s].value, rest)]
            + [(t, item(count - after + k)) for k, t in enumerate(elts[s + 1:])])


def unpack_source(lowering, target, value):
    """(how many items, k -> the k-th item) of a value unpacked into ``target``."""
    if isinstance(value, np.ndarray):  # an object's array attribute: a constant
        value = lowering.constant(value)
    if isinstance(value, (tuple, list, range, str)):
        return len(value), value.__getitem__
    if not isinstance(value, Value):
        raise lowering.src.error(target, "TypeError: cannot unpack non-iterable "
                                 f"{type(value).__name__} object", _ITEMS_HINT)
    if value.aval.kind == "list":
        raise lowering.src.error(target, "a list built by a while loop has a length known only "
                                 "when it runs, so it cannot be unpacked into names",
                                 "read its items by index after the loop")
    if value.aval.kind != "array" or lowering.b.shape(value) == ():
        what = (f"numpy.{value.aval.dtype}" if value.aval.kind == "array"
                else value.aval.kind)  # a NumPy scalar (or a 0-d array), a Python number
        raise lowering.src.error(target, f"TypeError: cannot unpack non-iterable {what} object:"
                                 " a 0-d value has no first axis to unpack", _ITEMS_HINT)
    n = lowering.b.shape(value)[0]
    return n, lambda k: lowering.b.getitem(value, (), (("i", k),))


_ITEMS_HINT = "unpack a tuple, a list, or an array with a first axis (its rows)"


def _count_error(targets, got, starred) -> str:
    """Python's ValueError for unpacking ``got`` items into ``targets`` (one ``starred``)."""
    names = f"{targets - starred} names" + (" and a starred one" if starred else "")
    if got > targets and not starred:
        said = f"too many values to unpack (expected {targets})"
    else:
        least = "at least " if starred else ""
        said = f"not enough values to unpack (expected {least}{targets - starred}, got {got})"
    return f"ValueError: {said}: cannot unpack this value into {names}"


def _count_hint(got, starred) -> str:
    has = f"the value has {got} item{'s' if got != 1 else ''} (an array's: its rows)"
    if starred:
        return f"{has}: write at most {got} names beside the starred one"
    return f"{has}: write {got} names, or a starred one taking the rest (`first, *rest = ...`)"
