"""The public transforms: ``grad``, ``value_and_grad`` and ``vjp``.

Each returns a :class:`GradientFunction`: a callable with the user's signature that compiles
once per input signature (shapes, dtypes, and the values of static arguments such as ints)
and afterwards only runs the generated code.
"""

from __future__ import annotations

import functools
import inspect
import threading
import types

import numpy as np

from . import cotangents, fastpath, poles, state, tiers, tree_keys
from ..custom import examples as custom_examples
from .bound import bind
from .function_keys import FunctionKey
from ..errors import ArgumentError, CompileError, as_user_error
from ..pipeline import Compiled, compile_gradient
from ..runtime import cache as disk_cache
from ..runtime import dask_results
from ..runtime.compile import check_backend
from ..runtime.dask_results import check_compute
from ..transforms.checkpointing import as_checkpoint, for_backend
from ..runtime.namespaces import backend_for
from .signature import (_entries, array_module, bind_arguments, check_backend_arguments,
    check_transformable, classify, classify_arguments, input_types, is_device_array, key_of,
    resolve_wrt)
from ..runtime.namespaces import is_dask_array
from ..frontend.bindings.trees import (flat_values, is_container, is_dataclass_instance,
    regroup, tangent_leaves, wrt_leaves)


class GradientFunction:
    """A compiled gradient of ``primal``; ``.source`` and ``.ir`` show the latest compilation.
    ``backend="cupy"`` compiles CuPy code, called with CuPy arrays (the docs' Backends in
    detail, docs/reference/backends.md); ``backend="dask"`` dask.array code, whose results
    ``compute=`` computes or leaves lazy; ``backend="numba"`` compiles numba loops where it can
    (the same page)."""

    bound_attributes = ("specialize",)  # called with the instance first through one (bound.py)

    def __init__(self, fn, wrt, mode, backend="numpy", compute=None, checkpoint=None,
                 tiered=None):
        check_transformable(fn, mode)  # a def, a custom_vjp function or grad(f)
        self.tiered = tiered   # None, True or False: numba loops after NumPy code (.tiers)
        self._lock = threading.RLock()   # the fast path, which the tiers' thread updates too
        self._fast_origin: dict = {}     # fast key -> the Compiled it calls
        self.checkpoint = for_backend(as_checkpoint(checkpoint), backend)   # (checkpointing)
        self.primal = fn
        self.mode = mode
        self.backend = backend if backend == "auto" else check_backend(backend)
        self.compute = check_compute(compute, backend)   # Dask code's results (dask_results)
        self._by_backend: dict = {}   # backend="auto": the transform of each backend picked
        self._wrt_given = wrt
        self.wrt = resolve_wrt(fn, 0 if wrt is None else wrt)
        self._single = wrt is None or not isinstance(wrt, (tuple, list))
        self._signature = inspect.signature(fn)
        self._variadic = any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                             for p in self._signature.parameters.values())
        self._cache: dict = {}
        self._snapshots: dict = {}  # id(compiled) -> what it read outside its arguments
        self._fast: dict = {}  # cheap key of positional arguments -> what to call
        self._trees: dict = {}  # tree_keys.key of positional arguments -> (compiled, avals)
        self._last: Compiled | None = None
        functools.update_wrapper(self, fn, updated=())  # not fn.__dict__: grad(grad(f))
        self._own_class()

    @property
    def transform_name(self) -> str:
        """The transform this is (``grad``, ``jvp``...), named as jacobian's and hessian's are
        (what :func:`~adcompiler.api.signature.check_transformable` reads of a nesting)."""
        return self.mode

    def __get__(self, obj, objtype=None):
        """A gradient decorated in a class binds its instance as a method does:
        ``model.loss(x)`` calls it with ``model`` first (its attributes are read each call), and
        so does ``model.loss.specialize(x)`` (:mod:`adcompiler.api.bound`)."""
        return bind(self, obj)

    def _bind(self, args, kwargs):
        cotangent = kwargs.pop("cotangent", None) if self.mode == "vjp" else None
        if self.mode == "vjp" and cotangent is None:
            raise TypeError(f"vjp of {self.primal.__name__} needs the keyword cotangent= "
                            "(an array shaped like the function's result)")
        return bind_arguments(self.primal, args, kwargs), cotangent

    def specialize(self, *args, **kwargs) -> Compiled:
        """Compile (or fetch) the specialisation for these arguments, without running it."""
        if self.backend == "auto":
            return self._picked(args, kwargs).specialize(*args, **kwargs)
        arguments, cotangent = self._bind(args, kwargs)
        return self._compiled(arguments, cotangent)[0]

    def _compiled(self, arguments, cotangent):
        """``(compiled code, the values to call it with, the arguments classified)``: a
        container's leaves in its place (:mod:`adcompiler.frontend.bindings.trees`)."""
        avals = classify_arguments(arguments, self.wrt)
        if not wrt_leaves(self.wrt, avals):
            raise TypeError(f"{self.mode} of {self.primal.__name__}: the wrt parameters "
                            f"{self.wrt} hold no float or array to differentiate")
        if self.mode == "vjp":   # a tuple for one result: what was expected, and given
            self._check_structure(arguments, avals, cotangent)
        ct_aval = classify(cotangent, "cotangent", True) if cotangent is not None else None
        key = key_of(avals) + (ct_aval,)
        compiled = self._cache.get(key)
        if compiled is not None and not self._snapshots[id(compiled)].holds():
            del self._snapshots[id(compiled)]  # a global, closure cell or attribute it read
            compiled = None                    # was rebound: compile again
        if compiled is None:
            snapshot = state.take(self.primal, arguments)
            try:
                with custom_examples.compiling(self.primal, arguments):  # custom calls' shapes
                    compiled = self._build(key, avals, ct_aval)
            except (CompileError, ArgumentError) as exc:  # the user's mistake: shown without
                if self.mode == "vjp" and isinstance(exc, CompileError):  # the compiler's frames
                    exc = cotangents.explain(self, arguments, avals, cotangent, exc)
                raise as_user_error(exc)
            self._cache[key] = compiled
            self._snapshots[id(compiled)] = snapshot
        self._last = compiled
        return compiled, _lists_as_arrays(flat_values(arguments, avals)), avals

    def _check_structure(self, arguments, avals, cotangent):
        try:
            cotangents.check_structure(self, arguments, avals, cotangent)
        except (CompileError, ArgumentError) as exc:
            raise as_user_error(exc)

    def _build(self, key, avals, ct_aval) -> Compiled:
        """Compile, or fetch from the disk cache (NumPy code only: adcompiler.runtime.cache)."""
        with tiers.COMPILING:   # never beside a background tier-up's compile (.tiers)
            return disk_cache.fetch(
                disk_cache.key_for(self.primal, self.mode, self.wrt, key + (self.checkpoint,))
                if self.backend == "numpy" else None,
                lambda: compile_gradient(self.primal, avals, self.wrt, self.mode, ct_aval,
                                         backend=self.backend, checkpoint=self.checkpoint))

    def __call__(self, *args, **kwargs):
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        """The full path: classify the arguments, compile if needed, run (and remember)."""
        if self.backend == "auto":
            return self._picked(args, kwargs)(*args, **kwargs)
        key = None
        if not kwargs:  # a dict lookup for the signatures the guard chain does not hold
            key = _fast_key(args)
            call = self._fast.get(key)
            if call is not None:
                try:
                    return call(*args)
                except poles.PYTHON_RAISES:
                    pass  # at a pole of Python-float code: below (adcompiler.api.poles)
            if key is None and self._trees:   # containers among them (.tree_keys)
                hit = self._trees.get(tree_keys.key(args))
                if hit is not None:
                    done = self._run_containers(*hit, args)
                    if done is not None:
                        return done[0]
        arguments, cotangent = self._bind(args, kwargs)
        self._check_arrays({**arguments, "cotangent": cotangent})
        compiled, arguments, avals = self._compiled(arguments, cotangent)
        extra = () if self.mode != "vjp" else tuple(flat_values(   # a container: its leaves
            {"cotangent": cotangent}, {"cotangent": classify(cotangent, "cotangent", True)}
        ).values()) if is_container(cotangent) else (cotangent,)
        try:
            result = self._finish(compiled.function(*arguments.values(), *extra), arguments,
                                  avals)
        except poles.PYTHON_RAISES:
            return self._package(poles.at_a_pole(compiled.function, self.primal, arguments,
                                                 extra, (args, kwargs),
                                                 wrt_leaves(self.wrt, avals), self.mode),
                                 arguments, avals)
        if compiled.tier is None and not extra and arguments.keys() == avals.keys() and \
                tiers.wanted(self, tuple(arguments.values())):   # numba loops, in the back
            tiers.start(self, compiled, avals, tuple(arguments.values()))
        if not kwargs and len(args) == len(self._signature.parameters) and not \
                self._variadic and self.backend != "dask":   # (Dask's results: _finish)
            if arguments.keys() == avals.keys():   # no containers
                if key is not None:
                    self._remember(key, compiled)
            elif self.backend != "cupy" and tree_keys.key(args) is not None:
                self._trees[tree_keys.key(args)] = (compiled, avals)
        return self._package(result, arguments, avals)

    def _finish(self, result, arguments, avals):
        """Dask code's results computed by one ``dask.compute``, or left lazy, as
        ``compute=`` says (:mod:`adcompiler.runtime.dask_results`); others' as they are."""
        if self.backend != "dask":
            return result
        differentiated = [arguments[w] for w in wrt_leaves(self.wrt, avals)]
        return dask_results.finish(result, dask_results.wants_compute(self.compute,
                                                                      differentiated))

    def _picked(self, args, kwargs):
        """``backend="auto"``: this transform for the backend of the call's arrays (Dask where
        any is a Dask array, CuPy where any is a CuPy array, else NumPy), made once each."""
        arguments, _ = self._bind(args, dict(kwargs))
        backend = backend_for(_entries(arguments))
        picked = self._by_backend.get(backend)
        if picked is None:
            picked = type(self).__bases__[0] if type(self).__dict__.get("_fast_class") \
                else type(self)
            picked = picked(self.primal, self._wrt_given, self.mode, backend,
                            self.compute if backend == "dask" else None, self.checkpoint,
                            self.tiered)
            self._by_backend[backend] = picked
        self._last_picked = picked
        return picked

    def _run_containers(self, compiled, avals, args):
        """``(result,)`` of a call whose containers' structure and leaves' avals were seen
        before, classified no more: its leaves go straight to the code compiled then; None
        where the full path must run (a global it read was rebound, a pole)."""
        snapshot = self._snapshots.get(id(compiled))   # gone: compiled again since
        if snapshot is None or not snapshot.holds():
            return None
        arguments = _lists_as_arrays(flat_values(dict(zip(self._signature.parameters, args)),
                                                 avals))
        try:
            result = compiled.function(*arguments.values())
        except poles.PYTHON_RAISES:
            return None
        self._last = compiled
        return (self._package(result, arguments, avals),)

    def _remember(self, key, compiled):
        """Send calls of this fast key straight to ``compiled``: through the ``_fast`` dict, and
        the guard chain (which may inline the generated source where ``_direct`` adds nothing)."""
        with self._lock:
            direct = self._direct(compiled.function)
            snapshot = self._snapshots.get(id(compiled))
            if snapshot is None:   # compiled again since (the tiers' thread came late)
                return
            if snapshot:  # it read globals, cells or attributes: check them first
                direct = self._checked(key, direct, snapshot.holds)
            self._fast[key] = direct
            self._fast_origin[key] = compiled
            if direct is compiled.function and (compiled.tier is None or compiled.tier.state
                                                in ("compiling", "numpy")):
                self._inline[key] = fastpath.Source(compiled.source)
            else:
                self._inline.pop(key, None)
            self._install_fast_path()

    def _tier_up(self, compiled, function):
        """From the tiers' thread: calls of ``compiled`` run ``function`` (its numba loop)."""
        with self._lock:
            compiled.function = function
            for key, origin in list(self._fast_origin.items()):
                if origin is compiled and key in self._fast:
                    self._remember(key, compiled)

    def _checked(self, key, run, holds):
        """``run``, where what it read when compiled is unchanged; else the full path, which
        compiles again (and remembers the new code in place of this)."""
        def checked(*args):
            if holds():
                return run(*args)
            self._fast.pop(key, None)
            self._inline.pop(key, None)
            self._install_fast_path()
            return self._call(args, {})
        return checked

    def _own_class(self):
        """Give this object a class of its own, whose ``__call__`` is the generated guard chain
        of :mod:`adcompiler.api.fastpath` (one Python call between the user and the generated
        code, instead of three; none where the chain inlines the generated body). Subclasses
        with their own ``__call__`` keep it."""
        self._inline: dict = {}  # fast key -> generated source the chain may inline
        cls = type(self)
        if cls.__call__ is not GradientFunction.__call__:
            return
        self.__class__ = type(cls.__name__, (cls,), {"__qualname__": cls.__qualname__,
                                                     "__module__": cls.__module__,
                                                     "_fast_class": True})
        self._install_fast_path()

    def _install_fast_path(self):
        if type(self).__dict__.get("_fast_class"):
            primal = self.primal
            name = getattr(primal, "__name__", "call")
            chain = fastpath.build(
                len(self._signature.parameters), list(self._fast.items()), self._call,
                # vjp's cotangent= is a keyword the user's function does not take
                signature=None if self.mode == "vjp" else self._signature,
                sources=self._inline, name=name,
                qualname=getattr(primal, "__qualname__", name))
            type(self).__call__ = staticmethod(chain)

    def _check_arrays(self, values: dict):
        check_backend_arguments(values, self.backend, f"{self.mode} of {self.primal.__name__}")

    def _direct(self, function):
        """What a fast call runs: the generated function, packaged only where needed."""
        if self.mode == "grad" and (self._single or len(self.wrt) > 1):
            return function  # it already returns one gradient, or the tuple
        if self.mode == "value_and_grad" and self._single:
            return function  # it already returns (value, gradient)
        return lambda *args: self._package(function(*args))

    def _package(self, result, arguments=None, avals=None):
        """The transform's result from the generated function's; with ``arguments`` (the slow
        path, which NumPy scalars take), a NumPy scalar's gradient as a scalar of its type;
        with ``avals`` holding containers, each one's gradient as the same container."""
        value, grads = None, result if isinstance(result, tuple) else (result,)
        if self.mode == "value_and_grad":
            value, *grads = grads
        wrt = self.wrt if avals is None else wrt_leaves(self.wrt, avals)
        if arguments is not None:
            grads = input_types(grads, arguments, wrt)
        if wrt != self.wrt:
            grads = regroup(grads, self.wrt, avals)
        grads = grads[0] if self._single else tuple(grads)
        return (value, grads) if self.mode == "value_and_grad" else grads

    # ---- inspection ---------------------------------------------------------------------------
    def _latest(self) -> Compiled:
        if self._last is None and self._by_backend:   # backend="auto": the latest picked's
            return self._last_picked._latest()
        if self._last is None:
            raise AttributeError(
                f"{self.primal.__name__} has not been compiled yet: call it once, or use "
                ".specialize(*example_args) to compile for example inputs")
        return self._last

    @property
    def source(self) -> str:
        """The generated Python source of the latest compilation (a str; in a notebook it
        shows as highlighted code)."""
        from .highlight import Source  # (highlight loads pygments only on display)
        return Source(self._latest().source)

    @property
    def tier(self) -> str:
        """What the latest compilation's calls run: ``"numpy"`` (its ``.source``),
        ``"compiling"`` (NumPy code while its numba loop compiles on a background thread),
        ``"checking"`` (the loop is compiled: the next call runs both, compares, and answers
        with the NumPy code's result) or ``"numba"`` (the loop, ``.tier_source``); see
        adcompiler.api.tiers."""
        found = self._latest().tier
        return "numpy" if found is None else found.state

    @property
    def tier_source(self):
        """The numba loop's source where the latest compilation has tiered up, else None."""
        found = self._latest().tier
        return None if found is None or found.loop is None else found.loop.source

    def wait_tier(self, timeout=None) -> str:
        """Wait (up to ``timeout`` seconds) until the latest compilation's numba loop is
        compiled; its :attr:`tier` then: ``"checking"`` (the next call checks the loop and
        moves to it), ``"numpy"`` (no loop, said why), or ``"compiling"`` (timed out)."""
        tiers.wait(self._latest().tier, timeout)
        return self.tier

    @property
    def ir(self):
        """The optimised SSA graph of the latest compilation (prints in the text form)."""
        return self._latest().graph

    @property
    def constants(self) -> dict:
        """The names ``.source`` reads but does not define, with their values: the user's
        module-level arrays, arrays the function made while compiling (``const``...) and
        custom rules. The comment at the top of ``.source`` lists them too."""
        return disk_cache.constants_of(self._latest())

    def __repr__(self):
        return f"<adcompiler.{self.mode} of {self.primal.__qualname__} wrt {self.wrt}>"

    def _repr_html_(self):
        """In a notebook: the latest generated source, highlighted."""
        from .highlight import html   # on first display: pygments loads only then
        return html(self._notebook_text(), self._last is not None)

    def _repr_markdown_(self):
        text = self._notebook_text()
        return f"```python\n{text}\n```" if self._last is not None else text

    def _notebook_text(self):
        if self._last is None:
            return (f"{self!r}: not compiled yet (call it, or .specialize(*example_args), "
                    "to see its generated source)")
        return self._last.source.rstrip("\n")


