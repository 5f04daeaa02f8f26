"""Where a user's function decides on its inputs' sizes while compiling, read from its source.

The compiler resolves such decisions (``if x.shape[0] > 3:``, ``min(len(x), 5)``) once, for the
sizes it compiles for, and leaves no trace of them in the generated code: comparing the code
compiled for several sizes cannot see them. Invariant: :func:`size_decision` finds every
comparison, test, ``min``/``max``/``//``/``%`` or conversion of a value computed from sizes
(``.shape``, ``.size``, ``len``) in the function and in the module's functions it calls (with
sizes passed to them), conservatively: a value is size-derived when it is built from sizes,
constants and arithmetic only, so array arithmetic never counts. :func:`least_size` is the
smallest size every constant slice bound and index fits (``x[:5]`` clips to the size below 5;
``x[2]`` needs 3), conservatively: any constant subscript counts but a shape's.
"""

from __future__ import annotations

import ast

_SIZE_CALLS = {"len", "shape", "size"}                # len(x), np.shape(x), np.size(x)
_PASSING_CALLS = {"int", "float", "min", "max", "abs", "round", "prod", "bool", "divmod"}
_DECIDING_CALLS = {"min", "max", "round", "int", "bool", "divmod", "floor", "ceil"}


def size_decision(module, fname):
    """``(node, function name)`` of the first decision on a size in ``fname`` or the functions it
    calls with sizes, or None."""
    pending, done = [(fname, frozenset())], set()
    while pending:
        name, params = pending.pop()
        stmt = module.definitions.get(name)
        if (name, params) in done or not isinstance(stmt, ast.FunctionDef):
            continue
        done.add((name, params))
        found, calls = _Function(stmt, _names(stmt, params)).scan()
        if found is not None:
            return found, name
        pending += [c for c in calls if c[0] in module.functions]
    return None


def least_size(module, fname) -> int:
    """The smallest size for which the function's constant slice bounds do not clip and its
    constant indices are in bounds (at least 2: every other size keeps its broadcasting
    meaning): ``x[:5]`` and ``x[-5:]`` need 5, ``x[2]`` needs 3 and ``x[-3]`` 3, in the
    function and the module's functions it calls."""
    least, pending, seen = 2, [fname], set()
    while pending:
        stmt = module.definitions.get(pending.pop())
        if not isinstance(stmt, ast.FunctionDef) or stmt.name in seen:
            continue
        seen.add(stmt.name)
        for node in ast.walk(stmt):
            if isinstance(node, ast.Slice):
                for bound in (node.lower, node.upper):
                    least = max(least, abs(_constant_int(module, bound) or 0))
            elif isinstance(node, ast.Subscript) and not _indexes_a_shape(node.value):
                items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                for item in items:
                    index = _constant_int(module, item)
                    if index is not None:
                        least = max(least, index + 1 if index >= 0 else -index)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                pending.append(node.func.id)
    return least


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

    def __init__(self, stmt, tainted_params):
        self.stmt, self.tainted = stmt, set(tainted_params)

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
            return self.sized(node.left) or self.sized(node.right)
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
