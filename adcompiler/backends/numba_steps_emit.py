"""Write a step plan (:mod:`adcompiler.backends.numba_steps`) as one numba kernel.

The kernel allocates what lives between steps, runs each planned loop as ``for t in
range(n)`` (``range(n - 1, -1, -1)`` for an adjoint) around its body's element loops, and
returns the gradient's arrays; the wrapper only calls it. For the heat stencil's gradient::

    @numba.njit(fastmath={"contract"}, error_model="numpy")
    def _grad_heat_loops(u0, kappa, obs):
        # for t in range(obs.shape[0]):
        u_2 = np.empty(4096)
        for j in range(0, 4096):
            u_2[j] = u0[j]
        u_2_next = np.empty(4096)
        rs = np.empty((200, 4096))
        ...
        for t_1 in range(200):
            for j in range(0, 1):
                ...
                u_2_next[j] = u_2[j] + kappa[j] * t
                rs[t_1, j] = ...
            ...
            u_2, u_2_next = u_2_next, u_2

The element loops are serial: a step's loops are short (the heat stencil's: 4096 elements, 200
steps), and starting numba's threads costs about 4 µs a loop, three loops a step
(``numba_emit``'s measurements). Choices shared with whole elementwise kernels (fastmath,
error model, the own exp/tanh, 512-bit vectors) are :mod:`adcompiler.backends.numba_emit`'s.
"""

from __future__ import annotations

import textwrap

from . import numba_emit
from .distinct import distinct_guard
from .loop_plan import Loop
from .numba_emit import WIDE_MIN, _groups, _loop_source, _Writer


def emit_steps(plan, graph, fname: str, arg_names: list, cache=False) -> str:
    """The module source: imports, the kernel, and ``def fname(*arg_names)``."""
    kernel = f"_{fname}_loops"
    names = plan.names
    inside = _Names(names.values())
    state = _State(inside, numba_emit.own_math_names(), numba_emit._wide_vectors())
    body = []
    for steps in plan.steps:
        body += state.steps(steps, names)
    results = []
    for k, out in enumerate(plan.outputs):
        if isinstance(out, Loop):
            name = state.fresh(f"out{k}")
            body.append(f"{name} = np.empty({size_of(out)})")
            body += state.fill([(out, name)])
            results.append(name)
        else:
            results.append(names[out])
    body.append(f"return {', '.join(results)}")
    flags = 'fastmath={"contract"}, error_model="numpy"' + (", cache=True" if cache else "")
    params = [names[p] for p in graph.params]
    kernel_src = (f"@numba.njit({flags})\ndef {kernel}({', '.join(params)}):\n"
                  + textwrap.indent("\n".join(body), "    "))
    imports = ["import numba"]
    if state.used:
        imports.append("from adcompiler.runtime.numba_math import "
                       + ", ".join(sorted(state.used)))
    wrapper = [f"def {fname}({', '.join(arg_names)}):"]
    wrapper += ["    " + line for line in distinct_guard(graph)]
    wrapper.append(f"    return {kernel}({', '.join(arg_names)})")
    return "\n\n\n".join(["\n".join(imports), kernel_src, "\n".join(wrapper)]) + "\n"


def size_of(loop) -> int:
    return loop.pieces[-1].hi


class _Names(dict):
    """The kernel's names are the plan's own: every lookup gives the name itself."""

    def __init__(self, names):
        super().__init__((n, n) for n in names)

    def __missing__(self, key):
        return key


class _State:
    def __init__(self, inside, own, wide):
        self.inside, self.own, self.wide = inside, own, wide
        self.taken = set(inside) | {"j", "i", "numba", "np", "math"}
        self.used: set = set()

    def fresh(self, base):
        name = base
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name

    def fill(self, pairs, counter=None) -> list:
        """Element loops writing each (Loop, array or (stack, row)) of ``pairs``."""
        lines = []
        for (lo, hi), writes in _groups(_Pairs(pairs)).items():
            text, used, _ = _loop_source(lo, hi, writes, self.own, self.inside,
                                         set(self.taken), self.wide and hi - lo >= WIDE_MIN,
                                         counter=counter, serial=True)
            lines += textwrap.dedent(text).splitlines()
            self.used |= used
        return lines

    def scalar(self, term, counter=None) -> str:
        writer = _Writer(self.own, self.inside, set(self.taken))
        writer.counter = counter
        text = writer.text(numba_emit._lowered(term))
        self.used |= writer.used
        return text

    def steps(self, steps, names) -> list:
        """One planned loop: its carried buffers and stacks, then ``for t in range(n)``."""
        lines = ([f"# {'adjoint of: ' if steps.reverse else ''}{steps.source}"]
                 if steps.source else [])
        t = names[steps.counter]
        writes, swaps, scalars = [], [], []
        reads = _reads([c.step for c in steps.carried] + [loop for _, loop in steps.stacked])
        for c in steps.carried:
            name = names[c.param]
            if isinstance(c.init, Loop):
                lines.append(f"{name} = np.empty({size_of(c.init)})")
                lines += self.fill([(c.init, name)])
            else:
                lines.append(f"{name} = {self.scalar(c.init)}")
            if isinstance(c.step, Loop) and reads.get(name) == {(id(c.step), 0)}:
                writes.append((c.step, name))   # read only at j, by its own update: in place
            elif isinstance(c.step, Loop):
                after = self.fresh(f"{name}_next")
                lines.append(f"{after} = np.empty({size_of(c.step)})")
                writes.append((c.step, after))
                swaps.append(f"{name}, {after} = {after}, {name}")
            elif c.step is not None:
                scalars.append((self.fresh(f"{name}_next"), name, c.step))
        body = []
        for out, loop in steps.stacked:
            lines.append(f"{names[out]} = np.empty({tuple(out.aval.shape)!r})")
            if isinstance(loop, Loop):
                writes.append((loop, (names[out], t)))
            else:   # a scalar's stack
                body.append(f"{names[out]}[{t}] = {self.scalar(loop, t)}")
        body += [f"{after} = {self.scalar(term, t)}" for after, _, term in scalars]
        body += self.fill(writes, counter=t) + swaps
        body += [f"{name} = {after}" for after, name, _ in scalars]
        count = steps.count
        lines.append(f"for {t} in {f'range({count - 1}, -1, -1)' if steps.reverse else f'range({count})'}:")
        lines += ["    " + line for line in body or ["pass"]]
        return lines


def _reads(parts) -> dict:
    """array name -> {(id of the Loop or scalar term reading it, offset)} over ``parts``."""
    found: dict = {}
    for part in parts:
        terms = [p.term for p in part.pieces] if isinstance(part, Loop) else [part]
        todo = [t for t in terms if t is not None]
        while todo:
            term = todo.pop()
            if term[0] in ("read", "row"):
                found.setdefault(term[1], set()).add((id(part), term[2]))
            elif term[0] == "at":
                found.setdefault(term[1], set()).add((id(part), None))
            elif term[0] == "op":
                todo.extend(term[2])
    return found


class _Pairs(list):
    """(Loop, array) pairs, read by ``numba_emit._groups`` as a dict's items (two equal
    Loops may fill two arrays)."""

    def items(self):
        return iter(self)
