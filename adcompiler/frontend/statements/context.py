"""The state one function's lowering carries while it lowers statements, in three small objects
held by the lowering (``lowering.scope``, ``lowering.loop``, ``lowering.unrolling``) instead of
attributes that every part of it sets and reads on ``self``.

:class:`Scope`: the names the function resolves and the lowerings around it (the caller it is
inlined into, the definer of a nested function). :class:`LoopContext`: the blocks open around
the statement being lowered (loop bodies, ``if`` branches), what functions called there
updated, the lists a ``while`` loop appends to, the budget of unrolled loops.
:class:`Unrolling`: the comprehensions being unrolled, and their budget.
Invariants: each lowering (each inlined call, each nested function's body) has its own three
objects; only ``held_defaults`` is shared, by a call and every call inlined into it; a block
opened or a budget started is closed, or reset, by the code that opened it, also when an
error leaves it.
"""

from __future__ import annotations

import contextlib

from ..expressions.comprehensions import MAX_ITERATIONS


class Scope:
    """The names one function's lowering resolves (Python's rules: see :mod:`..lower`)."""

    def __init__(self, fn, local_names: set, closure: dict, caller=None, definer=None,
                 local=None):
        self.fn = fn                # the user's function: its globals (nested: its definer's)
        self.locals = local_names   # the names it assigns anywhere: read unbound, an error
        self.closure = closure      # its closure cells' contents (none for a nested function)
        self.caller = caller        # the Lowering this call is inlined into, if any
        self.definer = definer      # for a nested function's body: the Lowering defining it
        self.local = local          # ... and the LocalFunction itself
        self.env: dict = {}         # name -> what it is bound to now
        # every nested function's defaults (names for arrays, updated as env's:
        # .local_functions), one list shared by a call and the calls inlined into it
        self.held_defaults: list = caller.scope.held_defaults if caller is not None else []

    @property
    def frames(self) -> list:
        """The environments of this call, of every caller it is inlined into and, for a nested
        function, of the function defining it (a closure's array may be written through),
        and every nested function's defaults."""
        frames = [self.env] + (self.caller.scope.frames if self.caller else self.held_defaults)
        if self.definer is not None:
            frames += [f for f in self.definer.scope.frames if all(f is not g for g in frames)]
        return frames


class LoopContext:
    """The blocks open around the statement being lowered, in one function's lowering."""

    def __init__(self):
        self.depth = 0             # how many loop bodies are being lowered around the statement
        self.own_blocks = ()       # the node lists of the open blocks whose names this merges
        self.calls_wrote = frozenset()  # names a called function updated in the body lowered now
        self.appending = ()        # (while statement, records) of the loops lowered now that append
        self.unroll_left = MAX_ITERATIONS  # iterations the outermost unrolled loop may still unroll
        self.unrolled = 0          # how many unrolled loops are open (they share one budget)

    @contextlib.contextmanager
    def merging(self, builder, block):
        """``builder.into(block)`` for an ``if`` branch or a loop body: this lowering merges
        (carries) the names that change there, also those a function called there updates in
        place (see :func:`.inplace.check_region`)."""
        saved, self.own_blocks = self.own_blocks, (*self.own_blocks, block.nodes)
        try:
            with builder.into(block):
                yield block
        finally:
            self.own_blocks = saved

    def enter_body(self):
        """A loop body is lowered from now on: one loop deeper, with a fresh set of the names
        that functions called there update; returns what :meth:`leave_body` takes back."""
        self.depth += 1
        outer, self.calls_wrote = self.calls_wrote, set()
        return outer

    def leave_body(self, outer):
        """The body is lowered: the names functions called there updated (the enclosing
        body's set holds them too from now on)."""
        self.depth -= 1
        wrote, self.calls_wrote = self.calls_wrote, outer | self.calls_wrote
        return wrote

    @contextlib.contextmanager
    def unroll_budget(self):
        """Nested unrolled loops share the budget of the outermost one, while it runs."""
        self.unrolled += 1
        try:
            yield
        finally:
            self.unrolled -= 1
            if not self.unrolled:
                self.unroll_left = MAX_ITERATIONS


class Unrolling:
    """The comprehensions being unrolled, in one function's lowering."""

    def __init__(self):
        self.left = MAX_ITERATIONS  # iterations the outermost comprehension may still unroll
        self.running = ()           # each comprehension being unrolled, outermost first: {a name
        #                             it binds: its value before it (or UNBOUND)}, read by
        #                             .local_functions

    @contextlib.contextmanager
    def comprehension(self, saved):
        """While a comprehension is unrolled (``saved``: its names' values before it); nested
        ones share the budget of the outermost one."""
        self.running = (*self.running, saved)
        try:
            yield
        finally:
            self.running = self.running[:-1]
            if not self.running:
                self.left = MAX_ITERATIONS
