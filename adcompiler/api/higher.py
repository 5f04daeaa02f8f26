"""Higher order: ``grad(grad(f))`` by compiling generated source again, ``jacobian`` (forward or
reverse mode) and ``hessian`` (forward over reverse; through a custom_vjp call, forward over the
gradient's generated source, or, where the gradient needs the custom function's value, the
reverse-mode Jacobian of that source).

Invariants: the gradient differentiated again is the plain source its compilation emits (no
in-place updates, no fused nodes; loop residuals in ``np.zeros`` stacks or, for a ``while``, in
lists; a branch's values bound on both paths of its ``if``; one type per name), read back
through ``linecache`` like any user function (the frontend takes ``reversed(range(n))`` and
lists, :mod:`adcompiler.frontend.statements.lists`), so ``.source`` of ``grad(grad(f))``
is that source's own gradient, through control flow too; a Jacobian has shape
``out.shape + in.shape`` (a tuple of them, one per wrt, for a tuple ``wrt``); a Hessian block
``H[i][j]`` has shape ``in_i.shape + in_j.shape``; results are arrays of the float dtype NumPy
promotes the inputs (and, for a Jacobian, the output) to, Python floats weakly, in every mode.
``grad(grad(f))`` is lowered by :mod:`adcompiler.api.regradient`. ``jacobian`` and ``hessian``
take what ``grad`` takes (:func:`check_transformable`) and bind an instance when decorated in a
class, as ``grad`` does.
"""

from __future__ import annotations

import functools

import numpy as np

from ..custom import examples as custom_examples
from .gradients import GradientFunction, TangentFunction, _like
from .bound import bind
from ..errors import ArgumentError, CompileError, as_user_error
from ..frontend.reading.source import read_function
from ..ir import Aval
from .signature import (bind_arguments, check_transformable, classify_arguments, input_types,
    key_of)
from ..frontend.bindings.trees import (LEAF, flat_values, is_container, leaves_of, rebuild,
    regroup, structure_of, tangent_leaves, wrt_leaves)
from ..transforms.forward import ForwardModeError

FORWARD, REVERSE = "fwd", "rev"


# ---- Jacobians -------------------------------------------------------------------------------
class _Method:
    """Bind an instance when decorated in a class, as :meth:`GradientFunction.__get__` does:
    ``model.hloss(x)`` calls it with ``model`` first, and so do the attributes named in
    ``bound_attributes`` (``model.hloss.hvp(x, tangents=v)``; :mod:`adcompiler.api.bound`)."""

    def __get__(self, obj, objtype=None):
        return bind(self, obj)


