"""The NumPy code of a loop checkpointed by the binomial schedule (``Checkpoint(schedule=
"binomial")``, transforms/checkpointing.py): its body becomes ``def _advance(k, *carried)``
(one step without residuals, its free names bound as defaults when it is defined), its snapshot
stacks views of one :class:`~adcompiler.backends.binomial._Binomial` store, which the forward
sweep feeds every step's carried values and the reverse sweep reads (``hs[k]``, unchanged).

Invariant: the loop runs the same statements on the same values as the plain loop; the store
holds at most the loop's ``binomial`` snapshots.
"""

from __future__ import annotations

import ast


def binomial_loop(em, node, args) -> list:
    """The lines of the forward loop ``node`` (params["binomial"]: the snapshot slots)."""
    pos, path = em.live.pos[node], em.live.path[node]
    (body,) = node.regions
    m = node.params.get("stacked", 0)
    carried = node.outputs[:len(node.outputs) - m]
    stacked = node.outputs[len(carried):]
    slots = em.slot_names(carried, pos, path)
    lines = em.assign_slots(slots, node.inputs[1:])
    em.bind_slots(slots, [(body, 1)], carried, body.outputs)
    k = em.name(body.params[0])
    names = [em.name(s, pos, path, set(slots)) for s in stacked]
    store, advance = f"_{names[0]}_store", f"_{names[0]}_advance"
    inner = em.statements(body.nodes) + em.assign_slots(slots, body.outputs[:len(carried)])
    state = ", ".join(slots) + ("," if len(slots) == 1 else "")
    params = [k, *slots]
    free = _free_names(inner, params)
    header = f"def {advance}({', '.join(params + [f'{n}={n}' for n in free])}):"
    lines += [header] + ["    " + ln for ln in inner + [f"return ({state})"]]
    lines.append(f"{store} = _Binomial({_expr(args[0])}, {node.params['binomial']}, "
                 f"{advance}, {len(slots)})")
    for name, x in zip(names, body.outputs[len(carried):]):
        lines.append(f"{name} = {store}.view({body.params.index(x) - 1})")
    loop = [f"{store}.put({k}, ({state}))", f"{state} = {advance}({', '.join(params)})"]
    return lines + [f"for {k} in range({_expr(args[0])}):"] + ["    " + ln for ln in loop]


def eligible(node) -> bool:
    """Whether every stack of the loop is a snapshot of its carried values (what the store
    stands for); else the loop is written as a plain one."""
    (body,) = node.regions
    m = node.params.get("stacked", 0)
    return m > 0 and all(x in body.params[1:] for x in body.outputs[len(body.outputs) - m:])


def _free_names(lines, params) -> list:
    """The names the statements read before (or without) assigning them, in order: bound as
    the def's defaults, so that later rebinding outside it (the reverse sweep reuses names)
    does not reach the step."""
    tree = ast.parse("\n".join(lines) or "pass")
    seen, free = set(params), []

    class Visit(ast.NodeVisitor):
        def visit_Assign(self, n):
            self.visit(n.value)
            for t in n.targets:
                self.visit(t)

        def visit_AugAssign(self, n):
            self.visit(n.value)
            if isinstance(n.target, ast.Name) and n.target.id not in seen:
                free.append(n.target.id)   # read, then written
            self.visit(n.target)

        def visit_For(self, n):
            self.visit(n.iter)
            self.visit(n.target)
            for s in n.body + n.orelse:
                self.visit(s)

        def visit_Name(self, n):
            if n.id not in seen:
                seen.add(n.id)
                if isinstance(n.ctx, ast.Load):
                    free.append(n.id)

    Visit().visit(tree)
    return free


def _expr(node) -> str:
    return ast.unparse(node)
