"""A fused elementwise block as one CUDA expression: lowered to a small C-level tree, printed as
the body of a ``cupy.ElementwiseKernel``, and evaluated with NumPy (how it is tested off-GPU).

Invariants: the printer and the NumPy evaluator read the same tree, so every decision (``fma``
for a multiply feeding an add, NaN-propagating ``maximum``, casts, ``x ** 2`` as ``x * x``) is
made once, in :func:`lower_block`; each operation computes in its output's dtype, with explicit
casts where NumPy would convert; a block the printer cannot express exactly (integer arithmetic,
float16, complex, non-finite literals) lowers to None and stays CuPy ufunc calls.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from ..ir import Literal
from ..ir.primitives import ELEMENTWISE

C_TYPES = {"float64": "double", "float32": "float", "int64": "long long", "int32": "int",
           "int16": "short", "int8": "signed char", "uint64": "unsigned long long",
           "uint32": "unsigned int", "uint16": "unsigned short", "uint8": "unsigned char",
           "bool": "bool"}
FLOATS = ("float64", "float32")
_MATH = {r.name: r.libm for r in ELEMENTWISE if r.libm}   # C's math functions
_ARITH = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
_COMPARE = {r.name: r.op for r in ELEMENTWISE if r.op in ("<", "<=", ">", ">=", "==", "!=")}


class Unsupported(Exception):
    """The block has an operation or dtype the kernel printer does not express exactly."""


@dataclass(frozen=True, eq=False)
class K:
    """One C-level value: ``op`` is param, lit, cast, unop, binop, call or select."""
    op: str
    dtype: str
    args: tuple = ()
    value: object = None   # param index, literal, operator symbol or function name


# ---- lowering: IR block -> tree ---------------------------------------------------------------
def lower_block(block):
    """The tree computing ``block``'s result from its params ``x0, x1, ...``, or None."""
    try:
        env = {p: K("param", _dtype_of(p.aval), value=k) for k, p in enumerate(block.params)}
        for node in block.nodes:
            ins = [_literal(x) if isinstance(x, Literal) else env[x] for x in node.inputs]
            env[node.outputs[0]] = _lower(node.prim, ins, _dtype_of(node.outputs[0].aval))
        return env[block.outputs[0]]
    except Unsupported:
        return None


def _dtype_of(aval) -> str:
    dtype = {"float": "float64", "int": "int64", "bool": "bool"}.get(aval.kind, aval.dtype)
    if aval.kind not in ("array", "float", "int", "bool") or dtype not in C_TYPES:
        raise Unsupported(dtype)
    return dtype


def _literal(x):
    v = x.value
    if isinstance(v, bool):
        return K("lit", "bool", value=v)
    if isinstance(v, int):
        return K("lit", "int64", value=v)
    if isinstance(v, float) and np.isfinite(v):
        return K("lit", "float64", value=v)
    raise Unsupported(repr(v))


def _to(k: K, dtype: str) -> K:
    """``k`` as a ``dtype`` value: a literal is rewritten, anything else cast."""
    if k.dtype == dtype:
        return k
    if k.op == "lit":
        return K("lit", dtype, value=np.dtype(dtype).type(k.value).item())
    return K("cast", dtype, (k,))


def _lower(prim, ins, out) -> K:
    if prim in _COMPARE:
        common = _common(ins)
        return K("binop", "bool", tuple(_to(a, common) for a in ins), _COMPARE[prim])
    if prim in ("logical_and", "logical_or", "logical_not"):
        ins = [_to(a, "bool") for a in ins]
        if prim == "logical_not":
            return K("unop", "bool", tuple(ins), "!")
        return K("binop", "bool", tuple(ins), "&&" if prim == "logical_and" else "||")
    if prim == "where":
        return K("select", out, (_to(ins[0], "bool"), _to(ins[1], out), _to(ins[2], out)))
    if out not in FLOATS or prim not in _FLOAT_RULES:   # (scipy.special.digamma: no C function)
        raise Unsupported(f"{prim} in {out}")
    return _FLOAT_RULES[prim](*[_to(a, out) for a in ins])