class Jacobian(_Method):
    """``jacobian(f, wrt=..., mode=...)``: call it as ``f``; see :func:`jacobian`."""
    transform_name = "jacobian"
    bound_attributes = ("specialize", "forward", "reverse")

    def __init__(self, fn, wrt=None, mode="auto", backend="numpy"):
        check_transformable(fn, "jacobian")
        if mode not in ("auto", FORWARD, REVERSE):
            raise ValueError(f"mode must be 'auto', 'fwd' or 'rev', not {mode!r}")
        self.primal, self.mode, self._wrt = fn, mode, wrt
        functools.update_wrapper(self, fn, updated=())
        computed = True if backend in ("dask", "auto") else None   # rows of NumPy arrays
        self.forward = TangentFunction(fn, wrt, "jvp", backend, computed)
        self.reverse = GradientFunction(fn, wrt, "vjp", backend, computed)
        self.wrt, self._single = self.forward.wrt, self.forward._single
        self.last_mode = None
        self._out_avals: dict = {}
        self._returned: dict = {}   # key -> (structure, leaf avals) of a returned container

    def __call__(self, *args, **kwargs):
        arguments = bind_arguments(self.primal, args, kwargs)
        out_aval = self._output_aval(arguments)
        leaves = Leaves(self.wrt, self._single, arguments)   # a container's, in its place
        returned = self._returned[self._key(arguments)]
        if returned is not None:   # a tuple or dict of results: one Jacobian per result
            self.last_mode = REVERSE
            return self._per_result(args, kwargs, leaves, *returned)
        inputs = leaves.inputs
        self.last_mode = self.mode if self.mode != "auto" else choose_mode(inputs, out_aval)
        out_shape = tuple(out_aval.known_shape)
        if self.last_mode == FORWARD:
            blocks = self._columns(args, kwargs, leaves, out_shape)
        else:
            blocks = self._rows(args, kwargs, leaves, out_aval)
        blocks = [b.astype(result_dtype(out_aval, x), copy=False)   # the same in every mode
                  for b, x in zip(blocks, inputs)]
        return leaves.grouped(blocks)

    def _output_aval(self, arguments) -> Aval:
        """The result's aval for these arguments, from the lowered graph (once per signature)."""
        from ..pipeline import lower
        avals = classify_arguments(arguments, self.wrt)
        key = key_of(avals)
        if key not in self._out_avals:
            try:
                with custom_examples.compiling(self.primal, arguments):
                    graph = lower(self.primal, avals)
            except (CompileError, ArgumentError) as exc:  # shown without the compiler's frames
                raise as_user_error(exc)
            self._returned[key] = _results(getattr(graph, "returned", None))
            self._out_avals[key] = None if self._returned[key] else _aval(graph.outputs[0])
        return self._out_avals[key]

    def _key(self, arguments):
        return key_of(classify_arguments(arguments, self.wrt))

    def _per_result(self, args, kwargs, leaves, structure, out_avals):
        """The Jacobian of each result of a function returning a container, in its place:
        one vjp per entry of each, its cotangent that entry's one-hot container."""
        per_result = []
        for i, aval in enumerate(out_avals):
            shape = tuple(aval.known_shape)
            rows = [[] for _ in leaves.inputs]
            for m in range(int(np.prod(shape, dtype=np.int64))):
                cotangents = [np.zeros(a.known_shape, _cotangent_dtype(a)) for a in out_avals]
                cotangents[i].reshape(-1)[m] = 1.0
                cotangent = rebuild(structure, iter(cotangents), static=lambda x: None)
                grads = self.reverse(*args, cotangent=cotangent, **kwargs)
                for row, g in zip(rows, leaves.flat(grads)):
                    row.append(np.asarray(g))
            blocks = [(np.stack(row).reshape(shape + np.shape(x)) if row else
                       np.zeros(shape + np.shape(x))).astype(result_dtype(aval, x), copy=False)
                      for row, x in zip(rows, leaves.inputs)]
            per_result.append(leaves.grouped(blocks))
        return rebuild(structure, iter(per_result), static=lambda x: None)

    def _columns(self, args, kwargs, leaves, out_shape):
        """Forward mode: one jvp per input entry gives one column of the Jacobian."""
        blocks, inputs = [], leaves.inputs
        for j, x in enumerate(inputs):
            cols = [np.asarray(self.forward(*args, tangents=leaves.basis(j, k),
                                            **kwargs)[1]) for k in range(np.size(x))]
            block = np.stack(cols, axis=-1) if cols else np.zeros(out_shape + (0,))
            blocks.append(block.reshape(out_shape + np.shape(x)))
        return blocks

    def _rows(self, args, kwargs, leaves, out_aval):
        """Reverse mode: one vjp per output entry gives one row of the Jacobian."""
        inputs = leaves.inputs
        out_shape = tuple(out_aval.known_shape)
        size = int(np.prod(out_shape, dtype=np.int64))
        rows = [[] for _ in inputs]
        for m in range(size):
            cotangent = np.zeros(size, dtype=_cotangent_dtype(out_aval))
            cotangent[m] = 1.0
            grads = self.reverse(*args, cotangent=cotangent.reshape(out_shape), **kwargs)
            for row, g in zip(rows, leaves.flat(grads)):
                row.append(np.asarray(g))
        return [np.stack(row).reshape(out_shape + np.shape(x)) if row else
                np.zeros(out_shape + np.shape(x)) for row, x in zip(rows, inputs)]

    def specialize(self, *args, **kwargs):
        """Compile the jvp ('fwd') or the vjp ('rev') this call would use, without running it."""
        arguments = bind_arguments(self.primal, args, kwargs)
        inputs = Leaves(self.wrt, self._single, arguments).inputs
        out_aval = self._output_aval(arguments)
        returned = self._returned[self._key(arguments)]
        if returned is not None:   # a container of results: reverse mode (_per_result)
            self.last_mode = REVERSE
            structure, avals = returned
            cotangent = rebuild(structure, iter(np.zeros(a.known_shape, _cotangent_dtype(a))
                                                for a in avals), static=lambda x: None)
            return self.reverse.specialize(*args, cotangent=cotangent, **kwargs)
        self.last_mode = self.mode if self.mode != "auto" else choose_mode(inputs, out_aval)
        if self.last_mode == FORWARD:
            return self.forward.specialize(*args, **kwargs)
        cotangent = np.zeros(out_aval.known_shape, dtype=_cotangent_dtype(out_aval)) \
            if out_aval.kind == "array" else 0.0
        return self.reverse.specialize(*args, cotangent=cotangent, **kwargs)

    @property
    def source(self):
        """The generated code of the mode used last (jvp for 'fwd', vjp for 'rev')."""
        return (self.forward if self.last_mode == FORWARD else self.reverse).source

    @property
    def ir(self):
        return (self.forward if self.last_mode == FORWARD else self.reverse).ir


