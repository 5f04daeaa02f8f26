"""Simplify fused elementwise expressions with SymPy, keeping a rewrite only when it does less work.

Each ``fused`` node's block (made by :mod:`.fuse`) is a tree of elementwise operations on the
node's inputs. It becomes one SymPy expression (a symbol per input); SymPy's canonical form
already merges like terms (``t + t + t`` is ``3*t``) and folds constants; then a fixed list of
rewrites (factoring out common factors, one fraction, collecting on each input) is tried, also
after using what the forward part already computed: an input ``s`` computed as ``1/t`` from
another input ``t`` lets ``t`` be replaced by ``1/s`` (``-(-2*s)*s/t*e`` becomes ``2*s**3*e``),
and an input that is a broadcast constant (a seed of ones) is that constant. The cheapest
candidate wins, by cost (transcendental calls, then operations); the block is replaced only
when it costs less than before.

Two tiers do this. A block that is a polynomial in its inputs and calls (no quotient of sums,
no product of sums, no sinh/cosh or sin/cos pair) goes to :mod:`.algebra_poly`, which tries
the same rewrites on an exact normal form in well under a millisecond; only the others go to
SymPy (:mod:`.algebra_sympy`), and only where :func:`promising` sees something to gain, since
importing SymPy alone takes ~0.2 s of a first call. Ahead of time, a block with two float
literals is left as written (:func:`_float_literals`). Invariants: the node keeps its inputs,
its output aval and its place; the new block is again a tree (each inner value read once); the
result is the same up to floating-point rounding; the outcome depends only on the expression
(deterministic, cached per process), and expressions over ``MAX_NODES`` operations are left
alone, which bounds the time.
"""

from __future__ import annotations

from ..ir import Block, Literal, Value, sizing, walk
from ..ir.builder import Builder
from . import algebra_poly as poly
from .algebra_probe import keeps_finite

MAX_NODES = 24          # larger expressions are left as they are (SymPy's time grows fast)
MIN_NODES = 3           # one or two operations cannot get cheaper in a way that pays
_TRANSCENDENTAL = poly.CALLS
_ARITHMETIC = {"add", "subtract", "multiply", "divide", "negative", "power", "square",
               "reciprocal"}
_CACHE: dict = {}       # (expression, relations) -> the best expression found, or None


def simplify_fused_symbolically(graph):
    """Replace each fused block by a cheaper equivalent one, where SymPy finds one."""
    producers = {v: n for n in walk(graph.nodes) for v in n.outputs}
    for node in list(walk(graph.nodes)):
        if node.prim == "fused" and _eligible(node):
            _simplify(node, producers, graph)
    return graph


def _eligible(node) -> bool:
    (block,) = node.regions
    values = list(node.inputs) + list(node.outputs)
    return (MIN_NODES <= len(block.nodes) <= MAX_NODES
            and all(n.prim in _ARITHMETIC | _TRANSCENDENTAL and not n.params.get("py")
                    for n in block.nodes)
            and all(not isinstance(v, Value) or v.aval.is_float for v in values)
            and not (sizing.is_symbolic() and _float_literals(block) > 1))


def _float_literals(block) -> int:
    """The block's Python-float literals. Ahead of time (``adcompiler compile``) a block with
    two is left as written: each may be a size used as a number (``math.log(n)``,
    ``1 / math.sqrt(d)``), which the module's merge fits apart (:mod:`adcompiler.aot.antiunify`),
    never folded into one float; the count is by type, not value, so every sample decides
    alike."""
    return sum(isinstance(a, Literal) and isinstance(a.value, float)
               for n in block.nodes for a in n.inputs)


def cost(nodes) -> tuple:
    """(transcendental calls, operations): what a rewrite must lower."""
    return (sum(n.prim in _TRANSCENDENTAL for n in nodes), len(nodes))


def _simplify(node, producers, graph):
    (block,) = node.regions
    links = _links(node, producers)
    calls: dict = {}
    p = poly.to_poly(block, calls)
    if p is not None and not _trig_pair(calls):
        _replace(node, graph, _cheapest_poly(p, _poly_links(node, links, calls), calls, block),
                 producers)
        return
    if not promising(block, links):
        return  # SymPy is imported only where it may pay (its import alone takes ~0.2 s)
    from . import algebra_sympy as sy
    symbols = sy.symbols_for(len(block.params))
    expr = sy.to_sympy(block, dict(zip(block.params, symbols)))
    if expr is None:
        return
    relations = _relations(node, links, symbols)
    key = (sy.key(expr), tuple((sy.key(s), sy.key(f)) for s, f in relations))
    if key not in _CACHE:
        _CACHE[key] = sy.best(expr, relations, symbols, _cost_of)
    best = _CACHE[key]
    if best is not None:
        _replace(node, graph, lambda b, params: sy.emit(
            best, b, dict(zip(sy.symbols_for(len(params)), params))), producers)


