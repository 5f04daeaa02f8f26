"""The CuPy spelling of the emitter: ``cp.`` calls, and one ``cupy.ElementwiseKernel`` per fused
elementwise node, defined once at module level and called like a function.

Invariants: the source differs from the NumPy backend's only where CuPy needs it: ``cp`` for
``np``, ``cupyx.scatter_add`` for ``np.add.at``, scalars wrapped for CuPy functions that take
arrays only (:mod:`.expressions`), kernels for fused nodes, and no reused ``out=`` buffers
(CuPy's memory pool already recycles device memory, so the planner's page-fault saving does not
apply). Identical kernels are defined once; a block the kernel printer cannot express exactly
stays a chain of CuPy ufunc calls. Where an index may repeat, ``x[idx] = v`` means what NumPy
means (the last write stays) although CuPy writes repeated indices in no set order: the stored
values go through ``_last_values`` and the adjoint's mask ``_last_writes`` uses
``cupyx.scatter_max`` (as :func:`adcompiler.ir.primitives.store` does for the tape).
"""

from __future__ import annotations

import ast

from ..ir import Value, sizing, walk
from ..ir.primitives import writes_once
from .cuda_kernels import Kernel, kernel_signature, lift_literals, lower_block
from .emit import Emitter
from .expressions import const, index_expr

# The write each element keeps is NumPy's last, the largest position: cupyx.scatter_max.
_WINNERS = """\
    won = cp.full(shape, -1)
    order = cp.arange(won[index].size).reshape(won[index].shape)
    cupyx.scatter_max(won, index, order)"""
_LAST_WRITES = """\
def _last_writes(shape, index):
    \"\"\"Which writes of `x[index] = v` (x of `shape`) stay: where an index repeats, the last, as
    in NumPy (CuPy writes repeated indices in no set order: the largest position wins).\"\"\"
""" + _WINNERS + """
    return won[index] == order"""
_LAST_VALUES = """\
def _last_values(shape, index, v):
    \"\"\"`v` as `x[index] = v` (x of `shape`) stores it, each write carrying the value of the last
    write to its element: what NumPy keeps, whatever order CuPy writes repeated indices in.\"\"\"
""" + _WINNERS + """
    v = v.reshape(v.shape[max(v.ndim - order.ndim, 0):])
    return cp.broadcast_to(v, order.shape).reshape(-1)[won[index]]"""


class CupyEmitter(Emitter):
    """:class:`~adcompiler.backends.emit.Emitter` writing CuPy code for the function ``fname``."""

    def __init__(self, graph, xp_name="cp", plain=False, fname="f"):
        super().__init__(graph, xp_name, plain)
        self.planned, self.chains, self.stacks = set(), set(), set()
        self.fname = fname
        self.kernels: list = []
        self._by_code: dict = {}
        fused = sum(n.prim == "fused" for n in walk(graph.nodes))
        self.taken |= {f"_k{i}" for i in range(fused)}  # user names never shadow a kernel
        self.taken.add("_last_values")
        self.last_values = False

    def fused(self, node, args, at, path):
        """``target = _kN(args)`` under a comment showing the chain as NumPy-style code."""
        (block,) = node.regions
        found = self.kernel(block)
        if found is None:
            return super().fused(node, args, at, path)  # one expression of CuPy ufuncs
        kernel, lifted = found
        shown = self.render(ast.Expr(self.chain_expression(block, dict(zip(block.params,
                                                                             args)))))
        target = self.name(node.outputs[0], at, path)
        values = [ast.Constant(v) for _, v in lifted]
        call = ast.Call(ast.Name(kernel.name, ast.Load()), list(args) + values, [])
        return [f"# {target} = {shown}",
                self.render(ast.Assign([ast.Name(target, ast.Store())], call))]

    def kernel(self, block):
        """``(kernel, lifted)``: the kernel computing ``block`` (shared with an identical one)
        and the literals it takes as its last arguments, or None. A block without an array
        parameter stays ufunc calls: CuPy sizes a kernel's loop from its array arguments, and
        refuses a call with scalars only ("Loop size is undecided"). Ahead of time the literals
        are arguments (:func:`.cuda_kernels.lift_literals`), so that numbers made of sizes
        stay in the Python text."""
        if not any(p.aval.kind == "array" for p in block.params):
            return None
        root = lower_block(block)
        if root is None:
            return None
        lifted = ()
        if sizing.is_symbolic():
            root, lifted = lift_literals(root, len(block.params))
        signature = kernel_signature(block, root, lifted)
        kernel = self._by_code.get(signature)
        if kernel is None:
            k = len(self.kernels)
            kernel = Kernel(f"_k{k}", f"{self.fname}_k{k}", *signature, root)
            self._by_code[signature] = kernel
            self.kernels.append(kernel)
        return kernel, lifted

    def update(self, node, args, at, path):
        """``acc[idx] = v`` as the emitter writes it, with ``v`` through ``_last_values`` where
        an index may repeat and ``v`` varies along it."""
        if node.prim == "setitem" and _may_repeat(node) and _varies(node.inputs[1]):
            shape = node.inputs[0].aval.known_shape
            shape = const(shape) if shape is not None else \
                ast.Attribute(args[0], "shape", ast.Load())
            index = index_expr(node.params["index"], args[2:], in_call=True)
            call = ast.Call(ast.Name("_last_values", ast.Load()), [shape, index, args[1]], [])
            args = [args[0], call, *args[2:]]
            self.last_values = True
        return super().update(node, args, at, path)

    def helpers(self):
        out = [_LAST_WRITES if h.startswith("def _last_writes(") else h
               for h in super().helpers()]
        out += [_LAST_VALUES] if self.last_values else []
        return out + [k.definition(self.xp) for k in self.kernels]


def _may_repeat(node) -> bool:
    """Whether ``node``'s index may address an element twice (an index array of one or more
    dimensions, other than a window's)."""
    return not writes_once(node.params["index"], [x.aval.ndim for x in node.inputs[2:]])


def _varies(v) -> bool:
    """Whether ``v`` is an array of one or more dimensions (a scalar writes one value)."""
    return isinstance(v, Value) and v.aval.kind == "array" and v.aval.known_shape != ()
