"""The compiler pipeline, in order: lower, check, differentiate, optimise, emit, load.

Invariant: every stage hands the next a graph that verifies; the result's ``source`` is exactly
what runs.
"""

from __future__ import annotations

import os
import re

import numpy as np

from .backends import check_modes
from .backends.generated_module import emit_module
from .backends.naming import reserved as reserved_names
from .backends.naming import BUILTINS
from .backends.numba_plan import emit as emit_numba
from .backends.numba_plan import plan as plan_loops
from .custom.vjp import custom_vjp, lower_call, runtime_names
from .errors import ArgumentError, CompileError
from .frontend.bindings.trees import (LEAF, Tree, describe_structure, leaves_of,
    parameter_names, structure_of, wrt_leaves)
from .ir.builder import Builder
from .frontend.lower import lower_function
from .frontend.reading.depth import with_room
from .ir import Aval, Literal, Value
from .ir.verify import verify
from .passes import contract_broadcast_products, invert_cholesky_adjoints, optimize
from .passes.logistic import recognise_logistics
from .runtime import numba_cache
from .runtime.compile import XP_NAMES, Compiled, load_backend
from .transforms.branch_values import bind_on_every_path
from .transforms.checkpointing import checkpoint_loops
from .transforms.forward import add_tangents
from .transforms.reverse import add_adjoint

MODES = ("grad", "value_and_grad", "vjp")
FORWARD_MODES = ("jvp", "hvp")  # compiled by compile_jvp


@with_room
def compile_gradient(fn, arguments: dict, wrt: tuple, mode: str, cotangent=None,
                     plain=None, backend="numpy", checkpoint=None) -> Compiled:
    """Compile ``mode`` of ``fn`` for these arguments (Avals for traced ones).

    ``plain`` emits source meant to be read by the compiler again (grad of grad): no fused
    nodes, no in-place updates, no reused buffers; the values are the same. ``backend``
    ``"cupy"`` writes CuPy code (see :func:`adcompiler.runtime.compile.load_backend` for how it
    loads where CuPy cannot run). ``plain=None`` is plain inside
    :func:`adcompiler.backends.check_modes.unoptimised` (the tests' reference), else not.
    ``checkpoint`` (a :class:`~adcompiler.transforms.checkpointing.Checkpoint`) bounds what
    reverse mode keeps of ``for`` loops.
    """
    plain = check_modes.is_unoptimised() if plain is None else plain
    if mode in FORWARD_MODES:
        return compile_jvp(fn, arguments, wrt, mode, plain, backend)
    graph, arg_names = _backend_graph(fn, arguments, wrt, mode, cotangent, plain, backend,
                                      checkpoint)
    if plain:  # source the frontend reads again: a branch's values bound on both paths
        graph = bind_on_every_path(graph)
    verify(graph)
    fname = f"{mode}_{graph.name}"  # grad_grad_f for grad(grad(f))
    return _emit_and_load(graph, fname, arg_names, plain, backend)                # source


def _backend_graph(fn, arguments, wrt, mode, cotangent, plain, backend, checkpoint):
    """:func:`gradient_graph` as ``backend`` takes it. For ``"numba"``, broadcast-then-reduce
    stays as written (no matrix products: the loop nests of
    :mod:`adcompiler.backends.numba_nests` compute it without the cube, faster;
    benchmarks/NUMBA.md), unless no numba kernel takes the graph and it has arrays of three or
    more dimensions: then the NumPy code gets the products the NumPy backend would have."""
    args = (fn, arguments, wrt, mode, cotangent, plain, backend, checkpoint)
    if backend != "numba" or plain:
        return gradient_graph(*args)
    graph, names = gradient_graph(*args, skip=(contract_broadcast_products,))
    if plan_loops(graph) or not any(v.aval.kind == "array" and v.aval.shape is not None and
                                    len(v.aval.shape) >= 3 for n in graph.nodes
                                    for v in n.outputs):
        return graph, names
    return gradient_graph(*args)


