"""Large input shapes for the random programs, and a bound on the size of every intermediate.

The random-program strategies (tests/strategies.py, tests/control_strategies.py) draw tiny shapes
by default, where the compiler's fast paths are off. A :class:`Sizes` drawn by :func:`sizes`
gives them shapes where they switch on:

* ``"buffers"``: arrays of 4,096 to 2^18 elements, at or above the fusion threshold
  (``adcompiler.passes.fuse.MIN_SIZE``) and the ``out=`` buffer pool's
  (``adcompiler.backends.planner.MIN_BYTES``, 4,096 float64), with broadcasting partners
  ((64, 64) with (64,), (1, 64), (64, 1) and ());
* ``"numexpr"``: arrays of 2^18 elements and more, numexpr's and the threaded ufuncs' threshold
  (``adcompiler.backends.numexpr_chains.MIN_ELEMENTS``).

Templates written for tiny shapes must not explode there (``np.outer(a, b)`` of two 2^18
vectors, ``a.T @ a`` of a (1, 4096) row, ``a + b`` of a (N, 1) and an (N,)): with a
:class:`Sizes` whose ``bounded`` is set, each line a strategy runs while drawing is first read by
:func:`fits`, which follows the shapes through its expression without computing anything large
and refuses it when one intermediate would exceed ``max_size`` elements. Loops over an array's
rows or a traced range ``range(int(np.sum(a > c)))`` are kept to ``max_trips`` iterations.

At the default (``sizes=None``) none of this runs and the strategies draw as before.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

# The compiler's thresholds (tests/programs/test_large_programs.py checks that they are still these):
# adcompiler.passes.fuse.MIN_SIZE and adcompiler.backends.planner.MIN_BYTES // 8 (float64), and
# adcompiler.backends.numexpr_chains.MIN_ELEMENTS.
THRESHOLDS = {"buffers": 4096, "numexpr": 2 ** 18}


@dataclass(frozen=True)
class Sizes:
    """The shapes one large program is drawn at.

    ``shapes``: the input shapes each of ``x, y, z`` is drawn from; ``full``: the largest of
    them, which at least one argument has; ``max_size``: the most elements of any value or
    intermediate; ``max_trips``: the most iterations of a loop over an array's rows or a traced
    range (static ranges and while loops keep their small bounds); ``bounded``: check every
    line's intermediates with :func:`fits` before running it."""

    tier: str
    shapes: tuple
    full: tuple
    max_size: int
    max_trips: int = 5
    bounded: bool = True

    @property
    def elements(self) -> int:
        return math.prod(self.full)

    def __repr__(self):   # hypothesis prints it in a falsifying example
        return f"Sizes({self.tier!r}, full={self.full})"


def _sizes(tier, rows, cols, control):
    full = (rows, cols) if rows else (cols,)
    shapes = [(), (cols,), full] + ([(1, cols), (rows, 1)] if rows else [])
    if control and rows:   # as the control strategy's (3, 2): another row count to loop over
        shapes.append((cols, rows))
    shapes = list(dict.fromkeys(shapes))
    # 5 times the largest input: a 5-trip loop recording it row by row, a concatenation of 3
    return Sizes(tier, tuple(shapes), full, 5 * math.prod(full))


BASES = {
    "buffers": [(64, 64), (70, 70), (1, 4096), (4, 4096), (None, 4096), (3, 1500)],
    "numexpr": [(512, 512), (520, 510), (1, 2 ** 18), (2, 2 ** 18), (None, 2 ** 18)],
}


def sizes(tier=None, control=False):
    """A :class:`Sizes` of ``tier`` (``"buffers"`` or ``"numexpr"``; None: either)."""
    tiers = [tier] if tier else sorted(BASES)
    return st.sampled_from([_sizes(t, r, c, control) for t in tiers for r, c in BASES[t]])


for _tier, _bases in BASES.items():   # each base reaches its tier's threshold
    assert all(math.prod(s for s in b if s) >= THRESHOLDS[_tier] for b in _bases), _tier


