"""The guards of a standalone module's gradients: each compiled signature tested inline.

A standalone gradient (:mod:`adcompiler.aot.standalone`) tests its arguments against each compiled
signature or pattern with cheap checks and calls the matching body directly; only a call no guard
takes goes to ``_dispatch`` (:mod:`adcompiler.runtime.dispatch`), which classifies the arguments
fully and raises the TypeError naming what was compiled and what was given::

    # (W: float64[d1, d2], b: float64[d2], x: float64[d3, d1])
    if (type(W) is np.ndarray and W.dtype is _FLOAT64 and W.ndim == 2
            and type(b) is np.ndarray and b.dtype is _FLOAT64 and b.ndim == 1 ...):
        d1, d2 = W.shape
        d3, x_1 = x.shape
        if d1 >= 2 and d2 >= 2 and len(b) == d2 and d3 >= 2 and x_1 == d1:
            return _grad_bias_1(W, b, x)
    return _dispatch(_GRAD_BIAS, (W, b, x))

Invariant: a guard takes only calls that ``_dispatch`` sends to the same body. It tests types and
dtypes by identity (NumPy keeps one object per built-in dtype), ranks, fixed sizes, each size
symbol at least its own least size (``x[:3]`` in the function: x's at least 3), a multiple of
the constant the function divides it by (``D // 4``: ``d1 % 4 == 0``) and the same wherever it
appears, Python floats and static values; it may be stricter than ``_dispatch`` (a
NumPy scalar, a list, a subclass or an equal but distinct dtype takes the slow path, which
accepts it), never looser. Exact signatures are tested before patterns, each in the table's
order, as ``_dispatch`` tries them. Each array's shape is read once (``.shape`` builds a tuple,
~80 ns): unpacked into the symbols, or ``len(b)`` for a vector.
"""

from __future__ import annotations

from ..runtime.dispatch import _describe

WIDTH = 96

# Static values written as ``type(k) is int and k == 3`` (what ``_signature`` keys by type name)
_STATIC_TYPES = ("int", "str", "bytes", "tuple", "complex")


def dtype_constant(name: str) -> str:
    """The module-level name the guards compare an array's dtype with: ``_FLOAT64``."""
    return f"_{name.upper()}"


def is_pattern(signature) -> bool:
    return any(s[0] == "array" and any(isinstance(d, str) for d in s[2]) for s in signature)


def least_text(symbols, least, multiples=None) -> str:
    """``d1: any size of at least 3; d2, d3: any sizes of at least 2; d4: any multiple of 4 of
    at least 8`` (``least``: ``{symbol: smallest size}``, 2 for a symbol it leaves out;
    ``multiples``: ``{symbol: (k, why)}``)."""
    by = {}
    for symbol in symbols:
        k = (multiples or {}).get(symbol, (1,))[0]
        by.setdefault((least.get(symbol, 2), k), []).append(symbol)
    return "; ".join(f"{', '.join(names)}: any "
                     f"{'size' if k == 1 else f'multiple of {k}'}{'s' * (len(names) > 1)} "
                     f"of at least {m}" for (m, k), names in by.items())


def render(params, entries, least, device, returns, fallback, taken=(), multiples=None) -> tuple:
    """``(lines, dtypes)``: the dispatcher's body (the guards of a gradient's signatures, one
    block each, then the ``fallback`` call) and the dtype names the guards compare with.
    ``entries`` is ``[(signature, body name)]`` in the table's order, ``least`` the smallest
    size of every symbol, or one ``{symbol: size}`` per entry (2 for a symbol it leaves out),
    ``returns(call)`` gives the lines returning a body's result, ``taken`` the names the
    guards' locals must not shadow (besides the parameters: the globals the dispatcher reads),
    ``multiples`` one ``{symbol: k}`` per entry for the sizes that must be multiples of k."""
    rows = list(zip(entries, least if isinstance(least, (list, tuple)) else
                    [least] * len(entries), multiples or [{}] * len(entries)))
    ordered = [r for r in rows if not is_pattern(r[0][0])] + \
        [r for r in rows if is_pattern(r[0][0])]
    lines, dtypes = [], []
    for (signature, body), low, by in ordered:
        guard = _Guard(params, signature, low, device, set(taken) | {body}, by)
        if guard.refused:
            continue   # a static value no guard can write: the slow path serves it
        dtypes += [d for d in guard.dtypes if d not in dtypes]
        lines += guard.lines(f"{body}({', '.join(params)})", returns)
    return lines + ["    " + line for line in returns(fallback)], dtypes


