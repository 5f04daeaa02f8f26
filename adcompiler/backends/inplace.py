"""In-place updates for the emitter: which arrays the generated code may overwrite, and how.

An update ``acc[i] = v``, ``acc[i] += g`` or a sum ``acc + g`` may be written in place on
``acc``'s array only if this code made that array (a fresh node: never a caller's array or a
constant, never a planned buffer) and no value that may hold the same array is read afterwards.
Values hold one array through views (``y = x.T``) and through slots, which are plain Python
names: a branch's yield and the ``if``'s result; a loop's initial value, its body's param, its
next value and its result; a residual appended to a list (the list keeps the array itself,
where an array stack copies it). Two slots of one loop whose next values may be one array hold
one array from the next iteration on (the IR has value semantics, so a pass or a tangent rule
may make two names one value: the tangent of ``u = u_next.copy()`` is ``u_next``'s tangent
itself). Invariant: an update is written in place only when none of those values is read after
it; otherwise it works on a copy, so no other name sees the change.
"""

from __future__ import annotations

import ast

from ..ir import Value, walk
from ..ir.primitives import PRIMS
from ..ir.aliasing import fresh, is_view
from .expressions import accumulate_statements, assign_statements, read_names

_UPDATES = {"index_add", "setitem"}   # update their first input; ``add`` either input