def draw_arguments(draw, sizes: Sizes):
    """Example arguments at ``sizes``: one of them (drawn) has the full shape, the others any of
    the shapes; values from a drawn seed, in [-1.5, 1.5], as the small strategies draw them."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    big = draw(st.integers(0, 2))
    args = []
    for i in range(3):
        shape = sizes.full if i == big else draw(st.sampled_from(sizes.shapes))
        value = rng.uniform(-1.5, 1.5, shape)
        args.append(float(value) if shape == () and draw(st.booleans()) else np.asarray(value))
    return tuple(args)


# ---- the bound on intermediates --------------------------------------------------------------
class Refused(Exception):
    """An intermediate would be too large (or the shapes cannot be followed)."""


def fits(line, env, max_size) -> bool:
    """Whether running the simple statement ``line`` in ``env`` keeps every intermediate (each
    node of its expressions) within ``max_size`` elements; read from the shapes alone, with
    nothing larger than the operands computed. Where the shapes cannot be followed (an
    expression NumPy would reject anyway) it is False."""
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return False
    walker = _Shapes(env, max_size)
    try:
        for stmt in tree.body:
            walker.statement(stmt)
    except Refused:
        return False
    except Exception:  # noqa: BLE001 - what NumPy raises on the stand-ins it raises for real
        return False
    return True


def _standin(shape):
    """A zero-stride array of ``shape``: no memory, any shape."""
    return np.broadcast_to(np.float64(0.5), shape)


class _Seq(tuple):
    """The shapes of a list or tuple display's items."""


_ELEMENTWISE = {"where", "clip", "power", "divide", "add", "subtract", "multiply", "maximum",
                "minimum", "abs", "tanh", "sin", "cos", "exp", "log", "sqrt", "square", "arctan",
                "log1p", "expm1", "sinh", "cosh", "arcsin", "arccos", "tan", "reciprocal",
                "negative", "copy", "float64"}


