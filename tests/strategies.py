"""Hypothesis strategies: random straight-line NumPy programs, shared by the compiler and tape tests.

:func:`programs` draws a :class:`Program`: the text of a module defining ``def f(x, y, z)``, a
DAG of the supported primitives with broadcasting that ends in a scalar, and example arguments
of shapes such as ``()``, ``(3,)``, ``(2, 3)``, ``(1, 3)``, ``(2, 1)`` (a ``()`` argument is a
Python float or a 0-d array). Each statement is executed on the example arguments while it is
drawn, and kept only if NumPy accepts it and its value stays finite and small, so every program
runs and stays in the domains of its functions (``np.log(np.abs(a) + 1.0)``, ``a / (b*b + 1)``).

``programs(sizes=...)`` draws a program at large shapes instead (:mod:`tests.program_sizes`:
above the fusion, ``out=`` buffer and numexpr thresholds), where each statement's intermediates
are bounded before it runs; ``programs(calls=True)`` adds the helper functions of
``CALL_HEADER`` (a loop, an in-place update, a helper calling a helper, a tuple result) and a
``call`` family of statements calling them. The defaults draw as before.

:func:`load` writes a program to a file and imports it (``inspect`` must read the source) and
returns ``(source_text, function, example_args)``; :func:`random_programs` draws those triples.
"""

from __future__ import annotations

import ast
import math
import re
import warnings
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from tests import program_sizes
from tests.helpers import import_source

PARAMS = ("x", "y", "z")
INPUT_SHAPES = [(), (3,), (2, 3), (1, 3), (2, 1)]
MAX_ABS, MAX_SIZE, MAX_NDIM = 50.0, 64, 4

HEADER = '''"""A random program drawn by tests/strategies.py."""
import math

import numpy as np

I3 = np.array([0, 2, 0])  # integer-array indices, repeated
I2 = np.array([1, 0, 1, 1])


def helper(a, b):
    c = np.tanh(a) * b
    return c + a

'''


# Helper functions the ``call`` family calls (``programs(calls=True)``): a loop with a default
# bound, an in-place update of a fresh array and a call of another helper, a reduction, a tuple.
CALL_HEADER = '''
def smooth(a, k=2):
    for _ in range(k):
        a = 0.5 * a + 0.25 * np.tanh(a)
    return a


def mix(a, b):
    t = np.tanh(a)
    t += b * 0.5
    return helper(t, a)


def scaled(a, b):
    s = np.mean(a * a)
    return a / np.sqrt(s + 1.0) + np.sin(b)


def pair(a, b):
    return np.sin(a) * b, a - np.cos(b)

'''


# ---- statement templates: {a} and {b} are operands (names of earlier values) ---------------
@dataclass(frozen=True)
class Template:
    text: str
    operands: int = 1
    when: object = None   # a predicate on the operands' values; None: anything NumPy accepts


def _py(v):
    return type(v) is float


def _not_py(*vs):
    return all(not _py(v) for v in vs)


def _dot_ok(a, b):
    return np.ndim(a) <= 2 and np.ndim(b) <= 2


UNARY = [Template(t) for t in [
    "np.tanh({a})", "np.sin({a})", "np.cos({a})", "np.arctan({a})", "np.exp(-{a} * {a})",
    "np.log(np.abs({a}) + 1.0)", "np.sqrt({a} * {a} + 1.0)", "np.log1p({a} * {a})",
    "np.expm1(np.tanh({a}))", "np.sinh(np.tanh({a}))", "np.cosh(np.tanh({a}))",
    "np.arcsin(np.tanh({a}) * 0.9)", "np.arccos(np.sin({a}) * 0.9)", "np.tan(np.tanh({a}))",
    "np.square({a})", "np.reciprocal({a} * {a} + 1.0)", "-{a}", "np.abs({a})", "{a} ** 2",
    "np.clip({a}, -0.5, 0.5)", "2.0 * {a} - 0.5", "np.power({a} * {a} + 1.0, 0.5)", "abs({a})",
]] + [Template(t, when=_not_py) for t in [
    "{a}.copy()", "np.copy({a})", "{a}.astype(np.float64)", "{a}.clip(-1.0, 1.0)",
]]

MATH = [Template(t, when=_py) for t in [  # the math module, on Python floats only
    "math.sin({a})", "math.cos({a})", "math.tanh({a})", "math.exp(-{a} * {a})",
    "math.log(math.cosh({a}))", "math.sqrt({a} * {a} + 1.0)", "math.atan({a})",
    "math.log1p({a} * {a})", "math.expm1(math.tanh({a}))", "math.sin({a}) * {a} - 1.5",
    "math.log(abs({a}) + 1.0)",
]]

