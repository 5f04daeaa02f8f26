"""Write a planned gradient (:mod:`adcompiler.backends.loop_plan`) as numba loops.

One ``@numba.njit`` kernel fills every output; a plain Python function with the user's
parameters allocates the outputs and calls it. The pieces of all outputs are cut at each
other's edges, and one loop over ``j`` fills every array that has a piece there, so terms the
outputs share (``tanh(x[j])`` in a value and its gradient) are computed once. A scalar output
(``value_and_grad``'s value) is reduced by the wrapper from a buffer the kernel fills
(``np.sum(terms)``), or from the parameter itself where the buffer would be a copy of one.
For Rosenbrock's gradient::

    @numba.njit(fastmath={"contract"}, error_model="numpy")
    def _grad_rosenbrock_loops(x, dx):
        for j in range(0, 1):
            x_p1 = x[j + 1]
            ...
        for j in range(1, 999999):
            ...
            dx[j] = ...

Choices, measured in benchmarks/NUMBA.md:

- ``fastmath={"contract"}``: fused multiply-adds only; NaN and inf keep their meaning (all of
  ``fastmath=True`` would let LLVM assume neither occurs).
- ``error_model="numpy"``: a division by zero gives inf or NaN, as NumPy's does, and no check
  per division stops the loop from vectorising.
- ``exp``, ``tanh`` and ``expm1`` call :mod:`adcompiler.runtime.numba_math`, written so that
  LLVM vectorises them (numba's ``math.exp`` is a scalar libm call here: no SVML); the other
  functions are ``math`` calls.
  ``tanh(a)`` in a loop that also computes ``exp(-a)`` (or ``exp(a)``) comes with it from one
  ``vexp_tanh`` call (``_tanh_from_exp``).
- ``numba.prange`` (threads) for a piece of at least :data:`PARALLEL_MIN` elements, or
  :data:`PARALLEL_MIN_CALLS` where it calls a transcendental function. Never where numba has one
  thread (``NUMBA_NUM_THREADS=1``; ``numba_target.threads_pay``). Starting the threads costs
  about 4 µs. Measured on two cores (median; serial against parallel): Rosenbrock's gradient,
  arithmetic only, 10.1 against 9.9 µs at 2^15 elements, 19.2 against 14.2 µs at 2^16 and 581
  against 303 µs at 2^20; the elementwise workload's (tanh and exp) 14.2 against 8.8 µs at 2^12.
- A parallel loop indexes with ``i = numba.uint64(j)`` (and ``numba.uint64(j - 1)``...). numba
  wraps a signed index that may be negative, as Python does; a ``range`` with constant bounds
  lets LLVM prove that it never is, but a ``prange`` chunk's bounds come at run time, and the
  wrap-around select turned every load and store into a gather or scatter. Unsigned, the same
  gradient of ``sum(tanh(x) * x + 3x^2 - exp(-x))`` at 10^6 took 1.7 ms instead of 2.9 ms on
  two threads (3.7 against 5.5 ms on one).
- An output of at least :data:`APART_MIN` elements (32 MiB) is allocated by
  :func:`adcompiler.runtime.apart.empty_apart`, so that it does not start at the page offset
  of the arrays the loop reads (4K aliasing): the elementwise gradient's kernel at 10^7, one
  thread, took 14.4 instead of 25.8 ms. Arrays that large are always mmap'd by glibc (its
  threshold stops at 32 MiB), so output and input start at the same offset unless moved;
  smaller ones mostly come from the heap at other offsets, and there ``empty_apart``'s 5-8 µs
  and larger buffer cost more than they saved (Rosenbrock at 10^6: 0.605 against 0.571 ms).
- On AVX-512 CPUs that keep their clock with 512-bit vectors, each loop of at least
  :data:`WIDE_MIN` elements calls ``wide_vectors()`` (:mod:`adcompiler.runtime.numba_math`): LLVM
  may then use 8-wide vectors there, where numba's target prefers 4. The elementwise gradient at
  10^6 took 2.5 instead of 3.5 ms on one thread. ``ADCOMPILER_NUMBA_VECTOR_BITS=256|512``
  overrides the choice.
"""

from __future__ import annotations

import keyword
import math
import re

from ..ir.primitives import ELEMENTWISE
from . import numba_target
from .distinct import distinct_guard
from .loop_plan import Loop, size

