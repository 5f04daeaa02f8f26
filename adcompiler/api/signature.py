"""Bind and classify a call's arguments: traced (floats, arrays) or static (ints, tuples...).

Invariants: two calls with equal keys lower to the same graph, so a compiled specialisation
can be reused; a traced argument's key is its abstract value, a static one's is its value.
A call that does not fit the function's signature raises exactly the TypeError that calling the
function itself would raise; only float values (floats, float arrays) can be differentiated.
What a transform is given is checked when it is made (:func:`check_transformable`): a def, a
``custom_vjp`` function or ``grad(f)``, else a TypeError saying what to write instead.
"""

from __future__ import annotations

import functools
import inspect
import sys

import numpy as np

from ..errors import CompileError
from ..frontend.bindings import trees
from ..frontend.reading.parameters import (  # noqa: F401 (the api's names)
    python_call_error, resolve_wrt)
from .bound import BoundTransform
from .function_keys import static_key
from ..ir import Aval
from ..runtime.namespaces import backend_of, is_dask_array

_STATIC_TYPES = (bool, int, str, type(None), tuple, np.dtype, type)


def bind_arguments(fn, args, kwargs) -> dict:
    """``{parameter: value}`` for ``fn(*args, **kwargs)``, defaults applied; a call that does not
    fit raises the TypeError Python raises for it (``f() missing 1 required positional ...``)."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        raise python_call_error(fn, args, kwargs) from None
    bound.apply_defaults()
    return bound.arguments


def classify(value, name, differentiate: bool):
    """An Aval for a traced argument, a :class:`Tree` for a container of traced values (a dict,
    a dataclass, a list or tuple differentiated or holding arrays), or the value itself for a
    static one."""
    if trees.is_container(value) and _is_tree(value, differentiate):
        return _tree(value, name, differentiate)
    if isinstance(value, float):
        return Aval("float", "float64")
    if isinstance(value, complex) or (
            isinstance(value, (np.ndarray, np.generic)) or is_device_array(value)
            or is_dask_array(value)) and \
            np.dtype(value.dtype).kind == "c":
        raise TypeError(f"{name!r} is complex ({type(value).__name__}"
                        f"{'' if isinstance(value, complex) else ' of dtype ' + str(value.dtype)}"
                        "): adcompiler differentiates real computations only; pass the real "
                        f"and imaginary parts as two float arrays ({name}.real, {name}.imag)")
    if isinstance(value, np.ndarray) and type(value) is not np.ndarray:
        _check_subclass(value, name)
    if isinstance(value, (np.ndarray, np.generic)) or is_device_array(value) or \
            is_dask_array(value):
        if any(d != d for d in value.shape):   # NaN: a Dask array's unknown chunk sizes
            raise TypeError(f"{name!r} is a Dask array of unknown shape {value.shape} (chunks "
                            "of unknown sizes, from a boolean mask or an unknown-length "
                            f"read): call {name}.compute_chunk_sizes() first")
        aval = Aval("array", np.dtype(value.dtype).name, tuple(value.shape))
        if differentiate and not aval.is_float:
            raise TypeError(f"cannot differentiate with respect to {name!r}: it is an array of "
                            f"dtype {aval.dtype}; pass a float array such as "
                            f"{name}.astype(np.float64)")
        return aval
    if differentiate:
        if isinstance(value, (int, bool)):
            raise TypeError(f"cannot differentiate with respect to {name!r}: it is an integer "
                            f"({value!r}); pass a float such as {float(value)!r}")
        if type(value).__module__ == "adcompiler.tape.tensor":   # G(x) inside dynamic_grad
            raise TypeError(f"cannot differentiate with respect to {name!r}: it is a tape "
                            "tensor, and a compiled gradient called on one would drop its "
                            "graph; on the tape, differentiate the gradient there "
                            "(tape.grad(out, x, create_graph=True)), or compile the outer "
                            "function with adcompiler.grad, which inlines the call")
        raise TypeError(f"cannot differentiate with respect to {name!r}: "
                        f"{type(value).__name__} is not a float or an array")
    if isinstance(value, list):
        try:
            return Aval.of(np.asarray(value))
        except ValueError:
            raise TypeError(f"argument {name!r} is a list that is not one array (its items "
                            "differ in shape, or are arrays of arrays): pass each array as "
                            "its own parameter") from None
    return value


def _is_tree(value, differentiate) -> bool:
    """A dict or a dataclass always; a list or tuple differentiated, or holding an array (a
    list of numbers not differentiated is its array, as before; a tuple of numbers static)."""
    if isinstance(value, dict) or trees.is_dataclass_instance(value) or differentiate:
        return True
    if isinstance(value, list):
        try:
            return np.asarray(value).dtype.kind not in "biuf"
        except ValueError:  # ragged: arrays of different shapes
            return True
    return trees.holds_traced(value)


def _tree(value, name, differentiate) -> trees.Tree:
    """``value``'s structure and its traced leaves (floats, arrays), each named after its key
    path and classified as an argument is (a bad leaf raises the TypeError naming it as
    ``params['W1']``)."""
    leaves = []

    def leaf(path, x):
        where = trees.label_of(path, name)
        if trees.is_static_entry(x):   # None, a string, a flag: static, its gradient itself
            return ("static", x)
        if differentiate or isinstance(x, (float, np.ndarray, np.generic)) or \
                is_device_array(x) or is_dask_array(x):
            aval = classify(x, where, differentiate)
            leaves.append((trees.ident_of(name, path), aval))
            return trees.LEAF
        try:
            hash(x)
        except TypeError:
            raise TypeError(f"{where} (a {type(x).__name__}) is neither an array, a float, "
                            "nor a static value (int, bool, string, None)") from None
        return ("static", x)

    structure = trees.structure_of(value, leaf, name)
    names = trees.unique_names([n for n, _ in leaves], {name})
    return trees.Tree(structure, tuple(zip(names, (a for _, a in leaves))))


def classify_arguments(arguments: dict, wrt) -> dict:
    """``classify`` of each argument (differentiated where named in ``wrt``), a container's
    leaf names kept distinct from every parameter's name."""
    avals = {n: classify(v, n, n in wrt) for n, v in arguments.items()}
    taken = set(avals)
    for n, a in avals.items():
        if isinstance(a, trees.Tree):
            names = trees.unique_names(a.names, taken)
            if tuple(names) != a.names:
                avals[n] = trees.Tree(a.structure, tuple(zip(names, (x for _, x in a.leaves))))
    return avals


