"""An exception that is not the user's code meeting NumPy (a caller's time-out, whatever a
signal handler raises, KeyboardInterrupt) passes through compiling unchanged, never turned into
a located CompileError; NumPy's own complaints still are located at the user's line."""

import ast

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.frontend.expressions import table


class CallerTimedOut(Exception):
    """What a caller's alarm handler might raise: an Exception, but not a computing one."""


def loss(x):
    return np.sum(x * x)


def _interrupting(monkeypatch, exception):
    real = table.EXPRESSIONS[ast.BinOp]

    def handler(lowering, node):
        raise exception

    monkeypatch.setitem(table.EXPRESSIONS, ast.BinOp, handler)
    return real


@pytest.mark.parametrize("exception", [TimeoutError("caller's deadline"),
                                       CallerTimedOut("alarm"), KeyboardInterrupt()])
def test_interruptions_pass_through(monkeypatch, exception):
    _interrupting(monkeypatch, exception)
    with pytest.raises(type(exception)) as info:
        ad.grad(loss)(np.arange(3.0))
    assert info.value is exception
    assert not isinstance(info.value, ad.CompileError)


def test_numpy_complaints_are_still_located(monkeypatch):
    _interrupting(monkeypatch, ValueError("operands could not be broadcast together"))
    with pytest.raises(ad.CompileError) as info:
        ad.grad(loss)(np.arange(3.0))
    assert "ValueError: operands could not be broadcast together" in str(info.value)
    assert info.value.lineno == loss.__code__.co_firstlineno + 1


def test_after_an_interruption_the_next_call_compiles(monkeypatch):
    _interrupting(monkeypatch, TimeoutError("once"))
    with pytest.raises(TimeoutError):
        ad.grad(loss)(np.arange(3.0))
    monkeypatch.undo()
    np.testing.assert_allclose(ad.grad(loss)(np.arange(3.0)), 2 * np.arange(3.0))
