"""Shape-polymorphic bodies for standalone modules: one gradient for every size of an example.

How (anti-unification, chosen over emitting generic code so that the compiler and the decorator's
fast path stay untouched): the function is compiled again for other sizes (each size of 2 or
more of the example's arrays replaced by fresh primes; sizes of 1 and 0 kept, as broadcasting
depends on them), and the sources are merged by :mod:`adcompiler.aot.antiunify`: every number that
changes becomes a formula in size symbols ``d1, d2...`` read from the arguments at the top of the
body (``d1, d2 = x.shape``); where a number fits no formula of those samples, the sizes it
changes with are sampled further (:func:`_further`), so that a polynomial of degree two of them
may fit it (``n * (n - 1) / 2``: :mod:`.polynomials`), and only then, as each sample costs a
compile. The example's equal sizes are untied where the code allows it
(``x: (4, 4)`` becomes ``x: [d1, d2]`` when the code compiled for ``(11, 13)`` is the same);
sizes that must stay equal keep one symbol, and the dispatcher checks them.

What is symbolic and what is sampled (the pragmatic route, chosen over carrying symbolic
dimensions through shape inference, every pass and both emitters): the sizes are symbols in the
merged body only; the compiler sees the numbers of each sample. The samples agree, whatever the
example's sizes, because ``adcompiler compile`` compiles inside
:func:`adcompiler.ir.sizing.symbolic`, where every choice the passes and the planner make by
size (fusion, buffers, the cost models) is the one for large inputs, at every size, and numexpr
is off (a second body for small inputs makes the other choice: :mod:`.small_bodies`); CuPy
kernels take their literals as arguments then, so the sizes' numbers are in the Python text
(:func:`adcompiler.backends.cuda_kernels.lift_literals`). A size the
code fixes (a reshape to a constant, a product with a constant array) stays a number, and why is
kept (``Specialisation.fixed``) for the module's header and the body's comment.

Sizes the example has equal (S == D, square matrices) are tied by what the code needs, never by
the example's numbers alone: first split by their roles (:mod:`adcompiler.aot.roles`: the axes
the function's shapes need equal, from lowering only, then one compile), else one at a
time; a split whose code is the example's but for numbers is taken, and so is one whose code
differs from the example's only where the example's code exploits the coincidence (the memory
planner sharing a work array between an (S, D) and a (D, D) temporary at S == D only), as
checked at two sets of sizes apart; the body is then merged from samples whose sizes are apart,
without the example's code, and holds at S == D too (it shares no work array between shapes
that merely happen to be equal). So with a size equal to a number of the code: at the
mixture's d = 2 the algebra folds the 2 of ``-d * a`` with the 2.0 of ``-2.0 * b`` (``-(2 * (a
+ b))``), and at n = 2000 ``n / 1000.0`` is written as the int 2; the body merged from samples
apart holds at every d and n. The decorator's own code for the example's signature may still
exploit it.

Invariants: a polymorphic body, specialised back to every size it was compiled for, reproduces that
code byte for byte (the example's own code among them, unless a coincidence above left it
out);
its pattern (dtype, rank, the sizes of 1, and the symbols) is what the
dispatcher matches, each symbol with its own least size (``x[:3]`` bounds x's axis 0 only; a
symbol several axes share takes the largest: :func:`adcompiler.aot.sizedeps.least_sizes`). A
function that decides on a size while compiling (:mod:`adcompiler.aot.sizedeps`), or whose code
changes beyond its numbers, keeps one body per example signature, and the reason is returned
for the module's header. A size the function divides exactly by a constant (``dh = D // H``:
:mod:`adcompiler.aot.divisions`) is no decision where the example's is a multiple: its samples
are multiples too (k times a prime), the body reads the quotient (``d1 // 4``), its least size
is 2k (the quotient keeps its broadcasting meaning) and ``Specialisation.multiples`` says why
for the guards, ``_dispatch`` and the header; an example size that is not a multiple keeps the
decision.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import math

import numpy as np

from . import antiunify, polynomials, roles, small_bodies
from .containers import leaf_labels
from ..errors import COMPUTING_ERRORS, CompileError
from ..frontend.lower import lower_function
from ..ir import Aval
from ..pipeline import compile_gradient
from ..runtime.cache import constants_of
from ..api.signature import bind_arguments, classify_arguments
from ..frontend.bindings.trees import Tree, parameter_names
from .divisions import exact_divisions
from .sizedeps import least_sizes, size_decision
from .user_code import rename


@dataclasses.dataclass
class Variant:
    sizes: dict     # symbol (or group index) -> size
    compiled: object
    cotangent: object = None   # the vjp cotangent's Aval


def generalise(module, gradient, args, spec):
    """``(specialisation, reason)``: a Specialisation whose body holds for every size of the
    example's pattern, or None and why not (None, None: no size to generalise)."""
    fname = gradient.primal.__name__
    divisions = exact_divisions(module, fname)
    found = size_decision(module, fname, divisions)
    if found is not None:
        node, where = found
        text = module.lines[node.lineno - 1].strip()
        inside = "" if where == fname else f" in {where}"
        return None, f"`{text}` (line {node.lineno}{inside}) decides on a size while compiling"
    least = least_sizes(module, fname)
    job = _Job(gradient, args, spec, least, divisions.values())
    if job.inexact:
        return None, job.inexact
    if not job.slots:
        return None, None
    try:
        general = job.run()
    except _NotGeneric as exc:
        return None, str(exc)
    return small_bodies.with_small_body(
        general, lambda: _small(gradient, args, spec, least, job.found, divisions)), None


