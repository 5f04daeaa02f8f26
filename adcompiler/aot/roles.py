"""The sizes a function needs equal, read off its own shape errors: the roles of an example's
coincident sizes.

An example with S == D (``x: (S, D)``, per-step weights ``w: (S,)``, ``W: (D, D)``) holds one
number in five axes. Which of them the function needs equal is what its operations imply: the
axes meeting in an elementwise op or a broadcast, the contracted axes of a matmul. Split one at
a time, none of these axes can move (``x``'s steps need ``w``'s, and ``x``'s width ``W``'s);
split by pairs, the search costs a compile per pair. Here every axis starts with a size of its
own (distinct primes, so a number names its axis), the function is only lowered (shape
inference: about a millisecond, no compile), and each shape error joins the two axes whose
sizes it names as unequal (``(13 != 19)``, or the two shapes of a broadcast); at most one
lowering per axis, the classes left are the finest the shapes allow. The caller then compiles
that split once (:mod:`adcompiler.aot.polymorphic`).

An error that names no two of these sizes (a size fixed by a constant, a reshape's product, an
error of another kind) gives no classes: the caller's one-at-a-time untying stands.
"""

from __future__ import annotations

import re

from ..errors import COMPUTING_ERRORS, CompileError

_UNEQUAL = re.compile(r"\((\d+) != (\d+)\)")
_SHAPE = re.compile(r"\((\d+(?:,\s*\d+)*),?\s*\)")


def equal_classes(blocks, sizes, lower):
    """The finest merge of ``blocks`` (lists of axis indices) whose sizes the function allows
    apart, or None where an error names no two of them. ``sizes(blocks)``: a distinct size for
    each block; ``lower(blocks, sized)``: lowers the function so, raising its shape error."""
    blocks = [list(b) for b in blocks]
    for _ in range(len(blocks)):
        sized = sizes(blocks)
        try:
            lower(blocks, sized)
            return sorted(blocks, key=min)
        except (CompileError, *COMPUTING_ERRORS) as exc:
            pair = unequal_pair(getattr(exc, "message", str(exc)), sized)
        if pair is None:
            return None
        a, b = pair
        blocks[a] += blocks[b]
        del blocks[b]
    return None


def unequal_pair(message, sized):
    """``(i, j)``, i < j: the blocks whose sizes (``sized[k]``, distinct) ``message`` names as
    the ones that must be equal, or None."""
    owner = {n: k for k, n in enumerate(sized)}
    found = _UNEQUAL.search(message)
    pairs = [tuple(map(int, found.groups()))] if found else _broadcast_pairs(message)
    for m, n in pairs:
        if m in owner and n in owner and owner[m] != owner[n]:
            return tuple(sorted((owner[m], owner[n])))
    return None


def _broadcast_pairs(message) -> list:
    """The sizes two shapes of a broadcast error disagree in, aligned from the right."""
    shapes = [tuple(int(d) for d in s.split(",")) for s in _SHAPE.findall(message)]
    if len(shapes) != 2:
        return []
    return [(m, n) for m, n in zip(reversed(shapes[0]), reversed(shapes[1]))
            if m != n and 1 not in (m, n)]
