"""A cheap key for positional arguments that hold containers (dicts, lists, tuples, NamedTuples,
dataclasses of arrays): what lets a training loop's calls with a params dict skip classifying
the arguments again (``GradientFunction``'s container fast path).

Invariant: two calls with equal keys classify alike (:func:`adcompiler.api.signature.classify`
depends on nothing else: the containers' types, keys and lengths, the arrays' shapes and dtypes,
which leaves are Python floats, and the values of the static ones), so the code compiled for
one runs the other; ``None`` where only the full path can tell (a CuPy array, an object).
"""

from __future__ import annotations

import dataclasses

import numpy as np

_STATIC = (int, bool, str, type(None))


def key(args) -> tuple | None:
    """The key of ``args``, or None."""
    out = []
    for a in args:
        part = _part(a)
        if part is None:
            return None
        out.append(part)
    return tuple(out)


def _part(a):
    t = type(a)
    if t is np.ndarray:
        return a.shape, a.dtype
    if t is float:
        return float
    if t in _STATIC:
        return t, a
    if isinstance(a, np.generic):
        return (t,)
    if t is dict:
        return _container(t, tuple(a), a.values())
    if t is list or isinstance(a, tuple):
        return _container(t, len(a), a)
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return _container(t, None, [getattr(a, f.name) for f in dataclasses.fields(a)])
    return None


def _container(t, keys, items):
    parts = []
    for item in items:
        part = _part(item)
        if part is None:
            return None
        parts.append(part)
    return t, keys, tuple(parts)
