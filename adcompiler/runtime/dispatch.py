"""The run-time helpers of standalone modules: ``_dispatch`` runs the body compiled for a call.

It is the slow path: each gradient first tests its arguments against each compiled signature with
generated guards (:mod:`adcompiler.aot.guards`), and calls ``_dispatch`` only when none
takes them, to serve what the guards are stricter about (a NumPy scalar for a float, a list, an
equal dtype that is not NumPy's own object) or to raise the TypeError naming what was compiled.

Invariant: :mod:`adcompiler.aot.standalone` copies these definitions verbatim (``inspect.getsource``)
into every module ``adcompiler compile`` writes, so they use only NumPy and builtins and read no
global but ``np`` and ``_HINT``, which each standalone module defines. A signature is what the
compiler keys a specialisation on (:mod:`adcompiler.api.signature`): an array's dtype and shape, a
Python float, or the value of a static argument. A shape-polymorphic body's key is a pattern
(:mod:`adcompiler.aot.polymorphic`): a size named by a symbol (``"d1"``) fits any size of at least
that symbol's least size (2 unless the pattern's ``least`` says more: ``{"d1": 3}``), a multiple
of k where the pattern's ``multiples`` say so (``{"d1": (4, why)}``: the function divides it by
4), the same symbol the same size; the other sizes (1, 0) must be equal. Exact keys are
looked up first, then patterns in order. A module compiled for CuPy (``device``) refuses NumPy
arrays, and one compiled for NumPy refuses GPU arrays, before running any code.
"""

import numpy as np

_HINT = "to compile it for these inputs, return them from %s() and compile again"


def _signature(value):
    """What the gradients are compiled for: an array's dtype and shape, a Python float, or the
    value of any other (static) argument."""
    if isinstance(value, float):
        return ("float",)
    if isinstance(value, list):
        value = np.asarray(value)
    if isinstance(value, (np.ndarray, np.generic)) or hasattr(value, "__cuda_array_interface__") \
            or hasattr(value, "__dask_graph__"):   # a CuPy array, a Dask array
        return ("array", value.dtype.name, tuple(value.shape))
    return ("static", type(value).__name__, value)


def _as_array(value):
    """A list as the array the body was compiled for (its Python ``*`` would repeat it, ``+``
    concatenate it); anything else as it is (a ragged list too: ``_signature`` refuses it)."""
    if type(value) is not list:
        return value
    try:
        return np.asarray(value)
    except ValueError:
        return value


def _describe(params, signature):
    def one(s):
        if s[0] == "float":
            return "float"
        if s[0] == "array":
            return "%s[%s]" % (s[1], ", ".join(str(d) for d in s[2]))
        return "%s %r" % (s[1], s[2])
    return "(" + ", ".join("%s: %s" % (p, one(s)) for p, s in zip(params, signature)) + ")"


class _Signatures(dict):
    """The compiled bodies of one gradient, by input signature (or pattern of signatures)."""

    def __init__(self, name, params, example, bodies, device=False, least=2, multiples=None):
        dict.__init__(self, bodies)
        self.name, self.params, self.example = name, params, example
        self.device = device  # True: CuPy code, for arrays on the GPU
        # the smallest sizes of the patterns' symbols: one number for all, or per row of the
        # table {symbol: size} (a symbol left out: 2)
        rows = least if isinstance(least, (list, tuple)) else [least] * len(bodies)
        # the symbols standing for multiples of k only, per row: {symbol: (k, why)}
        self.multiples = dict(zip(bodies, multiples or [{}] * len(bodies)))
        self.patterns = [(k, v, m) for (k, v), m in zip(bodies.items(), rows)
                         if any(s[0] == "array" and any(isinstance(d, str) for d in s[2])
                                for s in k)]


def _fits(pattern, signature, least, multiples=None):
    """Whether a call's signature fits a pattern: ``"d1"`` is any size of at least ``least``
    (a number, or ``{symbol: size}``, 2 for a symbol it leaves out), a multiple of k where
    ``multiples`` (``{symbol: (k, why)}``) says so, the same in every place it appears."""
    sizes = {}
    for want, got in zip(pattern, signature):
        if want[0] != "array" or got[0] != "array":
            if want != got:
                return False
        elif want[1] != got[1] or len(want[2]) != len(got[2]):
            return False
        else:
            for w, g in zip(want[2], got[2]):
                if not isinstance(w, str):
                    if w != g:
                        return False
                elif g < (least if isinstance(least, int) else least.get(w, 2)) or \
                        sizes.setdefault(w, g) != g or g % (multiples or {}).get(w, (1,))[0]:
                    return False
    return True


def _least_text(patterns):
    """``a named size is any size of at least 2, d1 of at least 3``: the patterns' least sizes
    (each pattern's in turn where they differ)."""
    texts = []
    for pattern, _, least in patterns:
        symbols = [d for s in pattern if s[0] == "array" for d in s[2] if isinstance(d, str)]
        by = {}
        for d in dict.fromkeys(symbols):
            by.setdefault(least if isinstance(least, int) else least.get(d, 2), []).append(d)
        low = min(by)
        text = "any size of at least %d" % low + "".join(
            ", %s of at least %d" % (", ".join(by[m]), m) for m in sorted(by) if m != low)
        texts.append(text)
    if len(set(texts)) == 1:
        return "a named size is " + texts[0]
    return "a named size is, for the patterns above in turn, " + "; ".join(texts)


