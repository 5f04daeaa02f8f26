"""Build the standalone gradient module of a user's module (what ``adcompiler compile`` writes).

Invariants: the output imports only numpy, math and ``__future__`` (and cupy, cupyx for the CuPy
backend), never adcompiler, and is byte-identical for identical inputs. It holds the user's
needed top-level statements verbatim (the marked functions without their decorators, and the
functions, constants and numpy/math imports they read), then for each marked function one compiled body per specialisation and a
dispatcher ``<mode>_<name>`` with the decorator's parameters, keyword and results; the
dispatcher runs the body whose signature (the compiler's key: arrays' dtype and shape, Python
floats, static values) matches the call, or raises a TypeError naming the compiled and the given
signatures (helpers: :mod:`adcompiler.runtime.dispatch`, copied in). Arrays the generated code
reads are the module's own globals where they are, else literals (refused past ``MAX_LITERAL``);
CuPy code reads device copies of them, made once when the module is imported.
Shape specialisation lives in ``specialise`` (one Compiled per example signature) and in the
signature table; a shape-polymorphic body replaces both without changing the command line.
"""

from __future__ import annotations

import ast
import copy
import inspect
import io
import os
import textwrap
import tokenize
from dataclasses import dataclass, field

import numpy as np

from .errors import CompileError
from .examples import cotangent_for
from .runtime import dispatch
from .runtime.cache import constants_of
from .signature import bind_arguments, classify, resolve_wrt

MAX_LITERAL = 10_000

RUNTIME = "\n\n\n".join(inspect.getsource(f).rstrip() for f in dispatch.HELPERS)
RUNTIME_JVP = "\n\n\n".join(inspect.getsource(f).rstrip() for f in dispatch.JVP_HELPERS)
_RUNTIME_NAMES = tuple(f.__name__ for f in dispatch.HELPERS + dispatch.JVP_HELPERS) + ("_HINT",)
_describe = dispatch._describe


@dataclass
class Specialisation:
    signature: tuple   # the dispatch key: one entry per parameter (then the cotangent's)
    compiled: object   # a pipeline.Compiled


@dataclass
class MarkedFunction:
    name: str
    mode: str                  # "grad", "value_and_grad" or "vjp"
    wrt: object                # as the decorator wrote it (None: the first parameter)
    specialisations: list = field(default_factory=list)


def specialise(gradient, examples) -> list:
    """Compile ``gradient`` (a GradientFunction) for each example argument tuple."""
    out, seen = [], set()
    for args in examples:
        kwargs = {"cotangent": cotangent_for(gradient, args)} if gradient.mode == "vjp" else {}
        signature = signature_of(gradient, args, kwargs.get("cotangent"))
        if signature not in seen:
            seen.add(signature)
            out.append(Specialisation(signature, gradient.specialize(*args, **kwargs)))
    return out


def signature_of(gradient, args, cotangent=None) -> tuple:
    """The dispatch key of a call, as the standalone module's ``_signature`` computes it: the
    arguments', then the cotangent's (vjp) or the tangents' (jvp: those of the wrt arguments)."""
    arguments = bind_arguments(gradient.primal, args, {})
    key = [_key(classify(v, n, n in gradient.wrt)) for n, v in arguments.items()]
    if cotangent is not None:
        key.append(_key(classify(cotangent, "cotangent", True)))
    if gradient.mode == "jvp":
        key += [key[list(arguments).index(w)] for w in gradient.wrt]
    return tuple(key)


def describe(gradient, signature) -> str:
    """``(x: float64[3, 4], n: int 5)``: a signature as the standalone module prints it."""
    return _describe(_params(gradient.primal, gradient.mode, gradient.wrt), signature)


def _params(fn, mode, wrt=()) -> list:
    """The generated body's parameters: the function's, then the cotangent or the tangents."""
    extra = {"vjp": ["cotangent"], "jvp": [f"{w}_dot" for w in wrt]}.get(mode, [])
    return list(inspect.signature(fn).parameters) + extra


def _key(aval):
    if not hasattr(aval, "kind"):
        return ("static", type(aval).__name__, aval)
    if aval.kind == "float":
        return ("float",)
    return ("array", aval.dtype, tuple(aval.shape))


def build_module(module, functions: list, backend: str = "numpy", command: str = "") -> str:
    """The standalone module's source for these marked functions of a StaticModule, whose
    specialisations were compiled for ``backend``."""
    if backend not in ("numpy", "cupy"):
        raise ValueError(f"backend={backend!r}: use 'numpy' or 'cupy'")
    writer = _Writer(module, backend)
    for fn in functions:
        writer.add(fn)
    return writer.render(command)