def _replace(node, graph, write, producers):
    """Give ``node`` the block ``write(builder, params)`` emits, where it costs less and stays
    finite where the block did (:mod:`.algebra_probe`)."""
    (block,) = node.regions
    new = None if write is None else _build(write, node, graph)
    if new is None or cost(new.nodes) >= cost(block.nodes):
        return
    if not keeps_finite(block, new, node.inputs, producers):
        return
    read = {x for n in new.nodes for x in n.inputs}
    kept = [i for i, p in enumerate(new.params) if p in read]  # a constant input may drop out
    new.params = [new.params[i] for i in kept]
    node.inputs = tuple(node.inputs[i] for i in kept)
    node.regions = (new,)


# ---- the fast tier: polynomials, no SymPy (passes/algebra_poly.py) ---------------------------
_QUOTIENTS = (("sinh", "cosh"), ("sin", "cos"))   # what algebra_sympy._quotients rewrites


def _trig_pair(calls) -> bool:
    """Calls only SymPy's identities can merge (``sinh(a)/cosh(a)`` is ``tanh(a)``)."""
    made = {(prim, k) for prim, k in calls}
    return any((a, k) in made and (b, k) in made for a, b in _QUOTIENTS for _, k in made)


def _poly_links(node, links, calls) -> list:
    """(input position, its producer as a polynomial of the node's other inputs) of each link."""
    at = {x: i for i, x in enumerate(node.inputs)}
    out = []
    for i, p in links:
        try:
            if p.prim in ("broadcast_to", "full"):   # a constant (_links checked its value)
                f = poly.const(p.inputs[0].value)
            else:
                f = poly.apply(p.prim, [poly.const(a.value) if isinstance(a, Literal)
                                        else poly.atom(("in", at[a])) for a in p.inputs], calls)
        except (poly.NotPolynomial, ZeroDivisionError, TypeError, ValueError, OverflowError):
            continue   # inf or nan (no exact Fraction), or a form the tier does not express
        out.append((i, f))
    return out


def _cheapest_poly(p, links, calls, block):
    """The cheapest candidate's writer, or None; between equal costs, the one with fewer
    divisions (slower than products), then the first."""
    best, lowest = None, None
    for candidate in poly.candidates(p, links, calls):
        counter = _Counter()
        out = candidate(poly.Emitter(counter, [_Priced("input")] * len(block.params), calls))
        c = (*cost(counter.nodes), sum(n.prim == "divide" for n in counter.nodes)) \
            if isinstance(out, _Priced) else None
        if c is not None and (lowest is None or c < lowest):
            best, lowest = candidate, c
    if best is None:
        return None
    return lambda b, params: best(poly.Emitter(b, params, calls))


def _links(node, producers) -> list:
    """(input position, its producer) for each input the forward part computed from the node's
    other inputs and constants (elementwise), or that is a broadcast constant."""
    out = []
    for i, x in enumerate(node.inputs):
        p = producers.get(x)
        if p is None or len(p.outputs) != 1 or p.params.get("py"):
            continue
        if p.prim in ("broadcast_to", "full") and isinstance(p.inputs[0], Literal):
            out.append((i, p))
        elif p.prim in _ARITHMETIC | _TRANSCENDENTAL and all(
                isinstance(a, Literal) or a in node.inputs for a in p.inputs):
            out.append((i, p))
    return out


def _relations(node, links, symbols) -> list:
    """(symbol, SymPy expression) of each link: ``s = f(other inputs)``, or ``s = constant``."""
    from . import algebra_sympy as sy
    sym_of = dict(zip(node.inputs, symbols))
    out = []
    for i, p in links:
        args = [sy.number(a.value) if isinstance(a, Literal) else sym_of[a] for a in p.inputs]
        f = args[0] if p.prim in ("broadcast_to", "full") else sy.apply(p.prim, args)
        if f is not None:
            out.append((symbols[i], f))
    return out


# ---- where SymPy may pay ----------------------------------------------------------------------
_SUMS, _PRODUCTS = {"add", "subtract"}, {"multiply", "divide"}


def promising(block, links) -> bool:
    """Whether the block has something SymPy's canonical form or rewrites remove: a sign or a
    constant to fold into a product, two constants in one sum or product, a term three times
    or a factor shared by two products in one sum, ``(1/a)*b``, ``sinh(a)`` with ``cosh(a)``,
    a constant input, an input that is the reciprocal of another (reuse), or an input that is a
    constant times another (inlining it may collect terms). Cheap, no SymPy."""
    made = {n.outputs[0]: n for n in block.nodes}
    inner = lambda x, prims: x in made and made[x].prim in prims  # noqa: E731
    for n in block.nodes:
        ins = n.inputs
        if n.prim == "negative" and inner(ins[0], _PRODUCTS | {"negative"}):
            return True
        if n.prim in _PRODUCTS and any(inner(x, {"negative"}) for x in ins) \
                and not _sign_stuck(n, block, made):
            return True
        if n.prim == "multiply" and any(inner(x, {"divide"}) and _unit(made[x].inputs[0])
                                        for x in ins):
            return True
        for family in (_SUMS, _PRODUCTS):
            if n.prim in family and not any(n.outputs[0] in m.inputs for m in block.nodes
                                            if m.prim in family):
                if _cluster_pays(n, family, made):
                    return True
    calls = {(n.prim, n.inputs[0]) for n in block.nodes if n.prim in _TRANSCENDENTAL}
    if any((a, x) in calls and (b, x) in calls for a, b in (("sinh", "cosh"), ("sin", "cos"))
           for _, x in calls):
        return True
    return any(p.prim in ("broadcast_to", "full") or (p.prim == "divide" and isinstance(
        p.inputs[0], Literal)) or _scaled_twin(p, block) for _, p in links)