def _small(gradient, args, spec, least, groups, divisions=None):
    """The body for small inputs (:mod:`adcompiler.aot.small_bodies`): the example compiled
    again, as :func:`adcompiler.ir.sizing.small` makes its choices, then merged the same way,
    with the first body's groups of sizes (``groups``); None where it cannot be."""
    job = _Job(gradient, args, spec, least, (divisions or {}).values())
    try:
        example = job._compile({}, [], []).compiled
        job.spec = dataclasses.replace(spec, compiled=example)
        job.skeleton = antiunify.scan(example.source)[0]
        return job.run(groups)
    except _NotGeneric:
        return None


class _NotGeneric(Exception):
    """Why a body stays per shape."""


class _Job:
    """The example's sizes, the variants compiled for other sizes, and their merge."""

    def __init__(self, gradient, args, spec, least, divisions=()):
        self.gradient, self.spec, self.least = gradient, spec, least   # a sizedeps.Least
        self.arguments = bind_arguments(gradient.primal, args, {})
        self.avals = classify_arguments(self.arguments, gradient.wrt)   # containers: Trees
        self.flat = _flat(self.avals)   # the body's array parameters: a container's leaves too
        self.labels = {leaf: label for n, a in self.avals.items() if isinstance(a, Tree)
                       for leaf, label in leaf_labels(n, a).items()}
        self.slots = [(n, axis) for n, a in self.flat.items()
                      for axis, d in enumerate(a.shape) if d >= 2]
        self.skeleton = antiunify.scan(spec.compiled.source)[0]
        self.fixed = []   # why each size that cannot vary stays the example's
        self.divisions, self.inexact = {}, None   # slot -> [Division]; why one is not exact
        for d in divisions:
            self.divisions.setdefault(d.slot, []).append(d)
            size = self.flat[d.slot[0]].shape[d.slot[1]] if d.slot in self.slots else None
            if size is not None and size % d.by:
                self.inexact = (f"{d.why} decides on a size while compiling: "
                                f"{self._where([self.slots.index(d.slot)])} is {size}, not a "
                                f"multiple of {d.by}")

    def run(self, groups=None):
        """The Specialisation for every size; ``groups``: the sizes grouped as another job
        found them (the body for small inputs takes the first body's), else found here."""
        groups = self._split(self._free(self.groups)) if groups is None else groups
        self.found = groups
        symbols = _symbols(len(groups), self.spec.compiled.source)
        base = self._sizes(groups, symbols)   # then each symbol moved alone, then all moved
        taken = set(base.values())
        by = {s: self._by(g) for s, g in zip(symbols, groups)}
        sizes = [base] + [{**base, s: self._fresh(base[s], taken, by[s])} for s in symbols]
        sizes.append(self._sizes(groups, symbols, {d for s in sizes for d in s.values()}))
        example = {s: self._size(g) for s, g in zip(symbols, groups)}
        variants = [Variant(example, self.spec.compiled)] + \
            [self._compile(s, groups, symbols) for s in sizes]
        merging, merged = self._fitted(variants, groups, sizes, symbols, by)
        if isinstance(merged, str):
            raise _NotGeneric(merged)
        pattern = self._pattern(groups, symbols, variants)
        reads = {s: self.slots[g[0]] for s, g in zip(symbols, groups)}
        ranks = {n: len(a.shape) for n, a in self.flat.items()}
        text = _with_sizes(merged, self.spec.compiled.fname, reads, ranks)
        return dataclasses.replace(self.spec, signature=pattern, fixed=self.fixed,
                                   least=self._minimums(groups, symbols, ranks),
                                   multiples=self._multiples(groups, symbols),
                                   compiled=dataclasses.replace(merging[0].compiled,
                                                                source=text))

    def _fitted(self, variants, groups, sizes, symbols, by):
        """``(the variants merged, the template or why not)``; where a number has no formula,
        once more with further samples of the sizes it changes with (:meth:`_further`), so
        a polynomial of them may fit: only then, as each costs a compile. ``variants``: the
        example's, then those at ``sizes``; the further ones are added to it."""
        found = self._merge_variants(variants, groups, len(sizes), symbols, by)
        if not isinstance(found[1], antiunify.Unfitted):
            return found
        further = _further(sizes, symbols, found[1].symbols, by, self._fresh)
        if not further:
            return found
        try:
            more = [self._compile(s, groups, symbols) for s in further]
        except _NotGeneric:
            return found
        variants += more
        again = self._merge_variants(variants, groups, len(sizes) + len(more), symbols, by)
        return again if not isinstance(again[1], str) or \
            isinstance(again[1], antiunify.Unfitted) else found

    def _merge_variants(self, variants, groups, samples, symbols, by):
        """``(merging, merged)``: :func:`_merge` of :meth:`_merged`'s variants, else of the
        samples alone."""
        merging = self._merged(variants, groups)
        merged = _merge(merging, samples, symbols, by)
        if isinstance(merged, str) and merging[0] is variants[0]:
            # the example's numbers may coincide where the samples' do not (n / 1000.0 is the
            # whole 2 at n = 2000, written as the int 2): the samples apart serve it too
            apart = _merge(variants[1:], samples, symbols, by)
            if not isinstance(apart, str):
                return variants[1:], apart
        return merging, merged

    def _merged(self, variants, groups):
        """The variants the body is merged from: all, the example first; without the example
        where its code exploits a coincidence of its sizes, with each other (``groups`` split
        sizes it has equal) or with a number of the code (at d = 2, ``-d * a - 2.0 * b``
        factors to ``-(2 * (a + b))``): then the body compiled with sizes apart serves there
        too (it shares no work array between shapes that merely happen to be equal, and its
        algebra holds for every d)."""
        if not self._same_code(variants[1]):
            return variants[1:]
        return variants

    @property
    def groups(self):
        """The slots grouped by the example's sizes: equal sizes start tied."""
        sizes = [self.flat[n].shape[axis] for n, axis in self.slots]
        return [[i for i, s in enumerate(sizes) if s == v] for v in dict.fromkeys(sizes)]

    def _minimums(self, groups, symbols, ranks) -> dict:
        """``{symbol: the smallest size it stands for}``: the largest its slots need."""
        slots, anywhere = self.least.resolve(ranks)
        return {s: max([anywhere, 2 * self._by(g)] + [slots.get(self.slots[i], 2) for i in g])
                for s, g in zip(symbols, groups)}

    def _by(self, group) -> int:
        """What every size of ``group`` must be a multiple of (1: any size): the least common
        multiple of the constants the function divides its slots by exactly."""
        return math.lcm(1, *(d.by for i in group for d in self.divisions.get(self.slots[i], ())))

    def _multiples(self, groups, symbols) -> dict:
        """``{symbol: (k, why)}`` for the symbols that stand for multiples of k only."""
        out = {}
        for s, g in zip(symbols, groups):
            found = [(i, d) for i in g for d in self.divisions.get(self.slots[i], ())]
            if found:
                out[s] = (self._by(g), "; ".join(dict.fromkeys(
                    f"{d.why} divides {self._where([i])} by {d.by}" for i, d in found)))
        return out

    def _size(self, group):
        param, axis = self.slots[group[0]]
        return self.flat[param].shape[axis]

    # ---- variants ----------------------------------------------------------------------------
    def _fresh(self, near, taken, by=1):
        """The first prime above ``near`` and 10, at least every least size, and not ``taken``
        (near the example's: a choice the compiler still makes by size, as a CuPy kernel's
        fusion, is then most often the same); for a size divided by ``by``, ``by`` times the
        first prime above ``near / by``."""
        n = max(near // by, 10, (self.least.largest() - 1) // by) + 1
        while n * by in taken or any(n % p == 0 for p in range(2, int(n ** 0.5) + 1)):
            n += 1
        taken.add(n * by)
        return n * by

    def _sizes(self, groups, names, taken=None):
        taken = set() if taken is None else set(taken)
        return {name: self._fresh(self._size(g), taken, self._by(g))
                for name, g in zip(names, groups)}

    def _variant(self, groups):
        """The code compiled with fresh sizes for ``groups``, or None (and ``self.failure``)
        unless it is the example's code but for numbers, or, where the example's code exploits
        a coincidence of its sizes (:meth:`_merged`: two shapes equal there only sharing a work
        array, a size equal to a number of the code folding with it), the same code at two
        sets of sizes apart."""
        names = list(range(len(groups)))
        try:
            variant = self._compile(self._sizes(groups, names), groups, names)
            if self._same_code(variant) or self._same_code(self._compile(
                    self._sizes(groups, names, variant.sizes.values()), groups, names),
                    variant.compiled):
                return variant
        except _NotGeneric as exc:
            self.failure = str(exc)
            return None
        self.failure = "the code compiled for other sizes differs in more than its numbers"
        if len(antiunify.scan(variant.compiled.source)[0]) != len(self.skeleton):
            self.failure += (" (its length changes with the sizes: a loop or a "
                             "comprehension over a size is unrolled)")
        return None

    def _avals(self, sizes, groups, names):
        """The arguments' avals with each group's slots at ``sizes[name]``."""
        flat = dict(self.flat)
        for name, group in zip(names, groups):
            for i in group:
                param, axis = self.slots[i]
                shape = list(flat[param].shape)
                shape[axis] = sizes[name]
                flat[param] = Aval("array", flat[param].dtype, tuple(shape))
        return _with_leaves(self.avals, flat)

    def _compile(self, sizes, groups, names):
        avals = self._avals(sizes, groups, names)
        g = self.gradient
        try:
            cotangent = lower_function(g.primal, avals).outputs[0].aval if g.mode == "vjp" \
                else None
            compiled = compile_gradient(g.primal, avals, g.wrt, g.mode, cotangent,
                                        backend=g.backend,
                                        checkpoint=getattr(g, "checkpoint", None))
        except (CompileError, *COMPUTING_ERRORS) as exc:  # other sizes may fail: keep per shape
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if any(w in first for w in ("shape mismatch", "broadcast", "not aligned")):
                raise _NotGeneric("its sizes are tied, to each other or to a number in the "
                                  "code, so calls must use the example's shapes; varied one "
                                  f"at a time, they do not broadcast: {first}") from None
            raise _NotGeneric(f"compiling it for other sizes fails: {first}") from None
        return Variant(sizes, compiled, cotangent)

    def _same_code(self, variant, reference=None) -> bool:
        """Whether ``variant`` is ``reference``'s code (the example's) but for numbers."""
        reference = reference or self.spec.compiled
        skeleton = self.skeleton if reference is self.spec.compiled else \
            antiunify.scan(reference.source)[0]
        if antiunify.scan(variant.compiled.source)[0] != skeleton:
            return False
        ours, theirs = constants_of(reference), constants_of(variant.compiled)
        return ours.keys() == theirs.keys() and all(_same(ours[k], theirs[k]) for k in ours)

    def _free(self, groups):
        """The groups whose sizes can change (all, usually; not a size a constant fixes)."""
        if self._variant(groups):
            return groups
        why, free = self.failure, []
        for group in groups:
            if self._variant(free + [group]):
                free.append(group)
            else:
                self.fixed.append(f"{self._where(group)} stays {self._size(group)}: "
                                  f"{self.failure.rstrip('.')}")
        if len(groups) == 1 and not free:
            raise _NotGeneric(f"{why.rstrip('.')}; so {self._where(groups[0])} stays "
                              f"{self._size(groups[0])}")
        if not free:
            raise _NotGeneric(f"{why.rstrip('.')}; varied alone: " + "; ".join(self.fixed))
        return free

    def _where(self, group) -> str:
        """``x.shape[0]``, ``len(b)``: the slots of a group, as a call's error names them."""
        return " and ".join(f"len({self.labels.get(p, p)})" if len(self.flat[p].shape) == 1
                            else f"{self.labels.get(p, p)}.shape[{axis}]"
                            for p, axis in map(self.slots.__getitem__, group))

    def _split(self, groups):
        """The example's equal sizes split by their roles (:mod:`adcompiler.aot.roles`: the
        classes the function's shapes need equal, one compile to check them), else one at a
        time (:meth:`_untie`)."""
        found = self._roles(groups)
        if found is not None and len(found) > len(groups) and self._variant(found):
            return found
        return self._untie(groups)

    def _roles(self, groups):
        """The finest grouping of the slots of ``groups`` that the function lowers with, each
        group at a size of its own, or None."""
        def sizes(blocks):
            taken = set()
            return [self._fresh(self._size(b), taken, self._by(b)) for b in blocks]

        def lower(blocks, sized):
            lower_function(self.gradient.primal,
                           self._avals(sized, blocks, range(len(blocks))))
        return roles.equal_classes([[i] for g in groups for i in g], sizes, lower)

    def _untie(self, groups):
        """Split the example's equal sizes where the code compiled with them apart is the same
        (or, where the example's code exploits that they coincide, the same at two sets of
        sizes apart): each member alone, else joining a member split off before it, else with
        the later members alike (the same axis of arrays of its shape: ``x``'s and ``y``'s
        steps apart from the width), else with all the members after it."""
        done, queue = [], [list(g) for g in groups]
        while queue:
            group = queue.pop(0)
            kept, split, placed = [group[0]], [], set()   # split: groups split off from it
            for i in range(1, len(group)):
                member, others = group[i], done + queue
                if member in placed:
                    continue
                rest = [j for j in group[i + 1:] if j not in placed]
                alike = [j for j in rest if self._alike(j, member)]
                found = next((t for t in _splits(split, member, alike) if self._variant(
                    others + [kept + [j for j in rest if j not in _members(t)]] + t)), None)
                if found is not None:
                    split = found
                    placed |= _members(found)
                elif rest and self._variant(others + split + [kept, [member] + rest]):
                    queue.append([member] + rest)
                    break
                else:
                    kept.append(member)
            done += split + [kept]
        return sorted(done, key=min)

    def _alike(self, i, j) -> bool:
        """Whether slots ``i`` and ``j`` are the same axis of arrays of the same shape."""
        (p, a), (q, b) = self.slots[i], self.slots[j]
        return a == b and self.flat[p].shape == self.flat[q].shape

    # ---- the dispatcher's pattern and the body's size reads -----------------------------------
    def _pattern(self, groups, symbols, variants):
        """The example's signature with each grouped size replaced by its symbol."""
        where = {self.slots[i]: s for s, g in zip(symbols, groups) for i in g}
        params = parameter_names(self.avals)   # a container's leaves by their names
        out = []
        for k, entry in enumerate(self.spec.signature):
            if k < len(params):
                name = params[k]
            elif self.gradient.mode == "jvp":
                name = self.gradient.wrt[k - len(params)]
            else:
                out.append(_cotangent_entry(entry, variants))
                continue
            if entry[0] == "array":
                dims = tuple(where.get((name, ax), d) for ax, d in enumerate(entry[2]))
                entry = (entry[0], entry[1], dims)
            out.append(entry)
        return tuple(out)


def _further(sizes, symbols, changing, by, fresh) -> list:
    """Further sizes for the ``changing`` symbols (three at most) of samples ``sizes`` (the
    base, each of ``symbols`` moved alone, all moved): each moved alone once more, to a fresh
    size, and each two moved together, to their first moves' sizes, so that the samples fit
    a polynomial of degree two of them and check it at one more (all moved)."""
    changing = [s for s in symbols if s in changing]
    if not 0 < len(changing) <= polynomials.MAX_SIZES:
        return []
    base, taken = sizes[0], {d for s in sizes for d in s.values()}
    once = {s: sizes[1 + i][s] for i, s in enumerate(symbols)}
    out = [{**base, s: fresh(base[s], taken, by[s])} for s in changing]
    return out + [{**base, s: once[s], t: once[t]}
                  for s, t in itertools.combinations(changing, 2)]


def _merge(merging, samples, symbols, by):
    """:func:`adcompiler.aot.antiunify.merge` of the variants ``merging``, whose last
    ``samples`` are the base sizes, then each symbol moved alone, then all moved, then any
    further samples (:func:`_further`)."""
    base = len(merging) - samples
    return antiunify.merge([v.compiled.source for v in merging], [v.sizes for v in merging],
                           base, {s: base + 1 + i for i, s in enumerate(symbols)},
                           {s: k for s, k in by.items() if k > 1})


def _splits(split, member, alike) -> list:
    """The ways to split ``member`` off: alone, joining each group split off before it, with
    the members ``alike``; each as the list of the split-off groups."""
    joined = [split[:k] + [split[k] + [member]] + split[k + 1:] for k in range(len(split))]
    return [split + [[member]]] + joined + ([split + [[member] + alike]] if alike else [])


def _members(groups) -> set:
    return {i for g in groups for i in g}


def _cotangent_entry(entry, variants):
    """A vjp cotangent's entry: each of its sizes is one of the symbols, or fixed."""
    dims = []
    for axis, d in enumerate(entry[2]):
        values = [v.cotangent.shape[axis] if v.cotangent else d for v in variants]
        symbol = next((s for s in variants[1].sizes
                       if all(v.sizes[s] == x for v, x in zip(variants, values))), None)
        if symbol is None and len(set(values)) > 1:
            raise _NotGeneric("the result's sizes are not sizes of the inputs")
        dims.append(symbol or d)
    return entry[:2] + (tuple(dims),)


def _with_sizes(template, fname, reads, ranks) -> str:
    """The merged source, with the sizes read at the top of the body (and the body's planned
    work arrays kept per size: one pool of them per set of sizes)."""
    text = template.render()
    used = {n for _, fit in template.holes for n in _names(fit.expr)}
    tree = ast.parse(text)
    lines = text.splitlines(True)
    body = next(s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == fname)
    pools = _pools(tree, used)
    factories = {factory for factory, _ in pools.values()}
    for stmt in tree.body:
        if stmt is not body and used & _names(ast.unparse(stmt)) and \
                getattr(stmt, "name", None) not in factories:
            raise _NotGeneric("a module-level helper of the code depends on the sizes")
    at, indent = _top(body, lines)
    prelude = _prelude(reads, ranks, used, indent)
    for pool, (factory, sizes) in pools.items():
        args = ", ".join(s for s in reads if s in sizes)
        key = args + ("," if "," not in args else "")
        prelude.append(f"{indent}{pool}_sized = {pool}.setdefault(({key}), [])\n")
        lines = _edit_pool(lines, tree, pool, factory, args, fname)
    lines[at:at] = prelude
    return "".join(lines)


def _top(body, lines):
    """Where the body's code starts (after a docstring, above its opening comments), and its
    indentation."""
    head = body.body[0]
    docstring = isinstance(head, ast.Expr) and isinstance(head.value, ast.Constant)
    first = body.body[1] if docstring and len(body.body) > 1 else head
    at, floor = first.lineno - 1, head.end_lineno if first is not head else body.lineno
    while at > floor and lines[at - 1].strip().startswith("#"):
        at -= 1
    return at, " " * first.col_offset


def _prelude(reads, ranks, used, indent) -> list:
    """``d1, d2 = x.shape`` where x's sizes are all new, else ``d3 = w.shape[1]``."""
    out, done = [], set()
    for symbol, (param, axis) in reads.items():
        if symbol not in used or symbol in done:
            continue
        same = [s for s, (p, _) in reads.items() if p == param]
        axes = [a for s, (p, a) in reads.items() if p == param]
        if len(same) > 1 and axes == list(range(ranks[param])) and \
                all(s in used for s in same):
            out.append(f"{indent}{', '.join(same)} = {param}.shape\n")
            done |= set(same)
        else:
            out.append(f"{indent}{symbol} = {param}.shape[{axis}]\n")
            done.add(symbol)
    return out


def _pools(tree, used) -> dict:
    """``{pool list name: (factory name, sizes it reads)}`` for the memory planner's work
    arrays whose sizes vary (:mod:`adcompiler.backends.buffered`: ``pool = []`` and
    ``def _new<pool>(): return (np.empty(...), ...)``)."""
    defs = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    out = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.List) \
                and not stmt.value.elts and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            factory = defs.get(f"_new{name}")
            reads = used & _names(ast.unparse(factory)) if factory else set()
            if reads:
                out[name] = (factory.name, reads)
    return out


