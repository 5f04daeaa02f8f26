"""Check an emitted plan: no write into a pool buffer another live name holds, none returned.

The model: a forward may-points-to analysis maps each name of a generated function to the
abstract objects it may hold: each pool buffer (from the pool's tuple unpacking ``_buf0, ... =
_f_buffers.pop() if ...``), each parameter, each module-level name it reads without binding (a
constant) and each list it makes (``saved = []``: what ``saved.append(h)`` adds is the list's
contents, which ``saved[k]`` and ``saved.pop()`` give back). Views keep the object (``a[...]``,
``.T``, ``.reshape``, ``np.asarray``, ``np.broadcast_to``...); a call known to return a new
array (a ufunc or arithmetic without ``out=``, ``np.zeros``, ``.copy()``, a reduction,
``float()``, ``math.*``, a CuPy kernel the module defines, a helper of the module whose result
holds none of its parameters, ``_recycled(...)``: a kept result nothing else holds, by its
reference count, or a new array, :mod:`.recycled`) holds nothing; another call may hold any of
its arguments; an ``out=`` call holds its ``out`` target. ``cs = _buf2`` starts a stack, whose ``cs[i]`` are its
rows. A backward liveness analysis says which names are read after each statement before being
rebound, and where: ``out=NAME`` (re)defines NAME's contents, the identifiers of an
``ne.evaluate('...')`` string are reads, the pool's give-back (``_f_buffers.append((_buf0,
...))``) and a stack's start are not. Both run to a fixpoint over ``for``/``while`` (with
``break``/``continue``), ``if``/``else`` and ``with``. A :class:`PlanError` reports a write
(``out=`` of any call, ``n += v``, ``n[...] = v``, ``np.add.at(n, ...)``, ``np.copyto``,
``n.fill``, poisoned code's ``_poison(_buf1)``, which reads nothing) into a pool buffer that
another name live after the statement may hold (the names the statement writes through or binds
are no conflict; a row written through a stack conflicts only with holders of the buffer as a
whole or of another stack's rows in it; a poison conflicts with every holder); a ``return`` of
a value that may hold a pool buffer; a write into a parameter's or a constant's array; a read
of a pool name before anything is written into its buffer, and a chain step (``np.cos(x,
out=_buf4)``) whose value no name reads (the chain's next step reads another buffer: an older
value). What it cannot see: the rows of one stack are not told apart (a row written while a
name holds that row from an earlier fill of the same stack passes); writes inside a callee (an
unknown call's, a numba kernel's: decorated functions are not checked); aliasing through
objects other than lists and tuples (a dict is a list here, an attribute keeps its object);
names bound by ``exec``. An exception path in ``try`` is approximated, and a may-analysis flags
a conflict on a path that never runs (a ``while`` loop, or a ``for`` loop over a traced range,
may run no iteration; a ``for`` over a constant non-empty range runs one). Two paths are told
apart in one case: a name bound once at the top level and tested by two ``if`` statements or
more (a gradient's ``if t8:`` over its forward part's ``if t8:``) takes the same branch at
each, so the checks run once for each of its values (for up to four such names). An index on
every axis of a pool buffer of known rank (``v[k]`` of a 1-D buffer) gives a new value, not
a view.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import re

import numpy as np

_MODULES = {"np", "math", "ne", "cp", "cupyx", "numba", "scipy", "da"}  # da: dask.array
# every function of theirs returns a new value (scipy.special.erf, scipy.linalg's without out=)
_FRESH_MODULES = {"math", "ne", "numba", "scipy"}
_FRESH_NP = {
    "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like",
    "array", "copy", "arange", "linspace", "logspace", "eye", "identity", "tri", "concatenate",
    "stack", "vstack", "hstack", "dstack", "column_stack", "where", "sum", "mean", "prod",
    "max", "min", "amax", "amin", "std", "var", "nansum", "nanmean", "dot", "vdot", "einsum",
    "tensordot", "outer", "inner", "kron", "cumsum", "cumprod", "diff", "clip", "round",
    "around", "sort", "argsort", "argmax", "argmin", "take", "take_along_axis", "tile",
    "repeat", "pad", "any", "all", "allclose", "isclose", "array_equal", "shares_memory",
    "may_share_memory", "searchsorted", "unique", "cross", "trace", "triu", "tril", "roll",
    "nan_to_num", "interp", "count_nonzero", "bincount", "select", "median", "average",
    "percentile", "quantile", "cov", "corrcoef", "convolve", "correlate", "polyval",
    "linalg", "fft", "random", "float64", "float32", "int64", "int32", "bool_", "dtype",
    "errstate", "result_type", "promote_types", "ndim", "shape", "size", "iinfo", "finfo",
    "isscalar", "logsumexp", "meshgrid", "indices", "ix_", "nonzero", "flatnonzero",
    "argwhere", "histogram", "digitize", "cumulative_sum", "matrix_power", "float_power"}
_FRESH_METHODS = {
    "copy", "sum", "mean", "prod", "max", "min", "std", "var", "any", "all", "argmax", "argmin",
    "cumsum", "cumprod", "dot", "tolist", "item", "round", "clip", "flatten", "nonzero",
    "conj", "conjugate", "argsort", "trace", "tobytes", "astype", "count", "index"}
_SCALAR_ATTRS = {"shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides"}
_FRESH_BUILTINS = {"float", "int", "bool", "complex", "len", "range", "str", "repr", "abs",
                   "round", "sum", "isinstance", "hash", "id", "print", "divmod", "pow",
                   "callable", "type", "issubclass", "format", "ord", "chr", "_sum_to",
                   "_last_writes", "_add_rows"}
_WRITE_FUNCS = {"copyto", "put", "putmask", "place", "fill_diagonal", "scatter_add",
                "scatter_max", "scatter_min"}  # (module functions) write their first argument
_WRITE_METHODS = {"fill", "put", "sort", "itemset", "partition", "resize"}  # of an array
_LIST_ADDS = {"append", "extend", "insert"}
_KERNELS = {"ElementwiseKernel", "ReductionKernel", "RawKernel"}
_POISON = "_poison"  # poisoned code's fill (adcompiler.runtime.poison): writes, never reads
_BUILTINS = frozenset(dir(builtins))
_IDENT = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


_FIELDS: dict = {}  # AST class -> its child fields but ``ctx``


def _walk(node) -> list:
    """``node`` and every node under it (``ast.walk``'s, twice as fast: no contexts)."""
    out = [node]
    for n in out:
        fields = _FIELDS.get(n.__class__)
        if fields is None:
            fields = _FIELDS[n.__class__] = tuple(f for f in n._fields if f != "ctx")
        for f in fields:
            v = getattr(n, f, None)
            if v.__class__ is list:
                out.extend(x for x in v if isinstance(x, ast.AST))
            elif isinstance(v, ast.AST):
                out.append(v)
    return out


class PlanError(AssertionError):
    """An emitted plan writes a buffer a live name still holds, returns a pool buffer, or
    writes into the caller's (or a constant's) array."""


def verify_plan(source: str) -> None:
    """Raise :class:`PlanError` where a function of the generated module ``source`` breaks
    one of the rules in the module docstring; return None where every function keeps them."""
    tree = ast.parse(source)
    lines = source.splitlines()
    module = _ModuleInfo(tree)
    for fn in module.functions:
        fn.lines = lines
        _check_function(fn)


# ---- the function and its module ------------------------------------------------------------

class _ModuleInfo:
    """Module-level names a function may read without binding them (imports, helpers), and
    each helper's summary: the positions of the parameters its result may hold."""

    def __init__(self, tree):
        self.names = set(_MODULES) | _BUILTINS
        self.summaries: dict = {}
        self.functions: list = []  # the undecorated ones, as _Fn
        self.kernels: set = set()  # CuPy's kernels (_k0 = cp.ElementwiseKernel(...)): new arrays
        self.ndims: dict = {}      # pool list's name -> its buffers' numbers of axes, in order
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("_new_") \
                    and node.name.endswith("_buffers"):
                self.ndims[node.name[len("_new"):]] = _buffer_ndims(node)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.Assign):
                names = {t.id for t in node.targets if isinstance(t, ast.Name)}
                self.names.update(n for n in names if n.endswith("_buffers"))
                if isinstance(node.value, ast.Call) and \
                        (_dotted(node.value.func) or ("",))[-1] in _KERNELS:
                    self.kernels |= names
                    self.names |= names
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self.names.add(node.name)
                if not node.decorator_list:
                    self.functions.append(_Fn(node, [], self))
                    self.summaries[node.name] = _summary(self.functions[-1])