def _common(ins) -> str:
    """The dtype two operands are compared in, as NumPy finds it (literals are weak Python
    scalars: ``int_array > 2.5`` compares in float64, ``float32_array > 2.5`` in float32)."""
    if all(a.op == "lit" for a in ins):
        return np.result_type(*[a.dtype for a in ins]).name
    return np.result_type(*[a.value if a.op == "lit" else np.dtype(a.dtype) for a in ins]).name


def _bin(sym):
    return lambda a, b: K("binop", a.dtype, (a, b), sym)


def _call(fn):
    return lambda *args: K("call", args[0].dtype, args, fn)


def _lit(v, like):
    return K("lit", like.dtype, value=np.dtype(like.dtype).type(v).item())


def _add(a, b):
    if _is_product(a):
        return K("call", a.dtype, (*a.args, b), "fma")
    if _is_product(b):
        return K("call", a.dtype, (*b.args, a), "fma")
    return _bin("+")(a, b)


def _subtract(a, b):
    if _is_product(a):
        return K("call", a.dtype, (*a.args, K("unop", a.dtype, (b,), "-")), "fma")
    if _is_product(b):
        x, y = b.args
        return K("call", a.dtype, (K("unop", x.dtype, (x,), "-"), y, a), "fma")
    return _bin("-")(a, b)


def _is_product(k) -> bool:
    return k.op == "binop" and k.value == "*"


def _power(a, b):
    """``**`` with NumPy's fast paths for scalar exponents: ``x ** 2`` is ``x * x``, ``x ** 0.5``
    ``sqrt(x)``, ``x ** -1`` ``1 / x``; any other exponent ``pow``."""
    if b.op == "lit" and b.value == 2:
        return _bin("*")(a, a)
    if b.op == "lit" and b.value == 0.5:
        return _call("sqrt")(a)
    if b.op == "lit" and b.value == -1:
        return _bin("/")(_lit(1, a), a)
    return _call("pow")(a, b)


def _extremum(sym):
    """NumPy's maximum/minimum: NaN wins, from either side."""
    def rule(a, b):
        nan_or = K("binop", "bool", (K("call", "bool", (a,), "isnan"),
                                     K("binop", "bool", (a, b), sym)), "||")
        return K("select", a.dtype, (nan_or, a, b))
    return rule


def _sign(a):
    pos = K("binop", "bool", (a, _lit(0, a)), ">")
    neg = K("binop", "bool", (a, _lit(0, a)), "<")
    return K("select", a.dtype, (pos, _lit(1, a), K("select", a.dtype, (neg, _lit(-1, a), a))))


def _fmod(a, b):
    """The start of NumPy's ``npy_divmod`` (numpy/_core/src/npymath/npy_math_internal.h.src,
    which ``np.remainder`` and ``np.floor_divide`` run for floats): ``(mod, moves)``, C's
    ``fmod(a, b)`` and whether its sign is not ``b``'s, where Python's rule moves a nonzero
    ``mod`` (``mod += b``, ``div -= 1``). A NaN ``mod`` is nonzero and not negative, as in C."""
    mod, zero = _call("fmod")(a, b), _lit(0, a)
    return mod, K("binop", "bool", (K("binop", "bool", (b, zero), "<"),
                                    K("binop", "bool", (mod, zero), "<")), "!=")


def _remainder(a, b):
    """``npy_remainder``: ``mod`` moved to ``b``'s sign, a zero signed as ``b``. For ``b == 0``
    NumPy returns ``fmod``'s NaN, which this passes through unchanged."""
    mod, moves = _fmod(a, b)
    zero = _lit(0, a)
    return K("select", a.dtype, (K("binop", "bool", (mod, zero), "=="),
                                 K("call", a.dtype, (zero, b), "copysign"),
                                 K("select", a.dtype, (moves, _bin("+")(mod, b), mod))))


