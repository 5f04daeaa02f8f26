"""Slices whose bounds move with a loop counter: ``x[t:t + 2]`` read as a window of fixed width.

In ``for t in range(1, n - 1): s += np.sum(x[t - 1:t + 2] * w)`` the bounds are traced ints, but
the width is the same on every iteration, so the result's shape is known when compiling. Such a
slice becomes an integer-array index, ``x[t + arange(3) - 1]`` (a gather; its adjoint scatters
into the window), when:

- both bounds are affine in the counters of enclosing ``for`` loops (``t``, ``t + 1``,
  ``2 * t - 1``, ``i + j``: sums, differences and int multiples) and their difference does not
  depend on any counter: the width is fixed;
- on every iteration the window lies inside the axis (``0 <= start`` and ``stop <= length``),
  checked from the counters' ranges, since there NumPy's slice and the gather agree (a negative
  start wraps for an index but empties a slice; a stop past the end shortens a slice);
- the step is a positive Python int, and the window is the subscript's only index that is not
  a plain slice, ``None`` or ``...`` (NumPy moves the axes of several array indices).

Anything else keeps the located error that asks for bounds known when compiling. The index
array is tagged ``("u", k)`` in the node's index spec (not ``("a", k)``): its entries are
distinct and inside the axis, so the adjoint adds ``dx[idx] += g`` instead of ``np.add.at``
(:func:`adcompiler.ir.primitives.writes_once`), and the passes keep the tag with the spec.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...ir import Literal, Value


@dataclass
class MovingSlice:
    """A slice with a traced bound, as ``lower_slice`` found it (``node``: the slice's AST)."""

    start: object
    stop: object
    step: object
    node: object


@dataclass(frozen=True)
class Window:
    """A moving slice lowered: its index array ``start + arange(0, width, step)``, whose
    entries are distinct and inside the axis (the spec tags it ``("u", k)``)."""

    index: Value


BOUND_HINT = "use Python ints, or shape attributes such as x.shape[0] // 2"


class WindowLowering:
    """Mixin: :meth:`windows` turns the moving slices of a subscript into index arrays."""

    def refuse_moving(self, item: MovingSlice, why="", hint=BOUND_HINT):
        what = why or "a slice bound must be known when compiling, not computed from the inputs"
        return self.src.error(item.node, what, hint)

    def windows(self, base: Value, items: tuple, node) -> tuple:
        """``items`` with each :class:`MovingSlice` replaced by its :class:`Window`."""
        moving = [k for k, item in enumerate(items) if isinstance(item, MovingSlice)]
        if not moving:
            return items
        k = moving[0]
        if len(moving) == 1:
            self.check_fixed_width(items[k], node, k, base.aval.ndim)
        if len(moving) > 1 or any(not _basic(item) for j, item in enumerate(items) if j != k):
            raise self.refuse_moving(items[k], "a slice that moves with the loop counter must "
                                     "be the only index here other than plain slices",
                                     "index one at a time: x[i:i + 2][:, j:j + 3], "
                                     "x[i][t:t + 2]")
        axis = _axis(items, k, base.aval.ndim)
        index = self.window_index(items[k], base.aval.shape[axis])
        return items[:k] + (index,) + items[k + 1:]

    def check_fixed_width(self, item: MovingSlice, node, k, ndim):
        """The located error for a slice whose length changes with the loop counters
        (``x[i + 1:]``), with a hint that masks the whole axis instead."""
        start = self.affine(item.start if item.start is not None else 0)
        stop = self.affine(item.stop if item.stop is not None else 0)  # the end: a constant
        if start is None or stop is None or _difference(stop, start) is not None:
            return
        what = ("this slice's length changes from one iteration to the next, so its shape is "
                "not known when compiling")
        if min(self.bounds(start)[0], self.bounds(stop)[0]) < 0:
            raise self.refuse_moving(item, what + ", and a bound is negative on some iteration "
                                     "(where NumPy counts from the end)", "adjust the loop's "
                                     "range so that the bounds stay at least 0")
        raise self.refuse_moving(item, what, mask_hint(self.src, node, k, ndim))

    def changing_slice_mask(self, base: Value, items: tuple):
        """For a store of a number into a slice whose length changes with the loop counters
        (``y[i:] *= 0.9``, ``U[i, i + 1:] = 0.0``): the items with that slice made whole and
        the mask of the slice's entries in the whole (``np.arange(n) >= i``, shaped to
        broadcast), so the store is ``whole = np.where(mask, new, whole)``, exactly NumPy's.
        None where that does not apply (then :meth:`windows` says why)."""
        moving = [k for k, item in enumerate(items) if isinstance(item, MovingSlice)]
        shape = base.aval.known_shape
        if len(moving) != 1 or shape is None or not all(map(_plain_item, items)):
            return None
        k, item = moving[0], items[moving[0]]
        start = self.affine(item.start if item.start is not None else 0)
        stop = self.affine(item.stop) if item.stop is not None else ({}, 0)
        if (not (item.step is None or type(item.step) is int and item.step == 1)
                or start is None or stop is None
                or _difference(stop, start) is not None
                or min(self.bounds(start)[0], self.bounds(stop)[0]) < 0):
            return None  # a negative bound wraps in NumPy's slice: not this mask
        consumed = [x is not None for x in items]
        axis, after = sum(consumed[:k]), sum(
            x is None or isinstance(x, slice) for x in items[k + 1:]) + len(shape) - sum(consumed)
        positions = self.constant(_offsets(shape[axis], 1), "positions")
        mask = self.b.emit("greater_equal", (positions, 0 if item.start is None else item.start))
        if item.stop is not None:
            mask = self.b.emit("logical_and", (mask, self.b.emit("less", (positions, item.stop))))
        if after:
            mask = self.b.emit("reshape", (mask,), {"shape": (shape[axis],) + (1,) * after})
        return items[:k] + (slice(None),) + items[k + 1:], mask

    def window_index(self, item: MovingSlice, length: int) -> Window:
        step = 1 if item.step is None else item.step
        if isinstance(step, Value) or not isinstance(step, int) or step <= 0:
            raise self.refuse_moving(item, "a moving slice's step must be a positive Python int")
        start = self.affine(item.start if item.start is not None else 0)
        stop = self.affine(item.stop if item.stop is not None else length)
        if start is None or stop is None:
            raise self.refuse_moving(item)
        width = _difference(stop, start)
        if width is None:
            raise self.refuse_moving(item, "this slice's length changes from one iteration to "
                                     "the next, so its shape is not known when compiling",
                                     "slice a window of fixed width (x[t:t + 3]), or mask the "
                                     "whole array with np.where")
        lo, hi = self.bounds(start)
        if width <= 0 or lo < 0 or hi + width > length:
            raise self.refuse_moving(item, f"this window runs from {lo} to {hi + width} over "
                                     f"the loop, outside the axis of length {length}, where "
                                     "NumPy would shorten or wrap it",
                                     "keep the window inside the array: adjust the loop's range")
        offsets = self.constant(_offsets(width, step), "window")
        start_value = item.start if item.start is not None else 0
        return Window(self.b.emit("add", (start_value, offsets)))

    def affine(self, v):
        """``v`` as ({counter: coefficient}, constant), or None when it is not affine in the
        counters of enclosing ``for`` loops."""
        if isinstance(v, (bool, np.bool_)):
            return None
        if isinstance(v, (int, np.integer)):
            return {}, int(v)
        if isinstance(v, Literal):
            return self.affine(v.value)
        if not isinstance(v, Value):
            return None
        if v in self.b.counters:
            return {v: 1}, 0
        node = _producer(self.b, v)
        if node is None or node.prim not in ("add", "subtract", "multiply", "negative"):
            return None
        parts = [self.affine(x) for x in node.inputs]
        if any(p is None for p in parts):
            return None
        return _combine(node.prim, parts)

    def bounds(self, form) -> tuple:
        """The least and greatest value of an affine form over its counters' ranges."""
        terms, const = form
        lo = hi = const
        for counter, c in terms.items():
            a, b = c * self.b.counters[counter][0], c * self.b.counters[counter][1]
            lo, hi = lo + min(a, b), hi + max(a, b)
        return lo, hi


@lru_cache(maxsize=None)
def _offsets(width, step):
    """``arange(0, width, step)``, one read-only array per width and step, so that a read and
    a write of the same window share one constant."""
    offsets = np.arange(0, width, step, dtype=np.int64)
    offsets.flags.writeable = False
    return offsets


def _combine(prim, parts):
    if prim == "negative":
        (terms, const), = parts
        return {k: -c for k, c in terms.items()}, -const
    (t1, c1), (t2, c2) = parts
    if prim == "multiply":
        if t1 and t2:
            return None
        (terms, scale, const) = (t1, c2, c1) if t1 else (t2, c1, c2)
        return {k: c * scale for k, c in terms.items()}, const * scale
    sign = 1 if prim == "add" else -1
    terms = dict(t1)
    for k, c in t2.items():
        terms[k] = terms.get(k, 0) + sign * c
    return {k: c for k, c in terms.items() if c}, c1 + sign * c2


def _difference(stop, start):
    """``stop - start`` when no counter is left in it, else None."""
    terms, const = _combine("subtract", [stop, start])
    return None if terms else const


def _producer(builder, v):
    for nodes in [builder.target, *reversed(builder.enclosing)]:
        for node in reversed(nodes):
            if v in node.outputs:
                return node
    return None


def _basic(item) -> bool:
    return item is None or item is Ellipsis or isinstance(item, slice)


def _axis(items, k, ndim) -> int:
    """The axis item ``k`` indexes (items before it, or after it when an ``...`` precedes)."""
    consumes = [isinstance(item, (slice, MovingSlice)) for item in items]
    if any(item is Ellipsis for item in items[:k]):
        return ndim - sum(consumes[k:])
    return sum(consumes[:k])


_MASK_HINT = ("slice a window of fixed width (x[t:t + 3]), or keep the whole axis and zero "
              "what lies outside the slice with np.where")


def mask_hint(src, node, k, ndim) -> str:
    """The hint for ``node``, a subscript whose item ``k`` is a slice of changing length:
    the whole axis with the entries outside the slice masked, written in the user's terms:
    ``np.where(np.arange(U.shape[1]) >= i + 1, U[i], 0.0)`` for ``U[i, i + 1:]`` (a sum or a
    dot product over it is unchanged), ``y = np.where(..., new, y)`` for a store."""
    elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    item = elts[k] if k < len(elts) else None
    if (not isinstance(item, ast.Slice) or item.step is not None or ndim is None
            or not isinstance(node.value, ast.Name) or any(map(_is_ellipsis, elts))):
        return _MASK_HINT
    base = src.text(node.value)
    positions = f"np.arange({base}.shape[{sum(not _is_none(e) for e in elts[:k])}])"
    tests = [f"{positions} {op} {src.text(bound)}"
             for op, bound in ((">=", item.lower), ("<", item.upper)) if bound is not None]
    mask = along = tests[0] if len(tests) == 1 else f"np.logical_and({', '.join(tests)})"
    after = (sum(isinstance(e, ast.Slice) or _is_none(e) for e in elts[k + 1:])
             + ndim - sum(not _is_none(e) for e in elts))
    if after:
        mask = f"({mask})[:{', None' * after}]"
    rest = [src.text(e) for e in elts[:k]] + [":"] + [src.text(e) for e in elts[k + 1:]]
    while rest and rest[-1] == ":":
        rest.pop()
    whole = f"{base}[{', '.join(rest)}]" if rest else base
    if isinstance(node.ctx, ast.Store):
        return (f"update the whole axis under a mask: `{whole} = np.where({mask}, <new "
                f"values>, {whole})`, or use a window of fixed width")
    return (f"keep the whole axis under a mask: `np.where({mask}, {whole}, 0.0)` zeroes the "
            f"entries outside the slice, which is right where they go straight into a sum or a "
            f"dot product; otherwise (a distance to them, a power of them) zero the terms you "
            f"add up instead, `np.where({along}, <terms along that axis>, 0.0)`, computed from "
            f"the whole axis with the entries outside the slice set to values that keep those "
            f"terms finite")


def _plain_item(x) -> bool:
    """Ints (traced 0-d ones too), slices, None and moving slices: no array, no ``...``."""
    if isinstance(x, Value):
        return x.aval.known_shape == () and np.dtype(x.aval.dtype).kind in "iu"
    return x is None or isinstance(x, (slice, MovingSlice, int, np.integer)) and not isinstance(
        x, bool)


def _is_none(e) -> bool:
    return isinstance(e, ast.Constant) and e.value is None


def _is_ellipsis(e) -> bool:
    return isinstance(e, ast.Constant) and e.value is Ellipsis
