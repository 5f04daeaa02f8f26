"""numexpr for the arithmetic of large fused chains; NumPy's ufuncs for their transcendentals.

Measured (benchmarks/NUMEXPR.md, docs/performance.md): on arrays of a million float64 a
run of arithmetic (``t1 + x * (7 - t1 ** 2) + e``) costs 0.4x of the same ufuncs writing into
buffers, since numexpr reads each input once, in cache-sized blocks, on every core; below about
2^17 elements its per-call cost wins. numexpr's ``tanh``/``exp`` are scalar libm calls, 2.5-6x
slower than NumPy's vectorised ones even on two threads, so a transcendental call stays a ufunc
into a buffer and numexpr computes the arithmetic around it:

    t1 = _threaded(np.tanh, x, out=_buf0)
    _threaded(np.negative, x, out=_buf1)
    _threaded(np.exp, _buf1, out=_buf1)
    dx = ne.evaluate('t1 + x * (7 - t1 ** 2) + _buf1')

On this path a large ufunc is also cut over numexpr's threads (:func:`threadable`,
:mod:`adcompiler.runtime.threaded`): NumPy lets go of the GIL inside its loops.

Used where numexpr can be imported, the chain has at least :data:`MIN_ELEMENTS` elements and
every value in it is float64 (numexpr computes a float32 chain in float64, so NumPy keeps those),
for the gradients built in a process (``ad.grad`` and friends). ``ADCOMPILER_NUMEXPR=0`` turns it
off; ``adcompiler compile`` never uses it, so its modules need NumPy only. Invariants: a step
computes exactly what its nodes did (the same operations in the same order, in float64); a chain
this module cannot spell (another dtype, a name numexpr reserves, a value read twice inside the
chain, a non-finite literal) is left to the ufunc emission.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import os
import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..ir import Literal
from .expressions import node_expr, render

MIN_ELEMENTS = 1 << 18
# Not remainder or floor_divide: numexpr's float `%` is ``a - floor(a / b) * b``, which rounds
# differently from NumPy's (fmod-based, Python's sign rules), so those stay ufuncs.
OPS = {"add", "subtract", "multiply", "divide", "power", "negative"}
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*$|_[A-Za-z0-9][A-Za-z0-9_]*$")
_allowed: ContextVar[bool] = ContextVar("adcompiler_numexpr", default=True)


@lru_cache(maxsize=1)
def _module():
    try:
        import numexpr
    except ImportError:
        return None
    return numexpr


def enabled() -> bool:
    """Whether gradients compiled now may call numexpr (installed, not turned off). numexpr is
    only looked up here, not imported: the generated code imports it, where a chain is large."""
    off = os.environ.get("ADCOMPILER_NUMEXPR", "1").strip().lower() in ("0", "false", "no", "off")
    return _allowed.get() and not off and _installed()


@lru_cache(maxsize=1)
def _installed() -> bool:
    return importlib.util.find_spec("numexpr") is not None


def fingerprint() -> str:
    """What the cache key records: compiled code differs with and without numexpr."""
    return "numexpr on" if enabled() else "numexpr off"


@contextmanager
def disabled():
    """Compile NumPy-only code inside this block (``adcompiler compile`` writes such modules)."""
    token = _allowed.set(False)
    try:
        yield
    finally:
        _allowed.reset(token)


@dataclass
class Step:
    """One statement of a chain: a single node as a ufunc (``expr`` None), or numexpr's
    ``expr`` (an AST whose ``ast.Name`` leaves are in ``leaves``: name id -> IR value)."""
    value: object
    node: object = None
    expr: object = None
    leaves: dict = field(default_factory=dict)


def plan(block) -> list | None:
    """The chain as steps, or None where numexpr would not pay or cannot spell it."""
    if not _spellable(block):
        return None
    pending, steps = {}, []  # value -> (expression, leaves, nodes) not yet computed
    for inner in block.nodes:
        if inner.prim in OPS:
            pending[inner.outputs[0]] = _combine(inner, pending)
            continue
        for x in inner.inputs:
            if x in pending:
                steps.append(_step(x, *pending.pop(x)))
        steps.append(Step(inner.outputs[0], node=inner))
    root = block.outputs[0]
    if root in pending:
        steps.append(_step(root, *pending.pop(root)))
    return steps if any(s.expr is not None for s in steps) else None


def _combine(inner, pending):
    args, leaves, nodes = [], {}, [inner]
    for x in inner.inputs:
        if isinstance(x, Literal):
            args.append(ast.Constant(x.value))
        elif x in pending:
            expr, more, under = pending.pop(x)
            args.append(expr)
            leaves.update(more)
            nodes = under + nodes
        else:
            key = f"\0{id(x)}"
            leaves[key] = x
            args.append(ast.Name(key, ast.Load()))
    return node_expr(inner, args), leaves, nodes


def _step(value, expr, leaves, nodes):
    if len(nodes) == 1:  # one operation: the ufunc itself is as fast, and reads plainer
        return Step(value, node=nodes[0])
    return Step(value, expr=expr, leaves=leaves)


def _spellable(block) -> bool:
    out = block.outputs[0].aval
    if out.shape is None or int(np.prod(out.shape)) < MIN_ELEMENTS:
        return False
    reads = {}
    for inner in block.nodes:
        for x in inner.inputs:
            if isinstance(x, Literal):
                if not _plain_number(x.value):
                    return False
                continue
            reads[x] = reads.get(x, 0) + 1
            if x.aval.dtype != "float64":
                return False
        if inner.outputs[0].aval.dtype != "float64":
            return False
    params = set(block.params)
    return all(n == 1 for x, n in reads.items() if x not in params)


def threadable(node) -> bool:
    """Whether a ufunc into a buffer may be cut over threads: a large result, and every array
    argument of the result's shape (each part then reads its own slice of each)."""
    out = node.outputs[0].aval
    if out.shape is None or len(out.shape) == 0 or int(np.prod(out.shape)) < MIN_ELEMENTS:
        return False
    return all(isinstance(x, Literal) or x.aval.kind != "array" or x.aval.shape in ((), out.shape)
               for x in node.inputs)


def _plain_number(v) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)
            and bool(np.isfinite(v)))


def spell(step, name_of) -> str | None:
    """numexpr's text for ``step``, each leaf named by ``name_of(value)``; None when a name
    would not read as a variable there (numexpr's function names, dunders, non-ASCII)."""
    names = {}
    for key, value in step.leaves.items():
        name = name_of(value)
        if name is None or not _IDENTIFIER.match(name) or name in _module().expressions.functions:
            return None
        names[key] = name

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):  # noqa: N802 - ast's visitor protocol
            return ast.Name(names.get(node.id, node.id), ast.Load())

    return render(ast.Expr(Rename().visit(copy.deepcopy(step.expr))))
