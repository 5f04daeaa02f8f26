"""A standalone module's second body for small inputs, and the one test on sizes that picks it.

Ahead of time every size-dependent choice is the one for large inputs
(:mod:`adcompiler.ir.sizing`): temporaries go into buffers reused across calls and elementwise
chains are fused, at every size. Below the thresholds that costs a little (an ``out=`` per
operation, the pool's lookups) where ``adcompiler.grad`` writes plain expressions. So where the
body for every size plans buffers, the function is compiled and merged again with every size
that can vary counting as small (:func:`adcompiler.ir.sizing.small`: nothing planned or
fused), and the first body hands the call to it, once it has read its sizes, when each of its
buffers would hold fewer than :data:`MIN_ELEMENTS` elements::

    def _grad_f_1(x, w):
        d1, d2 = x.shape
        if d1 * d2 < 4096:
            return _grad_f_1_small(x, w)
        ...                                  # the pool, the buffers

Invariants: both bodies compute the same gradient (compiled with other choices, so the last
bits may differ), take the same pattern and least sizes (else there is no second body), and the
test reads only sizes the first body reads; the guards and ``_dispatch`` call the first body
alike (the switch costs a call, ~0.1 us, below the sizes where it pays).
"""

from __future__ import annotations

import ast
import dataclasses

from ..ir import sizing

MIN_ELEMENTS = 4096   # fusion's threshold (passes.fuse.MIN_SIZE), the planner's for float64


def with_small_body(general, compile_small):
    """``general`` (a Specialisation for every size) with its body for small inputs and the
    switch between them, where it plans buffers whose sizes vary; else ``general`` itself.
    ``compile_small()`` returns the Specialisation merged inside :func:`sizing.small`, or
    None."""
    switch = switch_of(general.compiled.source)
    if not switch or not sizing.is_symbolic():
        return general
    with sizing.small():
        small = compile_small()
    if small is None or small.signature != general.signature or \
            small.least != general.least or switch_of(small.compiled.source):
        return general
    source = _switched(general.compiled.source, general.compiled.fname, switch)
    if source is None:
        return general
    return dataclasses.replace(general, small=small.compiled, switch=switch,
                               compiled=dataclasses.replace(general.compiled, source=source))


def name_of(body) -> str:
    """The name of ``body``'s body for small inputs."""
    return f"{body}_small"


def _switched(source, fname, switch):
    """``source`` with the switch at the top of ``fname``'s body, after its size reads and
    before its pools' lines (``..._sized = pool.setdefault(...)``); None where none is found."""
    tree = ast.parse(source)
    body = next(s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == fname)
    lines = source.splitlines(True)
    at = next((i for i in range(body.lineno, body.end_lineno)
               if "_sized = " in lines[i] and ".setdefault(" in lines[i]), None)
    if at is None:
        return None
    indent = lines[at][:len(lines[at]) - len(lines[at].lstrip())]
    args = ", ".join(a.arg for a in body.args.posonlyargs + body.args.args)
    lines[at:at] = [f"{indent}if {below(switch)}:\n",
                    f"{indent}    return {name_of(fname)}({args})\n"]
    return "".join(lines)


def below(switch) -> str:
    """``d1 * d2 < 4096 and d3 < 4096``: where the body for small inputs runs."""
    return " and ".join(t.replace(" >= ", " < ") for t in switch.split(" or "))


def switch_of(source) -> str:
    """``d1 * d2 >= 4096 or d3 >= 4096``: whether any of the buffers the source's pools
    allocate (``np.empty((d1, d2), ...)`` in a ``_new...`` factory) with a varying size holds
    :data:`MIN_ELEMENTS` elements or more; "" where none does."""
    counts = []
    for stmt in ast.parse(source).body:
        if not (isinstance(stmt, ast.FunctionDef) and stmt.name.startswith("_new")):
            continue
        for call in ast.walk(stmt):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                    call.func.attr == "empty" and call.args and \
                    isinstance(call.args[0], ast.Tuple):
                dims = [_factor(e) for e in call.args[0].elts]
                if any(not d.isdigit() for d in dims):
                    counts.append(sorted(d for d in dims if d != "1"))
    kept = [c for c in counts if not any(_within(c, o) for o in counts if o is not c)]
    return " or ".join(dict.fromkeys(f"{' * '.join(c)} >= {MIN_ELEMENTS}" for c in kept))


def _within(factors, other) -> bool:
    """Whether ``other`` multiplies ``factors`` by more (so holds ``MIN_ELEMENTS`` whenever
    ``factors`` do: every size is at least 1); equal lists keep the first."""
    rest = list(other)
    for f in factors:
        if f not in rest:
            return False
        rest.remove(f)
    return bool(rest)


def _factor(node) -> str:
    text = ast.unparse(node)
    simple = isinstance(node, (ast.Name, ast.Constant)) or \
        isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)
    return text if simple else f"({text})"
