"""Write a :class:`~adcompiler.backends.numba_nests.NestPlan` as one serial numba kernel.

The kernel checks each index array once (``iu_w``: negative entries wrapped, an entry out of
range raises ``IndexError``), then fills the stored values in graph order, one loop nest each,
and returns the outputs; the wrapper passes the parameters as C-contiguous arrays. Matrix
factorization's gradient (``pred = np.sum(U[iu] * V[iv], axis=1)``...)::

    @numba.njit(fastmath={"contract"}, error_model="numpy")
    def _grad_matfact_nests(U, V, iu, iv, r):
        iu_w = _checked(iu, 2000, "...")
        ...
        pred = np.empty((100000,))
        for i0 in range(100000):
            acc = 0.0
            for i1 in range(32):
                acc += U[iu_w[i0], i1] * V[iv_w[i0], i1]
            pred[i0] = acc
        dV_2 = np.empty((1000, 32))
        ...                                   # dV_2 = 0.02 * V
        for i0 in range(100000):
            for i1 in range(32):
                dV_2[iv_w[i0], i1] += (2.0 * (pred[i0] - r[i0])) * U[iu_w[i0], i1]

A reduction over trailing axes keeps its partial result in a local (``acc``); over other axes
it adds into the output array in the input's C order (``out[i1] += ...``), so every nest
walks its input contiguously. ``max``/``min`` propagate NaN as NumPy's do. Sums run in loop
order, not NumPy's pairwise order: results differ from NumPy's in the last bits.
"""

from __future__ import annotations

import re

from ..ir import Literal, Value
from . import numba_emit
from .numba_emit import _count, _identifier, _lowered, _order, _unique, _Writer
from .numba_nests import REDUCTIONS, SCATTERS

_INIT = {"sum": "0.0", "mean": "0.0", "sum_to": "0.0", "max": "-math.inf", "min": "math.inf"}
_CHECK = '''@numba.njit(cache={cache})
def _checked(index, n, message):
    """A copy of ``index`` with negative entries wrapped; an entry outside [-n, n) raises."""
    out = np.empty(index.shape[0], np.int64)
    for p in range(index.shape[0]):
        a = index[p]
        if a < 0:
            a += n
        if a < 0 or a >= n:
            raise IndexError(message)
        out[p] = a
    return out'''


class _Text(dict):
    """``inside`` for :class:`_Writer`: a leaf's text is its key (an array read, a local)."""

    def __missing__(self, key):
        return key


def emit_nests(plan, graph, fname: str, arg_names: list, cache=False) -> str:
    """The module source: imports, the index check, the kernel, ``def fname(*arg_names)``."""
    return _Emitter(plan, graph, fname, cache).module(arg_names)