PARALLEL_MIN = 1 << 15        # elements, for a loop of arithmetic only
PARALLEL_MIN_CALLS = 1 << 12  # for a loop that calls exp, tanh, log...
WIDE_MIN = 64                 # elements: shorter loops are not worth a note in the source
APART_MIN = 1 << 22           # elements of an output allocated apart from its inputs' offsets
_WIDE_NOTE = "LLVM may use 512-bit vectors in this loop"
_FLAT_NOTE = "arrays of more dimensions go in as flat views: element j in C order"
_UNSIGNED_NOTE = "unsigned: no negative-index test, so the loop vectorises"
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
_INFIX = {r.name: (r.op, _PRECEDENCE[r.op]) for r in ELEMENTWISE
          if r.op in _PRECEDENCE and r.arity == 2}
_OWN = {"exp": "vexp", "tanh": "vtanh", "expm1": "vexpm1"}  # from adcompiler.runtime.numba_math
_TANH_E = "tanh_from_exp"  # tanh(a) from the loop's e^-a: numba_math.vtanh_e(a, e)
_EXP_TANH = "exp_tanh"     # the pair (e^-a, tanh a): numba_math.vexp_tanh(a)
_ITEMS = ("exp_tanh_0", "exp_tanh_1")   # its two elements
_COMPARE = {r.name: r.op for r in ELEMENTWISE if r.op in ("<", "<=", ">", ">=", "==", "!=")}
# NumPy's own function, for NaN as NumPy gives it (the binary ones: all arguments)
_NUMPY = {r.name: r.numba for r in ELEMENTWISE if r.numba and r.numba.startswith("np.")
          and r.cheap}
_CALLS = {r.name: r.numba for r in ELEMENTWISE
          if r.numba and r.numba != "inline" and r.name not in _NUMPY}
_CHEAP = frozenset(r.name for r in ELEMENTWISE if r.cheap)
_ATOM = 9


def own_math_names() -> frozenset:
    """The primitives :mod:`adcompiler.runtime.numba_math` provides (``_OWN``'s names there)."""
    return frozenset(_OWN)


def emit_numba(plan, graph, fname: str, arg_names: list, cache=False) -> str:
    """The module source: imports, the kernel, and ``def fname(*arg_names)``; ``cache``: the
    kernel is compiled with ``cache=True`` (loaded by :mod:`adcompiler.runtime.numba_cache`)."""
    kernel = f"_{fname}_loops"
    reserved = {"j", "numba", "np", "math", kernel, "wide_vectors", "vtanh_e", "vexp_tanh",
                "empty_apart", *_OWN.values()}
    params = [p.name for p in graph.params]
    inside = {}   # the kernel's name for each parameter: another where it would shadow a global
    for name in params:
        inside[name] = _unique(name, reserved) if name in reserved else name
        reserved.add(inside[name])
    taken = reserved | set(arg_names)
    returned = {o for o in plan.outputs if isinstance(o, Loop)}   # arrays of their own, always
    read = {loop: loop.pieces[0].term[1] for loop in plan.reductions
            if _whole_param(loop) and loop not in returned}
    arrays = _array_names(plan, read, taken)   # Loop -> the array it fills (output or buffer)
    reserved |= set(arrays.values())           # no loop local may shadow an array
    own, wide = own_math_names(), _wide_vectors()
    bodies, used, parallel = [], set(), False
    for (lo, hi), writes in _groups(arrays).items():
        text, group_used, par = _loop_source(lo, hi, writes, own, inside, set(reserved),
                                             wide and hi - lo >= WIDE_MIN)
        bodies.append(text)
        used |= group_used
        parallel |= par
    flags = ('fastmath={"contract"}, error_model="numpy"' + (", parallel=True" if parallel else "")
             + (", cache=True" if cache else ""))
    kernel_args = [inside[p] for p in params] + list(arrays.values())
    kernel_src = (f"@numba.njit({flags})\ndef {kernel}({', '.join(kernel_args)}):\n"
                  + "\n".join(bodies))
    wrapper = _wrapper(plan, graph, arrays, read, (fname, arg_names, params, kernel), taken)
    imports = ["import numba"]
    if used:
        imports.append(f"from adcompiler.runtime.numba_math import {', '.join(sorted(used))}")
    if "empty_apart(" in wrapper:
        imports.append("from adcompiler.runtime.apart import empty_apart")
    return "\n\n\n".join(["\n".join(imports), kernel_src, wrapper]) + "\n"


