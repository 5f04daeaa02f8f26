"""The C of our CUDA kernel bodies, read and run with NumPy: what tests/fake_cupy.py's
``ElementwiseKernel`` and ``ReductionKernel`` execute instead of compiling.

It reads the C text itself (not the tree it was printed from, as tests/cupy_helpers.py does), so
a printing mistake shows up here. The subset is what adcompiler.backends.cuda_kernels prints:
``const T name = expr;`` lines then ``out = expr;`` (a reduction's map and post-map
expressions too); literals (``1.0``, ``0.01f``, ``2``, ``true``); parameters and locals;
unary ``- !``; binary ``* / + - < <= > >= == != && ||``; ``c ? a : b``; casts ``(double) x``;
calls to CUDA's math functions (``floor``, ``fmod``, ``copysign`` among them), ``fma``,
``isnan``, ``pow``. Types follow C++: every operation computes in the usual arithmetic
conversion of its operands (``float * double`` is double, ``float * float`` float, ``int``
promotes), math functions in their argument's floating type, and a value converts to the
declared type where it is stored. Anything else raises ``SyntaxError``, so an unexpected
construct in a kernel fails the test instead of passing.
"""

from __future__ import annotations

import re

import numpy as np

# C type names -> NumPy dtypes, and dtype names (kernel parameter lists) -> C types.
C_DTYPES = {"double": "float64", "float": "float32", "long long": "int64", "int": "int32",
            "short": "int16", "signed char": "int8", "unsigned long long": "uint64",
            "unsigned int": "uint32", "unsigned short": "uint16", "unsigned char": "uint8",
            "bool": "bool"}
_RANK = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
         "float32", "float64"]
_MATH = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt,
         "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "sinh": np.sinh,
         "cosh": np.cosh, "atan": np.arctan, "asin": np.arcsin, "acos": np.arccos,
         "fabs": np.abs, "floor": np.floor, "pow": np.power, "fmod": np.fmod,
         "copysign": np.copysign, "asinh": np.arcsinh, "acosh": np.arccosh,
         "atanh": np.arctanh, "cbrt": np.cbrt, "log2": np.log2, "log10": np.log10,
         "exp2": np.exp2, "hypot": np.hypot, "atan2": np.arctan2, "ceil": np.ceil,
         "rint": np.rint, "trunc": np.trunc,
         # CUDA's erf, erfc, lgamma and tgamma (scipy.special's rows), SciPy's values
         **{c: (lambda x, _n=n: getattr(__import__("scipy.special").special, _n)(x))
            for c, n in (("erf", "erf"), ("erfc", "erfc"), ("lgamma", "gammaln"),
                         ("tgamma", "gamma"))}}
_TWO_ARGUMENTS = {"pow", "fmod", "copysign", "hypot", "atan2"}
_BINARY = {"*": np.multiply, "/": np.divide, "+": np.add, "-": np.subtract}
_COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
            "==": np.equal, "!=": np.not_equal}
_TOKEN = re.compile(r"\s*(?:(\d+\.\d*(?:e[+-]?\d+)?f?|\d+e[+-]?\d+f?|\d+)|([A-Za-z_]\w*)|"
                    r"(&&|\|\||<=|>=|==|!=|[-+*/<>!?:;=(),]))")
_TYPE_WORDS = {"double", "float", "long", "int", "short", "signed", "unsigned", "char", "bool"}


def tokens(text: str) -> list:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise SyntaxError(f"kernel C: cannot read {text[pos:pos + 20]!r}")
        out.append(m.group(m.lastindex))
        pos = m.end()
    return out


class Value:
    """A C value: a NumPy array (or scalar) and the dtype C computes it in."""
    __slots__ = ("data", "dtype")

    def __init__(self, data, dtype):
        self.dtype = dtype
        self.data = np.asarray(data).astype(dtype, copy=False)


def convert(v: Value, dtype: str) -> Value:
    return v if v.dtype == dtype else Value(v.data, dtype)


def _promote(*dtypes) -> str:
    """C's usual arithmetic conversions (integer promotion first: nothing below ``int``)."""
    best = max(dtypes, key=_RANK.index)
    return best if _RANK.index(best) >= _RANK.index("int32") else "int32"


def _float_of(dtype) -> str:
    return dtype if dtype in ("float32", "float64") else "float64"