def _check_subclass(value, name):
    """np.matrix (``*`` is a matrix product) and masked arrays (sums skip masked entries)
    compute otherwise than the ndarrays the code is compiled for: refused, not silently read
    as plain arrays. Other subclasses (np.memmap...) compute as ndarrays and are taken."""
    if isinstance(value, np.matrix):
        raise TypeError(f"{name!r} is a numpy.matrix, whose `*` is a matrix product: pass "
                        f"np.asarray({name}) and write matrix products with `@`")
    if type(value).__module__.startswith("numpy.ma"):
        raise TypeError(f"{name!r} is a masked array ({type(value).__name__}), whose "
                        "reductions skip masked entries: pass the values to use, such as "
                        f"{name}.filled(0.0), and the mask as its own array if the function "
                        "needs it")


def input_types(grads, arguments: dict, wrt: tuple) -> tuple:
    """``grads`` (one per ``wrt`` parameter), each a NumPy scalar of its input's type where the
    input is one (a ``np.float32`` for a ``np.float32``, a ``np.float64`` for a ``np.float64``),
    as NumPy and JAX give; other gradients as they are."""
    return tuple(_scalar_like(g, arguments[w]) for g, w in zip(grads, wrt))


def _scalar_like(g, x):
    if isinstance(x, np.generic) and type(g) is not type(x) and np.ndim(g) == 0:
        return x.dtype.type(g)
    return g


def is_device_array(value) -> bool:
    """A CuPy array (told by its type's module, so CuPy is not imported to find out)."""
    return type(value).__module__.startswith("cupy") and hasattr(value, "shape")


