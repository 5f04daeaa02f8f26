"""Test helpers: central finite differences in float64, a gradient check built on them, and
importing generated test sources from files (the compiler reads a function's source file)."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import signal
import importlib.util
import inspect
import os
from pathlib import Path

import numpy as np
import pytest

import adcompiler

EPS = 1e-6
LONG = os.environ.get("ADCOMPILER_LONG_TESTS") == "1"


def examples(long: int, default: int) -> int:
    """How many programs a random-program test draws: ``default`` in the suite's run (kept
    well under 15 minutes on two cores), ``long`` with ``ADCOMPILER_LONG_TESTS=1`` (the long
    run, docs/testing.md). Each run draws new programs where the test is not derandomized."""
    return long if LONG else default


def _call(f, args, argnum, value):
    """``f(*args)`` with ``args[argnum]`` replaced; every argument is copied (f may mutate)."""
    args = [copy.deepcopy(a) for a in args]
    args[argnum] = value
    return float(np.sum(f(*args)))


def numerical_grad(f, args, argnum, eps=EPS):
    """d f(*args) / d args[argnum] by central differences, computed in float64."""
    x = args[argnum]
    if isinstance(x, float):
        return (_call(f, args, argnum, x + eps) - _call(f, args, argnum, x - eps)) / (2 * eps)
    x = np.asarray(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (_call(f, args, argnum, up) - _call(f, args, argnum, down)) / (2 * eps)
    return grad


def directional_difference(f, args, tangents, eps=EPS):
    """``f``'s derivative along ``tangents`` (a jvp) by central differences, in float64."""
    up = f(*[a + eps * t for a, t in zip(args, tangents)])
    down = f(*[a - eps * t for a, t in zip(args, tangents)])
    return (np.asarray(up) - np.asarray(down)) / (2 * eps)


def positions(f, wrt):
    params = list(inspect.signature(f).parameters)
    return [params.index(w) if isinstance(w, str) else w for w in wrt]


def as_float64(args):
    return [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
            for a in args]


def assert_matches_numerical(f, args, wrt, grads, rtol=1e-6, atol=1e-7):
    """Each gradient has its input's shape, dtype and Python-ness, and the numerical value."""
    for argnum, g in zip(positions(f, wrt), grads):
        x = args[argnum]
        expected = numerical_grad(f, as_float64(args), argnum)
        if isinstance(x, float):
            assert type(g) is float, f"gradient of a Python float is {type(g).__name__}"
        else:
            assert isinstance(g, np.ndarray), f"gradient is {type(g).__name__}, not an array"
            assert g.shape == x.shape, f"gradient shape {g.shape} != input shape {x.shape}"
            assert g.dtype == x.dtype, f"gradient dtype {g.dtype} != input dtype {x.dtype}"
        np.testing.assert_allclose(g, expected, rtol=rtol, atol=atol)


def check_grads(f, *args, wrt=(0,), rtol=1e-6, atol=1e-7):
    """Compile ``grad(f, wrt=wrt)`` and compare it to finite differences; returns the gradients."""
    wrt = tuple(wrt)
    grads = adcompiler.grad(f, wrt=wrt)(*[copy.deepcopy(a) for a in args])
    assert isinstance(grads, tuple) and len(grads) == len(wrt)
    assert_matches_numerical(f, args, wrt, grads, rtol, atol)
    return grads


def assert_close_normwise(got, want, rtol):
    """Per array of ``got`` and ``want`` (tuples or single arrays): the same shape and dtype,
    and the largest error at most ``rtol`` times the largest value."""
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        assert np.max(np.abs(g - w), initial=0.0) <= rtol * max(np.max(np.abs(w)), 1e-300)


def import_source(source: str, directory, prefix: str = "m"):
    """Write ``source`` to a file in ``directory`` named by its hash, and import it as a module."""
    name = f"{prefix}_{hashlib.sha1(source.encode()).hexdigest()[:16]}"
    path = Path(directory) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_located(err, f, offset, construct, hint=""):
    """``err`` (a CompileError) points at ``construct`` on line ``offset`` of ``f``'s
    definition, in ``f``'s file: its header, the line shown, a caret under the construct, and a
    hint (containing ``hint``) last."""
    import linecache
    import os
    path = f.__code__.co_filename
    lineno = f.__code__.co_firstlineno + offset
    line = linecache.getline(path, lineno).rstrip("\n")
    assert os.path.samefile(err.filename, path) and err.lineno == lineno, str(err)
    header, shown, caret, *rest = str(err).split("\n")
    col = line.index(construct)
    assert header.startswith(f"{err.filename}:{lineno}:{col + 1}: error: "), header
    assert caret.strip() == "^" * len(construct), f"\n{shown}\n{caret}"
    assert rest and rest[-1].startswith("hint: ") and hint in rest[-1], str(err)


def tape_gradients(f, args) -> list:
    """``tape.grad`` of ``f`` with respect to every argument, as NumPy arrays."""
    from adcompiler import tape
    leaves = [tape.tensor(a, requires_grad=True) for a in args]
    return [g.numpy() for g in tape.grad(f(*leaves), leaves)]


def assert_tape_matches_compiled(f, args, value_rtol=1e-12, rtol=1e-12, atol=1e-13):
    """``f`` run on tape tensors gives its NumPy value, and ``tape.grad`` the compiled
    gradient with respect to every argument."""
    from adcompiler import tape
    leaves = [tape.tensor(a, requires_grad=True) for a in args]
    out = f(*leaves)
    assert float(out.detach().numpy()) == pytest.approx(float(f(*args)), rel=value_rtol)
    grads = tape.grad(out, leaves)
    compiled = adcompiler.grad(f, wrt=tuple(range(len(args))))(*args)
    for got, want in zip(grads, compiled):
        np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol)


def assert_jvp_matches_differences(f, args, tangent, value_rtol=1e-12, rtol=1e-6, atol=1e-8):
    """``jvp(f, wrt=0)`` gives ``f``'s value and the directional difference along ``tangent``
    of its first argument."""
    value, dot = adcompiler.jvp(f, wrt=0)(*args, tangents=tangent)
    assert value == pytest.approx(f(*args), rel=value_rtol)
    want = directional_difference(lambda a: f(a, *args[1:]), [args[0]], [tangent])
    assert dot == pytest.approx(float(want), rel=rtol, abs=atol)
    return value


@contextlib.contextmanager
def raising_after(seconds, error):
    """Raise ``error`` in the block if it runs past ``seconds`` (where SIGALRM exists): a hang
    of generated code (a loop that never ends) fails instead of stopping the run."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def fail(*_):
        raise error
    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