class _Writer:
    """Collects the parts of the module; ``render`` lays them out."""

    def __init__(self, module, backend="numpy"):
        self.module, self.backend = module, backend
        self.needed: set = set()    # the user's names the primal section must define
        self.helpers: dict = {}     # name -> source, written once
        self.literals: dict = {}    # name -> literal source of a constant
        self.blocks: list = []      # generated definitions, in order
        self.defined: list = []     # the module-level names those define
        self.uses_math = False

    def add(self, fn: MarkedFunction):
        self.needed.add(fn.name)
        names = []
        for i, spec in enumerate(fn.specialisations, 1):
            names.append(self.body(fn, spec, f"_{fn.mode}_{fn.name}_{i}"))
        table = f"_{fn.mode.upper()}_{fn.name.upper()}"
        params = _params(self.module.functions[fn.name], fn.mode, _wrt(fn, self.module))
        self.blocks += [_table(fn, table, names, params, self.backend == "cupy"),
                        self.dispatcher(fn, table)]
        self.defined += names + [table, f"{fn.mode}_{fn.name}"]

    def body(self, fn, spec, new_name):
        """One specialisation's function, renamed; its helpers and constants collected."""
        compiled = spec.compiled
        tree = ast.parse(compiled.source)
        lines = compiled.source.splitlines(True)
        texts = {_defines(s): "".join(lines[s.lineno - 1:s.end_lineno]) for s in tree.body}
        rename = {compiled.fname: new_name}
        for name, text in texts.items():
            if name != compiled.fname and self.helpers.get(name, text) != text:
                rename[name] = f"{name}_{new_name}"  # a helper changed: keep both
        host = getattr(compiled, "constants", {})  # CuPy code's constants, before the copy
        for name, value in constants_of(compiled).items():
            rename[name] = self.constant(name, host.get(name, value), new_name)
        for name, text in texts.items():
            if name != compiled.fname:
                self.helpers.setdefault(rename.get(name, name), _rename(text, rename))
        self.uses_math |= "math" in _names(compiled.source)
        params = _params(self.module.functions[fn.name], fn.mode, _wrt(fn, self.module))
        comment = textwrap.wrap(f"{fn.mode} of {fn.name} for {_describe(params, spec.signature)}",
                                96, initial_indent="# ", subsequent_indent="#     ")
        self.blocks.append("\n".join(comment) + "\n" + _rename(texts[compiled.fname], rename))
        return new_name

    def constant(self, name, value, owner):
        """The module-level name the code reads for a constant: the user's global, or a literal
        (for CuPy code, a device copy of either)."""
        device = self.backend == "cupy" and isinstance(value, (np.ndarray, np.generic))
        for gname, gvalue in self.module.namespace.items():
            if gvalue is value and isinstance(self.module.definitions.get(gname), ast.Assign):
                self.needed.add(gname)
                if not device:
                    return gname
                self.literals[f"{gname}_gpu"] = f"cp.asarray({gname})"
                return f"{gname}_gpu"
        new = f"{owner}_{name}"
        literal = _literal(value, owner)
        self.literals[new] = f"cp.asarray({literal})" if device else literal
        return new

    def dispatcher(self, fn, table):
        """``<mode>_<name>`` with the user's parameters (annotations dropped) and the decorator's
        keyword: ``cotangent`` (vjp) or ``tangents`` (jvp)."""
        args = copy.deepcopy(self.module.definitions[fn.name].args)
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None:
                a.annotation = None
        names = [a.arg for a in args.posonlyargs + args.args] + \
            ([args.vararg.arg] if args.vararg else []) + [a.arg for a in args.kwonlyargs]
        extra = {"vjp": "cotangent", "jvp": "tangents"}.get(fn.mode)
        if extra:
            args.kwonlyargs.append(ast.arg(extra))
            args.kw_defaults.append(None)
        flat = _tuple(names + (["cotangent"] if fn.mode == "vjp" else []))
        if fn.mode == "jvp":
            single = fn.wrt is None or not isinstance(fn.wrt, (tuple, list))
            flat += f" + _tangents(tangents, {_tuple(_wrt(fn, self.module))}, {single})"
        doc = "\n".join(textwrap.wrap(_doc(fn, self.module), 92, subsequent_indent="    "))
        return (f"def {fn.mode}_{fn.name}({ast.unparse(args)}):\n"
                f"    \"\"\"{doc}\"\"\"\n" + _package(fn, f"_dispatch({table}, {flat})"))

    def render(self, command):
        cupyx = "cupyx." in "".join(self.blocks)
        header = _header(os.path.basename(self.module.path), command, self.uses_math,
                         self.backend, cupyx)
        primal = _primal_section(self.module, self.needed, header.split("\n"))
        _check_collisions(self.module, primal, [*self.helpers, *self.literals, *_RUNTIME_NAMES,
                                                *self.defined], self.backend)
        name = os.path.basename(self.module.path)
        parts = [header, primal,
                 "# ---- generated by adcompiler: do not edit; recompile instead ----",
                 _string_constant("_HINT", _hint(name, command)), RUNTIME,
                 RUNTIME_JVP if "_tangents" in "".join(self.blocks) else "",
                 *self.helpers.values(),
                 "\n".join(f"{k} = {v}" for k, v in self.literals.items()), *self.blocks]
        return "\n\n\n".join(p.rstrip("\n") for p in parts if p.strip()) + "\n"


