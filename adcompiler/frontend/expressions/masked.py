"""Boolean-mask reads whose result only feeds a reduction, through elementwise operations:
``np.sum(x[x > 0])``, ``np.mean(r[m] ** 2)``, ``x[m].max()``, compiled as masked reductions.

A traced mask's read ``a[m]`` has a shape that depends on the data, so it cannot be compiled as
it is; but a reduction of it can: ``np.sum(f(a[m]))`` is ``np.sum(np.where(m, f(a'), 0))``, with
``a' = np.where(m, a, s)``, ``s`` an entry the mask selects (the first: ``f`` only ever meets
values NumPy's ``f`` meets, and its derivative is never taken where NumPy's is not), held by
``stop_gradient``. ``mean`` is the sum over the count of selected entries, ``max``/``min`` fill
with the dtype's lowest/highest value and raise NumPy's ValueError when nothing is selected,
``prod`` fills with 1. Invariants: the reduction's values are NumPy's (its summation order
aside), its gradient is 0 at every unselected entry; every operation between the read and the
reduction must be elementwise with numbers or with reads of the same mask, the reduction over
all entries (no ``axis=``, ``keepdims=``, ``dtype=``), else the read is refused, located, with
the ``np.where`` rewrite, as any other mask read is. ``y = x[m]`` binds a :class:`MaskedRead`,
read as ``x[m]`` is wherever ``y`` is read.
"""

from __future__ import annotations

import ast
import contextlib
from dataclasses import dataclass, field

import numpy as np

from ..bindings.unreadable import Unreadable
from ..library.compositions import BuilderOps
from ...ir import Literal, Value
from ...ir.primitives import PRIMS

REDUCTIONS = ("sum", "mean", "max", "min", "prod", "amax", "amin")
_ELEMENTWISE_SHAPES = ("astype", "copy", "asarray")   # take a tainted value, keep its shape
MASK_ERROR = ("reading with a boolean mask is not supported: the result's shape depends on the "
              "data", "use np.where(mask, x, 0) to keep the shape; a mask read written inside a "
              "whole-array np.sum/mean/max/min/prod, through elementwise operations only "
              "(np.sum(x[m] ** 2)), compiles as it is")


@dataclass
class MaskedReads:
    """The reads of one reduction's argument: the mask, the substituted full arrays, and where
    the first read is (for the error)."""

    start: int
    mask: Value = None
    shape: tuple = None
    read: ast.AST = None
    values: list = field(default_factory=list)
    spread: Value = None          # the mask broadcast over the reads' trailing axes
    other_mask: ast.AST = None    # a read of another mask: refused


class MaskedRead(Unreadable):
    """What ``y = x[m]`` binds for a traced mask ``m``: readable only inside a reduction's
    argument (``np.sum(y)``, ``np.mean(y ** 2)``), where it is the substituted full array of
    :func:`read`; anywhere else reading ``y`` is the located refusal."""

    def __init__(self, base, mask, lineno):
        self.base, self.mask, self.lineno = base, mask, lineno

    def resolve(self, lowering, node):
        """Inside a reduction's argument, the masked read (None elsewhere)."""
        return read(lowering, self.base, self.mask, node)

    def describe(self, name):
        return (f"`{name}` holds a read with a boolean mask (line {self.lineno}), whose shape "
                "depends on the data: it can be used only inside a whole-array reduction, "
                "through elementwise operations",
                f"reduce it where it is read (np.sum({name}), np.mean({name} ** 2)), or use "
                "np.where(mask, x, 0) to keep the shape")


@contextlib.contextmanager
def deferring(b, node):
    """While ``name = <node>`` is lowered: a mask read ``node`` binds a :class:`MaskedRead`."""
    saved = getattr(b, "deferred_read", None)
    b.deferred_read = node
    try:
        yield
    finally:
        b.deferred_read = saved


def deferred_here(b, node, value) -> bool:
    """Whether ``value`` is the :class:`MaskedRead` that ``name = <node>`` binds."""
    return isinstance(value, MaskedRead) and getattr(b, "deferred_read", None) is node


def deferred(lowering, base, mask, node):
    """A :class:`MaskedRead` where ``node`` is the whole value of an assignment to a name."""
    if getattr(lowering.b, "deferred_read", None) is node and base.aval.known_shape is not None:
        return MaskedRead(base, mask, node.lineno)
    return None


def reduction_call(node) -> bool:
    """Whether ``node`` (a Call) is spelled as a reduction whose argument may read a mask:
    ``np.sum(...[...]...)``, ``(...[...]...).sum()``, or of a name (``np.max(y)``, which may
    hold a :class:`MaskedRead`)."""
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr not in REDUCTIONS:
        return False
    argument = node.args[0] if isinstance(func.value, ast.Name) and node.args else func.value
    return any(isinstance(n, (ast.Subscript, ast.Name)) for n in ast.walk(argument))


@contextlib.contextmanager
def collecting(b, active=True):
    """While a reduction's function and arguments are lowered: the mask reads they make (None
    where the call is not spelled as a reduction: then none is collected, and none from an
    enclosing reduction's argument either, so a read inside ``np.exp(...)`` of ``np.sum(...)``
    is collected by the sum, one inside ``np.cumsum`` refused)."""
    saved = getattr(b, "masked_reads", None)
    b.masked_reads = reads = MaskedReads(len(b.target)) if active else saved
    try:
        yield reads if active else None
    finally:
        b.masked_reads = saved