BINARY = [Template(t, 2) for t in [
    "{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / ({b} * {b} + 1.0)", "np.maximum({a}, {b})",
    "np.minimum({a}, {b})", "np.where({a} > {b}, {a}, {b})",
    "np.where({a} < {b}, {a} * {b}, {a} - {b})", "({a} * {a} + 1.0) ** np.tanh({b})",
    "np.divide({a}, np.sqrt({b} * {b} + 1.0))", "np.clip({a}, {b} - 1.0, {b} + 1.0)",
    "helper({a}, {b})", "np.add({a}, {b})", "np.multiply({a}, {b})", "np.subtract({a}, {b})",
]]

REDUCERS = ("sum", "mean", "max", "min", "prod")
AXES = ("", "axis=0", "axis=-1", "axis=1", "axis=(0, 1)", "axis=0, keepdims=True",
        "axis=-1, keepdims=True", "keepdims=True")

SHAPE = [Template(t, when=_not_py) for t in [
    "{a}.T", "np.transpose({a})", "np.transpose({a}, (1, 0, 2))", "{a}.transpose(2, 0, 1)",
    "{a}.reshape(-1)", "{a}.reshape(-1, 1)", "{a}.reshape(1, -1)", "{a}.reshape(3, -1)",
    "np.reshape({a}, (2, -1))", "{a}.reshape({a}.shape[0], -1)", "np.expand_dims({a}, 0)",
    "np.expand_dims({a}, -1)", "np.expand_dims({a}, axis=1)", "np.squeeze({a})",
    "{a}.squeeze(axis=0)", "np.squeeze({a}, axis=-1)", "np.broadcast_to({a}, (2, 3))",
    "np.broadcast_to({a}, (2, 2, 3))",
]]

INDEX = [Template(t, when=_not_py) for t in [
    "{a}[1:]", "{a}[:-1]", "{a}[::-1]", "{a}[0]", "{a}[-1]", "{a}[:, 1:]", "{a}[:, 0]",
    "{a}[..., ::2]", "{a}[..., 0]", "{a}[None]", "{a}[:, None]", "{a}[0, 1:]", "{a}[I3]",
    "{a}[I2]", "{a}[[0, 2, 0]]", "{a}[[1, 0, 1, 1]]", "{a}[:, I3]", "{a}[:, [2, 0, 2]]",
]]

LINALG = [Template("{a} @ {b}", 2, _not_py), Template("np.matmul({a}, {b})", 2),
          Template("np.dot({a}, {b})", 2, _dot_ok),
          Template("{a}.dot({b})", 2, lambda a, b: _not_py(a) and _dot_ok(a, b)),
          Template("np.outer({a}, {b})", 2), Template("{a} @ {a}.T", 1, _not_py),
          Template("{a}.T @ {a}", 1, _not_py)]

JOIN = [Template(t, 2) for t in [
    "np.concatenate([{a}, {b}])", "np.concatenate([{a}, {b}], axis=1)",
    "np.concatenate([{a}, {b}, {a}], axis=-1)", "np.concatenate(({a}, {a}))",
    "np.stack([{a}, {b}])", "np.stack([{a}, {b}], axis=1)", "np.stack([{a}, {b}, {a}], axis=-1)",
]]

CALLS = [Template(t, 2) for t in [
    "smooth({a})", "smooth({a}, 3)", "mix({a}, {b})", "scaled({a}, {b})",
    "helper(smooth({a}), {b})", "pair({a}, {b})[0]", "pair({a}, {b})[1] * 0.5",
    "mix(smooth({a}, 1), {b})",
]]

# A name rebound to a gather of itself (``a = a[::-1]``): the old value's cotangent and the new
# one's both want the user's name (session 17 found the scatter back wiping it).
# Only gathers that keep the shape: a value a loop carries must keep its shape (a located error
# otherwise, which the tape-agreement tests do not expect).
REBIND = ["{a}[::-1]", "{a}[I3]", "{a}[[0, 2, 0]]", "np.flip({a})", "{a}[:, ::-1]",
          "{a}[..., ::-1]", "{a}.T"]

# None: the family has its own builder, _Drawing.stmt_<family>.
FAMILIES = {"unary": UNARY, "math": MATH, "binary": BINARY, "reduce": None, "shape": SHAPE,
            "index": INDEX, "linalg": LINALG, "join": JOIN, "unpack": None, "augmented": None,
            "rebind": None}


# ---- the generator ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Program:
    """A module's source defining ``f(x, y, z)``, and example arguments to call it with."""

    source: str
    args: tuple


def _safe(v, max_size=MAX_SIZE) -> bool:
    if _py(v):
        return math.isfinite(v) and abs(v) <= MAX_ABS
    if not isinstance(v, (np.ndarray, np.generic)) or v.dtype != np.float64:
        return False
    return 0 < v.size <= max_size and v.ndim <= MAX_NDIM and bool(np.all(np.abs(v) <= MAX_ABS))