def _aval(out) -> Aval:
    """The aval of a lowered result: a Value's, or a Python number's."""
    return out.aval if hasattr(out, "aval") else Aval.of(np.asarray(out, dtype=float))


def _results(returned):
    """``(structure, leaf avals)`` of a returned container, None for one result."""
    if not is_container(returned):
        return None
    structure = structure_of(returned, lambda path, x: ("static", None) if x is None else LEAF)
    return structure, [_aval(x) for _, x in leaves_of(returned) if x is not None]


def result_dtype(*values) -> np.dtype:
    """The float dtype of a derivative block between these inputs and outputs (arrays, avals,
    Python floats): NumPy's promotion, a Python float taking part weakly (float32 stays)."""
    parts = []
    for v in values:
        if isinstance(v, Aval):
            v = 0.0 if v.kind == "float" else np.dtype(v.dtype)
        parts.append(v if isinstance(v, (float, np.dtype)) else np.dtype(v.dtype))
    dtype = np.result_type(*parts)
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _cotangent_dtype(out_aval: Aval) -> np.dtype:
    return np.dtype(out_aval.dtype) if out_aval.kind == "array" and out_aval.is_float \
        else np.dtype(np.float64)


def choose_mode(inputs, out_aval: Aval) -> str:
    """Forward mode when the inputs have fewer entries than the output, else reverse mode:
    forward mode gives a column per pass, reverse mode a row."""
    n_in = sum(int(np.size(x)) for x in inputs)
    n_out = int(np.prod(out_aval.known_shape, dtype=np.int64))
    return FORWARD if n_in < n_out else REVERSE


def jacobian(f=None, *, wrt=None, mode="auto", backend="numpy"):
    """The Jacobian of ``f`` with respect to ``wrt``, as an array of shape
    ``out.shape + in.shape`` (a tuple of them for a tuple ``wrt``).

    ``mode="fwd"`` runs one compiled jvp per input entry (a column each), ``mode="rev"`` one
    compiled vjp per output entry (a row each); ``"auto"`` (the default) picks forward mode when
    the inputs have fewer entries than the output, reverse mode otherwise. ``backend`` is
    :func:`grad`'s (``"dask"``: each row or column one Dask graph, computed; the Jacobian is
    a NumPy array).
    """
    if f is None:
        return lambda fn: Jacobian(fn, wrt, mode, backend)
    return Jacobian(f, wrt, mode, backend)


