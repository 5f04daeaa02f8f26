"""``adcompiler compile --mode forward``: the decorator's gradients assembled from one compiled jvp
per input entry (adcompiler/aot/forward.py). The module, imported where adcompiler cannot
be imported, must give the decorator's (reverse-mode) values, for every mode a sample marks
(grad, value_and_grad, vjp), on floats and arrays, at the example's sizes and at others."""

import shutil

import numpy as np
import pytest

from tests.cli.test_cli import SAMPLES, adcompiler, import_path
from tests.aot.test_standalone_shapes import compare_calls, mlp_args

RNG = np.random.default_rng(11)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    directory = tmp_path_factory.mktemp("forward")
    for sample in ("mlp", "seed_f", "seed_graph", "shapes"):
        shutil.copy(SAMPLES / f"{sample}.py", directory)
    done = adcompiler("compile", directory, "--mode", "forward")
    assert done.returncode == 0, done.stderr
    return directory, done.stderr


def test_forward_mode_modules_give_the_decorators_gradients(compiled):
    directory, stderr = compiled
    assert "grad_loss: forward mode, one jvp_loss per input entry" in stderr
    mlp, seed_f = import_path(SAMPLES / "mlp.py"), import_path(SAMPLES / "seed_f.py")
    graph, shapes = import_path(SAMPLES / "seed_graph.py"), import_path(SAMPLES / "shapes.py")
    cases = []
    for sizes in ((8, 16, 32, 4), (5, 3, 7, 2)):        # the example's sizes, then others
        args = mlp_args(*sizes)
        cases.append(("mlp_grad", "grad_loss", args, {}, mlp.loss(*args)))
    cases.append(("seed_f_grad", "value_and_grad_f", (2.0, 5.0), {}, _flat(seed_f.f(2.0, 5.0))))
    inp = RNG.standard_normal((2, 2))
    cases.append(("seed_graph_grad", "grad_loss", (2.0, 3.0, 4.0, inp), {},
                  graph.loss(2.0, 3.0, 4.0, inp)))
    x, w = RNG.standard_normal((3, 4)) * 0.3, RNG.standard_normal(4)
    ct = RNG.standard_normal((3, 4))
    cases.append(("shapes_grad", "vjp_scaled", (x, w), {"cotangent": ct},
                  shapes.scaled(x, w, cotangent=ct)))
    W, b, X = RNG.standard_normal((4, 3)), RNG.standard_normal(3), RNG.standard_normal((6, 4))
    cases.append(("shapes_grad", "grad_bias", (W, b, X), {}, shapes.bias(W, b, X)))
    compare_calls(directory, cases)


def _flat(value_and_grad):
    """(value, gradients as one array): how compare_calls lists the module's (value, tuple)."""
    value, grads = value_and_grad
    return (value, np.array(grads))


def test_forward_mode_header_names_the_command(compiled):
    directory, _ = compiled
    text = (directory / "mlp_grad.py").read_text()
    assert "--mode forward" in text.split('"""')[1]
    assert "def grad_loss(W1, b1, W2, b2, x, onehot):" in text
    assert "def jvp_loss(" in text
