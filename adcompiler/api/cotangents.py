"""The structure of a vjp's ``cotangent=``: one array (or float) like the function's one result.

``vjp(f)(*args, cotangent=c)`` seeds reverse mode with ``c``, which has the structure of ``f``'s
result: a single array shaped like it (its shape is checked when compiling,
:func:`adcompiler.pipeline.compile_gradient`), or for a returned tuple or other container the
same container of arrays (:func:`adcompiler.pipeline.seeded_graph`). A tuple or list given for
one result, or one array given where ``f`` returns a tuple, is an error saying what structure
was expected, from ``f``'s lowered result, and what was given.
"""

from __future__ import annotations

import numpy as np

from ..custom import examples as custom_examples
from ..errors import ArgumentError, CompileError
from ..frontend.bindings.trees import is_container
from ..ir import Aval, Value


def check_structure(gf, arguments: dict, avals: dict, cotangent):
    """Raise where ``cotangent`` (a tuple or list) does not fit the result of ``gf.primal``;
    one that is a container is checked against the returned container when compiling
    (:func:`adcompiler.pipeline.seeded_graph`), where ``gf.primal`` returns one."""
    if not isinstance(cotangent, (tuple, list)):
        return
    if _returns_container(gf, arguments, avals):
        return
    graph = _lowered(gf, arguments, avals)
    name = gf.primal.__name__
    given = describe(cotangent)
    if graph is not None and len(graph.outputs) > 1:
        raise several_results(gf, graph, given)
    expected = describe(graph.outputs[0]) if graph is not None else "an array"
    raise ArgumentError(
        f"vjp of {name}: cotangent= must be like {name}'s one result, {expected}, but it is "
        f"{given}; pass one array shaped like the result")


def _returns_container(gf, arguments, avals) -> bool:
    graph = _lowered(gf, arguments, avals)
    return graph is not None and len(graph.outputs) > 1 or \
        graph is not None and is_container(getattr(graph, "returned", None))


def explain(gf, arguments: dict, avals: dict, cotangent, exc: CompileError) -> CompileError:
    """``exc``, raised compiling a vjp, or where ``gf.primal`` returns several values (a tuple
    for one cotangent array), an error saying so in terms of the cotangent."""
    try:
        graph = _lowered(gf, arguments, avals)
    except Exception:  # noqa: BLE001 - the original error says it better
        return exc
    if graph is None or len(graph.outputs) < 2:
        return exc
    return several_results(gf, graph, describe(cotangent), exc.location)


def several_results(gf, graph, given: str, location=None) -> CompileError:
    name = gf.primal.__name__
    results = ", ".join(describe(v) for v in graph.outputs)
    if location is None and getattr(graph, "source", None) is not None:
        location = graph.source.location(graph.source.tree.body[-1])
    return CompileError(
        f"vjp of {name}: {name} returns a tuple of {len(graph.outputs)} values ({results}), "
        f"so cotangent= is a tuple of {len(graph.outputs)} arrays shaped like them; "
        f"cotangent= is {given}", location,
        f"pass cotangent= a tuple of {len(graph.outputs)} (one array per result), or return "
        "one array (np.concatenate or np.stack the values)")


def _lowered(gf, arguments, avals):
    from ..pipeline import lower
    try:
        with custom_examples.compiling(gf.primal, arguments):
            return lower(gf.primal, avals)
    except CompileError:
        return None


def describe(x) -> str:
    """An argument or a lowered value, in words: ``a float64 array of shape (3,)``."""
    if isinstance(x, (tuple, list)):
        kind = type(x).__name__
        return f"a {kind} of {len(x)} ({', '.join(describe(v) for v in x)})" if x else \
            f"an empty {kind}"
    aval = x.aval if isinstance(x, Value) else x if isinstance(x, Aval) else None
    if aval is None and (isinstance(x, (np.ndarray, np.generic)) or hasattr(x, "shape")):
        aval = Aval("array", np.dtype(x.dtype).name, tuple(x.shape))
    if aval is None:
        return "a float" if isinstance(x, float) else f"a {type(x).__name__}"
    if aval.is_scalar:
        return f"a {aval.kind}"
    shape = "unknown shape" if aval.shape is None else f"shape {tuple(aval.shape)}"
    return f"a {aval.dtype} array of {shape}"


__all__ = ["check_structure", "explain", "describe"]