def _buffer_ndims(maker) -> list:
    """Each buffer's number of axes, from ``return (np.empty((64, 64), dtype=...), ...)``
    (None where it is not spelled so)."""
    returned = [s.value for s in maker.body if isinstance(s, ast.Return)]
    elts = returned[0].elts if returned and isinstance(returned[0], ast.Tuple) else []
    return [len(e.args[0].elts) if isinstance(e, ast.Call) and e.args
            and isinstance(e.args[0], ast.Tuple) else None for e in elts]


def _summary(fn) -> frozenset:
    """The positions of a helper's parameters whose arrays its result may hold."""
    flow = _PointsTo(fn)
    flow.block(fn.node.body, fn.entry_state())
    params = [a.arg for a in fn.node.args.args]
    return frozenset(i for i, p in enumerate(params) if ("param", p) in flow.returned)


class _Fn:
    """One generated function: its parameters, pool buffers and the names it binds."""

    def __init__(self, node, lines, module):
        self.node, self.lines, self.module = node, lines, module
        args = node.args
        self.params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        self.params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        self.bound = set(self.params)
        self.pool: dict = {}       # pool name -> its buffer's object
        self.ndims: dict = {}      # pool name -> its buffer's number of axes (None: unknown)
        self.pool_lists: set = set()
        for sub in _walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                self.bound.add(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.ClassDef)) and sub is not node:
                self.bound.add(sub.name)
            elif isinstance(sub, ast.Assign) and _pool_take(sub):
                self.pool_lists.add(_pool_take(sub))
                ndims = module.ndims.get(_pool_take(sub), [])
                for i, t in enumerate(sub.targets[0].elts):
                    self.pool[t.id] = ("buf", t.id, "whole", None)
                    self.ndims[t.id] = ndims[i] if i < len(ndims) else None
        self.slices = {t.id for sub in _walk(node) if isinstance(sub, ast.Assign)
                       and isinstance(sub.value, ast.Call) and _dotted(sub.value.func) == ("slice",)
                       for t in sub.targets if isinstance(t, ast.Name)}

    def copies_entries(self, obj, index) -> bool:
        """Whether ``b[index]`` of a whole pool buffer ``obj`` is a new value: an index on each
        of its axes by numbers or integer arrays (no slice, None or ``...``, no name bound to
        a ``slice``) gives a scalar or a gathered copy, never a view (``v2[k]`` of a 1-D
        buffer stored in a list holds no part of it)."""
        ndim = self.ndims.get(obj[1]) if obj[0] == "buf" and obj[2] == "whole" else None
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        viewing = any(isinstance(i, (ast.Slice, ast.Starred)) or (isinstance(i, ast.Constant)
                      and i.value in (None, Ellipsis)) or (isinstance(i, ast.Name)
                      and i.id in self.slices) for i in items)
        return ndim is not None and not viewing and len(items) >= ndim

    def entry_state(self) -> dict:
        return {p: frozenset({("param", p)}) for p in self.params}

    def text(self, lineno) -> str:
        return self.lines[lineno - 1].strip() if 0 < lineno <= len(self.lines) else "?"

    def free(self, name):
        """The object of a name read but never bound here: a constant, or nothing (a
        module, a builtin, a helper)."""
        if name in self.bound or name in self.module.names or name in self.pool_lists:
            return frozenset()
        return frozenset({("global", name)})


