"""The tape on Dask arrays: ``dask.array`` spelled as the NumPy module the tape calls
(:func:`dask_module`) and the templates' ``ops`` on Dask arrays (:class:`DaskOps`).

Invariants: what the tape computes on a Dask array stays a lazy Dask array (one graph, chunk by
chunk; nothing is computed until the user asks, except a Python ``bool``/``float``/``int`` of a
tensor, which must compute its one value); NumPy arrays among Dask ones are taken as they are
(Dask broadcasts them); an operation Dask lacks raises a ``TypeError`` naming it and saying
what to do (:func:`missing`), never a NumPy copy of the data behind the user's back. Dask is
imported only when a Dask array is met.
"""

from __future__ import annotations

import numpy

from adcompiler.templates.ops import ArrayOps

_MODULE = []


def is_dask_array(value) -> bool:
    """True for a ``dask.array.Array`` (checked by module name: Dask is not imported to find
    out)."""
    return type(value).__module__.startswith("dask.") and hasattr(value, "chunks")


def dask_module():
    """The one :class:`DaskModule` (made on first use)."""
    if not _MODULE:
        _MODULE.append(DaskModule())
    return _MODULE[0]


def missing(what: str) -> TypeError:
    """The error for an operation that has no Dask spelling."""
    return TypeError(
        f"{what} cannot run on Dask arrays on the tape: dask.array has no such operation (or not "
        "for these arguments). Compute that operand first (x.compute(), or np.asarray(x) for a "
        "NumPy array) and pass NumPy arrays, or rewrite it in operations Dask has "
        "(docs/scaling-out.md lists what runs chunk-wise).")


class _DaskLinalg:
    """``dask.array.linalg`` with NumPy's meaning of ``cholesky``: the lower factor (Dask's
    returns the upper one unless asked, ``lower=True``)."""

    def __init__(self, linalg):
        self._linalg = linalg

    def cholesky(self, a):
        return self._linalg.cholesky(a, lower=True)

    def __getattr__(self, name):
        return getattr(self._linalg, name)


class DaskModule:
    """``dask.array`` with the NumPy names the tape calls that Dask spells otherwise or lacks
    (``array(copy=)``, ``copy``, ``size``); every other name is Dask's own, and a name Dask
    lacks is an ``AttributeError`` (which ``getattr(xp, name, None)`` reads as absent)."""

    def __init__(self):
        import dask.array
        self.da = dask.array
        self.ndarray = dask.array.Array
        self.linalg = _DaskLinalg(dask.array.linalg)

    def __getattr__(self, name):
        if name == "da":
            raise AttributeError(name)
        found = getattr(self.da, name, None)
        if found is None:
            raise AttributeError(f"dask.array has no {name}")
        return found

    def __repr__(self):
        return "<the tape's dask.array>"

    def array(self, x, dtype=None, copy=False):
        x = self.da.asarray(x)
        if dtype is not None and x.dtype != numpy.dtype(dtype):
            return x.astype(dtype)
        return x.copy() if copy else x   # a new Array of the same (immutable) graph

    def asarray(self, x, dtype=None):
        return self.da.asarray(x, dtype=dtype)

    def copy(self, x):
        return self.da.asarray(x).copy()

    def size(self, x):
        return int(numpy.prod(numpy.shape(x), dtype=numpy.int64))


