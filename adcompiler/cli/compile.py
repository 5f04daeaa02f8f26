"""``adcompiler compile``: a standalone gradient module beside each module, or ``-o``.

Invariants: outputs are checked before any compiling (:mod:`adcompiler.cli.output`). Every
marked function of a module is compiled, even after one fails: each failure prints its located
error, the module is written with the functions that compiled (its header names those left
out, and so does a note), nothing is written when none compiled, and the exit status is 2. A
run that finds nothing to compile (a directory without modules, modules without marked
functions) says so and exits with 2, as naming one module without marked functions does; a
marked method is never passed over in silence (:mod:`adcompiler.cli.methods`). A body made to
hold for any size still takes the example's own signature: each size symbol has its own least
size (``x[:3]`` bounds x's size only), but where a bound could not be tied to one parameter's
axis (a local's subscript, a helper's) it holds for every symbol, and where it then excludes the
example (another input's size below it), the example's own body is kept beside it.
"""

from __future__ import annotations

import os
import sys
import textwrap
from dataclasses import dataclass, field

from . import inputs as cli_inputs, methods as cli_methods, output as cli_output
from ..aot import standalone, forward as standalone_forward, guards as standalone_guards
from ..backends import numexpr_chains
from .common import UsageError, explained, specialised
from ..errors import CompileError
from ..frontend.reading.module import load_module
from ..ir import sizing
from ..runtime.dispatch import _fits

NOTHING = "with @adcompiler.grad, value_and_grad, vjp or jvp"


def run(args) -> int:
    paths, empty = _sources(args.paths)
    if not paths:
        raise UsageError(f"nothing to compile: {'; '.join(f'{d} {w}' for d, w in empty)}")
    for directory, why in empty:
        print(f"adcompiler: warning: {directory} {why}: nothing to compile there",
              file=sys.stderr)
    if args.output and len(paths) != 1:
        raise UsageError("-o names one output file: give a single module")
    failed = written = partly = 0
    for i, path in enumerate(paths, 1):
        if len(paths) > 1:
            print(f"[{i}/{len(paths)}] {path}", file=sys.stderr, flush=True)
        try:
            # the modules written need NumPy (or CuPy) only, and their bodies serve every
            # size: every choice made by size is the one for large inputs (a CuPy kernel's
            # literals are its arguments then, where the merge reads the sizes' numbers)
            with numexpr_chains.disabled(), sizing.symbolic():
                done = _compile_one(path, args, path in args.paths, paths)
        except CompileError as exc:
            print(exc, file=sys.stderr)
            failed += 1
            continue
        except (ValueError, TypeError) as exc:   # one module's: the others still compile
            if len(paths) == 1:
                raise
            print(f"adcompiler: error: {path}: {exc}", file=sys.stderr)
            failed += 1
            continue
        failed += bool(done.errors and not done.out)
        partly += bool(done.errors and done.out)
        written += bool(done.out)
        _notes(path, done)
    return _total(args.paths, paths, written, failed, partly)


@dataclass
class _Done:
    """What compiling one module did."""

    out: str = ""                                 # the file written, if any
    functions: list = field(default_factory=list)  # the MarkedFunctions written
    left_out: list = field(default_factory=list)   # (name, (transform, Location)): hessian...
    methods: list = field(default_factory=list)    # marked methods (cli_methods.Method)
    errors: dict = field(default_factory=dict)     # name -> the error of each that failed


def _total(named, paths, written, failed, partly) -> int:
    """The closing line for several modules or a directory; the exit status: 2 when a module
    or a function failed, or when nothing was found to compile."""
    if len(paths) > 1 or any(os.path.isdir(p) for p in named):
        unmarked = len(paths) - written - failed
        some = f"{partly} with functions left out, " if partly else ""
        print(f"compiled {written} of {len(paths)} module{'s' * (len(paths) != 1)} ({some}"
              f"{failed} failed, {unmarked} without marked functions)", file=sys.stderr)
        if not written and not failed:
            print(f"adcompiler: error: nothing to compile: no module under "
                  f"{', '.join(named)} marks a function {NOTHING}", file=sys.stderr)
            return 2
    return 2 if failed or partly else 0