def _pool_take(stmt):
    """The pool list's name where ``stmt`` is ``_buf0, ... = P.pop() if P else _new_P()``."""
    value, targets = stmt.value, stmt.targets
    if not (len(targets) == 1 and isinstance(targets[0], ast.Tuple)
            and all(isinstance(t, ast.Name) for t in targets[0].elts)):
        return None
    call = value.body if isinstance(value, ast.IfExp) else value
    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "pop" and isinstance(call.func.value, ast.Name)
            and call.func.value.id.endswith("_buffers")):
        return call.func.value.id
    return None


def _starts_stack(stmt, fn) -> bool:
    """``cs = _buf2``: a stack (filled row by row) in a pool buffer."""
    return (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name)
            and stmt.value.id in fn.pool)


def _is_give_back(stmt, fn) -> bool:
    """``_f_buffers.append((_buf0, ...))``: the pool takes its buffers back (not a read)."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    func = stmt.value.func
    return (isinstance(func, ast.Attribute) and func.attr == "append"
            and isinstance(func.value, ast.Name) and func.value.id in fn.pool_lists)


# ---- may-points-to ----------------------------------------------------------------------------
# A state maps each name (and ("c", list site) for a list's contents) to a frozenset of objects:
# ("param", p), ("global", g), ("list", site), ("buf", pool name, kind, site) with kind "whole"
# (the buffer's value), "stack" (a stack filled row by row from ``cs = _bufK`` at site) or "row"
# (one of that stack's rows).

_EMPTY = frozenset()


def _join(a, b):
    """The union of two states (None: unreachable)."""
    if a is None or b is None:
        return b if a is None else a
    if a is b:
        return a
    out = dict(a)
    for k, v in b.items():
        w = out.get(k)
        if w is not v:
            out[k] = v if w is None else w | v
    return out


def _join_all(states):
    out = None
    for s in states:
        out = _join(out, s)
    return out


def _element(objs, st) -> frozenset:
    """What ``x[i]`` (or an iteration over ``x``) may hold: a list's contents, a stack's row,
    the same array otherwise (a view)."""
    out = set()
    for o in objs:
        if o[0] == "list":
            out |= st.get(("c", o[1]), _EMPTY)
        elif o[0] == "buf" and o[2] == "stack":
            out.add(("buf", o[1], "row", o[3]))
        else:
            out.add(o)
    return frozenset(out)


def held(objs, st) -> frozenset:
    """``objs`` and everything the lists among them hold, transitively."""
    out, todo = set(), list(objs)
    while todo:
        o = todo.pop()
        if o in out:
            continue
        out.add(o)
        if o[0] == "list":
            todo.extend(st.get(("c", o[1]), ()))
    return frozenset(out)


def _add_contents(lists, objs, st):
    for o in lists:
        if o[0] == "list":
            key = ("c", o[1])
            st[key] = st.get(key, _EMPTY) | objs


class _Exprs:
    """The objects an expression may evaluate to, in a state it updates with the effects of
    list literals and ``l.append(v)``."""

    def __init__(self, fn):
        self.fn = fn

    def pts(self, e, st) -> frozenset:
        if e is None or isinstance(e, (ast.Constant, ast.Lambda, ast.JoinedStr)):
            return _EMPTY
        if isinstance(e, ast.Name):
            return st.get(e.id, _EMPTY) if e.id in self.fn.bound else self.fn.free(e.id)
        if isinstance(e, ast.Subscript):
            self.pts(e.slice, st)
            base = self.pts(e.value, st)
            return _element(frozenset(o for o in base if not self.fn.copies_entries(o, e.slice)),
                            st)
        if isinstance(e, ast.Attribute):
            base = self.pts(e.value, st)
            return _EMPTY if e.attr in _SCALAR_ATTRS else base
        if isinstance(e, ast.Call):
            return self.call(e, st)
        if isinstance(e, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.SetComp,
                          ast.DictComp)):
            return self.new_list(e, st)
        if isinstance(e, (ast.Tuple, ast.BoolOp, ast.IfExp, ast.Starred, ast.GeneratorExp,
                          ast.NamedExpr)):
            return self.union(e, st)
        if isinstance(e, ast.BinOp):  # arithmetic is new; list + list keeps the lists
            objs = self.pts(e.left, st) | self.pts(e.right, st)
            return frozenset(o for o in objs if o[0] == "list")
        for sub in ast.iter_child_nodes(e):  # UnaryOp, Compare...: new values
            self.pts(sub, st)
        return _EMPTY

    def union(self, e, st) -> frozenset:
        """What any part of ``e`` may hold (a tuple, ``a or b``, ``a if c else b``...)."""
        if isinstance(e, ast.NamedExpr):
            objs = self.pts(e.value, st)
            st[e.target.id] = objs
            return objs
        if isinstance(e, ast.IfExp):
            self.pts(e.test, st)
            return self.pts(e.body, st) | self.pts(e.orelse, st)
        if isinstance(e, ast.GeneratorExp):
            return self.comprehension(e, st)
        parts = e.elts if isinstance(e, ast.Tuple) else (
            e.values if isinstance(e, ast.BoolOp) else [e.value])
        out = _EMPTY
        for p in parts:
            out |= self.pts(p, st)
        return out

    def comprehension(self, e, st) -> frozenset:
        """Whatever the names a comprehension reads hold, and their elements."""
        out = _EMPTY
        for sub in _walk(e):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                objs = self.pts(sub, st)
                out |= objs | _element(objs, st)
        return out

    def new_list(self, e, st) -> frozenset:
        """A list (dict, set) made here: one object per site, holding what its items hold."""
        obj = ("list", (e.lineno, e.col_offset))
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.DictComp)):
            items = self.comprehension(e, st)
        else:
            items = _EMPTY
            for p in (e.values if isinstance(e, ast.Dict) else e.elts):
                items |= self.pts(p, st)
        if isinstance(e, ast.Dict):
            for k in e.keys:
                self.pts(k, st)
        _add_contents([obj], items, st)
        return frozenset({obj})

    def args(self, call, st) -> tuple:
        """([each positional argument's objects], {keyword: its objects}), ``out`` aside."""
        pos = [self.pts(a, st) for a in call.args]
        kws = {k.arg: self.pts(k.value, st) for k in call.keywords if k.arg != "out"}
        return pos, kws

    def call(self, call, st) -> frozenset:
        pos, kws = self.args(call, st)
        out = next((k.value for k in call.keywords if k.arg == "out"), None)
        if out is not None:
            return self.pts(out, st)
        func = call.func
        every = frozenset().union(*pos, *kws.values())
        if isinstance(func, ast.Name):
            return self.named_call(func.id, call, pos, kws, every)
        dotted = _dotted(func)
        if dotted is not None and dotted[0] in _MODULES and dotted[0] not in self.fn.bound:
            return _EMPTY if _fresh_module_call(dotted, call) else every
        if isinstance(func, ast.Attribute):
            return self.method(func, call, pos, every, st)
        return every | self.pts(func, st)

    def named_call(self, name, call, pos, kws, every) -> frozenset:
        """A call of a name: a builtin, a helper of this module (its summary), or unknown."""
        if name in self.fn.bound:
            return every
        if name in _FRESH_BUILTINS or name in self.fn.module.kernels or name == "_recycled":
            return _EMPTY   # _recycled: an array nothing else holds (its count checked), or new
        summary = self.fn.module.summaries.get(name)
        if summary is not None:
            return frozenset().union(*(pos[i] for i in summary if i < len(pos)))
        return every

    def method(self, func, call, pos, every, st) -> frozenset:
        """``x.m(...)``: a list's ``pop``/``append``..., an array's view or new value."""
        base = self.pts(func.value, st)
        m = func.attr
        lists = frozenset(o for o in base if o[0] == "list")
        out = _EMPTY
        if lists and m in _LIST_ADDS:
            items = _element(every, st) if m == "extend" else every
            _add_contents(lists, frozenset().union(*pos[1:]) if m == "insert" else items, st)
        if lists and m in ("pop", "__getitem__", "get"):
            out = _element(lists, st)
        if m in _FRESH_METHODS and not (m == "astype" and _no_copy(call)):
            return out | (lists if m == "copy" else _EMPTY)  # a list's copy: the same arrays
        if m in _LIST_ADDS:
            return out
        return out | (base - lists) | every  # a view (reshape, .T, transpose...) or unknown


def _dotted(e):
    """``("np", "add", "at")`` for ``np.add.at``; None where ``e`` is not such a chain."""
    parts = []
    while isinstance(e, ast.Attribute):
        parts.append(e.attr)
        e = e.value
    if not isinstance(e, ast.Name):
        return None
    return (e.id, *reversed(parts))


def _no_copy(call) -> bool:
    return any(k.arg == "copy" and isinstance(k.value, ast.Constant) and not k.value.value
               for k in call.keywords)


def _fresh_module_call(dotted, call) -> bool:
    """Whether ``np.tanh(x)``, ``math.exp(y)``, ``np.add.reduce(z)``... returns a new value."""
    if dotted[0] in _FRESH_MODULES or len(dotted) < 2 or dotted[:2] == ("cupyx", "scipy"):
        return True
    name = dotted[1]
    if name in ("array", "asarray") and (_no_copy(call) or name == "asarray"):
        return False
    if len(dotted) > 2:  # np.add.reduce, np.linalg.inv, np.random.normal: new arrays
        return isinstance(getattr(np, name, None), np.ufunc) or name in _FRESH_NP
    return name in _FRESH_NP or isinstance(getattr(np, name, None), np.ufunc)


class _PointsTo:
    """Forward may-points-to over a function body: ``before[id(stmt)]`` is the union of the
    states any run reaches the statement in; ``returned``: what a ``return`` may give back."""

    def __init__(self, fn, needed=frozenset(), assume=None):
        self.fn, self.exprs = fn, _Exprs(fn)
        self.assume = assume or {}  # test name -> its truth value in this run (see _tests_once)
        self.needed = needed  # the ids of the statements whose state ``before`` records
        self.before: dict = {}
        self.loops: list = []  # per enclosing loop: [break states, continue states]
        self.returned = _EMPTY

    def block(self, stmts, st):
        for s in stmts:
            if st is None:
                return None
            if id(s) in self.needed:
                self.before[id(s)] = _join(self.before.get(id(s)) or {}, st)
            handler = getattr(self, "_" + type(s).__name__, None)
            st = handler(s, st) if handler else self._simple(s, st)  # (st: this block's own)
        return st

    def _simple(self, s, st):
        """A statement without targets or blocks: its expressions' effects only."""
        for sub in ast.iter_child_nodes(s):
            if isinstance(sub, ast.expr):
                self.exprs.pts(sub, st)
        if isinstance(s, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
            for name in _bound_by(s):
                st[name] = _EMPTY
        return st

    def _Assign(self, s, st):
        if _pool_take(s):
            for t in s.targets[0].elts:
                st[t.id] = frozenset({self.fn.pool[t.id]})
            return st
        if _starts_stack(s, self.fn):  # cs = _buf2
            objs = frozenset({("buf", s.value.id, "stack", s.lineno)})
            for t in s.targets:
                self.bind(t, objs, st)
            return st
        pairs = _pairwise(s.targets, s.value)
        if pairs is not None:
            objs = [self.exprs.pts(v, st) for _, v in pairs]
            for (t, _), o in zip(pairs, objs):
                self.bind(t, o, st)
            return st
        objs = self.exprs.pts(s.value, st)
        for t in s.targets:
            self.bind(t, objs, st)
        return st

    def _AnnAssign(self, s, st):
        if s.value is not None:
            self.bind(s.target, self.exprs.pts(s.value, st), st)
        return st

    def _AugAssign(self, s, st):
        objs = self.exprs.pts(s.value, st)  # in place: the target keeps its arrays
        if isinstance(s.target, ast.Name):
            target = st.setdefault(s.target.id, _EMPTY)
            _add_contents(target, _element(objs, st), st)  # saved += [h]: a list grows
        return st

    def _Delete(self, s, st):
        for t in s.targets:
            if isinstance(t, ast.Name):
                st.pop(t.id, None)
        return st

    def bind(self, target, objs, st):
        """Bind ``target`` to ``objs``: a name; each name of a tuple target (all of them);
        an item of a list (its contents grow)."""
        if isinstance(target, ast.Name):
            st[target.id] = objs
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self.bind(t, _element(objs, st) | objs, st)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, objs, st)
        elif isinstance(target, ast.Subscript):
            self.exprs.pts(target.slice, st)
            _add_contents(self.exprs.pts(target.value, st), objs, st)

    def _Return(self, s, st):
        self.returned |= held(self.exprs.pts(s.value, st), st)
        return None

    def _Raise(self, s, st):
        return None

    def _Break(self, s, st):
        self.loops[-1][0].append(st)
        return None

    def _Continue(self, s, st):
        self.loops[-1][1].append(st)
        return None

    def _If(self, s, st):
        self.exprs.pts(s.test, st)
        taken = _assumed(s.test, self.assume)
        if taken is not None:   # this run's value of a test computed once: one branch runs
            return self.block(s.body if taken else s.orelse, st)
        return _join(self.block(s.body, dict(st)), self.block(s.orelse, st))

    def _With(self, s, st):
        for item in s.items:
            objs = self.exprs.pts(item.context_expr, st)
            if item.optional_vars is not None:
                self.bind(item.optional_vars, objs, st)
        return self.block(s.body, st)

    def _Try(self, s, st):
        """Approximated: a handler may start from the state before or after the body."""
        end = self.block(s.body, dict(st))
        start = _join(st, end)
        ends = [self.block(s.orelse, end) if end is not None else None]
        ends += [self.block(h.body, dict(start)) for h in s.handlers]
        out = _join_all(ends)
        return self.block(s.finalbody, _join(out, start) if s.finalbody else out)

    _TryStar = _Try

    def _For(self, s, st):
        objs = self.exprs.pts(s.iter, st)
        head = st
        while True:
            self.loops.append(([], []))
            entry = dict(head)
            self.bind(s.target, _element(objs, entry), entry)
            end = self.block(s.body, entry)
            breaks, continues = self.loops.pop()
            after = _join_all([end, *continues])  # back at the header after an iteration
            new = _join(head, after)
            if new == head:
                break
            head = new
        leaving = after if _runs(s) else head
        return _join_all([self.block(s.orelse, dict(leaving)) if leaving else None, *breaks])

    def _While(self, s, st):
        head = st
        while True:
            tested = dict(head)
            self.exprs.pts(s.test, tested)
            self.loops.append(([], []))
            end = self.block(s.body, dict(tested))
            breaks, continues = self.loops.pop()
            new = _join_all([head, end, *continues])
            if new == head:
                break
            head = new
        exit_ = None if _always_true(s.test) else self.block(s.orelse, tested)
        return _join_all([exit_, *breaks])


def _runs(loop) -> bool:
    """Whether a ``for`` loop surely runs an iteration: ``range(3)``, ``reversed(range(1, 4))``
    (constant bounds); a traced ``range(k)`` may run none."""
    it = loop.iter
    if isinstance(it, ast.Call) and _dotted(it.func) == ("reversed",) and len(it.args) == 1:
        it = it.args[0]
    if not (isinstance(it, ast.Call) and _dotted(it.func) == ("range",) and not it.keywords):
        return False
    bounds = [a.value if isinstance(a, ast.Constant) else None for a in it.args]
    if not all(type(b) is int for b in bounds):
        return False
    try:
        return bool(range(*bounds))
    except (TypeError, ValueError):  # range() of no or of four arguments, a zero step
        return False


def _pairwise(targets, value):
    """``[(target, value)]`` for ``a, b = x, y`` (evaluated first, then bound); else None."""
    if (len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List))
            and isinstance(value, (ast.Tuple, ast.List))
            and len(targets[0].elts) == len(value.elts)
            and not any(isinstance(x, ast.Starred) for x in targets[0].elts + value.elts)):
        return list(zip(targets[0].elts, value.elts))
    return None