def _wrapper(plan, graph, arrays, read, names, taken) -> str:
    """Allocate the arrays, run the kernel, reduce the buffers of scalar outputs, return."""
    fname, arg_names, params, kernel = names
    lines = [f"def {fname}({', '.join(arg_names)}):"]
    lines += ["    " + line for line in distinct_guard(graph)]  # f(a, a) writing into a
    inputs = [p.name for p in graph.params if p.aval.kind == "array"]
    lines += [f"    {name} = {_allocation(loop, inputs, arg_names)}"
              for loop, name in arrays.items()]
    flat = {v.name: v.aval.kind == "array" and len(v.aval.shape) > 1 for v in graph.params}
    flat.update({arrays[loop]: len(loop.out.aval.shape) > 1 for loop in arrays})
    kernel_args = [f"{a}.reshape(-1)" if flat[a] else a for a in params + list(arrays.values())]
    if any(flat.values()):
        lines.append(f"    # {_FLAT_NOTE}")
    lines.append(f"    {kernel}({', '.join(kernel_args)})")
    buffers = [read.get(loop) or arrays[loop] for loop in plan.reductions]
    writer = _Writer(frozenset(), {p: p for p in params}, taken, buffers=buffers)
    results = []
    for out in plan.outputs:
        if isinstance(out, Loop):
            results.append(arrays[out])
            continue
        name = _unique(_identifier(_base_name(out.out, "value")), taken)
        lines.append(f"    {name} = {writer.text(_lowered(out.term))}")
        results.append(name)
    lines.append(f"    return {', '.join(results)}")
    return "\n".join(lines)


def _allocation(loop, inputs, arg_names) -> str:
    """An output's allocation: from :data:`APART_MIN` elements on, ``empty_apart`` (not at the
    page offset of an input the loop reads: :mod:`adcompiler.runtime.apart`)."""
    shape = tuple(loop.out.aval.shape)
    if size(loop.out.aval) < APART_MIN or not inputs or "empty_apart" in arg_names:
        return f"np.empty({shape!r}, dtype=np.float64)"
    return f"empty_apart({shape!r}, {', '.join(inputs)})"


def _whole_param(loop) -> bool:
    """Whether ``loop`` would copy a parameter: a scalar output reduces the parameter itself."""
    (piece, *more), n = loop.pieces, size(loop.out.aval)
    return not more and piece.term[0] == "read" and piece.term[2] == 0 and \
        (piece.lo, piece.hi) == (0, n)


def _array_names(plan, read, taken) -> dict:
    """Each distinct loop's array: a gradient output, or a buffer a scalar output reduces (a
    loop that is both, as in ``value = np.sum(dx)``, fills one array)."""
    names = {}
    for loop in plan.loops:
        if loop not in names and loop not in read:
            default = "terms" if loop in plan.reductions else f"out{len(names)}"
            names[loop] = _unique(_identifier(_base_name(loop.out, default)), taken)
    return names


def _base_name(value, default) -> str:
    return re.sub(r"_\d+$", "", value.name or "") or default   # dx_4 -> dx


def _groups(arrays) -> dict:
    """(lo, hi) -> [(array, term)]: the pieces of every loop cut at every loop's piece edges,
    so that one loop over ``j`` fills each array that has a piece there (and computes their
    shared terms once)."""
    cuts = sorted({e for loop, _ in arrays.items() for p in loop.pieces for e in (p.lo, p.hi)})
    groups: dict = {}
    for loop, name in arrays.items():
        for piece in loop.pieces:
            inner = [c for c in cuts if piece.lo <= c <= piece.hi]
            for lo, hi in zip(inner, inner[1:]):
                groups.setdefault((lo, hi), []).append((name, piece.term))
    return dict(sorted(groups.items()))


def _wide_vectors() -> bool:
    return numba_target.wide_vectors_pay()