def gradient_graph(fn, arguments: dict, wrt: tuple, mode: str, cotangent=None, plain=False,
                   backend="numpy", checkpoint=None, skip=()):
    """``(graph, the names of its parameters)``: the optimised graph of ``mode`` ("grad",
    "value_and_grad" or "vjp"), emitted by :func:`compile_gradient` and read by the symbolic
    mode (:mod:`adcompiler.checking.symbolic`); ``skip``: passes not run."""
    skip = tuple(skip) + _numpy_only(backend)
    if mode == "vjp" and isinstance(cotangent, Tree):   # a container returned: one seed a leaf
        graph, seeds = seeded_graph(fn, arguments, cotangent, backend)
        checkpoint_loops(graph, checkpoint)  # segments replayed in the adjoint
        grads = add_adjoint(graph, _wrt_values(graph, wrt_leaves(wrt, arguments)), 1.0)
        graph.outputs = grads
        return optimize(graph, plain, skip), parameter_names(arguments) + [s.name for s in seeds]
    graph, out = checked_graph(fn, arguments, mode, backend)                  # source -> IR
    if mode == "vjp":
        _check_cotangent(fn, out, cotangent)
        seed = graph.name_value(Value(cotangent, origin="cotangent"), "cotangent")
        graph.params.append(seed)
    else:
        seed = 1.0
    checkpoint_loops(graph, checkpoint)  # loops in segments, replayed in the adjoint
    grads = add_adjoint(graph, _wrt_values(graph, wrt_leaves(wrt, arguments)), seed)
    graph.outputs = ([out] if mode == "value_and_grad" else []) + grads       # reverse mode
    # the seed's own name: `cotangent_1` where a local of the user's holds `cotangent` (it is
    # passed by position)
    arg_names = parameter_names(arguments) + ([seed.name] if mode == "vjp" else [])
    return optimize(graph, plain, skip), arg_names                            # passes


def _numpy_only(backend) -> tuple:
    """The passes other backends skip: their primitives have only a NumPy spelling
    (``cho_inverse_lower``: SciPy's LAPACK wrapper); CuPy, Dask and numba code keep the
    Cholesky rule's triangular solves."""
    return () if backend == "numpy" else (invert_cholesky_adjoints,)


def checked_graph(fn, arguments: dict, mode: str, backend="numpy", output_mode=None):
    """``(graph, its one output)``: ``fn`` lowered, verified, and checked for ``mode``: the
    parameters' names against what the generated code reads, one output, of a float dtype
    (and scalar, unless ``output_mode`` is "vjp": jvp's result may be an array)."""
    graph = recognise_logistics(lower(fn, arguments))  # sigmoids seen whole, before the adjoint
    verify(graph)
    _check_parameter_names(graph, parameter_names(arguments)
                           + (["cotangent"] if mode == "vjp" else []), backend)
    (out,) = _single_output(graph)
    _check_output(graph, out, output_mode or mode)
    return graph, out


def seeded_graph(fn, arguments: dict, cotangent: Tree, backend="numpy"):
    """``(graph, seeds)`` for the vjp of ``fn`` returning a container: the graph's one output
    is ``sum(sum(out_i * seed_i))`` over the result's leaves, ``seed_i`` a parameter per leaf
    of ``cotangent`` (of the result's structure, else an ArgumentError saying both)."""
    graph = recognise_logistics(lower(fn, arguments))
    verify(graph)
    _check_parameter_names(graph, parameter_names(arguments) + ["cotangent"], backend)
    returned = graph.returned
    structure = structure_of(returned, lambda path, x: ("static", None) if x is None else LEAF)
    if structure != cotangent.structure:
        raise ArgumentError(
            f"vjp of {fn.__name__}: cotangent= is {describe_structure(cotangent.structure)}, "
            f"but {fn.__name__} returns {describe_structure(structure)}; pass a cotangent of "
            "the result's structure, one array shaped like each array of it")
    outs = [x for _, x in leaves_of(returned) if x is not None]
    seeds, b = [], Builder(graph)
    total = 0.0
    with b:
        for out, (name, aval) in zip(outs, cotangent.leaves):
            seed = graph.name_value(Value(aval, origin=name), name)
            seeds.append(seed)
            if isinstance(out, Value):
                _check_cotangent(fn, out, aval)
                term = b.emit("sum", (b.emit("multiply", (out, seed)),))
                total = term if isinstance(total, float) else b.emit("add", (total, term))
    graph.params.extend(seeds)
    graph.outputs = [total if isinstance(total, Value) else Literal(0.0)]
    return graph, seeds


def _wrt_values(graph, wrt) -> list:
    params = {p.name: p for p in graph.params}
    return [params[name] for name in wrt]