def _always_true(test) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value)


def _bound_by(s) -> list:
    if isinstance(s, (ast.FunctionDef, ast.ClassDef)):
        return [s.name]
    return [(a.asname or a.name).split(".")[0] for a in s.names]


# ---- liveness ---------------------------------------------------------------------------------
# A live map: name -> frozenset of the line numbers where it may be read next.

def _union(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, _EMPTY) | v
    return out


def _effect(exprs) -> tuple:
    """(the names ``exprs`` read, the names whose contents they define). Reads: Name loads
    (not the ``out=NAME`` a call writes without reading it: with ``where=`` it keeps, so reads,
    the entries it does not write) and the identifiers of an ``ne.evaluate('...')`` string.
    Defined: ``out=NAME`` of a call without ``where=``."""
    reads, defined, skip = set(), set(), set()
    for e in exprs:
        for sub in _walk(e):
            if isinstance(sub, ast.Call):
                outs = [k.value for k in sub.keywords
                        if k.arg == "out" and isinstance(k.value, ast.Name)]
                if isinstance(sub.func, ast.Name) and sub.func.id == _POISON:
                    outs += [a for a in sub.args if isinstance(a, ast.Name)]
                if not any(k.arg == "where" for k in sub.keywords):
                    skip.update(id(v) for v in outs)
                    defined.update(v.id for v in outs)
                if (_dotted(sub.func) or ())[-1:] == ("evaluate",) and sub.args \
                        and isinstance(sub.args[0], ast.Constant) \
                        and isinstance(sub.args[0].value, str):
                    reads.update(_IDENT.findall(sub.args[0].value))
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) \
                    and id(sub) not in skip:
                reads.add(sub.id)
    return reads, defined


