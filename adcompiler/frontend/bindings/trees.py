"""Parameter containers (pytrees): dicts, lists, tuples, NamedTuples and dataclasses of arrays
and floats, as arguments of a compiled function and as its gradients.

A container argument is flattened into its *structure* (the types, the keys, the lengths and
the Python values that are not traced: None, ints, strings) and its *leaves* (the floats and
arrays, each traced as a parameter of its own, named after its key path: ``params_W1``,
``layers_0_b``). The structure is static: it is part of the signature, so a call with other
keys or lengths compiles again, and one with the same structure reuses the code. The frontend
binds the argument's name to the same container holding the leaves' Values (``params["W1"]``,
``params.W1``, ``for W, b in layers`` are Python operations on it, run while compiling); the
gradient is the structure filled with the leaves' gradients, as ``jax.grad`` gives it: the same
container types, keys and order, None where the argument holds None.

Invariants: :func:`structure_of`, :func:`leaves_of` and :func:`rebuild` visit the leaves in
one order (depth first, dicts in insertion order, dataclass fields in declaration order); a
structure is hashable and equal only for containers of the same types, keys, lengths and
static entries. Users: the transforms (:mod:`adcompiler.api.signature` classifies an argument
into a :class:`Tree`), the lowering (binds it), the pipeline (the generated function's
parameters, a vjp's seeds), the tape, ``check_grad`` and standalone modules
(:mod:`adcompiler.aot.containers`).
"""

from __future__ import annotations

import dataclasses
import keyword
import re
from dataclasses import dataclass

import numpy as np

LEAF = ("leaf",)


@dataclass(frozen=True)
class Tree:
    """A container argument, classified: its ``structure`` and its traced leaves as
    ``(name, Aval)`` pairs in flattening order. Hashable: it is the argument's key."""

    structure: tuple
    leaves: tuple

    @property
    def names(self) -> tuple:
        return tuple(name for name, _ in self.leaves)

    def __repr__(self):   # the disk cache's key text: no object identities
        return f"Tree({describe_structure(self.structure)}; " \
               f"{', '.join(f'{n}: {a}' for n, a in self.leaves)})"


def is_container(value) -> bool:
    """A dict, list, tuple (NamedTuples too) or dataclass instance."""
    return isinstance(value, (dict, list, tuple)) or is_dataclass_instance(value)


def is_dataclass_instance(value) -> bool:
    """An instance of the user's dataclass (not adcompiler's own: a Value is a dataclass)."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type) and \
        not type(value).__module__.startswith("adcompiler.")


def holds_traced(value) -> bool:
    """Whether a container holds an array anywhere (so it cannot be a static tuple)."""
    if isinstance(value, dict) or is_dataclass_instance(value):
        return True
    if isinstance(value, (list, tuple)):
        return any(holds_traced(v) for v in value)
    return isinstance(value, (np.ndarray, np.generic)) or \
        hasattr(value, "__cuda_array_interface__")   # a CuPy array


def children(value) -> list:
    """``[(step, child)]`` of a container: a step is ``("key", k)``, ``("index", i)`` or
    ``("attr", name)``."""
    if isinstance(value, dict):
        return [(("key", k), v) for k, v in value.items()]
    if is_dataclass_instance(value):
        return [(("attr", f.name), getattr(value, f.name)) for f in dataclasses.fields(value)]
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return [(("attr", f), v) for f, v in zip(value._fields, value)]
    return [(("index", i), v) for i, v in enumerate(value)]


def structure_of(value, leaf, name="") -> tuple:
    """The structure of ``value`` (the argument ``name``): ``leaf(path, x)`` says, for each
    non-container ``x``, LEAF (traced) or ``("static", x)``; it may raise (a bad leaf)."""
    def walk(v, path):
        if not is_container(v):
            return leaf(path, v)
        if isinstance(v, dict):
            for k in v:
                if isinstance(k, bool) or not isinstance(k, (str, int)):
                    raise TypeError(
                        f"{label_of(path, name)!r} is a dict with the key {k!r} (a "
                        f"{type(k).__name__}): a container argument's dict keys are strings or "
                        "ints, which name its entries in the generated code; use str keys")
        kids = tuple(walk(c, path + (step,)) for step, c in children(v))
        if isinstance(v, dict):
            return ("dict", tuple(v), kids)
        if is_dataclass_instance(v):
            return ("dataclass", type(v), tuple(f.name for f in dataclasses.fields(v)), kids)
        if isinstance(v, tuple) and hasattr(v, "_fields"):
            return ("namedtuple", type(v), kids)
        return ("list" if isinstance(v, list) else "tuple", kids)
    return walk(value, ())


def leaves_of(value) -> list:
    """``[(path, x)]`` of every non-container ``x`` in ``value``, in flattening order."""
    if not is_container(value):
        return [((), value)]
    return [(((step,) + p), x) for step, c in children(value) for p, x in leaves_of(c)]


def rebuild(structure, leaves, static=lambda x: x):
    """The container of ``structure`` holding the next items of the iterator ``leaves`` at its
    traced leaves, and ``static(x)`` at its static ones."""
    kind = structure[0]
    if kind == "leaf":
        return next(leaves)
    if kind == "static":
        return static(structure[1])
    kids = [rebuild(s, leaves, static) for s in structure[-1]]
    if kind == "dict":
        return dict(zip(structure[1], kids))
    if kind == "list":
        return kids
    if kind == "tuple":
        return tuple(kids)
    if kind == "namedtuple":
        return structure[1]._make(kids)
    out = object.__new__(structure[1])   # no __init__/__post_init__: they may check values
    for name, kid in zip(structure[2], kids):
        object.__setattr__(out, name, kid)   # frozen dataclasses too
    return out


def label_of(path, name="") -> str:
    """How the user writes a leaf: ``params["W1"]``, ``layers[0]``, ``params.W1``."""
    return name + "".join(f"[{k!r}]" if kind == "key" else f"[{k}]" if kind == "index"
                          else f".{k}" for kind, k in path)


def ident_of(name, path) -> str:
    """An identifier for a leaf (``params_W1``, ``layers_0_b``): generated code names it so."""
    parts = [re.sub(r"\W", "_", str(k)) for _, k in path]
    text = "_".join([name, *parts]) if parts else name
    return text + "_" if keyword.iskeyword(text) else text


def unique_names(bases, taken) -> list:
    """``bases`` made distinct from each other and from ``taken`` (a set, extended here)."""
    out = []
    for base in bases:
        name, k = base, 2
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        out.append(name)
    return out


def describe_structure(structure) -> str:
    """``structure`` in words, for keys and errors: ``{'W1': *, 'b1': *}``, ``[(*, *), None]``
    (``*`` an array or a float)."""
    kind = structure[0]
    if kind == "leaf":
        return "*"
    if kind == "static":
        return repr(structure[1])
    kids = ", ".join(map(describe_structure, structure[-1]))
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {describe_structure(s)}"
                               for k, s in zip(structure[1], structure[-1])) + "}"
    if kind == "list":
        return f"[{kids}]"
    if kind == "tuple":
        return f"({kids}{',' if len(structure[-1]) == 1 else ''})"
    cls = structure[1]
    return f"{cls.__module__}.{cls.__qualname__}({kids})"


# ---- a signature with containers: the generated function takes their leaves -----------------
def parameter_names(arguments: dict) -> list:
    """The generated function's parameters for these classified arguments: a container's
    leaves in its place, each by its name."""
    out = []
    for name, a in arguments.items():
        out.extend(a.names if isinstance(a, Tree) else (name,))
    return out


def wrt_leaves(wrt, arguments: dict) -> tuple:
    """``wrt`` with each container parameter replaced by its traced leaves' names."""
    out = []
    for name in wrt:
        a = arguments.get(name)
        out.extend(a.names if isinstance(a, Tree) else (name,))
    return tuple(out)