class DaskOps(ArrayOps):
    """The templates on Dask arrays: scatters and writes as Dask assignments where each element
    is written at most once; SciPy's elementwise functions block by block."""

    def __getattr__(self, name):
        from adcompiler.ir.primitives import ELEMENTWISE_BY_NAME
        row = ELEMENTWISE_BY_NAME.get(name)
        if row is not None and row.module != "numpy":   # scipy.special.erf, chunk by chunk
            return _blockwise(row.module, name)
        try:
            return getattr(self.xp, name)
        except AttributeError:
            raise missing(f"np.{name}") from None

    def astype(self, x, dtype):
        return self.xp.asarray(x).astype(dtype)

    def dtype(self, x):
        return numpy.result_type(x.dtype if hasattr(x, "dtype") else x)

    def getitem(self, x, arrays, index):
        from adcompiler.ir.primitives import build_index
        return _indexed(x, build_index(index, arrays))

    def setitem(self, x, v, arrays, index):
        from adcompiler.ir.primitives import build_index, writes_once
        if not writes_once(index, [numpy.ndim(a) for a in arrays]):
            raise missing("an assignment through index arrays that may repeat (x[idx] = v)")
        out = self.xp.asarray(x).copy()
        out[build_index(index, arrays)] = v
        return out

    def last_writes(self, x, arrays, index):
        from adcompiler.ir.primitives import writes_once
        if writes_once(index, [numpy.ndim(a) for a in arrays]):
            return None
        raise missing("an assignment through index arrays that may repeat (x[idx] = v)")

    def scatter_add(self, g, arrays, shape, index):
        """``np.add.at(zeros(shape), index, g)``: ``g`` padded with zeros where the index is
        slices of step 1 (``x[1:]``: ``g``'s chunks kept), an assignment into zeros where each
        element is written once (ints, other slices, one window); index arrays that may repeat
        are summed by NumPy's ``np.add.at`` in one task (they index a parameter-sized array)."""
        from adcompiler.ir.primitives import build_index, writes_once
        idx = build_index(index, arrays)
        dtype = numpy.result_type(g.dtype if hasattr(g, "dtype") else g)
        padded = _padded(self.xp.da, g, shape, idx)
        if padded is not None:
            return padded
        if writes_once(index, [numpy.ndim(a) for a in arrays]):
            out = self.xp.zeros(shape, dtype=dtype)
            out[idx] = g
            return out
        return _add_at(self.xp.da, shape, dtype, idx, g)

    def solve_triangular(self, a, b, lower=False, trans=0, unit_diagonal=False):
        if unit_diagonal or trans not in (0, 1, "N", "T"):
            raise missing("scipy.linalg.solve_triangular with unit_diagonal or trans='C'")
        if trans in (1, "T"):   # the transpose's triangle is the other one
            return self.xp.linalg.solve_triangular(a.T, b, lower=not lower)
        return self.xp.linalg.solve_triangular(a, b, lower=lower)


def _indexed(x, index):
    try:
        return x[index]
    except NotImplementedError:
        raise missing("indexing with several integer arrays (x[i, j])") from None


def _padded(da, g, shape, index):
    """``g`` padded with zeros to ``shape`` where ``index`` is slices of step 1, else None."""
    if len(index) > len(shape) or not all(isinstance(i, slice) for i in index) or \
            tuple(g.shape) != tuple(len(range(*i.indices(n))) for i, n in zip(index, shape)) + \
            tuple(shape[len(index):]):
        return None
    widths = []
    for item, n in zip(index, shape):
        start, stop, step = item.indices(n)
        if step != 1:
            return None
        widths.append((start, n - max(stop, start)))
    return da.pad(g, widths + [(0, 0)] * (len(shape) - len(index)))


def _blockwise(module, name):
    """``module.name`` (a SciPy ufunc) over Dask arrays, chunk by chunk (``da.map_blocks``
    after broadcasting the operands to one chunking)."""
    import dask.array as da

    from adcompiler.ir.primitives import LibraryFunction
    fn = LibraryFunction(module, name).resolve()

    def call(*args):
        arrays = da.broadcast_arrays(*[da.asarray(a) for a in args])
        return da.map_blocks(fn, *arrays, dtype=numpy.result_type(*[a.dtype for a in arrays]))
    return call


def _add_at(da, shape, dtype, idx, g):
    import dask

    def add_at(g, idx):
        out = numpy.zeros(shape, dtype=dtype)
        numpy.add.at(out, idx, g)
        return out
    return da.from_delayed(dask.delayed(add_at)(g, idx), shape, dtype=dtype)