_STATIC_TYPES = (int, bool, str, type(None))


def _lists_as_arrays(arguments: dict) -> dict:
    """A list argument (classified as ``np.asarray`` of it, never differentiated, refused for
    CuPy code) as that array: the generated code computes NumPy's ``c * 2`` for it, where the
    list itself would be repeated (``+`` concatenated, ``==`` compared whole). The caller's
    list is not changed."""
    if not any(type(v) is list for v in arguments.values()):
        return arguments
    return {k: np.asarray(v) if type(v) is list else v for k, v in arguments.items()}


def _fast_key(args):
    """A cheap key for positional arguments (arrays by shape and dtype, floats, the values of
    static ints/bools/strings, and objects that compare by identity, such as a method's
    ``self``), or None where only the full path can classify them."""
    key = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            key.append((a.shape, a.dtype))
        elif is_device_array(a):
            key.append((a.shape, a.dtype, "device"))
        elif t is float:
            key.append(float)
        elif t in _STATIC_TYPES:
            key.append((t, a))
        elif t is types.FunctionType or t is functools.partial:  # a lambda made in the call
            key.append(("function", FunctionKey(a)))               # is the same key each time
        elif t is list or t.__hash__ is None or t.__eq__ is not object.__eq__ or \
                is_dataclass_instance(a):   # a container: its leaves are traced (.trees)
            return None
        else:  # an object compared by identity (a model as ``self``): the same object
            key.append(("object", id(a), a))
    return tuple(key)


