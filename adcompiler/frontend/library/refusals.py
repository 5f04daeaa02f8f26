"""Why a NumPy function that adcompiler does not compile is refused, in words that fit it: with
the compiled functions (``frontend/calls.py``'s ``FUNCTIONS``) and those run while compiling
(:mod:`.static_numpy`), the decision for every public function of ``np``, ``np.linalg`` and
``np.fft`` (tests/library/test_numpy_decisions.py checks that none is left without one; the
docs' reference lists them, docs/gen_tables.py).

"has no derivative rule" is the reason only for a function whose result carries a gradient. A
function whose result's shape depends on the values (``np.unique``, ``np.nonzero``) cannot be
compiled to code of fixed shapes at all; one that returns integers or booleans
(``np.bincount``, ``np.isin``) needs no derivative, and is simply not compiled yet. Each entry
gives the reason and what to write instead; :func:`reason` answers None for the others, which
keep the generic message.
"""

from __future__ import annotations

import numpy as np

_MASK_HINT = ("compute it outside the function and pass the result in, or keep the shape "
              "fixed with a mask: np.where(mask, x, 0.0), np.sum(np.where(mask, x, 0.0))")

# result shapes that depend on the values
_DATA_SHAPED = {
    "unique": _MASK_HINT, "unique_values": _MASK_HINT, "unique_counts": _MASK_HINT,
    "unique_inverse": _MASK_HINT, "unique_all": _MASK_HINT, "nonzero": _MASK_HINT,
    "argwhere": _MASK_HINT, "flatnonzero": _MASK_HINT, "extract": _MASK_HINT,
    "compress": "index with a mask known while compiling, or use np.where(mask, x, 0.0)",
    "trim_zeros": _MASK_HINT, "union1d": _MASK_HINT, "intersect1d": _MASK_HINT,
    "setdiff1d": _MASK_HINT, "setxor1d": _MASK_HINT,
    "bincount": "compute the counts outside the function, or compare with each bin: "
                "np.sum(idx[:, None] == np.arange(n), axis=0) (minlength= does not fix the "
                "length: a larger value lengthens it)",
}
# integer or boolean results: no derivative needed, not compiled yet
_INTEGER_RESULTS = {
    "array_equiv": "compare the values: np.all(a == b)",
    "signbit": "write x < 0 (or np.copysign(1.0, x) < 0 where -0.0 matters)",
    "lexsort": "sort by one key with np.argsort, or compute the order outside the function",
    "unravel_index": "compute the positions with // and %: i // n, i % n",
    "ravel_multi_index": "compute the flat position: i * n + j",
    "histogram": "compute the counts outside the function, or with np.digitize and sums",
    "packbits": "compute it outside the function", "unpackbits": "compute it outside the function",
    "nanargmax": "np.argmax(np.where(np.isnan(x), -np.inf, x))",
    "nanargmin": "np.argmin(np.where(np.isnan(x), np.inf, x))",
}


_OUTSIDE = "call it outside the compiled function (on x.dtype or x.shape it runs while compiling)"
_INTEGER_RESULTS.update({n: "compute it on integer arrays outside the function, or pass the "
                            "result in" for n in (
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_invert",
    "bitwise_count", "bitwise_left_shift", "bitwise_right_shift", "left_shift", "right_shift",
    "invert", "gcd", "lcm", "isnat", "iscomplex", "isreal", "busday_count", "busday_offset",
    "is_busday", "histogram2d", "histogramdd", "histogram_bin_edges", "linalg.matrix_rank",
    "mask_indices", "ix_", "divmod")})
# complex results
_COMPLEX = {n: "compute the spectrum outside the function, or write the transform as products "
               "with cosine and sine matrices (np.cos(2 * np.pi * np.outer(k, t) / n) @ x)"
            for n in ("fft.fft", "fft.ifft", "fft.fft2", "fft.ifft2", "fft.fftn", "fft.ifftn",
                      "fft.rfft", "fft.irfft", "fft.rfft2", "fft.irfft2", "fft.rfftn",
                      "fft.irfftn", "fft.hfft", "fft.ihfft")}
_COMPLEX.update({"linalg.eig": "for a symmetric matrix use np.linalg.eigh",
                 "linalg.eigvals": "for a symmetric matrix use np.linalg.eigvalsh",
                 "roots": "compute the roots outside the function",
                 "angle": "np.arctan2(imag, real) of the two real parts",
                 "sort_complex": "np.sort of the real values", "real_if_close": "use the array"})
# not computations on values: text, files, dtypes, NumPy's settings
_NOT_VALUES = {n: _OUTSIDE for n in (
    "array2string", "array_repr", "array_str", "base_repr", "binary_repr",
    "format_float_positional", "format_float_scientific", "datetime_as_string",
    "datetime_data", "typename", "mintypecode", "min_scalar_type", "promote_types",
    "result_type", "can_cast", "common_type", "isdtype", "get_include", "info", "show_config",
    "show_runtime", "test", "linalg.test", "fft.test", "load", "loadtxt", "genfromtxt",
    "fromfile", "fromregex", "fromstring", "frombuffer", "from_dlpack", "save", "savez",
    "savez_compressed", "savetxt", "printoptions", "get_printoptions", "set_printoptions",
    "seterr", "geterr", "seterrcall", "geterrcall", "setbufsize", "getbufsize", "einsum_path",
    "nested_iters", "require", "asmatrix", "bmat", "isfortran", "iscomplexobj", "isrealobj",
    "isscalar", "iterable", "may_share_memory", "shares_memory", "broadcast_shapes",
    "fftfreq", "fft.fftfreq", "fft.rfftfreq", "tril_indices", "triu_indices", "diag_indices")}
