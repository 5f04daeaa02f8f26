"""Scatter-adds of whole rows (``np.add.at(out, idx, g)``, the adjoint of a gather ``x[idx]``)
in their fastest NumPy form: a sparse product where SciPy is installed, else NumPy's 1-D
``np.add.at`` on flat indices, chosen by size as measured in benchmarks/SCATTER.md.

Invariants: only NumPy code (``xp_name == "np"``) and never plain code (the frontend reads back
``np.add.at``, not the helper); only an integer index array on the leading axis (the others whole)
into a float64 target from float64 values of exactly ``idx.shape + out.shape[1:]``; the helper
``_add_rows(idx, g, shape)`` returns ``np.add.at(np.zeros(shape), idx, g)``, adding each row's
values in the order ``np.add.at`` adds them (bit for bit on zeros; an update ``out += rows`` adds
the rows' sum to ``out`` once, so it equals ``np.add.at(out, ...)`` to rounding, about 1e-16
relative), negative indices included; an index out of bounds raises NumPy's own IndexError.
Another backend (Dask) overrides by not calling :func:`rows_form` or by its own ``choose``.
"""

from __future__ import annotations

import ast

import numpy as np

# The measured rule (benchmarks/SCATTER.md, docs/performance.md): np.add.at stays for 1-D
# targets (NumPy's own fast path since 1.25, faster than every replacement), rows narrower
# than MIN_WIDTH and scatters of fewer than MIN_ENTRIES values (the helper's few calls cost
# more than np.add.at there), and targets over TARGET_RATIO times as many rows as the index
# has entries (the helper makes and adds the whole target). The sparse product pays for its
# matrix (about 70 us) from SPARSE_ENTRIES values on; below, flat indices.
MIN_WIDTH = 4
MIN_ENTRIES = 2048
TARGET_RATIO = 10
SPARSE_ENTRIES = 1 << 15
CHUNK = 1 << 16   # flat indices made per np.add.at call: bounded memory, as fast as one call

_CHECK = '''
    rows, i = shape[0], index.reshape(-1).astype(np.intp, copy=False)
    if not i.size:
        return np.zeros(shape)
    low, high = i.min(), i.max()
    if low < -rows or high >= rows:
        np.add.at(np.zeros(shape), index, g)   # raises NumPy's IndexError'''

HELPERS = {"sparse": f'''
def _add_rows(index, g, shape):
    """np.add.at(np.zeros(shape), index, g) for an index of rows, as the product of g with
    a sparse matrix of ones at (k, index[k]) (faster, measured in benchmarks/SCATTER.md)."""{_CHECK}
    if low < 0:
        i = np.where(i < 0, i + rows, i)
    pick = scipy.sparse.csr_matrix((np.ones(i.size), i, np.arange(i.size + 1)),
                                   shape=(i.size, rows))
    return (pick.T @ g.reshape(i.size, -1)).reshape(shape)
''', "flat": f'''
def _add_rows(index, g, shape):
    """np.add.at(np.zeros(shape), index, g) for an index of rows, as NumPy's fast 1-D
    np.add.at on flat indices, {CHUNK} at a time (measured in benchmarks/SCATTER.md)."""{_CHECK}
    out = np.zeros(shape)
    flat, width = out.reshape(-1), out.size // rows
    g = g.reshape(i.size, width)
    cols, step = np.arange(width), max(1, {CHUNK} // width)
    for k in range(0, i.size, step):
        np.add.at(flat, (i[k:k + step, None] * width + cols).reshape(-1),
                  g[k:k + step].reshape(-1))
    return out
'''}


def choose(n: int, shape, has_scipy: bool):
    """The form for ``n`` index entries into a target of ``shape``: "sparse", "flat" or None
    (``np.add.at``)."""
    width = int(np.prod(shape[1:], dtype=np.int64))
    if (len(shape) < 2 or width < MIN_WIDTH or n * width < MIN_ENTRIES
            or shape[0] > TARGET_RATIO * n):
        return None
    return "sparse" if has_scipy and n * width >= SPARSE_ENTRIES else "flat"


def rows_form(node, xp_name: str, plain: bool):
    """The form of ``node`` (a ``scatter_add`` or ``index_add``), or None where it stays
    ``np.add.at``: see the module docstring for which scatters qualify."""
    if xp_name != "np" or plain:
        return None
    k = 1 if node.prim == "index_add" else 0   # inputs: [acc,] g, *index arrays
    g, arrays = node.inputs[k], node.inputs[k + 1:]
    shape = node.outputs[0].aval.known_shape
    spec = node.params["index"]
    if (not shape or len(arrays) != 1 or spec[0] != ("a", 0)
            or any(item != ("s", None, None, None) for item in spec[1:])):
        return None
    idx = arrays[0].aval
    if (idx.kind != "array" or np.dtype(idx.dtype).kind not in "iu" or not idx.known_shape
            or getattr(g, "aval", None) is None
            or g.aval.known_shape != tuple(idx.known_shape) + tuple(shape[1:])
            or {g.aval.dtype, node.outputs[0].aval.dtype} != {"float64"}
            or not all(isinstance(d, int) for d in shape + g.aval.known_shape)):
        return None
    from ..templates.factorizations import has_scipy
    return choose(int(np.prod(idx.known_shape, dtype=np.int64)), shape, has_scipy())


def rows_call(node, args, index):
    """``_add_rows(idx, g, shape)`` for ``node``; ``args`` its inputs' expressions, ``index``
    the position of the index array among them."""
    shape = ast.Tuple([ast.Constant(d) for d in node.outputs[0].aval.known_shape], ast.Load())
    return ast.Call(ast.Name("_add_rows", ast.Load()), [args[index], args[index - 1], shape], [])


def helper_source(forms) -> list:
    """The helper's definition for the forms the code uses (one form per module: the rule
    depends on SciPy only besides size)."""
    return [HELPERS[f].strip("\n") for f in sorted(set(forms))]


def modules(nodes, xp_name: str, plain: bool) -> set:
    """``{"scipy.sparse"}`` where one of ``nodes`` is added by the sparse product (the module
    imports it at its top, where ``adcompiler compile`` sees that it needs SciPy)."""
    return {"scipy.sparse"} if any(
        n.prim in ("scatter_add", "index_add") and rows_form(n, xp_name, plain) == "sparse"
        for n in nodes) else set()


def helper_function(form, np_module=np):
    """The helper of ``form`` as a function (for the probe and the tests)."""
    scope = {"np": np_module}
    if form == "sparse":
        import scipy.sparse
        scope["scipy"] = scipy
    exec(HELPERS[form], scope)
    return scope["_add_rows"]
