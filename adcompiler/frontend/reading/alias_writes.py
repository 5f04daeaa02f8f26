"""Where a function body writes into a value it holds (a module-level array, or a parameter),
directly or through local aliases, found statically for :mod:`.module_writes`.

Invariant: conservative. The statements are followed in order, each local name mapped to
whether it may hold the value (``"whole"``: it, or a view of all of it; ``"part"``: an element,
a row, a container holding it); branches are merged and loop bodies followed twice, so a name
rebound to a fresh value (``v = v.copy()``) no longer counts. A write is a subscript or attribute
store through such a name, an augmented assignment to it (to a ``"part"`` only where the value's
elements are themselves mutable), a method call on it other than a known pure one, a NumPy
function that writes into its first argument, ``out=``, passing it to a module function that
writes into that parameter, or rebinding a ``global``.
"""

from __future__ import annotations

import ast

SAFE_ATTRIBUTES = frozenset({"shape", "ndim", "size", "dtype", "nbytes", "itemsize", "flags"})
PURE_METHODS = frozenset({
    "all", "any", "argmax", "argmin", "argsort", "astype", "clip", "compress", "conj",
    "conjugate", "copy", "count", "cumprod", "cumsum", "diagonal", "dot", "flatten", "get",
    "index", "item", "items", "keys", "max", "mean", "min", "nonzero", "prod", "ptp", "ravel",
    "repeat", "reshape", "round", "searchsorted", "setflags", "squeeze", "std", "sum",
    "swapaxes", "take", "tobytes", "tolist", "trace", "transpose", "values", "var", "view",
    "__array__", "__getitem__", "__len__", "__contains__"})
VIEW_METHODS = frozenset({"reshape", "view", "ravel", "transpose", "squeeze", "swapaxes",
                          "diagonal", "get", "values", "items", "__getitem__"})
VIEW_FUNCTIONS = frozenset({
    "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "reshape", "ravel",
    "transpose", "squeeze", "expand_dims", "atleast_1d", "atleast_2d", "atleast_3d",
    "broadcast_to", "broadcast_arrays", "swapaxes", "moveaxis", "rollaxis", "diagonal", "real",
    "imag", "flip", "fliplr", "flipud", "rot90", "split", "array_split", "hsplit", "vsplit",
    "dsplit", "as_strided", "matrix_transpose", "permute_dims", "list", "tuple", "iter",
    "reversed", "enumerate", "zip", "sorted", "dict", "memoryview"})
WRITERS = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis",
                     "shuffle", "at"})   # write into their first argument (np.add.at(W, ...))


