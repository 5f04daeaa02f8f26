"""Plan a gradient with counted ``for`` loops as numba step loops (the numba backend's input).

Where the graph is elementwise code (:mod:`adcompiler.backends.loop_plan`'s terms) around
``loop`` nodes (a Python ``for`` over ``range(n)``, n known, and its adjoint, run in reverse)
whose bodies are elementwise too, each loop becomes ``for t in range(n)`` in the kernel, and
its body one set of element loops (:class:`~adcompiler.backends.loop_plan.Loop` pieces, as a
whole elementwise gradient is planned): every carried array is written into a second buffer
from the current one (the two are swapped after each step), every stacked value into row ``t``
of its stack, and a body reads a row ``a[t]`` of a 2-D parameter or stack as ``a[t, j + k]``.
The heat stencil's forward and reverse sweeps come out so: per step, one loop per piece of the
periodic shifts (``np.roll``), and no temporary array.

A step plan holds only what is stored between steps: each loop's carried values and stacks,
and the graph's outputs. Everything else is inlined as terms where it is read (a value computed
before a loop and read in its body is recomputed in each step: the IR's loops read little of
that kind). Scalars carried by a loop are kernel locals, updated from scalar terms after each
step's element loops; a scalar made by a reduction inside a step (``loss + np.sum(r * r)``)
has no term, and such a gradient stays NumPy code, as do ``while`` loops, loops with a
``break``, nested loops, and arrays other than 1-D ones (read whole) and 2-D ones (read by
rows).
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass

from ..ir import Literal, Value
from ..ir.primitives import PRIMS
from . import loop_plan, numba_reasons
from .loop_plan import Unplanned

# names the kernel's code uses for itself (numba_emit's loops: j, i; the own math)
RESERVED = frozenset({"j", "i", "numba", "np", "math", "wide_vectors", "vexp", "vtanh",
                      "vexpm1", "vtanh_e", "vexp_tanh"})


@dataclass(frozen=True)
class Carry:
    param: Value     # the body's param (the current value in a step)
    init: object     # a Loop filling the first buffer, or a scalar term
    step: object     # a Loop filling the next buffer, a scalar term, or None (unchanged)
    out: Value       # the loop node's output: the value after the last step


@dataclass(frozen=True)
class Steps:
    counter: Value   # the body's first param
    count: int
    reverse: bool
    carried: tuple   # Carry per carried value
    stacked: tuple   # (the node's output, a Loop filling its row t, or a scalar term: its
                     # element t) per stacked value
    source: str      # the user's line, for a comment


@dataclass(frozen=True)
class StepPlan:
    steps: tuple     # Steps, in program order
    outputs: tuple   # per graph output: a Value the kernel holds, or a Loop filling a new array
    names: dict      # Value -> its name in the kernel (params, carried, stacks)


@dataclass(frozen=True)
class Scope:
    """What a step plan's terms read: the kernel's name of each value it holds (parameters,
    carried values, stacks), and the loop counter rows ``a[t]`` are read at (None: outside)."""
    names: dict
    counter: object = None


class _Refused(Exception):
    pass


def plan_steps(graph):
    """A :class:`StepPlan`, or :class:`Unplanned` with the reason."""
    if any(v != "ignore" for v in graph.errstate.values()):
        return Unplanned("it runs under np.errstate(...), which numba's loops do not honour")
    try:
        return _Planner(graph).plan()
    except (_Refused, loop_plan._Unsupported) as exc:
        return Unplanned(str(exc))


class _Planner:
    def __init__(self, graph):
        self.graph = graph
        self.producers = {}
        self.names = {}
        self.taken = set(RESERVED)
        for node in graph.nodes:
            for v in node.outputs:
                self.producers[v] = node
            self._check_node(node)
            for block in node.regions if node.prim == "loop" else ():
                for inner in block.nodes:
                    self._check_node(inner, nested=True)
                    for v in inner.outputs:
                        self.producers[v] = inner
        for p in graph.params:   # after the nodes: a matrix product is the likelier reason
            self._check_param(p)
            self.names[p] = self._name(p, "x")

    def _check_param(self, p):
        a = p.aval
        if a.kind in ("float", "int"):
            return
        if not (a.kind == "array" and a.dtype == "float64" and a.shape and len(a.shape) <= 2):
            raise _Refused(numba_reasons.parameter(p) if a.kind == "array" and a.shape and
                           len(a.shape) <= 2 else f"parameter {p.name} is {a}, not a 1-D or 2-D "
                           "float64 array or a Python number")

    def _check_node(self, node, nested=False):
        if node.prim == "raise_if":
            raise _Refused("it checks its inputs (`if ...: raise ...`) while running")
        row = PRIMS.get(node.prim)
        if row is not None and row.family == "linalg":
            raise _Refused(numba_reasons.no_loop_form(node))
        if node.prim == "fused" or not node.regions:
            return
        if nested or node.prim != "loop":
            raise _Refused(numba_reasons.control_flow(node, nested))
        if node.params.get("exit") or not isinstance(node.inputs[0], Literal):
            raise _Refused(numba_reasons.control_flow(node, exit=True))

    def plan(self) -> StepPlan:
        steps = [self._steps(node) for node in self.graph.nodes if node.prim == "loop"]
        if not steps:
            raise _Refused("it has no loop")
        held = {v for s in steps for v in [c.out for c in s.carried] + [o for o, _ in s.stacked]}
        outputs, seen = [], set()
        for o in self.graph.outputs:   # a parameter, or a value returned twice: a copy
            outputs.append(o if o in held and o not in seen else self._fill(o))
            seen.add(o)
        outputs = tuple(outputs)
        return StepPlan(tuple(steps), outputs, dict(self.names))

    def _fill(self, out):
        if isinstance(out, Literal) or out.aval.ndim != 1:
            raise _Refused(f"output {getattr(out, 'name', out)} of a gradient with loops is "
                           f"{getattr(out, 'aval', 'a number')}, not a 1-D array (a scalar "
                           "output such as value_and_grad's value is not planned either)")
        return loop_plan._loop(self.graph, self.producers, out, Scope(dict(self.names)))

    def _name(self, v, base):
        name = _identifier(v.name or base)
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name

    def _steps(self, node) -> Steps:
        (body,) = node.regions
        m = node.params.get("stacked", 0)
        counter, params = body.params[0], body.params[1:]
        self.names[counter] = self._name(counter, "t")
        carried_out = node.outputs[:len(node.outputs) - m]
        outer = Scope(dict(self.names))
        inits = [self._value(x, outer) for x in node.inputs[1:]]
        for p in params:
            self.names[p] = self._name(p, "carried")
        inside = Scope(dict(self.names), counter)
        carried = []
        for p, init, y, out in zip(params, inits, body.outputs, carried_out):
            step = None if y is p else self._value(y, inside)
            carried.append(Carry(p, init, step, out))
        stacked = []
        for y, out in zip(body.outputs[len(params):], node.outputs[len(carried_out):]):
            if out.aval.kind != "array" or out.aval.ndim not in (1, 2):
                raise _Refused(f"a loop stacks {y.aval if isinstance(y, Value) else y}, "
                               "not a float or a 1-D array")
            stacked.append((out, self._value(y, inside)))
        for c in carried:
            self.names[c.out] = self.names[c.param]   # the buffer holding the last step's
        for out, _ in stacked:
            self.names[out] = self._name(out, "stack")
        return Steps(counter, node.inputs[0].value, bool(node.params.get("reverse")),
                     tuple(carried), tuple(stacked), " ".join((node.source or "").split()))

    def _value(self, v, scope):
        """A 1-D array as a Loop, a scalar as a term."""
        if isinstance(v, Literal):
            return ("lit", v.value)
        if v.aval.ndim == 0:
            ev = loop_plan._Evaluator(self.graph, self.producers, 0, 0, scope)
            return ev.at(v, None)
        if v.aval.ndim != 1 or v.aval.dtype != "float64":
            raise _Refused(f"a loop carries {v.aval}, not a float64 scalar or 1-D array")
        return loop_plan._loop(self.graph, self.producers, v, scope)


def _identifier(name):
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return name if name and not name[0].isdigit() and not keyword.iskeyword(name) else f"v_{name}"
