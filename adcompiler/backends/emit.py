"""Emit a graph as a readable Python function for NumPy (or CuPy), rendered with astor.

Invariants: the source imports only the array module (and math when used), defines any helper it
calls, and is byte-identical for identical graphs. Values keep the user's names; an unnamed
temporary used once is inlined into its user's expression; each adjoint block is preceded by a
``# grad of: <the user's line>`` comment.
"""

from __future__ import annotations

import ast
import keyword

import astor

from ..ir import Literal, Value
from .expressions import const, node_expr, scatter_statements

RESERVED = {"np", "cp", "cupyx", "math", "float", "_sum_to"}

_HELPERS = {"_sum_to": '''
def _sum_to(g, shape):
    """Sum g over the axes broadcasting added or stretched, so that it has `shape`."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, d in enumerate(shape) if d == 1 and g.shape[i + lead] != 1)
    return g.sum(axis=axes, keepdims=True).reshape(shape)
'''}


class Emitter:
    def __init__(self, graph, xp_name="np"):
        self.graph, self.xp = graph, xp_name
        self.uses, self.consumer = _count_uses(graph)
        self.inlined = {n.outputs[0] for n in graph.nodes if self._inlinable(n)}
        self.last_use = self._last_uses()
        self.names: dict = {}      # Value -> Python name
        self.holder: dict = {}     # Python name -> the Value it currently holds
        self.taken: set = set(RESERVED)
        self.inline: dict = {}     # Value -> AST expression, for values inlined into their user

    def _inlinable(self, node) -> bool:
        """An unnamed value used once, by a node of the same statement, is written inline."""
        v = node.outputs[0]
        user = self.consumer.get(v)
        return (v.name is None and self.uses.get(v, 0) == 1 and node.prim != "scatter_add"
                and user is not None and user.phase == node.phase and user.source == node.source)

    def _last_uses(self) -> dict:
        """Statement index of each value's last read; an inlined read counts where it lands."""
        nodes = self.graph.nodes
        where = {}
        for i in range(len(nodes) - 1, -1, -1):
            v = nodes[i].outputs[0]
            where[nodes[i]] = where[self.consumer[v]] if v in self.inlined else i
        last = {}
        for node in nodes:
            for x in node.inputs:
                if isinstance(x, Value):
                    last[x] = max(last.get(x, -1), where[node])
        for x in self.graph.outputs:
            if isinstance(x, Value):
                last[x] = len(nodes)
        return last

    # ---- names --------------------------------------------------------------------------------
    def name(self, v: Value, at=None) -> str:
        """``v``'s Python name: the user's name when free. At statement ``at``, a value named
        after a dead one (``dl1_1`` after ``dl1``'s last read) takes that name over, so
        accumulation reads ``dl1 = dl1 + dl2``."""
        if v in self.names:
            return self.names[v]
        if v.name is None:  # a temporary: t1, t2, ... never shared with another value
            return self._fresh(v, "t")
        base = _base(v.name)
        if keyword.iskeyword(base) or base in RESERVED or not base.isidentifier():
            base = base + "_"
        old = self.holder.get(base)
        reuse = at is not None and old is not None and self.last_use.get(old, -1) <= at
        n, k = base, 0
        while n in self.taken and not reuse:
            k += 1
            n = f"{base}_{k}"
        self.taken.add(n)
        self.names[v], self.holder[n] = n, v
        return n

    def _fresh(self, v, prefix):
        k = 1
        while f"{prefix}{k}" in self.taken:
            k += 1
        n = f"{prefix}{k}"
        self.taken.add(n)
        self.names[v] = n
        return n

    def atom(self, x):
        if isinstance(x, Literal):
            return const(x.value)
        if x in self.inline:
            return self.inline.pop(x)
        return ast.Name(self.name(x), ast.Load())

    # ---- statements ---------------------------------------------------------------------------
    def body(self):
        """Lines of the function body, with ``# grad of:`` comments over adjoint blocks."""
        lines, group = [], None
        for i, node in enumerate(self.graph.nodes):
            args = [self.atom(x) for x in node.inputs]
            if node.outputs[0] in self.inlined:
                self.inline[node.outputs[0]] = node_expr(node, args, self.xp)
                continue
            if node.phase == "adjoint" and node.source and node.source != group:
                group = node.source
                lines.append(f"# grad of: {node.source}")
            target = self.name(node.outputs[0], at=i)
            if node.prim == "scatter_add":
                stmts = scatter_statements(node, target, args, self.xp)
            else:
                stmts = [ast.Assign([ast.Name(target, ast.Store())],
                                    node_expr(node, args, self.xp))]
            lines.extend(_render(s) for s in stmts)
        outs = [self.atom(x) for x in self.graph.outputs]
        ret = outs[0] if len(outs) == 1 else ast.Tuple(outs, ast.Load())
        lines.append(_render(ast.Return(ret)))
        return lines

    def helpers(self):
        shapes_unknown = any(n.prim == "sum_to" and n.inputs[0].aval.known_shape is None
                             for n in self.graph.nodes)
        return [_HELPERS["_sum_to"].strip("\n")] if shapes_unknown else []


def _base(name):
    """The user's name behind an SSA name: ``dl1`` for ``dl1_2``; ``t`` for a temporary."""
    if not name:
        return "t"
    head, _, tail = name.rpartition("_")
    return head if head and tail.isdigit() else name


def _render(stmt) -> str:
    # One statement per line: astor's pretty-printer would wrap long lines mid-call.
    return astor.to_source(stmt, pretty_source="".join).rstrip("\n")


def _count_uses(graph):
    """How often each value is read, and by which node (the last one, for single uses)."""
    uses, consumer = {}, {}
    for node in graph.nodes:
        for x in node.inputs:
            if isinstance(x, Value):
                uses[x] = uses.get(x, 0) + 1
                consumer[x] = node
    for x in graph.outputs:
        if isinstance(x, Value):
            uses[x] = uses.get(x, 0) + 1
            consumer.pop(x, None)
    return uses, consumer


def emit_function(graph, fname: str, arg_names: list, xp_name="np", doc=None):
    """The source of ``def fname(*arg_names): ...`` computing ``graph``, plus its helpers.

    ``arg_names`` lists every parameter of the user's function; those the graph traces bind
    to its parameters by name, the others were folded in while compiling. Constants are read
    from module-level names the caller binds (see :func:`constant_names`).
    """
    em = Emitter(graph, xp_name)
    for p in graph.params:
        assert em.name(p) == p.name, f"parameter {p.name!r} must keep its name"
    for v in graph.consts:
        em.name(v)
    lines = em.body()
    header = f"def {fname}({', '.join(arg_names)}):"
    doc_lines = [f'    """{doc}"""'] if doc else []
    body = "\n".join(doc_lines + ["    " + ln if ln else ln for ln in
                                  "\n".join(lines).split("\n")])
    module_lines = em.helpers()
    uses_math = any(n.params.get("py") for n in graph.nodes)
    return "\n\n\n".join(module_lines + [header + "\n" + body]) + "\n", \
        {em.name(v): a for v, a in graph.consts.items()}, uses_math
