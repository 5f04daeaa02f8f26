"""Custom rules: ``@custom_vjp`` functions with the user's own backward, and ``stop_gradient``.

A ``custom_vjp`` function registers three primitives of family ``"custom"``, each called by name
in generated code: the function itself (``lse = logsumexp(z)``), its ``fwd`` (returning the pair
``(value, residuals)``) and its ``bwd`` (returning one cotangent per argument). Its adjoint rule
(:func:`templates.defvjp_user`) emits ``res = fwd(*args)[1]`` and ``bwd(res, g)[i]``.
Invariants: the generated module binds every such name to the user's object
(:func:`runtime_names`); shapes and dtypes of results are learnt by running ``fwd`` once per
input signature on arrays of ones, where both rules are checked too (:func:`_check_rules`; a
CompileError at the rule's ``def`` otherwise): ``fwd`` returns a pair whose value is like the
function's, ``bwd`` a tuple of one cotangent per argument, each of its shape and float dtype, or
None (read as zeros); generated code carries no check. The dynamic tape records the same call
with ``bwd`` as its backward (:mod:`adcompiler.tape.custom`); forward mode through it, or
through the ``fwd`` and ``bwd`` calls of its gradient, raises
(:class:`adcompiler.transforms.forward.ForwardModeError`), as in JAX.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import linecache
import warnings

import numpy as np

from adcompiler import templates

from .errors import CompileError, Location
from .frontend.binding import CallError
from .frontend.calls import register_call
from .ir import Aval, Graph, Value, walk
from .ir.builder import Builder
from .ir.primitives import PRIMS, Prim


def stop_gradient(x):
    """``x`` itself, through which no derivative flows (``jax.lax.stop_gradient``).

    Compiled code spells it ``stop_gradient(x)``; on the dynamic tape it is ``x.detach()``.
    """
    from .tape.tensor import Tensor
    return x.detach() if isinstance(x, Tensor) else x


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
    (:class:`adcompiler.higher.HessianVectorProduct`).
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
        from .tape.tensor import Tensor
        if any(isinstance(a, Tensor) for a in args):
            from .tape.custom import call_on_tape
            self._check_defined()
            return call_on_tape(self, args)
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
        """The aval of the value: run ``fwd`` on arrays of ones of these avals (once each)."""
        key = (tuple(avals), tuple(literals))
        if key not in self._avals:
            args = _ones_args(avals, literals)
            try:
                with _quiet():
                    out = self.fwd(*args)
            except Exception as exc:
                raise CompileError(f"running {self.fwd.__name__} on arrays of ones, to learn the "
                                   f"shape of its result, raised {type(exc).__name__}: {exc}",
                                   hint="make fwd work on any input of the right shapes") from exc
            _check_fwd(self, out, args)
            self._avals[key] = Aval.of(out[0])
        return self._avals[key]

    def adjoint(self, ops, argnum, g, ans, *args):
        """The rule: ``bwd(fwd(*args)[1], g)[argnum]`` (CSE shares the calls between args)."""
        if not hasattr(ops, "emit"):
            raise TypeError(f"the rule of custom_vjp {self.__name__} emits compiler IR; the "
                            "dynamic tape runs bwd itself")
        key = (tuple(_aval_of(a) for a in args), tuple(_literal(a) for a in args))
        if key not in self._unused:
            self._unused[key] = _check_rules(self, *key)
        arg = args[argnum]
        if argnum in self._unused[key]:  # bwd returns None there: a zero cotangent
            ct = ops.emit("zeros_like", (arg,))
            return ops.emit("to_float", (ct,)) if _aval_of(arg).is_scalar else ct
        primal, fwd, bwd = self.prims
        pair = ops.emit(fwd, args)
        res = ops.emit("list_get", (pair, 1), name=f"{self.__name__}_res")
        ct = ops.emit("list_get", (ops.emit(bwd, (res, g)), argnum))
        return ops.emit("to_float", (ct,)) if _aval_of(arg).is_scalar else ct


def _ones_args(avals, literals) -> list:
    return [lit if lit is not None else _ones(a) for a, lit in zip(avals, literals)]


def _literal(x):
    return None if hasattr(x, "aval") else x


@contextlib.contextmanager
def _quiet():
    """Run a user's rule on arrays of ones: no floating-point warnings."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _ones(aval):
    if aval.is_scalar:
        return {"float": 1.0, "int": 1, "bool": True}[aval.kind]
    return np.ones(aval.shape, dtype=aval.dtype)


def _aval_of(x) -> Aval:
    return x.aval if hasattr(x, "aval") else Aval.of(x)


def _cotangent_aval(aval) -> Aval:
    """What ``bwd`` returns for an input of this aval (a 0-d array for a float: it is converted
    with ``float`` where the input is a Python float)."""
    return Aval("array", "float64", ()) if aval.is_scalar else aval