def _emit_and_load(graph, fname, arg_names, plain, backend) -> Compiled:
    names = runtime_names(graph)  # custom functions the code calls by name (before emitting)
    doc = None
    if backend == "numba" and not plain:
        plan = plan_loops(graph)
        if plan:                                                              # numba loops
            return _numba_loops(plan, graph, fname, arg_names, names)
        doc = (f"NumPy code: backend='numba' writes loops only for elementwise gradients of "
               f"float64 arrays (counted for loops of them included), and here {plan.reason}.")
    emitted = emit_module(graph, fname, arg_names, XP_NAMES[backend], doc=doc,
                          plain=plain)                                        # source
    _check_shadowed_builtins(graph, arg_names, emitted.source)
    _verify_plan(emitted.source)
    constants = {**names, **emitted.constants}
    function = load_backend(emitted.source, fname, constants, backend)
    return Compiled(graph, emitted.source, function, fname, backend, emitted.kernels,
                    constants)


def _numba_loops(plan, graph, fname, arg_names, names) -> Compiled:
    """numba code, its kernel cached on disk by numba where adcompiler's cache is on."""
    if numba_cache.enabled():
        source = emit_numba(plan, graph, fname, arg_names, cache=True)
        _verify_plan(source)  # the wrapper (a decorated kernel is not checked)
        try:
            function = numba_cache.load(source, fname, names)
            return Compiled(graph, source, function, fname, "numba", (), names)
        except OSError:  # an unwritable cache directory: compile in this process only
            pass
    source = emit_numba(plan, graph, fname, arg_names)
    _verify_plan(source)
    function = load_backend(source, fname, names, "numba")
    return Compiled(graph, source, function, fname, "numba", (), names)


def _verify_plan(source):
    """Where ``ADCOMPILER_VERIFY_PLANS=1`` (the test suite sets it), check the emitted source
    before it loads: a plan writing a buffer that a live name holds, or returning a pool
    buffer, raises :class:`~adcompiler.backends.verify_plan.PlanError` here."""
    if os.environ.get("ADCOMPILER_VERIFY_PLANS") == "1":
        from .backends.verify_plan import verify_plan  # imported only then: import adcompiler
        verify_plan(source)                              # takes no longer


@with_room
def compile_jvp(fn, arguments: dict, wrt: tuple, mode: str = "jvp", plain=None,
                backend="numpy") -> Compiled:
    """Compile forward mode: ``jvp_f(*args, *tangents) -> (value, tangent)``, one tangent
    parameter ``<name>_dot`` per wrt parameter. ``mode="hvp"`` differentiates the gradient
    instead (forward over reverse): ``hvp_f(*args, *tangents) -> (*grads, *grad_tangents)``,
    the grad tangents being Hessian-vector products."""
    plain = check_modes.is_unoptimised() if plain is None else plain
    graph, _ = checked_graph(fn, arguments, mode, backend,                    # source -> IR
                             "vjp" if mode == "jvp" else "grad")
    wrt_values = _wrt_values(graph, wrt_leaves(wrt, arguments))
    if mode == "hvp":
        graph.outputs = add_adjoint(graph, wrt_values, 1.0)                   # reverse mode
        graph = optimize(graph, plain=True)  # a simpler gradient to push tangents through
        verify(graph)
    dots = [graph.name_value(Value(p.aval, origin=p.name), p.name + "_dot") for p in wrt_values]
    graph.params.extend(dots)
    graph.outputs = list(graph.outputs) + add_tangents(graph, wrt_values, dots)  # forward mode
    verify(graph)
    graph = optimize(graph, plain, _numpy_only(backend))                      # passes
    verify(graph)
    fname = f"{mode}_{graph.name}"  # grad_grad_f for grad(grad(f))
    arg_names = parameter_names(arguments) + [d.name for d in dots]
    return _emit_and_load(graph, fname, arg_names, plain, backend)


# How to lower a callable that is not a plain def: (the callable's type, its lowering). The
# packages above the pipeline that make such callables register them (adcompiler.api: a gradient
# object, lowered from its generated source), so the pipeline never imports them.
LOWERINGS: list = [(custom_vjp, lower_call)]


def register_lowering(kind: type, lowering):
    """Lower instances of ``kind`` with ``lowering(fn, arguments) -> Graph``."""
    LOWERINGS.append((kind, lowering))


def lower(fn, arguments: dict):
    """The graph of ``fn``: a plain function's source, or what :data:`LOWERINGS` says for its
    type (a custom_vjp function's call; a compiled gradient's generated source, for grad of
    grad: see :mod:`adcompiler.api.regradient`)."""
    for kind, lowering in LOWERINGS:
        if isinstance(fn, kind):
            return lowering(fn, arguments)
    return lower_function(fn, arguments)


