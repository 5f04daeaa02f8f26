"""What a call of Dask code returns: its lazy results, or all of them computed by one
``dask.compute`` (so work the outputs share, the forward pass over the data, is done once).

Policy (``compute=``, given to the transform): ``None``, the default, computes where no
differentiated argument is a Dask array (the parameters are NumPy arrays or floats, the data
is chunked: NumPy gradients, ready to update the parameters with) and leaves the results lazy
where one is (a gradient the size of the data, which the caller may compute, persist or save
chunk by chunk); ``True`` always computes, ``False`` never does. Results are computed all
together or not at all: computing some and leaving others lazy would run the shared forward
pass again when the rest are computed.
"""

from __future__ import annotations

from .namespaces import is_dask_array

da = None   # dask.array, for _finish copied into a module that imports it as da

COMPUTE_CHOICES = (None, True, False)


def check_compute(compute, backend: str):
    """``compute`` where it is one of ``None``, ``True``, ``False`` and the backend is Dask's
    (or ``"auto"``, which may pick it); else a ValueError saying what it is for."""
    if compute not in COMPUTE_CHOICES:
        raise ValueError(f"compute={compute!r}: use None (compute unless a differentiated "
                         "argument is a Dask array), True or False")
    if compute is not None and backend not in ("dask", "auto"):
        raise ValueError(f"compute={compute!r} is for backend='dask' (whose results are lazy "
                         f"Dask arrays); backend={backend!r} computes as it runs")
    return compute


def wants_compute(compute, differentiated) -> bool:
    """Whether to compute, under the policy above, for these differentiated values."""
    if compute is not None:
        return compute
    return not any(is_dask_array(v) for v in differentiated)


def finish(result, compute: bool):
    """``result`` (one value or a tuple) with its Dask arrays computed by one ``dask.compute``
    where ``compute``, else as it is."""
    if not compute:
        return result
    import dask
    values = result if isinstance(result, tuple) else (result,)
    done = dask.compute(*values)
    return tuple(done) if isinstance(result, tuple) else done[0]


def _finish(result, differentiated):
    """The default of adcompiler's backend="dask", in a standalone module: the results computed
    by one dask.compute where no differentiated argument is a Dask array (NumPy gradients of
    NumPy parameters), else the lazy Dask arrays."""
    if any(isinstance(x, da.Array) for x in differentiated):
        return result
    import dask
    done = dask.compute(*(result if isinstance(result, tuple) else (result,)))
    return tuple(done) if isinstance(result, tuple) else done[0]


HELPERS = (_finish,)   # copied into a standalone module of Dask code (adcompiler.aot)