class Flow:
    """One function body followed for one value; ``write`` is the first write found, as
    ``(node, what it does)``."""

    def __init__(self, module, deep, local_names, rebinding=None, active=frozenset(), memo=None):
        self.module, self.deep, self.locals = module, deep, local_names
        self.rebinding = rebinding   # a ``global`` name whose rebinding is a change
        self.active = active         # the (function, parameter) summaries under way
        self.memo = {} if memo is None else memo   # (function, parameter, deep) -> write
        self.write = None

    def function(self, fn, env):
        self.block(fn.body, dict(env))
        return self.write

    def found(self, node, what):
        if self.write is None:
            self.write = (node, what)

    # ---- statements ----------------------------------------------------------------------------
    def block(self, stmts, env):
        for stmt in stmts:
            env = self.stmt(stmt, env)
        return env

    def stmt(self, s, env):
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return self.definition(s, env)
        blocks = [v for _, v in ast.iter_fields(s)
                  if isinstance(v, list) and v and isinstance(v[0], ast.stmt)]
        blocks += [h.body for h in getattr(s, "handlers", [])]
        blocks += [c.body for c in getattr(s, "cases", [])]
        if not blocks:
            self.exprs([s], env)
            self.bind(s, env)
            return env
        headers = [v for _, v in ast.iter_fields(s) if isinstance(v, ast.expr)]
        headers += [e for i in getattr(s, "items", []) for e in (i.context_expr, i.optional_vars)
                    if e is not None]
        headers += [c.guard for c in getattr(s, "cases", []) if c.guard is not None]
        headers += [h.type for h in getattr(s, "handlers", []) if h.type is not None]
        self.exprs(headers, env)
        out = dict(env)
        for _ in range(2 if isinstance(s, (ast.For, ast.AsyncFor, ast.While)) else 1):
            for body in blocks:
                inner = dict(out)
                if isinstance(s, (ast.For, ast.AsyncFor)):
                    self.assign(s.target, None, "part" if self.kind(s.iter, inner) else None,
                                inner)
                out = _merge(out, self.block(body, inner))
        return out

    def definition(self, s, env):
        exprs = s.decorator_list + (s.bases + [k.value for k in s.keywords]
                                    if isinstance(s, ast.ClassDef) else
                                    s.args.defaults + [d for d in s.args.kw_defaults if d])
        self.exprs(exprs, env)
        if isinstance(s, ast.ClassDef):   # a class body runs where it stands
            self.block(s.body, dict(env))
        env.pop(s.name, None)
        return env

    def bind(self, s, env):
        if isinstance(s, ast.Assign):
            kind = self.kind(s.value, env)
            for target in s.targets:
                self.assign(target, s.value, kind, env)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.assign(s.target, s.value, self.kind(s.value, env), env)
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            for alias in s.names:
                env.pop(alias.asname or alias.name.split(".")[0], None)
        elif isinstance(s, ast.Delete):
            for target in s.targets:
                if isinstance(target, ast.Name):
                    env.pop(target.id, None)
        for node in ast.walk(s):
            if isinstance(node, ast.NamedExpr):
                self.assign(node.target, node.value, self.kind(node.value, env), env)

    def assign(self, target, value, kind, env):
        if isinstance(target, ast.Name):
            if kind:
                env[target.id] = kind
            else:
                env.pop(target.id, None)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, None, kind, env)
        elif isinstance(target, (ast.Tuple, ast.List)):
            pairs = isinstance(value, (ast.Tuple, ast.List)) and \
                len(value.elts) == len(target.elts) and \
                not any(isinstance(e, ast.Starred) for e in target.elts + value.elts)
            for i, element in enumerate(target.elts):
                if pairs:
                    self.assign(element, value.elts[i], self.kind(value.elts[i], env), env)
                else:   # unpacking it: each item may be all of it
                    self.assign(element, None, "whole" if kind else None, env)

    # ---- expressions ---------------------------------------------------------------------------
    def exprs(self, nodes, env):
        env = dict(env)   # comprehension targets hold parts of what they iterate over
        nodes = [n for node in nodes for n in ast.walk(node)]
        for node in nodes:
            if isinstance(node, ast.comprehension) and self.kind(node.iter, env):
                self.assign(node.target, None, "part", env)
        for node in nodes:
            self.check(node, env)

    def check(self, n, env):
        if isinstance(n, (ast.Subscript, ast.Attribute)) and not isinstance(n.ctx, ast.Load):
            if self.kind(n.value, env):
                self.found(n, "stores into it here")
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            kind = env.get(n.target.id)
            if kind == "whole" or (kind and self.deep):
                self.found(n, "updates it in place here")
        elif isinstance(n, ast.Name) and n.id == self.rebinding and \
                not isinstance(n.ctx, ast.Load):
            self.found(n, f"rebinds it here (global {n.id})")
        elif isinstance(n, ast.Call):
            self.call(n, env)

    def call(self, n, env):
        f = n.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        if isinstance(f, ast.Attribute) and f.attr not in PURE_METHODS and \
                self.kind(f.value, env):
            self.found(n, f"calls .{f.attr}() on it here")
        elif name in WRITERS and n.args and self.kind(n.args[0], env):
            self.found(n, f"writes into it here with {name}()")
        if any(k.arg == "out" and self.kind(k.value, env) for k in n.keywords):
            self.found(n, "writes into it here (out=)")
        stmt = self.module.definitions.get(name) if isinstance(f, ast.Name) else None
        if isinstance(stmt, ast.FunctionDef) and name not in self.locals:
            self.passed(n, stmt, env)

    def passed(self, n, stmt, env):
        """``h(W)``, where ``h`` (a module function) writes into that parameter."""
        params = [a.arg for a in stmt.args.posonlyargs + stmt.args.args]
        named = [(params[i], a) for i, a in enumerate(n.args[:len(params)])]
        named = [(p, a) for p, a in named if not isinstance(a, ast.Starred)]
        named += [(k.arg, k.value) for k in n.keywords if k.arg]
        for param, arg in named:
            key = (stmt.name, param, self.deep)
            if not self.kind(arg, env) or key in self.active:
                continue
            if key not in self.memo:
                sub = Flow(self.module, self.deep, scope(stmt)[1], None, self.active | {key},
                           self.memo)
                self.memo[key] = sub.function(stmt, {param: "whole"})
            write = self.memo[key]
            if write is not None:
                self.found(n, f"passes it here to `{stmt.name}`, which changes it in place (line "
                              f"{write[0].lineno})")

    def kind(self, node, env):
        """Whether ``node`` may evaluate to the value (``"whole"``) or to a part of it or a
        container holding it (``"part"``); None where it is fresh."""
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.Subscript):
            return "part" if self.kind(node.value, env) else None
        if isinstance(node, ast.Attribute):
            return None if node.attr in SAFE_ATTRIBUTES else self.kind(node.value, env)
        if isinstance(node, (ast.NamedExpr, ast.Starred)):
            return self.kind(node.value, env)
        if isinstance(node, ast.IfExp):
            return _join(self.kind(node.body, env), self.kind(node.orelse, env))
        if isinstance(node, ast.BoolOp):
            return _join(*[self.kind(v, env) for v in node.values])
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            items = node.values if isinstance(node, ast.Dict) else node.elts
            return "part" if any(self.kind(i, env) for i in items) else None
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return "part" if any(self.kind(g.iter, env) for g in node.generators) else None
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in VIEW_METHODS:
                return self.kind(f.value, env)
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in VIEW_FUNCTIONS and any(self.kind(a, env) for a in node.args):
                return "whole"
        return None


def _join(*kinds):
    return "whole" if "whole" in kinds else ("part" if "part" in kinds else None)


def _merge(a, b):
    return {k: _join(a.get(k), b.get(k)) for k in {**a, **b}}


def scope(fn) -> tuple:
    """``(global names, local names, nonlocal names)`` of a function."""
    args = fn.args
    local = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    local |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    declared, nonlocal_ = set(), set()
    for node in own_nodes(fn.body):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            local.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            local.add(node.name)
        elif isinstance(node, ast.alias):
            local.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            local.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            local.add(node.name)
        elif isinstance(node, ast.Global):
            declared |= set(node.names)
        elif isinstance(node, ast.Nonlocal):
            nonlocal_ |= set(node.names)
    return declared, local - declared, nonlocal_


def own_nodes(stmts):
    """The nodes of a function's own scope: nested ``def``s' and classes' bodies left out (not
    their decorators and defaults), and comprehensions' targets (their own scope)."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack += node.decorator_list + node.args.defaults + \
                [d for d in node.args.kw_defaults if d is not None]
        elif isinstance(node, ast.ClassDef):
            stack += node.decorator_list + node.bases + node.keywords
        elif isinstance(node, ast.comprehension):
            stack += [node.iter, *node.ifs]
        else:
            stack += ast.iter_child_nodes(node)
