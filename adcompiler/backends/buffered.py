"""Emit elementwise results into planned buffers: ``np.tanh(x, out=_buf0)`` chains.

A fused node is written as one ufunc call per operation, each writing into a buffer: a dying
intermediate's buffer is reused in place (elementwise ops may write over an input of the same
shape), the chain's result goes into a planned buffer, and a comment above the chain shows it as
the one expression it computes. An unplanned chain (its result escapes, as a loop's carried
cotangent does) is one expression, or, where it reads last an array this code made of the
result's shape, computed op by op into that array (an accumulation without a new array).
Invariant: every buffer is taken from and released to the planner's
:class:`~adcompiler.backends.planner.Pool`, never read after release.
"""

from __future__ import annotations

import ast

from ..ir import Literal, Value
from . import numexpr_chains
from .expressions import const, node_expr, ufunc_callee
from .planner import UFUNCS


def ufunc_call(node, args, out, xp_name="np"):
    """``np.<prim>(*args, out=out)`` for an elementwise primitive (``out``: a name, or an
    expression such as ``hs[t]``)."""
    name, args = ufunc_of(node, args, xp_name)
    func = ufunc_callee(name, xp_name)
    target = ast.Name(out, ast.Load()) if isinstance(out, str) else out
    return ast.Call(func, list(args), [ast.keyword("out", target)])


_POWERS = {2: "square", 0.5: "sqrt", -1: "reciprocal"}   # NumPy's own fast paths of ``x ** c``


def ufunc_of(node, args, xp_name="np") -> tuple:
    """``(ufunc name, args)``: ``x ** 2`` as ``np.square(x)`` (and ``** 0.5``, ``** -1``), as
    NumPy's ``x ** 2`` itself computes it: ``np.power(x, 2, out=b)`` skips that fast path and
    calls libm's pow, many times slower; ``x ** 3`` as ``np.multiply(np.square(x), x)``, as
    JAX's integer powers (libm's pow of a negative base took 3.2 ms on 65536 entries, the
    products 0.08 ms; the last bit may differ from pow's)."""
    if node.prim == "power" and isinstance(node.inputs[1], Literal) and \
            type(node.inputs[1].value) in (int, float) and node.out.aval.is_float:
        c = node.inputs[1].value
        if c in _POWERS:
            return _POWERS[c], list(args[:1])
        if c == 3:
            square = ast.Attribute(ast.Name(xp_name, ast.Load()), "square", ast.Load())
            return "multiply", [ast.Call(square, [args[0]], []), args[0]]
    return node.prim, list(args)


def masked_operands(block) -> dict:
    """``{a: its node}`` for the chain's ``where(c, a, b)`` whose ``a`` is a ufunc of the
    chain's inputs alone, read by the where alone, of the result's shape and dtype: computed
    only where ``c`` holds, into ``b``'s buffer (maximum's adjoint: ``np.multiply(g, 0.5,
    out=_buf7, where=_buf11)``), not over the whole array into a buffer of its own first."""
    reads, made = {}, {n.outputs[0]: n for n in block.nodes}
    for inner in block.nodes:
        for x in inner.inputs:
            reads[x] = reads.get(x, 0) + 1
    found = {}
    for inner in block.nodes:
        if inner.prim != "where" or len(inner.inputs) != 3:
            continue
        a = inner.inputs[1]
        node = made.get(a)
        if (node is not None and node.prim in UFUNCS and reads.get(a) == 1
                and a not in block.outputs and a.aval == inner.outputs[0].aval
                and not any(x in made for x in node.inputs)):
            found[a] = node
    return found


