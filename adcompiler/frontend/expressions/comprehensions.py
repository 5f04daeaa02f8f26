"""Unroll list comprehensions, and generator expressions consumed at once, while compiling.

``[f(x[i]) for i in range(n)]`` becomes the Python list ``[f(x[0]), ..., f(x[n - 1])]``, as if
the user had written that list literal: the iteration runs here, in the compiler, and each item
is lowered in turn with the comprehension's names bound to that iteration's values. A generator
expression is unrolled the same way where a call consumes it at once (``sum``, ``tuple``,
``list``, ``max``, ``min``); ``sum`` and ``tuple``/``list`` of Python sequences are lowered here
too. Invariants: the comprehension's names are its own (Python 3): after it, each is what it was
before (or unbound again); every iterable's length and every filter are known while compiling,
and at most :data:`MAX_ITERATIONS` iterations are unrolled per outermost comprehension, else a
located error. The same iteration (:func:`iteration_items`, ``kind``
LOOP) gives the items of a ``for`` loop over a list or tuple, which
:mod:`..statements.unrolled` unrolls with a budget of its own.
"""

from __future__ import annotations

import ast
import builtins
import operator

from ...ir import Value
from ..bindings.memory import open_producers
from ..bindings.structured import describe
from ..calls import FUNCTIONS
from ..library.binding import CallError, call
from .table import expression

MAX_ITERATIONS = 1000  # per outermost comprehension, every `for` clause's iterations counted

UNBOUND = object()  # what a name holds before a comprehension where nothing binds it
_ITERATORS = ("range", "enumerate", "zip", "reversed")
_CONSUMERS = ("sum", "tuple", "list", "max", "min")
_LOOP_HINT = ("write a `for` loop, which compiles to one loop: preallocate "
              "`out = np.zeros((n, ...))` and write `out[i] = ...` in its body")
_ITERABLES = "range(...), a list or tuple, an array's rows, or enumerate/zip/reversed of those"
COMPREHENSION, LOOP = "comprehension", "loop"  # who unrolls: the ``kind`` of the helpers below
_NOUN = {COMPREHENSION: "a comprehension", LOOP: "a `for` loop over a list or tuple"}


# ---- comprehensions -----------------------------------------------------------------------
def unroll(lowering, node) -> list:
    """The items of a list comprehension or generator expression, in Python's order, with
    the names its targets bind restored afterwards."""
    for gen in node.generators:
        check_target(lowering, gen)
    names = {n.id for g in node.generators for n in ast.walk(g.target)
             if isinstance(n, ast.Name)}
    saved = {name: lowering.scope.env.get(name, UNBOUND) for name in names}
    items = []
    try:
        with lowering.unrolling.comprehension(saved):  # (saved: for nested functions)
            unroll_clauses(lowering, node, node.generators, items)
    finally:
        for name, value in saved.items():
            if value is UNBOUND:
                lowering.scope.env.pop(name, None)
            else:
                lowering.scope.env[name] = value
    return items


def unroll_clauses(lowering, node, generators, items):
    """Run the first ``for`` clause of ``generators`` and, for each item its filters keep,
    the clauses after it; the innermost appends the element to ``items``."""
    if not generators:
        items.append(lowering.expr(node.elt))
        return
    gen, rest = generators[0], generators[1:]
    values = iteration_items(lowering, gen.iter)
    spend(lowering, gen.iter, len(values))
    for value in values:
        lowering.bind(gen.target, value, gen)
        if keeps(lowering, gen):
            unroll_clauses(lowering, node, rest, items)


def check_target(lowering, gen):
    if gen.is_async:
        raise lowering.src.error(gen, "`async for` is not supported",
                                 "compile a synchronous function")
    if not all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.expr_context))
               for n in ast.walk(gen.target)):
        raise lowering.src.error(gen.target, "a comprehension's target must be a name or a "
                                 "tuple of names", "write `for i, x in ...`")


def keeps(lowering, gen) -> bool:
    """Whether every ``if`` of the clause holds for the names bound now (Python's order:
    the first false one stops)."""
    for cond in gen.ifs:
        test = lowering.expr(cond)
        if isinstance(test, Value):
            raise lowering.src.error(cond, "this comprehension's filter depends on traced "
                                     "values (array contents or a float argument): which "
                                     "items it keeps must be known while compiling",
                                     "keep every item and choose with np.where(cond, item, "
                                     "0.0), or multiply by a mask")
        if not lowering.static_op(cond, bool, test):
            return False
    return True


def spend(lowering, node, n):
    """Count ``n`` iterations against what the outermost comprehension may unroll."""
    check_length(lowering, node, n)
    lowering.unrolling.left -= n


