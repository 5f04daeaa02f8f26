"""The recording modes: grad mode (``no_grad``, ``enable_grad``, ``set_grad_enabled``), NumPy's
in-place semantics (``numpy_inplace``, for ``dynamic_grad``) and the forward-AD level.

Invariant: all are context-local (``contextvars``), so threads and tasks do not see each other's
modes; every context manager restores exactly the state it found.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools

_GRAD_ENABLED = contextvars.ContextVar("adcompiler_tape_grad_enabled", default=True)
_DUAL_LEVEL = contextvars.ContextVar("adcompiler_tape_dual_level", default=None)
_FORWARD_ENABLED = contextvars.ContextVar("adcompiler_tape_forward_enabled", default=True)
_NUMPY_INPLACE = contextvars.ContextVar("adcompiler_tape_preserve_saved", default=False)


def is_grad_enabled() -> bool:
    return _GRAD_ENABLED.get()


class _GradMode:
    """A context manager (and decorator) that sets grad mode inside and restores it after."""

    mode = True

    def __init__(self):
        self._tokens = []

    def __enter__(self):
        self._tokens.append(_GRAD_ENABLED.set(self.mode))
        return self

    def __exit__(self, *exc):
        _GRAD_ENABLED.reset(self._tokens.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper


class _FixedMode(_GradMode):
    """A mode that takes no argument, so it also decorates bare: ``@no_grad`` as ``@no_grad()``
    (as in PyTorch 2)."""

    def __new__(cls, fn=None):
        if fn is None:
            return super().__new__(cls)
        if not callable(fn):
            raise TypeError(f"{cls.__name__}() takes no arguments, got {type(fn).__name__}: "
                            f"write `with tape.{cls.__name__}():`, or decorate a function with "
                            f"@tape.{cls.__name__} or @tape.{cls.__name__}()")
        return cls()(fn)


class no_grad(_FixedMode):
    """Operations inside record nothing: results do not require grad (as ``torch.no_grad``)."""

    mode = False


class enable_grad(_FixedMode):
    """Recording on inside, even within ``no_grad`` (as ``torch.enable_grad``)."""

    mode = True


class set_grad_enabled(_GradMode):
    """``set_grad_enabled(False)`` switches recording off at once (as a plain call); as a context
    manager or decorator it restores the previous mode afterwards."""

    def __init__(self, mode: bool):
        super().__init__()
        self.mode = bool(mode)
        self._previous = _GRAD_ENABLED.get()
        _GRAD_ENABLED.set(self.mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _GRAD_ENABLED.set(self._previous)
        return False

    def __call__(self, fn):
        _GRAD_ENABLED.set(self._previous)   # as a decorator it only applies inside fn

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(self.mode):
                return fn(*args, **kwargs)
        return wrapper


# ---- in-place updates -----------------------------------------------------------------------
def is_numpy_inplace() -> bool:
    return _NUMPY_INPLACE.get()


@contextlib.contextmanager
def numpy_inplace():
    """NumPy's in-place semantics instead of PyTorch's, while recording inside: a value saved for
    the backward pass is copied just before an in-place update overwrites it (so the update never
    invalidates the graph), and ``s op= v`` on a 0-d tensor that ``v`` broadcasts up rebinds ``s``
    as it would rebind a NumPy scalar. ``dynamic_grad`` records user functions this way."""
    token = _NUMPY_INPLACE.set(True)
    try:
        yield
    finally:
        _NUMPY_INPLACE.reset(token)


# ---- forward mode ---------------------------------------------------------------------------
def dual_level_token():
    """The token of the innermost active dual level; None outside ``dual_level()`` and while
    tangents are being computed (a tangent rule's own operations carry no tangent)."""
    return _DUAL_LEVEL.get() if _FORWARD_ENABLED.get() else None
