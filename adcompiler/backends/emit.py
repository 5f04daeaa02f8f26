"""Emit a graph as a readable Python function for NumPy (or CuPy), rendered with astor.

Invariants: the source imports only the array module (and math when used), defines any helper it
calls, and is byte-identical for identical graphs. Values keep the user's names; an unnamed
temporary used once is inlined into its user's expression; each adjoint block is preceded by a
``# grad of: <the user's line>`` comment.
"""

from __future__ import annotations

import ast

from ..ir import Literal, Value, readers, walk
from . import binomial, binomial_emit, check_modes, numexpr_chains
from .buffered import BufferedEmission
from .expressions import (const, dtype_expr, node_expr, read_names, render as _render,
                          scatter_statements)
from .gathers import overwritten_gathers, take_expr
from .inplace import InPlaceEmission, Sharing
from .liveness import Liveness
from .loop_exit import break_lines, early_exit, not_expr
from .methods import method_expr
from .naming import BUILTINS, Naming, reserved
from .outputs import copied_outputs
from .planner import (Pool, buffered_chains, plannable_nodes, pooled_stacks, row_arrays,
                      viewed_products,
                      buffer_is_dead, stack_rows)
from .recycled import HELPER as RECYCLED_HELPER
from .recycled import product_into_kept, recycled_outputs
from .row_dots import row_dot_expr
from .scatters import helper_source, rows_form


_HELPERS = {"_sum_to": '''
def _sum_to(g, shape):
    """Sum g over the axes broadcasting added or stretched, so that it has `shape`."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, d in enumerate(shape) if d == 1 and g.shape[i + lead] != 1)
    return g.sum(axis=axes, keepdims=True).reshape(shape)
''', "_last_writes": '''
def _last_writes(shape, index):
    """Which writes of `x[index] = v` (x of `shape`) stay: where an index repeats, the last."""
    won = np.full(shape, -1)
    order = np.arange(won[index].size).reshape(won[index].shape)
    won[index] = order
    return won[index] == order
'''}


def float_lists(graph) -> set:
    """The stacks of loops that keep a Python float per iteration and are read only back as
    Python floats, ``float(s[k])``: a ``for`` loop's (unless pooled) are emitted as lists,
    ``s.append(t1)``, and every such read as ``t2 = s[k]`` (a while loop's lists too), where a
    NumPy store and a ``float()`` per iteration cost twice as much. Plain code (read again by
    the frontend, which takes no list in a ``for`` loop) keeps its arrays."""
    reads_of = readers(graph)
    found = set()
    for node in walk(graph.nodes):
        if node.prim not in ("loop", "while"):
            continue
        m = node.params.get("stacked", 0)
        rows = node.regions[-1].outputs[len(node.regions[-1].outputs) - m:]
        for s, row in zip(node.outputs[len(node.outputs) - m:], rows):
            reads = reads_of.get(s, [])
            if isinstance(row, Value) and row.aval.kind == "float" and reads and \
                    all(_read_as_float(r, s, reads_of) for r in reads):
                found.add(s)
    return found


def _read_as_float(read, stack, readers) -> bool:
    """``read`` is ``stack[k]`` and nothing reads it but ``float()``."""
    return read is not None and read.prim in ("getitem", "list_get") and \
        read.inputs[0] is stack and all(t is not None and t.prim == "to_float"
                                        for t in readers.get(read.out, []))