def _sign_stuck(n, block, made) -> bool:
    """Whether the sign of a negated factor of product ``n`` stays where it is in SymPy's
    form: the product tree under it is the block's result (no sum or call to take the sign),
    with one negated factor, of no sum, and no integral literal (an Integer coefficient takes
    the sign: ``2*(-a)`` is ``-2*a``; a Float one does not, as :func:`.algebra_sympy.emit`
    writes it). So ``0.0001/(1 + exp(t1*t2)) * -t1``, the logistic loss's adjoint, is left
    without importing SymPy, which would find nothing cheaper."""
    root = n
    while root.outputs[0] not in block.outputs:
        readers = [m for m in block.nodes if root.outputs[0] in m.inputs]
        if len(readers) != 1 or readers[0].prim not in _PRODUCTS:
            return False
        root = readers[0]
    leaves = _leaves(root, _PRODUCTS, made)
    negated = [made[x] for x in leaves if x in made and made[x].prim == "negative"]
    return (len(negated) == 1
            and not any(x in made and made[x].prim in _SUMS | _PRODUCTS | {"negative"}
                        for x in negated[0].inputs)
            and not any(isinstance(x, Literal) and _integral(x.value) for x in leaves))


def _integral(v) -> bool:
    return isinstance(v, (bool, int)) or (isinstance(v, float) and v.is_integer())


def _scaled_twin(p, block) -> bool:
    """A link ``s = c * x``, with ``x`` another input of the node (``_links`` checks that):
    inlining ``s`` lets ``c * x`` and the block's terms in ``x`` collect into one."""
    return p.prim == "multiply" and sum(isinstance(a, Literal) for a in p.inputs) == 1


def _unit(x) -> bool:
    return isinstance(x, Literal) and x.value in (1, -1)


def _leaves(n, family, made) -> list:
    """The operands of the maximal sum (or product) tree under ``n``."""
    out = []
    for x in n.inputs:
        if x in made and made[x].prim in family:
            out += _leaves(made[x], family, made)
        else:
            out.append(x)
    return out


def _cluster_pays(root, family, made) -> bool:
    leaves = _leaves(root, family, made)
    if sum(isinstance(x, Literal) for x in leaves) >= 2:
        return True
    if family is _PRODUCTS:
        return False
    terms = [x for x in leaves if not isinstance(x, Literal)]
    if any(terms.count(t) >= 3 for t in terms):
        return True
    factors = [set(_leaves(made[t], _PRODUCTS, made)) if t in made and made[t].prim
               in _PRODUCTS else None for t in terms]
    shared = [f for f in factors if f is not None and len(f) >= 2]
    return any(x in g for i, f in enumerate(shared) for g in shared[i + 1:] for x in f
               if not isinstance(x, Literal))


class _Counter:
    """Stands in for the Builder while pricing a candidate: counts what would be emitted."""

    def __init__(self):
        self.nodes = []

    def emit(self, prim, inputs, params=None):
        self.nodes.append(_Priced(prim))
        return self.nodes[-1]


class _Priced:
    def __init__(self, prim):
        self.prim = prim


def _cost_of(expr):
    from . import algebra_sympy as sy
    counter = _Counter()
    out = sy.emit(expr, counter, _Symbols())
    return cost(counter.nodes) if isinstance(out, _Priced) else None


class _Symbols(dict):
    """Every symbol reads as an input."""

    def __missing__(self, symbol):
        return symbol


def _build(write, node, graph):
    """A block of what ``write(builder, params)`` emits, from fresh params standing for the
    node's inputs; None where it cannot (an unsupported function) or would not keep the node's
    output aval."""
    (old,) = node.regions
    params = [Value(p.aval) for p in old.params]
    block = Block(params=params)
    b = Builder(graph)
    b.phase, b.source = node.phase, node.source
    with b, b.into(block):
        out = write(b, params)
    if not isinstance(out, Value) or out.aval != node.outputs[0].aval or not block.nodes:
        return None
    if out is not block.nodes[-1].outputs[0]:
        return None
    block.outputs = [out]
    return block