def _floor_divide(a, b):
    """``npy_floor_divide``: ``a / b`` for ``b == 0``, else ``npy_divmod``'s quotient
    ``(a - mod) / b`` (minus one where a nonzero ``mod`` moves), snapped to the nearest integer
    from ``floor``, a zero signed as ``a / b``. Plain ``-`` (no ``fma``): NumPy's roundings."""
    mod, moves = _fmod(a, b)
    zero, one, quotient = _lit(0, a), _lit(1, a), _bin("/")(a, b)
    div = _bin("/")(_bin("-")(a, mod), b)
    moved = K("binop", "bool", (K("binop", "bool", (mod, zero), "!="), moves), "&&")
    div = K("select", a.dtype, (moved, _bin("-")(div, one), div))
    floor = _call("floor")(div)
    up = K("binop", "bool", (_bin("-")(div, floor), _lit(0.5, a)), ">")
    snapped = K("select", a.dtype, (up, _bin("+")(floor, one), floor))
    signed = K("select", a.dtype, (K("binop", "bool", (div, zero), "!="), snapped,
                                   K("call", a.dtype, (zero, quotient), "copysign")))
    return K("select", a.dtype, (K("binop", "bool", (b, zero), "=="), quotient, signed))


_FLOAT_RULES = {
    "add": _add, "subtract": _subtract, "multiply": _bin("*"), "divide": _bin("/"),
    "negative": lambda a: K("unop", a.dtype, (a,), "-"), "power": _power,
    "square": lambda a: _bin("*")(a, a), "reciprocal": lambda a: _bin("/")(_lit(1, a), a),
    "sign": _sign, "maximum": _extremum(">"), "minimum": _extremum("<"),
    "clip": lambda x, lo, hi: _extremum("<")(_extremum(">")(x, lo), hi),
    "remainder": _remainder, "floor_divide": _floor_divide,
    **{prim: _call(fn) for prim, fn in _MATH.items()},
}


# ---- printing: tree -> C ----------------------------------------------------------------------
def c_code(root: K) -> str:
    """``out = <expression>;``, after a ``const`` local for each value read more than once."""
    counts = {}
    _count(root, counts)
    shared = {}   # id -> local name
    lines = []

    def text(k):
        if id(k) in shared:
            return shared[id(k)]
        s = _c(k, [text(a) for a in k.args])
        if counts[id(k)] > 1 and k.op not in ("param", "lit"):
            name = f"t{len(shared)}"
            lines.append(f"const {C_TYPES[k.dtype]} {name} = {_bare(s)};")
            shared[id(k)] = name
            return name
        return s

    lines.append(f"out = {_bare(text(root))};")
    return " ".join(lines)


def _count(k, counts):
    counts[id(k)] = counts.get(id(k), 0) + 1
    if counts[id(k)] == 1:
        for a in k.args:
            _count(a, counts)


def _c(k, a) -> str:
    if k.op == "param":
        return f"x{k.value}"
    if k.op == "lit":
        return _c_literal(k.value, k.dtype)
    if k.op == "cast":
        return f"(({C_TYPES[k.dtype]}) {a[0]})"
    if k.op == "unop":
        return f"({k.value}{a[0]})"
    if k.op == "binop":
        return f"({a[0]} {k.value} {a[1]})"
    if k.op == "select":
        return f"({a[0]} ? {a[1]} : {a[2]})"
    return f"{k.value}({', '.join(_bare(x) for x in a)})"


def _bare(s: str) -> str:
    """``s`` without one pair of outer parentheses, where they enclose all of it."""
    if not (s.startswith("(") and s.endswith(")")):
        return s
    depth = 0
    for i, ch in enumerate(s):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and i < len(s) - 1:
            return s
    return s[1:-1]


def _c_literal(value, dtype) -> str:
    if dtype == "bool":
        return "true" if value else "false"
    if dtype == "float32":   # the shortest text that is this float32: 0.01f, not 0.0099...f
        text = str(np.float32(value)) + "f"
    elif dtype == "float64":
        text = repr(float(value))
    else:
        text = str(int(value))
    return f"({text})" if text.startswith("-") else text


