"""Custom rules: ``@custom_vjp`` functions with the user's own backward, and ``stop_gradient``.

A ``custom_vjp`` function registers three primitives of family ``"custom"``, each called by name
in generated code: the function itself (``lse = logsumexp(z)``), its ``fwd`` (returning the pair
``(value, residuals)``) and its ``bwd`` (returning one cotangent per argument). Its adjoint rule
(:func:`defvjp_user`) emits ``res = fwd(*args)[1]`` and ``bwd(res, g)[i]``.
Invariants: the generated module binds every such name to the user's object
(:func:`runtime_names`); shapes and dtypes of results are learnt by running ``fwd`` once per
input signature on the call's real arguments, never on made-up data (recorded by running the
function being compiled once on the arguments it is compiled for: :mod:`.custom_examples`),
where both rules are checked too (:mod:`adcompiler.custom.rules`; a CompileError at the rule's
``def`` otherwise, or at the user's line that raised): ``fwd`` returns a pair whose value is like
the function's, ``bwd`` a tuple of one cotangent per argument, each of its shape and float dtype,
or None (read as zeros); generated code carries no check. The dynamic tape records the same call
with ``bwd`` as its backward (:mod:`adcompiler.tape.custom`); forward mode through it, or
through the ``fwd`` and ``bwd`` calls of its gradient, raises
(:class:`adcompiler.transforms.forward.ForwardModeError`), as in JAX.
"""

from __future__ import annotations

import functools

from ..templates import defvjp_user

from . import examples as custom_examples, rules as custom_rules
from ..errors import CompileError
from ..frontend.library.binding import CallError
from ..frontend.calls import register_call
from ..ir import Aval, Graph, Value, walk
from ..ir.builder import Builder
from ..ir.primitives import PRIMS, Prim


# The dynamic tape sits above custom rules: once loaded, it says here how it runs them on its
# tensors (adcompiler/tape/__init__.py fills "tensor", its Tensor class, and "call",
# call_on_tape(custom_vjp, args)). Before it is loaded no tensor exists: every call is plain.
TAPE: dict = {}


def _on_tape(args) -> bool:
    return bool(TAPE) and any(isinstance(a, TAPE["tensor"]) for a in args)


def stop_gradient(x):
    """``x`` itself, through which no derivative flows (``jax.lax.stop_gradient``).

    Compiled code spells it ``stop_gradient(x)``; on the dynamic tape it is ``x.detach()``.
    """
    return x.detach() if _on_tape((x,)) else x


PRIMS["stop_gradient"] = Prim("stop_gradient", stop_gradient, "custom", "stop_gradient",
                              differentiable=False, abstract=lambda avals, literals: avals[0])


