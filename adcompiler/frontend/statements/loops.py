"""Lower ``for`` and ``while`` into ``loop`` and ``while`` nodes with explicit carried values.

A ``for`` over ``range(...)`` (static bounds), over an array's first axis, or over
``enumerate``/``zip`` of those becomes a ``loop`` over ``k in range(n)`` carrying every variable
the body rebinds; ``break``/``continue``, ``reversed(range(...))`` and ranges with traced bounds
are first rewritten on the AST (:mod:`..desugaring.jumps`, :mod:`..desugaring.reversed_range`);
a ``for`` over a Python list or tuple is unrolled instead (:mod:`.unrolled`). Invariants: a carried
variable has one abstract value on every iteration (a Python float meeting a 0-d array becomes
the array, a Python int a float), else a located error says which variable disagrees, except
that a Python number a ``for`` body makes an array (``out = 1; ... out = out * a``) has the
loop's first iteration lowered on its own, on the number, and the rest as a loop; a tuple or list is carried
entry by entry and a str or None only where no iteration reads a changed one
(:mod:`..bindings.structured`); a static trip count of 0
(``range(0)``, an empty array) emits no loop, so a ``loop`` node always runs at least once.
"""

from __future__ import annotations

import ast

from ...errors import CompileError
from ...ir import Aval, Block, Literal, Node, Value
from ..desugaring import jumps, reversed_range
from ..bindings.unreadable import AfterBreak, InLoopOnly, Unreadable
from ..bindings.structured import (ChangesInLoop, LoopState, carry_error, describe, flat, label,
                                   same, traceable)
from .blocks import run_statements
from .conditions import check_condition
from .joins import aval_of, coerce, join, joinable
from .lists import appending
from .loop_updates import assigned, check_loop_aliases, check_row_updates, pass_back
from .table import statement
from .unrolled import lower_unrolled, range_needs_unrolling, unrolls

_MAX_AVAL_ROUNDS = 3
_UNBOUND = object()


@statement(ast.For, ast.While)
def lower_loop(lowering, stmt):
    """A ``for``/``while``, after rewriting break/continue and traced range bounds; a
    ``for`` over a Python sequence is unrolled (:mod:`.unrolled`)."""
    if isinstance(stmt, ast.For) and (unrolls(lowering, stmt.iter)
                                      or range_needs_unrolling(lowering, stmt)):
        return lower_unrolled(lowering, stmt)
    if isinstance(stmt, ast.For) and reversed_range.is_reversed(stmt.iter):
        before, stmt = reversed_range.rewrite(lowering, stmt)
        run_statements(lowering, before)
    if isinstance(stmt, ast.For) and traced_range(lowering, stmt.iter):
        if stmt.orelse:
            raise lowering.src.error(stmt, "`for ... else` is not supported", "drop the else")
        before, stmt = jumps.rewrite_traced_range(stmt, f"loop{stmt.lineno}_i")
        run_statements(lowering, before)
    breaks = jumps.breaks(stmt.body)
    before, stmt = jumps.rewrite_loop(stmt)
    run_statements(lowering, before)
    if isinstance(stmt, ast.For):
        lower_for(lowering, stmt, breaks)
    else:
        with appending(lowering, stmt):  # the lists it appends to (.lists)
            lower_while(lowering, stmt)


def traced_range(lowering, node) -> bool:
    env = lowering.scope.env
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and env.get(node.func.id, lowering.lookup(node.func.id, node.func)) is range):
        return False
    env0 = dict(lowering.scope.env)
    with lowering.b.into(Block()):  # only to look: the loop evaluates its bounds itself
        bounds = [lowering.expr(a) for a in node.args]
    lowering.scope.env = env0
    if len(bounds) == 3 and isinstance(bounds[2], Value):
        raise lowering.src.error(node.args[2], "a traced range step is not supported",
                                 "use a constant step")
    for arg, b in zip(node.args, bounds):  # Python's TypeError, located
        kind = b.aval.kind if isinstance(b, Value) else type(b).__name__
        whole = (kind in ("int", "bool") or hasattr(b, "__index__") if not isinstance(b, Value)
                 else kind in ("int", "bool") or b.aval.dtype.startswith(("int", "uint")))
        if not whole:
            raise lowering.src.error(arg, f"range() takes integers, and this is a {kind}",
                                     f"convert it: range(int({lowering.src.text(arg)}))")
    return any(isinstance(b, Value) for b in bounds)