class Emitter(Naming, BufferedEmission, InPlaceEmission):
    """Names values and writes statements; see the module docstring for what it guarantees."""

    def __init__(self, graph, xp_name="np", plain=False):
        self.graph, self.xp, self.plain = graph, xp_name, plain
        self.numexpr = not plain and xp_name == "np" and numexpr_chains.enabled()
        self.uses_numexpr = False  # set once a chain calls numexpr: the module imports it
        self.uses_threads = False  # set once a ufunc is cut over threads (runtime.threaded)
        self.poison = not plain and xp_name == "np" and check_modes.is_poisoned()
        self.uses_poison = False   # set once the code fills a buffer with poison
        self.live = Liveness(graph)
        # stacked values computed into their stack's row (h = np.tanh(..., out=hs[t]))
        self.rows = {} if plain or xp_name != "np" else stack_rows(graph)
        self.sharing = Sharing(graph, self.rows)  # which values may hold one array
        rows = frozenset() if plain else row_arrays(graph, self.sharing)
        self.planned = set() if plain else set(plannable_nodes(graph, self.sharing, rows))
        self.live.inlined -= viewed_products(self.planned, self.live)
        self.chains = set() if plain else set(buffered_chains(graph))
        self.names: dict = {}      # Value -> Python name
        self.holders: dict = {}    # Python name -> the values stored under it over time
        self.reserved = reserved(xp_name)
        self.taken: set = self.reserved | BUILTINS
        self.pool = Pool(self.taken, reuse=not self.poison)
        self.inline: dict = {}     # Value -> AST expression, for values inlined into their user
        self.prefer: dict = {}     # Value -> (slot name, partner values): phi / carried slots
        self.producer = {v: n for n in walk(graph.nodes) for v in n.outputs}
        self.stacks = set() if plain else pooled_stacks(graph, self.sharing) | rows
        self.taken_rows = set() if plain or xp_name != "np" else overwritten_gathers(
            self.planned, self.producer, self.live, self.sharing)   # np.take: see .gathers
        self.taken_conds: set = set()  # guards of loops that break: true where they run
        self.dropped: set = set()  # values no statement reads (such a guard, read by its if)
        self.float_lists = set() if plain or xp_name != "np" else float_lists(graph) - self.stacks
        self.recycle: dict = {}   # returned products written into kept arrays: see .recycled

    def expr(self, node, args):
        if node in self.taken_rows:
            return take_expr(args, self.xp)
        if node.prim == "to_float" and self._listed_row(node.inputs[0]):
            return args[0]   # a listed Python float is one already
        return (not_expr(node, args, self.producer)
                or (not self.plain and row_dot_expr(node, args, self.producer, self.xp))
                or (self.xp == "np" and method_expr(node, args, self.producer))
                or node_expr(node, args, self.xp))

    def render(self, stmt) -> str:
        return _render(stmt)

    def atom(self, x):
        if isinstance(x, Literal):
            return const(x.value)
        if x in self.inline:
            return self.inline.pop(x)
        return ast.Name(self.name(x), ast.Load())

    # ---- statements ---------------------------------------------------------------------------
    def body(self):
        """Lines of the function body, with ``# grad of:`` comments over adjoint blocks."""
        copies = copied_outputs(self.graph, self.sharing)  # each result an array of its own
        self.recycle = recycled_outputs(self.graph, copies, self.xp, self.plain, self.poison)
        self.live.inlined -= set(self.recycle)
        lines = self.statements(self.graph.nodes, top=True)
        outs = [_copy(self.atom(x)) if i in copies else self.atom(x)
                for i, x in enumerate(self.graph.outputs)]
        ret = outs[0] if len(outs) == 1 else ast.Tuple(outs, ast.Load())
        return lines + [_render(ast.Return(ret))]

    def statements(self, nodes, top=False):
        lines, group = [], None
        for node in nodes:
            if node.outputs and node.outputs[0] in self.dropped:
                continue  # a guard only the dropped ``if`` read
            args = [self.atom(x) for x in node.inputs]
            if node.outputs and node.outputs[0] in self.rows:
                lines.extend(self.into_row(node, args))
                continue
            if node.outputs and node.outputs[0] in self.live.inlined:
                self.inline[node.outputs[0]] = self.expr(node, args)
                continue
            if node.phase == "adjoint" and node.source and node.source != group and top:
                group = node.source
                lines.append(f"# grad of: {node.source}")
            lines.extend(self.statement(node, args))
            if top:  # a buffer is free again once nothing reads its value
                end = self.live.end.get(node, self.live.pos[node])
                self.pool.release_dead(lambda v: self._dead(v, end))
                lines.extend(self.poison_released())
        return lines

    def statement(self, node, args):
        where = (self.live.pos[node], self.live.path[node])
        if node.prim == "raise_if":
            return raise_lines(node, args)
        if node.prim == "cond":
            return self.cond(node, args)
        note = [f"# {node.params['note']}"] if node.params.get("note") else []  # checkpointing's
        if node.prim == "loop" and node.params.get("binomial") and self.xp == "np" \
                and binomial_emit.eligible(node):   # its stacks one store (Revolve's schedule)
            return note + binomial_emit.binomial_loop(self, node, args)
        if node.prim == "loop":
            return note + self.loop(node, args)
        if node.prim == "while":
            return note + self.while_loop(node, args)
        if node.prim == "fused":
            return self.fused(node, args, *where)
        if node in self.planned:
            return self.buffered_single(node, args, *where)
        if node.prim == "add":
            lines = self.add_in_place(node, args, *where)
            if lines:
                return lines
        if node.prim in ("index_add", "setitem"):
            return self.update(node, args, *where)
        if node.prim == "scatter_add":  # zeros first, then the writes read the inputs: the
            target = self.name(node.out, *where, read_names(args))  # result takes none
            stmts = scatter_statements(node, target, args, self.xp, self.plain)  # of their names
            return [_render(s) for s in stmts]
        target = self.name(node.outputs[0], *where)
        if node.outputs[0] in self.recycle:
            call = product_into_kept(node, args, self.recycle[node.outputs[0]], self.xp)
            return [_render(ast.Assign([_store(target)], call))]
        return [_render(ast.Assign([_store(target)], self.expr(node, args)))]


    def _dead(self, v, end) -> bool:
        """Whether ``v``'s buffer may be reused after top-level statement ``end``: it lives
        while any value that may hold the same array is read (a view, a stack's row, a loop's
        slot it starts, a branch's result, a residual list it is appended to), not only ``v``
        itself (a loop's ``dacc_1 = dacc_3`` read after ``dacc_3``'s last read)."""
        return buffer_is_dead(v, self.sharing, lambda a: self.live.read_after(a, end, ()))

    def cond(self, node, args):
        end, path = self.live.end[node], self.live.path[node]
        slots = self.slot_names(node.outputs, end, path)
        if node in self.taken_conds:  # a loop's guard where the loop leaves once it is false
            then = node.regions[0]
            for v, slot, x in zip(node.outputs, slots, then.outputs):
                if isinstance(x, Value):
                    self.prefer.setdefault(x, (slot, self._partners(v) | {x}))
            return self.statements(then.nodes) + self.assign_slots(slots, then.outputs)
        lines = [f"if {_expr(args[0])}:"]
        for b, block in enumerate(node.regions):
            for v, slot, x in zip(node.outputs, slots, block.outputs):
                if isinstance(x, Value):
                    self.prefer.setdefault(x, (slot, self._partners(v) | {x}))
            body = self.statements(block.nodes)
            body += self.assign_slots(slots, block.outputs)
            if b == 1:
                if not body:
                    break
                lines.append("else:")
            lines.extend(indent(body or ["pass"]))
        return lines

    def loop(self, node, args):
        """``for k in range(n):`` with carried values in slots and stacked values preallocated."""
        pos, path = self.live.pos[node], self.live.path[node]
        (body,) = node.regions
        m = node.params.get("stacked", 0)
        carried = node.outputs[:len(node.outputs) - m]
        stacked = node.outputs[len(carried):]
        n_expr, inits = args[0], node.inputs[1:]
        # the count is read after the slots and stacks are assigned: none takes its names
        counted = {n.id for n in ast.walk(n_expr) if isinstance(n, ast.Name)}
        slots = self.slot_names(carried, pos, path, counted)
        lines = self.assign_slots(slots, inits)
        self.bind_slots(slots, [(body, 1)], carried, body.outputs)
        for s in stacked:  # a pooled stack is filled row by row before any row is read
            alloc = (ast.Name(self.pool.take(s.aval, s), ast.Load()) if s in self.stacks
                     else self.new_stack(s))
            target = self.name(s, pos, path, counted | set(slots))
            lines.append(_render(ast.Assign([_store(target)], alloc)))
        k = body.params[0]
        rng = f"range({_expr(n_expr)})"
        header = f"for {self.name(k)} in {'reversed(' + rng + ')' if node.params.get('reverse') else rng}:"
        exit = early_exit(node, self.plain)
        if exit:
            self.taken_conds.add(exit[0])
            if self.live.uses.get(exit[0].inputs[0], 0) == 1:
                self.dropped.add(exit[0].inputs[0])
        inner = self.stack_stores(body, stacked, len(carried), top=True)
        inner += self.statements(body.nodes)
        inner += self.stack_stores(body, stacked, len(carried), top=False)
        inner += self.assign_slots(slots, body.outputs[:len(carried)])
        inner += break_lines(slots[exit[1]]) if exit else []
        return lines + [header] + indent(inner or ["pass"])

    def while_loop(self, node, args):
        """``while <test>:`` (``while True: ... if not p: break`` when the test needs
        statements; in plain code, which is read again, those statements before the loop and
        again at the end of its body), carried values in slots, residuals appended to lists."""
        pos, path = self.live.pos[node], self.live.path[node]
        test, body = node.regions
        m = node.params.get("stacked", 0)
        carried = node.outputs[:len(node.outputs) - m]
        stacked = node.outputs[len(carried):]
        slots = self.slot_names(carried, pos, path)
        lines = self.assign_slots(slots, node.inputs)
        self.bind_slots(slots, [(test, 0), (body, 0)], carried, body.outputs)
        lines += [f"{self.name(s, pos, path, slots)} = []" for s in stacked]
        check = [] if self._inline_test(test) else self.statements(test.nodes)
        pred = _expr(self.atom(test.outputs[0]))
        inner = self.stack_stores(body, stacked, len(carried), top=True)
        inner += self.statements(body.nodes)
        inner += self.stack_stores(body, stacked, len(carried), top=False)
        inner += self.assign_slots(slots, body.outputs[:len(carried)])
        if check and self.plain:  # read again: a list appended to after a break would sit
            # under the frontend's `if not done:`; the test's statements rotated run the same
            return lines + check + [f"while {pred}:"] + indent(inner + check)
        if check:
            head = ["while True:"] + indent(check + [f"if not {pred}:", "    break"])
            return lines + head + indent(inner)
        return lines + [f"while {pred}:"] + indent(inner or ["pass"])

    def new_stack(self, s):
        """The empty stack a loop fills row by row (``np.empty((n, ...))``, ``[]``)."""
        if s in self.float_lists:
            return ast.List([], ast.Load())
        return _empty(s, self.xp, self.plain)

    def _listed_row(self, x) -> bool:
        made = self.producer.get(x) if isinstance(x, Value) else None
        return made is not None and made.prim in ("getitem", "list_get") and \
            made.inputs[0] in self.float_lists

    def _inline_test(self, test) -> bool:
        """Write a while test made of single-use temporaries as one expression."""
        chain = test.nodes
        if not chain or chain[-1].outputs[0] is not test.outputs[0]:
            return not chain
        if any(n.regions or len(n.outputs) != 1 or n.outputs[0].name for n in chain):
            return False
        if any(self.live.uses.get(n.outputs[0], 0) != 1 for n in chain):
            return False
        for n in chain:
            self.inline[n.outputs[0]] = self.expr(n, [self.atom(x) for x in n.inputs])
        return True

    def stack_stores(self, body, stacked, first, top):
        """``S[k] = value`` (or ``S.append(value)`` for lists) for the stacked yields that are
        block params (``top``: written first in the body) or the others (written at its end,
        once the body's statements have named them: an in-place update may take over a name)."""
        stores = []
        for s, x in zip(stacked, body.outputs[first:]):
            if (x in body.params) != top or x in self.rows:  # (rows: written by into_row)
                continue
            stack = ast.Name(self.names[s], ast.Load())
            if s.aval.kind == "list" or s in self.float_lists:
                stmt = _render(ast.Expr(ast.Call(ast.Attribute(stack, "append", ast.Load()),
                                                 [self.atom(x)], [])))
            else:
                k = ast.Name(self.names[body.params[0]], ast.Load())
                stmt = _render(ast.Assign([ast.Subscript(stack, k, ast.Store())], self.atom(x)))
            stores.append(stmt)
        return stores

    def assign_slots(self, slots, values):
        """``slot = value`` wherever the value is not already stored under the slot's name.
        The copies happen at once (a phi): where one's target is read by a later one, they
        are written as one tuple assignment, which Python evaluates right side first."""
        pairs = []
        for slot, x in zip(slots, values):
            expr = self.atom(x)
            if not (isinstance(expr, ast.Name) and expr.id == slot):
                pairs.append((slot, expr))
        clash = any(isinstance(e, ast.Name) and e.id == t
                    for i, (t, _) in enumerate(pairs) for _, e in pairs[i + 1:])
        if clash:
            targets = ast.Tuple([_store(t) for t, _ in pairs], ast.Store())
            return [_render(ast.Assign([targets], ast.Tuple([e for _, e in pairs], ast.Load())))]
        return [_render(ast.Assign([_store(t)], e)) for t, e in pairs]

    def helpers(self):
        shapes_unknown = any(n.prim == "sum_to" and n.inputs[0].aval.known_shape is None
                             for n in walk(self.graph.nodes))
        out = [_HELPERS["_sum_to"].strip("\n")] if shapes_unknown else []
        if any(n.prim == "last_writes" for n in walk(self.graph.nodes)):
            out.append(_HELPERS["_last_writes"].strip("\n").replace("np.", f"{self.xp}."))
        if any(n.params.get("binomial") for n in walk(self.graph.nodes)) and self.xp == "np":
            out.append(binomial.helper_source())
        forms = [rows_form(n, self.xp, self.plain) for n in walk(self.graph.nodes)
                 if n.prim in ("scatter_add", "index_add")]   # rows added by _add_rows
        out += [RECYCLED_HELPER.strip("\n")] if self.recycle else []
        return out + helper_source(f for f in forms if f)


