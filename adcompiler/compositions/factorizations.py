"""What the compiler and the tape share about the factorizations: their results as NumPy's named
tuples, and the functions that are compositions of the factorizations' primitives and products
(``np.kron``, ``np.linalg.matrix_power``, ``multi_dot``, ``np.vander``, ``np.polyfit``,
``np.linalg.cond``, ``np.linalg.norm``'s singular-value norms, SciPy's ``cho_factor``/
``cho_solve``).

Invariants: each composition computes NumPy's (or SciPy's) values by NumPy's own steps (the
same products in the same order: ``matrix_power``'s binary powers, ``vander``'s running
product, ``polyfit``'s column scaling before ``lstsq``), so results agree to the last bit where
NumPy's steps are primitives here; ``ops`` is the Builder (compiler) or the tape's ops.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class EighResult(NamedTuple):
    """``np.linalg.eigh``'s result."""

    eigenvalues: Any
    eigenvectors: Any


class SVDResult(NamedTuple):
    """``np.linalg.svd``'s result (``full_matrices=False``)."""

    U: Any
    S: Any
    Vh: Any


class QRResult(NamedTuple):
    """``np.linalg.qr``'s result (``mode='reduced'``)."""

    Q: Any
    R: Any


def eye_like(ops, a):
    """An identity matrix (stack) of ``a``'s shape and dtype, made from ``ones_like`` (no
    constant, so it works on every ``ops``)."""
    ones = ops.ones_like(a)
    return ops.tril(ones) - ops.tril(ones, k=-1)