class _Shapes:
    def __init__(self, env, max_size):
        self.env, self.max_size = env, max_size

    def size(self, shape):
        n = math.prod(shape)
        if n > self.max_size:
            raise Refused(shape)
        return shape

    def statement(self, stmt):
        if isinstance(stmt, ast.Assign):
            self.shape(stmt.value)
            for t in stmt.targets:
                if isinstance(t, ast.Subscript):
                    self.shape(t)
        elif isinstance(stmt, ast.AugAssign):
            target = ast.Subscript(stmt.target.value, stmt.target.slice, ast.Load()) \
                if isinstance(stmt.target, ast.Subscript) else ast.Name(stmt.target.id, ast.Load())
            self.shape(ast.BinOp(target, stmt.op, stmt.value))
        elif isinstance(stmt, ast.Expr):
            self.shape(stmt.value)
        elif not isinstance(stmt, ast.Pass):
            raise Refused(type(stmt).__name__)

    def value(self, node):
        """The value of a small expression (an index, an axis, a shape literal)."""
        return eval(compile(ast.Expression(node), "<index>", "eval"), dict(self.env))

    def shape(self, node):
        """The shape of ``node``'s value, after checking each intermediate's size."""
        if isinstance(node, ast.Constant):
            return ()
        if isinstance(node, ast.Name):
            v = self.env[node.id]
            return np.shape(v) if isinstance(v, (np.ndarray, np.generic, float, int, bool)) \
                else None
        if isinstance(node, (ast.List, ast.Tuple)):
            return _Seq(self.shape(e) for e in node.elts)
        if isinstance(node, ast.UnaryOp):
            return () if isinstance(node.op, ast.Not) else self.shape(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = self.shape(node.left), self.shape(node.right)
            if isinstance(node.op, ast.MatMult):
                return self.size(_matmul(a, b))
            return self.size(np.broadcast_shapes(a, b))
        if isinstance(node, ast.Compare):
            return self.size(np.broadcast_shapes(*(self.shape(n) for n in
                                                   [node.left, *node.comparators])))
        if isinstance(node, ast.BoolOp):
            for n in node.values:
                self.shape(n)
            return ()
        if isinstance(node, ast.IfExp):
            self.shape(node.test)
            body, other = self.shape(node.body), self.shape(node.orelse)
            return body if math.prod(body) >= math.prod(other) else other
        if isinstance(node, ast.Subscript):
            base = self.shape(node.value)
            index = self.value(node.slice)
            if isinstance(index, np.ndarray) and index.dtype == bool:
                return self.size((int(np.count_nonzero(index)),) + tuple(base[index.ndim:]))
            return self.size(np.shape(_standin(base)[index]))
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id in ("np", "math"):
                return None   # a function or a dtype
            base = self.shape(node.value)
            if node.attr == "T":
                return tuple(reversed(base))
            if node.attr in ("shape", "ndim", "size"):
                return np.shape(self.value(node))
            raise Refused(node.attr)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise Refused(type(node).__name__)

    def call(self, node):
        func = node.func
        args = [self.shape(a) for a in node.args]
        kwargs = {k.arg: k.value for k in node.keywords}
        if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name)
                                                    and func.value.id in ("np", "math")):
            base = self.shape(func.value)          # a method: a.sum(), a.reshape(...), a.dot(b)
            if func.attr == "dot":
                return self.size(_dot(base, args[0]))
            return self.on_standins(lambda *xs, **kw: getattr(_standin(base), func.attr)(*xs, **kw),
                                    node, args, kwargs)
        name = ast.unparse(func)
        short = name.split(".")[-1]
        if name.startswith("math.") or short in ("float", "int", "len"):
            return ()
        if short == "outer":
            return self.size((math.prod(args[0]), math.prod(args[1])))
        if short in ("dot", "matmul"):
            return self.size((_dot if short == "dot" else _matmul)(args[0], args[1]))
        if short == "broadcast_to":
            return self.size(tuple(np.broadcast_shapes(args[0], tuple(self.value(node.args[1])))))
        if short in ("zeros", "ones", "empty", "full"):
            shape = self.value(node.args[0])
            return self.size((shape,) if isinstance(shape, int) else tuple(shape))
        if short in ("concatenate", "stack"):
            if sum(math.prod(s) for s in args[0]) > self.max_size:
                raise Refused(short)
            return self.on_standins(getattr(np, short), node, args, kwargs)
        arrays = [a for a in args if not isinstance(a, _Seq) and a is not None]
        bound = self.size(np.broadcast_shapes(*arrays)) if arrays else ()
        if short in _ELEMENTWISE:
            return bound
        return self.on_standins(self.env[name] if name in self.env else eval(name, self.env),
                                node, args, kwargs)

    def on_standins(self, fn, node, args, kwargs):
        """The shape of ``fn`` called on stand-ins of the array arguments' shapes (each
        intermediate of the call is at most their broadcast size, checked before)."""
        values = [_standin(s) if isinstance(s, tuple) and not isinstance(s, _Seq)
                  and not _literal(a) else
                  [_standin(x) for x in s] if isinstance(s, _Seq) and not _literal(a)
                  else self.value(a) for a, s in zip(node.args, args)]
        kw = {k: self.value(v) for k, v in kwargs.items()}
        with np.errstate(all="ignore"):
            return self.size(np.shape(fn(*values, **kw)))


def _literal(node):
    """Whether ``node`` is a number, a tuple of numbers, or a name of a loop counter or
    constant (read as a value, not an array)."""
    try:
        ast.literal_eval(node)
        return True
    except ValueError:
        return isinstance(node, ast.Attribute) and node.attr == "shape" or \
            isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and \
            node.value.attr == "shape"


def _matmul(a, b):
    if not a or not b:
        raise Refused("matmul of a scalar")
    a2, b2 = (a if len(a) > 1 else (1,) + a), (b if len(b) > 1 else b + (1,))
    if a2[-1] != b2[-2]:
        raise Refused("matmul sizes")
    batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    return tuple(batch) + ((a2[-2],) if len(a) > 1 else ()) + ((b2[-1],) if len(b) > 1 else ())


def _dot(a, b):
    if not a or not b:
        return np.broadcast_shapes(a, b)
    if len(b) == 1:
        if a[-1] != b[0]:
            raise Refused("dot sizes")
        return tuple(a[:-1])
    if a[-1] != b[-2]:
        raise Refused("dot sizes")
    return tuple(a[:-1]) + tuple(b[:-2]) + tuple(b[-1:])
