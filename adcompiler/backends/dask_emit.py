"""The Dask spelling of the emitter: ``da.`` calls on chunked arrays, every value a new lazy
array, so the gradient is one Dask graph.

Invariants: no ``out=`` buffers, pooled stacks, numexpr or in-place updates (a Dask array is a
graph, not memory to reuse: ``acc[idx] = v`` is written on a copy, ``np.add.at`` as
``_add_at``, one ``da.bincount`` over the scattered values' chunks); a ``for`` loop's
residuals go into a list, stacked by ``da.stack`` after the loop; reductions are Dask's own
(chunk-wise tree reductions, never the data axis materialised); nothing is computed except a
predicate that Python control flow needs (an ``if`` or ``while`` on an array), each computed
once where it is tested, with a ``# computes the predicate: ...`` comment. Names dask.array
lacks (dtypes, ``np.errstate``) stay NumPy's.
"""

from __future__ import annotations

import ast

from ..ir import Value
from .emit import Emitter
from .expressions import (_adds_once, const, dtype_expr, index_expr, read_names)
from .loop_exit import early_exit

_ADD_AT = '''\
def _add_at(t, index, g):
    """`np.add.at(t, index, g)` as a new Dask array: each value of `g` counted into its
    element of `t` by one bincount over `g`'s chunks (a tree reduction)."""
    t = da.asarray(t)
    if any(isinstance(i, da.Array) for i in (index if isinstance(index, tuple) else (index,))):
        index = tuple(da.compute(*index)) if isinstance(index, tuple) else index.compute()
    where = np.arange(t.size).reshape(t.shape)[index]
    g = da.broadcast_to(g, where.shape)
    where = da.from_array(where, chunks=g.chunks).ravel()
    counts = da.bincount(where, weights=g.ravel(), minlength=t.size)
    return t + counts.reshape(t.shape).astype(t.dtype)'''


def lazy_values(graph) -> set:
    """The values that are Dask arrays when the code runs: the float array parameters (made
    Dask arrays on entry), and every array computed from one (a loop's carried value from a lazy
    initial value, a phi from lazy values in both branches). The others (Python numbers,
    NumPy constants and what is computed from them only) are spelled ``np.``: dask.array's
    functions take no Python scalar (``da.prod(2.0)``), where NumPy's functions hand a Dask
    array to Dask (``np.sum(x)`` is ``da.sum(x)``, NEP 18)."""
    lazy = {p for p in graph.params if p.aval.kind == "array" and p.aval.is_float}
    _mark(graph.nodes, lazy)
    return lazy


def _mark(nodes, lazy):
    for node in nodes:
        ins = [isinstance(x, Value) and x in lazy for x in node.inputs]
        if node.prim in ("loop", "while"):
            inits = ins[1:] if node.prim == "loop" else ins
            for block in node.regions:
                params = block.params[1:] if node.prim == "loop" else block.params
                lazy.update(p for p, on in zip(params, inits) if on)
        for block in node.regions:
            _mark(block.nodes, lazy)
        if node.prim == "cond":
            outs = [all(isinstance(b.outputs[i], Value) and b.outputs[i] in lazy
                        for b in node.regions) for i in range(len(node.outputs))]
        elif node.prim in ("loop", "while"):
            (body,) = node.regions[-1:]
            outs = [isinstance(x, Value) and x in lazy for x in body.outputs]
            outs = [o and (i >= len(inits) or inits[i]) for i, o in enumerate(outs)]
        else:
            outs = [any(ins)] * len(node.outputs)
        lazy.update(v for v, on in zip(node.outputs, outs)
                    if on and v.aval.kind in ("array", "list"))


_SAME_WHEN_0D = {"sum", "mean", "prod", "max", "min", "squeeze"}