# ---- Hessians --------------------------------------------------------------------------------
class HessianVectorProduct:
    """``hvp(*args, tangents=v)`` gives ``(gradient, H v)``: the tangents of the compiled gradient
    graph (forward over reverse, ``.source`` is ``def hvp_f(...)``).

    Forward mode has no rule for the ``fwd`` and ``bwd`` calls a custom_vjp function puts in the
    gradient graph, and refuses them (:class:`ForwardModeError`); then, and from then on, this
    takes the jvp of the gradient's own generated source instead, one per wrt parameter (as
    ``jacobian(grad(f, wrt=w), mode="fwd")``), where ``fwd`` and ``bwd`` are read as the user's
    NumPy code: the derivative of the gradient the custom rule defines, as in JAX. Where the
    gradient needs the custom function's value (``lse(z) * s``), its source calls the function
    itself, which forward mode refuses too; then ``H`` is the reverse-mode Jacobian of that
    source (``jacobian(grad(f, wrt=w), mode="rev")``: the call's adjoint is the custom rule,
    ``fwd`` and ``bwd`` are read as NumPy code), and ``H v`` is that matrix times ``v``.
    """
    transform_name = "hvp"
    bound_attributes = ("specialize",)

    def __init__(self, fn, wrt=None, backend="numpy"):
        self.primal, self._wrt = fn, wrt
        computed = True if backend in ("dask", "auto") else None   # columns of NumPy arrays
        self.fused = TangentFunction(fn, wrt, "hvp", backend, computed)
        self.wrt, self._single = self.fused.wrt, self.fused._single
        self.parts = None      # the jvps of the gradient's source, once the fused one is refused
        self.rows = None       # the reverse Jacobians of that source, once the jvps are refused
        self.gradient = None   # the gradient, which the rows do not give

    def _staged(self, run, args=(), kwargs=None):
        """``run()``, moving on to the next method each time forward mode refuses one (not
        for a container parameter: the methods after the first take arrays and floats)."""
        while True:
            try:
                return run()
            except ForwardModeError as exc:
                if self.rows is not None:
                    raise
                self._refuse_containers(exc, args, kwargs or {})
                self._fall_back()

    def _refuse_containers(self, exc, args, kwargs):
        arguments = bind_arguments(self.primal, args, kwargs)
        held = [w for w in self.wrt if is_container(arguments.get(w))]
        if held:   # located at the call forward mode refused, else at the user's def
            message = (f"the Hessian of {self.primal.__name__} with respect to the container "
                       f"{held[0]!r}, through a custom_vjp function (which forward mode "
                       "differentiates only as the gradient's own code), is not supported")
            hint = f"pass the arrays of {held[0]!r} as parameters of their own"
            if exc.location is not None:
                raise CompileError(message, exc.location, hint) from None
            src = read_function(self.primal)
            raise src.error(src.tree, message, hint) from None

    def _fall_back(self):
        if self.parts is None:
            self.parts = [TangentFunction(GradientFunction(self.primal, w, "grad"), self._wrt,
                                          "jvp") for w in self.wrt]
            return
        self.rows = [Jacobian(GradientFunction(self.primal, w, "grad"), self._wrt, REVERSE)
                     for w in self.wrt]
        self.gradient = GradientFunction(self.primal, self._wrt, "grad")

    def __call__(self, *args, tangents=None, **kwargs):
        grads, products = self._staged(lambda: self._products(args, tangents, kwargs), args,
                                       kwargs)
        if self.parts is None:
            return grads, products   # the fused function's, typed like the inputs already
        arguments = bind_arguments(self.primal, args, kwargs)   # a NumPy scalar's: its type
        grads, products = (input_types((r,) if self._single else r, arguments, self.wrt)
                           for r in (grads, products))
        return (grads[0], products[0]) if self._single else (grads, products)

    def _products(self, args, tangents, kwargs):
        if self.parts is None:
            return self.fused(*args, tangents=tangents, **kwargs)
        if self.rows is None:
            results = [part(*args, tangents=tangents, **kwargs) for part in self.parts]
            grads, products = tuple(r[0] for r in results), tuple(r[1] for r in results)
        else:
            grads = self.gradient(*args, **kwargs)
            grads = (grads,) if self._single else grads
            products = self._times(self.blocks(args, kwargs), args, tangents, kwargs)
        return (grads[0], products[0]) if self._single else (grads, products)

    def blocks(self, args, kwargs) -> list:
        """``H[i][j]`` from the reverse-mode Jacobians of the gradient (after the fall-backs)."""
        rows = [jac(*args, **kwargs) for jac in self.rows]
        return [[row] if self._single else list(row) for row in rows]

    def _times(self, blocks, args, tangents, kwargs):
        """``H v``, each product shaped (and typed) like its input."""
        arguments = bind_arguments(self.primal, args, kwargs)
        vs = self.fused._tangents(tangents, arguments)
        out = []
        for row, w in zip(blocks, self.wrt):
            x = arguments[w]
            hv = sum(np.tensordot(h, v, axes=np.ndim(v)) for h, v in zip(row, vs))
            out.append(float(hv) if isinstance(x, float) else _like(hv, x, w))
        return tuple(out)

    def specialize(self, *args, **kwargs):
        """Compile for these arguments without running: the fused function, or the list of
        functions it fell back to."""
        kwargs.pop("tangents", None)

        def compile_stage():
            compiled = [stage.specialize(*args, **kwargs) for stage in self._stage()]
            return compiled[0] if self.parts is None else compiled
        return self._staged(compile_stage, args, kwargs)

    def _stage(self) -> list:
        return [self.fused] if self.parts is None else self.parts if self.rows is None \
            else self.rows

    @property
    def source(self):
        """The generated code: ``hvp_f``, or the functions it fell back to."""
        return "\n".join(stage.source for stage in self._stage())

    @property
    def ir(self):
        return self.fused.ir if self.parts is None else [stage.ir for stage in self._stage()]