def lower_for(lowering, stmt: ast.For, breaks=False):
    if stmt.orelse:
        raise lowering.src.error(stmt, "`for ... else` is not supported", "drop the else")
    header = f"for {lowering.src.text(stmt.target)} in {lowering.src.text(stmt.iter)}:"
    lowering.b.source = header
    n, bind_target = iteration(lowering, stmt)
    check_row_updates(lowering, stmt)
    if n <= 0:  # range(0), range(5, 2), an empty array: the body never runs, as in Python
        return
    start_rebound_targets(lowering, stmt, bind_target)
    env0, emitted = dict(lowering.scope.env), len(lowering.b.target)
    try:
        counted_loop(lowering, stmt, header, n, bind_target, 0)
    except CompileError as exc:
        if breaks or not getattr(exc, "number_becomes_array", False):
            raise
        # ``out = 1`` before a loop whose body makes it an array (``out = out * a``): the first
        # iteration runs on its own, on the number (as Python runs it), the rest as a loop
        lowering.scope.env = env0
        del lowering.b.target[emitted:]
        bind_target(0)
        run_statements(lowering, stmt.body)
        if n > 1:
            lowering.b.source = header
            counted_loop(lowering, stmt, header, n - 1, bind_target, 1)
    bind_last(lowering, stmt, n, bind_target, breaks)


def counted_loop(lowering, stmt, header, n, bind_target, first):
    """A ``loop`` node of ``n`` iterations whose counter ``k`` binds the target of iteration
    ``first + k``."""
    def blocks(carried, params):
        k = lowering.graph.name_value(Value(Aval("int", "int64")), _index_name(stmt))
        lowering.b.counters[k] = (0, n - 1)  # for windows x[t:t + 2] (see ..expressions.windows)
        body = Block(params=[k, *params])
        with lowering.loop.merging(lowering.b, body):
            bind_target(k if not first else lowering.b.emit("add", (k, first)))
            run_statements(lowering, stmt.body)
        return (body,)
    carried_loop(lowering, stmt, header, "loop", (Literal(n),), blocks)


def start_rebound_targets(lowering, stmt, bind_target):
    """A target name the body rebinds is carried: after the loop it holds what the last
    iteration left. What it held before the loop is never read (the loop runs, and each
    iteration binds it first), so where that value cannot join the target's (a scalar ``row``
    left by a loop over a vector, before a loop over a matrix's rows), the loop starts from
    its first iteration's binding instead, bound before it."""
    env, names = lowering.scope.env, _target_names(stmt)
    body_binds = set(assigned(stmt.body))
    rebound = [name for name in names if name in body_binds
               and isinstance(env.get(name), (Value, Literal, int, float))]
    if not rebound:
        return
    before = {name: env.get(name, _UNBOUND) for name in names}
    with lowering.b.into(Block()):   # a trial: what the first iteration binds, emitted nowhere
        bind_target(0)
    first = {name: env.get(name) for name in rebound}
    for name, value in before.items():   # the trial undone
        if value is _UNBOUND:
            env.pop(name, None)
        else:
            env[name] = value
    if not all(isinstance(first[name], (Value, Literal, int, float))
               and joinable([aval_of(before[name]), aval_of(first[name])])
               for name in rebound):
        bind_target(0)


def bind_last(lowering, stmt, n, bind_target, breaks):
    """After a loop, Python's target holds its last iteration's value (``i`` is ``n - 1``
    after ``for i in range(n)``, ``row`` the last row). A target name the body rebinds
    keeps what the body left (carried); after a loop that may break, reading the target
    is a located error."""
    names = _target_names(stmt)
    rebound = set(assigned(stmt.body))
    kept = {name: lowering.scope.env.get(name, _UNBOUND) for name in names if name in rebound}
    if breaks:
        lowering.scope.env.update({name: AfterBreak(stmt.lineno) for name in names})
    else:
        bind_target(n - 1)
    for name, value in kept.items():
        if value is _UNBOUND:
            lowering.scope.env.pop(name, None)
        else:
            lowering.scope.env[name] = value