def raise_lines(node, args) -> list:
    """A run-time check: ``if <p>: raise ValueError('...')`` (``if not <p>`` when negated), a
    bare ``raise`` where the predicate is a literal that holds."""
    negate = node.params.get("negate", False)
    exc = ast.Call(ast.Name(node.params["exception"], ast.Load()),
                   [ast.Constant(a) for a in node.params.get("args", ())], [])
    line = _render(ast.Raise(exc, None))
    pred = node.inputs[0]
    if isinstance(pred, Literal):
        return [line] if bool(pred.value) != negate else []
    test = ast.UnaryOp(ast.Not(), args[0]) if negate else args[0]
    return [f"if {_expr(test)}:", "    " + line]


def _copy(expr):
    return ast.Call(ast.Attribute(expr, "copy", ast.Load()), [], [])


def _store(name):
    return ast.Name(name, ast.Store())


def _expr(node) -> str:
    return _render(ast.Expr(node))


def indent(lines):
    return ["    " + ln for ln in lines]


def _empty(v, xp_name, plain=False):
    """A preallocated stack: ``np.empty((n, ...), dtype=...)``; ``[]`` for a list of lists.
    ``np.zeros`` in plain code, which the frontend reads again (it takes no np.empty)."""
    if v.aval.kind == "list":
        return ast.List([], ast.Load())
    alloc = "zeros" if plain else "empty"
    return ast.Call(ast.Attribute(ast.Name(xp_name, ast.Load()), alloc, ast.Load()),
                    [const(tuple(v.aval.shape))],
                    [ast.keyword("dtype", dtype_expr(v.aval.dtype, xp_name))])
