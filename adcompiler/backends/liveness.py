"""Liveness for the emitter: where each value is read, in program order, and what gets inlined.

Invariants: ``reads[v]`` lists every read of ``v`` as ``(position, path)``; a read by an inlined
node counts where its expression lands; a read inside a loop body of a value defined outside the
loop counts at the loop's end and on the loop's own path (every later iteration reads it again,
whichever branch it takes); a block's yields are read at the
end of the block. ``path`` names the ``cond`` branches enclosing the read, so that reads in a
sibling branch, which never run together, do not conflict.
"""

from __future__ import annotations

from ..ir import Value


STATEMENTS = {"scatter_add", "index_add", "setitem"}  # written as statements, never inlined


class Liveness:
    def __init__(self, graph):
        self.pos, self.end, self.path = {}, {}, {}
        self.def_pos = {v: -1 for v in list(graph.params) + list(graph.consts)}
        self.uses, self.consumer = {}, {}
        self._raw = []           # (value, reader node or None, position, path, loops)
        self._counter = 0
        self._visit(graph.nodes, (), ())
        for x in graph.outputs:
            self._read(x, None, self._counter, (), ())
        self.inlined = {n.outputs[0] for n in self.pos if self._inlinable(n)}
        self.reads = self._effective_reads()

    # ---- the walk -----------------------------------------------------------------------------
    def _visit(self, nodes, path, loops):
        for node in nodes:
            p = self._counter
            self._counter += 1
            self.pos[node], self.path[node] = p, path
            for x in node.inputs:
                self._read(x, node, p, path, loops)
            inner_loops = loops + ((node,) if node.prim in ("loop", "while") else ())
            for b, block in enumerate(node.regions):
                inner_path = path + ((id(node), b),) if node.prim == "cond" else path
                for param in block.params:
                    self.def_pos[param] = p
                self._visit(block.nodes, inner_path, inner_loops)
                for i, x in enumerate(block.outputs):
                    # a loop stores its params' stacked values first thing in the body
                    at = p if _stored_at_top(node, block, i, x) else self._counter
                    self._read(x, None, at, inner_path, inner_loops)
                if node.prim == "loop" and node.params.get("stacked"):
                    # the stores ``S[k] = v`` at the body's end read its counter ``k`` there
                    self._read(block.params[0], None, self._counter, inner_path, inner_loops)
                self._counter += 1
            self.end[node] = self._counter - 1
            for v in node.outputs:
                self.def_pos[v] = p

    def _read(self, x, reader, position, path, loops):
        if not isinstance(x, Value):
            return
        self.uses[x] = self.uses.get(x, 0) + 1
        if reader is not None:
            self.consumer[x] = reader
        else:
            self.consumer.pop(x, None)  # a yield or a return is never inlined into
        self._raw.append((x, reader, position, path, loops))

    def _inlinable(self, node) -> bool:
        """An unnamed value read once, by a plain node of the same statement, is inlined."""
        if node.regions or node.prim in STATEMENTS or len(node.outputs) != 1:
            return False
        v = node.outputs[0]
        user = self.consumer.get(v)
        return (v.name is None and self.uses.get(v, 0) == 1 and user is not None
                and user.phase == node.phase and user.source == node.source
                and self.path[user] == self.path[node] and not user.regions)

    def _where(self, node):
        """Where a node's expression is evaluated: at its own statement, or its user's."""
        while node.outputs and node.outputs[0] in self.inlined:
            node = self.consumer[node.outputs[0]]
        return self.pos[node]

    def _effective_reads(self):
        reads = {}
        for x, reader, position, path, loops in self._raw:
            eff = self._where(reader) if reader is not None else position
            for loop in loops:  # outermost first
                if self.def_pos.get(x, -1) < self.pos[loop]:
                    # read again by every later iteration, whichever branch runs there: it
                    # conflicts with every write in the loop, not only this branch's
                    eff = max(eff, self.end[loop])
                    path = self.path[loop]
                    break
            reads.setdefault(x, []).append((eff, path))
        return reads

    # ---- queries ------------------------------------------------------------------------------
    def read_after(self, v, position, path) -> bool:
        """Whether ``v`` is read after ``position`` by code that can run with ``path``."""
        return any(eff > position and _compatible(p, path) for eff, p in self.reads.get(v, ()))


def _stored_at_top(node, block, i, x) -> bool:
    if node.prim not in ("loop", "while") or block is not node.regions[-1]:
        return False
    carried = len(node.outputs) - node.params.get("stacked", 0)
    return i >= carried and x in block.params


def _compatible(a, b) -> bool:
    """Two cond paths can run together unless they take different branches of one cond."""
    branches = dict(a)
    return all(branches.get(node, b_) == b_ for node, b_ in b)
