"""Derivative templates: one small rule per primitive, grouped by family, shared by every engine.

A vector-Jacobian rule has the signature ``rule(ops, g, ans, *args, **params)`` and returns the
cotangent of one argument: ``g`` is the cotangent of the result ``ans``, ``args`` are the
primitive's inputs and ``params`` its static attributes (``axis``, ``keepdims``, ...). ``ops`` is
a NumPy-like namespace, so the same rule runs on three kinds of values:

- IR values: ``ops`` is the compiler's Builder and each call emits a node (the static compiler);
- arrays: ``ops`` is :class:`templates.ops.ArrayOps` over NumPy or CuPy (the dynamic tape);
- SymPy symbols: ``ops`` is :class:`templates.ops.SymbolicOps` (the check against ``sympy.diff``).

The ``ops`` protocol: every primitive name (``ops.exp``, ``ops.where``, ``ops.sum``, ...) plus
``shape(x)``, ``ndim(x)``, ``size(x)``, ``dtype(x)``, ``unbroadcast(g, x)`` (sum ``g`` back to
``x``'s shape), ``getitem(x, arrays, index)``, ``scatter_add(g, arrays, shape, index)``,
``last_writes(x, arrays, index)`` (which writes of ``x[index] = v`` stay where an index repeats:
a bool mask of ``x[index]``'s shape, or None when all of them do).
Arithmetic uses Python operators. Rules never look at concrete values, only at shapes.

A Jacobian-vector (tangent) rule has the signature ``rule(ops, dx, ans, *args, **params)`` and
returns the tangent of the result contributed by one argument's tangent ``dx`` (``dx`` has that
argument's shape); the tangent of the result is the sum over the arguments that carry one. It sits
beside the adjoint rule of the same primitive. For broadcasting primitives :func:`tangent`
broadcasts each contribution to the result's shape, as :func:`cotangent` sums adjoints back.

Files: ``elementwise.py``, ``reductions.py``, ``scans.py`` (cumsum, cumprod), ``linalg.py``,
``factorizations.py`` (cholesky, eigh, svd, qr, pinv, triangular solves),
``shape.py`` (shape and indexing), ``einsum.py``.
The rule for ``np.tanh`` is in ``elementwise.py`` under "hyperbolic and trigonometric".
"""

from __future__ import annotations

VJPS: dict = {}        # prim -> tuple of per-argument rules (None: no gradient flows there)
VARIADIC: dict = {}    # prim -> rule(ops, argnum, g, ans, *args, **params)
BROADCASTING = set()   # prims whose cotangents are summed back over broadcast axes


def defvjp(prim, *rules, broadcasting=False):
    """Register one rule per positional argument of ``prim`` (None where no gradient flows)."""
    VJPS[prim] = rules
    if broadcasting:
        BROADCASTING.add(prim)


def defvjp_argnum(prim, rule):
    """Register one rule for every argument of a variadic primitive; it receives the argnum."""
    VARIADIC[prim] = rule


def has_rule(prim, argnum) -> bool:
    if prim in VARIADIC or prim in USER_VJPS:
        return True
    rules = VJPS.get(prim, ())
    return argnum < len(rules) and rules[argnum] is not None


def cotangent(ops, prim, argnum, g, ans, args, params):
    """The cotangent of ``args[argnum]`` of ``ans = prim[params](*args)`` given ``g``.

    This is the one entry point both engines call: it picks the rule and, for broadcasting
    primitives, sums the result back to the argument's shape.
    """
    params = {k: v for k, v in params.items() if k != "py"}
    g = _typed(ops, g, ans)
    if prim in USER_VJPS:
        return USER_VJPS[prim](ops, argnum, g, ans, *args)
    if prim in VARIADIC:
        out = VARIADIC[prim](ops, argnum, g, ans, *args, **params)
    else:
        out = VJPS[prim][argnum](ops, g, ans, *args, **params)
    if out is None:   # an idiom's "no share" (another argument's rule took the whole derivative)
        return None
    if prim in BROADCASTING:
        out = ops.unbroadcast(out, args[argnum])
    return _as_dtype_of(ops, out, args[argnum])