class _Emitter:
    def __init__(self, plan, graph, fname, cache):
        self.plan, self.graph, self.cache, self.fname = plan, graph, cache, fname
        self.kernel = f"_{fname}_nests"
        self.taken = {"numba", "np", "math", "acc", "v", "_checked", self.kernel, "wide_vectors",
                      "vtanh_e", "vexp_tanh", *numba_emit._OWN.values()}
        self.names = {}     # Value -> its name in the kernel (parameters, stored values)
        for p in graph.params:
            self.names[p] = _unique(_identifier(p.name), self.taken)
        self.producer = {v: node for node in graph.nodes for v in node.outputs}
        self.views = {}     # a reshape's output -> the value it views
        self.checked = {}   # (index parameter, axis length) -> the checked copy's name
        self.used: set = set()
        self.lines: list = []

    def module(self, arg_names) -> str:
        params = [self.names[p] for p in self.graph.params]
        for index, n in self.plan.indexes:
            name = _unique(f"{self.names[index]}_w", self.taken)
            self.checked[(index, n)] = name
            self.lines.append(f"{name} = _checked({self.names[index]}, {n}, "
                              f"{_message(index, n)!r})")
        for node in self.graph.nodes:
            out = node.outputs[0]
            if out in self.plan.stored or node.prim == "reshape":
                self._store(node)
        body = "\n".join("    " + line for line in self.lines + [f"return {self._returned()}"])
        flags = ('fastmath={"contract"}, error_model="numpy"'
                 + (", cache=True" if self.cache else ""))
        imports = ["import math", "", "import numba", "import numpy as np"]
        if self.used:
            names = ", ".join(sorted(self.used))
            imports.append(f"from adcompiler.runtime.numba_math import {names}")
        kernel = f"@numba.njit({flags})\ndef {self.kernel}({', '.join(params)}):\n{body}"
        return "\n\n\n".join(["\n".join(imports), _CHECK.format(cache=self.cache), kernel,
                              self._wrapper(arg_names)]) + "\n"

    def _wrapper(self, arg_names) -> str:
        args = []
        for p, name in zip(self.graph.params, arg_names):
            a = p.aval
            args.append(name if a.kind != "array" else f"float({name})" if a.shape == () else
                        f"np.ascontiguousarray({name})")
        call = f"{self.kernel}({', '.join(args)})"
        outs = self.graph.outputs
        zero_d = [isinstance(v, Value) and v.aval.kind == "array" and _shape(v) == () for v in outs]
        if any(zero_d):   # as NumPy gives them: np.asarray's 0-d array, else np.float64
            got = [f"out[{k}]" if len(outs) > 1 else "out" for k in range(len(outs))]
            parts = [t if not z else f"np.asarray({t})" if self._summed_to(v) else
                     f"np.float64({t})" for t, z, v in zip(got, zero_d, outs)]
            return (f"def {self.fname}({', '.join(arg_names)}):\n    out = {call}\n"
                    f"    return {', '.join(parts)}")
        return f"def {self.fname}({', '.join(arg_names)}):\n    return {call}"

    def _summed_to(self, v) -> bool:
        node = self.producer.get(v)
        return v in self.graph.params or (node is not None and node.prim in ("sum_to",
                                                                             "asarray"))

    def _returned(self) -> str:
        texts = []
        for v in self.graph.outputs:
            if isinstance(v, Literal):
                texts.append(repr(float(v.value)))
                continue
            base = v
            while base in self.views:
                base = self.views[base]
            copy = base in self.graph.params and _shape(v) != ()   # 0-d: passed as a float
            texts.append(self.names[v] + (".copy()" if copy else ""))
        return texts[0] if len(texts) == 1 else ", ".join(texts)

    # ---- one stored value ---------------------------------------------------------------
    def _store(self, node):
        out = node.outputs[0]
        name = _unique(_identifier(_base(out)), self.taken)
        self._write(node, out, name)
        self.names[out] = name   # after: its own nest reads its operands, not itself

    def _write(self, node, out, name):
        if node.prim == "reshape":
            src = node.inputs[0]
            self.views[out] = src
            shape = tuple(node.params["shape"])
            self.lines.append(f"{name} = {self.names[src]}.reshape({shape!r})")
        elif node.prim in REDUCTIONS:
            self._reduce(node, name)
        elif node.prim in SCATTERS:
            self._scatter(node, name)
        elif _shape(out) == ():
            self.lines.append(f"{name} = {self._expr(self._term(out, ()), [])}")
        else:
            self._fill(name, out, _shape(out))

    def _fill(self, name, value, shape, alloc=True):
        """``name[idx] = value[idx]`` over ``shape``."""
        if alloc:
            self.lines.append(f"{name} = np.empty({shape!r})")
        idx, loops = self._loops(shape)
        body = []
        text = self._expr(self._term(value, idx), body)
        self._nest(loops, body + [f"{name}[{', '.join(idx)}] = {text}"])

    def _reduce(self, node, name):
        src, prim = node.inputs[0], node.prim
        in_shape = _shape(src)
        axes, keep = _axes(node, in_shape)
        out_shape = _shape(node.outputs[0])
        idx, loops = self._loops(in_shape)
        kept = [i for i in range(len(in_shape)) if i not in axes]
        target = [("0" if i in axes else idx[i]) for i in range(len(in_shape))] if keep else \
            [idx[i] for i in kept]
        if node.prim == "sum_to":
            target = target[len(in_shape) - len(out_shape):]
        count = _size([in_shape[a] for a in axes])
        body = []
        term = self._expr(self._term(src, idx), body)
        trailing = axes == set(range(len(kept), len(in_shape)))
        cell = f"{name}[{', '.join(target)}]" if out_shape != () else name
        acc = "acc" if trailing else cell
        update = _update(prim, acc, term)
        finish = f" / {count}" if prim == "mean" else ""
        if out_shape != ():
            self.lines.append(f"{name} = np.{'empty' if trailing else 'full'}({out_shape!r}"
                              f"{'' if trailing else ', ' + _INIT[prim]})")
        elif not trailing:
            raise AssertionError("a full reduction is over trailing axes")
        if trailing:
            outer, inner = loops[:len(kept)], loops[len(kept):]
            depth = len(outer)
            lines = [("    " * depth) + f"acc = {_INIT[prim]}"]
            lines += [("    " * (depth + k)) + loop for k, loop in enumerate(inner)]
            lines += [("    " * (depth + len(inner))) + line for line in body + update]
            lines.append(("    " * depth) + f"{cell} = acc{finish}")
            self._nest(outer, lines, indented=True)
        else:
            self._nest(loops, body + update)
            if finish:
                self._fill_scaled(name, out_shape, count)

    def _fill_scaled(self, name, shape, count):
        idx, loops = self._loops(shape)
        self._nest(loops, [f"{name}[{', '.join(idx)}] /= {count}"])

    def _scatter(self, node, name):
        if node.prim == "index_add":
            acc, g, arrays = node.inputs[0], node.inputs[1], node.inputs[2:]
            self._fill(name, acc, _shape(node.outputs[0]))
        else:
            g, arrays = node.inputs[0], node.inputs[1:]
            self.lines.append(f"{name} = np.zeros({tuple(node.params['shape'])!r})")
        idx, loops = self._loops(_shape(g))
        body = []
        text = self._expr(self._term(g, idx), body)
        where = self._spec(node.params["index"], arrays, _shape(node.outputs[0]), idx)
        self._nest(loops, body + [f"{name}[{', '.join(where)}] += {text}"])

    # ---- loops and terms ------------------------------------------------------------------
    def _loops(self, shape):
        idx = [f"i{k}" for k in range(len(shape))]
        return idx, [f"for {i} in range({n}):" for i, n in zip(idx, shape)]

    def _nest(self, loops, body, indented=False):
        """The loops, then ``body`` inside the innermost (``indented``: as it is written)."""
        for k, loop in enumerate(loops):
            self.lines.append("    " * k + loop)
        pad = "" if indented else "    " * len(loops)
        self.lines.extend(pad + line for line in body)

    def _expr(self, term, body) -> str:
        """The text of ``term``; a subterm used twice is bound to a local (lines in ``body``)."""
        term = _lowered(term)
        uses: dict = {}
        _count(term, uses)
        writer = _Writer(numba_emit.own_math_names(), _Text(), self.taken)
        for t in _order(term):
            if uses.get(t, 0) > 1 and t[0] == "op":
                writer.bind(t)
        text = writer.text(term)
        body.extend(f"{n} = {t}" for n, t in writer.lines)
        self.used |= writer.used
        return text

    def _term(self, v, idx):
        """``v``'s element at the index texts ``idx`` as a term of numba_emit's form."""
        if isinstance(v, Literal):
            return ("lit", v.value)
        if v in self.names:
            name = self.names[v]
            return ("scalar", f"{name}[{', '.join(idx)}]" if idx else name)
        node = self.producer[v]
        prim, ins = node.prim, node.inputs
        if prim in ("asarray", "copy", "to_float", "broadcast_to"):
            return self._term(ins[0], _broadcast(_shape(ins[0]), idx))
        if prim == "expand_dims":
            axes = node.params["axis"]
            axes = {a % len(idx) for a in (axes if isinstance(axes, tuple) else (axes,))}
            return self._term(ins[0], [i for k, i in enumerate(idx) if k not in axes])
        if prim == "getitem":
            where = self._spec(node.params["index"], ins[1:], _shape(ins[0]), idx)
            return self._term(ins[0], where)
        if prim == "fused":
            (block,) = node.regions
            return self._block_term(block, dict(zip(block.params, ins)), block.outputs[0], idx)
        return ("op", prim, tuple(self._term(a, _broadcast(_shape(a), idx)) for a in ins))

    def _block_term(self, block, outer, v, idx):
        """A fused chain's value ``v`` at ``idx``: its params stand for the node's inputs."""
        if isinstance(v, Literal):
            return ("lit", v.value)
        if v in outer:
            return self._term(outer[v], _broadcast(_shape(outer[v]), idx))
        node = next(n for n in block.nodes if v in n.outputs)
        return ("op", node.prim, tuple(self._block_term(block, outer, a, _broadcast(_shape(a), idx))
                                       for a in node.inputs))

    def _spec(self, spec, arrays, src_shape, idx):
        """The source index texts of element ``idx`` of ``src[spec]``."""
        out, k, axis = [], 0, 0
        for item in spec:
            tag = item[0]
            if tag == "n":
                k += 1
                continue
            n = src_shape[axis]
            if tag == "i":
                out.append(str(item[1] % n))
            elif tag == "s":
                start, _, step = slice(*item[1:]).indices(n)
                out.append(_affine(start, step, idx[k]))
                k += 1
            else:
                out.append(f"{self.checked[(arrays[item[1]], n)]}[{idx[k]}]")
                k += 1
            axis += 1
        return out + list(idx[k:])