class Program:
    """Statements of one kernel body, run on named inputs."""

    def __init__(self, text: str):
        self.toks, self.i = tokens(text), 0
        self.env: dict = {}

    # ---- statements ----------------------------------------------------------------------------
    def run(self, env: dict) -> dict:
        """Run every statement; ``env`` maps names to Values (parameters, ``out`` if typed)."""
        self.env, self.i = dict(env), 0
        while self.i < len(self.toks):
            declared = None
            if self.peek() == "const":
                self.i += 1
                declared = self.type_name()
            name = self.take_name()
            self.expect("=")
            value = self.expr()
            self.expect(";")
            dtype = declared or (self.env[name].dtype if name in self.env else value.dtype)
            self.env[name] = convert(value, dtype)
        return self.env

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def expect(self, tok):
        if self.peek() != tok:
            raise SyntaxError(f"kernel C: expected {tok!r}, found {self.peek()!r} at token "
                              f"{self.i} of {' '.join(self.toks)}")
        self.i += 1

    def take_name(self) -> str:
        tok = self.peek()
        if tok is None or not re.fullmatch(r"[A-Za-z_]\w*", tok):
            raise SyntaxError(f"kernel C: expected a name, found {tok!r}")
        self.i += 1
        return tok

    def type_name(self) -> str:
        words = []
        while self.peek() in _TYPE_WORDS:
            words.append(self.toks[self.i])
            self.i += 1
        if " ".join(words) not in C_DTYPES:
            raise SyntaxError(f"kernel C: unknown type {' '.join(words)!r}")
        return C_DTYPES[" ".join(words)]

    # ---- expressions, by C precedence ----------------------------------------------------------
    def expr(self) -> Value:
        cond = self.binary(0)
        if self.peek() != "?":
            return cond
        self.i += 1
        a = self.expr()
        self.expect(":")
        b = self.expr()
        common = _promote(a.dtype, b.dtype) if a.dtype != b.dtype else a.dtype
        return Value(np.where(convert(cond, "bool").data, convert(a, common).data,
                              convert(b, common).data), common)

    _LEVELS = [("||",), ("&&",), ("==", "!="), ("<", "<=", ">", ">="), ("+", "-"), ("*", "/")]

    def binary(self, level) -> Value:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self._LEVELS[level]:
            op = self.toks[self.i]
            self.i += 1
            left = _apply(op, left, self.binary(level + 1))
        return left

    def unary(self) -> Value:
        tok = self.peek()
        if tok == "-":
            self.i += 1
            v = self.unary()
            v = convert(v, _promote(v.dtype))
            return Value(np.negative(v.data), v.dtype)
        if tok == "!":
            self.i += 1
            return Value(np.logical_not(convert(self.unary(), "bool").data), "bool")
        if tok == "(" and self.toks[self.i + 1] in _TYPE_WORDS:
            self.i += 1
            dtype = self.type_name()
            self.expect(")")
            return convert(self.unary(), dtype)
        return self.primary()

    def primary(self) -> Value:
        tok = self.peek()
        if tok == "(":
            self.i += 1
            v = self.expr()
            self.expect(")")
            return v
        if tok is not None and tok[0].isdigit():
            self.i += 1
            return _literal(tok)
        name = self.take_name()
        if name in ("true", "false"):
            return Value(name == "true", "bool")
        if self.peek() == "(":
            return self.call(name)
        if name not in self.env:
            raise SyntaxError(f"kernel C: {name!r} is not defined")
        return self.env[name]

    def call(self, fn) -> Value:
        self.expect("(")
        args = [self.expr()]
        while self.peek() == ",":
            self.i += 1
            args.append(self.expr())
        self.expect(")")
        if fn == "isnan" and len(args) == 1:
            return Value(np.isnan(args[0].data), "bool")
        dtype = _float_of(_promote(*[a.dtype for a in args]))
        data = [convert(a, dtype).data for a in args]
        if fn == "fma" and len(args) == 3:
            return Value(data[0] * data[1] + data[2], dtype)   # rounded twice, not once
        if fn in _MATH and len(args) == (2 if fn in _TWO_ARGUMENTS else 1):
            return Value(_MATH[fn](*data), dtype)
        raise SyntaxError(f"kernel C: unknown function {fn}/{len(args)}")


def _literal(tok: str) -> Value:
    if tok.endswith("f"):
        return Value(np.float32(tok[:-1]), "float32")
    if "." in tok or "e" in tok:
        return Value(float(tok), "float64")
    return Value(int(tok), "int32" if int(tok) < 2 ** 31 else "int64")


def _apply(op, a: Value, b: Value) -> Value:
    if op in ("&&", "||"):
        fn = np.logical_and if op == "&&" else np.logical_or
        return Value(fn(convert(a, "bool").data, convert(b, "bool").data), "bool")
    common = _promote(a.dtype, b.dtype)
    x, y = convert(a, common).data, convert(b, common).data
    if op in _COMPARE:
        return Value(_COMPARE[op](x, y), "bool")
    if op == "/" and common not in ("float32", "float64"):
        raise SyntaxError("kernel C: integer division is not in the subset we print")
    return Value(_BINARY[op](x, y), common)


def parse_params(text: str) -> list:
    """``"float64 x0, float32 x1"`` -> ``[("x0", "float64"), ("x1", "float32")]``."""
    out = []
    for part in text.split(","):
        words = part.split()
        if len(words) != 2:
            raise SyntaxError(f"kernel parameter {part!r}: expected 'dtype name'")
        out.append((words[1], np.dtype(words[0]).name))
    return out


def run_body(operation: str, inputs: dict, out_name: str, out_dtype: str, shape):
    """Run ``operation`` with ``inputs`` (name -> Value) and return ``out``'s array."""
    env = dict(inputs)
    env[out_name] = Value(np.zeros(shape, dtype=out_dtype), out_dtype)
    with np.errstate(all="ignore"):
        result = Program(operation).run(env)[out_name]
    return np.broadcast_to(result.data, shape).astype(out_dtype)
