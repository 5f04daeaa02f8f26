"""Nested ``def`` and ``lambda`` inside a compiled function: compile-time function values, inlined.

A ``def`` statement or a ``lambda`` expression evaluates to a :class:`LocalFunction`: its AST,
the lowering that defined it, and its default values (evaluated at definition, as in Python).
Calling one inlines its body, as a call to a module-level function is inlined, in a lowering of
its own whose free names resolve in the defining function's scope *when read* (Python's late
binding: a closure sees the variable's current value, not the one it had at the definition).
Invariants: a name the nested body assigns is its own local (Python's scoping); the names of a
comprehension running at the call but not around the definition are that comprehension's own,
unseen by the body (Python 3); an array default is the array itself, so an in-place write after
the definition shows through it (the defaults are names :mod:`.inplace` updates, as variables);
a nested function that calls itself (directly or through another) is a located error; one that
escapes the compiled function (returned from it) is a located error; decorators, ``**kwargs``,
``global`` and ``nonlocal`` are refused by :func:`check_definition` and the fence.
"""

from __future__ import annotations

import ast
import inspect

from ..bindings.functions import LocalFunction, named
from ..bindings.unreadable import Unreadable
from ..expressions.comprehensions import UNBOUND
from ..expressions.table import expression
from ..reading.scopes import free_names
from ..reading.source import FunctionSource, as_def
from . import blocks
from .context import Scope

_P = inspect.Parameter


def check_definition(src, node) -> None:
    """Refuse, located, what a nested ``def``/``lambda`` does not support."""
    if isinstance(node, ast.FunctionDef) and node.decorator_list:
        raise src.error(node.decorator_list[0], "a decorator on a nested `def` is not supported",
                        "define the decorated function at module level, or call the decorator "
                        "in the caller")
    if node.args.kwarg is not None:
        raise src.error(node.args.kwarg, "`**kwargs` parameters are not supported in a "
                        "nested function", "name every keyword parameter")


class LocalFunctionLowering:
    """Mixin of the lowering: defining and inlining nested functions."""

    def local_function(self, node, name, body) -> LocalFunction:
        """The function value of a ``def``/``lambda`` at ``node``, its defaults evaluated now."""
        tree = as_def(node, name, body)
        src = FunctionSource(self.src.fn, tree, self.src.filename, self.src.lines)
        signature = self.local_signature(node.args)
        defaults = {p.name: p.default for p in signature.parameters.values()
                    if p.default is not _P.empty}
        if defaults:
            self.scope.held_defaults.append(defaults)  # names for arrays: .inplace updates them
        return LocalFunction(node, src, self, signature, defaults, self.unrolling.running,
                             frozenset(free_names(node)))

    def local_signature(self, args: ast.arguments) -> inspect.Signature:
        positional = [*args.posonlyargs, *args.args]
        defaults = [_P.empty] * (len(positional) - len(args.defaults))
        defaults += [self.expr(d) for d in args.defaults]
        params = [_P(a.arg, _P.POSITIONAL_ONLY if a in args.posonlyargs
                     else _P.POSITIONAL_OR_KEYWORD, default=d)
                  for a, d in zip(positional, defaults)]
        if args.vararg is not None:
            params.append(_P(args.vararg.arg, _P.VAR_POSITIONAL))
        params += [_P(a.arg, _P.KEYWORD_ONLY, default=_P.empty if d is None else self.expr(d))
                   for a, d in zip(args.kwonlyargs, args.kw_defaults)]
        return inspect.Signature(params)

    def inline_local(self, func: LocalFunction, args, kwargs, node, result=True):
        """``func(*args, **kwargs)``, its body lowered here with the arguments bound."""
        self.refuse_recursion(func, node)
        self.refuse_ended_comprehension(func, node)
        try:
            bound = func.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise self.src.error(node, f"TypeError: {named(func)}: {exc}",
                                 f"{named(func)}'s parameters: "
                                 f"{ast.unparse(func.node.args) or 'none'}") from None
        given = dict(bound.arguments)
        bound.apply_defaults()  # ``*args``: ()
        callee = type(self).__new__(type(self))
        callee.src = func.src
        callee.start(self.graph, self.b, self.depth + 1, Scope(
            func.definer.scope.fn, func.local_names(), {}, caller=self, definer=func.definer,
            local=func))
        callee.scope.env.update({**bound.arguments, **func.defaults, **given})
        saved = self.b.source
        try:
            return blocks.run_body(callee, result)
        finally:
            self.b.source = saved

    def refuse_recursion(self, func: LocalFunction, node):
        """A call of ``func`` from inside its own body (or a body it calls): never inlined."""
        frame = self
        while frame is not None:
            if frame.scope.local is not None and frame.scope.local.node is func.node:
                raise self.src.error(node, f"{named(func)} calls itself: a recursive nested "
                                     "function cannot be inlined",
                                     "recursion is not supported; write the computation as "
                                     "a loop")
            frame = frame.scope.caller

    def refuse_ended_comprehension(self, func: LocalFunction, node):
        """A lambda reading a comprehension's variable, called after that comprehension: Python
        would read the variable's last value, which the unrolled comprehension does not keep."""
        running = func.definer.unrolling.running
        for name in sorted(func.reads):
            binders = [scope for scope in func.scopes if name in scope]
            if binders and all(binders[-1] is not scope for scope in running):
                raise self.src.error(node, f"{named(func)} reads `{name}`, the variable of the "
                                     "comprehension defining it, which has ended: Python would "
                                     "read its last value, which adcompiler does not keep",
                                     f"bind it when defining the function: `lambda ..., {name}="
                                     f"{name}: ...`")

    def free_name(self, name, node):
        """A name a nested body does not bind: the defining function's, as it is now (not
        that of a comprehension the call is in, which the definition is not)."""
        definer = self.scope.definer
        value = self.seen_from_definition(name)
        if value is UNBOUND and name in definer.scope.locals:
            raise self.src.error(node, f"`{name}` is read before `{definer.src.tree.name}` "
                                 "assigns it (a nested function reads the variables around it "
                                 "when it is called)",
                                 f"assign `{name}` before calling the function that reads it")
        if value is UNBOUND:
            return definer.outer(name, node)
        if isinstance(value, Unreadable):
            raise self.src.error(node, *value.describe(name))
        return value

    def seen_from_definition(self, name):
        """``name`` in the defining scope now, or UNBOUND. A comprehension running now that
        the definition is not inside binds names of its own (Python 3), which the body does
        not see: where the outermost such binds ``name``, its value from before that one."""
        definer, scopes = self.scope.definer, self.scope.local.scopes
        for k, scope in enumerate(definer.unrolling.running):
            holds_definition = k < len(scopes) and scopes[k] is scope
            if not holds_definition and name in scope:
                return scope[name]
        return definer.scope.env.get(name, UNBOUND)


def refuse_escape(results) -> None:
    """A nested function returned from the compiled function: a located error at its
    definition (a compiled function returns arrays and numbers)."""
    for value in _leaves(results):
        if isinstance(value, LocalFunction):
            raise value.src.error(value.node, f"{named(value)} is returned from the compiled "
                                  "function, which returns arrays and numbers only",
                                  "call it inside the function, or define it at module level "
                                  "and call it in the caller")


def _leaves(value):
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


@expression(ast.Lambda)
def lower_lambda(lowering, node: ast.Lambda):
    body = [ast.copy_location(ast.Return(node.body), node.body)]
    return lowering.local_function(node, "<lambda>", body)
