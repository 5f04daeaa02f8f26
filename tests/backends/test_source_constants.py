"""`.source` says what the names it reads but does not define hold, and `.constants` holds
them: with the two, the generated gradient runs without adcompiler."""

import math

import numpy as np

import adcompiler as ad
from adcompiler.backends.constants import SHOWN_ELEMENTS, describe

W = np.arange(6.0).reshape(2, 3)
BIG = np.linspace(0.0, 1.0, 12).reshape(3, 4)


def weighted(x):
    return np.sum(np.tanh(W @ x) * np.array([1.0, 2.0]))


def with_eye(x):
    return np.sum(np.eye(3) @ x * x)


def plain(x):
    return np.sum(np.sin(x) * x)


def big(x):
    return np.sum(BIG @ x)


def test_comment_lists_globals_and_made_arrays_with_small_values():
    g = ad.grad(weighted)
    g(np.ones(3))
    head = g.source.split("\n\n\n")[0].splitlines()
    assert head[0].startswith("# Names this code reads but does not define")
    assert "#   W: float64[2, 3] = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]" in head
    assert "#   const: float64[2] = [1.0, 2.0]" in head
    assert set(g.constants) == {"W", "const"}
    assert g.constants["W"] is W  # the user's array, bound, not copied
    np.testing.assert_array_equal(g.constants["const"], [1.0, 2.0])


def test_large_arrays_are_described_by_type_only():
    g = ad.grad(big)
    g(np.ones(4))
    assert BIG.size > SHOWN_ELEMENTS
    assert "#   BIG: float64[3, 4]\n" in g.source
    assert describe(np.zeros((), np.float32)) == "float32[] = 0.0"


def test_no_comment_without_free_names():
    g = ad.grad(plain)
    g(np.ones(3))
    assert g.source.startswith("def grad_plain(x):")
    assert g.constants == {}


def test_source_and_constants_run_without_adcompiler():
    for f, x in [(weighted, np.array([0.1, -0.4, 0.7])), (with_eye, np.array([1.0, 2.0, 3.0]))]:
        g = ad.grad(f)
        want = g(x)
        namespace = {"np": np, "math": math, **g.constants}
        exec(compile(g.source, "<generated>", "exec"), namespace)
        np.testing.assert_allclose(namespace[f"grad_{f.__name__}"](x), want, rtol=0, atol=0)
    np.testing.assert_allclose(want, 2 * np.array([1.0, 2.0, 3.0]))  # eye(3) @ x * x


def test_standalone_module_leaves_the_comment_out(tmp_path):
    from adcompiler.cli.main import main
    module = tmp_path / "consts_mod.py"
    module.write_text("import numpy as np\nimport adcompiler as ad\n\n"
                      "@ad.grad\ndef f(x):\n    return np.sum(x * np.array([1.0, 2.0]))\n")
    assert main(["compile", str(module), "--shape", "x=2"]) == 0
    text = (tmp_path / "consts_mod_grad.py").read_text()
    assert "Names this code reads but does not define" not in text
    namespace = {}
    exec(compile(text, "consts_mod_grad.py", "exec"), namespace)
    np.testing.assert_array_equal(namespace["grad_f"](np.array([3.0, 4.0])), [1.0, 2.0])