def _defines(stmt) -> str:
    """The module-level name a generated statement defines (a function, or a kernel)."""
    if isinstance(stmt, ast.Assign):
        return stmt.targets[0].id
    return stmt.name


def _table(fn, table, names, params, device=False):
    for s in fn.specialisations:
        if ast.literal_eval(repr(s.signature)) != s.signature:
            raise CompileError(f"{fn.name}: an example argument ({s.signature!r}) cannot be "
                               "written as a literal in the standalone module",
                               hint="pass ints, floats, strings, tuples, None or arrays")
    rows = "".join("    (" + ",\n     ".join(repr(k) for k in s.signature)
                   + ("," if len(s.signature) == 1 else "") + f"): {n},\n"
                   for s, n in zip(fn.specialisations, names))
    return (f"{table} = _Signatures({fn.mode + '_' + fn.name!r}, {tuple(params)!r}, "
            f"{'example_' + fn.name!r}, {{\n{rows}}}{', device=True' if device else ''})")


def _package(fn, call):
    """The dispatcher's body: the decorator's result structure from the body's flat tuple."""
    single = fn.wrt is None or not isinstance(fn.wrt, (tuple, list))
    if fn.mode == "value_and_grad" and not single:
        return f"    value, *grads = {call}\n    return value, tuple(grads)\n"
    if fn.mode in ("grad", "vjp") and not single and len(fn.wrt) == 1:
        return f"    return ({call},)\n"
    return f"    return {call}\n"


def _wrt(fn, module) -> tuple:
    return resolve_wrt(module.functions[fn.name], 0 if fn.wrt is None else fn.wrt)


def _tuple(names) -> str:
    return f"({', '.join(names)}{',' if len(names) == 1 else ''})"


def _doc(fn, module):
    what = {"grad": "The gradient", "value_and_grad": "The value and the gradient",
            "vjp": "The vector-Jacobian product (keyword cotangent=)",
            "jvp": "The value and the Jacobian-vector product (keyword tangents=)"}[fn.mode]
    return (f"{what} of {fn.name} with respect to {', '.join(_wrt(fn, module))}, as "
            f"adcompiler.{fn.mode}.")


def _string_constant(name, text) -> str:
    """``name = ("..." "...")``, wrapped to lines under 100 characters."""
    chunks = textwrap.wrap(text, 80, drop_whitespace=False)
    return f"{name} = (" + "\n    ".join(repr(c) for c in chunks) + ")"


def _hint(name, command):
    again = command or f"adcompiler compile {name}"
    return (f"to compile it for these inputs, return them from %s() in {name} (it may return "
            f"a list of argument tuples, one per signature) and run `{again}` again")


def _header(name, command, uses_math, backend="numpy", cupyx=False):
    about = (f"Regenerate with `{command or 'adcompiler compile ' + name}`. Needs only NumPy. "
             "Each gradient is\ncompiled for the input signatures listed with it; other inputs "
             "raise a TypeError.")
    if backend == "cupy":
        about = textwrap.fill(about.replace("\n", " ").replace(
            "Needs only NumPy.", "Needs NumPy and CuPy, and runs on the GPU: pass CuPy arrays."),
            92)
    doc = f'"""Gradients of {name}, compiled ahead of time by adcompiler: do not edit.\n\n' + \
        about + '\n"""'
    imports = ["from __future__ import annotations", ""] + (["import math"] if uses_math else [])
    imports.append("import numpy as np")
    if backend == "cupy":
        imports += ["import cupy as cp"] + (["import cupyx"] if cupyx else [])
    return doc + "\n\n" + "\n".join(imports)


