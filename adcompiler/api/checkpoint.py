"""``checkpoint(fn)``: a call whose intermediate values reverse mode does not keep; its adjoint
runs the call again, as ``jax.checkpoint`` does.

It is a :class:`~adcompiler.custom.vjp.custom_vjp` function whose residuals are its arguments
and whose ``bwd`` is the compiled ``vjp`` of ``fn`` (forward again, with its residuals, then its
adjoint, all inside the call). Its adjoint rule packs the arguments (``cell_args(W, h, x[t])``)
where a custom_vjp's calls ``fwd`` (which would compute the value once more, for nothing).
Invariant: the same gradient as ``fn``'s own; in a loop the forward keeps the call's arguments
per iteration and nothing it computes.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..custom.vjp import custom_vjp
from ..ir import Aval
from ..ir.primitives import PRIMS, Prim
from .gradients import GradientFunction

_MADE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # fn -> its checkpoint


def checkpoint(fn):
    """``fn`` (a ``def`` of positional arrays, floats and static numbers) as a call whose
    residuals are not kept: under ``grad`` (compiled or on ``adcompiler.tape``) its forward runs
    again in the reverse sweep. Calling it runs ``fn``. The same function gives the same
    checkpoint (generated code calls it by name)."""
    if isinstance(fn, custom_vjp) or not callable(fn):
        raise TypeError(f"checkpoint() takes a plain def, not {fn!r}: a custom_vjp function "
                        "already says what it keeps")
    made = _MADE.get(fn)
    if made is None:
        made = _MADE[fn] = _checkpointed(fn)
    return made


class Checkpointed(custom_vjp):
    """A checkpointed call: a custom_vjp whose adjoint packs its arguments as the residuals."""

    def pack(self, *args):
        return args

    def defvjp(self, fwd, bwd):
        super().defvjp(fwd, bwd)
        name = f"custom:{self.__name__}_args"
        spell = f"{self.__name__}_args"
        PRIMS[name] = Prim(name, self.pack, "custom", spell, None, False,
                           abstract=lambda avals, lits: Aval("opaque", "object", tuple(avals)))
        self.pack_prim = name

    def adjoint(self, ops, argnum, g, ans, *args):
        """``bwd(args, g)[argnum]``: the arguments are the residuals."""
        if not hasattr(ops, "emit"):
            return super().adjoint(ops, argnum, g, ans, *args)
        res = ops.emit(self.pack_prim, args, name=f"{self.__name__}_res")
        ct = ops.emit("list_get", (ops.emit(self.prims[2], (res, g)), argnum))
        arg = args[argnum]
        scalar = (arg.aval if hasattr(arg, "aval") else Aval.of(arg)).is_scalar
        return ops.emit("to_float", (ct,)) if scalar else ct


def _checkpointed(fn):
    wrapped = Checkpointed(fn)
    vjps: dict = {}   # the positions differentiated -> the compiled vjp of fn

    def fwd(*args):
        return fn(*args), args

    def bwd(args, g):
        wrt = tuple(i for i, a in enumerate(args) if _differentiable(a))
        if wrt not in vjps:
            vjps[wrt] = GradientFunction(fn, wrt, "vjp")
        cts = iter(vjps[wrt](*args, cotangent=g))
        return tuple(next(cts) if i in wrt else None for i in range(len(args)))

    fwd.__name__, bwd.__name__ = f"{fn.__name__}_fwd", f"{fn.__name__}_bwd"
    fwd.__qualname__, bwd.__qualname__ = fwd.__name__, bwd.__name__
    wrapped.defvjp(fwd, bwd)
    return wrapped


def _differentiable(a) -> bool:
    if isinstance(a, bool):
        return False
    return isinstance(a, float) or getattr(np.asarray(a).dtype, "kind", "") == "f"