class Sharing:
    """May-alias facts of a graph: :meth:`aliases`, :meth:`slots`, and each loop body's
    carried params. ``rows``: the stacked values computed into their stack's row
    (:func:`~adcompiler.backends.planner.stack_rows`), each one with its stack."""

    def __init__(self, graph, rows=None):
        self.copied: dict = {}   # value -> the slots it is stored under (phi: the same array)
        self.kept: dict = {}     # value -> views of it, and lists it is appended to
        self.carried: dict = {}  # body param -> (loop node, initial value, next value, slot)
        self.members: dict = {}  # body param -> (itself, while-test param or None, result)
        self.joined: dict = {}   # body param -> the params of slots sharing its array
        self.entries: set = set()  # loop params and while-test params: a slot on entry
        self.yields: dict = {}   # (yielded value, the if's result) -> [(if's id, branch)]
        producer = {v: n for n in walk(graph.nodes) for v in n.outputs}
        for node in walk(graph.nodes):
            if is_view(node):
                _add(self.kept, node.inputs[0], [node.outputs[0]])
            if node.prim == "cond":
                for b, block in enumerate(node.regions):
                    for x, out in zip(block.outputs, node.outputs):
                        _add(self.copied, x, [out])
                        self.yields.setdefault((x, out), []).append((id(node), b))
            elif node.prim in ("loop", "while"):
                self._loop(node)
        for x, (stack, _) in (rows or {}).items():  # computed into its stack's row: a view
            _add(self.kept, x, [stack])
            _add(self.kept, stack, [x])
        self._join_shared_slots(producer)
        for node in walk(graph.nodes):
            if node.prim == "cond":
                self._join_shared_results(node, producer)
        for p, (_, _, nxt, _) in self.carried.items():
            # what keeps one iteration's next value (a residual list, a view, through another
            # result of an ``if``) holds the array the param has in the next iteration: an
            # update of the param in place would change it
            if isinstance(nxt, Value):
                _add(self.kept, p, reach(nxt, frozenset(), (self.kept,))[1:])

    def _join_shared_slots(self, producer):
        """Two carried slots of one loop whose next values may be one array (a tangent
        ``u_dot = u_next_dot``, where the primal ``u = u_next.copy()`` copies) hold one array
        in every later iteration and after the loop: each slot's param (and while-test param)
        and result is an alias of the other's, so an update of one in place is seen to change
        the other where that is read later."""
        loops: dict = {}
        for p, (loop, _, nxt, _) in self.carried.items():
            loops.setdefault(id(loop), []).append((p, sources(nxt, producer)))
        for slots in loops.values():
            for i, (p, held) in enumerate(slots):
                for q, other in slots[:i]:
                    if held & other:
                        self._join(p, q)
                        self.joined.setdefault(p, set()).add(q)
                        self.joined.setdefault(q, set()).add(p)

    def _join_shared_results(self, node, producer):
        """Two results of one ``if`` that a branch yields as one array (``v2_taken = v2``
        beside ``v2``'s own result, in a loop guarded by ``if not done``) hold one array: each
        is an alias of the other (what keeps one, a residual list, keeps the other's array)."""
        arrays = [j for j, out in enumerate(node.outputs) if out.aval.kind in ("array", "list")]
        held = [[self._widen(sources(block.outputs[j], producer)) for j in arrays]
                for block in node.regions]
        for i, a in enumerate(arrays):
            for k, b in enumerate(arrays[:i]):
                if any(branch[i] & branch[k] for branch in held):
                    _add(self.kept, node.outputs[a], [node.outputs[b]])
                    _add(self.kept, node.outputs[b], [node.outputs[a]])

    def _widen(self, values: set) -> set:
        """``values`` and the params of the slots that share a param's array among them."""
        return values.union(*(self.joined.get(v, ()) for v in values))

    def _join(self, a, b):
        """Make each member of carried slot ``a`` (param, while-test param, result) and the
        same member of slot ``b`` aliases of each other."""
        for x, y in zip(self.members[a], self.members[b]):
            if x is not None and y is not None:
                _add(self.kept, x, [y])
                _add(self.kept, y, [x])

    def _loop(self, node):
        """A carried slot is one name for the initial value, the params of the body (and of
        a while's test), each next value and the result; an appended residual stays shared."""
        body = node.regions[-1]
        params = body.params[1:] if node.prim == "loop" else body.params
        inits = node.inputs[1:] if node.prim == "loop" else node.inputs
        tests = node.regions[0].params if node.prim == "while" else [None] * len(params)
        for p, t, init, nxt, out in zip(params, tests, inits, body.outputs, node.outputs):
            slot = frozenset(v for v in (p, t, out) if v is not None)
            self.carried[p] = (node, init, nxt, slot)
            self.members[p] = (p, t, out)
            self.entries.update(v for v in (p, t) if v is not None)
            _add(self.copied, init, slot)
            _add(self.copied, nxt, slot)
        carried = len(node.outputs) - node.params.get("stacked", 0)
        for x, stack in zip(body.outputs[carried:], node.outputs[carried:]):
            if stack.aval.kind == "list":
                _add(self.kept, x, [stack])

    def slot_of(self, loop, out):
        """(body param, initial value, next value) of the carried slot whose result is ``out``,
        or None where ``out`` is a stacked result."""
        for p, (node, init, nxt, slot) in self.carried.items():
            if node is loop and out in slot:
                return p, init, nxt
        return None

    def aliases(self, v, skip=frozenset(), path=()) -> list:
        """``v`` and every value that may hold its array, transitively, except those in
        ``skip`` (and what only they lead to). From code on ``path`` (the branches it is in),
        a sibling branch's yield never runs: ``dx[i] += g`` in the ``then`` of an ``if``
        whose ``else`` yields ``dx`` as it is."""
        taken = dict(path)
        cut = {edge for edge, where in self.yields.items()
               if all(c in taken and taken[c] != b for c, b in where)}
        return reach(v, skip, (self.copied, self.kept), cut=cut)

    def slots(self, v) -> list:
        """``v`` and the slots it is stored under, transitively: names that, read after ``v``
        is made, hold ``v`` (or a later value of the same slot). The walk stops at a loop's
        params: what they are stored under in the body (a branch's result, an inner loop's
        slot) holds the slot's value on entry to this iteration, the array before ``v``."""
        return reach(v, frozenset(), (self.copied,), stop=self.entries)