def _reads(exprs) -> set:
    return _effect(exprs)[0]


def _target_names(target) -> set:
    """The names an assignment target binds (a subscript's base is read, not bound)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_target_names(t) for t in target.elts))
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return set()


def _simple_effect(s):
    """(names read, names bound or defined) of a statement without blocks."""
    if isinstance(s, (ast.Assign, ast.AnnAssign)):
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        exprs = [e for e in [s.value] + [t for t in targets if not isinstance(t, ast.Name)]
                 if e is not None]
        reads, defined = _effect(exprs)
        return reads, defined.union(*(_target_names(t) for t in targets))
    if isinstance(s, ast.AugAssign):
        reads, defined = _effect([s.target, s.value])
        return reads | _target_names(s.target), defined | _target_names(s.target)
    if isinstance(s, ast.Delete):
        return _reads([t for t in s.targets if not isinstance(t, ast.Name)]), \
            set().union(*(_target_names(t) for t in s.targets))
    if isinstance(s, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
        return set(), set(_bound_by(s))
    return _effect([x for x in ast.iter_child_nodes(s) if isinstance(x, ast.expr)])


class _Liveness:
    """Backward liveness: ``after[id(stmt)]`` maps each name read after ``stmt`` (before
    being rebound) to the lines of those next reads; for a compound statement, after its
    header (an ``if`` test, a loop's iteration step, a ``with`` item)."""

    def __init__(self, fn, assume=None):
        self.fn = fn
        self.assume = assume or {}
        self.after: dict = {}
        self.loops: list = []  # per enclosing loop: (live after it, live at its header)
        self.effects: dict = {}  # id(simple statement) -> (names read, names bound)

    def block(self, stmts, live):
        for s in reversed(stmts):
            handler = getattr(self, "_" + type(s).__name__, None)
            if handler is not None:
                live = handler(s, live)
                continue
            self.after[id(s)] = live
            if _is_give_back(s, self.fn):
                continue
            live = self.through(live, s, None)
        return live

    def through(self, live, s, exprs):
        """``live`` before statement ``s`` (before the header ``exprs`` of a compound one)."""
        effect = self.effects.get(id(s))
        if effect is None:
            effect = _simple_effect(s) if exprs is None else _effect(exprs)
            if _starts_stack(s, self.fn):  # cs = _buf2 takes the memory, reads no value
                effect = (set(), effect[1])
            self.effects[id(s)] = effect
        return _used(_kill(live, effect[1]), effect[0], s.lineno)

    def _Return(self, s, live):
        self.after[id(s)] = {}
        return _used({}, _reads([s.value] if s.value else []), s.lineno)

    def _Raise(self, s, live):
        self.after[id(s)] = {}
        return _used({}, _reads([e for e in (s.exc, s.cause) if e]), s.lineno)

    def _Break(self, s, live):
        self.after[id(s)] = self.loops[-1][0]
        return self.loops[-1][0]

    def _Continue(self, s, live):
        self.after[id(s)] = self.loops[-1][1]
        return self.loops[-1][1]

    def _If(self, s, live):
        taken = _assumed(s.test, self.assume)
        if taken is not None:
            inner = self.block(s.body if taken else s.orelse, live)
        else:
            inner = _union(self.block(s.body, live), self.block(s.orelse, live))
        self.after[id(s)] = inner
        return self.through(inner, s, [s.test])

    def _With(self, s, live):
        inner = self.block(s.body, live)
        bound = set().union(*(_target_names(i.optional_vars) for i in s.items
                              if i.optional_vars is not None))
        self.after[id(s)] = inner
        return self.through(_kill(inner, bound), s, [i.context_expr for i in s.items])

    def _Try(self, s, live):
        """Approximated: what a handler reads is live over the whole body."""
        end = self.block(s.finalbody, live)
        handlers = {}
        for h in s.handlers:
            handlers = _union(handlers, self.block(h.body, end))
        body = self.block(s.body, _union(self.block(s.orelse, end), handlers))
        self.after[id(s)] = body
        return _union(body, handlers)

    _TryStar = _Try

    def _For(self, s, live):
        head, bound = {}, _target_names(s.target)
        exit_ = self.block(s.orelse, live)
        while True:
            self.loops.append((live, head))
            body = self.block(s.body, head)
            self.loops.pop()
            targets = _reads([s.target]) if not isinstance(s.target, ast.Name) else set()
            entry = _used(_kill(body, bound), targets, s.lineno)  # live as an iteration starts
            new = _union(exit_, entry)
            if new == head:
                break
            head = new
        self.after[id(s)] = head
        return self.through(entry if _runs(s) else head, s, [s.iter])

    def _While(self, s, live):
        head = {}
        exit_ = {} if _always_true(s.test) else self.block(s.orelse, live)
        while True:
            self.loops.append((live, head))
            body = self.block(s.body, head)
            self.loops.pop()
            inner = _union(body, exit_)
            new = self.through(inner, s, [s.test])
            if new == head:
                break
            head = new
        self.after[id(s)] = inner
        return head


def _kill(live, names):
    return {k: v for k, v in live.items() if k not in names} if names else live


def _used(live, names, lineno):
    if not names:
        return live
    out = dict(live)
    here = frozenset({lineno})
    for n in names:
        out[n] = here  # read here: this is its next read from before the statement
    return out


# ---- the checks ---------------------------------------------------------------------------------

def _check_function(fn):
    checked = []  # (statement, the names it binds, its writes)
    for s in _statements(fn.node.body):
        parts, bound = _header(s)
        writes = _writes(s, parts)
        if writes or isinstance(s, ast.Return) and s.value is not None:
            checked.append((s, bound, writes))
    if not checked and not fn.pool:
        return
    names = _tests_once(fn.node)
    for values in itertools.product((True, False), repeat=len(names)):
        _check_paths(fn, checked, dict(zip(names, values)))


def _tests_once(node) -> list:
    """The names tested by two ``if`` statements or more and bound once, at the function's top
    level: each has one value for the whole call, so the checks run once per value of each
    (at most 4 of them; others are taken either way). The adjoint's ``if t8:`` reads only what
    the forward ``if t8:`` branch bound, never what the other branch left in a name."""
    tests: dict = {}
    for s in _walk(node):
        if isinstance(s, ast.If):
            name = _test_name(s.test)
            if name is not None:
                tests[name] = tests.get(name, 0) + 1
    top = {t.id for s in node.body if isinstance(s, ast.Assign) for t in s.targets
           if isinstance(t, ast.Name)}
    stores: dict = {}
    for sub in _walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            stores[sub.id] = stores.get(sub.id, 0) + 1
    return sorted(n for n, k in tests.items() if k > 1 and n in top and stores.get(n) == 1)[:4]


def _test_name(test):
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    return test.id if isinstance(test, ast.Name) else None


def _assumed(test, assume):
    """The branch a run with ``assume`` takes at this test: True, False, or None (either)."""
    name = _test_name(test)
    if name is None or name not in assume:
        return None
    negated = isinstance(test, ast.UnaryOp)
    return assume[name] != negated


def _check_paths(fn, checked, assume):
    flow, live = _PointsTo(fn, {id(s) for s, _, _ in checked}, assume), _Liveness(fn, assume)
    flow.block(fn.node.body, fn.entry_state())
    live.block(fn.node.body, {})
    _check_takes(fn, live)
    for s, bound, writes in checked:
        st = flow.before.get(id(s))
        if st is None:  # never reached
            continue
        if isinstance(s, ast.Return):
            _check_return(fn, s, st, flow.exprs)
        # poison means no name reads the buffer again, not even the one it is written through
        through = {_root(t) for t, mode in writes if mode != "poison"} | bound
        for target, mode in writes:
            _check_write(fn, s, target, mode, st, live.after[id(s)], through, flow.exprs)
        _check_step(fn, s, st, live.after[id(s)])


def _check_step(fn, s, st, live):
    """Raise where a chain step ``np.cos(x, out=_buf4)`` computes a value no name reads: the
    step wrote a buffer the chain's next steps do not read (they read an older value)."""
    if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)):
        return
    out = next((k.value for k in s.value.keywords if k.arg == "out"), None)
    if not (isinstance(out, ast.Name) and out.id in fn.pool):
        return
    for name in live:  # the pool name itself (read by the next step) among them
        if name in fn.bound and any(h[0] == "buf" and h[1] == out.id
                                    for h in held(st.get(name, _EMPTY), st)):
            return
    raise PlanError(f"line {s.lineno}: `{fn.text(s.lineno)}` computes into pool buffer "
                    f"{out.id} a value no name reads afterwards")


