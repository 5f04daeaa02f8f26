"""NumPy functions that are other NumPy functions under another name or argument order, and
the few that are short compositions of supported ones: each handler here hands its call to the
handler of the function it is (``FUNCTIONS``, built in :mod:`adcompiler.frontend.calls`), so its
gradient, its located errors and its generated code are that function's.

- other names: ``np.radians``/``np.degrees`` (``deg2rad``/``rad2deg``), ``np.fix``
  (``trunc``), ``np.positive`` (a copy), NumPy 2's ``np.linalg.matmul``/``outer``/
  ``tensordot``/``cross``, ``np.matrix_transpose`` and ``np.linalg.matrix_transpose``
  (the last two axes swapped), ``np.linalg.trace``/``diagonal`` (of the last two axes, where
  ``np.trace`` takes the first two), ``np.vecdot``/``np.linalg.vecdot`` (of real arrays:
  ``sum(x1 * x2, axis)``), ``np.shape``/``np.ndim``/``np.size`` (the attributes),
  ``np.astype`` (the method);
- compositions: ``np.ptp`` (``max - min``), ``np.select`` (nested ``np.where``, the first
  true condition winning, as NumPy's), ``np.heaviside`` (``where``: no gradient, as a step
  has none), ``np.logical_xor``, ``np.cov`` and ``np.corrcoef`` (centred products; ``rowvar``,
  ``bias``, ``ddof``; no weights).
"""

from __future__ import annotations

import numpy as np

from ...ir import Value
from .binding import CallError, axis_arg, bind, positional, static


def handlers(functions: dict, attributes: dict, methods: dict) -> dict:
    """``{alias: handler}``, each handing its call to ``functions``' handler of what it is."""
    f = functions

    def renamed(target):
        def handler(b, args, kwargs):
            return f[target](b, args, kwargs)   # (its keywords taken from the call's own)
        return handler

    def last_two(target, names):
        def handler(b, args, kwargs):
            p = bind(args, kwargs, names)
            extra = {k: p[k] for k in names[1:] if k in p}
            return f[target](b, [p[names[0]]], {**extra, "axis1": -2, "axis2": -1})
        return handler

    def attribute(name):
        def handler(b, args, kwargs):
            (x,) = positional(args, 1)
            return attributes[name](b, x) if isinstance(x, Value) else getattr(np, name)(x)
        return handler

    out = {np.radians: renamed(np.deg2rad), np.degrees: renamed(np.rad2deg),
           np.fix: renamed(np.trunc), np.positive: renamed(np.copy),
           np.shape: attribute("shape"), np.ndim: attribute("ndim"), np.size: attribute("size"),
           np.ptp: lambda b, args, kwargs: _ptp(f, b, args, kwargs),
           np.select: lambda b, args, kwargs: _select(f, b, args, kwargs),
           np.heaviside: lambda b, args, kwargs: _heaviside(f, b, args, kwargs),
           np.logical_xor: lambda b, args, kwargs: f[np.not_equal](
               b, [f[np.not_equal](b, [x, 0], {}) for x in positional(args, 2)], kwargs),
           np.cov: lambda b, args, kwargs: _cov(f, b, args, kwargs),
           np.corrcoef: lambda b, args, kwargs: _corrcoef(f, b, args, kwargs)}
    linalg = {"matmul": renamed(np.matmul), "outer": renamed(np.outer),   # NumPy 2's
              "tensordot": renamed(np.tensordot),
              "trace": last_two(np.trace, ("x", "offset", "dtype")),
              "diagonal": last_two(np.diagonal, ("x", "offset"))}
    out.update({getattr(np.linalg, n): h for n, h in linalg.items() if hasattr(np.linalg, n)})
    out.update(_numpy2(f, methods))
    return out


def _numpy2(f, methods) -> dict:
    """NumPy 2's names (absent from NumPy 1)."""
    def swap_last(b, args, kwargs):
        (x,) = positional(args, 1)
        return f[np.swapaxes](b, [x, -1, -2], kwargs)

    def vecdot(b, args, kwargs):
        p = bind(args, kwargs, ("x1", "x2", "axis"), required=2)
        product = f[np.multiply](b, [p["x1"], p["x2"]], {})
        return f[np.sum](b, [product], {"axis": axis_arg(p.get("axis", -1))})

    def cross(b, args, kwargs):
        p = bind(args, kwargs, ("x1", "x2", "axis"), required=2)
        return f[np.cross](b, [p["x1"], p["x2"]], {"axis": axis_arg(p.get("axis", -1))})

    def astype(b, args, kwargs):
        p = bind(args, kwargs, ("x", "dtype", "copy"), required=2)
        return methods["astype"](b, p["x"], [p["dtype"]], {})

    names = {"matrix_transpose": swap_last, "vecdot": vecdot, "astype": astype}
    out = {getattr(np, n): h for n, h in names.items() if hasattr(np, n)}
    for n, h in (("matrix_transpose", swap_last), ("vecdot", vecdot), ("cross", cross)):
        if hasattr(np.linalg, n):
            out[getattr(np.linalg, n)] = h
    return out