def _edit_pool(lines, tree, pool, factory, args, fname):
    """``pool = []`` becomes a dict of pools by sizes, the factory takes the sizes it reads,
    and the body takes its buffers from ``pool_sized``, the pool of its sizes."""
    lines = list(lines)
    for stmt in tree.body:
        row = stmt.lineno - 1
        if isinstance(stmt, ast.Assign) and getattr(stmt.targets[0], "id", None) == pool:
            lines[row] = f"{pool} = {{}}  # {fname}'s work arrays by sizes: a set per call\n"
        elif isinstance(stmt, ast.FunctionDef) and stmt.name == factory:
            lines[row] = lines[row].replace(f"{factory}()", f"{factory}({args})", 1)
        elif isinstance(stmt, ast.FunctionDef) and stmt.name == fname:
            text = rename("".join(lines[row:stmt.end_lineno]), {pool: f"{pool}_sized"})
            lines[row:stmt.end_lineno] = text.replace(f"{factory}()", f"{factory}({args})") \
                .splitlines(True)
    return lines


def _names(text) -> set:
    return {n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)}


def _symbols(count, source) -> list:
    """``d1, d2...``, or another prefix where the code already uses one of those names."""
    taken = _names(source)
    for prefix in ("d", "n", "size", "_d"):
        names = [f"{prefix}{i}" for i in range(1, count + 1)]
        if not taken & set(names):
            return names
    raise _NotGeneric("every name for the sizes is taken")


def _flat(avals) -> dict:
    """``{the body's parameter: its Aval}`` of the arrays: a top-level one by its name, a
    container's leaves by theirs (``params_W1``), as the body takes them."""
    out = {}
    for name, a in avals.items():
        pairs = a.leaves if isinstance(a, Tree) else [(name, a)]
        out.update((n, leaf) for n, leaf in pairs if _is_array(leaf))
    return out


def _with_leaves(avals, flat) -> dict:
    """``avals`` with the arrays of ``flat`` in place, a container's leaves among them."""
    return {name: dataclasses.replace(a, leaves=tuple((n, flat.get(n, leaf))
                                                      for n, leaf in a.leaves))
            if isinstance(a, Tree) else flat.get(name, a) for name, a in avals.items()}


def _is_array(aval) -> bool:
    return isinstance(aval, Aval) and aval.kind == "array" and aval.shape is not None


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and \
            a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    return a is b or a == b