def check_length(lowering, node, n, kind=COMPREHENSION):
    """``n`` more iterations must fit in what the outermost comprehension (``kind``
    COMPREHENSION) or unrolled loop (LOOP, see :mod:`..statements.unrolled`) may still
    unroll."""
    if kind == COMPREHENSION and n > lowering.unrolling.left:
        raise lowering.src.error(node, f"this comprehension would unroll more than "
                                 f"{MAX_ITERATIONS} iterations: the compiler writes out every "
                                 "item of a comprehension as its own code",
                                 f"{_LOOP_HINT}, or use whole-array operations")
    if kind == LOOP and n > lowering.loop.unroll_left:
        raise lowering.src.error(node, f"this loop would unroll more than {MAX_ITERATIONS} "
                                 "iterations: a `for` loop over a list or tuple is written out "
                                 "item by item, each its own code", "stack the items into one "
                                 "array (`np.stack(items)`) and loop over its rows, which "
                                 "compiles to one loop, or use whole-array operations")


# ---- what a comprehension iterates over ---------------------------------------------------
def iteration_items(lowering, node, kind=COMPREHENSION) -> list:
    """The items iterating ``node`` gives, as Python values and Values: ``node`` is one of
    :data:`_ITERABLES`, of a length known while compiling; ``kind`` says who unrolls them
    (for the length limit and the messages)."""
    func = iterator_builtin(lowering, node)
    keywords = {k.arg for k in node.keywords} if func is not None else set()
    if keywords - ({"start"} if func is enumerate else set()):
        raise lowering.src.error(node, f"`{node.func.id}()` with keyword arguments is not "
                                 f"supported in {_NOUN[kind]}", "pass its arguments by position")
    if func is range:
        return range_items(lowering, node, kind)
    if func is enumerate:
        return enumerate_items(lowering, node, kind)
    if func is zip:
        return list(zip(*[iteration_items(lowering, a, kind) for a in node.args]))
    if func is reversed and len(node.args) == 1:
        if iterator_builtin(lowering, node.args[0]) in (enumerate, zip):
            raise lowering.src.error(node, f"TypeError: '{node.args[0].func.id}' object is "
                                     "not reversible", "reverse what it iterates over instead")
        return iteration_items(lowering, node.args[0], kind)[::-1]
    return sequence_items(lowering, node, lowering.expr(node), kind)


def enumerate_items(lowering, node, kind=COMPREHENSION) -> list:
    """``enumerate(items, start=0)``: pairs of a Python int and an item."""
    given = [*node.args, *(k.value for k in node.keywords)]
    if len(given) not in (1, 2):
        raise lowering.src.error(node, "enumerate() takes an iterable and a start",
                                 "enumerate(items) or enumerate(items, 1)")
    start = lowering.expr(given[1]) if len(given) == 2 else 0
    if isinstance(start, Value):
        raise lowering.src.error(given[1], "enumerate()'s start must be known while compiling",
                                 "use a Python int")
    return [(start + k, v) for k, v in enumerate(iteration_items(lowering, given[0], kind))]