def _ptp(f, b, args, kwargs):
    p = bind(args, kwargs, ("a", "axis", "out", "keepdims"))
    if p.get("out") is not None:
        raise CallError("does not support `out=` here", "use the returned value")
    reduce = {k: p[k] for k in ("axis", "keepdims") if k in p}
    return f[np.subtract](b, [f[np.max](b, [p["a"]], dict(reduce)),
                              f[np.min](b, [p["a"]], dict(reduce))], {})


def _select(f, b, args, kwargs):
    """``np.select(conditions, choices, default)``: the first true condition's choice."""
    p = bind(args, kwargs, ("condlist", "choicelist", "default"), required=2)
    conditions, choices = list(p["condlist"]), list(p["choicelist"])
    if len(conditions) != len(choices):
        raise CallError("list of cases must be same length as list of conditions",
                        "give one choice per condition")
    out = p.get("default", 0)
    for condition, choice in reversed(list(zip(conditions, choices))):
        out = f[np.where](b, [condition, choice, out], {})
    return out


def _heaviside(f, b, args, kwargs):
    """0 below 0, ``h0`` at 0, 1 above: piecewise constant, so its gradient is 0."""
    x, h0 = positional(args, 2)
    at_zero = f[np.where](b, [f[np.equal](b, [x, 0.0], {}), h0, 1.0], {})
    out = f[np.where](b, [f[np.less](b, [x, 0.0], {}), 0.0, at_zero], {})
    return f[np.where](b, [f[np.isnan](b, [x], {}), x, out], kwargs)


def _cov(f, b, args, kwargs):
    """``np.cov(m, y, rowvar, bias, ddof)``: ``X X^T / (N - ddof)`` of the centred rows."""
    p = bind(args, kwargs, ("m", "y", "rowvar", "bias", "ddof", "fweights", "aweights",
                            "dtype"))
    if any(p.get(k) is not None for k in ("fweights", "aweights", "dtype")):
        raise CallError("does not support `fweights=`, `aweights=` or `dtype=` here",
                        "weight the observations yourself: X * w before the products")
    rowvar, bias = static(p.get("rowvar", True), "rowvar"), static(p.get("bias", False), "bias")
    x = _observations(f, b, p["m"], p.get("y"), rowvar)
    n = b.shape(x)[1]
    ddof = static(p.get("ddof"), "ddof")
    ddof = (0 if bias else 1) if ddof is None else ddof
    centred = f[np.subtract](b, [x, f[np.mean](b, [x], {"axis": 1, "keepdims": True})], {})
    product = f[np.matmul](b, [centred, f[np.transpose](b, [centred], {})], {})
    out = f[np.divide](b, [product, float(n - ddof)], {})
    return f[np.squeeze](b, [out], {}) if b.shape(out) == (1, 1) else out


def _observations(f, b, m, y, rowvar):
    """The variables as rows (2-D), ``y``'s appended, as ``np.cov`` arranges them."""
    def rows(a):
        a = f[np.atleast_2d](b, [a], {})
        return a if rowvar or b.shape(a)[0] == 1 else f[np.transpose](b, [a], {})
    x = rows(m)
    return x if y is None else f[np.concatenate](b, [[x, rows(y)]], {"axis": 0})


def _corrcoef(f, b, args, kwargs):
    """``np.corrcoef(x, y, rowvar)``: the covariance over the outer product of the standard
    deviations (NumPy clips the result to [-1, 1]; so does this)."""
    p = bind(args, kwargs, ("x", "y", "rowvar", "dtype"))
    if p.get("dtype") is not None:
        raise CallError("does not support `dtype=` here", "cast the result with .astype(...)")
    c = _cov(f, b, [p["x"]], {"y": p.get("y"), "rowvar": p.get("rowvar", True)})
    if not b.shape(c):
        return f[np.divide](b, [c, c], {})
    d = f[np.sqrt](b, [f[np.diagonal](b, [c], {})], {})
    out = f[np.divide](b, [c, f[np.outer](b, [d, d], {})], {})
    return f[np.clip](b, [out, -1.0, 1.0], {})
