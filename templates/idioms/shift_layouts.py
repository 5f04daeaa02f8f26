"""The rules of :mod:`.shift_invariance` for primitives that move axes: reductions (which factor
a shift or a scale out when it is constant along the reduced axes) and shape primitives (which
only carry the layout ``emb`` of the perturbation along). Each rule takes ``(node, tags)`` and
returns the result's tag, or raises :class:`.shift_tags.Unknown` where the result depends on
the perturbation in a way the analysis does not track (a reduction along an axis the
perturbation varies on, a partial slice of such an axis, a reshape that merges axes)."""

from __future__ import annotations

import math

from .shift_tags import OTHER, Unknown


def _tag(tags):
    tag = tags[0]
    if tag is None or tag is OTHER or any(t is not None for t in tags[1:]):
        raise Unknown
    return tag


def _shape(x):
    shape = x.aval.known_shape
    if shape is None:
        raise Unknown
    return tuple(shape)


def _moved(emb, mapping):
    """``emb`` with each axis ``a`` of the input replaced by ``mapping[a]`` (None: dropped,
    which the perturbation must not run along)."""
    out = []
    for e in emb:
        if e is not None and mapping.get(e) is None:
            raise Unknown
        out.append(None if e is None else mapping[e])
    return tuple(out)


def _reduction(node, tags):
    """``sum``/``mean`` over axes along which ``E(c)`` is constant: a scale factors out, a
    shift adds ``k c`` to every term (``count * k c`` to a sum, ``k c`` to a mean)."""
    kind, k, emb = _tag(tags)
    shape = _shape(node.inputs[0])
    axis = node.params.get("axis")
    axes = tuple(range(len(shape))) if axis is None else tuple(
        a % len(shape) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if any(e in axes for e in emb):
        raise Unknown
    if kind == "shift" and node.prim == "sum":
        k = k * math.prod(shape[a] for a in axes)
    if node.params.get("keepdims"):
        mapping = {a: a for a in range(len(shape))}
    else:
        kept = [a for a in range(len(shape)) if a not in axes]
        mapping = {a: i for i, a in enumerate(kept)}
    return kind, k, _moved(emb, mapping)


def _same_entries(node, tags):
    """reshape, squeeze, expand_dims: the same entries in order, with axes of length 1 added
    or removed; the axes of other lengths keep their order, and the perturbation's axes (never
    of length 1) follow them. A reshape that merges or splits axes is not tracked."""
    kind, k, emb = _tag(tags)
    before, after = _shape(node.inputs[0]), _shape(node.out)
    long_before = [a for a, d in enumerate(before) if d != 1]
    long_after = [a for a, d in enumerate(after) if d != 1]
    if [before[a] for a in long_before] != [after[a] for a in long_after]:
        raise Unknown
    return kind, k, _moved(emb, dict(zip(long_before, long_after)))


def _broadcast_to(node, tags):
    kind, k, emb = _tag(tags)
    offset = len(_shape(node.out)) - len(_shape(node.inputs[0]))
    return kind, k, tuple(None if e is None else e + offset for e in emb)


def _transpose(node, tags):
    kind, k, emb = _tag(tags)
    ndim = len(_shape(node.inputs[0]))
    perm = node.params.get("axes") or tuple(reversed(range(ndim)))
    perm = [p % ndim for p in perm]
    return kind, k, _moved(emb, {p: i for i, p in enumerate(perm)})


def _getitem(node, tags):
    """Basic indexing: whole slices keep an axis, ints drop one, None adds one; an int or a
    partial slice on an axis the perturbation runs along, or index arrays, are not tracked."""
    kind, k, emb = _tag(tags)
    if len(node.inputs) != 1:
        raise Unknown
    ndim = len(_shape(node.inputs[0]))
    spec = list(node.params["index"])
    if any(item[0] == "e" for item in spec):
        at = [item[0] for item in spec].index("e")
        named = sum(item[0] in ("s", "i") for item in spec)
        spec[at:at + 1] = [("s", None, None, None)] * (ndim - named)
    mapping, axis, out = {}, 0, 0
    for item in spec + [("s", None, None, None)] * ndim:
        if axis == ndim and item[0] != "n":
            break
        if item[0] == "n":
            out += 1
        elif item[0] == "s" and item[1:] == (None, None, None):
            mapping[axis], axis, out = out, axis + 1, out + 1
        elif item[0] in ("s", "i"):
            axis, out = axis + 1, out + (item[0] == "s")   # dropped from mapping: not along c
        else:
            raise Unknown
    return kind, k, _moved(emb, mapping)


LAYOUT_RULES = {"sum": _reduction, "mean": _reduction, "reshape": _same_entries,
                "squeeze": _same_entries, "expand_dims": _same_entries,
                "broadcast_to": _broadcast_to, "transpose": _transpose, "getitem": _getitem}