def iterator_builtin(lowering, node):
    """The builtin among range, enumerate, zip and reversed that ``node`` calls, or None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _ITERATORS):
        return None
    func = lowering.lookup(node.func.id, node.func)
    return func if func is getattr(builtins, node.func.id) else None


def range_items(lowering, node, kind=COMPREHENSION) -> list:
    bounds = [lowering.expr(a) for a in node.args]
    for arg, bound in zip(node.args, bounds):
        if isinstance(bound, Value) and kind == LOOP:
            raise lowering.src.error(arg, "this range bound is known only while running (a "
                                     "traced value or a loop counter): the items of "
                                     f"{_NOUN[kind]} must be known while compiling",
                                     "use enumerate(items) for the positions, or a bound "
                                     "known while compiling such as len(items)")
        if isinstance(bound, Value) and reads_counter(lowering, bound):
            raise lowering.src.error(arg, "this range bound changes with a loop counter, "
                                     "which is known only while the loop runs: a "
                                     "comprehension's length must be known while compiling",
                                     "write a `for` loop over this range (its bound may "
                                     "change with the counter), or iterate over the full "
                                     "range and mask the items past the bound with np.where")
        if isinstance(bound, Value):
            raise lowering.src.error(arg, "this range bound is computed from the inputs (a "
                                     "traced value): a comprehension's length must be known "
                                     "while compiling", "write a `for` loop over this range, "
                                     "which compiles with a traced bound")
    r = lowering.static_op(node, range, *bounds)
    check_length(lowering, node, len(r), kind)
    return list(r)


def reads_counter(lowering, v: Value) -> bool:
    """Whether ``v`` is computed from the counter of an enclosing ``for`` loop."""
    producers, todo, seen = open_producers(lowering.b), [v], set()
    while todo:
        v = todo.pop()
        if v in lowering.b.counters:
            return True
        if id(v) not in seen and (node := producers.get(v)) is not None:
            seen.add(id(v))
            todo += [x for x in node.inputs if isinstance(x, Value)]
    return False


# What iterates in the compiler: Python sequences, and a dict (a container argument, a dict
# display) with its keys(), values() and items()
SEQUENCES = (list, tuple, range, str, dict, type({}.keys()), type({}.values()),
             type({}.items()))


def sequence_items(lowering, node, seq, kind=COMPREHENSION) -> list:
    """The items of a Python sequence (a dict's keys), or the rows of an array (first axis)."""
    if isinstance(seq, SEQUENCES):
        check_length(lowering, node, len(seq), kind)
        return list(seq)
    if not isinstance(seq, Value):
        raise lowering.src.error(node, f"{_NOUN[kind]} cannot iterate over {describe(seq)} "
                                 "here", f"iterate over {_ITERABLES}")
    if seq.aval.kind == "list":
        raise lowering.src.error(node, "a list built by a while loop has a length known only "
                                 "when it runs", "read it by index in a `for` loop over "
                                 "a count the while loop keeps")
    if seq.aval.known_shape == () or seq.aval.kind != "array":
        raise lowering.src.error(node, f"{describe(seq)} is not iterable: it has no first axis",
                                 f"iterate over {_ITERABLES}")
    n = lowering.b.shape(seq)[0]
    check_length(lowering, node, n, kind)
    return [lowering.b.getitem(seq, (), (("i", k),)) for k in range(n)]


# ---- calls that consume an iterable at once -----------------------------------------------
def consumed_by(lowering, node):
    """The builtin (``sum``, ``tuple``, ``list``, ``max`` or ``min``) consuming an iterable
    at once in the call ``node`` (``max``/``min``: of a generator), or None for a plain
    call; a generator expression any other call takes is a located error."""
    consumer = consuming_builtin(lowering, node)
    generators = [a for a in node.args if isinstance(a, ast.GeneratorExp)]
    if generators and consumer is None:
        raise _generator_error(lowering.src, generators[0])
    if consumer is None or (consumer in (max, min) and not generators):
        return None
    return consumer


def lower_consumed(lowering, node, consumer):
    """The call ``node`` of ``consumer`` (see :func:`consumed_by`), its iterable unrolled."""
    args = [unroll(lowering, a) if isinstance(a, ast.GeneratorExp) else lowering.expr(a)
            for a in node.args]
    if any(k.arg is None for k in node.keywords):
        raise lowering.src.error(node, "`**` unpacking in a call is not supported",
                                 "pass the keyword arguments one by one")
    kwargs = {k.arg: lowering.expr(k.value) for k in node.keywords}
    if args and isinstance(args[0], Value) and consumer in (sum, tuple, list):
        raise lowering.unsupported_call(node, consumer)  # sum(x) of an array: np.sum(x) meant?
    if consumer is sum:
        return lower_sum(lowering, node, args, kwargs)
    if consumer in (max, min):
        try:
            return call(FUNCTIONS[consumer], lowering.b, args, kwargs)
        except CallError as exc:
            raise lowering.src.error(node, f"`{node.func.id}()` {exc}", exc.hint) from None
    if kwargs or len(args) > 1:
        raise lowering.src.error(node, f"`{node.func.id}()` takes at most one argument",
                                 f"{node.func.id}(items)")
    return consumer(sequence_items(lowering, node.args[0], args[0]) if args else ())


def consuming_builtin(lowering, node):
    """The builtin among sum, tuple, list, max and min that ``node`` calls, or None."""
    func = node.func
    if not (isinstance(func, ast.Name) and func.id in _CONSUMERS):
        return None
    found = lowering.lookup(func.id, func)
    return found if found is getattr(builtins, func.id) else None


def lower_sum(lowering, node, args, kwargs):
    """Python's ``sum(items, start=0)``: ``start + items[0] + items[1] + ...``, left to
    right. A 0 start before two numbers or arrays adds nothing, so it is left out."""
    if not 1 <= len(args) <= 2 or set(kwargs) - {"start"} or (len(args) == 2 and kwargs):
        raise lowering.src.error(node, "`sum()` takes an iterable and a start",
                                 "sum(items) or sum(items, start)")
    start = args[1] if len(args) == 2 else kwargs.get("start", 0)
    items = sequence_items(lowering, node.args[0], args[0])
    if not any(isinstance(x, Value) for x in [start, *items]):
        return lowering.static_op(node, builtins.sum, items, start)
    if type(start) is int and start == 0 and len(items) >= 2 and _numeric(items[0]):
        start, items = items[0], items[1:]
    total = start
    for item in items:
        total = add_items(lowering, node, total, item)
    return total


def add_items(lowering, node, a, b):
    if not isinstance(a, Value) and not isinstance(b, Value):
        return lowering.static_op(node, operator.add, a, b)
    return lowering.b.emit("add", (lowering.operand(a, node), lowering.operand(b, node)))


def _numeric(x) -> bool:
    """A traced number or array that ``0 + x`` gives back unchanged in value and dtype."""
    return isinstance(x, Value) and x.aval.dtype != "bool" and x.aval.kind in (
        "array", "float", "int")


def _generator_error(src, node):
    return src.error(node, "a generator expression is compiled only where a call consumes it "
                     "at once: as the iterable of sum(), tuple(), list(), max() or min()",
                     "write a list comprehension, `[... for ...]` (NumPy functions such as "
                     "np.stack take a list, not a generator)")


@expression(ast.ListComp)
def lower_listcomp(lowering, node):
    return unroll(lowering, node)


@expression(ast.GeneratorExp)
def lower_generatorexp(lowering, node):
    raise _generator_error(lowering.src, node)
