"""``adcompiler check`` (adcompiler/checking/near_examples.py) compares with the dynamic tape as well as with
finite differences, as ``ad.check_grad`` does; both use adcompiler/checking/differences.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import cli
from adcompiler.checking import differences
from adcompiler.tape import functional

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_check_reports_the_tape_and_fails_when_it_disagrees(monkeypatch, capsys):
    assert cli.main(["check", str(SAMPLES / "mlp.py")]) == 0
    rows = [ln.split() for ln in capsys.readouterr().out.splitlines() if "vs tape" in ln]
    assert [r[0] for r in rows] == ["W1", "b1", "W2", "b2"]
    assert all(float(r[r.index("tape") + 1]) < 1e-12 for r in rows)

    real = functional.dynamic_grad

    def skewed(f, wrt=None):     # a tape whose gradient of W2 is off by 1%
        inner = real(f, wrt=wrt)
        return lambda *args: tuple(g * 1.01 if k == 2 else g
                                   for k, g in enumerate(inner(*args)))
    monkeypatch.setattr(functional, "dynamic_grad", skewed)
    monkeypatch.setattr("adcompiler.tape.dynamic_grad", skewed)
    assert cli.main(["check", str(SAMPLES / "mlp.py")]) == 1
    out = capsys.readouterr().out
    bad = [ln.split()[0] for ln in out.splitlines() if "MISMATCH" in ln]
    assert bad == ["W2"] and "or the dynamic tape" in out.splitlines()[-1]


def test_check_says_when_the_tape_cannot_run_the_function(capsys):
    assert cli.main(["check", str(SAMPLES / "seed_f.py")]) == 0
    out = capsys.readouterr().out
    assert "against finite differences only: the dynamic tape could not run f" in out


def test_five_point_differences_are_accurate():
    def cube(x, y):
        return float(np.sum(x ** 3) * y)
    x = np.array([0.5, -2.0, 30.0])
    fd = differences.gradient(cube, [x, 1.5], 0, 1e-4)
    # rounding: ~1e-16 * |f| / h = 4e-8 absolute, with |f| = 4e4 from the large entry
    np.testing.assert_allclose(fd, 3 * x ** 2 * 1.5, rtol=1e-10, atol=2e-7)
    assert abs(differences.gradient(cube, [x, 1.5], 1, 1e-4) / np.sum(x ** 3) - 1) < 1e-10
    sampled = differences.gradient(cube, [x, 1.5], 0, 1e-4, entries=[2, 0])
    np.testing.assert_allclose(sampled, [3 * 900 * 1.5, 3 * 0.25 * 1.5], rtol=1e-10, atol=2e-7)


def test_check_grad_numerical_gradient_uses_the_shared_stencil():
    def f(x):
        return np.sum(np.exp(x))
    x = np.array([0.1, 1.0, 3.0])
    report = ad.check_grad(f, x)
    np.testing.assert_allclose(report.inputs[0].numerical, np.exp(x), rtol=1e-10)


# ---- one comparison for both checks ---------------------------------------------------------
def test_both_checks_judge_by_the_one_comparison(capsys):
    """An entry far below the gradient's scale is judged on that scale (1% of the largest), not
    its own: finite differences cannot resolve it relatively, and neither check fails on it."""
    from adcompiler.checking import comparison
    expected = np.array([1.0, 1e-9])
    got = expected + np.array([0.0, 5e-8])    # 50x off in the tiny entry, 5e-8 absolute
    assert comparison.relative_error(got, expected) == pytest.approx(5e-6)
    assert comparison.agrees(got, expected, rtol=1e-5)
    assert not comparison.agrees(got, expected, rtol=1e-6)
    assert not np.allclose(got, expected, rtol=1e-5, atol=0.0)  # what an entrywise check says
    assert comparison.agrees(got + [1.5e-6, 0.0], expected, rtol=1e-6, atol=1e-6)
    assert not comparison.agrees(got + [1.5e-6, 0.0], expected, rtol=1e-6)

    def f(x):
        return np.sum(np.exp(x))
    x = np.array([0.1, 1.0, 3.0])
    row = ad.check_grad(f, x).inputs[0]
    assert row.vs_numerical == comparison.relative_error(row.compiled, row.numerical)
    assert row.vs_tape == comparison.relative_error(row.compiled, row.tape) < 1e-15
    assert row.ok and row.tolerance == 1e-5

    from adcompiler.checking import near_examples
    from adcompiler.checking.comparison import InputCheck
    gradient = ad.grad(f)
    rows = near_examples.check_gradient(None, gradient, (x,), np.random.default_rng(0))
    assert [type(r) for r in rows] == [InputCheck] and rows[0].ok
    assert rows[0].vs_numerical == comparison.relative_error(rows[0].compiled, rows[0].numerical)