# ---- evaluating: tree -> NumPy ----------------------------------------------------------------
_NP_CALLS = {**{r.libm: r.fn for r in ELEMENTWISE if r.libm},
             "isnan": np.isnan, "pow": np.power, "fma": lambda a, b, c: a * b + c,
             "fmod": np.fmod, "copysign": np.copysign}
_NP_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
           ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
           "==": operator.eq, "!=": operator.ne, "&&": np.logical_and, "||": np.logical_or}


def evaluate(root: K, inputs):
    """The tree's value on NumPy inputs (broadcast as ElementwiseKernel broadcasts them)."""
    memo = {}

    def value(k):
        if id(k) not in memo:
            memo[id(k)] = np.asarray(_np(k, inputs, [value(a) for a in k.args]), dtype=k.dtype)
        return memo[id(k)]

    with np.errstate(all="ignore"):
        return value(root)


def _np(k, inputs, a):
    if k.op == "param":
        return inputs[k.value]
    if k.op == "lit":
        return k.value
    if k.op == "cast":
        return a[0].astype(k.dtype)
    if k.op == "unop":
        return np.logical_not(a[0]) if k.value == "!" else np.negative(a[0])
    if k.op == "binop":
        return _NP_OPS[k.value](*a)
    if k.op == "select":
        return np.where(*a)
    return _NP_CALLS[k.value](*a)


# ---- the kernel ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Kernel:
    """One ``cupy.ElementwiseKernel``: its Python name, CUDA name, signature and body."""
    name: str          # the module-level name the generated code calls (``_k0``)
    cuda_name: str     # the kernel's name on the device
    in_params: str     # "float64 x0, float64 x1"
    out_params: str    # "float64 out"
    operation: str     # "out = fma(x0, x1, tanh(x0));"
    tree: K

    def definition(self, xp_name="cp") -> str:
        """``_k0 = cp.ElementwiseKernel(...)``: created once, when the module loads."""
        return (f"{self.name} = {xp_name}.ElementwiseKernel(\n"
                f"    {_quote(self.in_params)}, {_quote(self.out_params)},\n"
                f"    {_quote(self.operation)},\n    {_quote(self.cuda_name)})")

    def evaluate(self, *inputs):
        """What the kernel computes, with NumPy."""
        return evaluate(self.tree, inputs)


def _quote(text: str) -> str:
    assert '"' not in text and "\\" not in text, text
    return f'"{text}"'


def kernel_signature(block, root: K, lifted=()):
    """``(in_params, out_params, operation)`` of ``block`` lowered to ``root``; ``lifted``: the
    dtypes of the literals :func:`lift_literals` made parameters, after the block's own."""
    dtypes = [_dtype_of(p.aval) for p in block.params] + [d for d, _ in lifted]
    ins = ", ".join(f"{d} x{k}" for k, d in enumerate(dtypes))
    return ins, f"{root.dtype} out", c_code(root)


# ---- literals as parameters (ahead of time) ---------------------------------------------------
KEPT = (0, 1, -1)   # literals no size of 2 or more gives, kept in the C text


def lift_literals(root: K, first: int):
    """``root`` with each numeric literal but :data:`KEPT` read from a parameter ``x<first>``,
    ``x<first+1>``... (equal literals share one), and ``[(dtype, value)]`` of those parameters.

    Ahead of time one body serves every size (:mod:`adcompiler.aot.polymorphic`), and a number
    that changes with the sizes (a mean's ``1 / n``) must be in the Python text, where the merge
    reads it, not in a kernel's C text. A literal keeps its dtype (it was converted where the
    tree was built), so the kernel computes what it did; the values pass as the call's last
    arguments."""
    lifted, memo = {}, {}

    def rebuilt(k):
        if id(k) in memo:
            return memo[id(k)]
        if k.op == "lit" and k.dtype != "bool" and k.value not in KEPT:
            key = (k.dtype, k.value)
            out = K("param", k.dtype, value=first + lifted.setdefault(key, len(lifted)))
        else:
            out = K(k.op, k.dtype, tuple(rebuilt(a) for a in k.args), k.value) if k.args else k
        memo[id(k)] = out
        return out

    new = rebuilt(root)
    return new, sorted(lifted, key=lifted.get)
