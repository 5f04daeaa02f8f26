"""Python names for the emitter's values: the user's where free, shared where live ranges allow.

Invariants:

- Two values share a name only where their live ranges never overlap: a value defined at
  statement ``at`` takes over a name only if no value stored under it (other than the partners
  of its own slot) is read after ``at`` (:class:`~adcompiler.backends.liveness.Liveness`).
- Parameters keep their exact names (callers pass them by position or by name).
- Module-level names (constants, the pool's tuple, kernels, helpers) and the builtins the code
  calls (``int``, ``reversed``...) are never bound to a local: one local assignment would make
  every read of the global in the function a local read.
- A loop's slots (one name per carried value, held by the body's params and next values for
  the whole loop) are distinct and bound before anything else named at the loop; no stack of
  the loop takes one of them, even where the carried result is never read after the loop, and
  neither slots nor stacks take a name the ``range(...)`` count reads (it is evaluated after
  they are assigned).
"""

from __future__ import annotations

import keyword

from ..ir import Value

RESERVED = {"np", "ne", "_threaded", "_poison", "cp", "cupyx", "math", "float", "_sum_to",
            "_last_writes", "_add_rows"}
_CUPY = {"cp", "cupyx"}   # read only by CuPy code: free names in NumPy code (a heat capacity cp)
_DASK = {"da", "_add_at"}  # read only by Dask code (backends.dask_emit)


def reserved(xp_name: str) -> set:
    """The module-level names code for ``xp_name`` ("np", "cp" or "da") reads."""
    if xp_name == "da":
        return (RESERVED - _CUPY) | _DASK
    return RESERVED if xp_name == "cp" else RESERVED - _CUPY
BUILTINS = {"int", "range", "reversed", "slice"}  # called by the code: no local shadows them


class Naming:
    """Mixin of the Emitter: ``names``, ``holders``, ``taken`` and ``prefer`` (set up by the
    Emitter) and the rules that fill them."""

    def name(self, v, at=None, path=(), avoid=()) -> str:
        """``v``'s Python name: the user's when free. Defined at statement ``at``, a value may
        take over the name of values no longer read (``dl1 = dl1 + dl2``), and a value flowing
        into a branch's or loop's slot is computed straight into it. Never one of ``avoid``."""
        if v in self.names:
            return self.names[v]
        if v in self.prefer:
            slot, partners = self.prefer[v]
            if (at is not None and slot not in avoid
                    and not self._conflict(slot, at, path, partners)):
                return self._bind(v, slot)
        if v.name is None:  # a temporary: t1, t2, ... never shared with another value
            return self._bind(v, self._fresh("t", start=1))
        base = _base(v.name, v.origin)
        if keyword.iskeyword(base) or base in self.reserved | BUILTINS or not base.isidentifier():
            base = base + "_"
        if (at is not None and base in self.holders and base not in avoid
                and not self._conflict(base, at, path, {v})
                and not (self.plain and any(h.aval != v.aval for h in self.holders[base]))):
            return self._bind(v, base)  # (plain code, read again, keeps one aval per name)
        return self._bind(v, self._fresh(base))

    def name_param(self, p) -> str:
        """A parameter's name is its own, exactly: the generated function's signature."""
        assert p.name not in self.taken - BUILTINS, f"parameter {p.name!r} must keep its name"
        return self._bind(p, p.name)

    def name_global(self, v) -> str:
        """A module-level name (a constant): never taken over by a local value."""
        if v not in self.names:
            self.names[v] = self._fresh(_base(v.name, v.origin))
        return self.names[v]

    def reserve(self, *names):
        """Names the module defines at its top: no value of the function takes them."""
        self.taken.update(names)

    def _fresh(self, base, start=0) -> str:
        """``base``, or ``base_1``, ``base_2``... (``t1``, ``t2``... from ``start``): the first
        name not yet taken, now taken."""
        k = start
        n = f"{base}{k}" if start else base
        while n in self.taken:
            k += 1
            n = f"{base}{k}" if start else f"{base}_{k}"
        self.taken.add(n)
        return n

    def _partners(self, v) -> set:
        """The values sharing ``v``'s slot: ``v`` and, through nested phis, the outer ones."""
        return {v} | (self.prefer[v][1] if v in self.prefer else set())

    def _conflict(self, name, at, path, partners) -> bool:
        return any(self.live.read_after(h, at, path)
                   for h in self.holders.get(name, ()) if h not in partners)

    def _bind(self, v, n):
        self.names[v] = n
        self.holders.setdefault(n, []).append(v)
        self.taken.add(n)
        return n

    def slot_names(self, values, at, path, avoid=frozenset()) -> list:
        """The names of a branch's or loop's results, defined together at ``at``: distinct
        (each slot is live through the whole construct) and none of ``avoid``."""
        slots = []
        for v in values:
            slots.append(self.name(v, at, path, set(avoid) | set(slots)))
        return slots

    def bind_slots(self, slots, blocks, carried, yields):
        """Bind each block's carried params to their slots, and prefer each next value's slot,
        before anything else is named at the loop (its stacks: see the module docstring)."""
        for block, skip in blocks:
            for slot, p in zip(slots, block.params[skip:]):
                self._bind(p, slot)
        for slot, v, x in zip(slots, carried, yields):
            if isinstance(x, Value):
                self.prefer.setdefault(x, (slot, self._partners(v) | {x}))


def _base(name, origin=None):
    """The user's name behind an SSA name: ``dl1`` for ``dl1_2``; ``t`` for a temporary. A
    value from the user's variable (``origin``) keeps that name whole: ``w_1`` stays ``w_1``."""
    if not name:
        return "t"
    if origin and (name == origin or _base(name) == origin):
        return origin
    head, _, tail = name.rpartition("_")
    return head if head and tail.isdigit() else name
