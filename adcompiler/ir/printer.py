"""The stable text form of a graph (grammar in :mod:`adcompiler.ir`).

Invariant: the same graph prints byte-identically in any process: names come from the graph,
attributes print sorted, nothing depends on ids or hashing order.
"""

from __future__ import annotations

from .graph import Literal, Value


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
            lines.append(f"{indent}  {label}({bparams}):" if block.params else f"{indent}  {label}:")
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
