"""Simplify's rules for entry updates (``setitem``, ``index_add``, ``scatter_add``): what
the adjoint of a store or of a read writes, then reads back or writes again.

A store ``out[i] = v`` has the adjoint ``dout[i] = 0`` (the entry's cotangent goes to ``v``),
a read ``out[i]`` adds its cotangent back: in a loop such pairs made the cotangent array change
on every iteration. The rules cancel them where the index writes each entry once (ints,
slices, 0-d index values): a rewrite happens only when the result has exactly the node's
abstract value. Two scatters of one slice merge (``x[:-1]`` read twice gives one
``dx[:-1] = a + b``); two of adjacent slices covering an axis are a concatenation (a roll's
adjoint). Every rule is ``rule(node, ctx)`` under the protocol of
:class:`.rewrite.Rewrite`.
"""

from __future__ import annotations

from ..ir import Literal, Node, Value
from ..ir.primitives import writes_once
from .rewrite import IN_PLACE, Rewrite


def merge_scatters(node, ctx):
    """``index_add[i](scatter_add[i](a), b)`` becomes ``scatter_add[i](a + b)`` (and the same
    over ``index_add``): two adjoints of one gather (``x[:-1]`` read twice) add before they
    scatter, so one pass over the slice instead of two, and the sum can fuse. Rewritten in
    place, where both are in one block (``ctx.local``: its nodes so far), with the new
    ``add`` node before it."""
    if node.prim != "index_add":
        return None
    acc, b, *arrays = node.inputs
    inner = ctx.producers.get(acc)
    if inner is None or inner.prim not in ("scatter_add", "index_add") or \
            inner.params.get("index") != node.params.get("index"):
        return None
    # an update before the `if` this branch is in: merged, its input would be read on this
    # path, the update on others
    if not any(n is inner for n in reversed(ctx.local)):
        return None
    first = 0 if inner.prim == "scatter_add" else 1
    a, inner_arrays = inner.inputs[first], list(inner.inputs[first + 1:])
    if inner_arrays != arrays or not isinstance(a, Value) or not isinstance(b, Value) or \
            a.aval != b.aval:
        return None
    total = Node("add", (a, b), {}, (Value(a.aval),), node.source, node.phase)
    node.prim, node.params = inner.prim, dict(inner.params)
    node.inputs = inner.inputs[:first] + (total.out,) + tuple(arrays)
    return Rewrite(before=(total,))


def join_scatters(node, ctx):
    """``index_add[j](scatter_add[i](a), b)``, where slices ``i`` and ``j`` cut one axis into
    two adjacent pieces that cover it (every other axis whole), is ``concatenate([a, b])`` in
    the pieces' order, rewritten in place: the adjoint of ``np.roll`` (the concatenation of
    ``x[-k:]`` and ``x[:-k]``) is then the roll the other way, one call, where a zero array,
    a store and an add were three. Both in one block, as for :func:`merge_scatters`."""
    if node.prim != "index_add" or len(node.inputs) != 2:
        return None
    acc, b = node.inputs
    inner = ctx.producers.get(acc)
    if inner is None or inner.prim != "scatter_add" or len(inner.inputs) != 1 or \
            not any(n is inner for n in reversed(ctx.local)):
        return None
    a, out = inner.inputs[0], node.out.aval
    if out.kind != "array" or out.shape is None:
        return None
    cut = _cut(inner.params["index"], node.params["index"], out.shape)
    if cut is None:
        return None
    axis, first = cut
    pieces = (a, b) if first == 0 else (b, a)
    if not all(isinstance(v, Value) and v.aval.dtype == out.dtype for v in pieces) or \
            sum(_length(v, out.shape, axis) or 0 for v in pieces) != out.shape[axis] or \
            not all(_length(v, out.shape, axis) for v in pieces):
        return None
    node.prim, node.inputs, node.params = "concatenate", pieces, {"axis": axis}
    return IN_PLACE


def _length(v, shape, axis):
    """``v``'s length along ``axis`` where it has ``shape`` on every other axis, else None."""
    have = v.aval.shape
    if have is None or len(have) != len(shape) or any(
            m != n for k, (m, n) in enumerate(zip(have, shape)) if k != axis):
        return None
    return have[axis]


def _cut(i, j, shape):
    """``(axis, 0 or 1: which of i, j starts it)`` where the slice indexes ``i`` and ``j``
    take two adjacent pieces of one axis of ``shape`` that cover it, every other axis whole;
    else None."""
    spans = [_spans(index, shape) for index in (i, j)]
    if None in spans:
        return None
    apart = [k for k, n in enumerate(shape) if spans[0][k] != (0, n) or spans[1][k] != (0, n)]
    if len(apart) != 1:
        return None
    axis = apart[0]
    (lo0, hi0), (lo1, hi1), n = spans[0][axis], spans[1][axis], shape[axis]
    if lo0 == 0 < hi0 == lo1 < hi1 == n:
        return axis, 0
    if lo1 == 0 < hi1 == lo0 < hi0 == n:
        return axis, 1
    return None


