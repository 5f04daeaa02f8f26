"""Container arguments (dicts, lists, tuples, NamedTuples, dataclasses of arrays) in a standalone
module: its dispatcher takes the user's parameters, unpacks each container into its leaves
(``params_W1 = params['W1']``: the bodies' parameters, as ``adcompiler.grad``'s generated code
takes them, :mod:`adcompiler.frontend.bindings.trees`) and packs each gradient of one back
into the same container (``{'W1': out[0], 'b1': out[1]}``).

Invariants: every example of a function has the same structure for each container (the
dispatcher unpacks one structure; another is a located refusal); a NamedTuple or dataclass is
rebuilt by its class, which must be a top-level definition of the user's module (the module
copies it, as it copies every definition the code needs); a container's arrays take every size
as the top-level arrays do (:mod:`adcompiler.aot.polymorphic` varies the leaves too).
"""

from __future__ import annotations

import textwrap

from ..api.signature import bind_arguments, classify_arguments
from ..errors import CompileError
from ..frontend.bindings.trees import Tree, describe_structure, label_of


def containers_of(gradient, args) -> dict:
    """``{parameter: Tree}`` of the containers an example passes."""
    avals = classify_arguments(bind_arguments(gradient.primal, args, {}), gradient.wrt)
    return {n: a for n, a in avals.items() if isinstance(a, Tree)}


def common(fn) -> dict:
    """The containers every specialisation of ``fn`` takes (a MarkedFunction), one structure
    each; a CompileError where two examples differ."""
    first = fn.specialisations[0].containers if fn.specialisations else {}
    for spec in fn.specialisations[1:]:
        if {n: t.structure for n, t in spec.containers.items()} != \
                {n: t.structure for n, t in first.items()}:
            raise CompileError(
                f"{fn.name}: its examples pass containers of different structures "
                f"({_structures(first)} and {_structures(spec.containers)}); a standalone "
                "module unpacks one structure per container",
                hint="give every example the same keys and lengths, or call adcompiler."
                     f"{fn.mode} at run time, which compiles one per structure")
    if first and fn.mode == "jvp":
        raise CompileError(f"{fn.name}: `compile --mode forward` takes arrays and floats, not "
                           f"containers ({_structures(first)})",
                           hint="compile the decorator's own mode, which takes them")
    return first


def _structures(containers) -> str:
    return ", ".join(f"{n}={describe_structure(t.structure)}" for n, t in containers.items())


def flat_params(params, containers) -> list:
    """The bodies' parameters: each container parameter replaced by its leaves."""
    out = []
    for name in params:
        out.extend(containers[name].names if name in containers else (name,))
    return out


def labels(params, containers) -> list:
    """The bodies' parameters as the user writes them, for messages: each container parameter
    replaced by its leaves' spellings (``params['W1']``, ``p.W``, ``layers[0]``)."""
    out = []
    for name in params:
        out.extend(leaf_labels(name, containers[name]).values() if name in containers
                   else (name,))
    return out


def unpack_lines(containers, what) -> list:
    """A check that each container has the structure compiled for (its types, keys, lengths and
    static entries: the bodies folded those in, so another would be silently wrong), then
    ``    params_W1 = params['W1']`` for each traced leaf, in the bodies' order."""
    lines = []
    for name, tree in containers.items():
        lines += _wrapped(_checks(tree.structure, name), "    if not (", " and ", "):")
        text = (f"{what}: {name} is not {describe_structure(tree.structure)}, the structure it "
                "was compiled for (*: an array or a float)")
        chunks = [repr(c) for c in textwrap.wrap(text, 64, drop_whitespace=False)]
        lines.append("        raise TypeError(" + "\n                        ".join(chunks) + ")")
    for name, tree in containers.items():
        paths = iter(_leaf_paths(tree.structure))
        lines += [f"    {leaf} = {label_of(next(paths), name)}" for leaf in tree.names]
    return lines


def _wrapped(parts, start, sep, end, width=96) -> list:
    """``start + sep.join(parts) + end`` on lines of at most ``width`` characters, each
    continuation indented under the first part."""
    lines, line = [], start
    for k, part in enumerate(parts):
        piece = part if k == 0 else sep.lstrip() + part
        if k and len(line) + 1 + len(piece) > width - len(end):
            lines.append(line)
            line = " " * (len(start) + 4) + piece
        else:
            line += ("" if k == 0 else " ") + piece
    return lines + [line + end]