def _transform(mode):
    def transform(f=None, *, wrt=None, backend="numpy", compute=None, checkpoint=None,
                  tiered=None):
        if f is None:
            return lambda fn: GradientFunction(fn, wrt, mode, backend, compute, checkpoint,
                                               tiered)
        return GradientFunction(f, wrt, mode, backend, compute, checkpoint, tiered)
    transform.__name__ = mode
    return transform


grad = _transform("grad")
grad.__doc__ = """The gradient of ``f``'s scalar result, compiled ahead of time from ``f``'s source.

:param f: a ``def`` (at module level, nested, or a method), a :func:`custom_vjp` function, or
    another gradient (``grad(grad(f))``). Use as ``grad(f)``, ``@grad`` or
    ``@grad(wrt=("w1", "w2"))``.
:param wrt: the parameters to differentiate with respect to, by name or position: one (the
    default is the first parameter) gives one gradient, a tuple gives a tuple in that order.
    A parameter may hold floats, float arrays, or a container of them (dict, list, tuple,
    NamedTuple, dataclass): its gradient is the same container.
:param backend: ``"numpy"`` (the default); ``"cupy"`` compiles CuPy code, called with CuPy
    arrays; ``"dask"`` (needs dask) compiles dask.array code, called with Dask arrays (NumPy
    arrays too), whose result is one Dask graph; ``"auto"`` picks Dask, CuPy or NumPy code by
    the arrays of each call; ``"numba"`` (opt-in, needs numba) compiles elementwise gradients
    of float64 arrays into numba loops, and NumPy code otherwise.
:param compute: Dask code only: ``None`` (the default) computes the results, all with one
    ``dask.compute``, where no differentiated argument is a Dask array, and returns them lazy
    where one is; ``True`` always computes, ``False`` never does (docs/reference/backends.md).
:param checkpoint: reverse mode through ``for`` loops in bounded memory: ``None`` (the default)
    keeps every iteration's residuals; an int ``K`` keeps ``K`` snapshots of each loop's
    carried values and runs the forward again between them; ``"sqrt"`` takes ``K =
    ceil(sqrt(T))``; :class:`adcompiler.Checkpoint` also takes ``every=`` (while loops) and
    ``levels=`` (docs/reference/checkpointing.md). value_and_grad and vjp take it too.
:param tiered: ``None`` (the default): where numba is installed, a NumPy-backend gradient of
    at least 10^6 array elements that is one elementwise loop is compiled for numba on a
    background thread while the NumPy code answers, and runs the loop once it is ready and
    its first result matched (``.tier``, ``.wait_tier()``); ``True`` tiers up any plan numba
    takes, at any size; ``False`` (or ``ADCOMPILER_TIERED=0``) keeps the NumPy code
    (docs/performance.md, Tiered compilation).
:returns: a :class:`GradientFunction`, called as ``f`` is. Each gradient has its input's shape
    and dtype (a float for a float). It compiles once per input signature (shapes, dtypes,
    the values of int, str and other static arguments) and reuses the code after that;
    ``.source`` is the generated Python, ``.ir`` its SSA graph, ``.constants`` the values the
    source reads but does not define, ``.specialize(*args)`` compiles without running.
:raises CompileError: where ``f`` uses what cannot be compiled, located at the user's line.

    >>> import numpy as np
    >>> import adcompiler as ad
    >>> def loss(w, x):
    ...     return np.sum(np.tanh(x @ w) ** 2)
    >>> g = ad.grad(loss)
    >>> g(np.ones(2), np.eye(2)).round(4)
    array([0.6397, 0.6397])
    >>> print(g.source, end="")
    def grad_loss(w, x):
        t1 = np.tanh(x @ w)
        # grad of: return np.sum(np.tanh(x @ w) ** 2)
        dt2 = 2.0 * t1
        dt3 = dt2 * (1 - t1 * t1)
        dw = x.T @ dt3
        return dw
"""
value_and_grad = _transform("value_and_grad")
value_and_grad.__doc__ = """Like :func:`grad`, returning ``(value, gradient)`` from one pass: the
forward values the gradient needs are computed once.

    >>> import numpy as np
    >>> import adcompiler as ad
    >>> def loss(w):
    ...     return np.sum(w ** 3)
    >>> ad.value_and_grad(loss)(np.array([1.0, 2.0]))
    (np.float64(9.0), array([ 3., 12.]))
"""
vjp = _transform("vjp")
vjp.__doc__ = """The vector-Jacobian product of ``f`` for a non-scalar result (reverse mode).

Called as ``f`` is, plus the keyword ``cotangent=``: an array shaped like ``f``'s result (for a
result that is a container, the same container), as PyTorch's ``y.backward(gradient)``. It
returns what :func:`grad` would return for ``np.sum(f(...) * cotangent)``, without forming the
Jacobian; a cotangent of the wrong shape is an error saying what was expected.

    >>> import numpy as np
    >>> import adcompiler as ad
    >>> def square(x):
    ...     return x ** 2
    >>> ad.vjp(square)(np.array([1.0, 2.0, 3.0]), cotangent=np.array([1.0, 0.0, 1.0]))
    array([2., 0., 6.])
"""


