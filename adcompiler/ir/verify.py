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
    _check_nodes(graph.nodes, defined, define)
    for v in graph.outputs:
        if isinstance(v, Value) and v not in defined:
            raise IRError(f"the output {v} is never defined")


def _check_nodes(nodes, defined, define):
    for node in nodes:
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
        if node.regions:
            _check_regions(node, defined, define)
        elif node.prim == "raise_if":  # a run-time check: no outputs
            if node.outputs:
                raise IRError("raise_if has outputs")
        else:
            expected = infer(node.prim, [x.aval for x in node.inputs],
                             [x.value if isinstance(x, Literal) else None for x in node.inputs],
                             node.params)
            if node.out.aval != expected:
                raise IRError(f"{node.prim} gives {node.out.aval}, but its shape rule says "
                              f"{expected}")
        for v in node.outputs:
            define(v)


def _check_regions(node, defined, define):
    """Blocks see earlier values; each block's yields match what the node declares."""
    for block in node.regions:
        for p in block.params:
            define(p)
        _check_nodes(block.nodes, defined, define)
        for x in block.outputs:
            if isinstance(x, Value) and x not in defined:
                raise IRError(f"{node.prim} block yields {x} before defining it")
    if node.prim in ("cond", "fused"):
        for block in node.regions:
            got = [x.aval for x in block.outputs]
            if got != [v.aval for v in node.outputs]:
                raise IRError(f"a cond block yields {got}, the node declares "
                              f"{[v.aval for v in node.outputs]}")