def _checks(structure, expr) -> list:
    """The conditions that the value of ``expr`` has ``structure`` (in an order whose accesses
    each follow the checks that make them safe)."""
    kind = structure[0]
    if kind == "leaf":
        return []
    if kind == "static":
        value = structure[1]
        return [f"{expr} is None"] if value is None else \
            [f"type({expr}) is {type(value).__name__}", f"{expr} == {value!r}"]
    if kind == "dict":
        out = [f"type({expr}) is dict", f"tuple({expr}) == {tuple(structure[1])!r}"]
    elif kind in ("list", "tuple"):
        out = [f"type({expr}) is {kind}", f"len({expr}) == {len(structure[-1])}"]
    else:   # the user's class or the module's copy: one of that name with those fields
        fields = structure[1]._fields if kind == "namedtuple" else tuple(structure[2])
        spelled = "_fields" if kind == "namedtuple" else "__dataclass_fields__"
        out = [f"type({expr}).__name__ == {structure[1].__name__!r}",
               f"tuple(getattr(type({expr}), {spelled!r}, ())) == {fields!r}"]
    for step, s in zip(_steps(structure), structure[-1]):
        out += _checks(s, label_of((step,), expr))
    return out


def leaf_labels(name, tree) -> dict:
    """``{leaf parameter: how the user writes it}``: ``{"params_W1": "params['W1']"}``."""
    return {leaf: label_of(path, name)
            for leaf, path in zip(tree.names, _leaf_paths(tree.structure))}


def _leaf_paths(structure, path=()) -> list:
    kind = structure[0]
    if kind == "leaf":
        return [path]
    if kind == "static":
        return []
    steps = _steps(structure)
    return [p for step, s in zip(steps, structure[-1]) for p in _leaf_paths(s, path + (step,))]


def _steps(structure) -> list:
    kind = structure[0]
    if kind == "dict":
        return [("key", k) for k in structure[1]]
    if kind == "namedtuple":
        return [("attr", f) for f in structure[1]._fields]
    if kind == "dataclass":
        return [("attr", f) for f in structure[2]]
    return [("index", i) for i in range(len(structure[-1]))]


def returns(fn, containers, wrt):
    """``returns(call)``: the dispatcher's lines returning the decorator's result from a body's
    flat outputs, each container's gradient packed as the container."""
    single = fn.wrt is None or not isinstance(fn.wrt, (tuple, list))
    counts = [len(containers[w].names) if w in containers else 1 for w in wrt]
    first = 1 if fn.mode == "value_and_grad" else 0
    flat_one = first + sum(counts) == 1   # the body returns one array, not a tuple
    index, parts = first, []
    for w, n in zip(wrt, counts):
        items = iter(f"out[{k}]" for k in range(index, index + n))
        parts.append(pack(containers[w].structure, items, w) if w in containers
                     else next(items))
        index += n
    grads = parts[0] if single else "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    result = f"out[0], {grads}" if first else grads

    def lines(call):
        return [f"out = ({call},)" if flat_one else f"out = {call}", f"return {result}"]
    return lines


def pack(structure, items, expr) -> str:
    """Python source building ``structure`` with the expressions ``items`` at its leaves
    (its static entries as they are: a gradient's, as adcompiler.grad's); a NamedTuple or
    dataclass by the class of the argument ``expr`` it is the gradient of (the caller's own,
    as jax.grad gives)."""
    kind = structure[0]
    if kind == "leaf":
        return next(items)
    if kind == "static":
        return repr(structure[1])
    kids = [pack(s, items, label_of((step,), expr))
            for step, s in zip(_steps(structure), structure[-1])]
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(structure[1], kids)) + "}"
    if kind == "list":
        return "[" + ", ".join(kids) + "]"
    if kind == "tuple":
        return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
    names = structure[1]._fields if kind == "namedtuple" else structure[2]
    return f"type({expr})(" + ", ".join(f"{n}={v}" for n, v in zip(names, kids)) + ")"


def classes(module, containers, fname) -> list:
    """The NamedTuple and dataclass classes the packing calls, by name: each a top-level
    definition of the user's module (copied into the standalone module), else a refusal."""
    out = []
    for tree in containers.values():
        for cls in _classes(tree.structure):
            name = cls.__name__
            if module.namespace.get(name) is not cls or name not in module.definitions:
                raise CompileError(
                    f"{fname}: its gradient is a {cls.__qualname__}, which the standalone "
                    f"module cannot build: the class is not a top-level definition of "
                    f"{module.path}", hint="define the class at the module's top level, or "
                    "pass a dict")
            out.append(name)
    return out


def _classes(structure):
    if structure[0] in ("namedtuple", "dataclass"):
        yield structure[1]
    if structure[0] not in ("leaf", "static"):
        for s in structure[-1]:
            yield from _classes(s)
