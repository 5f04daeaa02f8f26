"""The ``ops`` namespaces that run templates on concrete arrays (NumPy or CuPy) and on SymPy.

The compiler's namespace is its IR Builder; these two implement the same protocol (see
:mod:`templates`) so that one rule serves the dynamic tape, the numeric checks and SymPy.
"""

from __future__ import annotations

import numpy


class ArrayOps:
    """Templates on arrays: primitive names map to the array module ``xp`` (numpy or cupy)."""

    def __init__(self, xp=numpy):
        self.xp = xp

    def __getattr__(self, name):
        from adcompiler.ir.primitives import ELEMENTWISE_BY_NAME
        row = ELEMENTWISE_BY_NAME.get(name)
        if row is not None and row.module != "numpy":   # scipy.special.erf, imported now
            return library_function(self.xp, row.module, name)
        return getattr(self.xp, name)

    def shape(self, x):
        return tuple(self.xp.shape(x))

    def ndim(self, x):
        return self.xp.ndim(x)

    def size(self, x):
        return int(self.xp.size(x))

    def dtype(self, x):
        return self.xp.result_type(x)

    def astype(self, x, dtype):
        return self.xp.asarray(x).astype(dtype)

    def reshape(self, x, shape):
        """As ``xp.reshape``; a Python scalar too (``np.outer(0.0, x)``'s rule reshapes the
        0.0), which CuPy's reshape refuses."""
        return self.xp.asarray(x).reshape(shape)

    def unbroadcast(self, g, x):
        from adcompiler.ir.primitives import sum_to
        shape = self.shape(x)
        if self.xp.shape(g) == shape:
            return g
        if self.xp is numpy:
            return sum_to(g, shape)
        lead = g.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape)
                                          if d == 1 and g.shape[i + lead] != 1)
        return self.xp.sum(g, axis=axes, keepdims=True).reshape(shape)

    def sum_to(self, g, shape):
        """The primitive ``sum_to``: ``g`` summed over broadcast axes down to ``shape``."""
        shape = tuple(shape)
        if tuple(g.shape) == shape:
            return g
        lead = g.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape)
                                          if d == 1 and g.shape[i + lead] != 1)
        return self.xp.sum(g, axis=axes, keepdims=True).reshape(shape)

    def getitem(self, x, arrays, index):
        from adcompiler.ir.primitives import build_index
        return x[build_index(index, arrays)]

    def setitem(self, x, v, arrays, index):
        from adcompiler.ir.primitives import build_index, store   # repeated indices: the last
        return store(self.xp, self.xp.array(x, copy=True), build_index(index, arrays), v)

    def last_writes(self, x, arrays, index):
        """The mask of the writes ``x[index] = v`` keeps (None: all of them, seen on NumPy or
        known from the index: scalars, a window's)."""
        from adcompiler.ir.primitives import build_index, kept_writes, writes_once
        if writes_once(index, [self.ndim(a) for a in arrays]):
            return None
        kept = kept_writes(self.xp, self.shape(x), build_index(index, arrays))
        return None if self.xp is numpy and kept.all() else kept

    def scatter_add(self, g, arrays, shape, index):
        from adcompiler.ir.primitives import build_index
        out = self.xp.zeros(shape, dtype=self.xp.result_type(g))
        idx = build_index(index, arrays)
        if self.xp is numpy:
            numpy.add.at(out, idx, g)
        else:  # CuPy: np.add.at does not dispatch; cupyx.scatter_add does the same.
            import cupyx
            cupyx.scatter_add(out, idx, g)
        return out

    def concatenate(self, xs, axis=0):
        return self.xp.concatenate(xs, axis=axis)

    def stack(self, xs, axis=0):
        return self.xp.stack(xs, axis=axis)

    def einsum(self, *xs, subscripts, optimize=False):
        """The primitive ``einsum`` (operands first, as the IR has them): ``xp.einsum``."""
        return self.xp.einsum(subscripts, *xs, optimize=optimize)

    # ---- square matrices: the primitives of these names are ``xp.linalg``'s ----------------
    def solve(self, a, b):
        return self.xp.linalg.solve(a, b)

    def inv(self, a):
        return self.xp.linalg.inv(a)

    def det(self, a):
        return self.xp.linalg.det(a)

    def slogdet_sign(self, a):
        return self.xp.linalg.slogdet(a)[0]

    def logabsdet(self, a):
        return self.xp.linalg.slogdet(a)[1]

    # ---- factorizations: one result each (templates/factorizations.py) ----------------------
    def cholesky(self, a):
        return self.xp.linalg.cholesky(a)

    def solve_triangular(self, a, b, lower=False, trans=0, unit_diagonal=False):
        if self.xp is numpy:
            import scipy.linalg as module
        else:
            import cupyx.scipy.linalg as module
        return module.solve_triangular(a, b, trans=trans, lower=lower,
                                       unit_diagonal=unit_diagonal)

    def eigh_values(self, a, UPLO="L"):
        return self.xp.linalg.eigh(a, UPLO)[0]

    def eigh_vectors(self, a, UPLO="L"):
        return self.xp.linalg.eigh(a, UPLO)[1]

    def eigvalsh(self, a, UPLO="L"):
        return self.xp.linalg.eigvalsh(a, UPLO)

    def svd_u(self, a):
        return self.xp.linalg.svd(a, full_matrices=False)[0]

    def svd_s(self, a):
        return self.xp.linalg.svd(a, full_matrices=False)[1]

    def svd_vh(self, a):
        return self.xp.linalg.svd(a, full_matrices=False)[2]

    def svdvals(self, a):
        return self.xp.linalg.svd(a, compute_uv=False)

    def qr_q(self, a):
        return self.xp.linalg.qr(a)[0]

    def qr_r(self, a):
        return self.xp.linalg.qr(a)[1]

    def pinv(self, a, rcond=None):
        return self.xp.linalg.pinv(a) if rcond is None else self.xp.linalg.pinv(a, rcond)

    def lstsq_x(self, a, b, rcond=None):
        return self.xp.linalg.lstsq(a, b, rcond=rcond)[0]


