"""Build the standalone gradient module of a user's module (what ``adcompiler compile`` writes).

Invariants: the output imports only numpy, math and ``__future__`` (and cupy, cupyx for the CuPy
backend), never adcompiler, and is byte-identical for identical inputs. It holds the user's
needed top-level statements verbatim (:mod:`adcompiler.standalone_user`), then for each marked
function its compiled bodies and a dispatcher ``<mode>_<name>`` with the decorator's parameters,
keyword and results; the dispatcher runs the body whose guard takes the call (generated inline,
:mod:`adcompiler.standalone_guards`: ``type(x) is np.ndarray and x.dtype is _FLOAT64 ...``), else
``_dispatch`` classifies the arguments, runs the body that fits or raises a TypeError naming the
compiled and the given signatures (helpers: :mod:`adcompiler.runtime.dispatch`, copied in).
Arrays the generated code reads are the module's own globals where they are, else literals
(refused past ``MAX_LITERAL``); CuPy code reads device copies of them, made once when the module
is imported; module-level state of a body (the memory planner's pools) is its own.

Shapes: ``specialise`` compiles one body per example signature (dtypes and shapes, as the
decorator does per call); ``shape_polymorphic`` then replaces each by a body that reads its sizes
from its arguments, so ``grad_loss(X, y)`` works for any batch size, as the decorator does. How:
anti-unification (:mod:`adcompiler.polymorphic`): the code compiled for other sizes is merged,
each number that changes written as a formula of the sizes; chosen over a shape-generic emitter
because it leaves the compiler, its backends and the decorator's fast path untouched, and checks
itself (the merge must reproduce every code it came from). Its key is a pattern: the
dtypes, the ranks, the sizes of 1, and symbols ``d1, d2...`` for the others (the same symbol
where sizes must be equal). A body that cannot be made so stays per shape, and the module's
header says why.
"""

from __future__ import annotations

import ast
import copy
import inspect
import os
import textwrap
from dataclasses import dataclass, field

import numpy as np

from . import polymorphic, standalone_guards
from . import standalone_user as user
from .errors import CompileError
from .examples import cotangent_for
from .runtime import dispatch
from .runtime.cache import constants_of
from .signature import bind_arguments, classify, resolve_wrt

RUNTIME = "\n\n\n".join(inspect.getsource(f).rstrip() for f in dispatch.HELPERS)
RUNTIME_JVP = "\n\n\n".join(inspect.getsource(f).rstrip() for f in dispatch.JVP_HELPERS)
_RUNTIME_NAMES = tuple(f.__name__ for f in dispatch.HELPERS + dispatch.JVP_HELPERS) + ("_HINT",)
_describe = dispatch._describe


@dataclass
class Specialisation:
    signature: tuple   # the dispatch key: one entry per parameter (then the cotangent's)
    compiled: object   # a pipeline.Compiled
    least: int = 2     # a shape-polymorphic body's smallest size (its symbols: d1, d2...)

    @property
    def symbols(self) -> list:
        """A pattern's size symbols, in order (none for an exact signature)."""
        return list(dict.fromkeys(d for s in self.signature if s[0] == "array" for d in s[2]
                                  if isinstance(d, str)))


@dataclass
class MarkedFunction:
    name: str
    mode: str                  # "grad", "value_and_grad" or "vjp"
    wrt: object                # as the decorator wrote it (None: the first parameter)
    specialisations: list = field(default_factory=list)
    per_shape: list = field(default_factory=list)   # why bodies stay per shape, if they do
    forward_of: str = ""       # compile --mode forward: the decorator's mode this jvp serves


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