def _check_takes(fn, live):
    """Raise where a pool buffer's name is read, on some path, before anything this call
    writes is in it (``dx = _buf0 * t`` with no ``out=_buf0`` before it)."""
    for s in _statements(fn.node.body):
        if isinstance(s, ast.Assign) and _pool_take(s):
            for name in sorted(set(live.after[id(s)]) & set(fn.pool)):
                line = _next_read(live.after[id(s)][name], s.lineno)
                raise PlanError(f"line {line}: `{fn.text(line)}` reads pool buffer {name} "
                                f"before this call writes anything into it (taken at line "
                                f"{s.lineno}), on some path")


def _statements(stmts):
    """Every statement of a body, nested ones too (not those of a nested def), in order."""
    for s in stmts:
        yield s
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(s, field, ()))
        for h in getattr(s, "handlers", ()):
            yield from _statements(h.body)


def _header(s):
    """(the expressions a statement evaluates itself, the names it binds): a compound
    statement's header only."""
    if isinstance(s, (ast.If, ast.While)):
        return [s.test], set()
    if isinstance(s, ast.For):
        return [s.iter], _target_names(s.target)
    if isinstance(s, ast.With):
        return ([i.context_expr for i in s.items],
                set().union(*(_target_names(i.optional_vars) for i in s.items
                              if i.optional_vars is not None)))
    if isinstance(s, (ast.Try, ast.FunctionDef, ast.ClassDef)):
        return [], set()
    if isinstance(s, ast.Assign):
        return [s], set().union(*(_target_names(t) for t in s.targets))
    if isinstance(s, (ast.AugAssign, ast.AnnAssign)):
        return [s], _target_names(s.target)
    return [s], set()


