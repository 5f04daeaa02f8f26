"""PyTorch's names for the backward nodes (``MulBackward0``, ``SumBackward1``, ``CopySlices``).

Invariant: a node's name depends only on the primitive, which arguments are tensors, their
ranks and the static parameters, so the same program always prints the same ``grad_fn``s. One
primitive is one node: ``2 / x`` is a DivBackward0 (PyTorch: a reciprocal, then MulBackward0).
"""

from __future__ import annotations

from ..ir.primitives import PRIMS

# a name that depends on the primitive alone is in its row (ir.primitives: Prim.torch, which an
# elementwise primitive takes from its ELEMENTWISE row)
_FIXED = {p.name: p.torch for p in PRIMS.values() if p.torch}


def _is_tensor(x) -> bool:
    return hasattr(x, "_grad_fn")


def _ndim(x) -> int:
    return getattr(x, "ndim", 0)


def _power(args, params):
    base, exponent = (_is_tensor(a) for a in args)
    return "PowBackward1" if base and exponent else "PowBackward0" if base else "PowBackward2"


def _product(args, params):
    ranks = tuple(_ndim(a) for a in args)
    return {(1, 1): "DotBackward0", (2, 2): "MmBackward0", (2, 1): "MvBackward0"}.get(
        ranks, "MatmulBackward0")


def _getitem(args, params):
    tags = {item[0] for item in params["index"]}
    if tags & {"a", "u"}:
        return "IndexBackward0"
    if "i" in tags:
        return "SelectBackward0"
    if "s" in tags:
        return "SliceBackward0"
    return "UnsqueezeBackward0" if "n" in tags else "AliasBackward0"


_VARIANTS = {
    "subtract": lambda args, p: "SubBackward0" if _is_tensor(args[0]) else "RsubBackward1",
    "remainder": lambda args, p: ("RemainderBackward1" if _is_tensor(args[1])  # x % y
                                  else "RemainderBackward0"),  # x % 2.0 (2.0 % x: no rule)
    "power": _power, "matmul": _product, "dot": _product, "getitem": _getitem,
    "sum": lambda args, p: "SumBackward0" if p.get("axis") is None else "SumBackward1",
    "mean": lambda args, p: "MeanBackward0" if p.get("axis") is None else "MeanBackward1",
    "prod": lambda args, p: "ProdBackward0" if p.get("axis") is None else "ProdBackward1",
    "max": lambda args, p: "MaxBackward1" if p.get("axis") is None else "AmaxBackward0",
    "min": lambda args, p: "MinBackward1" if p.get("axis") is None else "AminBackward0",
    "squeeze": lambda args, p: "SqueezeBackward0" if p.get("axis") is None else "SqueezeBackward1",
    "clip": lambda args, p: ("ClampBackward0" if any(_is_tensor(a) for a in args[1:])
                             else "ClampBackward1"),
}


def node_name(prim: str, args, params) -> str:
    """PyTorch's name for the node that ``prim`` records on these arguments."""
    variant = _VARIANTS.get(prim)
    if variant is not None:
        return variant(args, params)
    return _FIXED.get(prim) or "".join(p.capitalize() for p in prim.split("_")) + "Backward0"
