"""The subscripts of ``np.einsum`` brought to the normal form of the primitive ``einsum``, which
its rules (``templates/einsum.py``) assume, and the ``optimize=`` it passes on.

Normal form: an explicit output (``"ij,jk"`` becomes ``"ij,jk->ik"``, NumPy's implicit rule:
the ellipsis's axes, then the letters that appear once, sorted); letters only (an ellipsis is
spelled in letters the subscripts do not use, its axes broadcast from the right as NumPy's);
no letter twice in one operand; each letter one size wherever it appears. The :class:`Plan`
says how to get there, operand by operand: the axes of length 1 to squeeze out (NumPy
broadcasts them), then, where a letter repeats within an operand, the flat positions of its
diagonal (distinct, read-only). Invariants: a plan depends on the subscripts and the shapes
only (cached); subscripts NumPy would refuse, or that are not supported, raise
:class:`EinsumError` (a ValueError with a hint), which the compiler locates and the tape raises.
"""

from __future__ import annotations

import string
from functools import lru_cache
from typing import NamedTuple, Optional

import numpy as np

HINT = 'write the subscripts as NumPy does: np.einsum("ij,jk->ik", a, b)'


class EinsumError(ValueError):
    """Subscripts NumPy would refuse too (the message says why), or that are not supported."""

    def __init__(self, message, hint=HINT):
        super().__init__(message)
        self.hint = hint


class Operand(NamedTuple):
    """How one operand is prepared: the axes squeezed out, then (where a letter repeats) the
    flat positions of its diagonal, and the distinct letters it ends with; ``term``: its
    letters after the squeeze, repeated ones too (the tape takes the diagonal as a view)."""
    squeeze: tuple
    positions: Optional[np.ndarray]
    letters: str
    term: str


class Plan(NamedTuple):
    operands: tuple   # of Operand
    out: str


# ---- parsing --------------------------------------------------------------------------------
def _terms(subscripts, count):
    """``(input terms, output term or None)``, spaces removed, characters checked."""
    text = subscripts.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != count:
        were = "was" if count == 1 else "were"
        raise EinsumError(f"has subscripts for {len(terms)} operand{'s' * (len(terms) != 1)} "
                          f"but {count} {were} given")
    for term in terms + ([rhs] if arrow else []):
        bare = term.replace("...", "", 1)
        bad = next((c for c in bare if c not in string.ascii_letters), None)
        if bad is not None:
            raise EinsumError(f"subscripts may hold letters and one '...' per operand, not "
                              f"{bad!r} (in {subscripts!r})")
    return terms, (rhs if arrow else None)


def _spelled(terms, out, shapes):
    """Terms and output with each ellipsis spelled in fresh letters (right-aligned)."""
    used = set("".join(terms) + (out or ""))
    fresh = [c for c in string.ascii_letters if c not in used]
    widths = []
    for k, (term, shape) in enumerate(zip(terms, shapes)):
        named = len(term.replace("...", ""))
        width = len(shape) - named if "..." in term else 0
        if width < 0 or ("..." not in term and named != len(shape)):
            raise EinsumError(f"operand {k} has {len(shape)} dimensions but its subscripts "
                              f"{term!r} name {named}")
        widths.append(width)
    ellipsis = "".join(fresh[:max(widths, default=0)])
    if out is None:   # NumPy's implicit output: '...', then the letters named once, sorted
        named = "".join(t.replace("...", "") for t in terms)
        out = "..." + "".join(sorted(c for c in set(named) if named.count(c) == 1))
    elif "..." not in out and ellipsis:
        raise EinsumError("sums over the axes of '...' but its output has no '...': NumPy "
                          "refuses this too", "put '...' in the output, or sum explicitly")
    return [t.replace("...", ellipsis[len(ellipsis) - w:]) for t, w in zip(terms, widths)], \
        out.replace("...", ellipsis)


