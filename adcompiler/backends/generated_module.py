"""The generated module of one gradient: its imports, the constants comment, the helpers and
buffers the body needs, then ``def fname(...)``, written by the NumPy emitter or, for
``xp_name="cp"``, the CuPy one (``"da"``: the Dask one).

Invariants: the module imports only what its code uses (numexpr, the thread helper, the poison
helper, the array module); the source is byte-identical for identical graphs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import sizing, walk
from . import scatters
from .constant_exprs import spelled
from .constants import constants_comment
from .distinct import distinct_guard
from .emit import Emitter, indent
from .recycled import NAMES as RECYCLED_NAMES
from .recycled import kept_lines


@dataclass
class Emission:
    source: str         # the module: helpers, kernels, buffers, then ``def fname(...)``
    constants: dict     # module-level name -> the value the source reads under it
    uses_math: bool
    kernels: tuple = ()  # the CuPy backend's ElementwiseKernels (see cuda_kernels.Kernel)


def emit_module(graph, fname: str, arg_names: list, xp_name="np", doc=None,
                plain=False) -> Emission:
    """The source of ``def fname(*arg_names): ...`` computing ``graph``, plus its helpers.

    ``arg_names`` lists every parameter of the user's function; those the graph traces bind
    to its parameters by name, the others were folded in while compiling. Constants are read
    from module-level names the caller binds. ``xp_name="cp"`` spells the code for CuPy, with
    one ``ElementwiseKernel`` per fused node (see :mod:`adcompiler.backends.cupy_emit`).
    """
    if xp_name == "cp":   # loaded for CuPy code only (its kernels' tables cost import time)
        from .cupy_emit import CupyEmitter
        em = CupyEmitter(graph, xp_name, plain, fname)
    elif xp_name == "da":
        from .dask_emit import DaskEmitter
        em = DaskEmitter(graph, xp_name, plain)
    else:
        em = Emitter(graph, xp_name, plain)
    em.reserve(f"_{fname}_buffers", f"_new_{fname}_buffers")  # the pool's module-level names
    em.reserve(f"_{fname}_returned", *RECYCLED_NAMES)            # and the kept results'
    for p in graph.params:
        em.name_param(p)
    for v in graph.consts:
        em.name_global(v)
    made = _made_in_body(em, graph, xp_name)
    lines = [f"{name} = {call}" for name, call in made.items()] + em.body()
    module, take, give = em.pool_prologue(fname)
    if getattr(em, "recycle", None):   # the results' arrays kept for the next call
        kept = [em.name(v) for v in sorted(em.recycle, key=em.recycle.get)]
        more = kept_lines(fname, kept)
        module, take, give = module + more[0], take + more[1], more[2] + give
    # f(a, a) writing into a (Dask code writes into no argument)
    guard = [] if plain or xp_name == "da" else distinct_guard(graph, xp_name)
    lines = guard + take + lines[:-1] + give + lines[-1:]  # the last line is the return
    if graph.errstate and xp_name == "np":  # the user's np.errstate, over the whole body
        lines = [f"with np.errstate({_keywords(graph.errstate)}):"] + indent(lines)
    header = f"def {fname}({', '.join(arg_names)}):"
    doc_lines = [f'    """{doc}"""'] if doc else []
    body = "\n".join(doc_lines + ["    " + ln if ln else ln for ln in
                                  "\n".join(lines).split("\n")])
    imports = _scipy_imports(graph, xp_name, plain) + (
        ["import sys as _sys"] if getattr(em, "recycle", None) else []) + (
        ["import numexpr as ne"] if em.uses_numexpr else []) + (
        ["from adcompiler.runtime.threaded import threaded as _threaded"] if em.uses_threads
        else []) + (["from adcompiler.runtime.poison import poison as _poison"]
                    if em.uses_poison else [])
    constants = {em.name(v): a for v, a in graph.consts.items() if em.name(v) not in made}
    module_lines = ((["\n".join(imports)] if imports else []) + constants_comment(constants)
                    + em.helpers() + module)
    uses_math = any(n.params.get("py") for n in walk(graph.nodes))
    source = "\n\n\n".join(module_lines + [header + "\n" + body]) + "\n"
    return Emission(source, constants, uses_math, tuple(getattr(em, "kernels", ())))


def _scipy_imports(graph, xp_name, plain=False) -> list:
    """``import scipy.linalg`` (``import cupyx.scipy.linalg`` for CuPy code) for each SciPy
    module the code calls (``scipy.sparse``: rows added by a sparse product, :mod:`.scatters`):
    SciPy is optional, imported only by code that uses it."""
    from ..ir.primitives import PRIMS
    if xp_name == "cp":   # CuPy code reads the ``cupyx`` it is given (the loader imports its
        return []         # cupyx.scipy modules, a stand-in where CuPy cannot run)
    modules = sorted({PRIMS[n.prim].spell.rpartition(".")[0] for n in walk(graph.nodes)
                      if PRIMS[n.prim].spell.startswith("scipy.")}
                     | scatters.modules(walk(graph.nodes), xp_name, plain))
    return [f"import {m}" for m in modules]


def _keywords(settings) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sorted(settings.items()))


def _made_in_body(em, graph, xp_name) -> dict:
    """``{name: call}`` of the constants the body makes itself: ahead of time only, where one
    body serves every size and a constant such as ``np.eye(n)`` changes with it
    (:mod:`.constant_exprs`)."""
    if not sizing.is_symbolic():
        return {}
    calls = {em.name(v): spelled(a, xp_name) for v, a in graph.consts.items()}
    return {name: call for name, call in calls.items() if call is not None}