# ---- every cotangent has its primal's dtype (as JAX enforces) -------------------------------
def _float_array_dtype(x):
    """The dtype of ``x`` if it is a real floating array (an IR value of kind "array", a NumPy
    or CuPy array or scalar), else None: Python numbers are weak, they take their partner's."""
    aval = getattr(x, "aval", None)
    if aval is not None:
        dtype = aval.dtype if aval.kind == "array" else None
    else:
        dtype = getattr(x, "dtype", None)
    if dtype is None:
        return None
    name = _FLOAT_NAMES.get(dtype)
    if name is None:   # numpy.dtype(...).name costs ~1.5 us: three per cotangent on the tape
        import numpy
        d = numpy.dtype(dtype)
        name = _FLOAT_NAMES[dtype] = d.name if d.kind == "f" else ""
    return name or None


_FLOAT_NAMES: dict = {}   # a dtype (object or name) -> its name if real floating, else ""


def _is_weak(x) -> bool:
    """A Python number: a float, an IR literal, or an IR value of a Python scalar kind."""
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval.is_scalar
    return isinstance(x, (int, float))


def _typed(ops, g, ans):
    """``g`` with ``ans``'s dtype where it is a weak number and ``ans`` a float32 (float16...)
    array: a rule that spreads it (a reduction's broadcast, a read's scatter) must not make a
    float64 array of it, which would carry the whole adjoint into float64. A float64 ``ans``
    needs nothing (NumPy's default)."""
    dtype = _float_array_dtype(ans)
    if dtype is None or dtype == "float64" or g is None or not _is_weak(g):
        return g
    return ops.astype(g, dtype)


def _as_dtype_of(ops, out, x):
    """``out`` cast to ``x``'s dtype where both are real floating arrays of different dtypes
    (``x32 * y64``: the cotangent of ``x32``)."""
    want, have = _float_array_dtype(x), _float_array_dtype(out)
    if want is None or have is None or want == have:
        return out
    return ops.astype(out, want)


# ---- user rules: functions decorated with adcompiler.custom_vjp ----------------------------
USER_VJPS: dict = {}   # prim -> rule(ops, argnum, g, ans, *args): calls the user's backward


def defvjp_user(prim, rule):
    """Register the rule of a user's custom_vjp function (see :mod:`adcompiler.custom.vjp`). Kept
    apart from the built-in rules: it is the user's to check (``adcompiler.check_grad``), it
    emits calls of the user's functions (so it runs on the compiler's Builder only) and it has
    no tangent rule."""
    USER_VJPS[prim] = rule


# ---- tangent (forward-mode) rules ----------------------------------------------------------
JVPS: dict = {}          # prim -> tuple of per-argument tangent rules (None: no tangent flows)
JVP_VARIADIC: dict = {}  # prim -> rule(ops, argnum, dx, ans, *args, **params)


def defjvp(prim, *rules):
    """Register one tangent rule per positional argument of ``prim`` (None where none flows)."""
    JVPS[prim] = rules


def defjvp_argnum(prim, rule):
    """Register one tangent rule for every argument of a variadic primitive; it gets the argnum."""
    JVP_VARIADIC[prim] = rule


def has_jvp(prim, argnum) -> bool:
    if prim in JVP_VARIADIC:
        return True
    rules = JVPS.get(prim, ())
    return argnum < len(rules) and rules[argnum] is not None


def tangent(ops, prim, argnum, dx, ans, args, params):
    """The tangent of ``ans = prim[params](*args)`` contributed by the tangent ``dx`` of
    ``args[argnum]``; for broadcasting primitives it is broadcast to ``ans``'s shape."""
    params = {k: v for k, v in params.items() if k != "py"}
    if prim in JVP_VARIADIC:
        return JVP_VARIADIC[prim](ops, argnum, dx, ans, *args, **params)
    out = JVPS[prim][argnum](ops, dx, ans, *args, **params)
    if prim in BROADCASTING and tuple(ops.shape(out)) != tuple(ops.shape(ans)):
        out = ops.broadcast_to(out, ops.shape(ans))
    return out


from . import (einsum, elementwise, factorizations, linalg, reductions,  # noqa: E402,F401
               scans, shape)  # (the rules)
