"""Classify a call's arguments: traced (floats, arrays) or static (ints, tuples...), and key them.

Invariant: two calls with equal keys lower to the same graph, so a compiled specialisation
can be reused; a traced argument's key is its abstract value, a static one's is its value.
"""

from __future__ import annotations

import inspect

import numpy as np

from .ir import Aval

_STATIC_TYPES = (bool, int, str, type(None), tuple, np.dtype, type)


def classify(value, name, differentiate: bool):
    """An Aval for a traced argument, or the value itself for a static one."""
    if isinstance(value, float):
        return Aval("float", "float64")
    if isinstance(value, (np.ndarray, np.generic)):
        return Aval("array", value.dtype.name, tuple(value.shape))
    if _is_device_array(value):
        return Aval("array", np.dtype(value.dtype).name, tuple(value.shape))
    if differentiate:
        if isinstance(value, (int, bool)):
            raise TypeError(f"cannot differentiate with respect to {name!r}: it is an integer "
                            f"({value!r}); pass a float such as {float(value)!r}")
        if isinstance(value, list):
            raise TypeError(f"cannot differentiate with respect to {name!r}: it is a list; "
                            "pass np.asarray(...) instead")
        raise TypeError(f"cannot differentiate with respect to {name!r}: "
                        f"{type(value).__name__} is not a float or an array")
    if isinstance(value, list):
        return Aval.of(np.asarray(value))
    return value


def _is_device_array(value):
    return type(value).__module__.startswith("cupy") and hasattr(value, "shape")


def key_of(arguments: dict) -> tuple:
    """A hashable key of a bound call: avals for traced arguments, values for static ones."""
    out = []
    for value in arguments.values():
        if isinstance(value, Aval):
            out.append(value)
        else:
            try:
                hash(value)
            except TypeError:
                raise TypeError(f"argument {value!r} is neither an array, a float, nor hashable")
            out.append(("static", type(value).__name__, value))
    return tuple(out)


def resolve_wrt(fn, wrt) -> tuple:
    """``wrt`` as a tuple of parameter names (it accepts names, positions, or one of either)."""
    params = list(inspect.signature(fn).parameters)
    items = wrt if isinstance(wrt, (tuple, list)) else (wrt,)
    names = []
    for item in items:
        if isinstance(item, int) and not isinstance(item, bool):
            if not -len(params) <= item < len(params):
                raise ValueError(f"wrt={item}: {fn.__name__} has {len(params)} parameters")
            names.append(params[item])
        elif item in params:
            names.append(item)
        else:
            raise ValueError(f"wrt={item!r} is not a parameter of {fn.__name__} "
                             f"(its parameters: {', '.join(params)})")
    if len(set(names)) != len(names):
        raise ValueError(f"wrt names a parameter twice: {wrt!r}")
    return tuple(names)
