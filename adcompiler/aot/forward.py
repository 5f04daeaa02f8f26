"""``adcompiler compile --mode forward``: the decorator's gradients, computed in forward mode.

Each function marked ``@grad`` / ``@value_and_grad`` / ``@vjp`` is compiled as its ``jvp``
(the same standalone machinery: ``jvp_<name>``, its tables and guards), and ``<mode>_<name>``
is a small wrapper that assembles the gradient from one Jacobian-vector product per entry of
each wrt input, with a unit tangent (a column of the Jacobian per pass, as the seeds describe
forward mode). It pays where inputs are few and outputs many; for a scalar loss of many
inputs, reverse mode (the default) needs one pass instead of one per entry.
Invariants: the wrapper has the decorator's parameters, as the user wrote them (defaults and
keyword-only markers kept, annotations dropped), and results (a float for a float input, an
array of the input's shape and dtype otherwise); it reads only the array module of
its arguments' operations (``x * 0``, ``reshape``), so CuPy arrays stay on the device.
"""

from __future__ import annotations

import ast
import copy
import inspect

from ..api.signature import resolve_wrt


def _forward_gradient(jvp, args, positions, single, cotangent=None, keywords=()):
    """``(value, gradients)`` of ``jvp``'s function at ``args`` with respect to the arguments at
    ``positions``: one jvp per entry, with a unit tangent there and zeros elsewhere; a vjp
    (``cotangent`` given) weighs each Jacobian column by the cotangent. The last arguments,
    one per name in ``keywords``, are passed by keyword (the function's keyword-only ones)."""
    zeros = [0.0 if isinstance(args[i], float) else args[i] * 0 for i in positions]
    n = len(args) - len(keywords)
    named = dict(zip(keywords, args[n:]))

    def column(j, unit):
        ts = list(zeros)
        ts[j] = unit
        value, dot = jvp(*args[:n], **named, tangents=ts[0] if single else tuple(ts))
        return value, (dot * cotangent).sum() if cotangent is not None else dot

    value, grads = None, []
    for j, i in enumerate(positions):
        if isinstance(args[i], float):
            value, d = column(j, 1.0)
            grads.append(float(d))
            continue
        g = zeros[j] * 0
        flat = g.reshape(-1)
        for k in range(flat.size):
            unit = zeros[j] * 0
            unit.reshape(-1)[k] = 1
            value, d = column(j, unit)
            flat[k] = d
        grads.append(g)
    if value is None:   # every wrt input is empty: the value still comes from one jvp
        value, _ = column(0, zeros[0])
    return value, grads


def wrappers(module, forward: list) -> str:
    """The helper and one wrapper per ``(name, mode, wrt)`` compiled as ``jvp_<name>``."""
    if not forward:
        return ""
    parts = ["# ---- forward mode (adcompiler compile --mode forward): gradients from one jvp "
             "per input entry ----", inspect.getsource(_forward_gradient).rstrip()]
    for name, mode, wrt in forward:
        user = module.definitions[name].args
        keywords = [a.arg for a in user.kwonlyargs]
        params = [a.arg for a in user.posonlyargs + user.args] + keywords
        names = resolve_wrt(module.functions[name], 0 if wrt is None else wrt)
        positions = tuple(params.index(w) for w in names)
        single = wrt is None or not isinstance(wrt, (tuple, list))
        options = (["cotangent=cotangent"] if mode == "vjp" else []) + \
            ([f"keywords={tuple(keywords)!r}"] if keywords else [])
        call = (f"_forward_gradient(jvp_{name}, ({', '.join(params)}{',' * (len(params) == 1)}), "
                f"{positions!r}, {single!r}")
        if options and len(call) + sum(len(o) + 2 for o in options) > 76:  # lines under 96
            call += ",\n" + " " * 37 + ", ".join(options) + ")"
        else:
            call += "".join(", " + o for o in options) + ")"
        grads = "grads[0]" if single else "tuple(grads)"
        result = f"value, {grads}" if mode == "value_and_grad" else grads
        parts.append(
            f"def {mode}_{name}({ast.unparse(_parameters(user, mode))}):\n"
            f'    """adcompiler.{mode} of {name} with respect to {", ".join(names)}, in '
            f'forward mode\n    (one jvp per entry of {", ".join(names)})."""\n'
            f"    value, grads = {call}\n"
            f"    return {result}")
    return "\n\n\n".join(parts) + "\n"


def _parameters(arguments: ast.arguments, mode) -> ast.arguments:
    """The user's parameters as written, annotations dropped; a vjp adds ``*, cotangent``."""
    args = copy.deepcopy(arguments)
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        a.annotation = None
    if mode == "vjp":
        args.kwonlyargs.append(ast.arg("cotangent"))
        args.kw_defaults.append(None)
    return args
