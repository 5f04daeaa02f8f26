"""Where a user's function decides on its inputs' sizes while compiling, read from its source.

The compiler resolves such decisions (``if x.shape[0] > 3:``, ``min(len(x), 5)``) once, for the
sizes it compiles for, and leaves no trace of them in the generated code: comparing the code
compiled for several sizes cannot see them. Invariant: :func:`size_decision` finds every
comparison, test, ``min``/``max``/``//``/``%`` or conversion of a value computed from sizes
(``.shape``, ``.size``, ``len``) in the function and in the module's functions it calls (with
sizes passed to them), conservatively: a value is size-derived when it is built from sizes,
constants and arithmetic only, so array arithmetic never counts. :func:`least_sizes` gives the
smallest sizes the constant slice bounds and indices fit (``x[:5]`` clips to the size below 5;
``x[2]`` needs 3), per axis of a parameter where the subscript is the parameter's own (``x[:,
4]`` bounds x's axis 1), and for every size otherwise (a local, an alias, a helper's subscript),
conservatively: any constant subscript counts but a shape's; a constant ``np.roll`` shift ``k``
(lowered as slices at ``k % n``) needs ``abs(k) + 1`` for every size, a split at constant
indices (``np.split(x, [2, 5])``, slices ``x[2:5]``) the largest index, and ``np.take`` at
constant indices what the same indices in a subscript need. :func:`least_size` is
their largest.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

_SIZE_CALLS = {"len", "shape", "size"}                # len(x), np.shape(x), np.size(x)
_PASSING_CALLS = {"int", "float", "min", "max", "abs", "round", "prod", "bool", "divmod"}
_DECIDING_CALLS = {"min", "max", "round", "int", "bool", "divmod", "floor", "ceil"}


def size_decision(module, fname, allowed=()):
    """``(node, function name)`` of the first decision on a size in ``fname`` or the functions it
    calls with sizes, or None; the nodes ``allowed`` are not decisions (a size divided exactly:
    :mod:`adcompiler.aot.divisions`)."""
    pending, done = [(fname, frozenset())], set()
    while pending:
        name, params = pending.pop()
        stmt = module.definitions.get(name)
        if (name, params) in done or not isinstance(stmt, ast.FunctionDef):
            continue
        done.add((name, params))
        found, calls = _Function(stmt, _names(stmt, params), allowed).scan()
        if found is not None:
            return found, name
        pending += [c for c in calls if c[0] in module.functions]
    return None


@dataclass
class Least:
    """The smallest sizes a function's constant slice bounds and indices need: ``slots`` by
    ``(parameter, axis)`` for its own subscripts of its parameters (an axis below 0 counts from
    the end, after an ``...``), ``anywhere`` for every size (other subscripts: which size they
    bound is not known). 2 at least: every other size keeps its broadcasting meaning."""

    slots: dict = field(default_factory=dict)
    anywhere: int = 2

    def need(self, where, size):
        """Raise the size ``where`` (a slot, or None: every size) needs to ``size``."""
        if where is None:
            self.anywhere = max(self.anywhere, size)
        elif size > self.slots.get(where, 2):
            self.slots[where] = size

    def largest(self) -> int:
        return max([self.anywhere, *self.slots.values()])

    def resolve(self, ranks) -> tuple:
        """``(slots, anywhere)``: ``{(parameter, axis): size}`` with the axes counted from the
        start, for parameters of these ranks (``{name: rank}``, arrays only), each at least
        ``anywhere``; a slot that names no such axis counts for every size."""
        out, anywhere = {}, self.anywhere
        for (param, axis), size in self.slots.items():
            rank = ranks.get(param)
            if rank is not None and -rank <= axis < rank:
                key = (param, axis % rank)
                out[key] = max(out.get(key, 2), size)
            else:
                anywhere = max(anywhere, size)
        return {k: max(v, anywhere) for k, v in out.items()}, anywhere


def least_size(module, fname) -> int:
    """The smallest size that every size of the function fits (conservatively, one for all)."""
    return least_sizes(module, fname).largest()


def least_sizes(module, fname) -> Least:
    """The smallest sizes for which the function's constant slice bounds do not clip and its
    constant indices are in bounds: ``x[:5]`` and ``x[-5:]`` need 5, ``x[2]`` needs 3 and
    ``x[-3]`` 3, per axis of x for a parameter x the function never rebinds, and for every size
    in the module's functions it calls and on any other value."""
    least, pending, seen = Least(), [fname], set()
    while pending:
        stmt = module.definitions.get(pending.pop())
        if not isinstance(stmt, ast.FunctionDef) or stmt.name in seen:
            continue
        params = _own_parameters(stmt) if stmt.name == fname else set()
        seen.add(stmt.name)
        for node in ast.walk(stmt):
            if isinstance(node, ast.Subscript) and not _indexes_a_shape(node.value):
                base = node.value.id if isinstance(node.value, ast.Name) and \
                    node.value.id in params else None
                for axis, size in _needs(module, node.slice):
                    least.need(None if base is None or axis is None else (base, axis), size)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                pending.append(node.func.id)
            elif isinstance(node, ast.Call) and _is_roll(node):
                for shift in _roll_shifts(module, node):   # lowered as slices at shift % n
                    least.need(None, abs(shift) + 1)       # (x[3:], x[:3]): n past the shift
            elif isinstance(node, ast.Call) and _is_split(node):
                for at in _split_indices(module, node):    # np.split(x, [2, 5]): x[2:5]
                    least.need(None, abs(at))
            elif isinstance(node, ast.Call) and _named(node, "take"):
                for at in _split_indices(module, node):    # np.take(x, [0, 2]): x[2] needs 3
                    least.need(None, at + 1 if at >= 0 else -at)
    return least