class TangentFunction(GradientFunction):
    """Forward mode of ``primal``, called with the keyword ``tangents=`` (one per wrt
    parameter, shaped like it): ``jvp`` gives ``(value, tangent)``, ``hvp`` gives
    ``(gradient, Hessian-vector product)`` (forward over reverse)."""

    def specialize(self, *args, **kwargs) -> Compiled:
        kwargs.pop("tangents", None)
        return super().specialize(*args, **kwargs)

    def __call__(self, *args, tangents=None, **kwargs):
        if self.backend == "auto":
            return self._picked(args, kwargs)(*args, tangents=tangents, **kwargs)
        arguments, _ = self._bind(args, kwargs)
        given = tangents if isinstance(tangents, (tuple, list)) and not self._single else \
            (tangents,)
        self._check_arrays({**arguments, **{f"tangents[{i}]": t for i, t in enumerate(given)}})
        compiled, arguments, avals = self._compiled(arguments, None)
        wrt = wrt_leaves(self.wrt, avals)   # a container's leaves (.trees)
        dots = self._tangents(tangents, arguments, avals)
        try:
            result = self._finish(compiled.function(*arguments.values(), *dots), arguments,
                                  avals)
        except poles.PYTHON_RAISES:   # at a pole of Python-float code (adcompiler.api.poles)
            result = poles.at_a_pole(compiled.function, self.primal, arguments, tuple(dots),
                                     (args, kwargs), wrt, self.mode)
        k = len(wrt) if self.mode == "hvp" else 1
        first, second = result[:k], result[k:]
        if self.mode == "hvp":   # the gradient and H v, each like its input
            first, second = (input_types(r, arguments, wrt) for r in (first, second))
            if wrt != self.wrt:
                first, second = (regroup(r, self.wrt, avals) for r in (first, second))
        if self._single or self.mode == "jvp":
            return first[0], second[0]
        return tuple(first), tuple(second)

    def _tangents(self, tangents, arguments, avals=None) -> list:
        """One tangent per wrt parameter, with its parameter's shape, dtype and Python-ness (a
        container's: the same container, one per leaf); ``arguments`` are the flat values."""
        name = self.primal.__name__
        if tangents is None:
            raise TypeError(f"{self.mode} of {name} needs the keyword tangents= (one per wrt "
                            f"parameter {self.wrt}, shaped like it)")
        tangents = (tangents,) if self._single else tuple(tangents)
        if len(tangents) != len(self.wrt):
            raise TypeError(f"{self.mode} of {name} takes {len(self.wrt)} tangents (for "
                            f"{self.wrt}), got {len(tangents)}")
        if avals is not None and wrt_leaves(self.wrt, avals) != self.wrt:
            tangents = tangent_leaves(tangents, self.wrt, avals)
            return [_like(t, arguments[w], w) for t, w in zip(tangents,
                                                            wrt_leaves(self.wrt, avals))]
        return [_like(t, arguments[w], w) for t, w in zip(tangents, self.wrt)]