def matrix_power(ops, a, n: int):
    """``np.linalg.matrix_power(a, n)`` for an int ``n`` known while compiling: NumPy's
    products (``n <= 3`` directly, else by binary powers); negative ``n`` powers ``inv(a)``."""
    if n == 0:
        return eye_like(ops, a)
    if n < 0:
        a, n = ops.inv(a), -n
    if n == 1:
        return a
    if n == 2:
        return ops.matmul(a, a)
    if n == 3:
        return ops.matmul(ops.matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else ops.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else ops.matmul(result, z)
    return result


def kron(ops, a, b, a_shape, b_shape):
    """``np.kron(a, b)``: NumPy's interleaved outer product, reshaped."""
    nda, ndb = len(a_shape), len(b_shape)
    if nda == 0 or ndb == 0:
        return ops.multiply(a, b)
    nd = max(nda, ndb)
    sa = (1,) * max(0, ndb - nda) + tuple(a_shape)
    sb = (1,) * max(0, nda - ndb) + tuple(b_shape)
    if ndb > nda:
        a = ops.expand_dims(a, axis=tuple(range(ndb - nda)))
    if nda > ndb:
        b = ops.expand_dims(b, axis=tuple(range(nda - ndb)))
    a = ops.expand_dims(a, axis=tuple(range(1, nd * 2, 2)))
    b = ops.expand_dims(b, axis=tuple(range(0, nd * 2, 2)))
    return ops.reshape(ops.multiply(a, b), tuple(int(i) * int(j) for i, j in zip(sa, sb)))


_REVERSED_COLUMNS = (("s", None, None, None), ("s", None, None, -1))


def vander(ops, x, length: int, columns: int, increasing: bool):
    """``np.vander(x, N, increasing)`` of a 1-D ``x`` of ``length`` entries, ``columns >= 1``:
    a column of ones, then the running product of ``x`` (NumPy's ``multiply.accumulate``)."""
    col = ops.expand_dims(x, axis=-1)
    out = ops.ones_like(col)
    if columns > 1:
        powers = ops.cumprod(ops.broadcast_to(col, (length, columns - 1)), axis=1)
        out = ops.concatenate([out, powers], axis=1)
    return out if increasing else ops.getitem(out, (), _REVERSED_COLUMNS)


def polyfit(ops, x, y, deg: int, length: int, eps: float, rcond=None):
    """``np.polyfit(x, y, deg)``'s coefficients: NumPy's scaled Vandermonde least squares
    (``rcond`` defaults to ``len(x) * eps``, as NumPy's)."""
    order = deg + 1
    lhs = vander(ops, x, length, order, False)
    scale = ops.sqrt(ops.sum(lhs * lhs, axis=0))
    c = ops.lstsq_x(lhs / scale, y, rcond=length * eps if rcond is None else rcond)
    return c / (scale if ops.ndim(y) == 1 else ops.expand_dims(scale, axis=-1))


def cond(ops, x, p=None):
    """``np.linalg.cond(x, p)`` for ``p`` None, 2 or -2: a ratio of singular values."""
    s = ops.svdvals(x)
    first, last = ops.getitem(s, (), (("e",), ("i", 0))), ops.getitem(s, (), (("e",), ("i", -1)))
    return last / first if p == -2 else first / last


def singular_norm(ops, x, ord, axes, shape, keepdims):
    """``np.linalg.norm(x, ord, axis=axes)`` for ``ord`` 2, -2 or 'nuc' of matrices: the
    largest, smallest or summed singular values of ``x`` with ``axes`` moved last."""
    nd = len(shape)
    np.linalg.norm(np.ones((1,) * nd), ord, tuple(axes))   # NumPy's error for axes out of range
    rows, cols = (a % nd for a in axes)
    rest = [i for i in range(nd) if i not in (rows, cols)]
    if (rows, cols) != (nd - 2, nd - 1):
        x = ops.transpose(x, axes=tuple(rest) + (rows, cols))
    s = ops.svdvals(x)
    out = {2: ops.max, -2: ops.min, "nuc": ops.sum}[ord](s, axis=-1)
    if keepdims:
        kept = tuple(1 if i in (rows, cols) else d for i, d in enumerate(shape))
        out = ops.reshape(out, kept)
    return out


def cho_factor(ops, a, lower: bool):
    """SciPy's ``cho_factor(a, lower)``'s matrix ``c``: the factor in one triangle, ``a``'s own
    entries in the other (SciPy leaves them there)."""
    if lower:
        return ops.cholesky(a) + (a - ops.tril(a))
    upper = ops.transpose(ops.cholesky(ops.transpose(a, axes=_swapped(ops, a))),
                          axes=_swapped(ops, a))     # read from a's upper triangle, as SciPy
    return upper + ops.tril(a, k=-1)


def cho_solve(ops, c, lower: bool, b):
    """SciPy's ``cho_solve((c, lower), b)``: two triangular solves with the factor in ``c``'s
    ``lower`` (or upper) triangle; the other triangle is not read."""
    if lower:
        y = ops.solve_triangular(c, b, lower=True, trans=0, unit_diagonal=False)
        return ops.solve_triangular(c, y, lower=True, trans=1, unit_diagonal=False)
    y = ops.solve_triangular(c, b, lower=False, trans=1, unit_diagonal=False)
    return ops.solve_triangular(c, y, lower=False, trans=0, unit_diagonal=False)


def _swapped(ops, a):
    nd = ops.ndim(a)
    return tuple(range(nd - 2)) + (nd - 1, nd - 2)


def multi_dot(ops, arrays, shapes):
    """``np.linalg.multi_dot(arrays)``: NumPy's order of the products (the cheapest by its cost
    model: three matrices compared directly, more by its chain-order table), a 1-D first
    (last) array read as a row (column), the result raveled (a scalar of two vectors)."""
    first, last = len(shapes[0]), len(shapes[-1])
    arrays, shapes = list(arrays), [tuple(s) for s in shapes]
    if first == 1:
        arrays[0], shapes[0] = ops.reshape(arrays[0], (1, shapes[0][0])), (1, shapes[0][0])
    if last == 1:
        arrays[-1], shapes[-1] = ops.reshape(arrays[-1], (shapes[-1][0], 1)), (shapes[-1][0], 1)
    if len(arrays) == 3:
        (a0, a1b0), (b1c0, c1) = shapes[0], shapes[2]
        if a0 * b1c0 * (a1b0 + c1) < a1b0 * c1 * (a0 + b1c0):
            out = ops.dot(ops.dot(arrays[0], arrays[1]), arrays[2])
        else:
            out = ops.dot(arrays[0], ops.dot(arrays[1], arrays[2]))
    else:
        out = _chain(ops, arrays, _chain_order(shapes), 0, len(arrays) - 1)
    if first == 1 and last == 1:
        return ops.getitem(out, (), (("i", 0), ("i", 0)))
    if first == 1 or last == 1:
        return ops.reshape(out, (-1,))
    return out


def _chain_order(shapes):
    """NumPy's ``_multi_dot_matrix_chain_order``: where each sub-chain splits."""
    n = len(shapes)
    p = [s[0] for s in shapes] + [shapes[-1][1]]
    cost = [[0.0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = float("inf")
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if q < cost[i][j]:
                    cost[i][j], split[i][j] = q, k
    return split


def _chain(ops, arrays, split, i, j):
    if i == j:
        return arrays[i]
    k = split[i][j]
    return ops.dot(_chain(ops, arrays, split, i, k), _chain(ops, arrays, split, k + 1, j))