def sources(x, producer) -> set:
    """``x`` and the values whose very array ``x`` may be: what it views, what a branch's
    result yields on each path, what an inner loop's carried result starts from or ends with,
    what ``np.asarray`` or a user's custom function may pass on. Two values may share an array
    when their sources meet."""
    out, todo = set(), [x]
    while todo:
        v = todo.pop()
        if not isinstance(v, Value) or v in out:
            continue
        out.add(v)
        node = producer.get(v)
        if node is None:
            continue
        if is_view(node) or node.prim == "asarray":
            todo.append(node.inputs[0])
        elif getattr(PRIMS.get(node.prim), "family", None) == "custom":
            todo.extend(node.inputs)  # stop_gradient, a user's function: may return an input
        elif node.prim == "cond":
            j = node.outputs.index(v)
            todo.extend(block.outputs[j] for block in node.regions)
        elif node.prim in ("loop", "while"):
            first, body = (1 if node.prim == "loop" else 0), node.regions[-1]
            j = node.outputs.index(v)
            if j < len(body.params) - first:  # a carried result, not a stacked one
                todo.extend((node.inputs[first + j], body.outputs[j]))
    return out


def _add(edges, x, holders):
    if isinstance(x, Value):
        edges.setdefault(x, []).extend(h for h in holders if h is not x)


def reach(v, skip, edge_maps, stop=frozenset(), cut=frozenset()) -> list:
    """``v`` and what ``edge_maps`` lead to from it, leaving out ``skip`` and not going on
    from ``stop`` (both except ``v`` itself), nor along the edges ``(x, holder)`` in ``cut``."""
    out, todo = [], [v]
    while todo:
        x = todo.pop()
        if x in out or (x in skip and x is not v):
            continue
        out.append(x)
        if x in stop and x is not v:
            continue
        for edges in edge_maps:
            todo.extend(h for h in edges.get(x, ()) if (x, h) not in cut)
    return out


