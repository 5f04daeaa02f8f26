"""``adcompiler check``: each marked function's gradient against finite differences and the tape.

Invariants: the summary claims only the comparisons that ran: the dynamic tape is named in it
only for the functions it was compared on, and each function it was not compared on is named
with the reason (a jvp, whose tangent is checked along a random direction against differences
of the function only; a function the tape could not run, with the tape's error). A failure says
which comparison disagreed, for which input. Exit status 1 when one disagrees; 2 when a
function failed to compile (its located error printed, the module's other functions checked).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

import numpy as np

from . import inputs as cli_inputs, methods as cli_methods
from ..aot import standalone
from ..aot.containers import containers_of
from .common import UsageError, explained, load, specialised, target
from ..errors import CompileError
from ..checking.near_examples import check_gradient

JVP_NOTE = "a jvp: its tangent is compared with finite differences only"


def run(args) -> int:
    path, fname = target(args.target, need_function=False)
    module = load(path, fname)
    names = [fname] if fname else list(module.marked)
    methods = [] if fname else cli_methods.marked_methods(module)
    if not names and methods:
        raise cli_methods.error(methods[0], methods[1:])
    if not names:
        raise UsageError(f"{path} has no function marked with @adcompiler.grad, value_and_grad, "
                         "vjp or jvp: name one as PATH.py:FUNC")
    with explained(module):
        cli_inputs.check_shape_names(module, names, args.shape)
    for name, (transform, loc) in ([] if fname else module.uncompiled.items()):
        if transform != "custom_vjp":
            print(f"{path}:{name}: not checked: it is marked @adcompiler.{transform} (line "
                  f"{loc.lineno}), and check compares {cli_inputs.COMPILED}")
    for method in methods:
        print(cli_methods.note(method, "not checked"))
    rng = np.random.default_rng(args.seed)
    tally = _Tally()
    for name in names:
        try:
            _check_one(module, path, name, args, rng, tally)
        except CompileError as exc:   # one function's mistake: the others are still checked
            if fname:
                raise
            print(exc, file=sys.stderr)
            tally.errors.append(name)
    print(summary(tally.bad, [n for n in tally.taped if n not in tally.untaped],
                  tally.untaped, tally.errors))
    return 2 if tally.errors else 1 if tally.bad else 0


@dataclass
class _Tally:
    bad: list = field(default_factory=list)       # (function, InputCheck) of each disagreeing one
    untaped: dict = field(default_factory=dict)   # function -> why the tape was not compared
    taped: list = field(default_factory=list)     # the functions compared with the tape
    errors: list = field(default_factory=list)    # the functions that failed to compile


def _check_one(module, path, name, args, rng, tally):
    gradient, examples, _ = specialised(module, name, args)
    for example in examples:
        with explained(module):
            rows = check_gradient(module, gradient, example, rng, args.rtol, args.max_entries)
        _report(path, name, gradient, example, rows)
        note = next((row.tape_note for row in rows if row.tape_note), "")
        why = JVP_NOTE if gradient.mode == "jvp" else \
            f"the tape could not run it: {note.partition(':')[0]}, above" if note else ""
        if why:
            tally.untaped.setdefault(name, why)
        elif name not in tally.taped:
            tally.taped.append(name)
        tally.bad += [(name, row) for row in rows if not row.ok]


def summary(bad: list, taped: list, untaped: dict, errors=()) -> str:
    """The closing lines: the functions not checked (failed to compile), where the tape was not
    compared (which functions, why), then what agreed or not, naming only the comparisons that
    ran. ``bad``: (function, InputCheck) of each disagreeing check; ``taped``: the functions
    compared with the tape."""
    lines = [f"not checked, as they failed to compile (errors above): {', '.join(errors)}"] \
        if errors else []
    lines += [f"not compared with the dynamic tape: {name} ({why})"
              for name, why in untaped.items()]
    if not untaped:
        against = "finite differences and the dynamic tape"
        failing = "finite differences or the dynamic tape"
    elif taped:
        against = f"finite differences, and with the dynamic tape where it was compared " \
            f"({', '.join(taped)})"
        failing = f"finite differences or (for {', '.join(taped)} only) the dynamic tape"
    else:
        against = "finite differences (the dynamic tape was not compared)"
        failing = "finite differences, the dynamic tape not compared"
    if not bad:
        every = "the other" if errors else "all"
        return "\n".join(lines + [f"{every} gradients agree with {against}"])
    what = {"value": [], "finite differences": [], "the dynamic tape": []}
    for name, row in bad:
        if row.name == "value" and not row.what:     # value_and_grad's value, a jvp's
            what["value"].append(name)
            continue
        if row.vs_numerical > row.tolerance:
            what["finite differences"].append(f"{row.name} of {name}")
        if row.vs_tape > row.tolerance:   # nan where the tape was not compared
            what["the dynamic tape"].append(f"{row.name} of {name}")
    details = [f"with {k}: {', '.join(v)}" if k != "value" else
               f"the value of {', '.join(v)} differs from the function's" for k, v in what.items()
               if v]
    n = len(bad)
    lines.append(f"FAILED: {n} gradient{'s' * (n != 1)} disagree{'s' * (n == 1)} with "
                 f"{failing} ({'; '.join(details)})")
    return "\n".join(lines)


def _report(path, name, gradient, example, rows):
    signature = standalone.signature_of(gradient, example)
    containers = containers_of(gradient, example)
    print(f"{path}:{name} {standalone.describe(gradient, signature, containers)}")
    for row in rows:
        status = "ok" if row.ok else f"MISMATCH (tolerance {row.tolerance:.0e})"
        extra = f"  ({row.checked})" if row.checked else ""
        tape = f"  vs tape {row.vs_tape:.1e}" if not math.isnan(row.vs_tape) else ""
        print(f"  {row.name:<10} {row.what:<20} worst relative error {row.vs_numerical:.1e}"
              f"{tape}  "
              f"{status}{extra}")
    note = next((row.tape_note for row in rows if row.tape_note), "")
    if note:
        print(f"  (against finite differences only: the dynamic tape could not run {name}: "
              f"{note})")
    elif gradient.mode == "jvp":
        print("  (against finite differences along the tangent only: the dynamic tape takes "
              "gradients, not jvps)")