_READS = {"np": "NumPy's module name `np`", "ne": "numexpr's module name `ne`",
          "cp": "CuPy's module name `cp`", "cupyx": "the module `cupyx`",
          "da": "dask.array's module name `da`",
          "math": "the module `math`", "float": "the builtin `float`"}


def _check_parameter_names(graph, names, backend="numpy"):
    """The generated function takes the user's parameter names, and its body reads ``np``,
    ``math``...: a parameter of such a name would shadow what the body needs. CuPy's names
    (``cp``, ``cupyx``) only where the code is CuPy code: a heat capacity ``cp`` is a fine
    parameter of NumPy code."""
    src = getattr(graph, "source", None)
    reserved = reserved_names(XP_NAMES[backend])
    for name in names:
        if name == "cotangent" and names.count(name) > 1 and src is not None:
            raise src.error(_parameter(src, name), "vjp takes the cotangent as the keyword "
                            "`cotangent=`, which this parameter's name would take over",
                            "rename the parameter `cotangent` (e.g. `cotangent_`)")
        if name in reserved and src is not None:
            what = _READS.get(name, f"adcompiler's helper `{name}`")
            raise src.error(_parameter(src, name), f"parameter `{name}` has the name of "
                            f"{what}, which the generated {backend} code reads",
                            f"rename `{name}` (e.g. `{name}_`)")


def _check_shadowed_builtins(graph, arg_names, source):
    """A parameter named ``range``, ``int``, ``reversed`` or ``slice`` where the generated code
    calls that builtin (a loop's adjoint: ``for k in reversed(range(n))``)."""
    src = getattr(graph, "source", None)
    for name in set(arg_names) & BUILTINS:
        if re.search(rf"(?<![\w.]){name}\(", source) and src is not None:  # not np.uint(
            raise src.error(_parameter(src, name), f"parameter `{name}` has the name of a "
                            f"builtin the generated code calls (`{name}(...)`)",
                            f"rename `{name}` (e.g. `{name}_`)")


def _parameter(src, name):
    """The ``def`` line's node of parameter ``name`` (the def itself if not found)."""
    args = src.tree.args
    return next((a for a in args.posonlyargs + args.args + args.kwonlyargs if a.arg == name),
                src.tree)


def _single_output(graph):
    if len(graph.outputs) != 1:
        node = graph.source.tree.body[-1]
        raise graph.source.error(node, f"the function returns {len(graph.outputs)} values; "
                                 "it must return one", "return a single array or number")
    out = graph.outputs[0]
    if isinstance(out, (int, float, np.number)):  # a constant: its gradients are zeros
        graph.outputs = [Literal(out)]
    elif not isinstance(out, Value):
        node = graph.source.tree.body[-1]
        raise graph.source.error(node, "the result is a constant array, whatever the inputs",
                                 "return an expression of the function's array arguments")
    return graph.outputs


def _check_output(graph, out: Value, mode):
    node = graph.source.tree.body[-1]
    if not out.aval.is_float:
        raise graph.source.error(node, f"the result has dtype {out.aval.dtype}; only floating "
                                 "results can be differentiated", "return a float array")
    if mode != "vjp" and out.aval.known_shape != () and graph.array_result_error is not None:
        raise graph.array_result_error(out.aval.known_shape)   # grad(grad(f)) of an array
    if mode != "vjp" and out.aval.known_shape != ():
        raise graph.source.error(
            node, f"grad needs a scalar result, but this returns an array of shape "
            f"{out.aval.known_shape}",
            "reduce it (e.g. .sum() or .mean()), or use adcompiler.vjp(f, wrt=...)(..., "
            "cotangent=c) for the vector-Jacobian product")


def _check_cotangent(fn, out, cotangent: Aval):
    """A vjp's cotangent has the result's shape (as PyTorch's ``backward(gradient)`` checks)."""
    want, got = out.aval.known_shape, cotangent.known_shape
    if want is not None and got is not None and tuple(want) != tuple(got):
        raise ArgumentError(f"vjp of {fn.__name__}: the cotangent has shape {tuple(got)}, but the "
                         f"result has shape {tuple(want)}; pass cotangent= an array shaped "
                         "like the result")


def cotangent_aval(cotangent) -> Aval:
    return Aval.of(cotangent)


__all__ = ["CompileError", "Compiled", "compile_gradient", "compile_jvp", "MODES",
           "FORWARD_MODES"]
