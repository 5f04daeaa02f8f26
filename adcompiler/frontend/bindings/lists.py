"""The lists a ``while`` loop appends to, as names hold them while lowering.

Before the loop ``xs = []`` is a static, empty Python list (:func:`empty`); while the loop's
body is lowered ``xs`` holds :class:`Building`; after it, a Value of kind ``list`` (one element
per iteration: :func:`is_list`), a stacked output of the ``while`` node. Invariant: a name
holding ``Building`` is read nowhere but in ``xs.append(v)``
(:mod:`..statements.lists`); reading it is a located error (:mod:`..expressions.lists`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir import Value


@dataclass(frozen=True)
class Building:
    """What ``name`` holds while the while loop on line ``lineno`` appends to it."""

    name: str
    lineno: int


def empty(x) -> bool:
    """``[]``, as the lowering holds it: a static Python list with nothing in it."""
    return isinstance(x, list) and not x


def is_list(x) -> bool:
    return isinstance(x, Value) and x.aval.kind == "list"
