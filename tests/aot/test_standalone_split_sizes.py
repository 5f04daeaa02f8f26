"""``np.split`` at constant indices in a compiled module: the pieces are written as constant
slices (``x[2:5]``), so the body holds from the largest index on. It promised any size of at
least 2, and at size 3 gave [0, 0, 1.33] for [0, 0, 4] (the mean's 1/3 fixed)."""

import numpy as np
import pytest

import adcompiler as ad
from tests.cli.test_cli import adcompiler, import_path, write

MODULE = '''
    import numpy as np
    import adcompiler as ad


    @ad.grad
    def middle(x):
        a, b, c = np.split(x, [2, 5])
        return np.mean(b ** 2) + np.sum(a) + np.sum(c ** 3)


    def example_middle():
        return (np.linspace(-1.0, 1.0, 8),)
'''


def _middle(x):
    a, b, c = np.split(x, [2, 5])
    return np.mean(b ** 2) + np.sum(a) + np.sum(c ** 3)


def test_a_split_module_holds_from_the_largest_index_on(tmp_path):
    path = write(tmp_path, "splits.py", MODULE)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    assert "any size of at least 5" in (tmp_path / "splits_grad.py").read_text()
    out = import_path(tmp_path / "splits_grad.py")
    for n in (5, 6, 9, 12):
        x = np.linspace(-0.8, 1.1, n)
        np.testing.assert_allclose(out.grad_middle(x), ad.grad(_middle)(x), rtol=1e-12)
    with pytest.raises(TypeError, match="at least 5"):
        out.grad_middle(np.ones(3))


TAKE_MODULE = '''
    import numpy as np
    import adcompiler as ad


    @ad.grad
    def taken(x):
        return np.sum(np.take(x, [0, 4, 4]) ** 3)


    def example_taken():
        return (np.linspace(-1.0, 1.0, 8),)
'''


def test_np_take_at_constant_indices_bounds_the_size(tmp_path):
    path = write(tmp_path, "takes.py", TAKE_MODULE)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    assert "any size of at least 5" in (tmp_path / "takes_grad.py").read_text()
    out = import_path(tmp_path / "takes_grad.py")
    x = np.linspace(-0.8, 1.1, 6)
    np.testing.assert_allclose(out.grad_taken(x), [3 * x[0] ** 2, 0, 0, 0, 6 * x[4] ** 2, 0])
    with pytest.raises(TypeError, match="at least 5"):
        out.grad_taken(np.ones(4))