class custom_vjp:
    """A function with a reverse-mode rule of its own, as ``jax.custom_vjp``::

        @ad.custom_vjp
        def logsumexp(x):
            return np.log(np.sum(np.exp(x)))

        def logsumexp_fwd(x):          # -> (value, residuals)
            m = np.max(x)
            e = np.exp(x - m)
            s = np.sum(e)
            return m + np.log(s), e / s

        def logsumexp_bwd(res, g):     # -> one cotangent per argument, in a tuple
            return (g * res,)

        logsumexp.defvjp(logsumexp_fwd, logsumexp_bwd)

    Define all three at module level: generated code calls them by name (``logsumexp(z)``,
    ``logsumexp_fwd(z)[1]``, ``logsumexp_bwd(res, dlse)[0]``). Called with arrays it runs the
    plain function; the compiler and the dynamic tape use ``fwd`` and ``bwd`` (under ``grad``
    only ``fwd`` runs; ``value_and_grad`` runs the function for the value and ``fwd`` for the
    residuals). Arguments are positional: arrays, floats, and static numbers. Forward mode
    (``jvp``, ``jacobian(mode="fwd")``) through it raises, as in JAX; ``hessian`` differentiates
    the gradient's generated source, reading ``fwd`` and ``bwd`` as NumPy code
    (:class:`adcompiler.api.higher.HessianVectorProduct`).
    """

    def __init__(self, fun):
        self.primal, self.fwd, self.bwd, self.prims = fun, None, None, None
        functools.update_wrapper(self, fun)
        self._avals: dict = {}
        self._unused: dict = {}  # signature -> the positions where bwd returns None
        register_call(self, self._lower)

    def defvjp(self, fwd, bwd):
        """Use ``fwd(*args) -> (value, residuals)`` and ``bwd(residuals, g) -> (ct, ...)``."""
        self.fwd, self.bwd = fwd, bwd
        self.prims = _register(self)

    def __call__(self, *args):
        if _on_tape(args):
            self._check_defined()
            return TAPE["call"](self, args)
        custom_examples.record(self, args)  # where a compilation runs f to learn from its calls
        return self.primal(*args)

    def run_fwd(self, args):
        out = self.fwd(*args)
        if not isinstance(out, tuple) or len(out) != 2:
            raise TypeError(f"{self.fwd.__name__}, the fwd rule of custom_vjp {self.__name__}, "
                            f"must return a pair (value, residuals), got {type(out).__name__}")
        return out

    def __repr__(self):
        return f"<custom_vjp {self.__name__}>"

    def _check_defined(self):
        if self.fwd is None:
            raise TypeError(f"custom_vjp {self.__name__} has no rule yet: call "
                            f"{self.__name__}.defvjp(fwd, bwd) after defining it")

    # ---- the compiler ------------------------------------------------------------------------
    def _lower(self, b, args, kwargs):
        if self.prims is None:
            raise CallError(f"has no rule yet: call {self.__name__}.defvjp(fwd, bwd) at module "
                            "level after defining it")
        if kwargs:
            raise CallError(f"takes positional arguments only, got `{next(iter(kwargs))}=`",
                            "pass every argument by position")
        for a in args:
            if not isinstance(a, (bool, int, float)) and not hasattr(a, "aval"):
                raise CallError(f"takes arrays, floats and numbers, not {type(a).__name__}",
                                "pass each array as its own argument")
        return b.emit(self.prims[0], tuple(args))

    def value_aval(self, avals, literals) -> Aval:
        """The aval of the value: ``fwd`` run once per signature on the call's real arguments
        (where both rules are checked, :func:`custom_rules.learn`)."""
        key = (tuple(avals), tuple(literals))
        if key not in self._avals:
            aval, unused = custom_rules.learn(self, avals, literals)
            self._avals[key] = aval
            if unused is not None:
                self._unused[key] = unused
        return self._avals[key]

    def adjoint(self, ops, argnum, g, ans, *args):
        """The rule: ``bwd(fwd(*args)[1], g)[argnum]`` (CSE shares the calls between args)."""
        if not hasattr(ops, "emit"):
            raise TypeError(f"the rule of custom_vjp {self.__name__} emits compiler IR; the "
                            "dynamic tape runs bwd itself")
        key = (tuple(_aval_of(a) for a in args), tuple(_literal(a) for a in args))
        if key not in self._unused:  # learnt with the value's aval, where a real call ran
            unused = custom_rules.unused(self, *key)
            if unused is not None:
                self._unused[key] = unused
        arg = args[argnum]
        if argnum in self._unused.get(key, ()):  # bwd returns None there: a zero cotangent
            ct = ops.emit("zeros_like", (arg,))
            return ops.emit("to_float", (ct,)) if _aval_of(arg).is_scalar else ct
        primal, fwd, bwd = self.prims
        pair = ops.emit(fwd, args)
        res = ops.emit("list_get", (pair, 1), name=f"{self.__name__}_res")
        ct = ops.emit("list_get", (ops.emit(bwd, (res, g)), argnum))
        return ops.emit("to_float", (ct,)) if _aval_of(arg).is_scalar else ct