class InPlaceEmission:
    """Mixin of the Emitter: sums and subscript updates written in place where it owns them."""

    def add_in_place(self, node, args, at, path):
        """``acc += g`` where ``acc`` is an array this code owns, of the sum's own shape and
        dtype, never read again: accumulating a gradient without a new array."""
        out = node.outputs[0]
        for k in (0, 1):
            acc = node.inputs[k]
            if (isinstance(acc, Value) and acc.aval == out.aval and acc in self.names
                    and self.owned(acc, at, path, out)):
                target = self._bind(out, self.names[acc])
                return [self.render(ast.AugAssign(ast.Name(target, ast.Store()), ast.Add(),
                                                  args[1 - k]))]
        return None

    def dying_input(self, node, args, at, path):
        """The name of a gather of rows that the elementwise ``node`` reads last, of its
        result's shape and dtype (:mod:`.gathers`, which spells it ``np.take``): the result
        may overwrite the gathered copy. None where there is none."""
        for x, arg in zip(node.inputs, args):
            made = self.producer.get(x) if isinstance(x, Value) else None
            if (made in self.taken_rows and isinstance(arg, ast.Name)
                    and self.names.get(x) == arg.id):
                return arg.id
        return None

    def update(self, node, args, at, path):
        """``acc[idx] = v`` / ``acc[idx] += g`` in place when this code owns ``acc`` and never
        reads it again; on a copy otherwise (so a caller's array is never written)."""
        acc = node.inputs[0]
        lines = []
        if acc in self.names and self.owned(acc, at, path, node.outputs[0]):
            target = self._bind(node.outputs[0], self.names[acc])
        else:
            # the value and the indices are read after the copy: the copy takes none of their
            # names (``dx = np.array(t); dx[i] = dx`` would write the copy into itself)
            target = self.name(node.outputs[0], at, path, read_names(args[1:]))
            # np.array copies, and gives a writable array even where acc is a NumPy scalar
            lines.append(f"{target} = {self.xp}.array({self.render(ast.Expr(args[0]))})")
        if node.prim == "setitem":
            stmts = assign_statements(node, target, args)
        else:
            stmts = accumulate_statements(node, target, args, self.xp, self.plain)
        return lines + [self.render(s) for s in stmts]

    def owned(self, acc, at, path, result) -> bool:
        """Whether updating ``acc`` into ``result`` at statement ``at`` may overwrite ``acc``'s
        array: this function made it, and nothing holding it reads it after ``at``, except the
        slots ``result`` flows into, which hold the updated array from then on. A loop's param
        among those holds it only from the next iteration on: read later in this one, it holds
        its slot's array on entry, which may be ``acc``'s (``Sharing._join_shared_slots``)."""
        skip = frozenset(self.sharing.slots(result)) - self.sharing.entries
        return self._owned(acc, at, path, skip)

    def _owned(self, acc, at, path, skip) -> bool:
        """``owned`` with ``skip``, the values holding the result. A loop's carried param is
        owned when its initial value is, at the loop, and the body's next value is the update
        of it (so one array runs through the loop)."""
        if self.plain or not isinstance(acc, Value) or acc.aval.kind not in ("array", "list"):
            return False
        if any(self.live.read_after(v, at, path)
               for v in self.sharing.aliases(acc, skip, path)):
            return False
        producer = self.producer.get(acc)
        if producer is not None and producer.prim in ("loop", "while"):
            return self._owned_result(producer, acc, at, path, skip)
        if producer is not None and producer.prim == "cond":  # each branch's array is owned
            j = producer.outputs.index(acc)
            return all(isinstance(block.outputs[j], Value)
                       and self._owned(block.outputs[j], at, path, skip | {acc})
                       for block in producer.regions)
        if producer is not None:  # a planned buffer belongs to the pool, never to one value
            return fresh(producer) and producer not in self.planned
        if acc not in self.sharing.carried:
            return False
        loop, init, nxt, slot = self.sharing.carried[acc]
        return (self._updated(nxt, acc) and
                self._owned(init, self.live.pos[loop], self.live.path[loop], skip | slot))

    def _owned_result(self, loop, acc, at, path, skip) -> bool:
        """A loop's carried result is owned where its param is: the array that ran through
        the loop (``dx`` after ``for ...: dx[i] += g``: no copy to add ``dx[0] += g``), when
        nothing that kept a next value (a residual list, a view) is read after ``at``."""
        slot = self.sharing.slot_of(loop, acc)
        if slot is None:
            return False
        param, init, nxt = slot
        skip = skip | self.sharing.carried[param][3]
        if any(self.live.read_after(v, at, path) for v in self.sharing.aliases(param, skip)):
            return False
        return self._updated(nxt, param) and self._owned(
            init, self.live.pos[loop], self.live.path[loop], skip)

    def _updated(self, nxt, acc, depth=16) -> bool:
        """Whether ``nxt`` is ``acc`` after a chain of updates and sums (``dx[t] += a;
        dx[t - 1] += b``) and inner loops that carry it (the same test on the inner slot):
        each link is in place, or works on a fresh copy, so the array the next iteration gets
        is ``acc``'s own or one this code made, never another name's. What keeps ``nxt``
        across iterations (a while loop's residual list) is among ``acc``'s aliases."""
        updater = self.producer.get(nxt)
        if updater is None or depth == 0:
            return False
        if updater.prim in _UPDATES:
            first = updater.inputs[0]
            return first is acc or self._updated(first, acc, depth - 1)
        if updater.prim == "add" or updater.prim == "fused" and updater not in self.chains:
            # (an unplanned chain is a new array, or computed into acc's: .buffered)
            return any(x is acc or isinstance(x, Value) and self._updated(x, acc, depth - 1)
                       for x in updater.inputs)
        if updater.prim == "cond":  # each branch yields acc or an update of it
            j = updater.outputs.index(nxt)
            return all(x is acc or isinstance(x, Value) and self._updated(x, acc, depth - 1)
                       for x in (block.outputs[j] for block in updater.regions))
        if updater.prim in ("loop", "while"):   # an inner loop carries it: the same test there
            slot = self.sharing.slot_of(updater, nxt)
            if slot is None:
                return False
            param, init, inner_next = slot
            return ((init is acc or isinstance(init, Value)
                     and self._updated(init, acc, depth - 1))
                    and self._updated(inner_next, param, depth - 1))
        return False