def lower_while(lowering, stmt: ast.While):
    if stmt.orelse:
        raise lowering.src.error(stmt, "`while ... else` is not supported", "drop the else")
    header = f"while {lowering.src.text(stmt.test)}:"
    lowering.b.source = header

    def blocks(carried, params):
        test = Block(params=[lowering.graph.name_value(Value(p.aval), p.name) for p in params])
        carried.enter(lowering.scope.env, test.params)
        with lowering.b.into(test):
            pred = lowering.expr(stmt.test)
            if not isinstance(pred, Value):
                raise lowering.src.error(stmt.test, "this loop condition does not depend on "
                                         "anything the loop changes", "use a for loop")
            check_condition(lowering.src, stmt.test, pred)
            test.outputs = [pred]
        carried.enter(lowering.scope.env, params)
        body = Block(params=list(params))
        with lowering.loop.merging(lowering.b, body):
            run_statements(lowering, stmt.body)
        return test, body
    carried_loop(lowering, stmt, header, "while", (), blocks)


def carried_loop(lowering, stmt, header, prim, inputs, make_blocks):
    """Lower a loop whose body rebinds names bound before it: find one aval per carried
    leaf (re-lowering until they agree), then emit the node and rebind the names (a tuple
    or list as its carried entries, see :class:`..bindings.structured.LoopState`)."""
    names = [name for name in assigned(stmt.body) if name in lowering.scope.env]
    passed = check_loop_aliases(lowering, stmt, names)
    state = LoopState(lowering.scope.env, names)
    avals, blocks, body_env = lower_body(lowering, stmt, state, make_blocks)
    body = blocks[-1]
    with lowering.b.into(body):
        body.outputs = [coerce(lowering.b, r, a) for r, a in zip(state.results(body_env), avals)]
    inits = [coerce(lowering.b, v, a) for v, a in zip(state.start_leaves(), avals)]
    outs = tuple(lowering.graph.name_value(Value(a, origin=n), n)
                 for n, a in zip(state.labels(), avals))
    lowering.b.source = header
    lowering.b.target.append(Node(prim, (*inputs, *inits), {"stacked": 0}, outs, header,
                                  "forward", tuple(blocks)))
    state.leave(lowering.scope.env, body_env, outs)
    pass_back(lowering, passed)  # a caller's name for an array the body updated
    after_changing(lowering, stmt, state, body_env, prim == "loop")
    lowering.scope.env.update({name: InLoopOnly(stmt.lineno, prim == "loop")
                               for name in first_bound_in(lowering, stmt, body_env)})


def after_changing(lowering, stmt, state, body_env, counted):
    """A Python value the body changes (``phase = "liquid"``), which its iterations must
    not read (:class:`..bindings.structured.ChangesInLoop`): after a ``for`` loop, which
    runs, the value each iteration binds it to, where that is one Python value."""
    for name, marker in state.changing.items():
        end = body_env.get(name)
        if isinstance(end, Unreadable) or end is marker:
            continue
        if traceable(end) or any(traceable(leaf) for _, leaf in flat(end)):
            raise lowering.src.error(stmt, *carry_error(name, (), marker.start, end))
        if counted or same(end, marker.start):
            lowering.scope.env[name] = end


def first_bound_in(lowering, stmt, body_env) -> list:
    """The names a loop body binds that were unbound before it (not its target):
    ``for t in range(n): h = ...``. The loop does not carry them (that would need a value
    to start from), so reading them after it is a located error."""
    targets = _target_names(stmt) if isinstance(stmt, ast.For) else []
    return [name for name in assigned(stmt.body) if name not in lowering.scope.env
            and name not in targets and isinstance(body_env.get(name), (
                Value, Literal, InLoopOnly, tuple, list))]


