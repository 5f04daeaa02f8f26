"""Which numba kernel a gradient becomes: whole elementwise loops, step loops, loop nests, or
none.

:func:`plan` tries :mod:`adcompiler.backends.loop_plan` (one scalar expression per output
element), then, where the graph has ``for`` loops, :mod:`adcompiler.backends.numba_steps`;
otherwise :mod:`adcompiler.backends.numba_nests` (gathers, scatter-adds, axis reductions as
one loop nest per stored value). :func:`emit` writes whichever plan came back. An
``Unplanned`` carries the reason the NumPy code's docstring then gives: where the loop nests
refuse too, the first planner's reason, which names the construct no loop takes (the nests'
reason where the first refused an index parameter, which the nests take).
"""

from __future__ import annotations

from . import loop_plan
from .numba_emit import emit_numba
from .numba_nests import NestPlan, plan_nests
from .numba_nests_emit import emit_nests
from .numba_steps import StepPlan, plan_steps
from .numba_steps_emit import emit_steps


def plan(graph):
    """A loop_plan ``Plan``, a ``StepPlan``, a ``NestPlan`` or ``Unplanned``."""
    whole = loop_plan.plan(graph)
    if whole:
        return whole
    if any(node.prim == "loop" for node in graph.nodes):
        return plan_steps(graph)
    nests = plan_nests(graph)
    if nests or not whole.reason.startswith("parameter"):
        return nests or whole
    return nests   # an index parameter the nests refuse: their reason names what they refuse


def emit(plan, graph, fname: str, arg_names: list, cache=False) -> str:
    """The numba module's source for any kind of plan."""
    if isinstance(plan, StepPlan):
        return emit_steps(plan, graph, fname, arg_names, cache=cache)
    if isinstance(plan, NestPlan):
        return emit_nests(plan, graph, fname, arg_names, cache=cache)
    return emit_numba(plan, graph, fname, arg_names, cache=cache)
