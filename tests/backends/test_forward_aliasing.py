"""Arrays that one name copies from another must never share memory with a value later written in
place, in the tangent program as in the primal one.

The tangent of ``u = u_next.copy()`` is ``u_next``'s tangent itself (the IR has value semantics;
the copy's tangent rule returns its input), so in a loop the carried slots ``u_dot`` and
``u_next_dot`` get one next value: from the next iteration on they name one array. The emitter
(backends/inplace.py, ``Sharing._join_shared_slots``) must then write ``u_next_dot[1:] = ...``
on a copy, since ``u_dot`` is read after it. Before that, jvp, hessian and hvp were silently
wrong (a tangent of 0.0 for -5.64), and so were the primal and grad where a pass made two
slots one value (``u = buf * 1.0``, ``u = np.asarray(buf)``). Each test compares values: jvp
against central differences along the tangent, hessians against differences of ``grad``, and
``grad`` against :func:`tests.helpers.numerical_grad`.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import numerical_grad
from tests.cli.test_cli import adcompiler, import_path, write

H = 1e-6


# ---- the programs: module-level, as adcompiler reads their source -----------------------------
def copy_in_loop(u0):  # the user trial's repro
    u = u0.copy()
    u_next = np.zeros(3)
    for it in range(2):
        u_next[1:] = u[1:] + u[:-1]
        u = u_next.copy()
    return np.sum(u ** 2)


def write_after_loop(u0):  # the loop's two results are one array: u_next[0] = ... after it
    u = u0.copy()
    u_next = np.zeros(3)
    for it in range(2):
        u_next[1:] = u[1:] * u[:-1]
        u = u_next.copy()
    u_next[0] = 5.0
    return np.sum(u ** 2) + np.sum(u_next * u0)


def leapfrog(u0):  # a damped wave equation: u_prev = u.copy(); u = u_next.copy()
    n = u0.shape[0]
    u_prev = u0.copy()
    u = u0.copy()
    u_next = np.zeros(n)
    for it in range(6):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u_next[1:-1] = 2.0 * u[1:-1] - 0.9 * u_prev[1:-1] + 0.1 * lap
        u_prev = u.copy()
        u = u_next.copy()
    return np.sum(u ** 2) + np.sum(u_prev * u0)


def while_copy(x):
    u = x.copy()
    w = np.zeros(x.shape[0])
    k = 0
    while np.max(np.abs(u)) > 0.1 and k < 20:
        w[:] = u * 0.5
        u = w.copy()
        k += 1
    return np.sum(u ** 2) * np.sum(x)


def break_copy(x):  # the loop body is guarded by `if not done`: the slots meet in a branch
    u = x.copy()
    buf = np.zeros(x.shape[0])
    for k in range(10):
        buf[1:] = u[:-1] * 0.9
        buf[0] = u[-1]
        u = buf.copy()
        if np.sum(u ** 2) < 0.5:
            break
    return np.sum(u ** 3)


def copy_in_branch(x):  # `buf * 1.0` simplifies to buf: the primal was wrong too
    u = x.copy()
    buf = np.zeros(3)
    for k in range(3):
        buf[1:] = u[:-1] * u[1:]
        buf[0] = u[2] + 0.5
        if k % 2 == 0:
            u = buf.copy()
        else:
            u = buf * 1.0
    return np.sum(u ** 3)


def times_one_in_loop(x):  # `u = nxt * 1.0` is `u = nxt` after simplification
    u = x * 1.0
    nxt = np.zeros(3)
    prev = np.zeros(3)
    for k in range(3):
        prev = nxt.copy()
        nxt[1:] = u[:-1] * 0.5 + prev[1:]
        nxt[0] = u[2]
        u = nxt * 1.0
    return np.sum(u ** 2) + np.sum(prev ** 2)


def asarray_in_loop(u0):  # np.asarray(u_next) is u_next itself in NumPy: grad was wrong too
    u = u0 * 1.0
    u_next = np.zeros(3)
    for it in range(2):
        u_next[1:] = u[1:] * u[:-1] + u[1:]
        u = np.asarray(u_next)
    return np.sum(u ** 2)


def array_copy_in_loop(u0):
    u = u0.copy()
    u_next = np.zeros(3)
    for it in range(2):
        u_next[1:] = u[1:] * u[:-1] + u[1:]
        u = np.array(u_next)
    return np.sum(u ** 2)


def nested_copy(x):
    u = x.copy()
    buf = np.zeros(3)
    for k in range(2):
        for j in range(2):
            buf[1:] = u[:-1] * u[1:] + 0.5
            u = buf.copy()
    return np.sum(u ** 2)


def inner_loop_then_copy(x):
    u = x.copy()
    buf = np.zeros(3)
    for k in range(2):
        for j in range(2):
            buf[1:] = u[:-1] * u[1:] + 0.5
        u = buf.copy()
        buf[0] = u[1] * 2.0
    return np.sum(u ** 2) + np.sum(buf)


def transpose_copy_in_loop(m0):
    m = m0.copy()
    nxt = np.zeros((2, 2))
    for it in range(2):
        nxt[0, :] = m[1, :] * m[0, :]
        nxt[1, :] = m[0, :] + 1.0
        m = nxt.T.copy()
    return np.sum(m ** 2)


def ravel_copy_in_loop(m0):
    m = m0.copy()
    nxt = np.zeros((2, 2))
    for it in range(2):
        nxt[0, :] = m[1, :] * m[0, :]
        nxt[1, :] = m[0, :] + 1.0
        m = np.ravel(nxt).copy().reshape(2, 2)
    return np.sum(m ** 2)


def astype_in_loop(u0):
    u = u0.copy()
    u_next = np.zeros(3)
    for it in range(2):
        u_next[1:] = u[1:] * u[:-1] + u[1:]
        u = u_next.astype(np.float64)
    return np.sum(u ** 2)


def straight_copy_then_write(u0):
    x = u0 * 2.0
    y = x.copy()
    x[0] = 5.0
    x[1:] *= 3.0
    return np.sum(y ** 2) + np.sum(x * u0)


def name_then_write(u0):  # y = x: NumPy's y sees the update
    x = u0 * 2.0
    y = x
    x[0] = 5.0
    x[1:] *= u0[1:]
    return np.sum(y ** 2) + np.sum(x * u0)


def asarray_then_write(u0):
    x = u0 * 2.0
    y = np.asarray(x)
    x[0] = 5.0 * u0[1]
    return np.sum(y ** 2) + np.sum(x * u0)


def view_copies_then_write(u0):
    x = u0 * 2.0
    y = x.reshape(3, 1).copy()
    z = x.T.copy()
    x[0] = 5.0 * u0[1]
    return np.sum(y ** 2) + np.sum(z ** 3) + np.sum(x * u0)


def astype_then_write(u0):
    x = u0 * 2.0
    y = x.astype(np.float64)
    x[0] = 5.0 * u0[1]
    return np.sum(y ** 2) + np.sum(x * u0)


def while_break_residual(x):  # reverse mode: `v2 += x` in place changed the residual list
    n1 = 0
    v2 = np.zeros((2, 3))
    v3 = np.zeros((2, 3))
    v4 = np.zeros((3, 2, 3))
    while n1 < 3:
        n1 = n1 + 1
        if not np.sum(x) > -2.86:
            break
        v2 = v2 + x
        v3 += v2 * v2
        v4[n1 - 1] = v2
    return v3.sum() + v4.sum() + np.sum(v2)


def copy_never_written(x):
    u = np.sin(x)
    v = u.copy()
    for k in range(2):
        v = v * u
    return np.sum(v ** 2)


CASES = [(copy_in_loop, (3,)), (write_after_loop, (3,)), (leapfrog, (6,)),
         (while_copy, (3,)), (break_copy, (3,)), (copy_in_branch, (3,)),
         (times_one_in_loop, (3,)), (asarray_in_loop, (3,)), (array_copy_in_loop, (3,)),
         (nested_copy, (3,)), (inner_loop_then_copy, (3,)), (transpose_copy_in_loop, (2, 2)),
         (ravel_copy_in_loop, (2, 2)), (astype_in_loop, (3,)),
         (straight_copy_then_write, (3,)), (name_then_write, (3,)), (asarray_then_write, (3,)),
         (view_copies_then_write, (3,)), (astype_then_write, (3,)),
         (while_break_residual, (2, 3)), (copy_never_written, (3,))]
IDS = [f.__name__ for f, _ in CASES]


def _point(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.3, 0.9, shape), rng.normal(size=shape)


def _along(f, x, t):
    """d/dh f(x + h t) at 0, by central differences."""
    return (f(x + H * t) - f(x - H * t)) / (2 * H)


def _grad_differences(f, x):
    """The Hessian by central differences of the compiled gradient, one row per entry of x."""
    units = np.eye(x.size).reshape((x.size,) + x.shape)
    rows = [(ad.grad(f)(x + H * e) - ad.grad(f)(x - H * e)) / (2 * H) for e in units]
    return np.array(rows).reshape(x.shape + x.shape)


@pytest.mark.parametrize("f, shape", CASES, ids=IDS)
def test_jvp_matches_differences_along_the_tangent(f, shape):
    x, t = _point(shape)
    value, tangent = ad.jvp(f)(x.copy(), tangents=t.copy())
    assert value == pytest.approx(f(x.copy()), rel=1e-12)
    assert tangent == pytest.approx(_along(f, x, t), rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("f, shape", CASES, ids=IDS)
def test_grad_matches_numerical(f, shape):
    x, _ = _point(shape, seed=1)
    np.testing.assert_allclose(ad.grad(f)(x.copy()), numerical_grad(f, [x], 0),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f, shape", CASES, ids=IDS)
def test_hessian_and_hvp_match_differences_of_grad(f, shape):
    x, t = _point(shape, seed=2)
    expected = _grad_differences(f, x)
    np.testing.assert_allclose(ad.hessian(f)(x.copy()), expected, rtol=1e-4, atol=1e-6)
    _, hv = ad.hessian(f).hvp(x.copy(), tangents=t.copy())
    flat = expected.reshape(x.size, x.size) @ t.reshape(-1)
    np.testing.assert_allclose(hv, flat.reshape(shape), rtol=1e-4, atol=1e-6)


def test_the_trial_repro_values():
    u0, t = np.array([0.1, 0.5, 0.9]), np.array([0.3, -1.0, 0.5])
    assert ad.jvp(copy_in_loop)(u0, tangents=t)[1] == pytest.approx(-5.64, rel=1e-12)
    np.testing.assert_allclose(ad.hessian(copy_in_loop)(u0),
                               [[4, 6, 2], [6, 10, 4], [2, 4, 2]], rtol=1e-12)


def test_tangent_code_keeps_the_alias_and_copies_before_the_write():
    """``u_dot = <u_next's tangent>`` stays a plain name (no copy per copy); the update that
    would change ``u_dot`` works on a copy of ``u_next_dot`` instead."""
    j = ad.jvp(copy_in_loop)
    j(np.ones(3), tangents=np.ones(3))
    body = j.source.split("for it in range(2):")[1]
    assert "np.array(u_next_dot)" in body
    assert "np.copy(u_next_dot)" not in body
    assert any(line.strip().startswith("u_dot = t") for line in body.splitlines())
    k = ad.jvp(copy_never_written)
    k(np.ones(3), tangents=np.ones(3))
    assert "v_dot = u_dot" in k.source and "np.array(" not in k.source


WAVE_BODY = '''
    n = u0.shape[0]
    u_prev = u0.copy()
    u = u0.copy()
    u_next = np.zeros(n)
    for it in range(8):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u_next[1:-1] = 2.0 * u[1:-1] - 0.95 * u_prev[1:-1] + 0.2 * lap
        u_prev = u.copy()
        u = u_next.copy()
    return np.sum(u ** 2)
'''
WAVE_MODULE = ("import numpy as np\nimport adcompiler\n\n\n@adcompiler.jvp\ndef wave(u0):"
               + WAVE_BODY + "\n\n@adcompiler.grad\ndef energy(u0):" + WAVE_BODY)


def test_compile_forward_module_gives_the_tangent(tmp_path):
    path = write(tmp_path, "wave.py", WAVE_MODULE)
    done = adcompiler("compile", path, "--mode", "forward", "--shape", "u0=7")
    assert done.returncode == 0, done.stderr
    module = import_path(tmp_path / "wave_grad.py")
    for n in (7, 9):
        x, t = _point((n,), seed=n)
        value, tangent = module.jvp_wave(x, tangents=t)
        assert value == pytest.approx(module.wave(x), rel=1e-12)
        assert tangent == pytest.approx(_along(module.wave, x, t), rel=1e-5, abs=1e-7)
        np.testing.assert_allclose(module.grad_energy(x), numerical_grad(module.wave, [x], 0),
                                   rtol=1e-5, atol=1e-7)
