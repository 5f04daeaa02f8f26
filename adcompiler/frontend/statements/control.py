"""Lower ``if`` and conditional expressions into ``cond`` nodes with explicit merged values.

A condition known while compiling picks its branch statically; a traced one becomes a ``cond``
whose outputs are the variables either branch rebinds. An ``if`` holding a ``return`` takes the
statements after it as the continuation of each branch that falls through, and merges the
returned value like a variable (the paths' avals joined by :mod:`.joins`); loops
are :mod:`.loops`'. Invariant: a merged variable has one abstract value on every path (a Python
float meeting a 0-d array becomes the array; a tuple or list is merged entry by entry, see
:mod:`..bindings.structured`), else a located error says which variable disagrees, where it is read.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...ir import Aval, Block, Node, Value
from ..bindings.structured import Diverged, fill, first_difference, flat, ident, label, same
from ..bindings.unreadable import Unreadable
from ..desugaring.shortcircuit import runs_unconditionally
from ..expressions.table import expression
from .blocks import NO_RETURN, returns_inside, run_block, run_statements
from .checks import NOT_A_CHECK, lower_checked_if
from .conditions import check_condition
from .joins import aval_of, coerce, join, joinable
from .lists import meet_empty_lists
from .table import statement


@statement(ast.If)
def lower_if(lowering, stmt: ast.If, rest=None):
    """An ``if``: a static condition runs one branch; a traced one is a run-time check (a branch
    that only raises, :mod:`.checks`) or a ``cond`` merging what the branches bind. ``rest``:
    the statements after an ``if`` holding a ``return``, run as each branch's continuation
    (the returned value is what this gives)."""
    lowering.b.source = f"if {lowering.src.text(stmt.test)}:"
    test = lowering.expr(stmt.test)
    if not isinstance(test, Value):
        branch = stmt.body if test else stmt.orelse
        return (run_statements(lowering, branch) if rest is None
                else run_block(lowering, branch + rest))
    check_condition(lowering.src, stmt.test, test)
    checked = lower_checked_if(lowering, stmt, test, rest)  # `if <traced>: raise ...`
    if checked is not NOT_A_CHECK:
        return checked
    env0 = dict(lowering.scope.env)
    blocks, envs = [], []
    for stmts in (stmt.body, stmt.orelse):
        block = Block()
        with lowering.loop.merging(lowering.b, block):
            if rest is None:
                run_statements(lowering, stmts)
            else:
                lowering.scope.env[RESULT] = run_block(lowering, stmts + rest)
                if lowering.scope.env[RESULT] is NO_RETURN and returns_inside(stmt):
                    raise lowering.src.error(stmt, "not every path through this `if` returns "
                                             "a value", "add a return at the end")
        envs.append(lowering.scope.env)
        lowering.scope.env = dict(env0)
        blocks.append(block)
    merge_branches(lowering, stmt, test, blocks, envs, env0)
    if rest is not None:
        return lowering.scope.env.pop(RESULT)


# ---- merging an if's branches -------------------------------------------------------------
def merge_branches(lowering, stmt, test, blocks, envs, env0):
    meet_empty_lists(lowering, blocks, envs)
    header = f"if {lowering.src.text(stmt.test)}:"
    names = [n for n in dict.fromkeys(list(envs[0]) + list(envs[1]))
             if any(e.get(n, env0.get(n)) is not env0.get(n) for e in envs)]
    outs = []
    for name in names:
        values = [e.get(name, env0.get(name, _UNBOUND)) for e in envs]
        if any(v is _UNBOUND for v in values):  # bound in one branch only: unusable after
            lowering.scope.env.pop(name, None)
            continue
        if values[0] is values[1]:  # one value from before the `if` on both paths
            lowering.scope.env[name] = values[0]
            continue
        if stale := next((v for v in values if isinstance(v, Unreadable)), None):
            lowering.scope.env[name] = stale  # a view one branch updated: unreadable after the if
            continue
        lowering.scope.env[name] = merge_value(lowering, stmt, name, values, blocks, outs)
    lowering.b.source = header
    lowering.b.target.append(Node("cond", (test,), {}, tuple(outs), header, "forward",
                                  tuple(blocks)))


def merge_value(lowering, stmt, name, values, blocks, outs):
    """``name`` after an ``if`` that binds it to one of ``values``: a tuple or list entry by
    entry (each entry a ``cond`` output appended to ``outs``, or the one Python value both
    paths hold). Where they cannot be joined, a value that is an error where read
    (:class:`Unjoined`, :class:`..bindings.structured.Diverged`); for a returned value or a
    conditional expression, which are read at once, a located error now."""
    eager = name in (RESULT, EXPRESSION)
    where = "the returned value" if name == RESULT else name
    if found := first_difference(*values):
        marker = Diverged.of(stmt.lineno, *found)
        if eager:
            raise lowering.src.error(stmt, *marker.describe(where))
        return marker
    pairs = [(p, a, b) for (p, a), (_, b) in zip(flat(values[0]), flat(values[1]))]
    joined = []
    for path, a, b in pairs:
        avals = None if a is b or same(a, b) else [aval_of(a), aval_of(b)]
        if avals is None:
            joined.append(None)
        elif not eager and not joinable(avals):
            return Unjoined(stmt.lineno, *avals)  # an error only if read after
        else:
            joined.append(join(lowering.src, stmt, label(where, path), avals, "branch"))
    leaves = [a if aval is None else cond_output(lowering, name, path, (a, b), aval, blocks, outs)
              for (path, a, b), aval in zip(pairs, joined)]
    return fill(values[0], iter(leaves))


def cond_output(lowering, name, path, values, aval, blocks, outs):
    """A new output of the ``cond``, each block giving its value of one entry, ``aval``."""
    for block, v in zip(blocks, values):
        with lowering.b.into(block):
            block.outputs.append(coerce(lowering.b, v, aval))
    if name == EXPRESSION:  # named by what it is bound to
        outs.append(Value(aval))
    else:
        base = ident("result" if name == RESULT else name, path)
        outs.append(lowering.graph.name_value(Value(aval, origin=base), base))
    return outs[-1]


class ControlLowering:
    """Mixin of the lowering: one step of ``and``/``or`` (which chained comparisons take too,
    :mod:`..desugaring.chains`)."""

    def bool_step(self, node, is_and, result, v, block, inline):
        """``result and v`` (``or``), where ``block`` computes ``v``: inline where ``v`` may
        run unconditionally (``inline``) or either is an array (elementwise logic), else a
        ``cond`` running ``block`` only where ``result`` leaves the answer open."""
        prim = "logical_and" if is_and else "logical_or"
        if result is None or inline or not result.aval.known_shape == v.aval.known_shape == ():
            self.b.target.extend(block.nodes)
            return v if result is None else self.b.emit(prim, (result, v))
        aval = join(self.src, node, "`and`/`or`", [result.aval, v.aval], "branch")
        decided = Block()
        with self.b.into(decided):
            decided.outputs.append(coerce(self.b, not is_and, aval))
        with self.b.into(block):
            block.outputs.append(coerce(self.b, v, aval))
        out = Value(aval)
        blocks = (block, decided) if is_and else (decided, block)
        self.b.target.append(Node("cond", (result,), {}, (out,), self.b.source, "forward",
                                  blocks))
        return out


@dataclass(frozen=True)
class Unjoined(Unreadable):
    """A variable that is one shape or type on one path through an ``if`` and another on the
    other: fine until it is read after the ``if``."""

    lineno: int
    first: Aval
    other: Aval

    def describe(self, name):
        return (f"`{name}` is {self.first} on one path through the `if` at line {self.lineno} "
                f"and {self.other} on another", "give it the same shape and type on every "
                "path, or use another name on one of them")


_UNBOUND = object()  # a name a branch leaves unbound
RESULT = "<return value>"  # a pseudo-variable merging the value each branch returns
EXPRESSION = "the conditional expression"  # what a conditional expression merges


@expression(ast.IfExp)
def lower_ifexp(lowering, node):
    test = lowering.expr(node.test)
    if not isinstance(test, Value):
        return lowering.expr(node.body if test else node.orelse)
    check_condition(lowering.src, node.test, test)
    blocks, values = [], []
    for branch in (node.body, node.orelse):
        block = Block()
        with lowering.b.into(block):
            values.append(lowering.expr(branch))
        blocks.append(block)
    outs = []
    out = merge_value(lowering, node, EXPRESSION, values, blocks, outs)
    lowering.b.target.append(Node("cond", (test,), {}, tuple(outs), lowering.b.source, "forward",
                                  tuple(blocks)))
    return out


@expression(ast.BoolOp)
def lower_boolop(lowering, node):
    """``and``/``or`` short-circuit as Python's: an operand known while compiling decides
    while compiling; after a traced one, the next operand runs only where it is needed (a
    ``cond`` on what came before), unless it is cheap and cannot raise, which then runs
    unconditionally and meets it in ``np.logical_and``/``np.logical_or`` (see
    :mod:`..desugaring.shortcircuit`). On boolean arrays (Python refuses their truth value) it
    is the elementwise logic."""
    is_and = isinstance(node.op, ast.And)
    result = None
    for operand in node.values:
        block = Block()
        with lowering.b.into(block):
            v = lowering.expr(operand)
            inline = runs_unconditionally(lowering, block)  # (finds producers from inside)
        if not isinstance(v, Value):
            lowering.b.target.extend(block.nodes)
            if is_and and not v or not is_and and v:
                return v  # decided while compiling
            continue
        if v.aval.dtype != "bool":
            raise lowering.src.error(operand, "`and`/`or` on arrays compile only for booleans",
                                     "compare first (x > 0), or use np.logical_and")
        result = lowering.bool_step(node, is_and, result, v, block, inline)
    return result if result is not None else lowering.expr(node.values[-1])