def _writes(s, parts) -> list:
    """``[(target expression, mode)]``: what ``s`` writes into; mode "store" for an item
    assignment (``l[k] = v`` replaces a list's item), "element" otherwise."""
    out = []
    if isinstance(s, ast.Assign):
        for t in s.targets:
            out += [(x, "store") for x in _walk(t) if isinstance(x, ast.Subscript)
                    and isinstance(x.ctx, ast.Store)]
    if isinstance(s, ast.AugAssign):
        out.append((s.target, "element"))
    for part in parts:
        for call in (x for x in _walk(part) if isinstance(x, ast.Call)):
            out += [(t, "element") for k in call.keywords if k.arg == "out"
                    for t in (k.value.elts if isinstance(k.value, ast.Tuple) else [k.value])]
            if _writes_first(call) and call.args:
                out.append((call.args[0], "element"))
            elif isinstance(call.func, ast.Name) and call.func.id == _POISON:
                out += [(a, "poison") for a in call.args]
            elif _writes_self(call):
                out.append((call.func.value, "element"))
    return out


def _writes_first(call) -> bool:
    """``np.add.at(a, ...)``, ``np.copyto(a, ...)``, ``cupyx.scatter_add(a, ...)``..."""
    dotted = _dotted(call.func)
    if dotted is None or dotted[0] not in _MODULES or len(dotted) < 2:
        return False
    return dotted[-1] in _WRITE_FUNCS or (len(dotted) == 3 and dotted[-1] == "at")


