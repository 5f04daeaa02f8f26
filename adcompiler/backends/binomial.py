"""The binomial (Revolve, Griewank) checkpointing schedule of a counted ``for`` loop, run by
the generated code: ``_Binomial(T, s, advance, width)`` stands for the loop's snapshot stacks.

The forward sweep gives it every step's carried values (``store.put(k, (h,))``); it keeps a
copy only at the *spine*, the positions the optimal schedule snapshots on the way (at most ``s``,
the start included). The reverse sweep reads ``hs[k]`` for ``k = T-1, ..., 0``: the store
drops the snapshots past ``k``, runs ``advance(j, *state)`` (one step of the loop's body,
without residuals) from the last snapshot up to ``k``, taking snapshots at Revolve's split
points on the way, and hands out a copy of the state at ``k``.

Optimality (the tests compare with a brute-force DP): reversing ``t`` steps from a snapshot
with ``c`` slots (its own included) takes ``F(t, c) = r t - C(c + r, r - 1)`` advances, ``r``
the least with ``C(c + r, c) >= t``, with Revolve's split (:func:`_split`). The forward sweep
runs every step anyway, so its snapshots cost nothing: the spine cuts ``[0, T)`` into parts
reversed with ``s, s - 1, ..., 1`` slots, sized by :func:`_spine` to minimise the sum of their
``F`` (a sum of convex functions: filled by increasing marginal cost ``r``).

Invariant: at most ``s`` snapshots are held; the state handed out for ``k`` is the loop's.
The generated module carries this source (:func:`helper_source`): it runs without adcompiler.
"""

from __future__ import annotations

import inspect


def _beta(c, r):
    """C(c + r, c): the most steps ``c`` slots reverse with ``r`` advances of each step."""
    out = 1
    for i in range(1, min(c, r) + 1):
        out = out * (max(c, r) + i) // i
    return out


def _split(t, c):
    """Revolve's advance from a snapshot holding ``c`` slots (its own included) to reverse
    ``t`` steps: the next snapshot's distance, ``1 <= m < t`` (``c >= 2``, ``t >= 2``)."""
    reps, rng = 0, 1
    while rng < t:
        reps += 1
        rng = rng * (reps + c) // reps
    bino1 = rng * reps // (c + reps)
    bino2 = bino1 * c // (c + reps - 1) if c > 1 else 1
    bino3 = 0 if c == 1 else (bino2 * (c - 1) // (c + reps - 2) if c > 2 else 1)
    bino4 = bino2 * (reps - 1) // c
    bino5 = bino3 * (c - 2) // reps if c > 2 else 0
    if t <= bino1 + bino3:
        m = bino4
    elif t >= rng - bino5:
        m = bino1
    else:
        m = t - bino2 - bino3
    return max(1, min(m, t - 1))


def _spine(trips, slots):
    """The forward sweep's snapshot positions (0 first): parts of ``[0, trips)`` reversed with
    ``slots, slots - 1, ..., 1`` slots, each given ``C(c + r - 1, c)`` steps at the least ``r``
    whose ``C(c + r, c)`` cover ``trips``, the rest at cost ``r`` to the first parts."""
    caps = list(range(slots, 0, -1))
    r = 0
    while sum(_beta(c, r) for c in caps) < trips:
        r += 1
    sizes = [_beta(c, r - 1) if r else 0 for c in caps]
    left = trips - sum(sizes)
    for i, c in enumerate(caps):
        more = min(left, _beta(c, r) - sizes[i])
        sizes[i] += more
        left -= more
    positions, at = [], 0
    for size in sizes:
        if size and at < trips:
            positions.append(at)
            at += size
    return positions


class _Binomial:
    """The snapshot stacks of a loop of ``trips`` steps under the binomial schedule with
    ``slots`` snapshots; ``view(i)`` stands for the stack of carried value ``i``."""

    def __init__(self, trips, slots, advance, width):
        self.trips, self.slots, self.advance, self.width = trips, slots, advance, width
        self.spine = set(_spine(trips, slots))
        self.held, self.order = {}, []   # position -> state; positions held, ascending
        self.at, self.state = None, None
        self.most, self.steps = 0, 0     # the most snapshots held; advances run

    def view(self, i):
        return _View(self, i)

    def put(self, k, state):
        """The forward sweep's carried values before step ``k``: kept on the spine."""
        if k in self.spine:
            self._keep(k, state)

    def get(self, k, i):
        if self.at != k:
            self._reach(k)
        return self.state[i]

    def _keep(self, k, state):
        self.held[k] = tuple(_copied(x) for x in state)
        self.order.append(k)
        self.most = max(self.most, len(self.order))

    def _reach(self, k):
        while self.order and self.order[-1] > k:
            del self.held[self.order.pop()]
        p = self.order[-1]
        state = self.held[p]
        while p < k:
            c = self.slots - len(self.order) + 1
            m = k - p if c == 1 else _split(k - p + 1, c)
            for j in range(p, p + m):
                state = self.advance(j, *state)
            self.steps += m
            p += m
            if c > 1:
                self._keep(p, state)
                state = self.held[p]
        self.at, self.state = k, tuple(_copied(x) for x in state)


class _View:
    """One carried value's stack, as the reverse sweep reads it: ``v[k]``."""

    def __init__(self, store, i):
        self.store, self.i = store, i

    def __getitem__(self, k):
        return self.store.get(k, self.i)


def _copied(x):
    return x.copy() if hasattr(x, "copy") and hasattr(x, "shape") else x


def helper_source() -> str:
    """The source the generated module carries."""
    return "\n\n\n".join(inspect.getsource(obj).strip("\n") for obj in
                         (_beta, _split, _spine, _Binomial, _View, _copied))