class DaskEmitter(Emitter):
    """:class:`~adcompiler.backends.emit.Emitter` writing dask.array code (module name ``da``)."""

    def __init__(self, graph, xp_name="da", plain=False):
        super().__init__(graph, xp_name, plain)
        self.planned, self.chains, self.stacks = set(), set(), set()
        self.listed: dict = {}   # a for loop's residual stack -> filled as a list
        self.uses_add_at = False
        self.computed: set = set()   # predicates already computed into Python bools
        self.lazy = lazy_values(graph)

    def expr(self, node, args):
        """``da.`` where an input is a Dask array, else NumPy's spelling (see
        :func:`lazy_values`); a reduction or squeeze of a 0-d array along an axis, which NumPy
        takes (``np.max(x, axis=-1)`` is ``x``) and Dask refuses, is its input."""
        if node.prim in _SAME_WHEN_0D and node.params.get("axis") is not None and \
                isinstance(node.inputs[0], Value) and node.inputs[0].aval.known_shape == () \
                and node.inputs[0].aval == node.outputs[0].aval:
            return args[0]
        if node.prim == "getitem" and node.inputs[0] in self.lazy and \
                _pointwise(node.params["index"], node.inputs[1:]):   # x[i, j]: x.vindex[i, j]
            points = ast.Attribute(args[0], "vindex", ast.Load())
            return ast.Subscript(points, index_expr(node.params["index"], args[1:]), ast.Load())
        if any(isinstance(x, Value) and x in self.lazy for x in node.inputs):
            return super().expr(node, args)
        self.xp = "np"
        try:
            return super().expr(node, args)
        finally:
            self.xp = "da"

    def body(self):
        """The body, each float array parameter first made a Dask array (a NumPy array as one
        chunk), so that every ``da.`` call meets Dask arrays (``da.reshape`` takes no NumPy
        array); integer arrays stay as given (indices: Dask indexes with one Dask array at
        most)."""
        arrays = [self.names[p] for p in self.graph.params if p in self.lazy]
        return [f"{n} = da.asarray({n})" for n in arrays] + super().body()

    def owned(self, acc, at, path, result) -> bool:
        return False   # never in place: an update is a new array (a new graph layer)

    def update(self, node, args, at, path):
        """``t = x.copy(); t[idx] = v`` for a setitem; ``t = _add_at(x, idx, g)`` for an
        accumulation whose indices may repeat (``t[idx] += g`` on a copy where none does)."""
        target = self.name(node.outputs[0], at, path, read_names(args[1:]))
        x, spec = self.render(ast.Expr(args[0])), node.params["index"]
        if node.prim == "index_add" and not _adds_once(spec, node.inputs[2:], self.plain):
            return [self._add_at(target, args[0], index_expr(spec, args[2:], in_call=True),
                                 args[1])]
        sub = ast.Subscript(ast.Name(target, ast.Store()), index_expr(spec, args[2:]),
                            ast.Store())
        write = (ast.Assign([sub], args[1]) if node.prim == "setitem"
                 else ast.AugAssign(sub, ast.Add(), args[1]))
        return [f"{target} = da.asarray({x}).copy()", self.render(write)]

    def statement(self, node, args):
        if node.prim == "scatter_add":
            return self.scatter(node, args)
        if node.prim == "to_float" and node.inputs[0].aval.kind == "array":
            target = self.name(node.outputs[0], self.live.pos[node], self.live.path[node])
            x = self.render(ast.Expr(args[0]))   # float() would compute it: kept lazy
            return [f"{target} = da.asarray({x}).astype(np.float64)"]
        return super().statement(node, args)

    def scatter(self, node, args):
        """``scatter_add``: zeros of the shape, then ``t[idx] = g`` where no index repeats,
        else ``_add_at`` of the zeros."""
        p = node.params
        target = self.name(node.out, self.live.pos[node], self.live.path[node],
                           read_names(args))
        zeros = ast.Call(ast.Attribute(ast.Name("da", ast.Load()), "zeros", ast.Load()),
                         [const(p["shape"])],
                         [ast.keyword("dtype", dtype_expr(node.out.aval.dtype, "da"))])
        if not _adds_once(p["index"], node.inputs[1:], self.plain):
            return [self._add_at(target, zeros, index_expr(p["index"], args[1:], in_call=True),
                                 args[0])]
        sub = ast.Subscript(ast.Name(target, ast.Store()), index_expr(p["index"], args[1:]),
                            ast.Store())
        return [self.render(ast.Assign([ast.Name(target, ast.Store())], zeros)),
                self.render(ast.Assign([sub], args[0]))]

    def _add_at(self, target, t, index, g):
        self.uses_add_at = True
        call = ast.Call(ast.Name("_add_at", ast.Load()), [t, index, g], [])
        return self.render(ast.Assign([ast.Name(target, ast.Store())], call))

    # ---- control flow -------------------------------------------------------------------------
    def cond(self, node, args):
        """``if p:`` on a predicate computed here, once: ``p = bool(p)`` under a comment saying
        so (a later ``if`` on it, the adjoint's, reads the Python bool)."""
        lines = super().cond(node, args)
        pred = node.inputs[0]
        if not (lines and lines[0].startswith("if ") and isinstance(pred, Value)):
            return lines
        test = lines[0][3:-1]
        if pred in self.computed:
            return lines
        comment = f"# computes the predicate {_shown(node, test)} (once, here)"
        if isinstance(args[0], ast.Name):   # its name holds the Python bool from now on
            self.computed.add(pred)
            return [comment, f"{test} = bool({test})"] + lines
        return [comment, f"if bool({test}):"] + lines[1:]

    def while_loop(self, node, args):
        """A ``while`` whose test is computed once per iteration, said by a comment, on values
        persisted before each test (else each test would compute every iteration before it)."""
        lines = super().while_loop(node, args)
        m = node.params.get("stacked", 0)
        carried = [self.names[v] for v in node.outputs[:len(node.outputs) - m]
                   if v.aval.kind == "array" and v in self.names]
        persist = [f"{name} = da.asarray({name}).persist()" for name in dict.fromkeys(carried)]
        for i, line in enumerate(lines):
            if line.startswith("while "):
                break
        else:
            return lines
        if line != "while True:":
            test = line[6:-1]
            lines[i] = f"while bool({test}):"
        else:
            j = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("    if not "))
            test = lines[j][len("    if not "):-1]
            lines[j] = f"    if not bool({test}):"
        comment = [f"# computes the predicate each iteration: {test}"] + (
            ["# (on the loop's values persisted: each test computes one iteration)"]
            if persist else [])
        return lines[:i] + comment + persist + lines[i:] + ["    " + p for p in persist]

    def loop(self, node, args):
        """A ``for`` loop whose residuals go into lists, each stacked by ``da.stack`` after."""
        self._loop = node
        lines = super().loop(node, args)
        (body,) = node.regions
        m = node.params.get("stacked", 0)
        for s in node.outputs[len(node.outputs) - m:]:
            if self.listed.get(s) is node:
                name = self.names[s]
                rows = f"{name}[::-1]" if node.params.get("reverse") else name
                lines.append(f"{name} = da.stack({rows})")
        return lines

    def new_stack(self, s):
        node = getattr(self, "_loop", None)
        if s.aval.kind == "list" or node is None or early_exit(node, self.plain):
            return super().new_stack(s)
        self.listed[s] = node
        return ast.List([], ast.Load())

    def stack_stores(self, body, stacked, first, top):
        stores = super().stack_stores(body, stacked, first, top)
        k = self.names[body.params[0]] if body.params else None
        out = []
        for line in stores:
            for s in stacked:   # `S[k] = v` of a listed stack: `S.append(v)`
                prefix = f"{self.names.get(s)}[{k}] = "
                if s in self.listed and line.startswith(prefix):
                    line = f"{self.names[s]}.append({line[len(prefix):]})"
            out.append(line)
        return out

    def helpers(self):
        return super().helpers() + ([_ADD_AT] if self.uses_add_at else [])


def _pointwise(spec, arrays) -> bool:
    """An index of integers and two or more index arrays, nothing else: NumPy picks one
    element per broadcast position, which Dask writes ``x.vindex[i, j]`` (its ``x[i, j]``
    takes one index array only)."""
    if any(item[0] in ("s", "n", "e") for item in spec):
        return False
    tags = [item for item in spec if item[0] != "i"]
    return sum(arrays[item[1]].aval.ndim > 0 for item in tags) >= 2


def _shown(node, test: str) -> str:
    """The test of the user's ``if`` the branch came from (``np.sum(x) > 0``), else as
    written."""
    source = (getattr(node, "source", None) or "").strip()
    for keyword in ("if ", "elif "):
        if source.startswith(keyword) and source.endswith(":"):
            return source[len(keyword):-1].strip()
    return test
