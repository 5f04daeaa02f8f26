"""The fast call path of a gradient object: a generated guard chain in front of the compiled code.

After a signature has been compiled, calling ``ad.grad(f)`` with arguments of that signature
should cost little more than calling the generated function itself. A dictionary lookup keyed
on the arguments' shapes and dtypes costs ~0.5 µs in Python (a key to build and hash), which is
several times the whole gradient of a small scalar function. Instead, each compiled signature
adds one guard to a small function written for this gradient object, installed as its class's
``__call__``. Where the user's function has only positional-or-keyword parameters (no
``*args``, ``**kwargs``, keyword-only or positional-only ones) the chain takes the user's own
parameters, names and defaults, so Python itself binds keywords and reports a wrong call with
the user's function name; and where it is safe, the generated function's body is pasted under
its guard instead of being called. For ``seed_f(x1, x2)`` (floats)::

    def seed_f(x1, x2):                     # its text: type(g).__call__.__source__
        if _adc_type(x1) is _adc_float and _adc_type(x2) is _adc_float:
            try:
                dx2 = x1 - math.cos(x2)     # the body of grad_seed_f, inlined
                dx1 = x2 + 1.0 / x1
                return dx1, dx2
            except _adc_raises:             # at a pole (x1 = 0.0): adcompiler.api.poles
                return _adc_slow((x1, x2), {})
        if _adc_type(x1) is _adc_ndarray and x1.shape == (3,) and x1.dtype is _adc_dtype1_0 ...:
            try:
                return _adc_run1(x1, x2)    # not inlined: called
            except _adc_raises:
                return _adc_slow((x1, x2), {})
        return _adc_slow((x1, x2), {})

A ``try`` costs nothing until it catches (Python 3.11's exception tables).

Otherwise (other parameter kinds; vjp, whose ``cotangent=`` the user's function does not
take; a parameter named like a name the chain binds, all of which start with ``_adc_``) the
chain keeps the generic form, which sends any keyword to the slow path::

    def seed_f(a0=_adc_NONE, a1=_adc_NONE, *rest, **kwargs):
        if not rest and not kwargs:
            if _adc_type(a0) is _adc_float and _adc_type(a1) is _adc_float:
                return _adc_run0(a0, a1)
        return _adc_slow(_adc_given(a0, a1) + rest, kwargs)

A body is inlined (see :mod:`adcompiler.api.inlining` for the full list of conditions) only
where the gradient object runs the generated function itself (no packaging of its result), its
source compiles to exactly the code that runs, its parameters are the chain's in order, its
statements are plain ones ending in ``return``, its module never rebinds a global, its local
names are no name the chain reads, and each global it reads (``np``, ``math``, a buffer list
such as ``_grad_h_buffers``: the same object, shared) is unbound in the chain or bound to the
very same object; otherwise the entry calls ``_adc_runN``. Measured (Python 3.11, timeit, per
call, lambda included) on ``g = grad(seed_f, wrt=(0, 1)); g(2.0, 5.0)``: the hand-written
gradient 88-92 ns, the generated function called directly 95-98 ns, ``g(2.0, 5.0)`` 205 ns
with the generic chain calling ``_run0``, 154-158 ns with the user's signature and the body
inlined (most of what is left is Python's call of an object's ``__call__``);
``g(x1=2.0, x2=5.0)`` went from 13 µs (the slow path) to 250 ns.

The guards test identities (``type(a) is float``, ``a.dtype is <the dtype object>``), so a
miss is never wrong, only slower: an argument whose dtype is equal but not the same object, a
device array, or (generic form) any keyword goes to the slow path, which classifies the
arguments fully (and compiles a new signature if needed). Past ``MAX_GUARDS`` signatures the
chain stops growing and the slow path's dictionary serves the rest.
"""

from __future__ import annotations

import hashlib
import keyword
import linecache

import numpy as np

from .inlining import Source
from .poles import PYTHON_RAISES

MAX_GUARDS = 8

_NONE = object()  # an argument not given
_PREFIX = "_adc_"  # every name the chain binds starts with it


def _given(*args) -> tuple:
    """The arguments actually passed (the chain's parameters default to ``_NONE``)."""
    n = len(args)
    while n and args[n - 1] is _NONE:
        n -= 1
    return args[:n]


def guards(key, namespace: dict, entry: int, names=None) -> str | None:
    """The guard expression for one fast key (see ``api._fast_key``) on the parameters ``names``
    (default ``a0, a1...``), binding the objects it compares against in ``namespace``; None
    where a key has no cheap guard (device arrays)."""
    parts = []
    for k, item in enumerate(key):
        a = names[k] if names else f"a{k}"
        if item is float:
            parts.append(f"_adc_type({a}) is _adc_float")
        elif item[0] == "function":                           # ("function", FunctionKey)
            namespace[f"_adc_object{entry}_{k}"] = item[1].function   # its first function
            parts.append(f"{a} is _adc_object{entry}_{k}")
        elif item[0] == "object":                             # ("object", id, it): identity
            namespace[f"_adc_object{entry}_{k}"] = item[2]
            parts.append(f"{a} is _adc_object{entry}_{k}")
        elif len(item) == 2 and isinstance(item[0], tuple):   # (shape, dtype): an ndarray
            dtype = f"_adc_dtype{entry}_{k}"
            namespace[dtype] = item[1]
            parts.append(f"_adc_type({a}) is _adc_ndarray and {a}.shape == {item[0]!r} and "
                         f"{a}.dtype is {dtype}")
        elif len(item) == 2:                                  # (type, value): a static argument
            kind, value = f"_adc_kind{entry}_{k}", f"_adc_value{entry}_{k}"
            namespace[kind], namespace[value] = item
            parts.append(f"_adc_type({a}) is {kind} and {a} == {value}")
        else:
            return None
    return " and ".join(parts) or "True"