def _primal_section(module, roots, header_imports) -> str:
    """The user's statements defining ``roots`` and what they read, verbatim, in file order."""
    needed, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        stmt = module.definitions.get(name)
        if name in needed or stmt is None:
            continue
        needed.add(name)
        parts = ([stmt.args, *stmt.body] if isinstance(stmt, ast.FunctionDef) else [stmt])
        todo += [n.id for p in parts for n in ast.walk(p) if isinstance(n, ast.Name)]
    stmts = {id(module.definitions[n]): module.definitions[n] for n in needed}
    text = "".join(module.lines)
    out = f"# ---- from {os.path.basename(module.path)}, as written (decorators removed) ----"
    previous = None
    for stmt in sorted(stmts.values(), key=lambda s: s.lineno):
        is_def = isinstance(stmt, ast.FunctionDef)
        if is_def:
            piece = "".join(module.lines[stmt.lineno - 1:stmt.end_lineno]).rstrip()
        else:
            piece = ast.get_source_segment(text, stmt)
            if piece in header_imports or (isinstance(stmt, (ast.Import, ast.ImportFrom))
                                           and _imports_adcompiler(stmt)):
                continue
        out += ("\n\n\n" if is_def or previous in (None, True) else "\n") + piece
        previous = is_def
    return out


def _imports_adcompiler(stmt) -> bool:
    names = [stmt.module or ""] if isinstance(stmt, ast.ImportFrom) else \
        [a.name for a in stmt.names]
    return any(n.split(".")[0] == "adcompiler" for n in names)


def _check_collisions(module, primal, ours, backend="numpy"):
    """The user's copied names must not clash with the generated ones (np and math excepted,
    when they are numpy and math; cp and cupyx for CuPy code, when they are cupy and cupyx)."""
    defined = _names_bound(primal)
    for name in sorted(defined & set(ours)):
        stmt = module.definitions.get(name)
        raise CompileError(f"the standalone module defines `{name}` for the generated code, and "
                           "this module defines it too", module.location(stmt) if stmt else None,
                           f"rename `{name}`")
    wanted = [("np", "numpy"), ("math", "math")]
    wanted += [("cp", "cupy"), ("cupyx", "cupyx")] if backend == "cupy" else []
    for name, want in wanted:
        bound = getattr(module.namespace.get(name), "__name__", None)
        if name in defined and bound != want:
            stmt = module.definitions.get(name)
            raise CompileError(f"the generated code needs `{name}` to be {want}",
                               module.location(stmt) if stmt else None, f"rename `{name}`")


def _names_bound(source) -> set:
    tree = ast.parse(source or "")
    out = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            out.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
        else:
            out |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Store)}
    return out


def _names(source) -> set:
    return {t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type == tokenize.NAME}


def _rename(source: str, mapping: dict) -> str:
    """``source`` with the identifiers in ``mapping`` renamed (attribute names left alone)."""
    lines = source.splitlines(True)
    edits, previous = [], None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string in mapping and previous != ".":
            edits.append((tok.start, tok.end, mapping[tok.string]))
        previous = tok.string if tok.type == tokenize.OP else None
    for (row, col), (_, end), new in reversed(edits):
        lines[row - 1] = lines[row - 1][:col] + new + lines[row - 1][end:]
    return "".join(lines)


def _literal(value, owner) -> str:
    """``np.array([...], dtype="...")`` for a constant array, exactly round-tripping."""
    array = np.asarray(value)
    if array.size > MAX_LITERAL or array.dtype.kind not in "biufc":
        raise CompileError(f"{owner} reads a constant array of shape {array.shape} "
                           f"({array.size:,} {array.dtype} elements) that is not a module-level "
                           f"name; the standalone module writes such constants as literals, "
                           f"up to {MAX_LITERAL:,} elements",
                           hint="make it a module-level constant (np.zeros(...), np.array(...) "
                                "of literals): the standalone module copies its definition")
    return f"np.array({_nested(array.tolist())}, dtype={array.dtype.name!r})"


def _nested(x) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_nested(i) for i in x) + "]"
    if isinstance(x, float) and not np.isfinite(x):
        return "np.nan" if np.isnan(x) else ("np.inf" if x > 0 else "-np.inf")
    return repr(x)
