"""Which numba kernel a gradient becomes: whole elementwise loops, step loops, or none.

:func:`plan` tries :mod:`adcompiler.backends.loop_plan` (one scalar expression per output
element), then, where the graph has ``for`` loops, :mod:`adcompiler.backends.numba_steps`;
:func:`emit` writes whichever plan came back. An ``Unplanned`` carries the reason the NumPy
code's docstring then gives.
"""

from __future__ import annotations

from . import loop_plan
from .numba_emit import emit_numba
from .numba_steps import StepPlan, plan_steps
from .numba_steps_emit import emit_steps


def plan(graph):
    """A loop_plan ``Plan``, a ``StepPlan``, or ``Unplanned``."""
    whole = loop_plan.plan(graph)
    if whole or not any(node.prim == "loop" for node in graph.nodes):
        return whole
    return plan_steps(graph)


def emit(plan, graph, fname: str, arg_names: list, cache=False) -> str:
    """The numba module's source for either kind of plan."""
    if isinstance(plan, StepPlan):
        return emit_steps(plan, graph, fname, arg_names, cache=cache)
    return emit_numba(plan, graph, fname, arg_names, cache=cache)
