"""Hypothesis strategies: random NumPy programs with branches, loops and subscript updates.

:func:`control_programs` draws a :class:`tests.strategies.Program` whose ``def f(x, y, z)`` mixes
the straight-line statements of :mod:`tests.strategies` (its templates and builders, reused) with

* ``if``/``else`` on traced conditions (``np.sum(v) > c``, ``np.max(v) < c``... joined with
  ``and``/``or``/``not``), and conditional expressions ``a if cond else b``;
* ``for`` loops over ``range`` (static bounds 1..4, steps, ``len(a)``, or a traced bound
  ``int(np.sum(a > c))``), over an array's rows, ``enumerate``, ``zip``, ``enumerate(zip())``,
  carrying one or two variables (``v = op(v, ...)``, accumulators, ``acc += ...`` in place);
* ``while cond and n < K:`` and ``while n < K:`` loops with a counter;
* ``break``/``continue`` under a traced condition (on arrays or Python floats) inside loop
  bodies, a ``for`` over a traced range too (whose bound may read a variable the loop rebinds);
* nested constructs up to two levels: loops in branches, branches in loops, loops in loops
  (``while`` loops in ``for`` loops too), loops in bodies with jumps;
* subscript updates of fresh arrays (``b = np.zeros(...)``, ``np.zeros_like(a)``, ``a.copy()``):
  ``b[0] = ...``, ``b[1:] += ...``, ``b[J2] -= ...``, ``b[I3] += ...`` (a repeated index),
  ``b[a > c] *= 2.0``, ``b[:, 0] = ...``, straight, in branches, and in loops (``b[i] = h``
  recording a carried ``h``, recurrences ``b[i] = 0.5 * b[i - 1] + ...``);
* early ``return`` inside a branch of a top-level ``if`` (in either branch, nested too).

How every program stays valid (the straight-line strategy's idea, extended): each candidate
statement is *run on the example arguments while it is drawn*, in a checked form where every
assignment is followed by a ``_chk`` of the values it bound (finite, at most ``MAX_ABS``, float64)
and every traced condition is wrapped in ``_q(key, ...)``, recording each value it takes, so a
construct is kept only if

* every value it binds is safe, in every iteration of every loop;
* every condition, mask and traced bound stays at least a margin away from its threshold in
  every evaluation (so a finite-difference step does not flip a branch or a loop's trip count);
* a variable merged by a branch or carried by a loop has one shape on every path: both branches
  are drawn (each run from the environment before the ``if``), and a loop body is drawn on the
  first iteration's bindings, then the whole loop is run. A Python float meeting a 0-d NumPy
  value is allowed (the compiler joins them into a 0-d array); such a name is *mixed* and is
  not given to the ``math`` templates, which take Python numbers only.

Constructs the compiler rejects by design are not generated: a view (``z = y[:2]``) read after
an in-place update of ``y`` (fresh buffers are updated only before anything else reads them), an
in-place update inside a block of an array another name holds (aliases only outside blocks),
``while`` loops whose condition does not depend on the loop, early ``return`` inside a loop,
reading with a boolean mask.

``control_programs(sizes=...)`` draws at large shapes (:mod:`tests.program_sizes`; every line's
intermediates bounded before it runs, loops over rows and traced ranges kept to a few trips),
``controls=`` draws only some of the constructs (``["for_range", "for_array", "jump"]``: loops),
``calls=True`` adds the helper functions of ``tests.strategies.CALL_HEADER``.

:func:`tape_program` rewrites a program for the dynamic tape (``np.zeros(...)`` buffers become
``tape.zeros(...)``, as in PyTorch, where a plain array cannot hold recorded values).
"""

from __future__ import annotations

import ast
import copy
import re
import warnings
from dataclasses import dataclass

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from tests import program_sizes
from tests.strategies import (CALL_HEADER, FAMILIES, HEADER, MAX_ABS, MAX_SIZE, PARAMS, Program,
                         _Drawing, _copy, _py, drawn_sizes)

INPUT_SHAPES = [(), (3,), (2, 3), (1, 3), (2, 1), (4,), (3, 2)]
MAX_LEVEL = 2          # constructs nest at most this deep (a loop in a branch in ...)
MAX_RETURNS = 2        # early returns per program

CONTROL_HEADER = HEADER.replace("tests/strategies.py", "tests/control_strategies.py") + \
    "J2 = np.array([2, 0])  # integer-array indices, distinct\n\n"
EXTRA_HEADER = "J2 = np.array([2, 0])\n"

STRAIGHT = sorted(FAMILIES)
STRAIGHT_NO_MATH = [f for f in STRAIGHT if f != "math"]
CONTROL = ["if", "ifexp", "for_range", "for_array", "while", "buffer", "early_return", "jump"]

# ---- rebinding a carried / merged variable {c}; {t}: a partner operand, {i}: a loop counter ---
SELF_UPDATES = ["np.tanh({c}) * 1.5", "np.sin({c}) + {c} * {c} * 0.1", "{c} * 0.5 - 0.25",
                "np.cos({c})", "np.exp(-{c} * {c})", "np.sqrt({c} * {c} + 1.0) - 1.0",
                "np.arctan(2.0 * {c})", "-{c}"]
PAIR_UPDATES = ["np.tanh({c}) + {t}", "{c} * 0.5 + np.sin({t})", "np.sin({c}) * {t}",
                "{c} / ({t} * {t} + 1.0)", "helper({c}, {t})", "np.maximum({c}, {t}) * 0.9",
                "np.where({c} > {t}, {c}, {t} * 0.5)", "{c} + np.sum({t}) * 0.1",
                "np.tanh({c} + {t})", "{c} - 0.1 * np.cos({t})", "np.tanh({c} * {t}) + {c} * 0.5",
                "np.tanh({c} @ {t})"]