def build(arity: int, entries: list, slow, *, signature=None, sources=None, name="call",
          qualname=None):
    """The call function for ``entries`` [(fast key, function)], falling back to
    ``slow(args, kwargs)``. With ``signature`` (an ``inspect.Signature``) of plain parameters
    the chain takes them by name, with their defaults; ``sources`` {fast key: the generated
    source of its function} offers bodies to inline (see :mod:`adcompiler.api.inlining`)."""
    namespace = {"_adc_NONE": _NONE, "_adc_ndarray": np.ndarray, "_adc_slow": slow,
                 "_adc_raises": PYTHON_RAISES,
                 "_adc_given": _given, "_adc_type": type, "_adc_float": float}
    guarded = []
    for entry, (key, function) in enumerate(entries[:MAX_GUARDS]):
        if guards(key, namespace, entry) is not None:   # binds what the guards compare with
            namespace[f"_adc_run{entry}"] = function
            guarded.append((entry, key, function))
    params = _plain_parameters(signature, namespace)
    names = [p.name for p in params] if params is not None else [f"a{k}" for k in range(arity)]
    lines, indent, chain_locals = _frame(params, names, namespace)
    inliner = _Inliner(namespace, chain_locals)
    slow = _tail(params, names)
    for entry, key, function in guarded:
        lines.append(f"{indent}if {guards(key, namespace, entry, names)}:")
        body = inliner.take(entry, function, (sources or {}).get(key), names, indent) or [
            f"{indent}    return _adc_run{entry}({', '.join(names)})"]
        lines += [f"{indent}    try:", *(f"    {ln}" if ln else "" for ln in body),
                  f"{indent}    except _adc_raises:  # at a pole: adcompiler.api.poles",
                  f"{indent}        {slow.strip()}"]
    if params is None and not guarded:
        lines.append("        pass")
    lines.append(slow)
    return _load("\n".join(lines) + "\n", namespace, name, qualname or name,
                 tuple(inliner.inlined))


def _plain_parameters(signature, namespace):
    """The user's parameters where the chain can take them as they are: all positional-or-
    keyword, none named like a name the chain binds. None: the generic form."""
    if signature is None:
        return None
    params = list(signature.parameters.values())
    if all(p.kind is p.POSITIONAL_OR_KEYWORD and p.name.isidentifier()
           and not keyword.iskeyword(p.name) and not p.name.startswith(_PREFIX)
           and p.name not in namespace for p in params):
        return params
    return None


def _frame(params, names, namespace):
    """The chain's header lines, the indent of its guards, and its own local names."""
    if params is None:
        header = f"def _adc_chain({''.join(n + '=_adc_NONE, ' for n in names)}*rest, **kwargs):"
        return [header, "    if not rest and not kwargs:"], "        ", {*names, "rest", "kwargs"}
    given = []
    for k, p in enumerate(params):
        if p.default is p.empty:
            given.append(p.name)
        else:
            namespace[f"_adc_default{k}"] = p.default
            given.append(f"{p.name}=_adc_default{k}")
    return [f"def _adc_chain({', '.join(given)}):"], "    ", set(names)


def _tail(params, names) -> str:
    if params is None:
        return f"    return _adc_slow(_adc_given({', '.join(names)}) + rest, kwargs)"
    return f"    return _adc_slow(({', '.join(names)}{',' * (len(names) == 1)}), {{}})"


def _load(text, namespace, name, qualname, inlined):
    """Exec the chain's source (registered with ``linecache`` for tracebacks), named as the
    user's function; ``__source__`` holds the text and ``__inlined__`` the inlined entries."""
    filename = f"<adcompiler fast path {hashlib.sha1(text.encode()).hexdigest()[:10]}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), namespace)
    chain = namespace.pop("_adc_chain")
    name, qualname = str(name), str(qualname)
    code = chain.__code__
    chain.__code__ = code.replace(co_name=name, **(
        {"co_qualname": qualname} if hasattr(code, "co_qualname") else {}))   # Python 3.11+
    chain.__name__, chain.__qualname__ = name, qualname
    chain.__source__, chain.__inlined__ = text, inlined
    return chain


class _Inliner:
    """Decides, entry by entry, which bodies go into the chain: a body's locals must not be a
    name the chain reads, the names it reads must not be the chain's locals, and each global it
    reads must be unbound in the chain's namespace or bound to the very same object."""

    def __init__(self, namespace: dict, chain_locals: set):
        self.namespace, self.locals = namespace, set(chain_locals)
        self.reads = set(namespace)   # every name the chain may read from its namespace
        self.inlined = []

    def take(self, entry, function, source, names, indent) -> list | None:
        """The lines of ``function``'s body under the guard at ``indent``, or None."""
        if source is None:
            return None
        body = (Source(source) if isinstance(source, str) else source).body(function, names)
        if body is None or body.locals & self.reads:
            return None
        for read, value in body.reads.items():
            if read in self.locals or self.namespace.get(read, value) is not value:
                return None
        if any(b in self.locals or b in self.namespace for b in body.builtins):
            return None
        self.namespace.update(body.reads)
        self.reads |= set(body.reads) | body.builtins
        self.locals |= body.locals
        self.inlined.append(entry)
        return [f"{indent}    {line}" if line else "" for line in body.lines]