def library_function(xp, module, name):
    """``module.name`` (``scipy.special.erf``) for arrays of ``xp``: SciPy's for NumPy, CuPy's
    ``cupyx.scipy.special`` for CuPy; SciPy missing, an ImportError that says to install it."""
    from adcompiler.ir.primitives import LibraryFunction
    if xp is not numpy:
        module = "cupyx." + module
    return LibraryFunction(module, name).resolve()


def _sympy_function(sympy, spelling):
    """A row's SymPy spelling as a function: ``sympy.<name>``, or the row's expression."""
    if isinstance(spelling, str):
        return getattr(sympy, spelling)
    return lambda *args: spelling(sympy, *args)


class SymbolicOps:
    """Templates on SymPy scalars: used to check elementwise rules against ``sympy.diff``."""

    def __init__(self):
        import sympy

        from ..ir.primitives import ELEMENTWISE  # each row names its SymPy function, if any
        from ..ir.primitives import LOGISTIC_SYMPY   # and so do the sigmoids, not rows
        self.sp = sympy
        self._names = {r.name: _sympy_function(sympy, r.sympy)
                       for r in ELEMENTWISE if r.sympy is not None}
        self._names.update((n, _sympy_function(sympy, f)) for n, f in LOGISTIC_SYMPY.items())

    def __getattr__(self, name):
        return self._names[name]

    def _cmp(self, rel):
        return lambda x, y: self.sp.Piecewise((1, rel(x, y)), (0, True))

    def equal(self, x, y):
        return self._cmp(self.sp.Eq)(x, y)

    def greater(self, x, y):
        return self._cmp(self.sp.Gt)(x, y)

    def less(self, x, y):
        return self._cmp(self.sp.Lt)(x, y)

    def where(self, c, x, y):
        return self.sp.Piecewise((x, self.sp.Ne(c, 0)), (y, True))

    def clip(self, x, lo, hi):
        return self.sp.Min(self.sp.Max(x, lo), hi)

    def unbroadcast(self, g, x):
        return g

    def shape(self, x):
        return ()
