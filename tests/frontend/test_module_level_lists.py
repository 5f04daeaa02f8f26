"""``adcompiler compile`` reads a module-level list or tuple of arrays (``LAYERS = [np.array(
...), ...]``) without running the module, as it reads one array: ``for W in LAYERS:`` (an
unrolled loop) compiles into a module that needs no adcompiler. It was "an expression
adcompiler does not evaluate"."""

import numpy as np

import adcompiler as ad
from tests.cli.test_cli import adcompiler, import_path, write

MODULE = '''
    import numpy as np
    import adcompiler as ad

    LAYERS = [np.array([[1.0, 0.5], [0.0, 2.0]]), np.array([[0.5, -1.0], [1.0, 0.25]])]
    SHIFTS = (0.5, np.array([0.1, -0.2]))


    @ad.grad
    def net(x):
        h = x
        for W in LAYERS:
            h = np.tanh(W @ h + SHIFTS[1])
        return np.sum(h) * SHIFTS[0]


    def example_net():
        return (np.array([0.3, -0.4]),)
'''


def _net(x, layers, shift, scale):
    h = x
    for W in layers:
        h = np.tanh(W @ h + shift)
    return np.sum(h) * scale


def test_a_list_of_arrays_at_module_level_compiles(tmp_path):
    path = write(tmp_path, "layers.py", MODULE)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    out = import_path(tmp_path / "layers_grad.py")
    layers = [np.array([[1.0, 0.5], [0.0, 2.0]]), np.array([[0.5, -1.0], [1.0, 0.25]])]
    x = np.array([0.3, -0.4])
    expected = ad.grad(_net)(x, layers, np.array([0.1, -0.2]), 0.5)
    np.testing.assert_allclose(out.grad_net(x), expected, rtol=1e-12)
    h = 1e-6
    numeric = [(_net(x + e, layers, np.array([0.1, -0.2]), 0.5)
                - _net(x - e, layers, np.array([0.1, -0.2]), 0.5)) / (2 * h)
               for e in np.eye(2) * h]
    np.testing.assert_allclose(out.grad_net(x), numeric, rtol=1e-6)