INDEX_UPDATES = ["{c} + 0.1 * {i} * {t}", "{c} * 0.9 + {t} * ({i} + 1.0)",
                 "np.tanh({c}) * ({i} + 1.0) * 0.5", "{c} + {t} / ({i} + 1.0)"]
ACCUMULATE = ["{c} + {t}", "{c} + np.sum({t})", "{c} + np.tanh({t}) * 0.5", "{c} + {t} * {t}",
              "{c} - np.mean({t})"]
INPLACE = ["{c} += {t}", "{c} -= np.tanh({t})", "{c} += {t} * {t}"]

QUANTITIES = ["np.sum({v})", "np.max({v})", "np.min({v})", "np.mean({v})", "np.sum({v} * {v})"]
COMBINE = {1: ["{0}"], 2: ["{0} and {1}", "{0} or {1}"],
           3: ["{0} and {1} and {2}", "{0} or {1} and {2}", "({0} or {1}) and {2}",
               "{0} and ({1} or {2})", "{0} or {1} or {2}"]}

NAME = re.compile(r"\b(?:[xyz]|v\d+)\b")   # the values a statement reads


def _category(v):
    """What the compiler's abstract value of ``v`` is: a Python float, or an array's shape."""
    return "py" if _py(v) else ("array", np.shape(v))


def _join(categories):
    """'same', 'mixed' (a Python float and a 0-d array: joined as a 0-d array), or None."""
    categories = set(categories)
    if len(categories) <= 1:
        return "same"
    return "mixed" if categories == {"py", ("array", ())} else None


ASSIGN = re.compile(r"(?:([\w, ]+?) [-+*]?= |(\w+)\[.*\] [-+*]?= )")   # what a line binds
TRACED_BOUND = re.compile(r"for \w+ in range\(int\(np\.sum\((\w+) > ")     # the array it reads


def _paren(text):
    return f"({text})" if " or " in text else text


def _margin(threshold):
    return 0.02 + 0.01 * abs(threshold)


@dataclass(frozen=True)
class Line:
    """One line of a block: its depth, its text, the text run while drawing (conditions record
    their values there), and the names whose values are checked after it runs."""

    depth: int
    text: str
    checked: str = ""
    check: tuple = ()


def _shift(lines, by=1):
    return [Line(ln.depth + by, ln.text, ln.checked, ln.check) for ln in lines]


def render(lines, checked=False):
    out = []
    for ln in lines:
        pad = "    " * ln.depth
        out.append(pad + (ln.checked if checked and ln.checked else ln.text))
        if checked and ln.check:
            out.append(pad + "_chk(" + ", ".join(f"{n!r}, {n}" for n in ln.check) + ")")
    return out


@dataclass(frozen=True)
class Cond:
    text: str
    checked: str


class _Shared:
    """What all the blocks of one program share: fresh-name and threshold counters."""

    def __init__(self):
        self.count = 0
        self.thresholds: dict = {}
        self.returns = 0
        self.returned: list = []  # names an early return returns (the end may return one too)

    def key(self, threshold):
        self.thresholds[len(self.thresholds)] = threshold
        return len(self.thresholds) - 1


