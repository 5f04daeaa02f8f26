"""Which right operands of ``and``/``or`` may run unconditionally, as ``np.logical_and`` does.

Python evaluates ``b`` in ``a and b`` only where ``a`` holds, and code relies on it:
``i < n - 1 and x[i + 1] > x[i]`` guards an index, ``d == 0.0 or x / d > 1.0`` a division.
:func:`..statements.control.lower_boolop` lowers ``b`` into a block of its own and asks
:func:`runs_unconditionally`: where every node of the block is cheap (its output is one
number) and cannot raise, whatever the inputs, the block is spliced in and combined with
``np.logical_and``, as before (no branch: ``x[i] > 0 and x[i] < 1`` stays one line);
otherwise ``b`` runs inside a ``cond`` on ``a``, as Python would run it.

Cannot raise: comparisons and logic; ``+ - *``, ``abs``, ``maximum``, ``minimum``, ``sign``
and the predicates ``isfinite``/``isnan``/``isinf`` (on Python floats an overflow gives
``inf``, no exception); a division by a nonzero literal; reading ``x[...]`` with ints,
slices and windows, or with integer scalars affine in ``for`` counters whose range keeps
them inside the axis (``x[i]`` for ``i`` in ``range(n)``, not ``x[i + 1]``). Everything else
(``/`` by a value, ``**``, ``math.log``/``exp``/``sqrt`` on floats, which raise on Python
floats, reductions over arrays, calls) counts as possibly raising or costly.
"""

from __future__ import annotations

from ...ir import Block, Literal, Value

_SAFE = {"add", "subtract", "multiply", "negative", "abs", "maximum", "minimum", "sign",
         "greater", "greater_equal", "less", "less_equal", "equal", "not_equal",
         "logical_and", "logical_or", "logical_not", "isfinite", "isnan", "isinf",
         "full", "copy"}
_CONSUMES = {"i", "s", "a", "u"}  # index items that consume an axis


def runs_unconditionally(lowering, block: Block) -> bool:
    """Whether every node of ``block`` yields one number and cannot raise (see the module)."""
    return all(_cheap(node) and _safe(lowering, node) for node in block.nodes)


def _cheap(node) -> bool:
    return not node.regions and all(out.aval.known_shape == () for out in node.outputs)


def _safe(lowering, node) -> bool:
    if node.prim in _SAFE:
        return True
    if node.prim == "divide":
        divisor = node.inputs[1]
        return isinstance(divisor, Literal) and divisor.value != 0
    if node.prim == "getitem":
        return _index_inside(lowering, node)
    return False


def _index_inside(lowering, node) -> bool:
    """``x[...]`` whose integer-array items are scalars in bounds on every iteration."""
    base, *arrays = node.inputs
    shape, spec = base.aval.known_shape, node.params["index"]
    if base.aval.kind != "array" or shape is None or any(item[0] == "e" for item in spec):
        return False
    axis = 0
    for item in spec:
        if item[0] == "a" and not _scalar_inside(lowering, arrays[item[1]], shape[axis]):
            return False
        axis += item[0] in _CONSUMES
    return True


def _scalar_inside(lowering, index, length) -> bool:
    if not isinstance(index, (Value, Literal)) or index.aval.known_shape != ():
        return False
    form = lowering.affine(index)
    if form is None:
        return False
    lo, hi = lowering.bounds(form)
    return -length <= lo and hi < length