def _passes_cotangent_on(expr) -> bool:
    """Whether the adjoint of ``expr``'s outermost operation hands its cotangent on unchanged
    (``a + b``, ``a - b``, ``a.copy()``...): no node is emitted between the two."""
    node = ast.parse(expr, mode="eval").body
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, (ast.Add, ast.Sub))
    if isinstance(node, ast.Call):
        func = ast.unparse(node.func)
        return func in ("np.add", "np.subtract", "np.copy", "helper") or \
            func.endswith((".copy", ".astype"))
    return False


class _Drawing:
    """The program being drawn: its statements, and their values on the example arguments."""

    def __init__(self, draw, args, sizes=None, calls=False):
        self.draw = draw
        self.sizes = sizes          # a program_sizes.Sizes; None: the small shapes
        self.max_size = sizes.max_size if sizes else MAX_SIZE
        self.families = sorted(FAMILIES) + ["call"] * int(calls)   # calls: its weight
        self.env = {"np": np, "math": math}
        exec(compile(HEADER + (CALL_HEADER if calls else ""), "<header>", "exec"), self.env)
        self.env.update((p, _copy(a)) for p, a in zip(PARAMS, args))
        self.names = list(PARAMS)   # the values statements may use, in definition order
        self.used: set = set()
        self.passing: set = set()   # names whose value came from a _passes_cotangent_on op
        self.lines: list = []
        self.count = self.pending = 0   # names v1..v{count} are taken; v{count+1}.. are drawn

    def fresh(self):
        self.pending += 1
        return f"v{self.count + self.pending}"

    def operands(self, n, when=None):
        """``n`` names drawn among those whose value satisfies ``when``; None if there are none."""
        names = [m for m in self.names if when is None or when(self.env[m])]
        return [self.draw(st.sampled_from(names)) for _ in range(n)] if names else None

    def safe(self, v) -> bool:
        return _safe(v, self.max_size)

    def run(self, lines):
        """The environment after running ``lines``, or None if NumPy rejects them (or, at large
        sizes, one of their intermediates would be too large to compute)."""
        env = dict(self.env)
        bounded = self.sizes is not None and self.sizes.bounded
        try:
            with warnings.catch_warnings(), np.errstate(all="raise"):
                warnings.simplefilter("error")
                if not bounded:
                    exec("\n".join(lines), env)
                for line in lines if bounded else ():
                    if not program_sizes.fits(line, env, self.max_size):
                        return None
                    exec(line, env)
        except Exception:
            return None
        return env

    def attempt(self, lines, targets, passing=()) -> bool:
        """Run ``lines``; keep them if NumPy accepts them and every new value is safe."""
        env, pending, self.pending = self.run(lines), self.pending, 0
        if env is None or not all(self.safe(env[t]) for t in targets):
            return False
        text = "\n".join(lines)
        self.used |= set(re.findall(r"\b[xyz]\b|\bv\d+\b", text)) - set(targets)
        self.env, self.lines, self.count = env, self.lines + lines, self.count + pending
        self.names += [t for t in targets if t not in self.names]
        self.passing |= set(passing)
        return True

    def assign(self, expr) -> bool:
        t = self.fresh()
        return self.attempt([f"{t} = {expr}"], [t], [t] if _passes_cotangent_on(expr) else [])

    def pick(self, exprs, shape=None):
        """One of the expressions that run here with a safe value (of ``shape`` where given),
        or None if none does."""
        fits = [e for e in exprs if (env := self.run([f"_ = {e}"])) and self.safe(env["_"])
                and (shape is None or np.shape(env["_"]) == shape)]
        return self.draw(st.sampled_from(fits)) if fits else None

    def statement(self):
        for _ in range(12):
            family = self.draw(st.sampled_from(self.families))
            if getattr(self, "stmt_" + family, self.stmt_template)(family):
                return
        self.assign(f"np.tanh({self.names[-1]})")

    def expression(self, family):
        """An expression of ``family`` on drawn operands, or None where no template applies."""
        when = {"math": _py}.get(family)
        names = self.operands(2, when)
        if names is None:
            return None
        values = [self.env[n] for n in names]
        templates = CALLS if family == "call" else FAMILIES[family]
        return self.pick([t.text.format(a=names[0], b=names[-1]) for t in templates
                          if t.when is None or t.when(*values[:t.operands])])

    def stmt_template(self, family):
        expr = self.expression(family)
        return expr is not None and self.assign(expr)

    def stmt_reduce(self, family):
        """``a.sum(axis=...)`` or ``np.max(a, keepdims=True)``: any reducer, axis and spelling."""
        (a,) = self.operands(1)
        exprs = [f"np.{r}({a}{', ' + axis if axis else ''})" for r in REDUCERS for axis in AXES]
        if not _py(self.env[a]):
            exprs += [f"{a}.{r}({axis})" for r in REDUCERS for axis in AXES]
        expr = self.pick(exprs)
        return expr is not None and self.assign(expr)

    def stmt_unpack(self, family):
        """``p, q = e1, e2``: tuple unpacking."""
        e1, e2 = self.expression("unary"), self.expression("binary")
        if e1 is None or e2 is None:
            return False
        p, q = self.fresh(), self.fresh()
        passing = [t for t, e in [(p, e1), (q, e2)] if _passes_cotangent_on(e)]
        return self.attempt([f"{p}, {q} = {e1}, {e2}"], [p, q], passing)

    def stmt_rebind(self, family):
        """``a = a[::-1]``: an array name (a parameter's too) rebound to a gather of itself of
        the same shape, whose new value then counts as unused (so that it reaches the result)."""
        names = self.operands(1, lambda v: not _py(v))
        shape = names and np.shape(self.env[names[0]])
        expr = names and self.pick([t.format(a=names[0]) for t in REBIND], shape)
        if not expr or not self.attempt([f"{names[0]} = {expr}"], names):
            return False
        self.used.discard(names[0])
        self.passing.discard(names[0])
        return True

    def stmt_augmented(self, family):
        """``t = np.tanh(a); t op= b``, an in-place update of a fresh array, maybe aliased."""
        a, b = self.operands(2)
        op = self.draw(st.sampled_from(["+=", "-=", "*="]))
        t = self.fresh()
        lines = [f"{t} = np.tanh({a})"]
        targets = [t]
        # An alias sees the update of an array, not of a 0-d result (a NumPy scalar, rebound).
        if self.draw(st.booleans()):
            alias = self.fresh()
            lines.append(f"{alias} = {t}")
            targets.append(alias)
        lines.append(f"{t} {op} {b}")
        return self.attempt(lines, targets, targets if op != "*=" else [])

    def result(self):
        """The scalar returned: every value no statement used, reduced and added up."""
        sinks = [n for n in self.names[len(PARAMS):] if n not in self.used] or [self.names[-1]]
        terms = []
        for n in sinks:
            if _py(self.env[n]):
                terms.append(self.draw(st.sampled_from([n, f"np.sum({n})"])))
            else:
                terms.append(self.draw(st.sampled_from(
                    [f"{n}.sum()", f"{n}.mean()", f"np.sum({n})", f"np.mean({n})"])))
        return " + ".join(terms)