def shape_polymorphic(module, gradient, examples, specialisations) -> tuple:
    """``(specialisations, reasons)``: each body made to hold for every size of its pattern
    where :func:`adcompiler.polymorphic.generalise` can, one per pattern; the reasons where it
    cannot."""
    out, reasons, seen = [], [], set()
    for args, spec in zip(examples, specialisations):
        general, why = polymorphic.generalise(module, gradient, args, spec)
        if why and why not in reasons:
            reasons.append(why)
        spec = general or spec
        if spec.signature not in seen:
            seen.add(spec.signature)
            out.append(spec)
    return out, reasons


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
        self.per_shape: list = []   # (dispatcher, reasons) for bodies kept per shape
        self.dtypes: list = []      # the dtypes the guards compare with (``_FLOAT64``)
        self.uses_math = False

    def add(self, fn: MarkedFunction):
        self.needed.add(fn.name)
        names = []
        for i, spec in enumerate(fn.specialisations, 1):
            names.append(self.body(fn, spec, f"_{fn.mode}_{fn.name}_{i}"))
        table = f"_{fn.mode.upper()}_{fn.name.upper()}"
        params = _params(self.module.functions[fn.name], fn.mode, _wrt(fn, self.module))
        self.blocks += [_table(fn, table, names, params, self.backend == "cupy"),
                        self.dispatcher(fn, table, names)]
        self.defined += names + [table, f"{fn.mode}_{fn.name}"]
        if fn.per_shape:
            self.per_shape.append((f"{fn.mode}_{fn.name}", fn.per_shape))

    def body(self, fn, spec, new_name):
        """One specialisation's function, renamed; its helpers and constants collected."""
        compiled = spec.compiled
        tree = ast.parse(compiled.source)
        lines = compiled.source.splitlines(True)
        texts = {_defines(s): "".join(lines[s.lineno - 1:s.end_lineno]) for s in tree.body}
        renames = {compiled.fname: new_name}
        for stmt in tree.body:
            name = _defines(stmt)
            if name != compiled.fname and (self.helpers.get(name, texts[name]) != texts[name]
                                           or _state(stmt)):
                renames[name] = f"{name}_{new_name}"  # changed, or the body's own state
        host = getattr(compiled, "constants", {})  # CuPy code's constants, before the copy
        for name, value in constants_of(compiled).items():
            renames[name] = self.constant(name, host.get(name, value), new_name)
        for name, text in texts.items():
            if name != compiled.fname:
                self.helpers.setdefault(renames.get(name, name), user.rename(text, renames))
        self.uses_math |= "math" in user.token_names(compiled.source)
        self.blocks.append(self.comment(fn, spec) + "\n"
                           + user.rename(texts[compiled.fname], renames))
        return new_name

    def comment(self, fn, spec) -> str:
        """``# grad of f for (x: float64[d1, 3])``, and what the symbols stand for."""
        params = _params(self.module.functions[fn.name], fn.mode, _wrt(fn, self.module))
        text = f"{fn.mode} of {fn.name} for {_describe(params, spec.signature)}"
        lines = textwrap.wrap(text, 96, initial_indent="# ", subsequent_indent="#     ")
        if spec.symbols:
            lines.append(f"# {', '.join(spec.symbols)}: any size{'s' * (len(spec.symbols) > 1)} "
                         f"of at least {spec.least}")
        return "\n".join(lines)

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
        text = user.literal(value, owner)
        self.literals[new] = f"cp.asarray({text})" if device else text
        return new

    def dispatcher(self, fn, table, bodies):
        """``<mode>_<name>`` with the user's parameters (annotations dropped) and the decorator's
        keyword: ``cotangent`` (vjp) or ``tangents`` (jvp). It calls the body whose guard the
        arguments pass (:mod:`adcompiler.standalone_guards`), else ``_dispatch``, which raises
        the TypeError."""
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
        wrt = _wrt(fn, self.module)
        flat = names + {"vjp": ["cotangent"], "jvp": [f"{w}_dot" for w in wrt]}.get(fn.mode, [])
        doc = "\n".join(textwrap.wrap(_doc(fn, self.module), 92, subsequent_indent="    "))
        lines = [f"def {fn.mode}_{fn.name}({ast.unparse(args)}):", f'    """{doc}"""']
        if fn.mode == "jvp":
            single = fn.wrt is None or not isinstance(fn.wrt, (tuple, list))
            lines.append(f"    {_tuple(flat[len(names):])} = "
                         f"_tangents(tangents, {_tuple(wrt)}, {single})")
        guards, dtypes = standalone_guards.render(
            flat, [(s.signature, b) for s, b in zip(fn.specialisations, bodies)], _least(fn),
            self.backend == "cupy", _returns(fn), f"_dispatch({table}, {_tuple(flat)})",
            {extra or "", table, "np", "cp", "_dispatch", "_tangents"})
        self.dtypes += [d for d in dtypes if d not in self.dtypes]
        return "\n".join(lines + guards) + "\n"

    def render(self, command):
        cupyx = "cupyx." in "".join([*self.blocks, *self.helpers.values()])
        header = _header(os.path.basename(self.module.path), command, self.uses_math,
                         self.backend, cupyx, self.per_shape)
        primal = user.primal_section(self.module, self.needed, header.split("\n"))
        dtypes = {standalone_guards.dtype_constant(d): d for d in self.dtypes}
        ours = [*self.helpers, *self.literals, *_RUNTIME_NAMES, *dtypes, *self.defined]
        user.check_collisions(self.module, primal, ours, self.backend)
        name = os.path.basename(self.module.path)
        parts = [header, primal,
                 "# ---- generated by adcompiler: do not edit; recompile instead ----",
                 _string_constant("_HINT", _hint(name, command)), RUNTIME,
                 RUNTIME_JVP if "_tangents" in "".join(self.blocks) else "",
                 *self.helpers.values(),
                 "\n".join(f"{k} = {v}" for k, v in self.literals.items()),
                 _dtype_constants(dtypes), *self.blocks]
        return "\n\n\n".join(p.rstrip("\n") for p in parts if p.strip()) + "\n"