class BufferedEmission:
    """Mixin of the Emitter for fused nodes (inline or buffered) and planned single ufuncs."""

    def fused_params(self, block, args):
        """(statements, {param: expression}): a param read several times is a name."""
        reads = {}
        for inner in block.nodes:
            for x in inner.inputs:
                reads[x] = reads.get(x, 0) + 1
        lines, exprs = [], {}
        for param, arg in zip(block.params, args):
            if reads.get(param, 0) > 1 and not isinstance(arg, ast.Name):
                name = self.name(param)  # an inlined expression read several times: once
                lines.append(self.render(ast.Assign([ast.Name(name, ast.Store())], arg)))
                arg = ast.Name(name, ast.Load())
            exprs[param] = arg
        return lines, exprs

    def chain_expression(self, block, exprs):
        """The fused chain as one expression (its inputs substituted)."""
        return self.chain_expressions(block.nodes, exprs)[block.outputs[0]]

    def chain_expressions(self, nodes, exprs):
        """``exprs`` and each of ``nodes``' expression, inputs substituted (in order)."""
        exprs = dict(exprs)
        for inner in nodes:
            ins = [const(x.value) if isinstance(x, Literal) else exprs[x] for x in inner.inputs]
            exprs[inner.outputs[0]] = node_expr(inner, ins, self.xp)
        return exprs

    def fused(self, node, args, at, path):
        """A fused elementwise chain: one expression, or a buffered chain when planned, or
        computed into the array of an input it reads last (:meth:`accumulator`)."""
        (block,) = node.regions
        lines, exprs = self.fused_params(block, args)
        into = None if node in self.chains else self.accumulator(node, block, exprs, at, path)
        if into is not None:
            target = self._bind(node.outputs[0], into[1])
        else:
            target = self.name(node.outputs[0], at, path)
        if node not in self.chains and into is None:
            expr = self.chain_expression(block, exprs)
            return lines + [self.render(ast.Assign([ast.Name(target, ast.Store())], expr))]
        shown = self.render(ast.Expr(self.chain_expression(block, exprs)))
        return lines + [f"# {target} = {shown}"] + self.buffered_chain(node, block, exprs,
                                                                        target, into)

    def accumulator(self, node, block, exprs, at, path):
        """``(block param, name)`` of an input of the unplanned chain ``node`` (a loop's
        carried cotangent: ``du_2 = du + dt6 + -2.0 * dt2 + dt11``) of its result's shape and
        dtype, read once in the chain, that this code made and nothing reads after it
        (:meth:`owned`, as for ``acc += g``): the chain is computed op by op into that array,
        its other intermediates in pool buffers, so an accumulation makes no new array. None
        where there is none, in plain code, and where numexpr would compute the chain."""
        out = node.outputs[0]
        if self.plain or self.xp != "np" or out.aval.shape is None or \
                not all(n.prim in UFUNCS for n in block.nodes) or \
                (self.numexpr and numexpr_chains.plan(block) is not None):
            return None   # (np.where has no out=)
        reads = {}
        for inner in block.nodes:
            for x in inner.inputs:
                reads[x] = reads.get(x, 0) + 1
        for x, p in zip(node.inputs, block.params):
            if (isinstance(x, Value) and x.aval == out.aval and reads.get(p) == 1
                    and p not in block.outputs and x in self.names
                    and isinstance(exprs.get(p), ast.Name) and exprs[p].id == self.names[x]
                    and self.owned(x, at, path, out)):
                return p, self.names[x]
        return None

    def buffered_chain(self, node, block, exprs, target, into=None):
        """The chain op by op into buffers (numexpr computing runs of arithmetic, where
        :mod:`~adcompiler.backends.numexpr_chains` says it pays); with ``into`` (``(param,
        name)``), the steps from that input on and the result into the input's own array."""
        lines, steps = self.numexpr_steps(block, exprs)
        bufs, root = {}, steps[-1]
        mine = None if into is None else into[1]   # never a pool buffer: never released
        if into is not None:
            bufs[into[0]] = mine
        masked = masked_operands(block)
        if node not in self.planned and mine is None and root.node is not None:
            masked.pop(root.node.inputs[1] if root.node.prim == "where" else None, None)
        for step in steps:
            out = step.value
            if out in masked:
                continue   # computed by its where, where the mask holds
            if step is not root and step.node is not None and out.aval.shape is None:
                exprs[out] = self.step_call(step, bufs, exprs, None)  # a Python number (-0.3):
                continue                                              # inlined where it is read
            inputs = list(step.leaves.values()) if step.node is None else step.node.inputs
            dying = [x for x in inputs if x in bufs]
            fresh = step is root and node not in self.planned and mine is None  # it escapes
            held = [bufs[x] for x in dying if bufs[x] == mine and x.aval == out.aval]
            reuse = (held or [None])[0] or next((bufs[x] for x in dying
                                                 if x.aval == out.aval and bufs[x] != mine), None)
            if step.node is not None and step.node.prim == "where":
                reuse = bufs[step.node.inputs[2]]   # into b's buffer: see planner.where_over
            buf = None if fresh else mine if step is root and mine else \
                reuse or self.pool.take(out.aval)
            for x in dying:
                if bufs[x] != buf and bufs[x] != mine:
                    self.pool.release(bufs[x])
            call = self.step_call(step, bufs, exprs, buf, masked)
            if step is root:
                if not fresh and mine is None:
                    self.pool.holder[buf] = node.outputs[0]
                lines.append(self.render(ast.Expr(call) if mine else
                                         ast.Assign([ast.Name(target, ast.Store())], call)))
            else:
                bufs[out] = buf
                lines.append(self.render(ast.Expr(call)))
            lines.extend(self.poison_released())
        return lines

    def poison_released(self):
        """In poisoned code (:mod:`~adcompiler.backends.check_modes`), ``_poison(_buf1)`` for
        the buffers released since the last call: a later read of one shows as NaN."""
        names, self.pool.released = self.pool.released, []
        if not (self.poison and names):
            return []
        self.uses_poison = True
        return [f"_poison({', '.join(names)})"]

    def step_call(self, step, bufs, exprs, buf, masked=None):
        """One step's call: ``np.<ufunc>(..., out=buf)`` or ``ne.evaluate('...', out=buf)``
        (no ``out`` where ``buf`` is None: a fresh array); a where's into ``buf``, which holds
        its ``b``: ``np.positive(a, out=buf, where=c)``, or, for an ``a`` in ``masked``
        (:func:`masked_operands`), ``a``'s own ufunc there: ``np.multiply(g, 0.5, out=buf,
        where=c)``."""
        out = [] if buf is None else [ast.keyword("out", ast.Name(buf, ast.Load()))]
        if step.node is None:
            text = numexpr_chains.spell(step, lambda x: bufs.get(x) or exprs[x].id)
            return ast.Call(ast.Attribute(ast.Name("ne", ast.Load()), "evaluate", ast.Load()),
                            [ast.Constant(text)], out)
        def expr(x):
            return (const(x.value) if isinstance(x, Literal) else
                    ast.Name(bufs[x], ast.Load()) if x in bufs else exprs[x])
        if buf is not None and step.node.prim == "where":  # buf holds b: a where c holds
            a = step.node.inputs[1]
            if masked and a in masked:
                call = ufunc_call(masked[a], [expr(x) for x in masked[a].inputs], buf, self.xp)
            else:
                func = ast.Attribute(ast.Name(self.xp, ast.Load()), "positive", ast.Load())
                call = ast.Call(func, [expr(a)], [ast.keyword("out", ast.Name(buf, ast.Load()))])
            call.keywords.append(ast.keyword("where", expr(step.node.inputs[0])))
            return call
        ins = [expr(x) for x in step.node.inputs]
        if buf is None:
            return node_expr(step.node, ins, self.xp)
        return self.ufunc_into(step.node, ins, buf)

    def ufunc_into(self, node, ins, buf):
        """``np.<prim>(*ins, out=buf)``; on the numexpr path, a large one cut over threads:
        ``_threaded(np.tanh, x, out=buf)`` (see :mod:`adcompiler.runtime.threaded`); never
        a product (its operands are not cut alike)."""
        if node.prim == "matmul" or not (self.numexpr and numexpr_chains.threadable(node)):
            return ufunc_call(node, ins, buf, self.xp)
        self.uses_threads = True
        name, ins = ufunc_of(node, ins, self.xp)
        func = ufunc_callee(name, self.xp)
        return ast.Call(ast.Name("_threaded", ast.Load()), [func, *ins],
                        [ast.keyword("out", ast.Name(buf, ast.Load()))])

    def numexpr_steps(self, block, exprs):
        """(lines naming the chain's inputs for numexpr, the chain's steps): one step per node
        unless numexpr pays here and can spell every step's inputs."""
        per_node = [], [numexpr_chains.Step(n.outputs[0], node=n) for n in block.nodes]
        steps = numexpr_chains.plan(block) if self.numexpr else None
        if steps is None:
            return per_node
        read = {x for s in steps if s.node is None for x in s.leaves.values()}
        unnamed = [p for p in block.params if p in read and not isinstance(exprs[p], ast.Name)]
        names = {p: self.name(p) for p in unnamed}
        probe = {**{p: e.id for p, e in exprs.items() if isinstance(e, ast.Name)}, **names}
        if any(s.node is None and numexpr_chains.spell(s, lambda x: probe.get(x, "_buf0")) is None
               for s in steps):
            return per_node
        lines = []
        for p, name in names.items():  # numexpr reads variables, not expressions: name them
            lines.append(self.render(ast.Assign([ast.Name(name, ast.Store())], exprs[p])))
            exprs[p] = ast.Name(name, ast.Load())
        self.uses_numexpr = True
        return lines, steps

    def into_row(self, node, args):
        """A stacked value computed into its stack's row: ``h = np.tanh(t1 + t2, out=hs[t])``
        (a fused chain's last operation writes the row; the rest stays one expression)."""
        value = node.outputs[0]
        stack, counter = self.rows[value]
        row = ast.Subscript(ast.Name(self.names[stack], ast.Load()),
                            ast.Name(self.names[counter], ast.Load()), ast.Load())
        lines, root, ins = [], node, args
        if node.prim == "fused":
            (block,) = node.regions
            lines, exprs = self.fused_params(block, args)
            *inner, root = block.nodes
            exprs = self.chain_expressions(inner, exprs)
            ins = [const(x.value) if isinstance(x, Literal) else exprs[x] for x in root.inputs]
        where = (self.live.pos[node], self.live.path[node])
        target = self.name(value, *where)
        call = ufunc_call(root, ins, row, self.xp)
        return lines + [self.render(ast.Assign([ast.Name(target, ast.Store())], call))]

    def buffered_single(self, node, args, at, path):
        """A planned single ufunc: ``t1 = np.tanh(x, out=_buf0)``, or into the array of an input
        that dies here where this code made it: ``dt5 = np.multiply(t3, t2, out=t2)`` (the
        gathered rows ``t2 = V[iv]``: no pool buffer of their size kept between calls)."""
        target = self.name(node.outputs[0], at, path)
        buf = self.dying_input(node, args, at, path)
        lines = []
        if buf is None:
            buf = self.pool.take(node.outputs[0].aval, node.outputs[0])
            lines, args = self.product_first(node, args, buf)
        call = self.ufunc_into(node, args, buf)
        return lines + [self.render(ast.Assign([ast.Name(target, ast.Store())], call))]

    def product_first(self, node, args, buf):
        """(lines, args): a product inlined into the planned ufunc ``node`` of the result's
        shape and dtype computed into the result's own buffer first, the ufunc then in place:
        ``np.matmul(a2, W1, out=_buf4)`` and ``np.add(_buf4, b1, out=_buf4)`` rather than a
        fresh (128, 512) product (128 page faults a call in the transformer block's
        ``np.add(a2 @ W1, b1, out=_buf4)``). ``buf`` is a pool buffer no other input holds."""
        out = node.outputs[0]
        for i, (x, arg) in enumerate(zip(node.inputs, args)):
            made = self.producer.get(x) if isinstance(x, Value) else None
            if (made is not None and made.prim == "matmul" and x.aval == out.aval
                    and isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.MatMult)):
                func = ast.Attribute(ast.Name(self.xp, ast.Load()), "matmul", ast.Load())
                call = ast.Call(func, [arg.left, arg.right],
                                [ast.keyword("out", ast.Name(buf, ast.Load()))])
                rest = list(args)
                rest[i] = ast.Name(buf, ast.Load())
                return [self.render(ast.Expr(call))], rest
        return [], args

    def pool_prologue(self, fname):
        """The lines taking this call's buffers, and the module code that makes them."""
        names = [b[0] for b in self.pool.buffers]
        if not names:
            return [], [], []
        pool = f"_{fname}_buffers"
        taken = ", ".join(names) + ("," if len(names) == 1 else "")
        arrays = "".join(f"\n        {self.xp}.empty({tuple(shape)!r}, dtype={self.xp}.{dtype}),"
                         for _, shape, dtype in self.pool.buffers)
        module = [f"{pool} = []  # {fname}'s work arrays: one set per concurrent call",
                  f"def _new{pool}():\n    return ({arrays}\n    )"]
        take = [f"{taken} = {pool}.pop() if {pool} else _new{pool}()"]
        give = [f"{pool}.append(({taken}))"]
        if self.poison:  # no value is in them yet, none once the call returns
            self.uses_poison = True
            take.append(f"_poison({', '.join(names)})")
            give.insert(0, take[-1])
        return module, take, give