def read(lowering, base, mask, node):
    """``base[mask]`` inside a reduction's argument: the substituted full array (see the module
    docstring), or None where no reduction collects (the caller refuses the read)."""
    b = lowering.b
    reads = getattr(b, "masked_reads", None)
    shape, mshape = base.aval.known_shape, mask.aval.known_shape
    if reads is None or shape is None or mshape is None or tuple(shape[:len(mshape)]) != mshape \
            or not mshape:
        return None
    if reads.mask is not None and (shape != reads.shape
                                   or not _same_value(b.target, mask, reads.mask)):
        reads.other_mask = node
        return None
    reads.mask, reads.shape, reads.read = mask, shape, reads.read or node
    rest = tuple(shape[len(mshape):])
    spread = b.emit("reshape", (mask,), {"shape": mshape + (1,) * len(rest)}) if rest else mask
    n = int(np.prod(mshape))
    first = b.emit("argmax", (b.emit("reshape", (mask,), {"shape": (n,)}),))
    rows = b.emit("reshape", (base,), {"shape": (n, *rest)})
    chosen = b.emit("stop_gradient", (b.getitem(rows, [first], (("a", 0),)),))
    out = b.emit("where", (spread, base, chosen))
    reads.values.append(out)
    reads.spread = spread
    return out


def _same_value(nodes, a, b, depth=4) -> bool:
    """Whether ``a`` and ``b`` are one value: the same Value, or made by the same primitive from
    the same inputs (``x[x > 0] * x[x > 0]`` spells its mask twice)."""
    if a is b:
        return True
    if isinstance(a, Literal) and isinstance(b, Literal):
        return type(a.value) is type(b.value) and a.value == b.value
    if depth == 0 or not (isinstance(a, Value) and isinstance(b, Value)):
        return False
    made = {id(v): n for n in nodes for v in n.outputs}
    na, nb = made.get(id(a)), made.get(id(b))
    return (na is not None and nb is not None and na.prim == nb.prim and not na.regions
            and na.params == nb.params and len(na.inputs) == len(nb.inputs)
            and na.outputs.index(a) == nb.outputs.index(b)
            and all(_same_value(nodes, x, y, depth - 1) for x, y in zip(na.inputs, nb.inputs)))


def reduce(lowering, reads, name, x, args, kwargs):
    """The masked reduction ``name`` of ``x`` (the lowered argument), or None where ``x`` is not
    the elementwise image of the reads (the caller refuses the read)."""
    b = lowering.b
    if kwargs or args or not _elementwise_image(b, reads, x):
        return None
    name = {"amax": "max", "amin": "min"}.get(name, name)
    dtype = np.dtype(x.aval.dtype)
    if name in ("sum", "mean", "prod"):
        fill = 1 if name == "prod" else 0
        total = b.emit("sum" if name != "prod" else "prod",
                       (b.emit("where", (reads.spread, x, fill)),))
        if name != "mean":
            return total
        count = b.emit("sum", (reads.mask,))
        rest = int(np.prod(reads.shape[len(reads.mask.aval.known_shape):]))
        if rest != 1:
            count = b.emit("multiply", (count, rest))
        if dtype.kind == "f":
            count = b.emit("astype", (count,), {"dtype": dtype.name})
        return b.emit("divide", (total, count))
    lowest = name == "max"
    fill = (-np.inf if lowest else np.inf) if dtype.kind == "f" else (
        np.iinfo(dtype).min if lowest else np.iinfo(dtype).max) if dtype.kind in "iu" else (
        not lowest)
    nothing = b.emit("logical_not", (b.emit("any", (reads.mask,)),))
    full = {"max": "maximum", "min": "minimum"}[name]
    BuilderOps(b).fail_if(nothing, ValueError, f"zero-size array to reduction operation {full} "
                          "which has no identity")
    return b.emit(name, (b.emit("where", (reads.spread, x, fill)),))


def _elementwise_image(b, reads, x) -> bool:
    """Whether ``x`` comes from the reads through elementwise nodes only, each of whose other
    inputs is a number (a Literal or a 0-d value), keeping the reads' full shape."""
    if reads.other_mask is not None or not isinstance(x, Value):
        return False
    tainted = {id(v) for v in reads.values}
    for node in b.target[reads.start:]:
        touched = [i for i in node.inputs if isinstance(i, Value) and id(i) in tainted]
        if not touched:
            continue
        if node.regions or not (PRIMS[node.prim].family == "elementwise"
                                or node.prim in _ELEMENTWISE_SHAPES):
            return False
        for i in node.inputs:
            if isinstance(i, Value) and id(i) not in tainted and i.aval.known_shape != ():
                return False
        tainted.update(id(v) for v in node.outputs)
    return id(x) in tainted and x.aval.known_shape == reads.shape


def masked_call(lowering, reads, func, args, kwargs, method_type):
    """The call whose argument made mask reads: a masked reduction, or the located refusal."""
    if isinstance(func, method_type) and func.name in REDUCTIONS:
        name, x = func.name, func.base
    else:
        name = next((n for n in REDUCTIONS if getattr(np, n, None) is func), None)
        x, args = (args[0], args[1:]) if name is not None and args else (None, args)
    out = None if name is None else reduce(lowering, reads, name, x, list(args), dict(kwargs))
    if out is None:
        raise lowering.src.error(reads.other_mask or reads.read, *MASK_ERROR)
    return out
