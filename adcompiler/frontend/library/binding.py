"""Binding a call's arguments as NumPy's own signature would, for the call handlers
(:mod:`adcompiler.frontend.calls`, :mod:`adcompiler.frontend.library.creation`): positional and
keyword arguments by parameter name, the arguments that must be known when compiling (an axis,
a shape, a dtype), and :class:`CallError`, which the lowering turns into a located error."""

from __future__ import annotations

import numpy as np

from ...ir import Value


class CallError(Exception):
    """A call the compiler understands but whose arguments it cannot compile."""

    def __init__(self, message, hint=""):
        super().__init__(message)
        self.hint = hint


def call(handler, b, args, kwargs):
    """Run ``handler``; a keyword it did not take is an error, never silently dropped."""
    kwargs = dict(kwargs)
    out = handler(b, list(args), kwargs)
    if kwargs:
        raise CallError(f"got an unsupported keyword argument `{next(iter(kwargs))}=`",
                        "adcompiler takes the arguments that change values (axis=, keepdims=, "
                        "dtype=...), not out=, where= or order=")
    return out


def static(x, what):
    """``x`` must be known when compiling (an axis, a shape): not a traced value."""
    if isinstance(x, (tuple, list)):
        for item in x:
            static(item, what)
    elif isinstance(x, Value):
        raise CallError(f"needs {what} known when compiling, not computed from the inputs",
                        "use a Python constant, or a shape attribute such as x.shape[0]")
    return x


def bind(args, kwargs, names, required=1):
    """``{name: value}`` of positional ``args``, then keywords, by NumPy's parameter ``names``;
    the first ``required`` names must be given."""
    if len(args) > len(names):
        raise CallError(f"takes at most {len(names)} positional arguments here, "
                        f"but {len(args)} were given", SIGNATURE_HINT)
    out = dict(zip(names, args))
    for name in names:
        if name in kwargs:
            if name in out:
                raise CallError(f"got multiple values for argument `{name}`", SIGNATURE_HINT)
            out[name] = kwargs.pop(name)
    missing = [n for n in names[:required] if n not in out]
    if missing:
        raise CallError(f"is missing the required argument `{missing[0]}`", SIGNATURE_HINT)
    return out


SIGNATURE_HINT = "call it as you would call NumPy's function of that name"


def positional(args, n):
    if len(args) != n:
        raise CallError(f"takes {n} positional argument{'s' * (n != 1)} here, "
                        f"but {len(args)} {'was' if len(args) == 1 else 'were'} given",
                        "out= and other extra arguments are not supported")
    return args


def axis_arg(val):
    val = static(val, "`axis=`")
    return tuple(val) if isinstance(val, list) else val


def shape_arg(val):
    val = static(val, "the shape")
    return tuple(val) if isinstance(val, (list, tuple)) else (val,)


def dtype_arg(val):
    return np.dtype(static(val, "the dtype")).name