_SPLITS = {"split", "array_split", "hsplit", "vsplit", "dsplit"}


def _is_split(call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr in _SPLITS


def _named(call, name) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == name


def _split_indices(module, call) -> list:
    """The constant indices of an ``np.split(a, [i, j], ...)`` or ``np.take(a, [i, j])`` call
    (a count gives none)."""
    where = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg in ("indices_or_sections", "indices")), None)
    if not isinstance(where, (ast.List, ast.Tuple)):
        return []
    return [v for v in (_constant_int(module, item) for item in where.elts) if v is not None]


def _is_roll(call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == "roll"


def _roll_shifts(module, call) -> list:
    """The constant shifts of an ``np.roll(a, shift, ...)`` call (a tuple's items)."""
    shift = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == "shift"), None)
    items = shift.elts if isinstance(shift, ast.Tuple) else [shift]
    return [v for v in (_constant_int(module, item) for item in items) if v is not None]


def _needs(module, index) -> list:
    """``(axis or None, size)`` for each constant bound or index of a subscript: the axis it
    indexes (below 0 from the end) where the items around it tell, and the size it needs."""
    items = index.elts if isinstance(index, ast.Tuple) else [index]
    widths = [_width(module, item) for item in items]
    out = []
    for k, item in enumerate(items):
        if isinstance(item, ast.Slice):
            size = max(abs(_constant_int(module, b) or 0) for b in (item.lower, item.upper))
        else:
            at = _constant_int(module, item)
            size = 0 if at is None else at + 1 if at >= 0 else -at
        if size <= 2:
            continue
        if None not in widths[:k]:
            out.append((sum(widths[:k]), size))
        elif any(_is_ellipsis(i) for i in items[:k]) and None not in widths[k + 1:]:
            out.append((-1 - sum(widths[k + 1:]), size))
        else:
            out.append((None, size))
    return out


def _width(module, item):
    """How many axes a subscript's item indexes: 1 for a slice or a constant integer, 0 for
    ``None``; None when not known here (``...``, an array, a variable)."""
    if isinstance(item, ast.Slice) or _constant_int(module, item) is not None:
        return 1
    return 0 if isinstance(item, ast.Constant) and item.value is None else None


def _is_ellipsis(item) -> bool:
    return isinstance(item, ast.Constant) and item.value is Ellipsis