def _notes(path, done):
    if done.out:
        print(f"wrote {done.out}: " + ", ".join(map(_summary, done.functions)),
              file=sys.stderr)
    for name, mode, _ in forward_of(done.functions):
        print(f"  {mode}_{name}: forward mode, one jvp_{name} per input entry", file=sys.stderr)
    for f in done.functions:
        for why in f.per_shape:
            print(f"  note: {f.mode}_{f.name} is compiled per shape: {why}", file=sys.stderr)
        for why in dict.fromkeys(w for s in f.specialisations for w in s.fixed):
            print(f"  note: {f.mode}_{f.name} keeps a size: {why}", file=sys.stderr)
        for symbol, (k, why) in {w: m for s in f.specialisations
                                 for w, m in s.multiples.items()}.items():
            print(f"  note: {f.mode}_{f.name} takes multiples of {k} only for {symbol}: {why}",
                  file=sys.stderr)
    for name, (transform, loc) in done.left_out if done.out else ():
        print(f"  note: {name} is left out of {done.out}: it is marked @adcompiler.{transform} "
              f"({loc.filename}:{loc.lineno}), and compile writes {cli_inputs.COMPILED} only",
              file=sys.stderr)
    for method in done.methods:
        print(cli_methods.note(method, f"left out of {done.out}" if done.out else "left out"),
              file=sys.stderr)
    names = ", ".join(done.errors)
    if done.errors and done.out:
        print(f"  left out of {done.out}, as they failed to compile (errors above): {names}",
              file=sys.stderr)
    elif len(done.errors) > 1:   # one error alone says it all
        print(f"adcompiler: error: {path}: none of {names} compiled (errors above): nothing "
              "written", file=sys.stderr)


def forward_of(functions) -> list:
    """(name, mode, wrt) of the functions ``compile --mode forward`` compiled as their jvp."""
    return [(f.name, f.forward_of, f.wrt) for f in functions if f.forward_of]


def _summary(fn) -> str:
    """``grad_loss (1 signature, any sizes)``, or ``grad_f (2 signatures, per shape)``."""
    n = len(fn.specialisations)
    sizes = "per shape" if fn.per_shape else \
        "any sizes" if any(s.symbols for s in fn.specialisations) else ""
    return f"{fn.mode}_{fn.name} ({n} signature{'s' if n != 1 else ''}" + \
        (f", {sizes})" if sizes else ")")


def _sources(paths) -> tuple:
    """``(modules, empty)``: the files named and the .py files under the directories named,
    less those ``compile`` wrote (its outputs); ``(directory, why)`` for each directory that
    holds none."""
    out, empty = [], []
    for path in paths:
        if os.path.isdir(path):
            found = []
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
                found += [os.path.join(root, f) for f in sorted(files) if f.endswith(".py")]
            ours = cli_output.generated_sources(found)
            out += [f for f in found if f not in ours]
            if not found:
                empty.append((path, "holds no Python modules (.py files)"))
            elif len(ours) == len(found):
                empty.append((path, f"holds only modules adcompiler compile wrote "
                                    f"({', '.join(os.path.basename(f) for f in found)})"))
        elif os.path.isfile(path):
            out.append(path)
        else:
            raise FileNotFoundError(2, "no such file", path)
    return out, empty


