"""The verifier: checks the SSA invariants listed in :mod:`adcompiler.ir` and raises on the first.

Run after lowering and after every transform in tests; a failure is a compiler bug, never a
user error, so it raises :class:`IRError` (an AssertionError), not CompileError.
"""

from __future__ import annotations

from .graph import Literal, Value
from .primitives import PRIMS
from .shapes import infer


class IRError(AssertionError):
    pass


def verify(graph) -> None:
    defined = set()
    names = set()

    def define(v):
        if v in defined:
            raise IRError(f"{v} is defined twice")
        if v.name is not None:
            if v.name in names:
                raise IRError(f"the name {v.name!r} is used by two values")
            names.add(v.name)
        defined.add(v)

    for v in list(graph.params) + list(graph.consts):
        define(v)
    for node in graph.nodes:
        prim = PRIMS.get(node.prim)
        if prim is None:
            raise IRError(f"unknown primitive {node.prim!r}")
        if prim.arity is not None and len(node.inputs) != prim.arity:
            raise IRError(f"{node.prim} takes {prim.arity} inputs, got {len(node.inputs)}")
        for x in node.inputs:
            if isinstance(x, Value) and x not in defined:
                raise IRError(f"{x} is used by {node.prim} before it is defined")
            if not isinstance(x, (Value, Literal)):
                raise IRError(f"{node.prim} has an input that is neither a value nor a literal")
        expected = infer(node.prim, [x.aval for x in node.inputs],
                         [x.value if isinstance(x, Literal) else None for x in node.inputs],
                         node.params)
        if node.out.aval != expected:
            raise IRError(f"{node.prim} gives {node.out.aval}, but its shape rule says {expected}")
        for v in node.outputs:
            define(v)
    for v in graph.outputs:
        if isinstance(v, Value) and v not in defined:
            raise IRError(f"the output {v} is never defined")
