"""``grad(grad(f))``: the inner gradient's generated source, lowered again as a new function; and
a gradient object called inside a compiled function (``G = grad(f)``, then ``np.sum(G(x) * v)``
in the function differentiated: a Hessian-vector product), its generated source inlined at the
call, for the call's arguments (:func:`called_gradient`).

Invariant: the source read back is the plain source its compilation emits (see
:mod:`adcompiler.api.higher`); every error met there is the compiler's, not the user's code, so it
is reported at the user's ``def`` with the transform that takes it (``ad.hessian``).
"""

from __future__ import annotations

import functools
import inspect

from ..errors import CompileError
from ..frontend.bindings.trees import Tree, flat_avals
from ..frontend.calls import register_callable_type
from ..frontend.library.binding import CallError
from ..frontend.lower import lower_function
from ..ir import Aval, Literal, Value
from ..pipeline import compile_gradient, register_lowering
from .gradients import GradientFunction, TangentFunction
from .higher import Hessian, HessianVectorProduct, Jacobian


def lower_gradient(gf: GradientFunction, arguments: dict):
    """The graph of the gradient ``gf`` computes, for these arguments: its generated source
    (emitted ``plain``, for reading again), lowered as a new function."""
    if gf.mode != "grad" or isinstance(gf, TangentFunction):
        raise CompileError(f"differentiating a {gf.mode} is not supported: only grad(grad(f))",
                           hint="use adcompiler.hessian or adcompiler.jacobian")
    for name in gf.wrt:
        if isinstance(arguments.get(name), Tree):
            raise regradient_error(
                gf, f"grad({function_name(gf)}) with respect to the container {name!r} is a "
                "container of gradients, and grad differentiates one scalar result",
                f"use adcompiler.hessian({function_name(gf)}), which takes containers")
        if not isinstance(arguments.get(name), Aval):
            raise TypeError(f"cannot differentiate with respect to {name!r}: it is "
                            f"{arguments.get(name)!r}, not a float or a float array")
    inner = compile_gradient(gf.primal, arguments, gf.wrt, "grad", plain=True)
    try:
        graph = lower_function(inner.function, flat_avals(arguments))   # a container's leaves
    except CompileError as exc:  # in the generated source: say so, at the user's def
        if exc.location is None or not exc.location.filename.startswith("<adcompiler"):
            raise
        raise regradient_error(
            gf, f"grad({function_name(gf)}) cannot be differentiated again here; reading its generated "
            f"source back failed at line {exc.location.lineno} "
            f"(`{exc.location.line.strip()}`): {exc.message}",
            f"use adcompiler.hessian({function_name(gf)}) (forward over reverse, which takes it), or "
            ".hvp for Hessian-vector products") from None
    graph.name = inner.fname
    graph.writes = inner.graph.writes  # the plain source updates copies: the user's writes
    # the pipeline's check of a scalar result speaks of the user's function
    graph.array_result_error = functools.partial(_array_result_error, gf)
    if len(graph.outputs) != 1:
        wrt = repr(tuple(gf.wrt))
        raise regradient_error(gf, f"grad({function_name(gf)}, wrt={wrt}) returns a tuple of "
                               f"{len(graph.outputs)} gradients, and a transform of it "
                               "differentiates one result",
                               f"use adcompiler.hessian({function_name(gf)}, wrt={wrt}) for every "
                               "second derivative, or grad(grad(f, wrt=a), wrt=b) for one")
    return graph


def _array_result_error(gf, shape) -> CompileError:
    name = function_name(gf)
    return regradient_error(
        gf, f"grad(grad({name})): the inner gradient is an array of shape {shape}, and grad "
        "needs a scalar result",
        f"use adcompiler.hessian({name}) for the matrix of second derivatives, "
        f"adcompiler.jacobian(adcompiler.grad({name})) likewise, or .hvp for Hessian-vector "
        "products")


def regradient_error(gf, message, hint) -> CompileError:
    """A CompileError about differentiating ``gf`` again, at the user's ``def`` (not in the
    generated source that was lowered)."""
    from ..frontend.reading.source import read_function
    src = read_function(gf.primal)
    return src.error(src.tree, message, hint)


def function_name(gf) -> str:
    return getattr(inspect.unwrap(gf.primal), "__name__", "f")


def called_gradient(gf, args, kwargs):
    """``(def, args, kwargs)`` to inline where a compiled function calls a gradient object,
    ``G(x)`` for ``G = grad(f)`` (a Hessian-vector product ``np.sum(G(x) * v)``): the plain
    generated source of ``G`` for these arguments' avals, read back as a function of the
    caller's, and the arguments bound to all its parameters."""
    if isinstance(gf, TangentFunction) or gf.mode not in ("grad", "value_and_grad"):
        name = function_name(gf)
        raise CallError(f"calling a {gf.mode} of `{name}` inside a compiled function is not "
                        "supported: only grad(f) and value_and_grad(f)",
                        f"call adcompiler.grad({name}) here, or take the product outside")
    try:
        bound = inspect.signature(gf.primal).bind(*args, **kwargs)
    except TypeError as exc:
        raise CallError(f"TypeError: {exc}", f"{function_name(gf)}'s parameters: "
                        f"{inspect.signature(gf.primal)}") from None
    bound.apply_defaults()
    arguments = {name: _traced(value) for name, value in bound.arguments.items()}
    for name in gf.wrt:
        if not isinstance(arguments.get(name), Aval):
            raise CallError(f"differentiates with respect to {name!r}, and this call passes "
                            f"{arguments.get(name)!r}, not a float or a float array",
                            "pass a float array")
    inner = compile_gradient(gf.primal, arguments, gf.wrt, gf.mode, plain=True).function
    return inner, list(bound.arguments.values()), {}   # defaults given: the source has none


def _traced(value):
    """A traced argument's aval (a Python float is traced, as grad takes it), else the static
    value itself."""
    if isinstance(value, Value):
        return value.aval
    if isinstance(value, Literal):
        value = value.value
    return Aval("float", "float64") if type(value) is float else value


def _refused(kind):
    def resolve(obj, args, kwargs):
        name = getattr(getattr(obj, "primal", None), "__name__", "f")
        raise CallError(f"calling a {kind} of `{name}` inside a compiled function is not "
                        "supported", f"call G = adcompiler.grad({name}) there (a Hessian-vector "
                        "product: def hv(x, v): return np.sum(G(x) * v), then "
                        "adcompiler.grad(hv)), or call the transform outside")
    return resolve


register_lowering(GradientFunction, lower_gradient)   # grad(grad(f)), hessian's fallback
register_callable_type(GradientFunction, called_gradient)   # G(x) inside a compiled function
for _kind, _name in ((Jacobian, "jacobian"), (Hessian, "hessian"),
                     (HessianVectorProduct, "Hessian-vector product")):
    register_callable_type(_kind, _refused(_name))

__all__ = ["lower_gradient", "regradient_error", "function_name"]
