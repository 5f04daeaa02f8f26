"""Who defines and who reads each value of a graph's forward computation, for the derivative
rules that look past their own node (:mod:`.shift_invariance`, :mod:`.logaddexp_idiom`).

Only top-level forward-phase nodes are indexed: a value read inside a region (a loop's or a
branch's body), or returned by the graph, counts as read by something the rules cannot see
through (``OPAQUE``), so any reasoning about its readers gives up. Adjoint nodes are ignored:
they read forward values but change no forward value, which is all these analyses speak of.
"""

from __future__ import annotations

from adcompiler.ir import Value, walk
from adcompiler.ir.builder import Builder

OPAQUE = None   # the reader recorded for a read inside a region or by the graph's outputs


class ForwardUses:
    """``producer(v)`` (the top-level forward node defining ``v``, else None) and
    ``readers(v)`` (the top-level forward nodes reading ``v``, ``OPAQUE`` for other reads)."""

    def __init__(self, graph):
        self.graph = graph
        self.nodes = [n for n in graph.nodes if n.phase == "forward"]
        self._producer, self._readers = {}, {}
        for node in self.nodes:
            for v in node.outputs:
                self._producer[v] = node
            for x in node.inputs:
                self._read(x, node)
            for inner in walk([node]):
                for x in (inner.inputs if inner is not node else ()):
                    self._read(x, OPAQUE)
                for x in (x for block in inner.regions for x in block.outputs):
                    self._read(x, OPAQUE)
        for x in graph.outputs:
            self._read(x, OPAQUE)

    def _read(self, x, reader):
        if isinstance(x, Value):
            self._readers.setdefault(x, []).append(reader)

    def producer(self, v):
        return self._producer.get(v) if isinstance(v, Value) else None

    def readers(self, v) -> list:
        return self._readers.get(v, [])

    def only_reader(self, v):
        """The one node reading ``v`` once, or None (several reads, an opaque one, none)."""
        readers = self.readers(v)
        return readers[0] if len(readers) == 1 else None

    def position(self, node) -> int:
        return self.nodes.index(node)


def forward_uses(ops):
    """The :class:`ForwardUses` of the graph ``ops`` emits into when ``ops`` is the compiler's
    Builder; None for the other ``ops`` namespaces (arrays on the tape, SymPy), where a rule
    sees no graph and keeps its plain form."""
    if not isinstance(ops, Builder):
        return None
    return ForwardUses(ops.graph)