class _Guard:
    """The tests of one signature: ``outer`` on types, dtypes and ranks, then the size reads
    (``binds``) and the ``inner`` tests on sizes."""

    def __init__(self, params, signature, least, device, taken, multiples=None):
        self.params, self.signature, self.multiples = params, signature, multiples or {}
        self.least, self.device, self.taken = least, device, taken | set(params)
        self.outer, self.binds, self.inner, self.dtypes = [], [], [], []
        self.symbols = {}   # size symbol -> the local holding it
        self.refused = False
        for param, entry in zip(params, signature):
            tests = self._argument(param, entry)
            if tests is None:
                self.refused = True
                return
            self.outer.append(tests)

    def _argument(self, p, entry):
        if entry[0] == "float":
            return [f"type({p}) is float"]
        if entry[0] == "static":
            return _static(p, entry[1], entry[2])
        dtype, dims = entry[1], entry[2]
        if not dtype.isalnum():
            return None
        self.dtypes.append(dtype)
        # for GPU code, NumPy data never reaches cp.ndarray: _dispatch names the mistake first
        kind = f"type({p}) is not np.ndarray and type({p}) is cp.ndarray" if self.device \
            else f"type({p}) is np.ndarray"
        if self.device == "dask":   # Dask code takes NumPy and Dask arrays
            kind = f"(type({p}) is np.ndarray or type({p}) is da.Array)"
        tests = [kind, f"{p}.dtype is {dtype_constant(dtype)}"]
        if all(isinstance(d, int) for d in dims):
            return tests + [f"{p}.shape == {tuple(dims)!r}"]
        self._sizes(p, dims)
        return tests + [f"{p}.ndim == {len(dims)}"]

    def _sizes(self, p, dims):
        """Read ``p``'s sizes once; each symbol's first size is at least its least size, the
        others equal it, and fixed sizes equal their value."""
        if len(dims) == 1:
            self._size(dims[0], f"len({p})", None)
            return
        targets = [self._size(d, None, f"{p}_{axis}") for axis, d in enumerate(dims)]
        self.binds.append(f"{', '.join(targets)} = {p}.shape")

    def _size(self, want, read, temporary):
        """The local a size is read into (``read``: an expression to test directly instead)."""
        if isinstance(want, str) and want not in self.symbols:
            local = self.symbols[want] = self._local(want)
            if read is not None:
                self.binds.append(f"{local} = {read}")
            low = self.least if isinstance(self.least, int) else self.least.get(want, 2)
            self.inner.append(f"{local} >= {low}")
            if self.multiples.get(want, 1) > 1:
                self.inner.append(f"{local} % {self.multiples[want]} == 0")
            return local
        expected = self.symbols[want] if isinstance(want, str) else repr(want)
        local = read if read is not None else self._local(temporary)
        self.inner.append(f"{local} == {expected}")
        return local

    def _local(self, name):
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name

    def lines(self, call, returns) -> list:
        pieces = [_describe([p], [s])[1:-1] + "," for p, s in zip(self.params, self.signature)]
        text = _pack(pieces, " ", WIDTH - 12)
        text[-1] = text[-1][:-1]
        out = [f"    # ({text[0]}"] + [f"    #     {t}" for t in text[1:]]
        out[-1] += ")"
        out += _if(self.outer, "    ")
        indent = "        "
        if self.inner:
            out += [indent + b for b in self.binds] + _if([[t] for t in self.inner], indent)
            indent += "    "
        return out + [indent + line for line in returns(call)]


def _static(p, kind, value):
    if value is None or isinstance(value, bool):
        return [f"{p} is {value!r}"]
    if kind in _STATIC_TYPES and type(value).__name__ == kind:
        return [f"type({p}) is {kind}", f"{p} == {value!r}"]
    return None


def _pack(texts, separator, width) -> list:
    """The texts joined by ``separator`` into lines of at most ``width`` characters where they
    fit; a line breaks only between texts (the separator's spaces dropped there)."""
    lines = [texts[0]]
    for text in texts[1:]:
        if len(lines[-1]) + len(separator) + len(text) > width:
            lines.append(text)
        else:
            lines[-1] += separator + text
    return lines


def _if(groups, indent) -> list:
    """``if a and b:``, wrapped at ``WIDTH`` between the groups of tests (one per argument)."""
    texts = []
    for group in groups:   # a group too long for a line is split into its tests
        text = " and ".join(group)
        texts += group if len(indent) + len(text) + 14 > WIDTH else [text]
    one = " and ".join(texts) or "True"
    if len(indent) + len(one) + 4 <= WIDTH:
        return [f"{indent}if {one}:"]
    lines = _pack(texts, " and ", WIDTH - len(indent) - 14)
    lines[1:] = ["and " + line for line in lines[1:]]
    inner = indent + "        "
    return [f"{indent}if ({lines[0]}"] + [inner + ln for ln in lines[1:-1]] + \
        [f"{inner}{lines[-1]}):"]
