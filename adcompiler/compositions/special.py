"""SciPy's reductions of exponentials and the normal distribution, spelled in primitives:
``scipy.special.logsumexp`` / ``softmax`` / ``log_softmax`` and ``scipy.stats.norm``'s
``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` and ``ppf``.

Invariants: SciPy's values, computed as stably as SciPy's (the maximum shifted out before
``exp``, so no entry overflows); SciPy's answers at the edges: an infinite maximum is not
shifted (all ``-inf`` gives ``-inf``, any ``+inf`` gives ``inf``, without warnings), a weight
``b`` of 0 drops its entry whatever it holds, a negative sum is NaN without ``return_sign``, a
scale that is not positive gives NaN. Every derivative is a primitive's rule (the shift cancels
out of the gradient; the elementwise special functions are rows of ``ir.primitives``).
"""

from __future__ import annotations

import math

from .axes import axes_in

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _reduce_params(axis):
    return {} if axis is None else {"axis": axis}


def _reduced_shape(shape, axis, keepdims) -> tuple:
    axes = axes_in(axis, len(shape))
    return tuple(1 if k in axes else n for k, n in enumerate(shape) if keepdims or k not in axes)


def _finite_max(ops, a, axis):
    """The maximum along ``axis`` (kept as length-1 axes), 0 where it is not finite: the shift
    that keeps ``exp`` from overflowing, and never ``inf - inf``. Its gradient is stopped (as
    JAX's logsumexp stops it): the result does not depend on the shift, so its derivative in
    it is exactly 0, where the max's rule would spend passes over ``a`` on terms that cancel
    (templates/idioms/shift_invariance.py proves this for a plain max, not through the
    ``where``)."""
    top = ops.max(a, **_reduce_params(axis), keepdims=True)
    return ops.stop_gradient(ops.where(ops.isfinite(top), top, 0.0))


def logsumexp(ops, a, axis=None, b=None, keepdims=False, return_sign=False):
    """``log(sum(b * exp(a)))`` along ``axis`` as ``m + log(sum(b * exp(a - m)))``, ``m`` the
    finite maximum; with ``return_sign``, ``(log|sum|, sign(sum))``."""
    if b is not None:   # SciPy: an entry of weight 0 adds nothing, even an inf or a NaN
        a = ops.where(ops.equal(b, 0.0), -math.inf, a)
    top = _finite_max(ops, a, axis)
    terms = ops.exp(ops.subtract(a, top))
    if b is not None:
        terms = ops.multiply(b, terms)
    total = ops.sum(terms, **_reduce_params(axis), keepdims=True)
    empty = ops.equal(total, 0.0)   # log(0) is -inf, without divide's warning
    size = ops.where(empty, 1.0, ops.abs(total))
    out = ops.add(ops.where(empty, -math.inf, ops.log(size)), top)
    sign = ops.sign(total)
    if not return_sign:   # SciPy: the log of a negative sum is NaN (no warning)
        out = ops.where(ops.less(total, 0.0), math.nan, out)
    if not keepdims:
        shape = _reduced_shape(tuple(ops.shape(out)), axis, False)
        out, sign = ops.reshape(out, shape=shape), ops.reshape(sign, shape=shape)
    return (out, sign) if return_sign else out


def softmax(ops, x, axis=None):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``, as SciPy computes it."""
    shifted = ops.exp(ops.subtract(x, ops.max(x, **_reduce_params(axis), keepdims=True)))
    return ops.divide(shifted, ops.sum(shifted, **_reduce_params(axis), keepdims=True))


def log_softmax(ops, x, axis=None):
    """``(x - m) - log(sum(exp(x - m)))``, ``m`` the finite maximum, as SciPy computes it."""
    shifted = ops.subtract(x, _finite_max(ops, x, axis))
    total = ops.sum(ops.exp(shifted), **_reduce_params(axis), keepdims=True)
    return ops.subtract(shifted, ops.log(total))


# ---- scipy.stats.norm -----------------------------------------------------------------------
def _positive_scale(ops, value, scale):
    """``value``, NaN where ``scale`` is not positive (SciPy's argument check); a Python scale
    known to be positive needs no test."""
    if isinstance(scale, (int, float)) and scale > 0:
        return value
    return ops.where(ops.greater(scale, 0.0), value, math.nan)


def _standardised(ops, x, loc, scale):
    centred = x if isinstance(loc, (int, float)) and loc == 0 else ops.subtract(x, loc)
    return centred if isinstance(scale, (int, float)) and scale == 1 else \
        ops.divide(centred, scale)


def norm_logpdf(ops, x, loc=0.0, scale=1.0):
    """``-z**2 / 2 - log(sqrt(2 pi)) - log(scale)``, ``z = (x - loc) / scale``."""
    z = _standardised(ops, x, loc, scale)
    out = ops.subtract(ops.multiply(ops.multiply(z, z), -0.5), LOG_SQRT_2PI)
    if not (isinstance(scale, (int, float)) and scale == 1):
        out = ops.subtract(out, ops.log(scale))
    return _positive_scale(ops, out, scale)


def norm_pdf(ops, x, loc=0.0, scale=1.0):
    return ops.exp(norm_logpdf(ops, x, loc, scale))


def _tail(prim, negate):
    """``norm.cdf`` (``ndtr(z)``), ``logcdf`` (``log_ndtr(z)``), ``sf`` (``ndtr(-z)``) and
    ``logsf`` (``log_ndtr(-z)``): each tail in its own function, accurate far out in it."""
    def tail(ops, x, loc=0.0, scale=1.0):
        z = _standardised(ops, x, loc, scale)
        return _positive_scale(ops, getattr(ops, prim)(ops.negative(z) if negate else z),
                               scale)
    return tail


norm_cdf, norm_logcdf = _tail("ndtr", False), _tail("log_ndtr", False)
norm_sf, norm_logsf = _tail("ndtr", True), _tail("log_ndtr", True)


def norm_ppf(ops, q, loc=0.0, scale=1.0):
    """``loc + scale * ndtri(q)``: the quantile function."""
    z = ops.ndtri(q)
    if not (isinstance(scale, (int, float)) and scale == 1):
        z = ops.multiply(z, scale)
    out = z if isinstance(loc, (int, float)) and loc == 0 else ops.add(z, loc)
    return _positive_scale(ops, out, scale)


NORM = {"logpdf": norm_logpdf, "pdf": norm_pdf, "cdf": norm_cdf, "logcdf": norm_logcdf,
        "sf": norm_sf, "logsf": norm_logsf, "ppf": norm_ppf}

