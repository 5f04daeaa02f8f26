"""The cotangents of a reverse sweep, in a dict from each value to its cotangent: adding one
in (``ct[x] += c``, folded into an ``index_add`` where ``c`` is a scatter or a row just made)
and naming it after the user's variable.

Invariant: a cotangent's name is ``d<x's name>`` (``dt1``, ``dt2``... for unnamed temporaries,
never two alike), its origin ``d<the user's variable>``; a number cotangent of a float32 value
is a float32 (a float64 seed would carry a float32 program's adjoint into float64).
"""

from __future__ import annotations

from ..ir import Literal, Value
from ..ir.builder import Builder


def accumulate(b: Builder, ct: dict, x: Value, c):
    """ct[x] += c, naming the result after the user's variable (dl1 for l1; dt1, dt2... for
    the cotangents of unnamed temporaries, so two temporaries never share a name)."""
    old = ct.get(x)
    if old is not None and _fresh_scatter(b, c):
        scatter = b.target.pop()  # old + scatter(g) is old with g added at the index
        c = b.emit("index_add", (old, *scatter.inputs), {"index": scatter.params["index"]})
    elif old is not None and _fresh_row(b, c):
        row = b.target.pop()  # old + (zeros with g at row k) is old with g added at row k
        b.target.pop()
        c = b.emit("index_add", (old, *row.inputs[1:]), {"index": row.params["index"]})
    elif old is not None:
        c = b.emit("add", (old, c))
    if isinstance(c, Value) and c.name is None:
        name_cotangent(b, c, x)
    ct[x] = c


def _fresh_scatter(b: Builder, c) -> bool:
    """Whether ``c`` is the scatter_add just emitted (nothing else can have read it yet)."""
    last = b.target[-1] if b.target else None
    return (last is not None and last.prim == "scatter_add" and last.outputs[0] is c
            and c.name is None)  # a named one is already some value's cotangent


def _fresh_row(b: Builder, c) -> bool:
    """Whether ``c`` is a list's cotangent just emitted for one read ``xs[k]``:
    ``setitem(zeros_like(xs), g, k)``, which nothing else can have read yet."""
    if len(b.target) < 2 or c is None or getattr(c, "name", 1) is not None:
        return False
    zeros, row = b.target[-2:]
    return (row.prim == "setitem" and row.outputs[0] is c and zeros.prim == "zeros_like"
            and row.inputs[0] is zeros.outputs[0] and c.aval.kind == "list")


def name_cotangent(b: Builder, c: Value, x: Value) -> Value:
    """Name ``c``, the cotangent of ``x``: ``d<x's name>``, and ``d<the user's variable>`` as
    its origin, which the emitter keeps whole (``dw_1`` for a parameter ``w_1``)."""
    b.graph.name_value(c, cotangent_name(b, x))
    if x.origin:
        c.origin = "d" + x.origin
    return c


def cotangent_name(b: Builder, x: Value) -> str:
    if x.name:
        return "d" + x.name
    names = b.temp_cotangents
    if x not in names:
        k = len(names) + 1
        while b.graph.unique_name(f"dt{k}") != f"dt{k}":
            k += 1
        names[x] = f"dt{k}"
    return names[x]


def typed_number(b: Builder, value, aval):
    """The number ``value`` as a cotangent of a float array of ``aval``'s dtype, to be
    broadcast: the Literal itself for float64 (NumPy's default), else ``np.float32(value)``
    (a float64 seed would carry the adjoint of a float32 program into float64)."""
    value = Literal(float(value))
    if aval.kind != "array" or aval.dtype == "float64" or not aval.is_float:
        return value
    return b.emit("astype", (value,), {"dtype": aval.dtype})