def _compile_one(path, args, explicit, inputs) -> _Done:
    """One module: its output checked first, then each marked function compiled, then the
    module written whole with those that compiled (nothing written when none did, or when
    nothing is marked)."""
    module = load_module(path)
    left_out = [(n, t) for n, t in module.uncompiled.items() if t[0] != "custom_vjp"]
    methods = cli_methods.marked_methods(module)
    if not module.marked:
        if explicit:
            _nothing_marked(path, left_out, methods)
        return _Done(methods=methods)
    base = os.path.splitext(os.path.basename(path))[0]
    out = args.output or os.path.splitext(path)[0] + "_grad.py"
    cli_output.check_output(out, inputs, args.force, f"{base}_grad.py",
                            "" if args.output else path)
    with explained(module):
        cli_inputs.check_shape_names(module, list(module.marked), args.shape)
    done = _Done("", [], left_out, methods)
    for name, (mode, wrt) in module.marked.items():
        try:
            done.functions.append(_compile_function(module, name, mode, wrt, args))
        except (CompileError, ValueError, TypeError) as exc:
            print(exc if isinstance(exc, CompileError) else
                  f"adcompiler: error: {path}: {exc} (compiling {name})", file=sys.stderr)
            done.errors[name] = exc
    if done.functions:
        _write(module, path, out, done.functions, args, done.errors)
        done.out = out
    return done


def _nothing_marked(path, left_out, methods):
    """The error for a module named on the command line that marks nothing to compile (at its
    first marked method, if it has one)."""
    if methods:
        raise cli_methods.error(methods[0], methods[1:])
    also = "; it marks " + ", ".join(f"{n} @adcompiler.{t}" for n, (t, _) in left_out) + \
        ", which compile does not write" if left_out else ""
    raise CompileError(f"{path} has no function marked {NOTHING}: there is nothing to "
                       f"compile{also}")


def _compile_function(module, name, mode, wrt, args):
    by_jvp = args.mode == "forward" and mode != "jvp"
    gradient, examples, exact = specialised(module, name, args, by_jvp)
    specs, per_shape = standalone.shape_polymorphic(module, gradient, examples, exact)
    kept = [s for s in exact if not any(_takes(g, s.signature) for g in specs)]
    for spec in kept:
        print(_kept_note(gradient, name, spec, specs), file=sys.stderr)
    return standalone.MarkedFunction(name, "jvp" if by_jvp else mode, wrt, specs + kept,
                                     per_shape, mode if by_jvp else "")


def _kept_note(gradient, name, spec, specs) -> str:
    """Why the example's own body is kept: the least sizes of the body for other sizes."""
    general = next((g for g in specs if g.symbols and _fits(g.signature, spec.signature, 0)),
                   None)
    takes = "takes " + standalone_guards.least_text(
        general.symbols, general.least, general.multiples) + " only " \
        if general else "does not take it "
    return (f"  note: {gradient.mode}_{name} keeps a body for its example "
            f"{standalone.describe(gradient, spec.signature, spec.containers)}: its body for "
            f"other sizes {takes}"
            f"(a constant index or slice bound in {name}, not of a parameter's own, bounds "
            "every size)")


def _takes(spec, signature) -> bool:
    return spec.signature == signature or \
        (bool(spec.symbols) and _fits(spec.signature, signature, spec.least, spec.multiples))


def _write(module, path, out, functions, args, errors):
    command = " ".join(["adcompiler compile", os.path.basename(path)] +
                       [f"--shape {s}" for s in args.shape] +
                       ([f"--backend {args.backend}"] if args.backend != "numpy" else []) +
                       (["--mode forward"] if args.mode == "forward" else []))
    with explained(module):
        text = standalone.build_module(module, functions, args.backend, command)
    if forward_of(functions):
        text = text.rstrip("\n") + "\n\n\n" + standalone_forward.wrappers(
            module, forward_of(functions))
    if errors:
        text = _with_left_out(text, module, errors)
    compile(text, out, "exec")  # the module must at least parse
    cli_output.write_file(out, text.encode())


def _with_left_out(text, module, errors) -> str:
    """The module's header docstring, with the functions that failed to compile named."""
    lines = ", ".join(f"{n} (line {module.definitions[n].lineno})" if n in module.definitions
                      else n for n in errors)
    note = "\n" + textwrap.fill(f"Left out, as they failed to compile (run the command above "
                               f"for the errors): {lines}.", 92) + "\n"
    end = text.index('"""', 3)
    return text[:end] + note + text[end:]