def _loop_source(lo, hi, writes, own, inside, taken, wide=False, counter=None, serial=False):
    """One loop filling ``array[j] = term`` for each of ``writes``: its source, the own-math
    names it calls, whether it runs in parallel. ``wide``: it asks for 512-bit vectors.
    ``counter``: inside a step loop (:mod:`adcompiler.backends.numba_steps_emit`), whose
    counter's name this is: an array given as ``(stack, row)`` is written at ``stack[row,
    j]``. ``serial``: never ``prange``."""
    terms = [_lowered(term) for _, term in writes]
    if {"tanh", "exp"} <= own:
        terms = _tanh_from_exp(terms)
    uses: dict = {}
    for term in terms:
        _count(term, uses)
    calls = any(t[0] == "op" and _is_transcendental(t[1]) for t in uses)
    par = not serial and hi - lo >= (PARALLEL_MIN_CALLS if calls else PARALLEL_MIN) and \
        numba_target.threads_pay()
    writer = _Writer(own, inside, taken, unsigned=_unique("i", taken) if par else None)
    writer.counter = counter
    seen, ordered = set(), []
    for term in terms:
        _order(term, seen, ordered)
    for t in ordered:  # bind every term read twice, operands first
        if uses.get(t, 0) > 1 and t[0] in ("op", "read", "row"):
            writer.bind(t)
    lines = [f"    for j in {'numba.prange' if par else 'range'}({lo}, {hi}):"]
    if wide:
        lines.append(f"        wide_vectors()  # {_WIDE_NOTE}")
        writer.used.add("wide_vectors")
    if par:
        lines.append(f"        {writer.unsigned} = numba.uint64(j)  # {_UNSIGNED_NOTE}")
    lines += [f"        {name} = {text}" for name, text in writer.lines]
    lines += [f"        {_target(array, writer.index(0))} = {writer.text(term)}"
              for (array, _), term in zip(writes, terms)]
    return "\n".join(lines), writer.used, par


def _tanh_from_exp(terms):
    """``tanh(a)`` and ``exp(-a)`` in one loop as the two elements of ``vexp_tanh(a)``, and
    ``tanh(a)`` with ``exp(a)`` as ``-vexp_tanh(-a)[1]`` with ``vexp_tanh(-a)[0]``: one
    exponential and one division for both (the elementwise gradient at 10^6, one thread: 2.5 ms
    a call with vtanh and vexp, 1.6 with vtanh_e, 1.3 with vexp_tanh; benchmarks/ELEMENTWISE.md).
    The pair is read twice, so it is bound to a local once."""
    uses: dict = {}
    for term in terms:
        _count(term, uses)
    exps = {t[2][0]: t for t in uses if t[0] == "op" and t[1] == "exp"}
    swap = {}
    for t in uses:
        if t[0] != "op" or t[1] != "tanh":
            continue
        a = t[2][0]
        minus_a = ("op", "negative", (a,))
        if minus_a in exps:
            pair = ("op", _EXP_TANH, (a,))
            swap[t] = ("op", _ITEMS[1], (pair,))
            swap[exps[minus_a]] = ("op", _ITEMS[0], (pair,))
        elif a in exps:
            pair = ("op", _EXP_TANH, (minus_a,))
            swap[t] = ("op", "negative", (("op", _ITEMS[1], (pair,)),))
            swap[exps[a]] = ("op", _ITEMS[0], (pair,))
    return [_swapped(term, swap, {}) for term in terms] if swap else terms


def _swapped(term, swap, done):
    """``term`` with every subterm in ``swap`` replaced (``done``: the rebuilt subterms)."""
    if term in swap:
        return swap[term]
    if term[0] != "op":
        return term
    if term not in done:
        done[term] = ("op", term[1], tuple(_swapped(a, swap, done) for a in term[2]))
    return done[term]


def _target(array, index) -> str:
    return f"{array}[{index}]" if isinstance(array, str) else f"{array[0]}[{array[1]}, {index}]"


def _is_transcendental(prim) -> bool:
    """Whether ``prim`` is written as a call of a math function (its row is not ``cheap``)."""
    return prim not in _CHEAP


def _lowered(term):
    """``x ** 2`` and ``square(x)`` as ``x * x``, ``reciprocal(x)`` as ``1.0 / x``."""
    if term[0] != "op":
        return term
    prim, args = term[1], tuple(_lowered(a) for a in term[2])
    if prim == "square" or (prim == "power" and args[1] in (("lit", 2), ("lit", 2.0))):
        return ("op", "multiply", (args[0], args[0]))
    if prim == "reciprocal":
        return ("op", "divide", (("lit", 1.0), args[0]))
    return ("op", prim, args)


def _count(term, uses):
    uses[term] = uses.get(term, 0) + 1
    if uses[term] == 1 and term[0] == "op":
        for a in term[2]:
            _count(a, uses)


def _order(term, seen=None, out=None):
    """Terms in dependency order (operands before their users), each once."""
    seen, out = (set(), []) if seen is None else (seen, out)
    if term in seen:
        return out
    seen.add(term)
    if term[0] == "op":
        for a in term[2]:
            _order(a, seen, out)
    out.append(term)
    return out


