"""The CuPy spelling of the emitter: ``cp.`` calls, and one ``cupy.ElementwiseKernel`` per fused
elementwise node, defined once at module level and called like a function.

Invariants: the source differs from the NumPy backend's only where CuPy needs it: ``cp`` for
``np``, ``cupyx.scatter_add`` for ``np.add.at``, scalars wrapped for CuPy functions that take
arrays only (:mod:`.expressions`), kernels for fused nodes, and no reused ``out=`` buffers
(CuPy's memory pool already recycles device memory, so the planner's page-fault saving does not
apply). Identical kernels are defined once; a block the kernel printer cannot express exactly
stays a chain of CuPy ufunc calls.
"""

from __future__ import annotations

import ast

from ..ir import walk
from .cuda_kernels import Kernel, kernel_signature, lower_block
from .emit import Emitter


class CupyEmitter(Emitter):
    """:class:`~adcompiler.backends.emit.Emitter` writing CuPy code for the function ``fname``."""

    def __init__(self, graph, xp_name="cp", plain=False, fname="f"):
        super().__init__(graph, xp_name, plain)
        self.planned, self.chains = set(), set()
        self.fname = fname
        self.kernels: list = []
        self._by_code: dict = {}
        fused = sum(n.prim == "fused" for n in walk(graph.nodes))
        self.taken |= {f"_k{i}" for i in range(fused)}  # user names never shadow a kernel

    def fused(self, node, args, at, path):
        """``target = _kN(args)`` under a comment showing the chain as NumPy-style code."""
        (block,) = node.regions
        kernel = self.kernel(block)
        if kernel is None:
            return super().fused(node, args, at, path)  # one expression of CuPy ufuncs
        shown = self.render(ast.Expr(self.chain_expression(block, dict(zip(block.params,
                                                                             args)))))
        target = self.name(node.outputs[0], at, path)
        call = ast.Call(ast.Name(kernel.name, ast.Load()), list(args), [])
        return [f"# {target} = {shown}",
                self.render(ast.Assign([ast.Name(target, ast.Store())], call))]

    def kernel(self, block):
        """The kernel computing ``block`` (shared with an identical one), or None."""
        root = lower_block(block)
        if root is None:
            return None
        signature = kernel_signature(block, root)
        kernel = self._by_code.get(signature)
        if kernel is None:
            k = len(self.kernels)
            kernel = Kernel(f"_k{k}", f"{self.fname}_k{k}", *signature, root)
            self._by_code[signature] = kernel
            self.kernels.append(kernel)
        return kernel

    def helpers(self):
        return super().helpers() + [k.definition(self.xp) for k in self.kernels]
