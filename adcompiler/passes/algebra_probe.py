"""A rewrite of a fused expression must not overflow where the expression did not.

Algebra keeps a rewrite when it costs less, and exact algebra does not see floating point:
``cosh(x)/sinh(x)`` differentiated and collected reads ``1 - t1**2/t2**2``, whose squares
overflow to inf/inf (NaN) from x = 355 on, where the quotient rule's own form stays finite.
Before a rewrite replaces a block, both are evaluated on probe inputs and the rewrite is
refused where it gives inf or NaN at a probe where the block it would replace is finite.

The probes are what the inputs can hold: each input is traced back through the elementwise
operations that computed it (``t1 = cosh(x)``, ``t2 = 1 + exp(-x)``, a broadcast constant) to
the values they start from, which take magnitudes spanning float64 (0, 1e-300 to 1e300, both
signs), and the inputs are computed from those. So ``cosh(x)`` is probed at ``cosh(400)`` (and
the squares above are refused), while ``x * exp(-x)`` is never probed at ``-1e300 * 1e200``, a
pair no input can hold together.
"""

from __future__ import annotations

import numpy as np

from ..errors import COMPUTING_ERRORS
from ..ir import Literal
from ..ir.primitives import PRIMS, evaluate

_MAGNITUDES = (0.0, 1e-300, 1e-100, 1e-8, 0.5, 1.0, 3.0, 40.0, 400.0, 1e8, 1e100, 1e200,
               1e300)
_PROBES = np.array([s * m for m in _MAGNITUDES for s in (1.0, -1.0)][1:])  # 0 once
_DEPTH = 4   # how far back an input is traced


def keeps_finite(old, new, inputs, producers) -> bool:
    """Whether block ``new`` is finite at every probe where block ``old`` is; both take the
    fused node's ``inputs`` as their params, in order."""
    leaves: list = []
    trees = [_trace(x, producers, leaves, _DEPTH) for x in inputs]
    columns = [_column(i, len(leaves)) for i in range(len(leaves))]
    with np.errstate(all="ignore"):
        try:
            values = [np.broadcast_to(np.asarray(_value(t, columns), dtype=float),
                                      columns[0].shape) for t in trees]
        except COMPUTING_ERRORS:  # a form the probes cannot evaluate: keep the original
            return False
        before, after = _run(old, values), _run(new, values)
    if before is None or after is None:
        return False
    return not np.any(np.isfinite(before) & ~np.isfinite(after))


def _trace(x, producers, leaves, depth):
    """``x`` as a tree of elementwise operations on literals and leaves (``("leaf", k)``)."""
    if isinstance(x, Literal):
        return ("lit", x.value)
    p = producers.get(x)
    if depth and p is not None and len(p.outputs) == 1 and not p.params.get("py"):
        if p.prim == "fused":   # an earlier chain (t1 = exp(-x)): traced through its block
            (block,) = p.regions
            inner = dict(zip(block.params, p.inputs))
            inner_producers = {n.outputs[0]: n for n in block.nodes}
            return _trace_block(block.outputs[0], inner, inner_producers, producers, leaves,
                                depth - 1)
        if p.prim in ("broadcast_to", "full") and isinstance(p.inputs[0], Literal):
            return ("lit", p.inputs[0].value)
        if not p.regions and PRIMS[p.prim].family == "elementwise" and not p.params:
            return (p.prim, [_trace(a, producers, leaves, depth - 1) for a in p.inputs])
    if x not in leaves:
        leaves.append(x)
    return ("leaf", leaves.index(x))


def _trace_block(x, inner, inner_producers, producers, leaves, depth):
    """``x`` inside a fused block: its params are the fused node's inputs, traced outside."""
    if x in inner:
        return _trace(inner[x], producers, leaves, depth)
    n = inner_producers.get(x)
    if n is None or n.params:
        return _trace(x, producers, leaves, 0)   # not expected in a fused block: a leaf
    return (n.prim, [("lit", a.value) if isinstance(a, Literal) else
                     _trace_block(a, inner, inner_producers, producers, leaves, depth)
                     for a in n.inputs])


def _value(tree, columns):
    tag, arg = tree
    if tag == "lit":
        return arg
    if tag == "leaf":
        return columns[arg]
    return evaluate(tag, [_value(t, columns) for t in arg], {})


def _column(i, k) -> np.ndarray:
    """Leaf ``i``'s probes: every probe against every other leaf's, cycled at a stride that
    differs per leaf (all pairs for two leaves), plus the diagonal (all leaves equal)."""
    n = len(_PROBES)
    rows = np.arange(n * n)
    picks = (rows // n ** min(i, 1)) % n if k <= 2 else (rows * (2 * i + 1) + i) % n
    return np.concatenate([_PROBES[picks], _PROBES])


def _run(block, columns):
    values = dict(zip(block.params, columns))
    try:
        for node in block.nodes:
            args = [x.value if isinstance(x, Literal) else values[x] for x in node.inputs]
            values[node.outputs[0]] = evaluate(node.prim, args, node.params)
        return np.broadcast_to(np.asarray(values[block.outputs[0]], dtype=float),
                               columns[0].shape)
    except COMPUTING_ERRORS:  # a form the probes cannot evaluate: keep the original
        return None
