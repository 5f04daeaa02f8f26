"""``np.roll`` by a constant shift in a compiled module: the shift is taken modulo the size
while compiling and written as slices (``x[3:]``, ``x[:3]``), so the module's body holds for
sizes past the shift only. It promised any size of at least 2, and at size 2 gave [6, 12]
for [8, 5]; now each shift ``k`` sets the least size to ``abs(k) + 1``."""

import numpy as np
import pytest

import adcompiler as ad
from tests.cli.test_cli import adcompiler, import_path, write

MODULE = '''
    import numpy as np
    import adcompiler as ad


    @ad.grad
    def left(x):
        return np.sum(x ** 2 * np.roll(x, -3))


    @ad.grad
    def right(x):
        return np.sum(np.sin(x) * np.roll(x, shift=5))


    def example_left():
        return (np.linspace(0.1, 1.0, 8),)


    def example_right():
        return (np.linspace(0.1, 1.0, 8),)
'''


def _left(x):
    return np.sum(x ** 2 * np.roll(x, -3))


def _right(x):
    return np.sum(np.sin(x) * np.roll(x, shift=5))


def test_a_rolled_module_holds_past_the_shift_and_refuses_below(tmp_path):
    path = write(tmp_path, "rolls.py", MODULE)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "rolls_grad.py").read_text()
    assert "any size of at least 4" in text and "any size of at least 6" in text
    out = import_path(tmp_path / "rolls_grad.py")
    for n in (4, 5, 7, 8, 11):
        x = np.linspace(-0.7, 1.3, n)
        np.testing.assert_allclose(out.grad_left(x), ad.grad(_left)(x), rtol=1e-12)
    for n in (6, 9, 13):
        x = np.linspace(-0.7, 1.3, n)
        np.testing.assert_allclose(out.grad_right(x), ad.grad(_right)(x), rtol=1e-12)
    with pytest.raises(TypeError, match="at least 4"):
        out.grad_left(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="at least 6"):
        out.grad_right(np.ones(4))
