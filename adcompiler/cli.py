"""The ``adcompiler`` console script: compile, show, graph, check, and the on-disk cache.

Invariants: the user's module is read, never executed (see :mod:`adcompiler.frontend.module`);
the only user code run is ``example_<FUNC>()`` (for example inputs) and, under ``check``, the
function itself. Outputs are checked before any compiling and written whole
(:mod:`adcompiler.cli_output`): never over an input, nor over a file ``compile`` did not write
unless ``--force`` is given. Options and examples are checked first
(:mod:`adcompiler.cli_inputs`). A user's mistake prints as ``path:line:col: error: ...`` with the
line and a caret (or ``adcompiler: error: ...`` when there is no line to point at) and exits with
code 2, never with a traceback; ``check`` exits with 1 when a gradient disagrees.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager

import numpy as np

from . import cli_inputs, cli_output, draw, standalone, standalone_forward
from .backends import numexpr_chains
from .api import GradientFunction, TangentFunction
from .errors import CompileError
from .examples import SHAPES_HELP, example_arguments, positional
from .frontend.lower import lower_function
from .frontend.module import load_module
from .frontend.module_writes import check_unchanged
from .gradcheck import check_gradient
from .highlight import terminal
from .runtime import cache
from .signature import bind_arguments, classify
from .views import ir_part, source_part


class UsageError(Exception):
    """A mistake in the command line itself (no file location to point at)."""


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except CompileError as exc:
        print(exc, file=sys.stderr)
    except FileNotFoundError as exc:
        print(f"adcompiler: error: no such file: {exc.filename}", file=sys.stderr)
    except (UsageError, ValueError, TypeError, OSError) as exc:
        print(f"adcompiler: error: {exc}", file=sys.stderr)
    return 2


def _parser():
    parser = argparse.ArgumentParser(prog="adcompiler", description=__doc__.split("\n")[0],
                                     epilog=SHAPES_HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name, run, help_text):
        p = sub.add_parser(name, help=help_text, description=help_text, epilog=SHAPES_HELP,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(run=run)
        return p

    _compile_and_show_commands(command)
    p = command("graph", _graph, "draw the forward and backward graphs (.dot, .svg, .png)")
    p.add_argument("target", metavar="PATH.py:FUNC")
    p.add_argument("-o", "--output", required=True, metavar="FILE.(dot|svg|png)")
    _options(p, backend=False)
    p = command("check", _check, "compare gradients with finite differences on random inputs")
    p.add_argument("target", metavar="PATH.py[:FUNC]")
    p.add_argument("--seed", type=cli_inputs.seed, default=0, help="random seed (default 0)")
    p.add_argument("--rtol", type=cli_inputs.positive_float,
                   help="tolerance, above 0 (default 1e-5; 1e-3 in float32)")
    p.add_argument("--max-entries", type=cli_inputs.count, default=1000,
                   help="check at most this many random entries of each input, at least 1 "
                        "(default 1000)")
    _options(p, backend=False)
    p = command("cache", _cache, "show (info) or empty (clear) the on-disk cache")
    p.add_argument("action", choices=("info", "clear"))
    return parser


def _compile_and_show_commands(command):
    p = command("compile", _compile, "write a standalone gradient module next to each module")
    p.add_argument("paths", nargs="+", metavar="PATH", help="a .py file, or a directory")
    p.add_argument("-o", "--output", help="the output file (one module only); default: "
                                          "<name>_grad.py beside the module")
    p.add_argument("--force", action="store_true",
                   help="replace an existing output file that adcompiler did not write")
    _options(p, wrt=False)
    p.add_argument("--mode", choices=("reverse", "forward"), default="reverse",
                   help="how grad/value_and_grad/vjp are computed: reverse (default, one pass) "
                        "or forward (one jvp per input entry; pays for few inputs)")
    p = command("show", _show, "print the generated gradient source (or --ir) of a function")
    p.add_argument("target", metavar="PATH.py:FUNC")
    p.add_argument("--ir", action="store_true", help="print the SSA graph instead")
    part = p.add_mutually_exclusive_group()
    part.add_argument("--forward", dest="part", action="store_const", const="forward",
                      help="only the forward part")
    part.add_argument("--adjoint", dest="part", action="store_const", const="adjoint",
                      help="only the adjoint (gradient) part")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    _options(p)


def _options(p, wrt=True, backend=True):
    if wrt:
        p.add_argument("--wrt", help="comma-separated parameter names (default: the "
                                     "decorator's, else the first parameter)")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=DIMS",
                   type=cli_inputs.shape,
                   help="an example input shape (see below); repeat for each parameter")
    if backend:
        p.add_argument("--backend", choices=("numpy", "cupy"), default="numpy",
                       help="the array module the generated code uses (default numpy; cupy "
                            "needs no GPU to compile, only to run)")




# ---- targets -----------------------------------------------------------------------------------
def _target(text, need_function=True):
    """``(path, function)`` from ``PATH.py:FUNC`` (``PATH.py`` alone when allowed)."""
    if text.endswith(".py") and not need_function:
        return text, None
    if os.path.isdir(text):
        raise UsageError(f"{text} is a directory: expected PATH.py:FUNCTION, naming a Python "
                         "file and a function in it")
    path, _, fname = text.rpartition(":")
    if not path or not fname or not fname.isidentifier():
        raise UsageError(f"expected PATH.py:FUNCTION, got {text!r}")
    return path, fname


def _load(path):
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory: expected PATH.py:FUNCTION, naming a Python "
                         "file and a function in it")
    return load_module(path)


@contextmanager
def _explained(module):
    """A CompileError about an undefined name says why the name was not resolved."""
    try:
        yield
    except CompileError as exc:
        raise module.explain(exc) from None


def _gradient(module, fname, wrt_text=None, backend="numpy", forward=False) -> GradientFunction:
    """The transform the decorator asks for (``grad`` of the first parameter if unmarked); with
    ``forward``, its jvp (``compile --mode forward`` assembles the gradient from jvps)."""
    fn = module.function(fname)
    cli_inputs.check_transform(module, fname)
    mode, wrt = module.marked.get(fname, ("grad", None))
    if wrt_text:
        wrt = tuple(w.strip() for w in wrt_text.split(","))
    mode = "jvp" if forward else mode
    return (TangentFunction if mode == "jvp" else GradientFunction)(positional(fn), wrt, mode,
                                                                    backend)


def _specialised(module, fname, args, forward=False):
    with _explained(module):
        check_unchanged(module, fname)
        gradient = _gradient(module, fname, getattr(args, "wrt", None),
                             getattr(args, "backend", "numpy"), forward)
        examples = example_arguments(module, fname, args.shape)
        cli_inputs.check_examples(module, fname, examples, args.shape)
        return gradient, examples, standalone.specialise(gradient, examples)


# ---- compile -----------------------------------------------------------------------------------
def _compile(args) -> int:
    paths = _sources(args.paths)
    if args.output and len(paths) != 1:
        raise UsageError("-o names one output file: give a single module")
    failed = written = 0
    for i, path in enumerate(paths, 1):
        if len(paths) > 1:
            print(f"[{i}/{len(paths)}] {path}", file=sys.stderr, flush=True)
        try:
            with numexpr_chains.disabled():  # the modules written need NumPy only
                out, functions, left_out = _compile_one(path, args, path in args.paths, paths)
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
        if out:
            written += 1
            print(f"wrote {out}: " + ", ".join(map(_summary, functions)), file=sys.stderr)
            _notes(functions, left_out, out)
    if len(paths) > 1:
        print(f"compiled {written} of {len(paths)} modules ({failed} failed, "
              f"{len(paths) - written - failed} without marked functions)", file=sys.stderr)
    return 2 if failed else 0


def _notes(functions, left_out, out):
    for name, mode, _ in forward_of(functions):
        print(f"  {mode}_{name}: forward mode, one jvp_{name} per input entry", file=sys.stderr)
    for f in functions:
        for why in f.per_shape:
            print(f"  note: {f.mode}_{f.name} is compiled per shape: {why}", file=sys.stderr)
    for name, (transform, loc) in left_out:
        print(f"  note: {name} is left out of {out}: it is marked @adcompiler.{transform} "
              f"({loc.filename}:{loc.lineno}), and compile writes {cli_inputs.COMPILED} only",
              file=sys.stderr)


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


def _sources(paths) -> list:
    """The modules to compile: the files named, and the .py files under the directories named,
    less those ``compile`` wrote (its outputs)."""
    out = []
    for path in paths:
        if os.path.isdir(path):
            found = []
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
                found += [os.path.join(root, f) for f in sorted(files) if f.endswith(".py")]
            ours = cli_output.generated_sources(found)
            out += [f for f in found if f not in ours]
        elif os.path.isfile(path):
            out.append(path)
        else:
            raise FileNotFoundError(2, "no such file", path)
    return out


def _compile_one(path, args, explicit, inputs):
    """``(output path, compiled functions, left out)`` for one module: its output checked
    first, then compiled, then written whole (or ``(None, [], [])`` when nothing is marked)."""
    module = load_module(path)
    left_out = [(n, t) for n, t in module.uncompiled.items() if t[0] != "custom_vjp"]
    if not module.marked:
        if explicit:
            also = "; it marks " + ", ".join(f"{n} @adcompiler.{t}" for n, (t, _) in left_out) + \
                ", which compile does not write" if left_out else ""
            raise CompileError(f"{path} has no function marked with @adcompiler.grad, "
                               f"value_and_grad, vjp or jvp: there is nothing to compile{also}")
        return None, [], []
    base = os.path.splitext(os.path.basename(path))[0]
    out = args.output or os.path.splitext(path)[0] + "_grad.py"
    cli_output.check_output(out, inputs, args.force, f"{base}_grad.py",
                            "" if args.output else path)
    with _explained(module):
        cli_inputs.check_shape_names(module, list(module.marked), args.shape)
    functions = []
    for name, (mode, wrt) in module.marked.items():
        by_jvp = args.mode == "forward" and mode != "jvp"
        gradient, examples, specs = _specialised(module, name, args, by_jvp)
        specs, per_shape = standalone.shape_polymorphic(module, gradient, examples, specs)
        functions.append(standalone.MarkedFunction(name, "jvp" if by_jvp else mode, wrt, specs,
                                                   per_shape, mode if by_jvp else ""))
    command = " ".join(["adcompiler compile", os.path.basename(path)] +
                       [f"--shape {s}" for s in args.shape] +
                       (["--backend cupy"] if args.backend == "cupy" else []) +
                       (["--mode forward"] if args.mode == "forward" else []))
    with _explained(module):
        text = standalone.build_module(module, functions, args.backend, command)
    if forward_of(functions):
        text = text.rstrip("\n") + "\n\n\n" + standalone_forward.wrappers(
            module, forward_of(functions))
    compile(text, out, "exec")  # the module must at least parse
    cli_output.write_file(out, text.encode())
    return out, functions, left_out


# ---- show, graph -------------------------------------------------------------------------------
def _show(args) -> int:
    path, fname = _target(args.target)
    module = _load(path)
    with _explained(module):
        cli_inputs.check_shape_names(module, [fname], args.shape)
    gradient, _, specs = _specialised(module, fname, args)
    if gradient.mode == "jvp" and args.part and not args.ir:
        raise UsageError("a jvp's source computes each tangent beside its value, so it has no "
                         "separate parts: use --ir with --forward or --adjoint")
    texts = []
    for spec in specs:
        c = spec.compiled
        text = ir_part(str(c.graph), args.part) + "\n" if args.ir else \
            source_part(c.source, args.part)
        if len(specs) > 1:
            text = f"# for {standalone.describe(gradient, spec.signature)}\n" + text
        texts.append(text)
    out = "\n".join(texts)
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty()
                                       and not os.environ.get("NO_COLOR"))
    sys.stdout.write(terminal(out) if color and not args.ir else out)
    return 0


def _graph(args) -> int:
    path, fname = _target(args.target)
    module = _load(path)
    cli_output.check_output(args.output, [path], True, f"{fname}.dot")
    with _explained(module):
        cli_inputs.check_shape_names(module, [fname], args.shape)
    gradient, examples, specs = _specialised(module, fname, args)
    arguments = bind_arguments(gradient.primal, examples[0], {})
    avals = {n: classify(v, n, n in gradient.wrt) for n, v in arguments.items()}
    with _explained(module):
        forward = lower_function(gradient.primal, avals)
    title = f"{gradient.mode} of {fname} ({os.path.basename(path)})"
    try:
        draw.write(draw.dot_source(forward, specs[0].compiled.graph, gradient.wrt, title),
                   args.output)
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


# ---- check -------------------------------------------------------------------------------------
def _check(args) -> int:
    path, fname = _target(args.target, need_function=False)
    module = _load(path)
    names = [fname] if fname else list(module.marked)
    if not names:
        raise UsageError(f"{path} has no function marked with @adcompiler.grad, value_and_grad, "
                         "vjp or jvp: name one as PATH.py:FUNC")
    with _explained(module):
        cli_inputs.check_shape_names(module, names, args.shape)
    for name, (transform, loc) in ([] if fname else module.uncompiled.items()):
        if transform != "custom_vjp":
            print(f"{path}:{name}: not checked: it is marked @adcompiler.{transform} (line "
                  f"{loc.lineno}), and check compares {cli_inputs.COMPILED}")
    rng = np.random.default_rng(args.seed)
    bad = 0
    for name in names:
        gradient, examples, _ = _specialised(module, name, args)
        for example in examples:
            with _explained(module):
                rows = check_gradient(module, gradient, example, rng, args.rtol,
                                      args.max_entries)
            bad += _report(path, name, gradient, example, rows)
    print("all gradients agree with finite differences and the dynamic tape" if not bad else
          f"FAILED: {bad} gradient(s) disagree with finite differences or the dynamic tape")
    return 1 if bad else 0


def _report(path, name, gradient, example, rows) -> int:
    signature = standalone.signature_of(gradient, example)
    print(f"{path}:{name} {standalone.describe(gradient, signature)}")
    for row in rows:
        status = "ok" if row.ok else f"MISMATCH (tolerance {row.tolerance:.0e})"
        extra = f"  ({row.checked})" if row.checked else ""
        tape = f"  vs tape {row.tape:.1e}" if row.tape is not None else ""
        print(f"  {row.name:<10} {row.what:<20} worst relative error {row.error:.1e}{tape}  "
              f"{status}{extra}")
    note = next((row.tape_note for row in rows if row.tape_note), "")
    if note:
        print(f"  (against finite differences only: the dynamic tape could not run {name}: "
              f"{note})")
    return sum(not row.ok for row in rows)


# ---- cache -------------------------------------------------------------------------------------
def _cache(args) -> int:
    if args.action == "clear":
        print(f"removed {cache.clear()} entries from {cache.cache_dir()}")
        return 0
    info = cache.info()
    state = "on" if info["enabled"] else "off (ADCOMPILER_CACHE=0)"
    print(f"directory: {info['directory']}\nenabled:   {state}\n"
          f"entries:   {info['entries']} ({info['bytes'] / 1024:.1f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
