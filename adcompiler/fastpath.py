"""The fast call path of a gradient object: a generated guard chain in front of the compiled code.

After a signature has been compiled, calling ``ad.grad(f)`` with arguments of that signature
should cost little more than calling the generated function itself. A dictionary lookup keyed
on the arguments' shapes and dtypes costs ~0.5 µs in Python (a key to build and hash), which is
several times the whole gradient of a small scalar function. Instead, each compiled signature
adds one line of guards to a small function written for this gradient object::

    def call(a0=_NONE, a1=_NONE, *rest, **kwargs):
        if not rest and not kwargs:
            if type(a0) is float and type(a1) is float:
                return _run0(a0, a1)
            if type(a0) is _ndarray and a0.shape == (3,) and a0.dtype is _dtype0_0 ...:
                return _run1(a0, a1)
        return _slow(_given(a0, a1) + rest, kwargs)

The guards test identities (``type(a) is float``, ``a.dtype is <the dtype object>``), so a
miss is never wrong, only slower: an argument whose dtype is equal but not the same object, a
device array, or any keyword goes to the slow path, which classifies the arguments fully (and
compiles a new signature if needed). Past ``MAX_GUARDS`` signatures the chain stops growing and
the slow path's dictionary serves the rest.
"""

from __future__ import annotations

import numpy as np

MAX_GUARDS = 8

_NONE = object()  # an argument not given


def _given(*args) -> tuple:
    """The arguments actually passed (the chain's parameters default to ``_NONE``)."""
    n = len(args)
    while n and args[n - 1] is _NONE:
        n -= 1
    return args[:n]


def guards(key, namespace: dict, entry: int) -> str | None:
    """The guard expression for one fast key (see ``api._fast_key``), binding the objects it
    compares against in ``namespace``; None where a key has no cheap guard (device arrays)."""
    parts = []
    for k, item in enumerate(key):
        a = f"a{k}"
        if item is float:
            parts.append(f"type({a}) is float")
        elif len(item) == 2 and isinstance(item[0], tuple):   # (shape, dtype): an ndarray
            dtype = f"_dtype{entry}_{k}"
            namespace[dtype] = item[1]
            parts.append(f"type({a}) is _ndarray and {a}.shape == {item[0]!r} and "
                         f"{a}.dtype is {dtype}")
        elif len(item) == 2:                                  # (type, value): a static argument
            kind, value = f"_type{entry}_{k}", f"_value{entry}_{k}"
            namespace[kind], namespace[value] = item
            parts.append(f"type({a}) is {kind} and {a} == {value}")
        else:
            return None
    return " and ".join(parts) or "True"


def build(arity: int, entries: list, slow):
    """The call function for ``entries`` [(fast key, function)], falling back to
    ``slow(args, kwargs)``."""
    names = [f"a{k}" for k in range(arity)]
    namespace = {"_NONE": _NONE, "_ndarray": np.ndarray, "_slow": slow, "_given": _given}
    lines = [f"def call({''.join(n + '=_NONE, ' for n in names)}*rest, **kwargs):",
             "    if not rest and not kwargs:"]
    for entry, (key, function) in enumerate(entries[:MAX_GUARDS]):
        test = guards(key, namespace, entry)
        if test is None:
            continue
        namespace[f"_run{entry}"] = function
        lines += [f"        if {test}:", f"            return _run{entry}({', '.join(names)})"]
    if len(lines) == 2:
        lines.append("        pass")
    lines.append(f"    return _slow(_given({''.join(n + ', ' for n in names)}) + rest, kwargs)")
    exec(compile("\n".join(lines), "<adcompiler fast path>", "exec"), namespace)
    return namespace["call"]
