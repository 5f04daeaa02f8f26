"""Expressions that nest deeper than Python's frame limit compile (reading.depth): a sum of
2,000 terms is a chain 2,000 deep, which the lowering, the rendering of the fused chain and
Python's compile() each recurse through. Where even the roomy thread is not enough, a located
error at the def; a file Python itself cannot parse gets a message, never a traceback."""

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.frontend.reading import depth

TERMS = 2000


def _module(tmp_path, terms=TERMS, name="deep_sum"):
    body = " + ".join(f"{i}.0 * x" for i in range(terms))
    path = tmp_path / f"{name}.py"
    path.write_text("import numpy as np\n\nimport adcompiler as ad\n\n"
                    "@ad.grad\n"
                    f"def loss(x):\n    return np.sum({body})\n\n\n"
                    "def example_loss():\n    return (np.ones(3),)\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module


def test_a_sum_of_2000_terms_compiles(tmp_path):
    _, module = _module(tmp_path)
    x = np.array([1.0, -2.0, 0.5])
    expected = sum(range(TERMS))                         # d/dx_i of sum_k k x_i
    limit = sys.getrecursionlimit()
    np.testing.assert_array_equal(module.loss(x), np.full(3, float(expected)))
    value, grad = ad.value_and_grad(module.loss.primal)(x)
    assert value == pytest.approx(expected * x.sum())
    np.testing.assert_array_equal(grad, np.full(3, float(expected)))
    np.testing.assert_array_equal(ad.hessian(module.loss.primal)(x), np.zeros((3, 3)))
    assert sys.getrecursionlimit() == limit              # restored after the roomy thread


def test_deeper_than_the_room_is_a_located_error(tmp_path, monkeypatch):
    _, module = _module(tmp_path, terms=1500, name="deep_sum_small_room")
    monkeypatch.setattr(depth, "FRAMES", 1200)          # less room than 1,500 terms need
    with pytest.raises(ad.CompileError) as info:
        ad.grad(module.loss.primal)(np.ones(2))
    assert "nests too deeply to compile" in str(info.value)
    assert info.value.lineno == 6                        # the def
    assert "split its longest expression" in str(info.value)


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "adcompiler", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_the_command_line_compiles_it(tmp_path):
    path, _ = _module(tmp_path)
    done = _cli("show", f"{path.name}:loss", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "def grad_loss(x):" in done.stdout and "Traceback" not in done.stderr
    done = _cli("compile", path.name, "-o", "deep_grads.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    spec = importlib.util.spec_from_file_location("deep_grads", tmp_path / "deep_grads.py")
    shipped = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shipped)
    np.testing.assert_array_equal(shipped.grad_loss(np.ones(4)), np.full(4, sum(range(TERMS))))


def test_a_file_python_cannot_parse_gets_a_message(tmp_path):
    body = " + ".join(f"{i}.0 * x" for i in range(30000))
    (tmp_path / "too_deep.py").write_text(f"def loss(x):\n    return {body}\n")
    done = _cli("show", "too_deep.py:loss", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "too_deep.py nests too deeply for Python's parser" in done.stderr
