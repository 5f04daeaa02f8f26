"""Functions with required keyword-only parameters on the command line: an example tuple gives one
value per parameter in signature order (keyword-only ones bound by name, defaults filling those
left out), ``--shape`` binds by name, and the compiled module keeps the ``*``. Gradients are
compared with their closed forms and with finite differences."""

import inspect

import numpy as np
import pytest

from adcompiler import cli

from tests.cli.test_cli import import_path, write
from tests.cli.test_cli_inputs import numeric_grad as numeric

KWONLY = '''
    import numpy as np
    import adcompiler as ad


    @ad.grad(wrt="x")
    def f(x, *, w):
        return np.sum(np.sin(x) * w)


    def example_f():
        return np.array([0.3, 0.4]), np.array([1.0, 2.0])
'''


def _compile(tmp_path, capsys, text, *options):
    path = write(tmp_path, "kw.py", text)
    assert cli.main(["compile", str(path), *options]) == 0, capsys.readouterr().err
    return import_path(tmp_path / "kw_grad.py")


@pytest.mark.parametrize("options", [(), ("--shape", "x=2", "--shape", "w=2"),
                                     ("--mode", "forward")])
def test_a_required_keyword_only_parameter_compiles(tmp_path, capsys, options):
    module = _compile(tmp_path, capsys, KWONLY, *options)
    assert str(inspect.signature(module.grad_f)) == "(x, *, w)"
    for n in (2, 5):   # the example's size and another
        x, w = np.linspace(0.1, 0.9, n), np.linspace(1.0, 2.0, n)
        np.testing.assert_allclose(module.grad_f(x, w=w), np.cos(x) * w, rtol=1e-12)
        np.testing.assert_allclose(module.grad_f(x, w=w),
                                   numeric(lambda v: module.f(v, w=w), x), rtol=1e-6)
    with pytest.raises(TypeError):
        module.grad_f(np.ones(2), np.ones(2))   # w is keyword-only, as in f


def test_show_and_check_bind_shapes_and_examples_by_name(tmp_path, capsys):
    path = write(tmp_path, "kw.py", KWONLY)
    assert cli.main(["show", f"{path}:f", "--shape", "x=3", "--shape", "w=3"]) == 0
    assert "cos" in capsys.readouterr().out
    assert cli.main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "kw.py:f (x: float64[2], w: float64[2])" in out and "all gradients agree" in out
    # --shape w=... replaces the example's w by name, not by position
    assert cli.main(["check", str(path), "--shape", "w=2:float32"]) == 0
    assert "(x: float64[2], w: float32[2])" in capsys.readouterr().out


def test_defaults_fill_the_keyword_only_parameters_an_example_leaves_out(tmp_path, capsys):
    module = _compile(tmp_path, capsys, '''
        import numpy as np
        import adcompiler as ad


        @ad.value_and_grad(wrt=("x", "w"))
        def f(x, scale=2.0, *, w, p=2.0):
            return np.sum(scale * x * w ** p)


        @ad.vjp(wrt="x")
        def g(x, *, w):
            return x * w


        def example_f():
            return [(np.array([0.3, 0.4]), 3.0, np.array([1.0, 2.0])),
                    (np.array([[0.3, 0.4]]), 3.0, np.array([[1.0, 2.0]]), 3.0)]


        def example_g():
            return np.array([0.3, 0.4]), np.array([1.0, 2.0])
        ''')
    assert str(inspect.signature(module.value_and_grad_f)) == "(x, scale=2.0, *, w, p=2.0)"
    x, w = np.array([0.3, 0.4]), np.array([1.0, 2.0])
    value, (gx, gw) = module.value_and_grad_f(x, 3.0, w=w)
    assert value == pytest.approx(3.0 * (0.3 + 0.4 * 4.0), rel=1e-14)
    np.testing.assert_allclose(gx, 3.0 * w ** 2, rtol=1e-14)
    np.testing.assert_allclose(gw, 3.0 * x * 2 * w, rtol=1e-14)
    value, (gx, gw) = module.value_and_grad_f(x[None], w=w[None], p=3.0)
    assert value == pytest.approx(2.0 * (0.3 + 0.4 * 8.0), rel=1e-14)
    np.testing.assert_allclose(gx, 2.0 * w[None] ** 3, rtol=1e-14)
    ct = np.array([1.0, -2.0])
    np.testing.assert_allclose(module.vjp_g(x, w=w, cotangent=ct), w * ct, rtol=1e-14)


@pytest.mark.parametrize("example, message", [
    ("np.array([0.3, 0.4]), np.array([1.0, 2.0]), 3.0",
     "example_f() gives 3 arguments for f(x, *, w): too many arguments (3 for 2 parameters)"),
    ("(np.array([0.3, 0.4]),)",
     "example_f() gives 1 argument for f(x, *, w): missing a required argument: 'w'"),
])
def test_an_example_that_does_not_fit_is_located_with_the_signature(tmp_path, capsys, example,
                                                                     message):
    path = write(tmp_path, "kw.py", KWONLY.replace(
        "np.array([0.3, 0.4]), np.array([1.0, 2.0])", example))
    assert cli.main(["compile", str(path)]) == 2
    header, shown, caret, hint = capsys.readouterr().err.splitlines()
    assert header == f"{path}:10:1: error: {message}"
    assert shown == "    def example_f():" and caret == "    " + "^" * 16
    assert hint.startswith("hint: return one value per parameter of f(x, *, w), in a tuple")
    assert not (tmp_path / "kw_grad.py").exists()