def _affine(start, step, i) -> str:
    text = i if step == 1 else f"{step} * {i}"
    return text if start == 0 else f"{start} + {text}"


def _update(prim, acc, term) -> list:
    if prim in ("max", "min"):
        op = ">" if prim == "max" else "<"
        return [f"v = {term}", f"if v {op} {acc} or v != v:  # NaN propagates, as in NumPy",
                f"    {acc} = v"]
    return [f"{acc} += {term}"]


def _axes(node, in_shape):
    """(reduced axes, keepdims) of a reduction node."""
    rank = len(in_shape)
    if node.prim == "sum_to":
        shape = tuple(node.params["shape"])
        lead = rank - len(shape)
        axes = set(range(lead)) | {i + lead for i, d in enumerate(shape)
                                   if d == 1 and in_shape[i + lead] != 1}
        return axes, True
    axis = node.params.get("axis")
    if axis is None:
        return set(range(rank)), bool(node.params.get("keepdims"))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return {a % rank for a in axes}, bool(node.params.get("keepdims"))


def _broadcast(shape, idx):
    """The index of an operand of ``shape`` at the broadcast result's index ``idx``."""
    lead = len(idx) - len(shape)
    return ["0" if d == 1 else idx[lead + k] for k, d in enumerate(shape)]


def _shape(v):
    a = v.aval
    return () if a.kind != "array" else tuple(a.shape)


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _base(value) -> str:
    return re.sub(r"_\d+$", "", value.name or "") or "t"


def _message(index, n) -> str:
    return (f"an entry of index array {index.name} is out of bounds for an axis of size {n} "
            f"(valid: -{n} to {n - 1})")
