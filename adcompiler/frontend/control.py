"""Lower ``if`` and ``for`` into ``cond`` and ``loop`` nodes with explicit merged/carried values.

A condition known while compiling picks its branch statically; a traced one becomes a ``cond``
whose outputs are the variables either branch rebinds. A ``for`` over ``range(...)`` (static
bounds), over an array's first axis, or over ``enumerate``/``zip`` of those becomes a ``loop``
over ``k in range(n)`` carrying every variable the body rebinds. Invariant: a merged or carried
variable has one abstract value on every path (a Python float meeting a 0-d array becomes the
array), else a located error says which variable disagrees.
"""

from __future__ import annotations

import ast

from . import jumps
from ..ir import Aval, Block, Literal, Node, Value

_MAX_AVAL_ROUNDS = 3


class ControlLowering:
    """Mixin of the lowering for control-flow statements."""

    loop_depth = 0  # how many loop bodies are being lowered around the current statement

    def run_block(self, stmts):
        """Lower function-level statements; the returned value, or NO_RETURN if they fall
        through. An ``if`` containing a ``return`` takes the statements after it as the
        continuation of each branch that does not return, so every path ends in a return."""
        for i, stmt in enumerate(stmts):
            self.b.source = self.src.text(stmt)
            if isinstance(stmt, ast.Return):
                if stmt.value is None:
                    raise self.src.error(stmt, "this returns nothing",
                                         "return the value to differentiate")
                return self.expr(stmt.value)
            if isinstance(stmt, ast.If) and _returns_inside(stmt):
                return self.lower_if(stmt, rest=stmts[i + 1:])
            self.run_statements([stmt])
        return NO_RETURN

    def run_statements(self, stmts):
        for stmt in stmts:
            if isinstance(stmt, ast.Return):
                raise self.src.error(stmt, "an early `return` is not supported yet",
                                     "assign the result to a variable and return it at the end")
            if isinstance(stmt, (ast.Break, ast.Continue)):
                raise self.src.error(stmt, f"`{type(stmt).__name__.lower()}` is not supported "
                                     "yet", "express the exit condition with np.where")
            self.b.source = self.src.text(stmt)
            self.statement(stmt)

    # ---- if -----------------------------------------------------------------------------------
    def lower_if(self, stmt: ast.If, rest=None):
        self.b.source = f"if {self.src.text(stmt.test)}:"
        test = self.expr(stmt.test)
        if not isinstance(test, Value):
            branch = stmt.body if test else stmt.orelse
            return self.run_statements(branch) if rest is None else self.run_block(branch + rest)
        self.check_condition(stmt.test, test)
        env0 = dict(self.env)
        blocks, envs = [], []
        for stmts in (stmt.body, stmt.orelse):
            block = Block()
            with self.b.into(block):
                if rest is None:
                    self.run_statements(stmts)
                else:
                    self.env[RESULT] = self.run_block(stmts + rest)
                    if self.env[RESULT] is NO_RETURN:
                        raise self.src.error(stmt, "not every path through this `if` returns "
                                             "a value", "add a return at the end")
            envs.append(self.env)
            self.env = dict(env0)
            blocks.append(block)
        self.merge_branches(stmt, test, blocks, envs, env0)
        if rest is not None:
            return self.env.pop(RESULT)

    def merge_branches(self, stmt, test, blocks, envs, env0):
        header = f"if {self.src.text(stmt.test)}:"
        names = [n for n in dict.fromkeys(list(envs[0]) + list(envs[1]))
                 if any(e.get(n, env0.get(n)) is not env0.get(n) for e in envs)]
        outs = []
        for name in names:
            values = [e.get(name, env0.get(name)) for e in envs]
            if any(v is None for v in values):  # bound in one branch only: unusable after
                self.env.pop(name, None)
                continue
            if values[0] is values[1]:
                continue
            aval = self.join(stmt, name, [_aval(v) for v in values], "branch")
            for block, v in zip(blocks, values):
                with self.b.into(block):
                    block.outputs.append(self.coerce(v, aval))
            label = "result" if name == RESULT else name
            out = self.graph.name_value(Value(aval, origin=label), label)
            outs.append(out)
            self.env[name] = out
        self.b.source = header
        self.b.target.append(Node("cond", (test,), {}, tuple(outs), header, "forward",
                                  tuple(blocks)))

    # ---- conditional expressions and boolean operators ------------------------------------------
    def expr_IfExp(self, node):
        test = self.expr(node.test)
        if not isinstance(test, Value):
            return self.expr(node.body if test else node.orelse)
        self.check_condition(node.test, test)
        blocks, values = [], []
        for branch in (node.body, node.orelse):
            block = Block()
            with self.b.into(block):
                values.append(self.expr(branch))
            blocks.append(block)
        aval = self.join(node, "the conditional expression", [_aval(v) for v in values], "branch")
        for block, v in zip(blocks, values):
            with self.b.into(block):
                block.outputs.append(self.coerce(v, aval))
        out = Value(aval)
        self.b.target.append(Node("cond", (test,), {}, (out,), self.b.source, "forward",
                                  tuple(blocks)))
        return out

    def expr_BoolOp(self, node):
        """``and``/``or``: Python's on values known while compiling, else elementwise logic on
        0-d booleans (nothing here has side effects, so short-circuiting changes nothing)."""
        prim = "logical_and" if isinstance(node.op, ast.And) else "logical_or"
        result = None
        for operand in node.values:
            v = self.expr(operand)
            if not isinstance(v, Value):
                if isinstance(node.op, ast.And) and not v or isinstance(node.op, ast.Or) and v:
                    return v  # decided while compiling
                continue
            if v.aval.dtype != "bool":
                raise self.src.error(operand, "`and`/`or` on arrays compile only for booleans",
                                     "compare first (x > 0), or use np.logical_and")
            result = v if result is None else self.b.emit(prim, (result, v))
        return result if result is not None else self.expr(node.values[-1])

    def check_condition(self, node, test):
        if test.aval.known_shape != ():
            raise self.src.error(node, "the condition is an array of shape "
                                 f"{test.aval.known_shape}: its truth value is ambiguous",
                                 "reduce it (np.all, np.any, .sum() > 0) or use np.where")

    # ---- loops --------------------------------------------------------------------------------
    def lower_loop(self, stmt):
        """A ``for``/``while``, after rewriting break/continue and traced range bounds."""
        if isinstance(stmt, ast.For) and self.traced_range(stmt.iter):
            if any(isinstance(n, ast.Break) for n in ast.walk(stmt)) or stmt.orelse:
                raise self.src.error(stmt, "a range with traced bounds cannot also `break` or "
                                     "have an `else`", "use a while loop with your own counter")
            before, stmt = jumps.rewrite_traced_range(stmt, f"loop{stmt.lineno}_i")
            self.run_statements(before)
        before, stmt = jumps.rewrite_loop(stmt)
        self.run_statements(before)
        if isinstance(stmt, ast.For):
            self.lower_for(stmt)
        else:
            self.lower_while(stmt)

    def traced_range(self, node) -> bool:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and self.env.get(node.func.id, self.lookup(node.func.id, node.func)) is range):
            return False
        bounds = [self.expr(a) for a in node.args]
        if len(bounds) == 3 and isinstance(bounds[2], Value):
            raise self.src.error(node.args[2], "a traced range step is not supported",
                                 "use a constant step")
        return any(isinstance(b, Value) for b in bounds)

    def lower_for(self, stmt: ast.For):
        if stmt.orelse:
            raise self.src.error(stmt, "`for ... else` is not supported", "drop the else")
        header = f"for {self.src.text(stmt.target)} in {self.src.text(stmt.iter)}:"
        self.b.source = header
        n, bind_target = self.iteration(stmt)

        def blocks(carried, params):
            k = self.graph.name_value(Value(Aval("int", "int64")), _index_name(stmt))
            body = Block(params=[k, *params])
            with self.b.into(body):
                bind_target(k)
                self.run_statements(stmt.body)
            return (body,)
        self.carried_loop(stmt, header, "loop", (Literal(n),), blocks)

    def lower_while(self, stmt: ast.While):
        if stmt.orelse:
            raise self.src.error(stmt, "`while ... else` is not supported", "drop the else")
        header = f"while {self.src.text(stmt.test)}:"
        self.b.source = header

        def blocks(carried, params):
            test = Block(params=[self.graph.name_value(Value(p.aval), p.name) for p in params])
            self.env.update(zip(carried, test.params))
            with self.b.into(test):
                pred = self.expr(stmt.test)
                if not isinstance(pred, Value):
                    raise self.src.error(stmt.test, "this loop condition does not depend on "
                                         "anything the loop changes", "use a for loop")
                self.check_condition(stmt.test, pred)
                test.outputs = [pred]
            self.env.update(zip(carried, params))
            body = Block(params=list(params))
            with self.b.into(body):
                self.run_statements(stmt.body)
            return test, body
        self.carried_loop(stmt, header, "while", (), blocks)

    def carried_loop(self, stmt, header, prim, inputs, make_blocks):
        """Lower a loop whose body rebinds ``carried`` variables: find one aval per variable
        (re-lowering until they agree), then emit the node and rebind the variables."""
        carried = [name for name in _assigned(stmt.body) if name in self.env
                   and _traceable(self.env[name])]
        self.check_loop_aliases(stmt, carried)
        avals = [_aval(self.env[name]) for name in carried]
        for _ in range(_MAX_AVAL_ROUNDS):
            env0 = dict(self.env)
            params = [self.graph.name_value(Value(a, origin=n), n) for n, a in zip(carried, avals)]
            self.env.update(zip(carried, params))
            self.loop_depth += 1
            try:
                blocks = make_blocks(carried, params)
            finally:
                self.loop_depth -= 1
            results = [self.env[name] for name in carried]
            self.env = env0
            new = [self.join(stmt, name, [a, _aval(r)], "loop")
                   for name, a, r in zip(carried, avals, results)]
            if new == avals:
                break
            avals = new
        body = blocks[-1]
        with self.b.into(body):
            body.outputs = [self.coerce(r, a) for r, a in zip(results, avals)]
        inits = [self.coerce(self.env[name], a) for name, a in zip(carried, avals)]
        outs = tuple(self.graph.name_value(Value(a, origin=name), name)
                     for name, a in zip(carried, avals))
        self.b.source = header
        self.b.target.append(Node(prim, (*inputs, *inits), {"stacked": 0}, outs, header,
                                  "forward", tuple(blocks)))
        self.env.update(zip(carried, outs))

    def check_loop_aliases(self, stmt, carried):
        """NumPy's ``y *= 2`` in a loop also changes every other name for that array; a loop
        carries names, not arrays, so such an alias is refused rather than silently stale."""
        for node in (n for s in stmt.body for n in ast.walk(s)):
            name = _updated_in_place(node)
            if name is None:
                continue
            value = self.env.get(name)
            if name not in carried or not isinstance(value, Value) or not value.aval.ndim:
                continue
            others = [n for n, v in self.env.items() if v is value and n != name]
            if others:
                raise self.src.error(node, f"`{name}` is updated in place inside a loop while "
                                     f"`{others[0]}` names the same array",
                                     f"copy it first ({others[0]} = {name}.copy()) so each "
                                     "name has its own array")

    def iteration(self, stmt):
        """The trip count and a function binding the loop target for iteration ``k``."""
        spec = self.iterable(stmt.iter)
        n = spec[0]

        def bind_target(k):
            self.bind(stmt.target, spec[1](k), stmt)
        return n, bind_target

    def iterable(self, node):
        """(n, k -> value) for range, arrays, enumerate and zip."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            func = self.lookup(node.func.id, node.func)
            if func is range:
                args = [self.expr(a) for a in node.args]
                r = range(*args)
                return len(r), lambda k: _affine(self.b, k, r.start, r.step)
            if func is enumerate:
                n, item = self.iterable(node.args[0])
                return n, lambda k: (k, item(k))
            if func is zip:
                parts = [self.iterable(a) for a in node.args]
                return min(p[0] for p in parts), lambda k: tuple(p[1](k) for p in parts)
        seq = self.expr(node)
        if isinstance(seq, Value) and seq.aval.ndim:
            return seq.aval.shape[0], lambda k: self.b.getitem(seq, (k,), (("a", 0),))
        raise self.src.error(node, "only range(...), arrays, enumerate and zip can be looped "
                             "over", "loop over range(len(x)) and index x[i]")

    # ---- merging abstract values --------------------------------------------------------------
    def join(self, stmt, name, avals, where):
        first, *rest = avals
        for a in rest:
            if a == first:
                continue
            if a.is_float and first.is_float and {a.known_shape, first.known_shape} == {()}:
                first = Aval("array", "float64", ())
                continue
            if a.kind == first.kind == "int":
                continue
            if a.dtype == first.dtype == "bool" and {a.known_shape, first.known_shape} == {()}:
                first = Aval("array", "bool", ())  # a Python bool meeting a NumPy one
                continue
            raise self.src.error(stmt, f"`{name}` is {first} on one path and {a} on another "
                                 f"({where})", "give it the same shape and type on every path")
        return first

    def coerce(self, v, aval):
        if isinstance(v, bool):
            v = Literal(v)
        elif isinstance(v, (int, float)):
            v = Literal(float(v) if aval.is_float else v)
        if isinstance(v, Literal):
            if aval.is_scalar:
                cast = {"float": float, "int": int, "bool": bool}[aval.kind]
                return Literal(cast(v.value))
            return self.b.emit("full", (v.value,), {"shape": (), "dtype": aval.dtype})
        if v.aval == aval:
            return v
        if v.aval.is_scalar and not aval.is_scalar:
            return self.b.emit("full", (v,), {"shape": (), "dtype": aval.dtype})
        return v


NO_RETURN = object()  # what run_block gives when the statements fall through
RESULT = "<return value>"  # a pseudo-variable merging the value each branch returns


def _returns_inside(stmt) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(stmt))


def _updated_in_place(node):
    """The array name ``node`` writes into in place (``y *= 2``, ``y[i] = v``, ``y[i] += v``)."""
    targets = (node.targets if isinstance(node, ast.Assign)
               else [node.target] if isinstance(node, ast.AugAssign) else [])
    for t in targets:
        if isinstance(node, ast.AugAssign) and isinstance(t, ast.Name):
            return t.id
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            return t.value.id
    return None


def _aval(v) -> Aval:
    return v.aval if isinstance(v, (Value, Literal)) else Aval.of(v)


def _traceable(v) -> bool:
    return isinstance(v, (Value, float, int))  # bools too: a break flag is carried


def _affine(b, k, start, step):
    i = k if step == 1 else b.emit("multiply", (k, step))
    return i if start == 0 else b.emit("add", (i, start))


def _index_name(stmt) -> str:
    """The iteration counter reads as the user's variable in ``for i in range(n)``."""
    call = stmt.iter
    if (isinstance(stmt.target, ast.Name) and isinstance(call, ast.Call)
            and getattr(call.func, "id", None) == "range" and len(call.args) == 1):
        return stmt.target.id
    return "k"


def _assigned(stmts) -> list:
    """Names (re)bound anywhere in ``stmts``, in order of first assignment."""
    names = {}
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.setdefault(node.id, None)
            elif (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
                  and isinstance(node.value, ast.Name)):  # y[i] = v rebinds y in SSA
                names.setdefault(node.value.id, None)
    return list(names)