def flat_values(arguments: dict, avals: dict) -> dict:
    """The call's values for the generated function: a container's traced leaves in its place,
    by their names (its static entries are folded into the code)."""
    if not any(isinstance(a, Tree) for a in avals.values()):
        return arguments
    out = {}
    for name, value in arguments.items():
        a = avals[name]
        if isinstance(a, Tree):
            traced = iter(a.names)
            for _, x in _traced_leaves(a.structure, value):
                out[next(traced)] = x
        else:
            out[name] = value
    return out


def _traced_leaves(structure, value) -> list:
    kind = structure[0]
    if kind == "leaf":
        return [((), value)]
    if kind == "static":
        return []
    return [pair for s, (_, c) in zip(structure[-1], children(value))
            for pair in _traced_leaves(s, c)]


def regroup(flat, wrt, arguments: dict) -> list:
    """The gradients of ``flat`` (one per wrt leaf, in order) as one per wrt parameter: a
    container's the same container of its leaves' gradients, its static entries as they are
    (None where it holds None, a string or bool flag itself: as JAX keeps a static field)."""
    it, out = iter(flat), []
    for name in wrt:
        a = arguments.get(name)
        out.append(rebuild(a.structure, it) if isinstance(a, Tree) else next(it))
    return out


def tangent_leaves(tangents, wrt, arguments: dict) -> list:
    """One tangent per wrt leaf, from one per wrt parameter (a container's: a container of the
    parameter's structure, None where it holds None); a TypeError where one differs."""
    out = []
    for t, name in zip(tangents, wrt):
        a = arguments.get(name)
        if not isinstance(a, Tree):
            out.append(t)
            continue
        given = structure_of(t, lambda path, x: ("static", x) if is_static_entry(x) else
                             LEAF) if is_container(t) else LEAF
        if given != a.structure:
            raise TypeError(f"the tangent for {name!r} is {describe_structure(given)}, but "
                            f"{name} is {describe_structure(a.structure)}: pass a container "
                            "of the same structure, one array per array of it")
        out.extend(x for _, x in _traced_leaves(a.structure, t))
    return out


def split(value, name) -> tuple:
    """``(structure, [(label, leaf)])`` of a differentiated container: None, string and bool
    entries are static (:func:`is_static_entry`), every other non-container a leaf for the
    caller to check and trace (the dynamic tape's view of a container,
    :mod:`adcompiler.tape.functional`)."""
    leaves = []

    def leaf(path, x):
        if is_static_entry(x):
            return ("static", x)
        leaves.append((label_of(path, name), x))
        return LEAF
    return structure_of(value, leaf, name), leaves


def is_static_entry(x) -> bool:
    """An entry of a differentiated container that is not differentiated: None, a string or a
    bool (a flag); its gradient is itself. An int is refused there (it may be meant as a
    float)."""
    return x is None or isinstance(x, (str, bool))


def flat_avals(arguments: dict) -> dict:
    """Classified arguments with each container replaced by its leaves, by name: the signature
    of the generated function (grad of grad reads that function back)."""
    out = {}
    for name, a in arguments.items():
        out.update(dict(a.leaves) if isinstance(a, Tree) else {name: a})
    return out