class _Writer:
    """Python text of terms; a bound term prints as its local's name."""

    def __init__(self, own, inside, taken, unsigned=None, buffers=None):
        self.own, self.inside, self.taken = own, inside, taken
        self.unsigned = unsigned  # parallel loops: the name of numba.uint64(j)
        self.buffers = buffers    # the wrapper's scalar outputs: reduced arrays; NumPy calls
        self.counter = None       # a step loop's counter (numba_steps): rows are read at it
        self.names: dict = {}
        self.lines: list = []
        self.used: set = set()

    def index(self, k) -> str:
        """The index of element ``j + k``."""
        if not k:
            return self.unsigned or "j"
        text = f"j{' + ' if k > 0 else ' - '}{abs(k)}"
        return f"numba.uint64({text})" if self.unsigned else text

    def bind(self, term):
        text = self.text(term)
        name = _unique(self._hint(term), self.taken)
        self.names[term] = name
        self.lines.append((name, text))

    def _hint(self, term):
        if term[0] in ("read", "row"):
            k = term[2]
            name = self.inside[term[1]]
            return f"{name}_{'p' if k > 0 else 'm'}{abs(k)}" if k else f"{name}_j"
        return "t"

    def text(self, term) -> str:
        return self._text(term)[0]

    def _text(self, term):
        """(text, precedence): 0 a comparison, 1 + -, 2 * /, 3 unary minus, 4 **, 9 an atom."""
        if term in self.names:
            return self.names[term], _ATOM
        tag = term[0]
        if tag == "read":
            name, k = self.inside[term[1]], term[2]
            return f"{name}[{self.index(k)}]", _ATOM
        if tag == "row":   # a row of a 2-D array at a step loop's counter
            return f"{self.inside[term[1]]}[{self.counter}, {self.index(term[2])}]", _ATOM
        if tag == "at":    # an element of a 1-D array at a step loop's counter
            return f"{self.inside[term[1]]}[{self.counter}]", _ATOM
        if tag == "scalar":
            return self.inside[term[1]], _ATOM
        if tag == "reduce":
            return f"np.{term[1]}({self.buffers[term[2]]})", _ATOM
        if tag == "lit":
            return _literal(term[1])
        return self._op(term[1], term[2])

    def _op(self, prim, args):
        if prim in _INFIX:
            sym, prec = _INFIX[prim]
            (a, pa), (b, pb) = self._text(args[0]), self._text(args[1])
            a = a if pa >= prec else f"({a})"
            b = b if pb > prec else f"({b})"  # a + (b + c) as written: the IR's order
            return f"{a} {sym} {b}", prec
        if prim in _COMPARE:
            a, b = (t if p > 0 else f"({t})" for t, p in map(self._text, args))  # no chains
            return f"{a} {_COMPARE[prim]} {b}", 0  # a bool: 1 or 0 in arithmetic
        if prim == "where":
            c, a, b = (self.text(x) for x in args)
            return f"({a} if {c} else {b})", _ATOM
        if prim in _NUMPY:
            return f"{_NUMPY[prim]}({', '.join(self.text(x) for x in args)})", _ATOM
        if prim == "negative":
            a, pa = self._text(args[0])
            return (f"-{a}" if pa > 3 else f"-({a})"), 3
        if prim == "power":
            (a, pa), (b, pb) = self._text(args[0]), self._text(args[1])
            return f"{a if pa > 4 else f'({a})'} ** {b if pb >= 4 else f'({b})'}", 4
        a = ", ".join(self.text(x) for x in args)   # one argument, or two (logaddexp2)
        if prim == _TANH_E:
            self.used.add("vtanh_e")
            return f"vtanh_e({a})", _ATOM
        if prim == _EXP_TANH:
            self.used.add("vexp_tanh")
            return f"vexp_tanh({a})", _ATOM
        if prim in _ITEMS:
            return f"{a}[{_ITEMS.index(prim)}]", _ATOM
        if self.buffers is not None:  # NumPy's function, for NumPy's inf/NaN and warnings
            return f"np.{prim}({a})", _ATOM
        if prim in self.own:
            self.used.add(_OWN[prim])
            return f"{_OWN[prim]}({a})", _ATOM
        callee = _CALLS[prim]
        return f"{callee}({a})", _ATOM


def _literal(value):
    if isinstance(value, float):
        if math.isnan(value):
            return "math.nan", _ATOM
        if math.isinf(value):
            return ("math.inf", _ATOM) if value > 0 else ("-math.inf", 3)
    text = repr(value)
    return text, (3 if text.startswith("-") else _ATOM)


def _identifier(name: str) -> str:
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    if not name or name[0].isdigit() or keyword.iskeyword(name):
        name = "v_" + name
    return name


def _unique(base: str, taken: set) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name
