"""The ``adcompiler`` console script: compile, show, graph, check, and the on-disk cache.

Invariants: the user's module is read, never executed (see
:mod:`adcompiler.frontend.reading.module`); the only user code run is ``example_<FUNC>()`` (for example inputs) and, under ``check``, the
function itself. Outputs are checked before any compiling and written whole
(:mod:`adcompiler.cli.output`): never over an input, nor over a file ``compile`` did not write
(``graph``: any existing file) unless ``--force`` is given. Options and examples are checked
first (:mod:`adcompiler.cli.inputs`). ``compile`` (:mod:`adcompiler.cli.compile`) compiles every
marked function even after one fails, and says so when it finds nothing to compile; ``check``
(:mod:`adcompiler.cli.check`) claims only the comparisons that ran; a marked method gets a
located message (:mod:`adcompiler.cli.methods`). A user's mistake prints as
``path:line:col: error: ...`` with the line and a caret (or ``adcompiler: error: ...`` when
there is no line to point at) and exits with code 2, never with a traceback; ``check`` exits
with 1 when a gradient disagrees.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from . import (check as cli_check, compile as cli_compile, inputs as cli_inputs,
    output as cli_output, draw)
from ..aot import standalone
from .common import UsageError, explained, load, specialised, target
from ..errors import CompileError
from ..version import __version__
from ..aot.examples import SHAPES_HELP
from ..frontend.lower import lower_function
from ..frontend.reading.depth import with_room
from ..api.highlight import terminal
from ..runtime import cache
from ..api.signature import bind_arguments, classify
from .views import ir_part, source_part


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


def _version() -> str:
    """``adcompiler 0.1.0 (Python 3.11.7, NumPy 2.4.6)``: what a bug report needs."""
    python = ".".join(map(str, sys.version_info[:3]))
    return f"adcompiler {__version__} (Python {python}, NumPy {np.__version__})"


def _parser():
    parser = argparse.ArgumentParser(prog="adcompiler", description=__doc__.split("\n")[0],
                                     epilog=SHAPES_HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=_version())
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
    p.add_argument("--force", action="store_true",
                   help="replace an existing output file (never the module drawn)")
    _options(p, backend=False)
    p = command("check", cli_check.run,
                "compare gradients with finite differences on random inputs")
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
    p = command("compile", cli_compile.run,
                "write a standalone gradient module next to each module")
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
        p.add_argument("--backend", choices=("numpy", "cupy", "dask"), default="numpy",
                       help="the array module the generated code uses (default numpy; cupy "
                            "needs no GPU to compile, only to run; dask writes dask.array "
                            "code, called with NumPy or Dask arrays)")


# ---- show, graph -------------------------------------------------------------------------------
def _show(args) -> int:
    path, fname = target(args.target)
    module = load(path, fname)
    with explained(module):
        cli_inputs.check_shape_names(module, [fname], args.shape)
    gradient, _, specs = specialised(module, fname, args)
    if gradient.mode == "jvp" and args.part and not args.ir:
        raise UsageError("a jvp's source computes each tangent beside its value, so it has no "
                         "separate parts: use --ir with --forward or --adjoint")
    texts = []
    for spec in specs:
        c = spec.compiled
        text = ir_part(str(c.graph), args.part) + "\n" if args.ir else \
            source_part(c.source, args.part)
        if len(specs) > 1:
            text = f"# for {standalone.describe(gradient, spec.signature, spec.containers)}\n" \
                + text
        texts.append(text)
    out = "\n".join(texts)
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty()
                                       and not os.environ.get("NO_COLOR"))
    sys.stdout.write(terminal(out) if color and not args.ir else out)
    return 0


def _graph(args) -> int:
    path, fname = target(args.target)
    module = load(path, fname)
    cli_output.check_drawing(args.output, path, args.force, f"{fname}.dot")
    if os.path.splitext(args.output)[1].lstrip(".").lower() not in draw.FORMATS:
        raise UsageError(f"cannot draw to {args.output!r}: the file name must end in .dot, .svg "
                         f"or .png (such as {fname}.dot)")
    with explained(module):
        cli_inputs.check_shape_names(module, [fname], args.shape)
    gradient, examples, specs = specialised(module, fname, args)
    arguments = bind_arguments(gradient.primal, examples[0], {})
    avals = {n: classify(v, n, n in gradient.wrt) for n, v in arguments.items()}
    with explained(module):
        forward = with_room(lower_function)(gradient.primal, avals)   # a 2,000-term sum
    title = f"{gradient.mode} of {fname} ({os.path.basename(path)})"
    cli_output.check_drawing(args.output, path, args.force, f"{fname}.dot")  # made meanwhile?
    try:
        draw.write(draw.dot_source(forward, specs[0].compiled.graph, gradient.wrt, title),
                   args.output)
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


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