def _spans(index, shape):
    """Each axis's ``(start, stop)`` under ``index``, a tuple of step-1 slices (the axes past
    it whole); None for any other index or a shape not known."""
    if len(index) > len(shape) or any(not isinstance(n, int) for n in shape):
        return None
    spans = []
    for item, n in zip(tuple(index) + (("s", None, None, None),) * (len(shape) - len(index)),
                       shape):
        if item[0] != "s" or item[3] not in (None, 1):
            return None
        start, stop, _ = slice(item[1], item[2]).indices(n)
        spans.append((start, max(start, stop)))
    return spans


def set_after_zeroing(node, ctx):
    """``index_add[i](setitem[i](a, 0.0), g)`` is ``setitem[i](a, g)`` where the index writes
    each entry once (a scalar store's adjoint: the entry's cotangent is zeroed, then the read
    of it on the right-hand side adds one back), rewritten in place."""
    if node.prim != "index_add":
        return None
    acc, g, *arrays = node.inputs
    zeroed = ctx.producers.get(acc)
    if (zeroed is None or zeroed.prim != "setitem" or zeroed.params != node.params
            or list(zeroed.inputs[2:]) != arrays or not isinstance(zeroed.inputs[1], Literal)
            or zeroed.inputs[1].value != 0 or not _once(node)):
        return None
    node.prim, node.inputs = "setitem", (zeroed.inputs[0], g, *arrays)
    return IN_PLACE


def _once(node) -> bool:
    """Whether the index of ``node`` (a getitem, setitem or index_add) writes each entry
    once: ints, slices, 0-d index values."""
    arrays = node.inputs[1:] if node.prim == "getitem" else node.inputs[2:]
    return all(isinstance(a, Literal) or a.aval.ndim is not None for a in arrays) and writes_once(
        node.params["index"], [0 if isinstance(a, Literal) else a.aval.ndim for a in arrays])


def rewrite_same_entries(node, ctx):
    """``setitem[i](a, a[i])`` is ``a``: the entries written are the ones already there."""
    if node.prim != "setitem" or not isinstance(node.inputs[1], Value):
        return None
    a, v, *arrays = node.inputs
    read = ctx.producers.get(v)
    if (read is not None and read.prim == "getitem" and read.inputs[0] is a
            and list(read.inputs[1:]) == arrays and read.params == node.params
            and a.aval == node.out.aval):
        return Rewrite(value=a)
    return None


def _same_place(update, node) -> bool:
    """Whether ``update`` (a setitem or index_add) writes where ``node`` reads or writes: the
    same index spec over the same index values."""
    k = 1 if node.prim == "getitem" else 2
    return (update is not None and update.prim in ("setitem", "index_add")
            and update.params == node.params and update.inputs[2:] == node.inputs[k:])


def overwritten(node, ctx):
    """``setitem[i](setitem[i](a, v), w)`` and ``setitem[i](index_add[i](a, g), w)`` are
    ``setitem[i](a, w)``: every entry the first one wrote, the second overwrites (a store's
    adjoint zeroes the entry it gave its cotangent), rewritten in place."""
    done = None
    while node.prim == "setitem":
        inner = ctx.producers.get(node.inputs[0])
        if not _same_place(inner, node) or inner.inputs[0].aval != node.out.aval:
            return done
        node.inputs, done = (inner.inputs[0],) + node.inputs[1:], IN_PLACE
    return done


def read_back(node, ctx):
    """``getitem[i](index_add[i](a, g))`` is ``a[i] + g`` (and ``a[i]`` may be read back
    again), where the index writes each entry once and ``g`` has the entry's exact abstract
    value (no broadcast, no cast): rewritten in place, with the nodes it reads before it."""
    return _read_back(node, ctx.producers)


def _read_back(node, producers):
    inner = _update_read(node, producers)
    if inner is None or inner.prim != "index_add":
        return None
    new = []
    base = _entry(inner.inputs[0], node, producers, new)
    node.prim, node.inputs, node.params = "add", (base, inner.inputs[1]), {}
    return Rewrite(before=tuple(new))


def written_entry(node, ctx):
    """``getitem[i](setitem[i](a, v))`` is ``v`` (the index writing each entry once, ``v``
    of the entry's exact abstract value)."""
    value = _written(node, ctx.producers)
    return None if value is None else Rewrite(value=value)


def _written(node, producers):
    inner = _update_read(node, producers)
    return inner.inputs[1] if inner is not None and inner.prim == "setitem" else None


def _update_read(node, producers):
    """The update a getitem reads at the place it wrote, with a value of the read's exact
    abstract value, where the index writes each entry once; else None."""
    if node.prim != "getitem" or not _once(node):
        return None
    inner = producers.get(node.inputs[0])
    if (not _same_place(inner, node) or not isinstance(inner.inputs[1], Value)
            or inner.inputs[1].aval != node.out.aval):
        return None
    return inner


def _entry(x, like, producers, new) -> Value:
    """``x`` read where the getitem ``like`` reads, read back through updates where it can
    be (appending the nodes made to ``new``)."""
    read = Node("getitem", (x,) + like.inputs[1:], dict(like.params),
                (Value(like.out.aval),), like.source, like.phase)
    written = _written(read, producers)
    if written is not None:
        return written
    nested = _read_back(read, producers)
    new.extend(nested.before if nested is not None else ())
    new.append(read)
    producers[read.out] = read
    return read.out
