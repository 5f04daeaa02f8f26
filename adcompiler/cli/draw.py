"""Draw a gradient's forward and backward graphs in Graphviz DOT, as the first seed's figures do.

Invariants: operations are boxes, leaves (the inputs) green ellipses; the backward graph shows
the gradient flowing from the seed to the leaves (red edges), with the forward values it reads
as grey dashed references; control flow (nodes owning regions) is a cluster labelled with its
header, holding its blocks. A jvp gets a tangent graph instead of the backward one. The DOT text
is deterministic; SVG and PNG need Graphviz's ``dot``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from ..ir import Literal, Value, walk
from ..ir.primitives import PRIMS

GREEN, FORWARD, ADJOINT, REFERENCE = "#a8e6a1", "#dde8f6", "#fbe0c6", "#f2f2f2"
FLOW = "#c0392b"
FORMATS = ("dot", "svg", "png")


def dot_source(forward, backward, wrt, title) -> str:
    """A digraph with the ``forward`` graph (as lowered) and the ``backward`` one (the adjoint
    part of the compiled graph), side by side; ``wrt`` names the leaves gradients flow to."""
    lines = ['digraph adcompiler {',
             f'  graph [label={_q(title)}, labelloc=t, fontname="Helvetica", nodesep=0.3, '
             'ranksep=0.35];',
             '  node [fontname="Helvetica", fontsize=11];',
             '  edge [fontname="Helvetica", fontsize=9, arrowsize=0.7];']
    lines += _Drawer("f", wrt).forward(forward)
    if any(n.phase == "tangent" for n in walk(backward.nodes)):
        lines += _Drawer("b", wrt).tangent(backward)
    else:
        lines += _Drawer("b", wrt).backward(backward)
    return "\n".join(lines + ["}"]) + "\n"


class _Drawer:
    """Writes one graph as a cluster: ids ``<prefix><n>``; ``ids`` maps values to the node
    drawing them."""

    def __init__(self, prefix, wrt):
        self.prefix, self.wrt = prefix, tuple(wrt)
        self.ids: dict = {}
        self.flowing: set = set()   # ids of nodes drawn from the graph's own nodes
        self.count = 0
        self.lines: list = []
        self.edges: list = []       # written after the clusters: an edge inside a cluster
                                    # would pull both of its ends into it

    def new_id(self):
        self.count += 1
        return f"{self.prefix}{self.count}"

    def emit(self, text, depth):
        self.lines.append("  " * depth + text)

    # ---- the two graphs -----------------------------------------------------------------------
    def forward(self, graph):
        self.emit("subgraph cluster_forward {", 1)
        self.emit('label="forward graph"; style=rounded; color="#8a8a8a";', 2)
        for p in graph.params:
            self.leaf(p, p.name, 2, bold=p.name in self.wrt)
        for v in graph.consts:
            self.ids[v] = self.shape_node(_value_label(v), "ellipse", REFERENCE, 2)
        self.nodes(graph.nodes, 2, FORWARD)
        for v in graph.outputs:
            out = self.shape_node(f"result\n{v.aval}", "doubleoctagon", "white", 2)
            self.edge(v, out, 2)
        self.emit("}", 1)
        return self.lines + self.edges

    def backward(self, graph):
        self.emit("subgraph cluster_backward {", 1)
        self.emit('label="backward graph (the gradient flows down to the leaves)"; '
                  'style=rounded; color="#8a8a8a";', 2)
        seed = self.shape_node(f"{graph.name}\n(seed)", "doubleoctagon", "white", 2)
        self.ids.update({p: seed for p in graph.params if p.name == "cotangent"})
        adjoint = [n for n in graph.nodes if n.phase == "adjoint"]
        self.nodes(adjoint, 2, ADJOINT)
        for name, v in zip(self.wrt, graph.outputs[len(graph.outputs) - len(self.wrt):]):
            leaf = self.shape_node(f"{name}\n(gradient)", "ellipse", GREEN, 2)
            self.edge(v, leaf, 2, label=getattr(v, "name", None) or "")
        for node in _seeded(adjoint, self.ids, self.flowing, _return_line(graph)):
            self.edges.append(f'  {seed} -> {self.ids[node.outputs[0]]} [color="{FLOW}", '
                              'penwidth=1.6];')
        self.emit("}", 1)
        return self.lines + self.edges

    def tangent(self, graph):
        """Forward mode: the tangents flow from the inputs' (``x_dot``) to the result's."""
        self.emit("subgraph cluster_backward {", 1)
        self.emit('label="tangent graph (forward mode: tangents flow from the inputs to the '
                  'result)"; style=rounded; color="#8a8a8a";', 2)
        for p in graph.params:
            if p.name in {f"{w}_dot" for w in self.wrt}:
                self.leaf(p, p.name, 2)
                self.flowing.add(self.ids[p])
        self.nodes([n for n in graph.nodes if n.phase == "tangent"], 2, ADJOINT)
        out = self.shape_node(f"result tangent\n{graph.outputs[-1].aval}", "doubleoctagon",
                              "white", 2)
        self.edge(graph.outputs[-1], out, 2)
        self.emit("}", 1)
        return self.lines + self.edges

    # ---- pieces -------------------------------------------------------------------------------
    def leaf(self, v, label, depth, bold=False):
        extra = ", penwidth=2" if bold else ""
        self.ids[v] = self.shape_node(f"{label}\n{v.aval}", "ellipse", GREEN, depth, extra)

    def shape_node(self, label, shape, fill, depth, extra="", style="filled"):
        node_id = self.new_id()
        self.emit(f'{node_id} [label={_q(label)}, shape={shape}, style="{style}", '
                  f'fillcolor="{fill}"{extra}];', depth)
        return node_id

    def nodes(self, nodes, depth, fill):
        for node in nodes:
            if node.regions:
                self.region_node(node, depth, fill)
                continue
            node_id = self.shape_node(_node_label(node), "box", fill, depth,
                                      style="rounded,filled")
            self.connect(node, node_id, depth)

    def connect(self, node, node_id, depth):
        for x in node.inputs:
            if isinstance(x, Value):
                self.edge(x, node_id, depth)
        for v in node.outputs:
            self.ids[v] = node_id
        self.flowing.add(node_id)

    def region_node(self, node, depth, fill):
        """Control flow: a cluster labelled with the header, holding each block's cluster."""
        self.emit(f"subgraph cluster_{self.new_id()} {{", depth)
        self.emit(f'label={_q(_header(node))}; style="dashed"; color="#5b5b5b";', depth + 1)
        head = self.shape_node(_node_label(node), "box3d", fill, depth + 1)
        self.connect(node, head, depth + 1)
        for label, block in zip(_BLOCK_NAMES.get(node.prim, ()), node.regions):
            self.emit(f"subgraph cluster_{self.new_id()} {{", depth + 1)
            self.emit(f'label={_q(label)}; style="dotted";', depth + 2)
            for p in block.params:
                self.ids[p] = self.shape_node(_value_label(p), "ellipse", "white", depth + 2)
                if self.prefix == "b" and p.aval.is_float:  # a gradient carried by the block
                    self.flowing.add(self.ids[p])
                self.edges.append(f"  {head} -> {self.ids[p]} [style=dotted, arrowhead=none];")
            self.nodes(block.nodes, depth + 2, fill)
            out = self.shape_node(_BLOCK_RESULTS.get(node.prim, "result"), "plaintext",
                                  "white", depth + 2)
            for x in block.outputs:
                if isinstance(x, Value):
                    self.edge(x, out, depth + 2)
            self.emit("}", depth + 1)
        self.emit("}", depth)

    def edge(self, v, target, depth, label=""):
        """An edge from where ``v`` is drawn; a value not drawn here (a forward value the
        backward graph reads) gets a grey dashed reference node."""
        flow = self.prefix == "b" and v in self.ids and (
            self.ids[v] in self.flowing or getattr(v, "name", None) == "cotangent")
        if v not in self.ids:
            shown = getattr(v, "name", None) or f"a forward value\n{v.aval}"
            self.ids[v] = self.shape_node(shown, "ellipse", REFERENCE, depth,
                                          ', fontcolor="#555555"', style="dashed,filled")
        style = f'color="{FLOW}", penwidth=1.6' if flow else \
            ('style=dashed, color="#888888"' if self.prefix == "b" else "")
        attrs = ", ".join(a for a in (style, f"label={_q(label)}" if label else "") if a)
        self.edges.append(f"  {self.ids[v]} -> {target}" + (f" [{attrs}]" if attrs else "") + ";")


