"""``symbolic(f)``: the gradient of a scalar function of Python floats as SymPy expressions.

It runs the compiler's own gradient graph (lowered, differentiated by the templates, simplified)
on SymPy symbols: one source of truth with the compiled code. Invariants: every expression is
exactly what the generated code computes, with float literals read as the decimals they print
as (``0.5`` is ``1/2``); a ``cond`` becomes a ``Piecewise``; a ``loop`` is unrolled; shared
subexpressions are factored out with ``sympy.cse``, so loops do not swell the printed result.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

from ..errors import CompileError
from ..ir import Aval, Literal, Value
from ..api.signature import resolve_wrt

_SIMPLIFY_MAX_OPS = 60   # sympy.simplify takes seconds beyond this (2.4 s at 120 ops): cse only


@dataclass
class SymbolicGradient:
    """``exprs``: one simplified expression per wrt parameter; ``value``: the function itself;
    ``cse``: ``(replacements, reduced)`` from ``sympy.cse`` over ``(value, *exprs)``;
    ``symbols``: the parameters' symbols."""

    function: str
    symbols: tuple
    wrt: tuple
    value: object
    exprs: tuple
    cse: tuple

    def __iter__(self):
        return iter(self.exprs)

    def __getitem__(self, i):
        return self.exprs[i]

    def lambdify(self):
        """A NumPy function of the parameters returning the gradient tuple."""
        import sympy
        return sympy.lambdify(self.symbols, self.exprs, "numpy")

    def __str__(self):
        replacements, reduced = self.cse
        lines = [f"{name} = {expr}" for name, expr in replacements]
        lines.append(f"{self.function} = {reduced[0]}")
        lines += [f"d{self.function}/d{w} = {e}" for w, e in zip(self.wrt, reduced[1:])]
        return "\n".join(lines)


def symbolic(f, wrt=None, **static) -> SymbolicGradient:
    """The gradient of ``f`` with respect to ``wrt`` (default: every parameter not given in
    ``static``), each parameter a real SymPy symbol named like it. ``static`` gives values to
    parameters that are not Python floats (ints that size loops, flags).

    Only scalar code compiles to one expression: Python floats and 0-d arrays, ``if`` (a
    ``Piecewise``) and ``for`` loops (unrolled); a ``while`` whose test depends on the inputs
    cannot. Expressions of up to 60 operations go through ``sympy.simplify``; larger ones (it
    takes seconds there) are kept as computed, and ``cse`` shares their common parts.
    """
    import sympy

    from ..pipeline import gradient_graph
    params = [p for p in resolve_wrt(f, tuple(range(_arity(f))))]
    traced = [p for p in params if p not in static]
    wrt = resolve_wrt(f, tuple(traced) if wrt is None else wrt)
    arguments = {p: static[p] if p in static else Aval("float", "float64") for p in params}
    graph, _ = gradient_graph(f, arguments, wrt, "value_and_grad", plain=True)
    symbols = {p: sympy.Symbol(p.name, real=True) for p in graph.params}
    value, *grads = interpret(graph, symbols)
    exprs = tuple(_simplify(e) for e in grads)
    return SymbolicGradient(f.__name__, tuple(symbols.values()), wrt, _simplify(value), exprs,
                            sympy.cse([_simplify(value), *exprs]))


def _arity(f):
    import inspect
    return len(inspect.signature(f).parameters)


def _simplify(e):
    import sympy
    e = sympy.sympify(e)
    return sympy.simplify(e) if sympy.count_ops(e) <= _SIMPLIFY_MAX_OPS else e


# ---- the interpreter: env, read, write, a table lookup per primitive ---------------------------
def interpret(graph, symbols: dict) -> list:
    """The outputs of ``graph`` with its parameters bound to ``symbols`` (Value -> SymPy)."""
    env = dict(symbols)
    for v in graph.consts:
        raise CompileError(f"symbolic mode needs a function of scalars; it reads the array "
                           f"`{v.name}`", hint="pass it as a parameter")
    run_nodes(graph.nodes, env)
    return [read(env, x) for x in graph.outputs]


def read(env, x):
    if isinstance(x, Literal):
        return number(x.value)
    return env[x]


def number(value):
    """A Python number as SymPy reads it printed: ``0.5`` is ``1/2``; ``log(2)`` and
    ``log(10)`` (in the rules of log2, log10 and exp2) are SymPy's, which simplify with the
    logarithms of the values (their 16-digit fractions make ``sympy.simplify`` crawl)."""
    import sympy
    if isinstance(value, bool):
        return sympy.true if value else sympy.false
    if isinstance(value, float) and value in (_LN2, _LN10):
        return sympy.log(2 if value == _LN2 else 10)
    if isinstance(value, float) and not math.isfinite(value):
        return sympy.nan if math.isnan(value) else sympy.oo * (1 if value > 0 else -1)
    return sympy.Rational(repr(value)) if isinstance(value, float) else sympy.Integer(value)


_LN2, _LN10 = math.log(2.0), math.log(10.0)


