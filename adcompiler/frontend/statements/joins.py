"""Join a variable's abstract values across the paths that bind it (the branches of an ``if``, a
conditional expression or ``and``/``or``, a loop's iterations), and coerce each path's value to
the joined one.

Invariants: ints join ints whatever their dtype (the first path's aval wins); a Python int
meeting a float (a Python float, a 0-d float array) becomes that float, its value exactly (an
accumulator ``out = 1`` that a loop multiplies by floats: NumPy's result is a float too); a
Python float meeting a 0-d float array becomes the array (of the array's dtype: NumPy 2 treats
a Python float as weak), a Python bool meeting a NumPy one a 0-d bool array; any other
disagreement is a located error naming the variable (:func:`join`), or no join
(:func:`joinable`). A Python number that starts a ``for`` loop whose body makes it an array is
not joined at all: the loop's first iteration is lowered on its own
(:func:`..loops.lower_for`).
"""

from __future__ import annotations

import numpy as np

from ...ir import Aval, Literal, Value


def join(src, stmt, name, avals, where):
    """The one aval of a variable that has ``avals`` on different paths, else a located
    error (at ``stmt`` of ``src``; ``where``: "branch" or "loop")."""
    first, *rest = avals
    for a in rest:
        joined = _join_two(first, a)
        if joined is None:
            error = src.error(stmt, f"`{name}` is {first} on one path and {a} on another "
                              f"({where})", "give it the same shape and type on every path")
            # a Python number that a loop's body makes an array: the loop may lower its first
            # iteration on its own (..loops.lower_for)
            error.number_becomes_array = where == "loop" and first.is_scalar and bool(a.ndim)
            raise error
        first = joined
    return first


def joinable(avals) -> bool:
    first, *rest = avals
    return all((first := _join_two(first, a)) is not None for a in rest)


def coerce(b, v, aval):
    """``v`` (a Value, a Literal or a Python number) as a value of ``aval``, emitted through
    the builder ``b`` where it needs a node (a 0-d array from a number, a cast)."""
    if isinstance(v, bool):
        v = Literal(v)
    elif isinstance(v, (int, float)):
        v = Literal(float(v) if aval.is_float else v)
    if isinstance(v, Literal):
        if aval.is_scalar:
            cast = {"float": float, "int": int, "bool": bool}[aval.kind]
            return Literal(cast(v.value))
        return b.emit("full", (v.value,), {"shape": (), "dtype": aval.dtype})
    if v.aval == aval:
        return v
    if aval.kind == "float" and v.aval.kind == "int":   # a traced Python int, widened
        return b.emit("to_float", (v,))
    if v.aval.is_scalar and not aval.is_scalar:
        return b.emit("full", (v,), {"shape": (), "dtype": aval.dtype})
    if v.aval.kind == aval.kind == "array" and v.aval.dtype != aval.dtype:
        return b.emit("astype", (v,), {"dtype": aval.dtype})  # float32 meeting float64
    return v


def aval_of(v) -> Aval:
    """The aval of a Value or Literal, or of the Python value ``v``."""
    return v.aval if isinstance(v, (Value, Literal)) else Aval.of(v)


def _join_two(first, a):
    """The aval joining two paths' avals of a variable, or None where they disagree."""
    if a == first or a.kind == first.kind == "int":
        return first
    if {a.kind, first.kind} == {"int", "float"} or (
            "int" in (a.kind, first.kind) and (a if first.kind == "int" else first).is_float
            and {a.known_shape, first.known_shape} == {()}):
        return a if first.kind == "int" else first   # a Python int widens, as NumPy's would
    if a.is_float and first.is_float and {a.known_shape, first.known_shape} == {()}:
        return _join_float_scalars(first, a)
    if a.dtype == first.dtype == "bool" and {a.known_shape, first.known_shape} == {()}:
        return Aval("array", "bool", ())  # a Python bool meeting a NumPy one
    return None


def _join_float_scalars(a, b) -> Aval:
    """A float that is a Python float on one path and a 0-d array on another: the array, of
    the array's dtype where the other is a Python float (NumPy 2 treats a Python float as
    weak: ``acc = 0.0`` then ``acc = acc + np.sum(x32)`` stays float32), else of both dtypes
    promoted."""
    arrays = [v.dtype for v in (a, b) if not v.is_scalar]
    return Aval("array", str(np.result_type(*arrays)) if arrays else "float64", ())