def _seeded(adjoint, ids, flowing, return_line):
    """The adjoint nodes the seed (d result = 1, folded into the code) flows into: those with a
    float result that read no other gradient, where the gradient enters the backward graph (the
    first steps of the chain rule, ``d l4 = l3`` for ``l4 = l2 * l3``); not the zeros that start
    an accumulation, which no gradient reaches yet."""
    for node in walk(adjoint):
        if node.regions or not node.outputs or any(ids.get(x) in flowing for x in node.inputs):
            continue
        if not node.outputs[0].aval.is_float or PRIMS[node.prim].family == "creation":
            continue
        yield node


def _return_line(graph):
    source = getattr(graph, "source", None)
    try:
        return source.text(source.tree.body[-1])
    except AttributeError:
        return None


_BLOCK_NAMES = {"cond": ("then", "else"), "loop": ("body",), "while": ("test", "body"),
                "fused": ("expr",)}
# what a block's outputs become, drawn as its last node
_BLOCK_RESULTS = {"loop": "to the next step", "while": "to the next step",
                  "cond": "the branch's values", "fused": "the chain's value"}


def _header(node) -> str:
    """What a node computes, in the user's terms: ``hs[t]`` for an index, ``for loop, 3 steps``
    for a loop, ``sum over the broadcast axes`` for the adjoint of broadcasting; the primitive
    and its parameters otherwise (``multiply``, ``mean[axis=0]``)."""
    described = _DESCRIBED.get(node.prim)
    if described is not None:
        return described(node)
    params = {k: v for k, v in node.params.items() if v is not None}
    attrs = ", ".join(f"{k}={params[k]!r}" for k in sorted(params))
    return f"{node.prim}[{attrs}]" if attrs else node.prim