def _writes_self(call) -> bool:
    """``a.fill(v)``, ``a.sort()``...: a method changing its own array."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _WRITE_METHODS:
        return False
    dotted = _dotted(func)
    return dotted is None or dotted[0] not in _MODULES


def _root(e):
    """The name an expression writes through: ``cs`` of ``cs[i]``, ``x`` of ``x.T[0]``."""
    while isinstance(e, (ast.Subscript, ast.Attribute, ast.Call, ast.Starred)):
        e = e.func if isinstance(e, ast.Call) else e.value
    return e.id if isinstance(e, ast.Name) else None


def _written(target, mode, st, exprs) -> list:
    """``[(object, stack site or None)]`` a write into ``target`` changes: a stack site where
    it writes one row of that stack (``out=cs[i]``, ``cs[i] = v``)."""
    st = dict(st)
    if not isinstance(target, ast.Subscript):
        return [(o, None) for o in sorted(exprs.pts(target, st), key=repr) if o[0] != "list"]
    out = []
    for o in sorted(exprs.pts(target.value, st), key=repr):  # the same report in any process
        if o[0] == "list":
            if mode != "store":  # l[k] += g, out=l[k]: the item's array itself
                out += [(c, None) for c in sorted(st.get(("c", o[1]), ()), key=repr)
                        if c[0] != "list"]
        elif o[0] == "buf" and o[2] == "stack":
            out.append((o, o[3]))
        else:
            out.append((o, None))
    return out


def _check_write(fn, s, target, mode, st, live, through, exprs):
    """Raise where writing ``target`` changes a parameter's or a constant's array, or a pool
    buffer that a live name other than those in ``through`` may hold."""
    where = f"line {s.lineno}: `{fn.text(s.lineno)}`"
    for obj, row in _written(target, mode, st, exprs):
        if obj[0] == "param":
            raise PlanError(f"{where} writes into parameter {obj[1]}'s array (the caller's "
                            f"data) through `{_root(target)}`")
        if obj[0] == "global":
            raise PlanError(f"{where} writes into {obj[1]}, a module-level array the code "
                            f"reads as a constant, through `{_root(target)}`")
        if obj[0] != "buf":
            continue
        clash = _live_holder(fn, obj, row, st, live, through, s.lineno)
        if clash is not None:
            name, how, line = clash
            what = f"a row of stack `{_root(target)}` in " if row is not None else ""
            raise PlanError(f"{where} writes into {what}pool buffer {obj[1]} while `{name}`, "
                            f"which may hold {how}, is read next at line {line}: "
                            f"`{fn.text(line)}`")


def _live_holder(fn, obj, row, st, live, through, lineno):
    """``(name, how it holds the buffer, the line of its next read)`` of the first live name
    (not in ``through``) that may hold ``obj``'s buffer where a write would change it."""
    for name in sorted(live):
        if name in through or name not in fn.bound:
            continue
        direct = st.get(name, _EMPTY)
        for h in sorted(held(direct, st), key=repr):
            if h[0] == "buf" and h[1] == obj[1] and (
                    row is None or h[2] == "whole" or h[3] != row):
                how = "it" if h in direct else "it in the list it names"
                if h[2] == "row":
                    how = how.replace("it", "a row of it", 1)
                return name, how, _next_read(live[name], lineno)
    return None


def _next_read(lines, after) -> int:
    later = [ln for ln in lines if ln > after]
    return min(later or lines)


def _check_return(fn, s, st, exprs):
    """Raise where ``return`` may give the caller an array of the pool (the next call would
    take it again and overwrite the caller's result)."""
    st = dict(st)
    objs = held(exprs.pts(s.value, st), st)
    bufs = sorted({o[1] for o in objs if o[0] == "buf"})
    if not bufs:
        return
    names = sorted(n for n in _reads([s.value]) if n in fn.bound
                   and any(o[0] == "buf" and o[1] == bufs[0] for o in held(st.get(n, _EMPTY), st)))
    by = f" (held by {', '.join(f'`{n}`' for n in names)})" if names else ""
    raise PlanError(f"line {s.lineno}: `{fn.text(s.lineno)}` returns pool buffer {bufs[0]}"
                    f"{by}, which the pool gives to the next call to overwrite")
