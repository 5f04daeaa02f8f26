"""Mistakes in a call, and results that do not depend on the inputs: a clear error naming what
to pass (and, for the user's code, its file and line, with no frames from inside the compiler),
or the right answer where there is one."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.errors import ArgumentError, CompileError, Location

X = np.array([0.5, -1.0, 2.0])


def twice(x):
    return x * 2.0


def total(x):
    return np.sum(x)


def maybe_regularised(x, use_reg):
    base = 1.0
    if use_reg:
        base = base + np.sum(x ** 2)
    return base


def times_cotangent(x, cotangent):
    return x * cotangent


def abs_of_product(x, c):
    return np.sum(np.abs(x * c))


def with_kwargs(x, **kw):
    return np.sum(x)


def affine(x, params):
    w, b = params
    return np.sum(x @ w + b)


@pytest.mark.parametrize("f, cotangent, want, got", [
    (twice, np.ones(4), (3,), (4,)),
    (twice, np.ones((2, 3)), (3,), (2, 3)),
    (total, np.ones(3), (), (3,)),
])
def test_a_cotangent_shaped_unlike_the_result_is_refused(f, cotangent, want, got):
    with pytest.raises(ArgumentError, match=rf"the cotangent has shape {re_tuple(got)}, but the "
                       rf"result has shape {re_tuple(want)}"):
        ad.vjp(f)(X, cotangent=cotangent)
    assert isinstance(ArgumentError("x"), ValueError)


def re_tuple(t):
    return str(tuple(t)).replace("(", r"\(").replace(")", r"\)")


def test_cotangents_of_the_right_shape_still_work():
    np.testing.assert_array_equal(ad.vjp(twice)(X, cotangent=np.arange(3.0)), 2 * np.arange(3.0))
    np.testing.assert_array_equal(ad.vjp(total)(X, cotangent=2.0), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(ad.vjp(total)(X, cotangent=np.float64(3.0)), [3.0] * 3)


def test_a_result_that_does_not_depend_on_the_inputs_has_zero_gradients():
    value, g = ad.value_and_grad(maybe_regularised)(X, False)
    assert value == 1.0
    np.testing.assert_array_equal(g, np.zeros(3))
    value, g = ad.value_and_grad(maybe_regularised)(X, True)
    assert value == 1.0 + np.sum(X ** 2)
    np.testing.assert_array_equal(g, 2 * X)
    assert ad.grad(maybe_regularised)(2.0, False) == 0.0
    np.testing.assert_array_equal(ad.hessian(maybe_regularised)(X, False), np.zeros((3, 3)))


def test_a_parameter_named_cotangent_is_refused_by_vjp_only():
    with pytest.raises(CompileError, match="rename the parameter `cotangent`") as err:
        ad.vjp(times_cotangent)(X, X, cotangent=X)
    assert err.value.lineno == times_cotangent.__code__.co_firstlineno
    value, tangent = ad.jvp(times_cotangent)(X, 2 * X, tangents=np.ones(3))
    np.testing.assert_array_equal(value, 2 * X * X)
    np.testing.assert_array_equal(tangent, 2 * X)


def test_complex_arguments_are_refused():
    for args, name in [((np.array([2.0]), np.array([1j])), "c"),
                       ((np.array([2.0]), 1j), "c"),
                       ((np.array([2.0 + 0j]), np.ones(1)), "x")]:
        with pytest.raises(TypeError, match=rf"'{name}' is complex .*real computations only"):
            ad.grad(abs_of_product)(*args)
    np.testing.assert_array_equal(ad.grad(abs_of_product)(np.array([2.0]), np.ones(1)), [1.0])


def test_containers_and_variadic_parameters_once_refused_now_compile():
    """``**kw``, a tuple and a list of arrays were refused as arguments; they are containers
    now (tests/api/test_containers.py), traced leaf by leaf."""
    w, b = np.ones((3, 2)), np.ones(2)
    np.testing.assert_array_equal(ad.grad(with_kwargs)(X), np.ones(3))
    expected = ad.grad(affine)(X, (w, b))   # x's gradient: params' rows summed
    np.testing.assert_allclose(expected, np.full(3, 2.0))
    np.testing.assert_allclose(ad.grad(affine)(X, [w, b]), expected)


def test_an_uncaught_compile_error_shows_no_compiler_frames(tmp_path):
    user = tmp_path / "user.py"
    user.write_text(textwrap.dedent("""\
        import numpy as np
        import adcompiler as ad

        def f(x):
            return 1

        ad.grad(f)(np.ones(3))
        """))
    done = subprocess.run([sys.executable, str(user)], capture_output=True, text=True)
    assert done.returncode == 1
    frames = [ln for ln in done.stderr.splitlines() if ln.startswith('  File "')]
    assert frames[0].startswith(f'  File "{user}", line 7')
    assert not any("pipeline.py" in f or "cache.py" in f for f in frames), done.stderr
    assert len(frames) <= 4 and "During handling" not in done.stderr
    assert f"{user}:5:5: error: the result has dtype int64" in done.stderr
    full = subprocess.run([sys.executable, str(user)], capture_output=True, text=True,
                          env=dict(os.environ, ADCOMPILER_TRACEBACK="1"))
    assert "pipeline.py" in full.stderr


def test_the_caret_lines_up_under_tabs_and_wide_characters():
    text = CompileError("bad", Location("f.py", 1, 6, "y = x\t+ z", 7)).render()
    line, carets = text.splitlines()[1:3]
    assert line == "    y = x\t+ z" and carets == "    " + "     \t^"
    text = CompileError("bad", Location("f.py", 1, 4, "y = 求和(x)", 6)).render()
    assert text.splitlines()[2] == "    " + "    " + "^^^^"


def summed_over_range(x, n):
    s = 0.0
    for i in range(n):
        s = s + x * i
    return s


def test_range_of_a_float_is_pythons_type_error_located():
    with pytest.raises(CompileError, match=r"range\(\) takes integers, and this is a float") \
            as err:
        ad.grad(summed_over_range)(2.0, 2.5)
    assert "range(int(n))" in str(err.value) and err.value.filename == __file__
    assert ad.grad(summed_over_range)(2.0, 3) == 3.0
    assert ad.grad(summed_over_range)(2.0, np.int64(4)) == 6.0