_is_device_array = is_device_array


def array_module(value):
    """``cupy`` for a CuPy array (imported already, since the array exists), else ``numpy``."""
    return sys.modules["cupy"] if is_device_array(value) else np


def check_backend_arguments(arguments: dict, backend: str, what: str):
    """A TypeError where a NumPy array (or scalar, or list) meets CuPy code, a CuPy array meets
    NumPy or Dask code, a Dask array code for another backend, or an array of a library no
    backend is for (:func:`~adcompiler.runtime.namespaces.backend_of`). Python floats and
    static arguments suit all; NumPy arrays suit Dask code too; a container's arrays are
    checked one by one (named ``params['W']``)."""
    for name, value in _entries(arguments):
        kind = backend_of(value, name)   # a TypeError for an array of another library
        if kind == "dask" and backend != "dask":
            raise TypeError(
                f"{what} was compiled for {backend!r} arrays, but {name!r} is a Dask array: "
                f"compile it with backend='dask' (or backend='auto'), or pass "
                f"{name}.compute()")
        if backend == "dask":
            if kind == "cupy":
                raise TypeError(f"{what} was compiled for Dask (backend='dask'), but {name!r} "
                                f"is a CuPy array: pass dask.array.from_array({name}.get()), "
                                "or compile it with backend='cupy'")
            continue   # NumPy arrays and floats are read as dask.array reads them
        if backend == "cupy" and (isinstance(value, (np.ndarray, np.generic, list))
                                  and not isinstance(value, float)):
            kind = "list" if isinstance(value, list) else f"NumPy {type(value).__name__}"
            raise TypeError(
                f"{what} was compiled for CuPy (backend='cupy'), but {name!r} is a {kind}: pass "
                f"cupy.asarray({name}). The generated code runs on the GPU and does not copy "
                "inputs there for you")
        if backend != "cupy" and is_device_array(value):
            target = "NumPy" if backend == "numpy" else f"NumPy arrays (backend={backend!r})"
            raise TypeError(
                f"{what} was compiled for {target}, but {name!r} is a CuPy array: compile it "
                f"with backend='cupy', or pass {name}.get()")


def _entries(arguments: dict):
    """``(name, value)`` of each argument, a container holding arrays opened into its leaves
    (a list of numbers stays whole: it is one array)."""
    for name, value in arguments.items():
        if trees.is_container(value) and (not isinstance(value, list) or
                                          trees.holds_traced(value)):
            for path, leaf in trees.leaves_of(value):
                yield trees.label_of(path, name), leaf
        else:
            yield name, value


def key_of(arguments: dict) -> tuple:
    """A hashable key of a bound call: avals for traced arguments, values for static ones."""
    out = []
    for name, value in arguments.items():
        if isinstance(value, (Aval, trees.Tree)):
            out.append(value)
        else:
            try:
                hash(value)
            except TypeError:
                raise TypeError(_unhashable(name, value)) from None
            out.append(("static", type(value).__name__, static_key(value)))
    return tuple(out)


def _unhashable(name, value) -> str:
    """Why argument ``name`` cannot select compiled code, and what to pass instead."""
    kind = type(value).__name__
    return (f"argument {name!r} (a {kind}) is neither an array, a float, nor a static value "
            "(int, bool, string, tuple of those): pass arrays and floats, or hashable values")


# ---- what a transform can take -----------------------------------------------------------------
class NestingError(CompileError, TypeError):
    """A transform of a transform adcompiler cannot differentiate (``jacobian(vjp(f))``): a
    TypeError, raised when the outer transform is made, and a CompileError as before."""


NESTINGS = ("grad(grad(f)) (to any depth), and value_and_grad, vjp, jvp, jacobian or hessian "
            "of grad(f)")