def _index(node) -> str:
    names = [getattr(x, "name", None) or "?" for x in node.inputs[1:]]
    items = []
    for item in node.params.get("index", ()):
        tag = item[0]
        items.append(str(item[1]) if tag == "i" else names[item[1]] if tag in "au" else
                     "None" if tag == "n" else "..." if tag == "e" else
                     ":".join("" if v is None else str(v) for v in item[1:]).rstrip(":") or ":")
    return f"{getattr(node.inputs[0], 'name', None) or 'x'}[{', '.join(items)}]"


def _loop(node) -> str:
    steps = next((x.value for x in node.inputs if isinstance(x, Literal)), None)
    kind = "the loop's adjoint, its steps last to first" if node.params.get("reverse") \
        else "for loop"
    return kind + (f", {steps} steps" if isinstance(steps, int) else "")


_DESCRIBED = {
    "getitem": _index,
    "sum_to": lambda n: f"sum over the broadcast axes, to {n.params.get('shape')}",
    "to_float": lambda n: "float()",
    "loop": _loop,
    "while": lambda n: "while loop",
    "cond": lambda n: "if",
    "fused": lambda n: "fused elementwise chain",
}


def _node_label(node) -> str:
    args = [repr(x.value) for x in node.inputs if isinstance(x, Literal)]
    if node.prim in _DESCRIBED:
        args = []   # (a loop's trip count is in its description)
    head = _header(node) + (" " + " ".join(args) if args else "")
    return "\n".join([head] + [_value_label(v) for v in node.outputs])


def _value_label(v) -> str:
    return f"{v.name}: {v.aval}" if v.name else str(v.aval)


def _q(text) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# ---- files -----------------------------------------------------------------------------------
def write(dot_text: str, path: str):
    """Write ``dot_text`` to ``path``: as is for .dot, through Graphviz for .svg and .png."""
    fmt = os.path.splitext(path)[1].lstrip(".").lower()
    if fmt not in FORMATS:
        raise ValueError(f"cannot draw to {path!r}: the file name must end in .dot, .svg or .png")
    if fmt == "dot":
        write_atomically(path, dot_text.encode())
        return
    dot = shutil.which("dot")
    if dot is None:
        raise ValueError(f"drawing {fmt.upper()} needs Graphviz's `dot` program, which is not "
                         "installed (apt-get install graphviz, brew install graphviz, or conda "
                         "install graphviz); or write a .dot file")
    extra = ["-Gdpi=150"] if fmt == "png" else []
    run = subprocess.run([dot, f"-T{fmt}", *extra], input=dot_text.encode(),
                         capture_output=True, timeout=120)
    if run.returncode != 0:
        raise ValueError(f"Graphviz failed: {run.stderr.decode(errors='replace').strip()}")
    write_atomically(path, run.stdout)


def write_atomically(path, data: bytes):
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``: never torn."""
    directory = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile(dir=directory, prefix=".tmp-", delete=False) as fh:
        fh.write(data)
    try:
        os.chmod(fh.name, 0o644)
        os.replace(fh.name, path)
    except BaseException:
        os.unlink(fh.name)  # no temporary file left behind
        raise