def _state(stmt) -> bool:
    """A module-level list or dict the code mutates (the memory planner's pools)."""
    return isinstance(stmt, ast.Assign) and isinstance(stmt.value, (ast.List, ast.Dict))


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
    least = _least(fn)
    options = (", device=True" if device else "") + (f", least={least}" if least > 2 else "")
    return (f"{table} = _Signatures({fn.mode + '_' + fn.name!r}, {tuple(params)!r}, "
            f"{'example_' + fn.name!r}, {{\n{rows}}}{options})")


def _least(fn) -> int:
    """The smallest size a symbol of the function's patterns stands for (one per table)."""
    return max([s.least for s in fn.specialisations if s.symbols] or [2])


def _returns(fn):
    """``returns(call)``: the lines returning the decorator's result structure from a body's
    flat tuple."""
    single = fn.wrt is None or not isinstance(fn.wrt, (tuple, list))
    if fn.mode == "value_and_grad" and not single:
        return lambda call: [f"out = {call}", "return out[0], out[1:]"]
    if fn.mode in ("grad", "vjp") and not single and len(fn.wrt) == 1:
        return lambda call: [f"return ({call},)"]
    return lambda call: [f"return {call}"]


def _dtype_constants(names) -> str:
    """The dtypes the guards compare with by identity, one line each."""
    if not names:
        return ""
    return ("# the guards compare dtypes by identity (NumPy keeps one object per built-in "
            "dtype)\n" + "\n".join(f"{k} = np.dtype({v!r})" for k, v in names.items()))


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


def _header(name, command, uses_math, backend="numpy", cupyx=False, per_shape=()):
    needs = "Needs NumPy and CuPy, and runs on the GPU: pass CuPy arrays." if backend == "cupy" \
        else "Needs only NumPy."
    about = textwrap.fill(
        f"Regenerate with `{command or 'adcompiler compile ' + name}`. {needs} Each gradient "
        "takes the input signatures listed with it, where a size named d1, d2... is any size of "
        "at least 2, or as the comment above its body says (the same name, the same size); other "
        "inputs raise a TypeError.", 92)
    if per_shape:
        about += "\n\nCompiled per shape (the code compiled for other sizes could not be merged):"
        for dispatcher, reasons in per_shape:
            about += "\n" + textwrap.fill(f"{dispatcher}: {'; '.join(reasons)}.", 92,
                                          initial_indent="- ", subsequent_indent="  ")
    doc = f'"""Gradients of {name}, compiled ahead of time by adcompiler: do not edit.\n\n' + \
        about + '\n"""'
    imports = ["from __future__ import annotations", ""] + (["import math"] if uses_math else [])
    imports.append("import numpy as np")
    if backend == "cupy":
        imports += ["import cupy as cp"] + (["import cupyx"] if cupyx else [])
    return doc + "\n\n" + "\n".join(imports)