def lower_body(lowering, stmt, state, make_blocks):
    """(avals, blocks, body_env): the body lowered until the carried avals agree. A name
    that is :class:`.inplace.Stale` on entry, or that the body leaves stale (a view of an
    array it then updated in place), is carried no more: it stays stale where the body
    reads it before rebinding it, and after the loop; so does a Python value the body
    changes (:class:`..bindings.structured.ChangesInLoop`)."""
    avals = [aval_of(v) for v in state.start_leaves()]
    for _ in range(_MAX_AVAL_ROUNDS):
        env0 = dict(lowering.scope.env)
        params = [lowering.graph.name_value(Value(a, origin=n), n)
                  for n, a in zip(state.labels(), avals)]
        state.enter(lowering.scope.env, params)
        outer = lowering.loop.enter_body()
        try:
            blocks = make_blocks(state, params)
        finally:
            wrote = lowering.loop.leave_body(outer)
        body_env, lowering.scope.env = lowering.scope.env, env0
        stale = {n: body_env[n] for n in state.names if isinstance(body_env[n], Unreadable)}
        stale.update(_spoiled(env0, body_env))
        grown = [n for n in wrote if n in env0 and n not in state.starts
                 and not isinstance(body_env.get(n), Unreadable)]
        if stale or grown or settle(lowering, stmt, state, body_env):
            lowering.scope.env.update(stale)
            state.drop(stale)
            state.add(lowering.scope.env, grown)  # updated by a called function: carried too
            return lower_body(lowering, stmt, state, make_blocks)
        new = [join(lowering.src, stmt, label(n, p), [a, aval_of(r)], "loop")
               for (n, p), a, r in zip(state.slots, avals, state.results(body_env))]
        if new == avals:
            break
        avals = new
    return avals, blocks, body_env


def settle(lowering, stmt, state, body_env) -> bool:
    """Check what the body left in each name against its start: a located error where the
    loop cannot carry it; True where the body must be lowered again, carrying more leaves
    (numbers a tuple entry changed) or reading a changed Python value no more."""
    again = False
    for name in state.names:
        found = state.mismatch(name, body_env[name])
        if found is None:
            continue
        if found[0] == "promote":
            state.promote(name, found[1])
        elif found[0] == "changes":
            lowering.scope.env[name] = state.changing[name] = ChangesInLoop(
                stmt.lineno, describe(found[2]), describe(found[3]), found[2])
            state.drop([name])
        else:
            raise lowering.src.error(stmt, *carry_error(name, *found[1:]))
        again = True
    return again


def iteration(lowering, stmt):
    """The trip count and a function binding the loop target for iteration ``k``."""
    spec = iterable(lowering, stmt.iter)
    n = spec[0]

    def bind_target(k):
        lowering.bind(stmt.target, spec[1](k), stmt)
    return n, bind_target


def iterable(lowering, node):
    """(n, k -> value) for range, arrays, enumerate and zip."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        func = lowering.lookup(node.func.id, node.func)
        if func is range:
            args = [lowering.expr(a) for a in node.args]
            r = range(*args)
            return len(r), lambda k: _affine(lowering.b, k, r.start, r.step)
        if func is enumerate:
            n, item = iterable(lowering, node.args[0])
            return n, lambda k: (k, item(k))
        if func is zip:
            parts = [iterable(lowering, a) for a in node.args]
            return min(p[0] for p in parts), lambda k: tuple(p[1](k) for p in parts)
    seq = lowering.expr(node)
    if isinstance(seq, Value) and seq.aval.kind == "array" and seq.aval.ndim:
        return seq.aval.shape[0], lambda k: lowering.b.getitem(seq, (k,), (("a", 0),))
    raise lowering.src.error(node, "only range(...), arrays, enumerate and zip, and lists and "
                             "tuples known while compiling can be looped over",
                             "loop over range(len(x)) and index x[i]")


def _target_names(stmt) -> list:
    """The names a ``for`` loop's target binds (``i, row`` in ``for i, row in ...``)."""
    return [t.id for t in ast.walk(stmt.target) if isinstance(t, ast.Name)]


def _spoiled(before, after) -> dict:
    """Names a loop body made unreadable without rebinding them (an array whose row view the
    body updated in place, ``row = Y[i]; row *= 2``): unreadable in the next iteration, where
    the body reads them again, and after the loop."""
    return {n: v for n, v in after.items() if isinstance(v, Unreadable) and n in before
            and not isinstance(before[n], Unreadable)}


def _affine(b, k, start, step):
    i = k if step == 1 else b.emit("multiply", (k, step))
    return i if start == 0 else b.emit("add", (i, start))


def _index_name(stmt) -> str:
    """The iteration counter reads as the user's variable in ``for i in range(n)``."""
    call = stmt.iter
    if (isinstance(stmt.target, ast.Name) and isinstance(call, ast.Call)
            and getattr(call.func, "id", None) == "range" and len(call.args) == 1):
        return stmt.target.id
    return "k"