def _literal(x):
    return None if hasattr(x, "aval") else x


def _aval_of(x) -> Aval:
    return x.aval if hasattr(x, "aval") else Aval.of(x)


def _cotangent_aval(aval) -> Aval:
    """What ``bwd`` returns for an input of this aval (a 0-d array for a float: it is converted
    with ``float`` where the input is a Python float)."""
    return Aval("array", "float64", ()) if aval.is_scalar else aval


def _register(fn) -> tuple:
    """The primitives of ``fn``: (the call, its fwd, its bwd), with the adjoint rule."""
    names = []
    for obj, spell, abstract, diff in [
            (fn, fn.__name__, fn.value_aval, True),
            (fn.fwd, fn.fwd.__name__, lambda avals, lits: Aval(
                "tuple", "object", (fn.value_aval(avals, lits),
                                    Aval("opaque", "object", tuple(avals)))), False),
            (fn.bwd, fn.bwd.__name__, lambda avals, lits: Aval(
                "tuple", "object", tuple(_cotangent_aval(a) for a in avals[0].shape)), False)]:
        name = _free_name("custom:" + spell, obj)
        PRIMS[name] = Prim(name, obj, "custom", spell, None, diff, abstract=abstract)
        names.append(name)
    defvjp_user(names[0], fn.adjoint)
    return tuple(names)


def _free_name(name, obj) -> str:
    """``name``, or ``name#2``... where another function already holds it."""
    base, k = name, 1
    while name in PRIMS and PRIMS[name].fn is not obj:
        k += 1
        name = f"{base}#{k}"
    return name


def runtime_names(graph) -> dict:
    """The callables the generated code of ``graph`` calls by name: ``{spell: object}``. Values
    named like one of them are renamed (``logsumexp_``), so that no assignment shadows it."""
    out = {}
    for node in walk(graph.nodes):
        spec = PRIMS[node.prim]
        if spec.family != "custom":
            continue
        if out.setdefault(spec.spell, spec.fn) is not spec.fn:
            raise CompileError(f"two different functions called `{spec.spell}` are used here; "
                               "generated code calls them by name", hint="rename one of them")
    for v in (v for n in walk(graph.nodes) for v in n.outputs):
        if v.name and _base(v.name) in out:
            graph.name_value(v, _base(v.name) + "_")
    return out


def _base(name):
    """The name the emitter writes for ``name``: ``lse`` for ``lse_2``."""
    head, _, tail = name.rpartition("_")
    return head if head and tail.isdigit() else name


def lower_call(fn, arguments: dict) -> Graph:
    """The graph of ``fn(*arguments)`` for a custom_vjp ``fn`` (``grad(logsumexp)``): its
    parameters and one call node."""
    from ..frontend.reading.source import read_function
    graph = Graph(fn.__name__, params=[])
    args = []
    for name, arg in arguments.items():
        if isinstance(arg, Aval):
            arg = graph.name_value(Value(arg, origin=name), name)
            graph.params.append(arg)
        args.append(arg)
    graph.source = read_function(fn.primal)
    with Builder(graph) as b:
        b.source = f"return {fn.__name__}({', '.join(arguments)})"
        try:
            out = fn._lower(b, args, {})
        except CallError as exc:
            raise CompileError(f"`{fn.__name__}()` {exc}", hint=exc.hint) from None
    graph.outputs = [graph.name_value(out, "value")]
    return graph


def _lower_stop_gradient(b, args, kwargs):
    if len(args) != 1 or kwargs:
        raise CallError("takes one positional argument", "stop_gradient(x)")
    (x,) = args
    return b.emit("stop_gradient", (x,)) if hasattr(x, "aval") else x


register_call(stop_gradient, _lower_stop_gradient)

__all__ = ["custom_vjp", "stop_gradient", "runtime_names", "lower_call"]