def _copy(a):
    return a if _py(a) else np.array(a, copy=True)


@st.composite
def arguments(draw):
    """Example arguments: a shape per parameter, values from a drawn seed (continuous values,
    so a tie of np.maximum or a kink of np.abs is met with probability zero)."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    args = []
    for _ in PARAMS:
        shape = draw(st.sampled_from(INPUT_SHAPES))
        value = rng.uniform(-1.5, 1.5, shape)
        args.append(float(value) if shape == () and draw(st.booleans()) else np.asarray(value))
    return tuple(args)


def drawn_sizes(draw, sizes):
    """``sizes`` (a :class:`tests.program_sizes.Sizes`, or a strategy of them: drawn), or None."""
    return draw(sizes) if isinstance(sizes, st.SearchStrategy) else sizes


@st.composite
def programs(draw, min_statements=1, max_statements=7, sizes=None, calls=False):
    """A :class:`Program`: random statements over ``x, y, z``, returning a float scalar;
    ``sizes``: at large shapes (see :mod:`tests.program_sizes`), ``calls``: with the helpers of
    ``CALL_HEADER`` and statements calling them."""
    sizes = drawn_sizes(draw, sizes)
    args = program_sizes.draw_arguments(draw, sizes) if sizes else draw(arguments())
    d = _Drawing(draw, args, sizes, calls)
    for _ in range(draw(st.integers(min_statements, max_statements))):
        d.statement()
    body = d.lines + [f"return {d.result()}"]
    header = HEADER + (CALL_HEADER if calls else "")
    source = header + "\ndef f(x, y, z):\n" + "".join(f"    {line}\n" for line in body)
    return Program(source, args)


def load(program: Program, directory):
    """Write ``program`` into ``directory``, import it; ``(source_text, function, example_args)``."""
    module = import_source(program.source, directory, "adprog")
    return program.source, module.f, tuple(_copy(a) for a in program.args)


def random_programs(directory, **kwargs):
    """Triples ``(source_text, function, example_args)`` of random programs loaded from files."""
    return programs(**kwargs).map(lambda p: load(p, directory))
