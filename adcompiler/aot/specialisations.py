"""What ``adcompiler compile`` compiles for each marked function: one :class:`Specialisation`
per example signature (``specialise``), made shape-polymorphic where it can be
(``shape_polymorphic``), and the dispatch keys and parameter names the standalone module's
dispatcher uses (``signature_of``, ``describe``, ``tangent_names``). See
:mod:`adcompiler.aot.standalone` for the module these go into.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from . import polymorphic
from .examples import cotangent_for
from ..runtime.dispatch import _describe
from .containers import containers_of, flat_params
from ..api.signature import bind_arguments, classify, classify_arguments
from ..frontend.bindings.trees import flat_avals


@dataclass
class Specialisation:
    signature: tuple   # the dispatch key: one entry per parameter (then the cotangent's)
    compiled: object   # a pipeline.Compiled
    least: dict = field(default_factory=dict)   # a pattern's symbol -> its smallest size
    fixed: list = field(default_factory=list)   # a pattern's sizes kept as numbers, and why
    multiples: dict = field(default_factory=dict)   # a pattern's symbol -> (k, why): k divides it
    small: object = None   # a pattern's body for small inputs (aot.small_bodies), or None
    switch: str = ""       # when the first body runs instead: ``d1 * d2 >= 4096``
    containers: dict = field(default_factory=dict)   # parameter -> its Tree (.containers)

    @property
    def symbols(self) -> list:
        """A pattern's size symbols, in order (none for an exact signature)."""
        return list(dict.fromkeys(d for s in self.signature if s[0] == "array" for d in s[2]
                                  if isinstance(d, str)))


@dataclass
class MarkedFunction:
    name: str
    mode: str                  # "grad", "value_and_grad" or "vjp"
    wrt: object                # as the decorator wrote it (None: the first parameter)
    specialisations: list = field(default_factory=list)
    per_shape: list = field(default_factory=list)   # why bodies stay per shape, if they do
    forward_of: str = ""       # compile --mode forward: the decorator's mode this jvp serves


def specialise(gradient, examples) -> list:
    """Compile ``gradient`` (a GradientFunction) for each example argument tuple."""
    out, seen = [], set()
    for args in examples:
        kwargs = {"cotangent": cotangent_for(gradient, args)} if gradient.mode == "vjp" else {}
        signature = signature_of(gradient, args, kwargs.get("cotangent"))
        if signature not in seen:
            seen.add(signature)
            out.append(Specialisation(signature, gradient.specialize(*args, **kwargs),
                                      containers=containers_of(gradient, args)))
    return out


def shape_polymorphic(module, gradient, examples, specialisations) -> tuple:
    """``(specialisations, reasons)``: each body made to hold for every size of its pattern
    where :func:`adcompiler.aot.polymorphic.generalise` can, one per pattern; the reasons where it
    cannot."""
    out, reasons, seen = [], [], set()
    for args, spec in zip(examples, specialisations):
        general, why = polymorphic.generalise(module, gradient, args, spec)
        if why and why not in reasons:
            reasons.append(why)
        spec = general or spec
        if spec.signature not in seen:
            seen.add(spec.signature)
            out.append(spec)
    return out, reasons


def signature_of(gradient, args, cotangent=None) -> tuple:
    """The dispatch key of a call, as the standalone module's ``_signature`` computes it: the
    arguments', then the cotangent's (vjp) or the tangents' (jvp: those of the wrt arguments)."""
    arguments = bind_arguments(gradient.primal, args, {})
    key = [_key(a) for a in flat_avals(classify_arguments(arguments, gradient.wrt)).values()]
    if cotangent is not None:
        key.append(_key(classify(cotangent, "cotangent", True)))
    if gradient.mode == "jvp":
        key += [key[list(arguments).index(w)] for w in gradient.wrt]
    return tuple(key)


def describe(gradient, signature, containers=None) -> str:
    """``(x: float64[3, 4], n: int 5)``: a signature as the standalone module prints it (a
    container's leaves by their names, ``params_W1``)."""
    return _describe(flat_params(_params(gradient.primal, gradient.mode, gradient.wrt),
                                 containers or {}), signature)


def _params(fn, mode, wrt=()) -> list:
    """The generated body's parameters: the function's, then the cotangent or the tangents."""
    names = list(inspect.signature(fn).parameters)
    extra = {"vjp": ["cotangent"], "jvp": tangent_names(names, wrt)}.get(mode, [])
    return names + extra


def tangent_names(names, wrt) -> list:
    """``x_dot`` for each wrt parameter, ``x_dot_`` where a parameter already has that name (a
    local of that name in the wrapper would overwrite it)."""
    taken, out = set(names), []
    for w in wrt:
        name = f"{w}_dot"
        while name in taken:
            name += "_"
        taken.add(name)
        out.append(name)
    return out


def _key(aval):
    if not hasattr(aval, "kind"):
        return ("static", type(aval).__name__, aval)
    if aval.kind == "float":
        return ("float",)
    return ("array", aval.dtype, tuple(aval.shape))
