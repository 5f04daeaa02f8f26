"""The ``adcompiler`` console script: ``show`` prints a function's generated gradient or its IR.

Invariant: the user's module is read, never executed (see :mod:`adcompiler.frontend.module`);
errors print as ``path:line:col: error: ...`` with the line and a caret, and exit with code 2.
"""

from __future__ import annotations

import argparse
import inspect
import sys

import numpy as np

from .api import GradientFunction
from .errors import CompileError
from .frontend.module import load_module

EXAMPLES = """\
input shapes (needed because code is specialised to them), in order of precedence:
  --shape x=3,4        x is a float64 array of shape (3, 4); x=3,4:float32 sets the dtype;
                       x=float a Python float; x=() a 0-d array; x=int:5 a static int 5
  example_<FUNC>()     a function in the module returning the example arguments (a tuple);
                       it is the only user code `show` runs, and only when no --shape is given
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="adcompiler", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print the generated gradient source (or --ir)",
                          epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("target", help="PATH.py:FUNCTION")
    show.add_argument("--ir", action="store_true", help="print the SSA graph instead")
    show.add_argument("--wrt", help="comma-separated parameter names (default: the decorator's)")
    show.add_argument("--shape", action="append", default=[], metavar="NAME=DIMS")
    args = parser.parse_args(argv)
    try:
        return _show(args)
    except CompileError as exc:
        print(exc, file=sys.stderr)
        return 2
    except (ValueError, TypeError) as exc:
        print(f"adcompiler: error: {exc}", file=sys.stderr)
        return 2


def _show(args) -> int:
    path, _, fname = args.target.rpartition(":")
    if not path or not fname:
        raise ValueError(f"expected PATH.py:FUNCTION, got {args.target!r}")
    module = load_module(path)
    if fname not in module.functions:
        raise ValueError(f"{path} defines no function {fname!r} "
                         f"(it defines: {', '.join(module.functions) or 'none'})")
    fn = module.functions[fname]
    mode, wrt = module.marked.get(fname, ("grad", None))
    if args.wrt:
        wrt = tuple(args.wrt.split(","))
    gradient = GradientFunction(fn, wrt, mode)
    example = _example_args(module, fn, fname, args.shape)
    compiled = gradient.specialize(*example)
    print(compiled.graph if args.ir else compiled.source, end="" if not args.ir else "\n")
    return 0


def _example_args(module, fn, fname, shapes):
    params = list(inspect.signature(fn).parameters)
    if shapes:
        given = dict(_parse_shape(s) for s in shapes)
        missing = [p for p in params if p not in given]
        if missing:
            raise ValueError(f"--shape is missing for: {', '.join(missing)}")
        return [given[p] for p in params]
    example = module.functions.get(f"example_{fname}")
    if example is None:
        raise ValueError(f"{fname} needs example input shapes: pass --shape NAME=DIMS for "
                         f"{', '.join(params)}, or define example_{fname}() in the module")
    result = example()
    return list(result) if isinstance(result, tuple) else [result]


def _parse_shape(text):
    name, _, spec = text.partition("=")
    if not name or not _:
        raise ValueError(f"--shape expects NAME=DIMS, got {text!r}")
    if spec == "float":
        return name, 1.0
    if spec.startswith("int:"):
        return name, int(spec[4:])
    dims, _, dtype = spec.partition(":")
    dims = dims.strip("()")
    shape = tuple(int(d) for d in dims.split(",") if d.strip())
    return name, np.ones(shape, dtype=dtype or "float64")


if __name__ == "__main__":
    sys.exit(main())