def run_nodes(nodes, env):
    for node in nodes:
        args = [read(env, x) for x in node.inputs]
        if node.prim in REGIONS:
            outs = REGIONS[node.prim](node, args, env)
        else:
            _check_scalar(node)
            outs = (_rule(node)(*args, **_params(node)),)
        env.update(zip(node.outputs, outs))


def _params(node):
    return {k: v for k, v in node.params.items() if k != "py"}


def _check_scalar(node):
    """Every value a node reads or makes is a scalar (but a loop's stack, read at ``k``)."""
    reads = node.inputs[1:] if node.prim in ("getitem", "list_get") else node.inputs
    for v in list(reads) + list(node.outputs):
        if isinstance(v, Value) and v.aval.known_shape != ():
            raise CompileError(f"symbolic mode works on scalars; `{node.prim}` here works on "
                               f"{v.aval} (in: {node.source})",
                               hint="use adcompiler.grad for array code")


def _rule(node):
    if node.prim in RULES:
        return RULES[node.prim]
    from ..templates.ops import SymbolicOps
    try:
        return getattr(SymbolicOps(), node.prim)
    except KeyError:
        raise CompileError(f"symbolic mode has no SymPy meaning for `{node.prim}` (in: "
                           f"{node.source})") from None


def _identity(x, **params):
    return x


def _where(c, x, y):
    import sympy
    return sympy.Piecewise((x, c), (y, True))


def _relation(op):
    return lambda x, y: op(x, y)


def _getitem(x, *arrays, index):
    """Only a stacked loop value read at an iteration: ``ys[k]``."""
    (item,) = index
    k = arrays[item[1]] if item[0] == "a" else item[1]
    return x[int(k)]


def _logic(name):
    def rule(*xs):
        import sympy
        return {"logical_and": sympy.And, "logical_or": sympy.Or,
                "logical_not": sympy.Not}[name](*xs)
    return rule


RULES = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
    "divide": operator.truediv, "power": operator.pow, "negative": operator.neg,
    "greater": _relation(operator.gt), "greater_equal": _relation(operator.ge),
    "less": _relation(operator.lt), "less_equal": _relation(operator.le),
    "equal": lambda x, y: __import__("sympy").Eq(x, y),
    "not_equal": lambda x, y: __import__("sympy").Ne(x, y),
    "where": _where, "getitem": _getitem, "list_get": lambda s, k: s[int(k)],
    "logical_and": _logic("logical_and"), "logical_or": _logic("logical_or"),
    "logical_not": _logic("logical_not"),
    "zeros_like": lambda x, **p: 0, "ones_like": lambda x, **p: 1,
    "zeros": lambda **p: 0, "ones": lambda **p: 1, "full": lambda fill, **p: fill,
}
for _name in ("to_float", "asarray", "copy", "astype", "broadcast_to", "sum_to", "reshape",
              "squeeze", "expand_dims", "transpose", "sum", "mean", "max", "min", "prod",
              "stop_gradient"):
    RULES[_name] = _identity


# ---- regions ---------------------------------------------------------------------------------
def _cond(node, args, env):
    """Both branches; each output a Piecewise on the predicate (one, if it is decided)."""
    import sympy
    (pred,) = args
    results = []
    for block in node.regions:
        run_nodes(block.nodes, env)
        results.append([read(env, x) for x in block.outputs])
    if pred in (sympy.true, sympy.false):
        return results[0] if pred == sympy.true else results[1]
    return [sympy.Piecewise((a, pred), (b, True)) for a, b in zip(*results)]


def _loop(node, args, env):
    """Unrolled: the body once per iteration, forwards or backwards."""
    n, *carried = args
    (body,) = node.regions
    m = node.params.get("stacked", 0)
    n_carried = len(carried)
    stacks = [[None] * int(n) for _ in range(m)]
    order = range(int(n) - 1, -1, -1) if node.params.get("reverse") else range(int(n))
    for k in order:
        env.update(zip(body.params, [number(k), *carried]))
        run_nodes(body.nodes, env)
        yields = [read(env, x) for x in body.outputs]
        carried = yields[:n_carried]
        for stack, y in zip(stacks, yields[n_carried:]):
            stack[k] = y
    return carried + stacks


def _while(node, args, env):
    """Unrolled while its test is decided (it depends on no input); else an error."""
    import sympy
    test, body = node.regions
    carried = list(args)
    m = node.params.get("stacked", 0)
    stacks = [[] for _ in range(m)]
    while True:
        env.update(zip(test.params, carried))
        run_nodes(test.nodes, env)
        pred = read(env, test.outputs[0])
        if pred not in (sympy.true, sympy.false):
            raise CompileError("symbolic mode cannot unroll a while loop whose test depends on "
                               f"the inputs ({node.source})", hint="use a for loop")
        if pred == sympy.false:
            return carried + stacks
        env.update(zip(body.params, carried))
        run_nodes(body.nodes, env)
        yields = [read(env, x) for x in body.outputs]
        carried = yields[:len(carried)]
        for stack, y in zip(stacks, yields[len(carried):]):
            stack.append(y)


REGIONS = {"cond": _cond, "loop": _loop, "while": _while}

__all__ = ["symbolic", "SymbolicGradient", "interpret"]