def _own_parameters(stmt) -> set:
    """The function's parameters that name its arguments everywhere in it: never assigned,
    deleted, imported over or shadowed by a nested function's, a lambda's or a handler's."""
    args = stmt.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.discard(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and \
                node is not stmt:
            inner = node.args
            names -= {a.arg for a in inner.posonlyargs + inner.args + inner.kwonlyargs +
                      [inner.vararg, inner.kwarg] if a is not None}
            names.discard(getattr(node, "name", None))
        elif isinstance(node, ast.alias):
            names.discard((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.ExceptHandler, ast.ClassDef, ast.MatchAs, ast.MatchStar)):
            names.discard(node.name)
        elif isinstance(node, ast.MatchMapping):
            names.discard(node.rest)
    return names


def _indexes_a_shape(node) -> bool:
    """``x.shape[1]``, ``np.shape(x)[1]``: an index into the rank, not into a size."""
    return isinstance(node, ast.Attribute) and node.attr in ("shape", "strides") or \
        isinstance(node, ast.Call) and _called(node) == "shape"


def _constant_int(module, node):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _constant_int(module, node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant):
        value = node.value
    elif isinstance(node, ast.Name):
        value = module.namespace.get(node.id)
    else:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Function:
    """One function's size-derived names (a fixed point over its assignments) and decisions."""

    def __init__(self, stmt, tainted_params, allowed=()):
        self.stmt, self.tainted, self.allowed = stmt, set(tainted_params), set(allowed)

    def scan(self):
        self._propagate()
        calls = []
        for node in ast.walk(self.stmt):
            if self._decides(node):
                return node, calls
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                calls.append((node.func.id, self._passed(node)))
        return None, calls

    def _propagate(self):
        before = None
        while before != self.tainted:
            before = set(self.tainted)
            for node in ast.walk(self.stmt):
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if self.sized(node.value):
                        self.tainted |= {n.id for t in targets for n in ast.walk(t)
                                         if isinstance(n, ast.Name)}
                elif isinstance(node, (ast.For, ast.comprehension)) and self.sized(node.iter):
                    self.tainted |= {n.id for n in ast.walk(node.target)
                                     if isinstance(n, ast.Name)}

    def sized(self, node) -> bool:
        """Built from sizes (at least one), constants and arithmetic on them."""
        return self._size_expr(node) == "sized"

    def _size_expr(self, node):
        """"sized", "constant", or None (an array, a float parameter...)."""
        if isinstance(node, ast.Constant):
            return "constant"
        if isinstance(node, ast.Name):
            return "sized" if node.id in self.tainted else None
        if isinstance(node, ast.Attribute):
            return "sized" if node.attr in ("shape", "size") else None
        if isinstance(node, ast.Call):
            name = _called(node)
            if name == "len" and node.args and isinstance(node.args[0], ast.Attribute) \
                    and node.args[0].attr == "shape":
                return "constant"  # len(x.shape): the rank, fixed by the signature
            if name in _SIZE_CALLS:
                return "sized"
            if name not in _PASSING_CALLS and name != "range":
                return None
            parts = list(node.args)
        elif isinstance(node, ast.Subscript):
            parts = [node.value]
        elif isinstance(node, ast.BinOp):
            parts = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp):
            parts = [node.operand]
        elif isinstance(node, (ast.Tuple, ast.List)):
            parts = list(node.elts)
        else:
            return None
        kinds = [self._size_expr(p) for p in parts]
        if None in kinds:
            return None
        return "sized" if "sized" in kinds else "constant"

    def _decides(self, node) -> bool:
        if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            return self.sized(node.test)
        if isinstance(node, ast.Compare):
            return any(self.sized(x) for x in [node.left, *node.comparators])
        if isinstance(node, ast.BoolOp):
            return any(self.sized(x) for x in node.values)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod)):
            return node not in self.allowed and (self.sized(node.left) or self.sized(node.right))
        if isinstance(node, ast.Call) and _called(node) in _DECIDING_CALLS:
            return any(self.sized(a) for a in node.args)
        return False

    def _passed(self, call) -> frozenset:
        """The parameters of the called module function that receive sizes (by position or
        keyword; positions are named once the callee's definition is read)."""
        return frozenset([i for i, a in enumerate(call.args) if self.sized(a)] +
                         [k.arg for k in call.keywords if k.arg and self.sized(k.value)])


def _names(stmt, passed) -> set:
    """Parameter names from positions and keywords."""
    positional = [a.arg for a in stmt.args.posonlyargs + stmt.args.args]
    return {positional[p] if isinstance(p, int) and p < len(positional) else p for p in passed
            if not isinstance(p, int) or p < len(positional)}


def _called(call):
    func = call.func
    return func.id if isinstance(func, ast.Name) else \
        func.attr if isinstance(func, ast.Attribute) else None
