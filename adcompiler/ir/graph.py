"""Values, literals, nodes and graphs of the SSA IR; values carry abstract shapes and dtypes.
A graph prints in the stable text form whose grammar :mod:`adcompiler.ir` documents.

A :class:`Value` is defined once (by a parameter, a constant or a node) and identified by object
identity; its ``name`` is only a printing hint made unique per graph by :meth:`Graph.unique_name`.
Arithmetic operators on a value emit nodes into the active :class:`~adcompiler.ir.builder.Builder`
(:data:`ACTIVE`, which a Builder sets while it is entered), which is what lets one derivative
template run on IR values as well as on arrays. The same graph prints byte-identically in any
process: names come from the graph, attributes print sorted, nothing depends on ids or hashing
order.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

# The Builder that Value's operators emit into: set by ``with Builder(graph):``.
ACTIVE: contextvars.ContextVar = contextvars.ContextVar("adcompiler_builder", default=None)


def current_builder():
    b = ACTIVE.get()
    if b is None:
        raise RuntimeError("IR values can only be combined while a Builder is active")
    return b

SCALAR_KINDS = ("float", "int", "bool")


@dataclass(frozen=True)
class Aval:
    """What the compiler knows of a value before it runs: kind, dtype and (maybe) shape.

    ``kind`` is ``"array"`` for NumPy arrays (and NumPy scalars) or one of ``"float"``, ``"int"``,
    ``"bool"`` for Python scalars, or ``"list"`` for a Python list of arrays of ``shape`` (the
    residual stack of a while loop; a list of such lists, which a loop around a while loop
    stacks, has dtype ``"object"`` and its items' aval as ``shape[0]``). ``shape`` is None
    where unknown. ``dtype`` is a NumPy dtype name (Python scalars use their NumPy equivalent).
    A ``custom_vjp`` call (see :mod:`adcompiler.custom.vjp`) adds two kinds, of dtype ``"object"``:
    ``"tuple"``, a Python tuple whose ``shape`` holds its items' avals, and ``"opaque"``,
    residuals the compiler only passes along, whose ``shape`` records the avals of the call's
    inputs.
    """

    kind: str
    dtype: str
    shape: Optional[tuple] = None

    @property
    def is_scalar(self) -> bool:
        return self.kind in SCALAR_KINDS

    @property
    def ndim(self):
        if self.is_scalar:
            return 0
        return None if self.shape is None else len(self.shape)

    @property
    def known_shape(self):
        return () if self.is_scalar else self.shape

    @property
    def is_float(self) -> bool:
        if self.kind == "list" and self.dtype == "object":  # a list of lists: as its items
            return self.shape[0].is_float
        return np.dtype(self.dtype).kind in "fc"

    def __str__(self):
        if self.is_scalar:
            return self.kind
        if self.kind == "tuple":
            return f"tuple[{','.join(str(a) for a in self.shape)}]"
        if self.kind == "opaque":
            return "opaque"
        short = _SHORT_DTYPES.get(self.dtype, self.dtype)
        if self.kind == "list" and self.dtype == "object":
            return f"list[{self.shape[0]}]"
        if self.kind == "list":
            return f"list[{short}[{','.join(str(d) for d in self.shape)}]]"
        if self.shape is None:
            return f"{short}[?]"
        return f"{short}[{','.join(str(d) for d in self.shape)}]"

    @staticmethod
    def of(x) -> "Aval":
        """The abstract value of a concrete Python or NumPy object."""
        if isinstance(x, bool):
            return Aval("bool", "bool")
        if isinstance(x, int):
            return Aval("int", "int64")
        if isinstance(x, float):
            return Aval("float", "float64")
        arr = np.asarray(x) if not hasattr(x, "dtype") else x
        return Aval("array", np.dtype(arr.dtype).name, tuple(arr.shape))


_SHORT_DTYPES = {"float64": "f64", "float32": "f32", "float16": "f16", "int64": "i64",
                 "int32": "i32", "bool": "b1", "complex128": "c128", "complex64": "c64"}


@dataclass(eq=False)
class Value:
    """An SSA value. Identity is the object; ``name`` is a hint for printing and emitted code."""

    aval: Aval
    name: Optional[str] = None
    origin: Optional[str] = None  # the user's variable it came from, if any

    # Operators emit nodes into the active builder (see adcompiler.ir.builder).
    def _emit(self, prim, *args):
        return current_builder().emit(prim, args)

    def __add__(self, o): return self._emit("add", self, o)
    def __radd__(self, o): return self._emit("add", o, self)
    def __sub__(self, o): return self._emit("subtract", self, o)
    def __rsub__(self, o): return self._emit("subtract", o, self)
    def __mul__(self, o): return self._emit("multiply", self, o)
    def __rmul__(self, o): return self._emit("multiply", o, self)
    def __truediv__(self, o): return self._emit("divide", self, o)
    def __rtruediv__(self, o): return self._emit("divide", o, self)
    def __mod__(self, o): return self._emit("remainder", self, o)
    def __rmod__(self, o): return self._emit("remainder", o, self)
    def __floordiv__(self, o): return self._emit("floor_divide", self, o)
    def __rfloordiv__(self, o): return self._emit("floor_divide", o, self)
    def __pow__(self, o): return self._emit("power", self, o)
    def __rpow__(self, o): return self._emit("power", o, self)
    def __matmul__(self, o): return self._emit("matmul", self, o)
    def __rmatmul__(self, o): return self._emit("matmul", o, self)
    def __neg__(self): return self._emit("negative", self)

    @property
    def shape(self):
        return self.aval.known_shape

    @property
    def ndim(self):
        return self.aval.ndim

    @property
    def T(self):
        return self._emit("transpose", self)

    def __repr__(self):
        return f"Value({self.name or '?'}: {self.aval})"


@dataclass(frozen=True)
class Literal:
    """A Python scalar constant used directly as a node input."""

    value: Any

    @property
    def aval(self) -> Aval:
        return Aval.of(self.value)

    def __str__(self):
        return repr(self.value)


@dataclass(eq=False)
class Node:
    """One primitive application: ``outputs = prim[params](*inputs)``.

    ``source`` is the user's line this node came from (for ``# grad of:`` comments and errors);
    ``phase`` is ``"forward"`` for the user's computation and ``"adjoint"`` for derived code.
    """

    prim: str
    inputs: tuple
    params: dict
    outputs: tuple
    source: Optional[str] = None
    phase: str = "forward"
    regions: tuple = ()  # Blocks, for control flow (cond, loop)

    @property
    def out(self) -> Value:
        (v,) = self.outputs
        return v


@dataclass(eq=False)
class Block:
    """A region's body: ``params`` bound by the owning node, ``nodes``, and ``outputs``.

    A block may also read any value defined before it in program order (Python's function
    scope); see the control-flow section of :mod:`adcompiler.ir`.
    """

    params: list = field(default_factory=list)
    nodes: list = field(default_factory=list)
    outputs: list = field(default_factory=list)


def walk(nodes):
    """Every node in program order, descending into regions (a node comes before its blocks)."""
    for node in nodes:
        yield node
        for block in node.regions:
            yield from walk(block.nodes)


def readers(graph) -> dict:
    """Value -> the nodes reading it, in program order; None among them for each block output
    or graph output it is."""
    out: dict = {}
    for node in walk(graph.nodes):
        for x in node.inputs:
            out.setdefault(x, []).append(node)
        for block in node.regions:
            for x in block.outputs:
                out.setdefault(x, []).append(None)
    for x in graph.outputs:
        out.setdefault(x, []).append(None)
    return out


@dataclass(eq=False)
class Graph:
    """A function body: parameters, constants (arrays from closures and globals), nodes, outputs."""

    name: str
    params: list
    nodes: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    consts: dict = field(default_factory=dict)  # Value -> concrete array
    writes: dict = field(default_factory=dict)  # parameter name -> where the code writes into it
    array_result_error: object = None  # grad(grad(f)): shape -> the error saying the
                                       # inner gradient is an array (api.regradient)
    errstate: dict = field(default_factory=dict)  # np.errstate(...) the code runs under
    _names: set = field(default_factory=set, repr=False)

    def unique_name(self, base: str) -> str:
        """A name not yet used in this graph: ``base``, else ``base_1``, ``base_2``..."""
        base = base or "t"
        name, k = base, 0
        while name in self._names:
            k += 1
            name = f"{base}_{k}"
        self._names.add(name)
        return name

    def name_value(self, v: Value, base: str) -> Value:
        v.name = self.unique_name(base)
        return v

    def take_name(self, new: Value, old: Value) -> Value:
        """Give ``old``'s name to ``new`` (``old`` becomes unnamed): the final value gets the
        readable name when a value is wrapped (a cast, a conversion)."""
        new.name, old.name = old.name, None
        new.origin, old.origin = old.origin, None
        return new

    def __str__(self):
        return print_graph(self)


# ---- the text form ------------------------------------------------------------------------
def print_graph(graph) -> str:
    names = _Namer()
    params = ", ".join(f"{names(p)}: {p.aval}" for p in graph.params)
    lines = [f"graph {graph.name}({params}) {{"]
    for v in graph.consts:
        lines.append(f"  {names(v)}: {v.aval} = const")
    _print_nodes(graph.nodes, names, lines, "  ", top=True)
    lines.append("  return " + ", ".join(_atom(x, names) for x in graph.outputs))
    lines.append("}")
    return "\n".join(lines)


_BLOCK_NAMES = {"cond": ("then", "else"), "loop": ("body",), "while": ("test", "body"),
                "fused": ("expr",)}


def _print_nodes(nodes, names, lines, indent, top=False):
    phase = "forward"
    for node in nodes:
        if top and node.phase != phase:
            phase = node.phase
            lines.append(f"{indent}# {phase}")
        outs = ", ".join(f"{names(v)}: {v.aval}" for v in node.outputs)
        attrs = ""
        params = {k: v for k, v in node.params.items() if v is not None}
        if params:
            attrs = "[" + ", ".join(f"{k}={params[k]!r}" for k in sorted(params)) + "]"
        args = " ".join(_atom(x, names) for x in node.inputs)
        lhs = f"{outs} = " if outs else ""  # a raise_if check has no outputs
        lines.append(f"{indent}{lhs}{node.prim}{attrs} {args}".rstrip())
        for label, block in zip(_BLOCK_NAMES.get(node.prim, ()), node.regions):
            bparams = ", ".join(f"{names(p)}: {p.aval}" for p in block.params)
            lines.append(f"{indent}  {label}({bparams}):" if block.params
                         else f"{indent}  {label}:")
            _print_nodes(block.nodes, names, lines, indent + "    ")
            lines.append(f"{indent}    yield " + ", ".join(_atom(x, names) for x in block.outputs))


def _atom(x, names):
    return repr(x.value) if isinstance(x, Literal) else names(x)


class _Namer:
    """Names for printing: a value's own name, else %0, %1... in order of first appearance."""

    def __init__(self):
        self.anon = {}

    def __call__(self, v: Value) -> str:
        if v.name:
            return v.name
        if v not in self.anon:
            self.anon[v] = f"%{len(self.anon)}"
        return self.anon[v]