# call a function of the user's through NumPy
_CALLS_YOURS = {n: "call your function directly (a loop over the axis, np.where for the "
                   "cases): adcompiler inlines it" for n in (
    "apply_along_axis", "apply_over_axes", "piecewise", "fromfunction", "frompyfunc",
    "fromiter", "vectorize")}
# write into an argument
_WRITES = {n: "assign the new values instead: y = x.copy(), then y[index] = values"
           for n in ("copyto", "place", "put", "putmask", "put_along_axis", "fill_diagonal")}
# differentiable, not compiled yet: the gaps, each with what to write today
_NOT_YET = {
    "copysign": "np.abs(x) * np.where(y < 0, -1.0, 1.0)",
    "fmod": "x - y * np.trunc(x / y)", "float_power": "x.astype(np.float64) ** y",
    "ldexp": "x * 2.0 ** n", "frexp": "compute it outside the function",
    "modf": "np.trunc(x) and x - np.trunc(x)", "nextafter": "compute it outside the function",
    "spacing": "compute it outside the function",
    "nancumprod": "np.cumprod(np.where(np.isnan(x), 1.0, x))",
    "nancumsum": "np.cumsum(np.where(np.isnan(x), 0.0, x))",
    "nanprod": "np.prod(np.where(np.isnan(x), 1.0, x))",
    "nanstd": "the square root of nanvar's rewrite",
    "nanvar": "np.nansum((x - np.nanmean(x)) ** 2) / np.sum(~np.isnan(x))",
    "nanmedian": "np.median of the values without NaN, where their count is known",
    "nanpercentile": "np.percentile of the values without NaN",
    "nanquantile": "np.quantile of the values without NaN",
    "correlate": "np.convolve(a, v[::-1])", "block": "np.concatenate of np.concatenate",
    "dstack": "np.concatenate([a[..., None], b[..., None]], axis=-1)",
    "choose": "np.where (or np.take_along_axis) with the index array",
    "delete": "index the entries you keep: x[np.arange(n) != i]",
    "insert": "np.concatenate([x[:i], values, x[i:]])",
    "resize": "np.tile or np.concatenate, then a slice", "ediff1d": "np.diff(x.ravel())",
    "meshgrid": "broadcasting: x[None, :] and y[:, None]",
    "broadcast_arrays": "np.broadcast_to each array", "i0": "np.exp(np.abs(x)) * "
    "scipy.special.i0e(x)", "kaiser": "compute the window outside the function",
    "unwrap": "compute it outside the function", "unstack": "index along the axis: x[i]",
    "poly": "compute the coefficients outside the function",
    "polyadd": "add the coefficient arrays, padded to one length",
    "polysub": "subtract the coefficient arrays, padded to one length",
    "polymul": "np.convolve(a, b)", "polydiv": "compute it outside the function",
    "polyder": "c[:-1] * np.arange(len(c) - 1, 0, -1)",
    "polyint": "np.concatenate([c / np.arange(len(c), 0, -1), [0.0]])",
    "matvec": "np.einsum('...ij,...j->...i', A, x)", "vecmat": "np.einsum('...i,...ij->...j', x, A)",
    "cumulative_sum": "np.cumsum", "cumulative_prod": "np.cumprod",
    "asanyarray": "np.asarray", "ascontiguousarray": "np.asarray",
    "asfortranarray": "np.asarray", "asarray_chkfinite": "np.asarray",
    "tril_indices_from": "np.tril_indices(x.shape[0])",
    "triu_indices_from": "np.triu_indices(x.shape[0])",
    "diag_indices_from": "np.diag_indices(x.shape[0])", "fft.fftshift": "np.roll",
    "fft.ifftshift": "np.roll", "linalg.tensorinv": "np.linalg.inv of the reshaped matrix",
    "linalg.tensorsolve": "np.linalg.solve of the reshaped matrix",
}
_DECISIONS = (
    (_DATA_SHAPED, "is not supported in a compiled function: its result's shape depends on "
                   "the values, and compiled code has shapes fixed while compiling"),
    (_INTEGER_RESULTS, "is not supported in a compiled function yet: it returns integers or "
                       "booleans, which need no derivative, but adcompiler does not compile it"),
    (_COMPLEX, "is not supported: it returns complex values, and adcompiler differentiates "
               "real computations"),
    (_NOT_VALUES, "is not compiled for traced values: it works on text, files, dtypes or "
                  "NumPy's settings, not on an array's values"),
    (_CALLS_YOURS, "is not supported: it calls a function of yours through NumPy, which the "
                   "compiler cannot follow"),
    (_WRITES, "is not supported in an expression: it writes into an array in place"),
    (_NOT_YET, "has no derivative rule in adcompiler"),
)


def qualified_name(func) -> str | None:
    """``"linalg.eig"`` for ``np.linalg.eig``, ``"sum"`` for ``np.sum``: where NumPy's public
    namespaces hold ``func``; None for any other callable."""
    name = getattr(func, "__name__", None)
    if name is None:
        return None
    for prefix, namespace in (("", np), ("linalg.", np.linalg), ("fft.", np.fft)):
        if getattr(namespace, name, None) is func:
            return prefix + name
    return None


def decision(name: str):
    """``(message, hint)`` for the NumPy function named ``name`` ("linalg.eig"), or None."""
    for table, message in _DECISIONS:
        if name in table:
            return message, table[name]
    return None


def reason(func):
    """``(message after the function's name, hint)`` for a NumPy function refused for a reason
    of its own, or None (also for the differentiable ones not compiled yet, whose message is
    the lowering's own: see :func:`rewrite`)."""
    name = qualified_name(func)
    return None if name is None or name in _NOT_YET else decision(name)


def rewrite(func) -> str | None:
    """What to write today for a differentiable NumPy function not compiled yet, or None."""
    return _NOT_YET.get(qualified_name(func) or "")