def check_transformable(fn, transform: str):
    """Refuse, when ``transform(fn)`` is made, what adcompiler cannot compile: a bound method,
    a staticmethod or classmethod object, a ``functools.partial``, a transform other than
    ``grad`` (:class:`NestingError`), anything that is not a def. Each TypeError names what was
    passed and what to write instead."""
    if isinstance(fn, (staticmethod, classmethod)):
        kind, name = type(fn).__name__, getattr(fn.__func__, "__name__", "f")
        raise TypeError(
            f"{transform}({kind} {name}): @adcompiler.{transform} is stacked directly over "
            f"@{kind}, so it was given a {kind} object, not a function; put @{kind} above the "
            f"adcompiler decorator (@{kind}, then @adcompiler.{transform}(...), then def {name})")
    if inspect.ismethod(fn) or isinstance(fn, BoundTransform):  # model.loss of a method
        cls, name = type(fn.__self__).__name__, getattr(fn, "__name__", "method")
        raise TypeError(
            f"{transform}({cls.lower()}.{name}): a bound method; take the {transform} of the "
            f"function, {transform}({cls}.{name}, wrt=...), and call it with the object first, "
            f"or decorate the method in the class (@adcompiler.{transform}(wrt=...)) and call "
            f"it as {cls.lower()}.{name}(...)")
    if isinstance(fn, functools.partial):
        raise TypeError(_partial_message(fn, transform))
    inner = getattr(fn, "transform_name", None)   # grad(f), jacobian(f)...
    if inner is not None and inner != "grad":
        raise _nesting_error(fn, inner, transform)
    # NumPy's np.sum wraps a def (__wrapped__) but is not one: refused by its module
    from_numpy = str(getattr(fn, "__module__", "")).split(".")[0] == "numpy"
    if inner is None and (from_numpy or not inspect.isfunction(inspect.unwrap(fn))):
        name, kind = getattr(fn, "__name__", None), type(fn).__name__
        if from_numpy:
            kind = "NumPy function"   # a ufunc, or an _ArrayFunctionDispatcher (np.sum)
        what = f"{name} is a {kind}" if name else f"a {kind} object is a callable"
        raise TypeError(
            f"{transform}({name or 'a ' + kind + ' object'}): adcompiler compiles a Python "
            f"function (a def) from its source, and {what}, not a def; write a def that calls "
            f"it and pass that (def f(x): return ...)")


def _nesting_error(fn, inner: str, transform: str) -> NestingError:
    """``transform(inner(f))`` for an ``inner`` transform other than grad: the nestings that
    work, and what to write instead."""
    name = getattr(getattr(fn, "primal", None), "__name__", "f")
    return NestingError(
        f"{transform}({inner}({name})): cannot differentiate a {inner}: adcompiler "
        f"differentiates again only grad(f), whose generated source it reads back; "
        f"supported: {NESTINGS}",
        hint="transform adcompiler.grad(f) itself (adcompiler.jacobian(adcompiler.grad(f)) is "
             "the Hessian, adcompiler.jvp(adcompiler.grad(f)) a Hessian-vector product) or use "
             "adcompiler.hessian(f); for an output of a vector function, write it as a def g "
             "returning a scalar and differentiate g")


def _partial_message(p, transform: str) -> str:
    """What to write instead of ``transform(functools.partial(g, ...))``: a def calling ``g``."""
    name = getattr(p.func, "__name__", "g")
    try:
        params = [(n, q.kind) for n, q in inspect.signature(p).parameters.items()
                  if n not in p.keywords and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD)]
    except (TypeError, ValueError):
        params = [("x", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    fixed = [_short(a) for a in p.args]
    keywords = [f"{k}={_short(v)}" for k, v in p.keywords.items()]
    passed = [f"{n}={n}" if kind == inspect.Parameter.KEYWORD_ONLY else n for n, kind in params]
    call = ", ".join(fixed + passed + keywords)
    return (f"{transform}(functools.partial({name}, {', '.join(fixed + keywords)})): a "
            f"functools.partial object, whose source adcompiler cannot read; write a def that "
            f"calls {name} and pass that: def {name}_fixed({', '.join(n for n, _ in params)}): "
            f"return {name}({call})")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 24 else f"<{type(value).__name__}>"