def _wrong_array(table, value):
    """An array of the other kind: host data for GPU code, or GPU data for NumPy code."""
    if table.device:
        return isinstance(value, (np.ndarray, np.generic, list)) and not isinstance(value, float)
    return hasattr(value, "__cuda_array_interface__")


def _mismatch(table, signature):
    """Which sizes of a call break the first pattern whose dtypes and ranks it has (else the
    one signature that has them), as NumPy names the shapes it cannot broadcast:
    ``x.shape[1] is 5 but W.shape[0] is 3``, two sizes a pattern names alike, or a size the code
    is compiled for alone; "" where none such."""
    found = []
    for pattern in sorted(table, key=lambda k: not any(isinstance(d, str) for s in k
                                                          if s[0] == "array" for d in s[2])):
        wrong = _sizes_apart(table.params, pattern, signature,
                             table.multiples.get(pattern))
        if wrong and any(isinstance(d, str) for s in pattern if s[0] == "array" for d in s[2]):
            return "%s(): inconsistent sizes: %s\n" % (table.name, "; ".join(wrong))
        if wrong:
            found.append(wrong)
    if len(found) == 1:
        return "%s(): inconsistent sizes: %s\n" % (table.name, "; ".join(found[0]))
    return ""


def _sizes_apart(params, pattern, signature, multiples=None):
    """The sizes of ``signature`` that ``pattern`` (of the same dtypes, ranks and other
    arguments, else None) does not take, each said as :func:`_mismatch` says it; ``multiples``:
    the pattern's ``{symbol: (k, why)}``."""
    seen, wrong = {}, []
    for p, want, got in zip(params, pattern, signature):
        if want[0] != "array" or got[0] != "array" or want[1] != got[1] or \
                len(want[2]) != len(got[2]):
            if want != got:
                return None
            continue
        for axis, (w, g) in enumerate(zip(want[2], got[2])):
            where = "%s.shape[%d]" % (p, axis) if len(want[2]) > 1 else "len(%s)" % p
            if not isinstance(w, str):
                if w != g:
                    wrong.append("%s is %d, but the code is compiled for %d only (%s)" % (
                        where, g, w, "sizes of 0 and 1 are kept: NumPy broadcasts a 1"
                        if w < 2 else "the module's header says why"))
            elif w in seen and seen[w][1] != g:
                wrong.append("%s is %d but %s is %d, and the function needs them equal "
                             "(both are %s)" % (where, g, seen[w][0], seen[w][1], w))
            elif w not in seen and g % (multiples or {}).get(w, (1,))[0]:
                k, why = multiples[w]
                wrong.append("%s is %d, but the function needs a multiple of %d (%s): %s"
                             % (where, g, k, w, why))
                seen[w] = (where, g)
            else:
                seen.setdefault(w, (where, g))
    return wrong


def _dispatch(table, args):
    args = tuple(_as_array(a) for a in args)   # a list is compiled as np.asarray of it
    for p, a in zip(table.params, args):
        if _wrong_array(table, a):
            raise TypeError("%s() runs on the %s, but %s is a %s: pass %s" % (
                table.name, "GPU" if table.device else "CPU", p, type(a).__name__,
                "cupy.asarray(%s)" % p if table.device else "%s.get()" % p))
    signature = tuple(_signature(a) for a in args)
    try:
        body = table.get(signature)
    except TypeError:  # an unhashable argument
        body = None
    for pattern, candidate, least in table.patterns if body is None else ():
        if _fits(pattern, signature, least, table.multiples.get(pattern)):
            body = candidate
            break
    if body is None:
        compiled = "\n".join("  " + _describe(table.params, s) for s in table)
        if table.patterns:
            multiple = "".join(dict.fromkeys(", %s a multiple of %d" % (w, m[0]) for row in
                                             table.multiples.values() for w, m in row.items()))
            compiled += ("\n(%s%s; the same name, the same size)"
                         % (_least_text(table.patterns), multiple))
        raise TypeError("%s%s() was compiled for the inputs\n%s\nbut was given\n  %s\n%s"
                        % (_mismatch(table, signature), table.name, compiled,
                           _describe(table.params, signature), _HINT % table.example))
    return body(*args)


def _tangents(tangents, primals, single):
    """One tangent per wrt parameter, with its parameter's dtype and shape (a float for a
    float), as adcompiler.jvp takes them."""
    tangents = (tangents,) if single else tuple(tangents)
    if len(tangents) != len(primals):
        raise TypeError("takes %d tangents, got %d" % (len(primals), len(tangents)))
    out = []
    for t, x in zip(tangents, primals):
        if isinstance(x, float):
            out.append(float(t))
            continue
        if hasattr(x, "__cuda_array_interface__"):  # GPU code: _dispatch checks t's kind, shape
            out.append(t)
            continue
        t = np.asarray(t, dtype=np.asarray(x).dtype)
        if t.shape != np.shape(x):
            raise ValueError("a tangent has shape %s, its parameter %s" % (t.shape, np.shape(x)))
        out.append(t)
    return tuple(out)


HELPERS = (_signature, _as_array, _describe, _Signatures, _fits, _least_text, _wrong_array,
           _mismatch, _sizes_apart, _dispatch)                              # every module
JVP_HELPERS = (_tangents,)                                              # where a jvp is compiled
