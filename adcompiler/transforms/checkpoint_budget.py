"""A memory budget for checkpointed ``for`` loops (``checkpoint={"memory": "64MB"}``): how many
snapshots, and how many levels, a loop of ``T`` iterations gets from the size of its carried
values, known at compile time from their shapes.

A snapshot is the loop's carried values (``sum(nbytes)``); a step's residuals are bounded by
the carried values plus every value its body computes (what reverse mode could keep of one
iteration; it usually keeps less). A two-level schedule of segments of ``L`` holds ``T // L``
snapshots, one segment's ``L`` steps and the ``T % L`` steps past the full segments; ``d``
levels the snapshots of each level, the innermost segment's steps and the rest, cut alike. The choice: no checkpointing where all ``T`` steps fit; else two
levels with ``K = sqrt(T * step / snapshot)`` snapshots (the fewest bytes two levels hold) if
they fit, else the fewest levels that fit (each level one more forward run of every step);
else a CompileError saying the least it needs. Invariant: the bytes the chosen schedule holds,
by this bound, are at most the budget.
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import CompileError

_UNITS = {"": 1, "b": 1, "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12,
          "kib": 2 ** 10, "mib": 2 ** 20, "gib": 2 ** 30, "tib": 2 ** 40}


def parse_bytes(memory) -> int:
    """``memory=`` as a number of bytes: an int, or a string such as ``"64MB"``, ``"1.5 GiB"``
    (kB/MB/GB powers of 1000, KiB/MiB/GiB of 1024); else a TypeError saying what is accepted."""
    if isinstance(memory, int) and not isinstance(memory, bool) and memory >= 1:
        return memory
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([a-zA-Z]*)\s*", memory) \
        if isinstance(memory, str) else None
    if match and match.group(2).lower() in _UNITS:
        n = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
        if n >= 1:
            return n
    raise TypeError(f"Checkpoint(memory=...) takes a number of bytes (an int >= 1) or a string "
                    f"such as \"64MB\" or \"1.5GiB\", not {memory!r}")


def state_bytes(values) -> int | None:
    """The bytes of one iteration's carried ``values`` (from their avals); None where a shape is
    not known at compile time."""
    total = 0
    for v in values:
        aval = v.aval
        if aval.kind != "array" and not aval.is_scalar:
            return None
        shape = aval.known_shape
        if shape is None or not all(isinstance(n, int) for n in shape):
            return None
        total += int(np.prod(shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize
    return total


def step_bytes(body) -> int | None:
    """An upper bound on one iteration's residuals: the carried values and every value the body
    computes (an inner counted loop's times its trip count); None where a size is unknown."""
    total = state_bytes(body.params)
    for node in body.nodes:
        values = state_bytes(node.outputs)
        inner = [step_bytes(block) for block in node.regions]
        if values is None or None in inner:
            return None
        trips = node.inputs[0] if node.prim == "loop" else None
        if node.prim == "while" or (trips is not None and not hasattr(trips, "value")):
            return None
        total += values + (trips.value if trips is not None else 1) * sum(inner)
    return total


def held(trips: int, policy, state: int, step: int) -> int:
    """A bound on the bytes ``policy``'s schedule holds for a loop of ``trips`` iterations, as
    checkpointing.py cuts it: each level's snapshots of ``state`` bytes, the innermost segment's
    steps of ``step`` bytes, and (counted as held alongside, as its stacks may be) the rest past
    the full segments, itself cut the same way with more levels."""
    lengths = policy.lengths(trips)
    if not lengths:
        return trips * step
    full, rest = divmod(trips, lengths[0])
    counts = [full] + [a // b for a, b in zip(lengths, lengths[1:])]
    tail = held(rest, policy, state, step) if len(lengths) > 1 else rest * step
    return sum(counts) * state + lengths[-1] * step + tail


def choose(trips: int, state: int, step: int, memory: int, node, Checkpoint):
    """``(snapshots, levels)`` for a loop of ``trips`` iterations (carried values of ``state``
    bytes, an iteration's residuals at most ``step``) under ``memory`` bytes, and a note saying
    what was chosen; ``(None, None)`` where every iteration's residuals fit. ``Checkpoint``: the
    policy class the candidates are made of (passed in: its module imports this one)."""
    says = f"memory={_spell(memory)} ({_spell(state)} a snapshot, {_spell(step)} a step)"
    if trips * step <= memory:
        return None, None, f"{says}: all {trips:,} iterations kept"
    # two levels: K snapshots + T / K steps' residuals, least at K = sqrt(T * step / state)
    keep = max(1, round((trips * step / max(state, 1)) ** 0.5))
    candidates = [Checkpoint(snapshots=min(keep, trips))]
    candidates += [Checkpoint(levels=d) for d in range(3, max(trips.bit_length(), 3) + 1)]
    sizes = []
    for policy in candidates:
        sizes.append(held(trips, policy, state, step))
        if sizes[-1] <= memory:
            snapshots = trips // policy.lengths(trips)[0]
            return policy.snapshots, policy.levels, (
                f"{says}: {policy.levels} levels, {snapshots:,} snapshots, "
                f"{_spell(sizes[-1])} held")
    raise CompileError(f"checkpoint memory={_spell(memory)} is less than the least this loop's "
                       f"{trips:,} iterations hold checkpointed ({_spell(min(sizes))}: the "
                       f"loop `{(node.source or '').strip()}`)",
                       hint=f"give at least memory={min(sizes)} (bytes)")


def _spell(n: int) -> str:
    for unit, size in (("GB", 10 ** 9), ("MB", 10 ** 6), ("kB", 10 ** 3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"