def _sizes(terms, shapes, out):
    """Each letter's length (a length 1 broadcasts, as NumPy's), checked as NumPy checks."""
    sizes = {}
    for k, (term, shape) in enumerate(zip(terms, shapes)):
        mine = {}
        for c, d in zip(term, shape):
            if mine.setdefault(c, d) != d:
                raise EinsumError(f"operand {k} repeats index '{c}' on axes of lengths "
                                  f"{mine[c]} and {d}: a diagonal needs equal lengths")
            if sizes.get(c, 1) not in (1, d) and d != 1:
                raise EinsumError(f"index '{c}' has length {sizes[c]} in one operand and {d} "
                                  f"in operand {k}", "NumPy refuses this too")
            sizes[c] = d if d != 1 else sizes.get(c, 1)
    for c in out:
        if out.count(c) > 1 or c not in sizes:
            why = "more than once" if c in sizes else "but in no operand"
            raise EinsumError(f"names index '{c}' in its output {why}")
    return sizes


def _operand(term, shape, sizes):
    squeeze = tuple(i for i, (c, d) in enumerate(zip(term, shape)) if d == 1 and sizes[c] != 1)
    rest = "".join(c for i, c in enumerate(term) if i not in squeeze)
    letters = "".join(dict.fromkeys(rest))
    if len(letters) == len(rest):
        return Operand(squeeze, None, letters, rest)
    kept_shape = tuple(d for i, d in enumerate(shape) if i not in squeeze)
    return Operand(squeeze, diagonal_positions(rest, kept_shape), letters, rest)


@lru_cache(maxsize=256)
def diagonal_positions(term, shape):
    """The flat positions, in an array of ``shape`` whose axes are named by ``term`` (with a
    letter repeated), of the entries whose repeated letters agree: an array with one axis per
    distinct letter, in order of first appearance (read-only; distinct entries)."""
    letters = "".join(dict.fromkeys(term))
    lengths = dict(zip(term, shape))
    grid = np.indices(tuple(lengths[c] for c in letters), dtype=np.int64)
    out = np.ravel_multi_index(tuple(grid[letters.index(c)] for c in term), shape)
    out.flags.writeable = False
    return out


def from_sublists(args):
    """NumPy's sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` as ``(subscripts,
    operands)``: axis numbers 0-51 are the letters A-Z, a-z (as NumPy spells them), an
    ``Ellipsis`` is ``...``; an odd count of arguments ends with the output's sublist."""
    args = list(args)
    out = args.pop() if len(args) % 2 else None
    operands, terms = args[0::2], args[1::2]
    spelled = [_sublist(term) for term in terms]
    subscripts = ",".join(spelled) + ("" if out is None else "->" + _sublist(out))
    return subscripts, operands


def _sublist(term) -> str:
    if not isinstance(term, (list, tuple)):
        raise EinsumError("in the sublist form each operand is followed by a list of axis "
                          f"numbers, not {term!r}", HINT)
    letters = []
    for axis in term:
        if axis is Ellipsis:
            letters.append("...")
        elif isinstance(axis, (int, np.integer)) and not isinstance(axis, bool) \
                and 0 <= axis < 52:
            letters.append((string.ascii_uppercase + string.ascii_lowercase)[int(axis)])
        else:
            raise EinsumError(f"subscript {axis!r} is not within the valid range [0, 52)", HINT)
    return "".join(letters)


@lru_cache(maxsize=256)
def plan(subscripts, shapes):
    """The :class:`Plan` of ``np.einsum(subscripts, *operands)`` for operands of ``shapes``."""
    terms, out = _spelled(*_terms(subscripts, len(shapes)), shapes)
    sizes = _sizes(terms, shapes, out)
    return Plan(tuple(_operand(t, s, sizes) for t, s in zip(terms, shapes)), out)


# ---- the options ----------------------------------------------------------------------------
def optimize_arg(value):
    """``optimize=``: False, True, 'greedy' or 'optimal' (passed on); a path is refused."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str) and value in ("greedy", "optimal"):
        return value
    raise EinsumError(f"with optimize={value!r} is not supported: a contraction path fits the "
                      "forward einsum only, not its adjoints",
                      "pass optimize=True, 'greedy' or 'optimal' (or leave it out)")