# ---- checking the user's rules, once per signature, on arrays of ones ----------------------------
def _check_fwd(fn, out, args):
    """``fwd`` returns a pair whose value is like the function's (where it runs on ``args``)."""
    hint = "fwd(*args) must return the pair (value, residuals), its value like the function's"
    if not isinstance(out, tuple) or len(out) != 2:
        raise _rule_error(fn, fn.fwd, f"returns {_describe(out)}, not a pair (value, "
                          "residuals)", hint)
    if not isinstance(out[0], (float, np.ndarray, np.generic)):
        raise _rule_error(fn, fn.fwd, f"returns {_describe(out[0])} as its value, not an array "
                          "or a float", hint)
    try:
        with _quiet():
            want = fn.primal(*args)
    except Exception:  # noqa: BLE001 - a function that cannot run on ones is not checked
        return
    if np.shape(out[0]) != np.shape(want) or _dtype(out[0]) != _dtype(want):
        raise _rule_error(fn, fn.fwd, f"returns {_describe(out[0])} as its value, where "
                          f"{fn.__name__} returns {_describe(want)} (on arrays of ones)", hint)


def _check_rules(fn, avals, literals) -> frozenset:
    """Run ``fwd`` then ``bwd`` on arrays of ones and check ``bwd``'s cotangents: the positions
    where it returns None. A ``bwd`` that raises on ones is not checked (its gradient call will
    raise the same)."""
    try:
        args = _ones_args(avals, literals)
        with _quiet():
            value, residuals = fn.run_fwd(args)
            cts = fn.bwd(residuals, _ones(Aval.of(value)))
    except Exception:  # noqa: BLE001 - see the docstring
        return frozenset()
    _check_cotangents(fn, cts, args, literals)
    return frozenset(i for i, ct in enumerate(cts) if ct is None)


def _check_cotangents(fn, cts, args, literals):
    """Raise a CompileError at ``bwd``'s ``def`` unless ``cts`` is a tuple (or list) of one
    cotangent per argument in ``args``: None, or for a float argument (not a literal, static
    number) an array of its shape and dtype (any float for a Python float)."""
    note = " (run on arrays of ones)"
    if not isinstance(cts, (tuple, list)) or len(cts) != len(args):
        raise _rule_error(fn, fn.bwd, f"returns {_describe(cts)}, not a tuple of {len(args)} "
                          f"cotangent{'s' * (len(args) != 1)}{note}", _bwd_hint(fn, args))
    for i, (ct, arg, lit) in enumerate(zip(cts, args, literals)):
        if ct is not None and lit is None and _float(arg) and not _like(ct, arg):
            raise _rule_error(fn, fn.bwd, f"returns {_describe(ct)} as the cotangent of "
                              f"`{_param(fn, i)}`, {_describe(arg)}{note}", _bwd_hint(fn, args))


def _like(ct, arg) -> bool:
    """Whether ``ct`` is a cotangent for ``arg``: its shape and float dtype (any float for a
    Python float)."""
    if not isinstance(ct, (float, np.ndarray, np.floating)) or np.shape(ct) != np.shape(arg):
        return False
    return _dtype(ct).kind == "f" if isinstance(arg, float) else _dtype(ct) == _dtype(arg)


def _float(x) -> bool:
    return isinstance(x, float) or (isinstance(x, np.ndarray) and x.dtype.kind in "fc")


def _dtype(x):
    return np.asarray(x).dtype


def _describe(x) -> str:
    if isinstance(x, (np.ndarray, np.generic)):
        return f"a {x.dtype} array of shape {x.shape}"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)}"
    return {float: "a float", type(None): "None"}.get(type(x), f"a {type(x).__name__}")


def _param(fn, i) -> str:
    try:
        return list(inspect.signature(fn.primal).parameters)[i]
    except (TypeError, ValueError, IndexError):
        return f"argument {i}"


def _bwd_hint(fn, args) -> str:
    like = ", ".join(f"{_param(fn, i)}: {_describe(a)}" if _float(a) else f"{_param(fn, i)}: any"
                     for i, a in enumerate(args))
    return (f"bwd(residuals, g) must return a tuple with one cotangent per argument of "
            f"{fn.__name__}, each of its argument's shape and float dtype, or None where no "
            f"gradient flows; here ({like})")


def _rule_error(fn, rule, problem, hint) -> CompileError:
    """A CompileError at the ``def`` of ``rule``, one of the rules of custom_vjp ``fn``."""
    what = "fwd" if rule is fn.fwd else "bwd"
    code = getattr(rule, "__code__", None)
    where = None
    if code is not None:
        line = linecache.getline(code.co_filename, code.co_firstlineno).rstrip("\n")
        where = Location(code.co_filename, code.co_firstlineno, 0, line) if line else None
    name = getattr(rule, "__name__", repr(rule))
    return CompileError(f"{name}, the {what} rule of custom_vjp `{fn.__name__}`, {problem}",
                        where, hint=hint)


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
    templates.defvjp_user(names[0], fn.adjoint)
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
    from .frontend.source import read_function
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