class _ControlDrawing(_Drawing):
    """A block being drawn: the function body, or the body of a branch or a loop."""

    def __init__(self, draw, args, sizes=None, calls=False, controls=CONTROL):
        super().__init__(draw, args, sizes, calls)
        exec(EXTRA_HEADER, self.env)
        self.controls = list(controls)
        # the largest |value| of a result: sums of large arrays are larger
        self.result_bound = 64 * MAX_ABS * max(1, self.max_size // MAX_SIZE)
        self.shared = _Shared()
        self.mixed: set = set()     # names the compiler may see as a 0-d array, NumPy as a float
        self.loopvars: set = set()  # loop targets in scope: read, never rebound
        self.indices: list = []     # (counter expression, its largest value) of enclosing loops
        self.locals: list = []      # names bound in this block: preferred partners
        self.lines: list = []
        self.level = 0
        self.top = True             # an early return may go here
        self.jump = None            # "break", "continue" or "both" inside a loop body
        self.in_loop = False
        self.math = True

    def child(self, nested=True, top=False, jump=None):
        c = copy.copy(self)
        c.env, c.names, c.used = dict(self.env), list(self.names), set(self.used)
        c.mixed, c.loopvars, c.indices = set(self.mixed), set(self.loopvars), list(self.indices)
        c.passing, c.locals, c.lines = set(self.passing), [], []
        c.level = self.level + nested
        c.top, c.jump = top, jump
        return c

    # ---- the straight-line machinery of tests/strategies.py, on blocks ----------------------
    def fresh(self):
        self.shared.count += 1
        return f"v{self.shared.count}"

    def operands(self, n, when=None):
        names = [m for m in self.names if (when is None or when(self.env[m]))
                 and not (when is _py and m in self.mixed)]
        return [self.draw(st.sampled_from(names)) for _ in range(n)] if names else None

    def attempt(self, lines, targets, passing=()):
        block = [Line(0, text) for text in lines[:-1]] + [Line(0, lines[-1], "", tuple(targets))]
        return self.commit(block, targets)

    def stmt_augmented(self, family):
        """``t = np.tanh(a); t op= b``; the alias of tests/strategies.py only outside blocks
        (an in-place update of an array another name holds is refused inside if/for/while)."""
        a, b = self.operands(2)
        op = self.draw(st.sampled_from(["+=", "-=", "*="]))
        t = self.fresh()
        lines, targets = [f"{t} = np.tanh({a})"], [t]
        if self.level == 0 and self.draw(st.booleans()):
            alias = self.fresh()
            lines.append(f"{alias} = {t}")
            targets.append(alias)
        lines.append(f"{t} {op} {b}")
        return self.attempt(lines, targets)

    def statement(self):
        for _ in range(12):
            control = self.level < MAX_LEVEL and self.draw(st.booleans())
            family = self.draw(st.sampled_from(
                self.controls if control else self.families if self.math else
                [f for f in self.families if f != "math"]))
            if getattr(self, "stmt_" + family.replace("-", "_"), self.stmt_template)(family):
                return
        self.assign(f"np.tanh({self.names[-1]})")

    # ---- running blocks -----------------------------------------------------------------------
    def execute(self, block, env=None):
        """Run ``block`` checked, in a copy of the environment: ``(env, categories seen per
        name, values seen per condition key)``, or None if it raises or binds an unsafe value."""
        seen, values = {}, {}

        def chk(*pairs):
            for name, value in zip(pairs[::2], pairs[1::2]):
                if not self.safe(value):
                    raise ValueError(name)
                seen.setdefault(name, set()).add(_category(value))

        def q(key, value):
            values.setdefault(key, []).append(np.array(value, dtype=np.float64))
            return value

        text = "\n".join(render(block, checked=True))
        if any(ln.text in ("break", "continue") for ln in block):
            text = "for _once in range(1):\n" + "\n".join("    " + t for t in text.split("\n"))
        env = dict(self.env if env is None else env, _chk=chk, _q=q)
        try:
            with warnings.catch_warnings(), np.errstate(all="raise"):
                warnings.simplefilter("error")
                exec(text, env)
        except Exception:
            return None
        for k in ("_chk", "_q", "_once"):
            env.pop(k, None)
        return env, seen, values

    def margins_ok(self, values) -> bool:
        for key, vals in values.items():
            thr = self.shared.thresholds[key]
            for v in vals:
                if not np.all(np.isfinite(v)) or np.any(np.abs(v - thr) < _margin(thr)):
                    return False
        return True

    def commit(self, block, outputs, hypothetical=(), hint=()):
        """Run ``block``; keep it if everything it binds is safe, its conditions keep their
        margins, and each output has one category on every path (``hypothetical``: the
        environments of paths not taken here; ``hint``: names a nested block found mixed)."""
        result = self.execute(block)
        if result is None:
            return False
        env, seen, values = result
        outputs = list(dict.fromkeys(list(outputs) + self.rebound(block)))
        if not self.margins_ok(values) or any(_join(c) is None for c in seen.values()):
            return False
        refs = set(NAME.findall("\n".join(ln.text for ln in block)))
        mixed = set()
        for name in outputs:
            v = env.get(name)
            if v is None or not self.safe(v):
                return False
            cats = seen.get(name, set()) | {_category(v)}
            if name in self.env and name not in self.loopvars:
                cats.add(_category(self.env[name]))
            cats |= {_category(h[name]) for h in hypothetical if name in h}
            kind = _join(cats)
            if kind is None:
                return False
            if _py(v) and (kind == "mixed" or refs & self.mixed or name in hint):
                mixed.add(name)
        self.keep(block, outputs, env, refs, mixed)
        return True

    def rebound(self, block):
        """The names of this block that ``block`` binds again (in nested blocks too)."""
        names = set()
        for ln in block:
            m = ASSIGN.match(ln.text)
            if m:
                names |= set(re.findall(r"\w+", m.group(1) or m.group(2)))
        return [n for n in self.names if n in names and n not in self.loopvars]

    def keep(self, block, outputs, env, refs, mixed):
        self.env, self.lines = env, self.lines + block
        self.names += [n for n in outputs if n not in self.names]
        self.locals += [n for n in outputs if n not in self.locals]
        self.used = (self.used | refs) - set(outputs)
        self.mixed = (self.mixed - set(outputs)) | mixed

    def evaluate(self, expr):
        env = self.run([f"_ = {expr}"])
        return None if env is None else env["_"]

    def fits(self, statements, target, like=None):
        """The statements that run here, bind a safe ``target`` of ``like``'s category."""
        out = []
        for s in statements:
            env = self.run([s])
            if env is None or not self.safe(env[target]):
                continue
            if like is None or _join({_category(like), _category(env[target])}) is not None:
                out.append(s)
        return out

    # ---- conditions ---------------------------------------------------------------------------
    def condition(self, about=None, parts=None):
        """A traced condition: 1-3 comparisons of reductions with thresholds drawn away from
        their values here, joined with and/or, maybe negated; None if none could be drawn."""
        n = parts or self.draw(st.integers(1, 3))
        texts = []
        for j in range(n):
            v = about if j == 0 and about else self.operands(1)[0]
            value = self.env[v]
            forms = list(QUANTITIES)
            if np.ndim(value) == 0:
                forms.append("{v}")
            if not _py(value):
                forms += ["{v}.sum()", "{v}.max()"]
            qexpr = self.draw(st.sampled_from(forms)).format(v=v)
            q = self.evaluate(qexpr)
            if q is None or not np.isfinite(q):
                return None
            q = float(q)
            op = self.draw(st.sampled_from([">", "<", ">=", "<="]))
            offset = self.draw(st.sampled_from([-1.0, -0.4, -0.15, 0.15, 0.4, 1.0]))
            thr = round(q + offset * (1.0 + min(abs(q), 10.0)), 2)
            key = self.shared.key(thr)
            plain, checked = f"{qexpr} {op} {thr!r}", f"_q({key}, {qexpr}) {op} {thr!r}"
            if self.draw(st.integers(0, 4)) == 0:
                plain, checked = "not " + plain, "not " + checked
            texts.append((plain, checked))
        form = self.draw(st.sampled_from(COMBINE[n]))
        return Cond(form.format(*(t[0] for t in texts)), form.format(*(t[1] for t in texts)))

    def condition_line(self, cond, prefix="if"):
        return Line(0, f"{prefix} {cond.text}:", f"{prefix} {cond.checked}:")

    # ---- rebinding ----------------------------------------------------------------------------
    def partners(self):
        """Operands to combine a carried value with: this block's names first, reads a[i]."""
        pool = list(dict.fromkeys(self.locals + [n for n in self.names if n in self.loopvars]))
        others = [n for n in self.names if n not in pool]
        if others:
            pool += [self.draw(st.sampled_from(others)) for _ in range(2)]
        for counter, largest, _ in self.indices[-1:]:
            arrays = [n for n in self.names if isinstance(self.env[n], np.ndarray)
                      and self.env[n].ndim and self.env[n].shape[0] > largest]
            if arrays:
                pool.append(f"{self.draw(st.sampled_from(arrays))}[{counter}]")
        return list(dict.fromkeys(pool))[:6]

    def rebind(self, target, base=None, like=None, accumulate=False, inplace=False):
        """``target = <update of base (default: target)>``, of ``like``'s category (default:
        target's own, when it exists here)."""
        c = base or target
        partners = self.partners()
        if accumulate:
            forms = INPLACE if inplace else ACCUMULATE
            stmts = [f.format(c=target, t=t) for f in forms for t in partners]
            if not inplace:
                stmts = [f"{target} = {s}" for s in stmts]
        else:
            exprs = [u.format(c=c) for u in SELF_UPDATES]
            exprs += [u.format(c=c, t=t) for u in PAIR_UPDATES for t in partners]
            for counter, _, _ in self.indices[-1:]:
                exprs += [u.format(c=c, t=t, i=counter) for u in INDEX_UPDATES for t in partners]
            stmts = [f"{target} = {e}" for e in exprs]
        like = like if like is not None else self.env.get(target)
        fits = self.fits(stmts, target, like)
        if not fits:
            return False
        stmt = self.draw(st.sampled_from(fits))
        return self.commit([Line(0, stmt, "", (target,))], [target])

    def rebindable(self):
        return [n for n in self.names[len(PARAMS):] if n not in self.loopvars]

    def outputs(self):
        """1-2 existing names to rebind, or one new name (bound on every path)."""
        existing = self.rebindable()
        if existing and self.draw(st.integers(0, 3)):
            k = min(len(existing), self.draw(st.integers(1, 2)))
            return list(dict.fromkeys(self.draw(st.sampled_from(existing)) for _ in range(k)))
        return [self.fresh()]

    def fill(self, target, like=None):
        """Bind ``target``: rebinding it if it exists here, else from an operand of this block."""
        if target in self.env:
            return self.rebind(target, like=like)
        bases = self.locals + self.names
        base = bases[-1] if self.locals and self.draw(st.booleans()) else \
            self.draw(st.sampled_from(bases))
        return self.rebind(target, base=base, like=like)

    def hide(self, names):
        self.names = [n for n in self.names if n not in names]
        self.locals = [n for n in self.locals if n not in names]

    def body(self, most=2):
        for _ in range(self.draw(st.integers(0, most))):
            self.statement()

    # ---- if / else ------------------------------------------------------------------------------
    def stmt_if(self, family):
        cond = self.condition()
        if cond is None:
            return False
        outputs = self.outputs()
        new = [o for o in outputs if o not in self.env]
        then = self.child()
        then.body()
        if not all(then.fill(o) for o in outputs):
            return False
        lines = [self.condition_line(cond)] + _shift(then.lines)
        paths = [then.env]
        if new or self.draw(st.booleans()):
            other = self.child()
            other.body()
            if not all(other.fill(o, like=then.env[o]) for o in outputs):
                return False
            lines += [Line(0, "else:")] + _shift(other.lines)
            paths.append(other.env)
        return self.commit(lines, outputs, paths,
                           hint=then.mixed | (other.mixed if len(paths) > 1 else set()))

    def stmt_ifexp(self, family):
        cond = self.condition()
        e1 = self.expression(self.draw(st.sampled_from(["unary", "binary", "linalg"])))
        if cond is None or e1 is None or (v1 := self.evaluate(e1)) is None:
            return False
        t = self.fresh()
        base = self.draw(st.sampled_from(self.names))
        exprs = [u.format(c=base) for u in SELF_UPDATES]
        exprs += [u.format(c=base, t=p) for u in PAIR_UPDATES for p in self.partners()]
        fits = self.fits([f"{t} = {e}" for e in exprs], t, like=v1)
        if not fits:
            return False
        e2 = self.draw(st.sampled_from(fits)).split(" = ", 1)[1]
        if self.draw(st.booleans()):
            e1, e2 = e2, e1
        line = Line(0, f"{t} = {e1} if {cond.text} else {e2}",
                    f"{t} = {e1} if {cond.checked} else {e2}", (t,))
        paths = [{t: self.evaluate(e1)}, {t: self.evaluate(e2)}]
        return self.commit([line], [t], paths)

    # ---- loops ----------------------------------------------------------------------------------
    def stmt_for_range(self, family):
        return self.loop("range")

    def stmt_for_array(self, family):
        return self.loop(self.draw(st.sampled_from(["rows", "enumerate", "zip", "enumerate_zip"])))

    def stmt_while(self, family):
        return self.loop("while")

    def arrays(self, rows=None):
        return [n for n in self.names if isinstance(self.env[n], np.ndarray) and self.env[n].ndim
                and (rows is None or self.env[n].shape[0] == rows)]

    def few(self, arrays, trips=lambda a: a.shape[0]):
        """At large sizes, the ``arrays`` a loop may run over in at most ``max_trips`` trips
        (``trips``: a loop's trip count over an array); at the small sizes all of them."""
        if self.sizes is None:
            return arrays
        return [n for n in arrays if trips(self.env[n]) <= self.sizes.max_trips]

    def header(self, kind, rows=None):
        """(header Line, lines binding the first iteration, float loop variables, counter and
        its largest value or None, the trip count's bound, jumps allowed) or None."""
        sfx = "" if self.level == 0 else str(self.level + 1)
        i, k, row, p, q = (n + sfx for n in ("i", "k", "row", "p", "q"))
        if kind == "range":
            forms = ["static", "static", "start", "reversed", "step", "len", "traced"]
            form = self.draw(st.sampled_from(forms if rows is None else ["static", "reversed"]))
            K = rows or self.draw(st.integers(1, 4))
            if form in ("len", "traced"):
                arrays = self.few(self.arrays(), (lambda a: a.shape[0]) if form == "len" else
                                  (lambda a: a.size))
                if not arrays:
                    return None
                a = self.draw(st.sampled_from(arrays))
                own = [n for n in arrays if n in self.rebindable()]
                if form == "traced" and own and self.draw(st.booleans()):
                    a = self.draw(st.sampled_from(own))  # which the loop may rebind
                K = self.env[a].shape[0] if form == "len" else self.env[a].size
            if form == "traced":
                values = self.env[a].reshape(-1)
                thr = self.threshold_between(values)
                if thr is None:
                    return None
                key = self.shared.key(thr)
                text = f"range(int(np.sum({a} > {thr!r})))"
                checked = f"range(int(np.sum(_q({key}, {a}) > {thr!r})))"
                head = Line(0, f"for {i} in {text}:", f"for {i} in {checked}:")
                return head, [f"{i} = 0"], [], (i, K - 1, 0), K, "both"
            r = {"static": f"range({K})", "start": f"range(1, {K + 1})",
                 "reversed": f"range({K - 1}, -1, -1)", "step": f"range(0, {2 * K}, 2)",
                 "len": f"range(len({a if form == 'len' else ''}))"}[form]
            values = list(range(K)) if form == "len" else list(eval(r))
            return (Line(0, f"for {i} in {r}:"), [f"{i} = {values[0]}"], [],
                    (i, max(values), min(values)), max(values) + 1, "both")
        arrays = self.few(self.arrays(rows))
        if not arrays:
            return None
        a, b = self.draw(st.sampled_from(arrays)), self.draw(st.sampled_from(self.arrays()))
        n = self.env[a].shape[0]
        if kind == "rows":
            return Line(0, f"for {row} in {a}:"), [f"{row} = {a}[0]"], [row], None, n, "both"
        if kind == "enumerate":
            return (Line(0, f"for {k}, {row} in enumerate({a}):"), [f"{k}, {row} = 0, {a}[0]"],
                    [row], (k, n - 1, 0), n, "both")
        if rows is not None and self.env[b].shape[0] < rows:
            return None
        n = min(n, self.env[b].shape[0])
        if kind == "zip":
            return (Line(0, f"for {p}, {q} in zip({a}, {b}):"), [f"{p}, {q} = {a}[0], {b}[0]"],
                    [p, q], None, n, "both")
        return (Line(0, f"for {k}, ({p}, {q}) in enumerate(zip({a}, {b})):"),
                [f"{k}, {p}, {q} = 0, {a}[0], {b}[0]"], [p, q], (k, n - 1, 0), n, "both")

    def threshold_between(self, values):
        """A threshold in the widest gap between ``values`` (or beyond them), rounded."""
        v = np.unique(np.asarray(values, dtype=np.float64).reshape(-1))
        gaps = [(v[0] - 0.5, v[0] - 1.0)] + [((a + b) / 2, b - a) for a, b in zip(v, v[1:])] \
            + [(v[-1] + 0.5, 1.0)]
        choices = [round(float(mid), 2) for mid, width in gaps if width > 0.1]
        if not choices:
            return None
        thr = self.draw(st.sampled_from(choices))
        return thr if np.all(np.abs(v - thr) >= _margin(thr)) else None

    def loop(self, kind, buffer=None):
        """A loop carrying 1-2 variables (existing names rebound, or new accumulators), maybe
        recording into a fresh buffer ``b[i] = ...``; or, given ``buffer``, filling it."""
        pre = []
        rows = self.env[buffer].shape[0] if buffer else None
        if rows and not self.few([buffer]):
            return False
        if kind == "while":
            counter = f"n{self.shared.count + 1}"
            self.shared.count += 1
            K = rows or self.draw(st.integers(1, 5))
            pre.append(Line(0, f"{counter} = 0"))
            head, bind, floats = None, [f"{counter} = {counter} + 1"], []
            index, trips, jump = (f"{counter} - 1", K - 1, 0), K, "both"
        else:
            spec = self.header(kind, rows)
            if spec is None:
                return False
            head, bind, floats, index, trips, jump = spec
        # the carried variables
        carried, accumulators, inplace = [], [], set()
        existing = self.rebindable()
        for _ in range(self.draw(st.integers(0 if buffer else 1, 1 if buffer else 2))):
            if existing and self.draw(st.booleans()):
                carried.append(self.draw(st.sampled_from(existing)))
                continue
            acc = self.fresh()
            arrays = self.arrays()
            inits = ["0.0"] + [f(a) for a in arrays[-2:] for f in (
                lambda a: f"np.zeros({self.env[a].shape!r})", lambda a: f"np.zeros_like({a})",
                lambda a: f"{a}.copy()", lambda a: f"{a} * 1.0")]
            init = self.draw(st.sampled_from(inits))
            pre.append(Line(0, f"{acc} = {init}", "", (acc,)))
            accumulators.append(acc)
            if ("zeros" in init or "copy" in init) and self.draw(st.booleans()):
                inplace.add(acc)  # acc += ... : not read elsewhere in the body
        bound = TRACED_BOUND.match(head.text) if head else None
        if bound and bound[1] in existing and self.draw(st.booleans()):
            carried.append(bound[1])  # rebinds what its bound reads (which Python reads once)
        carried = list(dict.fromkeys(carried))
        # a buffer recording one carried value per iteration
        record = buffer
        if record is None and index is not None and self.draw(st.integers(0, 2)) == 0:
            record = self.fresh()
        # the condition of a while loop, on a carried value
        env = self.run([ln.text for ln in pre]) if pre else dict(self.env)
        if env is None:
            return False
        if kind == "while":
            scope = self.child(nested=False)
            scope.env = env
            scope.names += accumulators
            about = (carried + accumulators)[0] if carried + accumulators else None
            cond = scope.condition(about=about, parts=self.draw(st.integers(1, 2))) \
                if self.draw(st.integers(0, 3)) else None
            test = f"{counter} < {K}"
            head = Line(0, f"while {test}:") if cond is None else \
                Line(0, f"while {_paren(cond.text)} and {test}:",
                     f"while {_paren(cond.checked)} and {test}:")
        # the body, drawn on the first iteration's bindings
        body = self.child(jump=jump)
        body.in_loop = True
        body.env = body.run([ln.text for ln in pre] + bind)
        if body.env is None:
            return False
        # in-place accumulators are read nowhere else in the body: a view of one read after
        # `acc += t` sees the update in NumPy, which the compiler does not track in loops
        hidden = set(inplace)
        body.names += floats + [a for a in accumulators if a not in hidden]
        body.names = [n for n in body.names if n not in hidden]
        body.locals += floats
        body.loopvars |= set(floats)
        if index is not None:
            body.indices.append(index)
        body.mixed |= {n for n in carried + accumulators if _py(body.env[n])}
        readable = [n for n in carried + accumulators if n not in hidden]
        if record is not None and buffer is None and not readable:
            record = None
        if record is not None and buffer is None:
            value = self.draw(st.sampled_from(readable))
            shape = (trips,) + np.shape(body.env[value])
            pre.append(Line(0, f"{record} = np.zeros({shape!r})", "", (record,)))
            body.env[record] = np.zeros(shape)
        early_jump = self.draw(st.integers(0, 3))   # 0: a jump before the body, 1: after it
        if early_jump == 0:
            body.stmt_jump("jump")
        body.body()
        if early_jump == 1:
            body.stmt_jump("jump")
        for name in carried:
            if not body.rebind(name):
                return False
            body.hide(hidden)
        for name in accumulators:
            if not body.rebind(name, accumulate=True, inplace=name in inplace):
                return False
            body.hide(hidden)
        if record is not None and not body.record(record, index, value if buffer is None
                                                  else None):
            return False
        lines = body.lines
        if kind == "while":
            lines = [Line(0, bind[0])] + lines
        block = pre + [head] + _shift(lines)
        outputs = carried + accumulators + ([record] if record else [])
        return self.commit(block, outputs, [body.env], hint=body.mixed)

    def record(self, buffer, index, value=None):
        """``buffer[i] = ...`` (or ``+=``, ``-=``, a recurrence on ``buffer[i - 1]``)."""
        counter, _, lowest = index
        row = self.env[buffer][0]
        sources = [value] if value else self.partners()
        exprs = []
        for t in sources:
            exprs += [t, f"np.tanh({t})", f"{t} * ({counter} + 1.0)", f"np.sum({t})"]
        stmts = [f"{buffer}[{counter}] {op} {e}" for e in exprs for op in ("=", "+=", "-=")]
        if np.ndim(row):
            stmts += [f"{buffer}[{counter}, 0] = np.sum({t})" for t in sources]
        if lowest >= 1:   # a recurrence on the row before
            stmts += [f"{buffer}[{counter}] = 0.5 * {buffer}[{counter} - 1] + {e}" for e in exprs]
        fits = [s for s in stmts if (env := self.run([s])) is not None
                and self.safe(env[buffer])]
        if not fits:
            return False
        return self.commit([Line(0, self.draw(st.sampled_from(fits)), "", (buffer,))], [buffer])

    # ---- break / continue -----------------------------------------------------------------------
    def stmt_jump(self, family):
        if self.jump is None:
            return False
        kinds = ["break", "continue"] if self.jump == "both" else [self.jump]
        kw = self.draw(st.sampled_from(kinds))
        cond = self.condition(parts=self.draw(st.integers(1, 2)))
        if cond is None:
            return False
        return self.commit([self.condition_line(cond), Line(1, kw)], [])

    # ---- subscript updates of a fresh array -----------------------------------------------------
    def stmt_buffer(self, family):
        arrays = self.arrays()
        if not arrays:
            return False
        a = self.draw(st.sampled_from(arrays))
        b = self.fresh()
        init = self.draw(st.sampled_from([f"np.zeros({self.env[a].shape!r})",
                                          f"np.zeros_like({a})", f"{a}.copy()", f"np.copy({a})"]))
        scope = self.child(nested=False)
        if not scope.commit([Line(0, f"{b} = {init}", "", (b,))], [b]):
            return False
        scope.names.remove(b)   # nothing reads it (or views it) until its updates are done
        steps = 0
        for _ in range(self.draw(st.integers(1, 3))):
            kinds = ["set", "set", "loop", "branch"] if self.level < MAX_LEVEL else ["set"]
            kind = self.draw(st.sampled_from(kinds))
            steps += bool(getattr(scope, "buffer_" + kind)(b))
            scope.names = [n for n in scope.names if n != b]
            scope.locals = [n for n in scope.locals if n != b]
        if steps == 0 or not self.commit(scope.lines, [b], hint=scope.mixed):
            return False
        return True

    def buffer_set(self, b):
        stmt = self.subscript_update(b)
        return stmt is not None and self.commit([Line(0, stmt[0], stmt[1], (b,))], [b])

    def buffer_loop(self, b):
        kind = self.draw(st.sampled_from(["range", "enumerate", "enumerate_zip", "while"]))
        return self.loop(kind, buffer=b)

    def buffer_branch(self, b):
        cond = self.condition()
        if cond is None:
            return False
        lines, paths, hint = [self.condition_line(cond)], [], set()
        for branch in range(1 + self.draw(st.booleans())):
            c = self.child()
            if not c.buffer_set(b):
                return False
            lines += ([Line(0, "else:")] if branch else []) + _shift(c.lines)
            paths.append(c.env)
            hint |= c.mixed
        return self.commit(lines, [b], paths, hint=hint)

    def subscript_update(self, b):
        """(text, checked text) of one update ``b[index] op= value``, or None."""
        arr = self.env[b]
        s = arr.shape
        indices = ["0", "-1", "1:", ":-1", "::2", "...", ":"]
        if s[0] >= 3:
            indices += ["J2"] * 3 + ["I3", "[0, 2, 0]"]   # distinct, and repeated
        if len(s) >= 2:
            indices += [":, 0", "0, 1:", "..., -1", ":, ::2", "1:, :"]
        masks = [m for m in self.names + [b] if np.shape(self.env[m]) == s]
        if masks and self.draw(st.integers(0, 3)) == 0:
            m = self.draw(st.sampled_from(masks))
            thr = self.threshold_between(self.env[m])
            if thr is None:
                return None
            key = self.shared.key(thr)
            op = self.draw(st.sampled_from([">", "<"]))
            scalars = [n for n in self.names if np.ndim(self.env[n]) == 0]
            values = ["= 0.0", "= -0.5", "*= 2.0", "*= -0.5"]
            values += [f"{o} {e}" for n in scalars[-3:] for o in ("=", "+=", "*=")
                       for e in (n, f"np.tanh({n})")]
            values += [f"= np.sum({n})" for n in self.names[-2:]]
            value = self.draw(st.sampled_from(values))
            plain = f"{b}[{m} {op} {thr!r}] {value}"
            checked = f"{b}[_q({key}, {m}) {op} {thr!r}] {value}"
            env = self.run([plain])
            return (plain, checked) if env is not None and self.safe(env[b]) else None
        fits = [i for i in indices if self.run([f"_ = {b}[{i}]"]) is not None]
        index = self.draw(st.sampled_from(fits))
        exprs = ["0.5", "-1.0"]
        for t in self.partners():
            exprs += [t, f"np.tanh({t})", f"{t} * 2.0", f"np.sum({t})", f"np.mean({t}) * 0.5"]
        stmts = [f"{b}[{index}] {op} {e}" for e in exprs for op in ("=", "+=", "-=", "*=")]
        fits = [s for s in stmts if (env := self.run([s])) is not None
                and self.safe(env[b])]
        if not fits:
            return None
        return self.draw(st.sampled_from(fits)), ""

    # ---- early return -------------------------------------------------------------------------
    def stmt_early_return(self, family):
        """``if cond: ...; return <scalar>`` (or in the else branch), at the top of the function
        or nested in such a branch; the other branch may bind names the rest then reads."""
        if not self.top or self.shared.returns >= MAX_RETURNS or self.level >= MAX_LEVEL:
            return False
        cond = self.condition()
        if cond is None:
            return False
        bare = None
        if self.draw(st.integers(0, 2)) == 0:   # s = np.sum(a); if c: return s ... (return s)
            bare = self.fresh()
            if not self.commit([Line(0, f"{bare} = np.sum({self.operands(1)[0]})", "",
                                     (bare,))], [bare]):
                return False
        returning = self.child(top=True)
        returning.body()
        expr = bare or returning.result()
        value = returning.evaluate(expr)
        if value is None or np.ndim(value) != 0 or not abs(float(value)) < self.result_bound:
            return False
        other = None
        if self.draw(st.booleans()):
            other = self.child(top=True)
            other.body(most=1)
            existing = other.rebindable()
            if existing and not other.rebind(self.draw(st.sampled_from(existing))):
                return False
        check = self.execute([Line(0, f"_c = {cond.text}", f"_c = {cond.checked}")])
        if check is None or not self.margins_ok(check[2]):
            return False
        self.shared.returns += 1
        self.shared.returned += [expr] if NAME.fullmatch(expr) else []
        ret = returning.lines + [Line(0, f"return {expr}")]
        rest = other.lines if other else []
        if self.draw(st.booleans()):
            lines = [self.condition_line(cond)] + _shift(ret)
            lines += [Line(0, "else:")] + _shift(rest) if rest else []
        else:
            lines = [self.condition_line(cond)] + _shift(rest or [Line(0, "pass")])
            lines += [Line(0, "else:")] + _shift(ret)
        refs = set(NAME.findall(cond.text + "\n" + "\n".join(ln.text for ln in rest)))
        outputs = [n for n in (other.names if other else []) if n not in self.names or
                   other.env[n] is not self.env.get(n)]
        env = other.env if other else self.env
        mixed = {n for n in outputs if n in other.mixed} if other else set()
        self.keep(lines, outputs, env, refs, mixed)
        return True


@st.composite
def arguments(draw, sizes=None):
    """Example arguments, as in tests/strategies.py, with a few more shapes to loop over
    (``sizes``: at large shapes, :func:`tests.program_sizes.draw_arguments`)."""
    if sizes is not None:
        return program_sizes.draw_arguments(draw, sizes)
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    args = []
    for _ in PARAMS:
        shape = draw(st.sampled_from(INPUT_SHAPES))
        value = rng.uniform(-1.5, 1.5, shape)
        args.append(float(value) if shape == () and draw(st.booleans()) else np.asarray(value))
    return tuple(args)


def _source(lines, result, calls=False):
    body = render(lines) + [f"return {result}"]
    return CONTROL_HEADER + (CALL_HEADER if calls else "") + "\ndef f(x, y, z):\n" + \
        "".join(f"    {ln}\n" for ln in body)


@st.composite
def control_programs(draw, min_statements=2, max_statements=6, math=True, sizes=None,
                     calls=False, controls=CONTROL):
    """A :class:`Program` with control flow over ``x, y, z``, returning a float scalar;
    ``math=False``: without the math module's functions (which the tape refuses on tensors);
    ``sizes``: at large shapes (a :class:`tests.program_sizes.Sizes` or a strategy of them);
    ``calls``: with the helpers of ``CALL_HEADER``; ``controls``: the constructs drawn."""
    sizes = drawn_sizes(draw, sizes)
    args = draw(arguments(sizes))
    d = _ControlDrawing(draw, args, sizes, calls, controls)
    d.math = math
    for _ in range(draw(st.integers(min_statements, max_statements))):
        d.statement()
    result = d.result()
    returned = [n for n in d.shared.returned if n in d.names]
    if returned and draw(st.booleans()):   # an early return's name, maybe its value too
        result = draw(st.sampled_from(returned))
    source = _source(d.lines, result, calls)
    namespace: dict = {}
    exec(compile(source, "<control program>", "exec"), namespace)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        value = namespace["f"](*(_copy(a) for a in args))
    assume(np.ndim(value) == 0 and abs(float(value)) < d.result_bound)
    return Program(source, args)


def tape_program(program: Program) -> Program:
    """The program as the dynamic tape runs it: ``np.zeros(shape)`` buffers are ``tape.zeros``
    (a NumPy array cannot hold recorded values, as a PyTorch user writes ``torch.zeros``), and
    ``math`` is NumPy."""
    source = program.source.replace("np.zeros(", "_tape.zeros(").replace(
        "import numpy as np\n", "import numpy as np\n\nfrom adcompiler import tape as _tape\n", 1)
    # math.* on a tensor that requires grad raises on the tape (it would drop the gradient);
    # NumPy 2 has every math name these programs use, and dispatches to tensors
    source = source.replace("import math\n", "import numpy as math\n", 1)
    return Program(source, program.args)


def constructs(source) -> set:
    """The constructs a program's ``f`` uses (for the coverage test and hypothesis events)."""
    tree = next(n for n in ast.parse(source).body
                if isinstance(n, ast.FunctionDef) and n.name == "f")
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            found.add("if/else" if node.orelse else "if")
            if any(isinstance(n, ast.Return) for n in ast.walk(node)):
                found.add("early return")
        elif isinstance(node, ast.IfExp):
            found.add("conditional expression")
        elif isinstance(node, ast.BoolOp):
            found.add("and" if isinstance(node.op, ast.And) else "or")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            found.add("not")
        elif isinstance(node, ast.While):
            found.add("while")
        elif isinstance(node, (ast.Break, ast.Continue)):
            found.add(type(node).__name__.lower())
        elif isinstance(node, ast.For):
            it = node.iter
            name = it.func.id if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) \
                else "rows"
            if name == "range" and any(isinstance(n, ast.Call) and getattr(n.func, "id", "") ==
                                       "int" for n in ast.walk(it)):
                name = "traced range"
            found.add(f"for {name}")
            if any(isinstance(n, (ast.For, ast.While)) for s in node.body for n in ast.walk(s)):
                found.add("nested loop")
            if any(isinstance(n, ast.If) for s in node.body for n in ast.walk(s)):
                found.add("branch in loop")
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Subscript):
                    index = t.slice
                    kind = ("mask" if isinstance(index, ast.Compare) else
                            "slice" if isinstance(index, ast.Slice) else
                            "array index" if isinstance(index, ast.Name) and index.id.isupper()
                            else "index")
                    op = "=" if isinstance(node, ast.Assign) else \
                        type(node.op).__name__.lower()
                    found.add(f"subscript {op}")
                    found.add(f"subscript {kind}")
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and any(isinstance(n, (ast.For, ast.While))
                                            for s in node.body + node.orelse
                                            for n in ast.walk(s)):
            found.add("loop in branch")
        if isinstance(node, (ast.For, ast.While)) and any(
                isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
                for s in node.body for n in ast.walk(s)):
            found.add("subscript update in loop")
    return found
