"""CompileError: the one error users see from the compiler, located in their own file.

Invariant: ``str(err)`` is ``path:line:col: error: message``, then the offending line, a caret
under the construct, and (when there is one) a hint saying what to write instead.
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from typing import Optional


@dataclass
class Location:
    filename: str
    lineno: int
    col: int            # 0-based, in characters (the ast module counts UTF-8 bytes)
    line: str           # the source line, without its newline
    end_col: Optional[int] = None


# What computing raises: NumPy's complaints (ValueError, TypeError, IndexError, AxisError,
# LinAlgError), arithmetic, a depth or memory limit. While compiling, one of these is the user's
# code meeting NumPy, and is located at their line; anything else (a TimeoutError or whatever a
# caller's signal handler raises, KeyboardInterrupt) is not the code's doing and passes through.
COMPUTING_ERRORS = (ArithmeticError, LookupError, TypeError, ValueError, AttributeError,
                    RuntimeError, MemoryError, AssertionError)


class CompileError(Exception):
    """Raised for anything the compiler cannot (or must not) compile; points at the user's code.

    ``str(error)`` is ``path:line:col: error: message``, then the offending line with a caret
    under the construct, then ``hint:`` and what to write instead. ``.message``, ``.hint``,
    ``.filename``, ``.lineno`` and ``.location`` hold the parts. Compiling never raises from
    inside the compiler: the traceback ends at the user's call (set ``ADCOMPILER_TRACEBACK=1``
    to keep the compiler's frames when debugging adcompiler itself).

        >>> import numpy as np
        >>> import adcompiler as ad
        >>> def loss(x):
        ...     return np.sum(np.tanhh(x))
        >>> try:
        ...     ad.grad(loss)(np.ones(2))
        ... except ad.CompileError as err:
        ...     print(err.message, "|", err.hint)
        a `module` object has no attribute `tanhh` | did you mean `np.tanh`?
    """

    def __init__(self, message: str, location: Optional[Location] = None, hint: str = ""):
        self.message = message
        self.location = location
        self.hint = hint
        super().__init__(self.render())

    @property
    def filename(self):
        return self.location.filename if self.location else None

    @property
    def lineno(self):
        return self.location.lineno if self.location else None

    def render(self) -> str:
        loc = self.location
        if loc is None:
            text = f"error: {self.message}"
        else:
            text = f"{loc.filename}:{loc.lineno}:{loc.col + 1}: error: {self.message}"
            text += _excerpt(loc)
        if self.hint:
            text += f"\nhint: {self.hint}"
        return text


class AssertionFailed(CompileError, AssertionError):
    """An ``assert`` on shapes or static arguments that fails while compiling for a call: located
    as any CompileError, and caught by ``except AssertionError`` as the plain function's is."""


class RaisedByUser(CompileError):
    """A ``raise`` the compiler reached while compiling for a call (its condition known then:
    shapes, static arguments): located as any CompileError, and raised from the public call as
    the user's own exception, ``exception`` (see :func:`as_user_error`)."""

    def __init__(self, exception: BaseException, location: Optional[Location] = None):
        self.exception = exception
        super().__init__(f"raises {type(exception).__name__}: {exception}", location,
                         "it raises for every call with these shapes, dtypes and static "
                         "arguments")


class ArgumentError(ValueError):
    """A call's arguments do not fit what the function computes (a vjp's cotangent shaped
    unlike the result): the mistake is in the call, so it has no location in the source."""


def as_user_error(exc: BaseException) -> BaseException:
    """``exc`` (a CompileError or an ArgumentError) ready to be raised again from the public
    call: its traceback through the compiler dropped, and the exception it was raised from or
    while handling (NumPy's shape error, ``inspect`` finding no source) not shown. ``ADCOMPILER_TRACEBACK=1`` keeps
    both, for debugging adcompiler itself. A :class:`RaisedByUser` gives the user's own
    exception, with a note saying where it was raised."""
    if isinstance(exc, RaisedByUser):
        exc = _user_exception(exc)
    if os.environ.get("ADCOMPILER_TRACEBACK", "").strip() not in ("", "0"):
        return exc
    exc.__traceback__ = None
    exc.__cause__ = None
    exc.__suppress_context__ = True
    return exc


def _user_exception(raised: RaisedByUser) -> BaseException:
    exc, loc = raised.exception, raised.location
    if loc is not None:
        note = f"(raised while compiling, at {loc.filename}:{loc.lineno})"
        if note not in getattr(exc, "__notes__", ()):
            exc.add_note(note)
    return exc


def _excerpt(loc: Location) -> str:
    """The offending line, unindented, and a caret line under the construct."""
    stripped = loc.line.rstrip()
    indent = len(stripped) - len(stripped.lstrip())
    end = loc.end_col if loc.end_col and loc.end_col > loc.col else loc.col + 1
    end = min(end, len(stripped)) if len(stripped) > loc.col else loc.col + 1
    start = max(loc.col, indent)
    carets = "^" * max(_width(stripped[start:end]), 1)
    return f"\n    {stripped.lstrip()}\n    {_blank(stripped[indent:start])}{carets}"


def _blank(text: str) -> str:
    """Blanks as wide as ``text`` on a terminal: its tabs kept, wide characters doubled."""
    return "".join(c if c == "\t" else " " * _width(c) for c in text)


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