class Hessian(_Method):
    """``hessian(f, wrt=...)``: call it as ``f``; ``.hvp`` is the Hessian-vector product
    (:class:`HessianVectorProduct`) it calls once per input entry."""
    transform_name = "hessian"
    bound_attributes = ("specialize", "hvp")

    def __init__(self, fn, wrt=None, backend="numpy"):
        check_transformable(fn, "hessian")
        self.primal = fn
        self.hvp = HessianVectorProduct(fn, wrt, backend)
        self.wrt, self._single = self.hvp.wrt, self.hvp._single
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        arguments = bind_arguments(self.primal, args, kwargs)
        leaves = Leaves(self.wrt, self._single, arguments)   # raises for what is not float
        inputs = leaves.inputs
        self.hvp.specialize(*args, **kwargs)   # settles which method the hvp takes
        if self.hvp.rows is not None:
            blocks = self.hvp.blocks(args, kwargs)
        else:
            blocks = self._columns(args, kwargs, leaves)
        blocks = [[np.asarray(h).astype(result_dtype(xi, xj), copy=False)
                   for h, xj in zip(row, inputs)] for row, xi in zip(blocks, inputs)]
        return leaves.grouped([leaves.grouped(row) for row in blocks])

    def _columns(self, args, kwargs, leaves):
        """``H[i][j]`` from one Hessian-vector product per entry of input ``j``."""
        inputs = leaves.inputs
        blocks = [[None] * len(inputs) for _ in inputs]
        for j, x in enumerate(inputs):
            cols = []
            for k in range(int(np.size(x))):
                _, hv = self.hvp(*args, tangents=leaves.basis(j, k), **kwargs)
                cols.append(leaves.flat(hv))
            for i, xi in enumerate(inputs):
                shape = np.shape(xi) + np.shape(x)
                if not cols:   # a zero-size input: no products, an empty block
                    blocks[i][j] = np.zeros(shape)
                    continue
                col = [np.asarray(c[i]) for c in cols]
                blocks[i][j] = np.stack(col, axis=-1).reshape(shape)
        return blocks

    def specialize(self, *args, **kwargs):
        """Compile the Hessian-vector product for these arguments, without running it."""
        return self.hvp.specialize(*args, **kwargs)

    @property
    def source(self):
        """The generated Hessian-vector product."""
        return self.hvp.source

    @property
    def ir(self):
        return self.hvp.ir


class Leaves:
    """The wrt inputs of a call as leaves (a container parameter's arrays and floats in its
    place, :mod:`adcompiler.frontend.bindings.trees`), and the way back: per-leaf results
    grouped as the transform returns them (one per wrt parameter, a container's as the same
    container; a single one for a single wrt)."""

    def __init__(self, wrt, single, arguments):
        self.wrt, self.single = wrt, single
        self.avals = classify_arguments(arguments, wrt)   # raises for what is not float
        flat = flat_values(arguments, self.avals)
        self.inputs = [flat[n] for n in wrt_leaves(wrt, self.avals)]

    def grouped(self, per_leaf):
        out = regroup(list(per_leaf), self.wrt, self.avals)
        return out[0] if self.single else tuple(out)

    def flat(self, grouped) -> list:
        """Per-leaf values of a transform's result (the inverse of :meth:`grouped`)."""
        return tangent_leaves((grouped,) if self.single else grouped, self.wrt, self.avals)

    def basis(self, j, k):
        """Zero tangents, but entry ``k`` of leaf ``j``: a basis direction, grouped."""
        out = [0.0 if isinstance(x, float) else np.zeros(np.shape(x)) for x in self.inputs]
        if isinstance(self.inputs[j], float):
            out[j] = 1.0
        else:
            out[j].reshape(-1)[k] = 1.0
        return self.grouped(out)


def hessian(f=None, *, wrt=None, backend="numpy"):
    """The Hessian of ``f``'s scalar result with respect to ``wrt``, forward over reverse: one
    compiled Hessian-vector product per input entry. For a single ``wrt`` of shape ``S`` it has
    shape ``S + S``; for a tuple, ``H[i][j]`` has shape ``in_i.shape + in_j.shape``.

    Through a custom_vjp function, whose ``fwd`` and ``bwd`` forward mode refuses to enter as
    calls (it would otherwise give them zero tangents), the Hessian-vector product is the jvp
    of the gradient's generated source instead, with ``fwd`` and ``bwd`` read as NumPy code
    (:class:`HessianVectorProduct`); where the gradient needs the custom function's value, the
    Hessian is the reverse-mode Jacobian of that source, one vjp per entry of each input.
    Where ``fwd`` or ``bwd`` cannot be read (a black-box call), that raises the located error
    of the call it cannot compile. ``backend`` is :func:`grad`'s (``"dask"``: each
    Hessian-vector product one Dask graph, computed; the Hessian is a NumPy array; the
    fallbacks through a custom_vjp function run NumPy code)."""
    if f is None:
        return lambda fn: Hessian(fn, wrt, backend)
    return Hessian(f, wrt, backend)


__all__ = ["jacobian", "hessian", "Jacobian", "Hessian", "HessianVectorProduct",
           "choose_mode"]