def _like(t, x, name):
    if isinstance(x, float):
        return float(t)
    if is_dask_array(t) or is_dask_array(x):   # kept lazy (np.asarray would compute it)
        t = t.astype(x.dtype) if hasattr(t, "astype") else np.asarray(t, dtype=x.dtype)
    else:
        t = array_module(x).asarray(t, dtype=x.dtype)
    if t.shape != x.shape:   # not np.shape: NumPy functions are not for CuPy arrays
        raise ValueError(f"the tangent for {name!r} has shape {t.shape}, but {name} has shape "
                         f"{x.shape}")
    return t


def jvp(f=None, *, wrt=None, backend="numpy", compute=None):
    """The Jacobian-vector product of ``f``, computed in forward mode, ahead of time.

    ``jvp(f, wrt=...)(*args, tangents=t)`` returns ``(f(*args), J @ t)``: ``t`` is one tangent
    per wrt parameter (a single one for a single wrt), shaped like it. The generated code
    (``.source``) computes each value's tangent right after the value, named ``<name>_dot``.
    """
    if f is None:
        return lambda fn: TangentFunction(fn, wrt, "jvp", backend, compute)
    return TangentFunction(f, wrt, "jvp", backend, compute)


__all__ = ["grad", "value_and_grad", "vjp", "jvp", "GradientFunction", "TangentFunction",
           "CompileError"]
