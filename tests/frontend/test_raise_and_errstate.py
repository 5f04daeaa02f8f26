"""``raise`` (while compiling, or as a run-time check), ``assert`` on traced values, and
``with np.errstate(...)`` in compiled functions (adcompiler/frontend/statements/checks.py)."""

import re
import warnings

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape


def validated(x, n):
    if x.shape[0] != 3:
        raise ValueError("need 3 rows")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return np.sum(x ** 2) * n


def nonnegative(x):
    if np.any(x < 0):
        raise ValueError("x must be nonnegative")
    return np.sum(np.sqrt(x) * x)


def else_raises(x):
    if np.all(x > 0):
        y = np.log(x)
    else:
        raise ValueError("x must be positive")
    return np.sum(y * y)


def asserts_traced(x):
    assert np.all(x > 0), f"positive entries, {x.shape[0]} of them"
    return np.sum(np.log(x) * x)


def nested_check(x):
    if np.sum(x) > 0:
        if np.any(x > 5):
            raise ValueError("big")
        y = np.sin(x) * 2
    else:
        y = x
    return np.sum(y * y)


def check_then_return(x):
    if np.any(x < 0):
        raise ValueError("negative")
    else:
        return np.sum(np.cos(x) * x)


def checks_in_loop(x):
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] > 10.0:
            raise ValueError("too large")
        total = total + np.sin(x[i]) * x[i]
    return total


def log_where(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(x > 0, np.log(x), 0.0)
    return np.sum(y * x)


def scaled_log(a, x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(x > 0, np.log(a * x), 0.0)
    return np.sum(y)


def errstate_return(x):
    with np.errstate(all="ignore"):
        return np.sum(np.sqrt(x) * x)


def custom_error(x):
    if np.any(x < 0):
        raise KeyError("a built-in one")
    return np.sum(x)


class MyError(Exception):
    pass


def user_error(x):
    if np.any(x < 0):
        raise MyError("mine")
    return np.sum(x)


def static_user_error(x, n):
    if n > 2:
        raise MyError(f"n={n}")
    return np.sum(x) * n


def bare_raise(x):
    if x.shape[0] == 2:
        raise
    return np.sum(x)


def raise_from(x):
    if x.shape[0] == 2:
        raise ValueError("no") from KeyError("k")
    return np.sum(x)


def raise_from_none(x):
    if x.shape[0] == 2:
        raise ValueError("no") from None
    return np.sum(x)


def traced_message(x):
    if np.any(x < 0):
        raise ValueError(f"bad {x[0]}")
    return np.sum(x)


def raise_with_work(x):
    if np.any(x < 0):
        y = x * 2.0
        raise ValueError("negative")
    return np.sum(x)


def other_with(x):
    with np.printoptions(precision=3):
        y = x * 2.0
    return np.sum(y)


def two_errstates(x):
    with np.errstate(divide="ignore"):
        y = np.log(x)
    with np.errstate(invalid="ignore"):
        z = np.sqrt(y)
    return np.sum(z)


def bad_errstate(x):
    with np.errstate(divide="sometimes"):
        y = np.log(x)
    return np.sum(y)


def check_rows(x):
    if x.shape[0] != 3:
        raise ValueError(f"need 3 rows, got {x.shape[0]}")
    if np.any(np.isnan(x)):
        raise ValueError("x has NaNs")


def uses_helper(x):
    check_rows(x)
    return np.sum(np.tanh(x) * x)


def while_check(x, tol):
    y, steps = x, 0
    while np.max(np.abs(y)) > tol:
        if steps > 50:
            raise RuntimeError("did not converge")
        y, steps = y * 0.5, steps + 1
    return np.sum(y * y)


def check_then_static(x, n):
    if np.any(x < 0):
        raise ValueError("x must be nonnegative")
    if n > 3:
        raise TypeError("n too big")
    return np.sum(x * n)


def check_else_static(x):
    if np.any(x < 0):
        raise ValueError("neg")
    else:
        raise RuntimeError("always")


def check_then_static_assert(x, n):
    assert np.all(x >= 0), "nonnegative"
    assert n <= 3, "n too big"
    return np.sum(x * n)


def static_then_check(x, n):
    if n > 3:
        raise TypeError("n too big")
    if np.any(x < 0):
        raise ValueError("x must be nonnegative")
    return np.sum(x * n)


def strict_errstate(x):
    y = np.log(x)
    with np.errstate(divide="raise"):
        z = np.exp(x)
    return np.sum(y + z)


def warn_errstate(x):
    with np.errstate(divide="warn"):
        y = np.log(x)
    return np.sum(y)


def formatted_assert(x):
    assert x.shape[0] != 2, f"bad {x.shape}"
    return np.sum(x)


def dtype_checks(x):
    if x.dtype != np.float64:
        raise TypeError("need float64")
    if x.dtype.kind != "f":
        raise TypeError("need floats")
    if not np.issubdtype(x.dtype, np.floating):
        raise TypeError("need a floating dtype")
    return np.sum(x ** 2)


def dtype_of_result(x):
    y = x.astype(np.float32)
    assert y.dtype == np.float32, f"got {y.dtype}"
    return np.sum(x * x)


# ---- raise while compiling --------------------------------------------------------------------
def test_static_raise_raises_the_users_exception_on_every_call():
    g = ad.grad(validated)
    for _ in range(2):  # not cached as code that returns
        with pytest.raises(ValueError, match=re.escape("need 3 rows")) as info:
            g(np.ones(4), 2)
        assert type(info.value) is ValueError
    with pytest.raises(ValueError, match=re.escape("n must be >= 0, got -1")):
        g(np.ones(3), -1)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(g(x, 2), 4.0 * x)


def test_static_raise_from_a_fresh_gradient_and_an_inlined_helper():
    with pytest.raises(ValueError, match=re.escape("need 3 rows")):
        ad.grad(validated)(np.ones(4), 2)  # a new GradientFunction, the disk cache on
    with pytest.raises(ValueError, match=re.escape("need 3 rows, got 2")):
        ad.grad(uses_helper)(np.ones(2))
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(ad.grad(uses_helper)(x), tape.dynamic_grad(uses_helper)(x))
    with pytest.raises(ValueError, match=re.escape("x has NaNs")):
        ad.grad(uses_helper)(np.array([0.1, np.nan, 0.3]))


def test_static_raise_in_a_branch_not_taken_leaves_no_trace():
    source = ad.grad(validated).specialize(np.ones(3), 2).source
    assert "raise" not in source and "need 3 rows" not in source


def test_static_raise_of_the_users_own_class_and_from_none():
    with pytest.raises(MyError, match=re.escape("n=3")):
        ad.grad(static_user_error)(np.ones(2), 3)
    with pytest.raises(ValueError, match="no") as info:
        ad.grad(raise_from_none)(np.ones(2))
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_static_raise_through_jvp_and_hessian():
    with pytest.raises(ValueError, match=re.escape("need 3 rows")):
        ad.jvp(validated)(np.ones(4), 2, tangents=np.ones(4))
    with pytest.raises(ValueError, match=re.escape("need 3 rows")):
        ad.hessian(validated)(np.ones(4), 2)


def test_static_raise_after_a_run_time_check_is_refused_not_run_first():
    """Python runs the check before the static raise: the compiled code must not raise the
    static exception in its place (ValueError for negative x, not TypeError)."""
    x = np.array([-1.0, 2.0])
    for call, text in [(lambda: ad.grad(check_then_static)(x, 5), 'raise TypeError("n too big")'),
                       (lambda: ad.jvp(check_then_static)(x, 5, tangents=np.ones(2)),
                        'raise TypeError("n too big")'),
                       (lambda: ad.grad(check_else_static)(x), 'raise RuntimeError("always")'),
                       (lambda: ad.grad(check_then_static_assert)(x, 5),
                        'assert n <= 3, "n too big"')]:
        with pytest.raises(ad.CompileError, match="a run-time check on array values before "
                           "it") as info:
            call()
        assert type(info.value) is ad.CompileError  # neither TypeError nor RuntimeError
        assert text in str(info.value) and "hint: put the checks on shapes" in str(info.value)
    good = np.array([1.0, 2.0])
    np.testing.assert_allclose(ad.grad(check_then_static)(good, 2), [2.0, 2.0])
    with pytest.raises(ValueError, match="x must be nonnegative"):
        ad.grad(check_then_static)(x, 2)
    with pytest.raises(TypeError, match="n too big"):  # static first: as today
        ad.grad(static_then_check)(x, 5)


def test_failing_static_assert_shows_its_formatted_message():
    with pytest.raises(AssertionError, match=re.escape("bad (2,)")) as info:
        ad.grad(formatted_assert)(np.ones(2))
    assert 'for these inputs: bad (2,)' in str(info.value)


def test_dtype_of_a_traced_array_is_known_while_compiling():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(ad.grad(dtype_checks)(x), 2.0 * x)
    with pytest.raises(TypeError, match="need float64"):
        ad.grad(dtype_checks)(x.astype(np.float32))
    assert "raise" not in ad.grad(dtype_checks).specialize(x).source
    np.testing.assert_allclose(ad.grad(dtype_of_result)(x), 2.0 * x)


# ---- run-time checks --------------------------------------------------------------------------
@pytest.mark.parametrize("f", [nonnegative, else_raises, asserts_traced, checks_in_loop,
                               nested_check, check_then_return])
def test_run_time_check_passes_good_data_with_right_gradients(f):
    x = np.array([0.5, 1.5, 2.0])
    g = ad.grad(f)
    np.testing.assert_allclose(g(x), tape.dynamic_grad(f)(x), rtol=1e-12)
    value, grad = ad.value_and_grad(f)(x)
    np.testing.assert_allclose(value, f(x))
    np.testing.assert_allclose(grad, g(x))
    t = np.array([1.0, -1.0, 0.5])
    _, tangent = ad.jvp(f)(x, tangents=t)
    np.testing.assert_allclose(tangent, g(x) @ t, rtol=1e-12)
    eps = 1e-6
    h = ad.hessian(f)(x)
    fd = np.stack([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f, bad, exc, message", [
    (nonnegative, np.array([1.0, -1.0, 2.0]), ValueError, "x must be nonnegative"),
    (else_raises, np.array([1.0, -1.0, 2.0]), ValueError, "x must be positive"),
    (asserts_traced, np.array([1.0, -1.0, 2.0]), AssertionError, "positive entries, 3 of them"),
    (checks_in_loop, np.array([1.0, 11.0, 2.0]), ValueError, "too large"),
    (nested_check, np.array([1.0, 11.0, 2.0]), ValueError, "big"),
    (check_then_return, np.array([1.0, -1.0, 2.0]), ValueError, "negative"),
    (custom_error, np.array([1.0, -1.0]), KeyError, "a built-in one"),
])
def test_run_time_check_raises_for_bad_data(f, bad, exc, message):
    good = np.abs(bad) / 100.0 + 0.5
    for transform in (ad.grad(f), ad.value_and_grad(f)):
        transform(good)  # compiled, and runs
        with pytest.raises(exc, match=re.escape(message)):
            transform(bad)
    with pytest.raises(exc, match=re.escape(message)):
        ad.jvp(f)(bad, tangents=np.ones_like(bad))
    with pytest.raises(exc, match=re.escape(message)):
        ad.vjp(f)(bad, cotangent=1.0)
    if f is not custom_error:
        with pytest.raises(exc, match=re.escape(message)):
            ad.hessian(f)(bad)


def test_run_time_check_inside_a_while_loop():
    x = np.array([0.5, -2.0, 1.0])
    g = ad.grad(while_check)
    np.testing.assert_allclose(g(x, 0.1), tape.dynamic_grad(while_check)(x, 0.1))
    with pytest.raises(RuntimeError, match="did not converge"):
        g(x, 1e-300)


def test_numba_backend_falls_back_to_numpy_code_for_a_check():
    pytest.importorskip("numba")
    g = ad.grad(nonnegative, backend="numba")
    x = np.array([0.5, 1.5, 2.0])
    np.testing.assert_allclose(g(x), ad.grad(nonnegative)(x))
    assert "raise ValueError('x must be nonnegative')" in g.source
    with pytest.raises(ValueError, match="x must be nonnegative"):
        g(-x)


def test_run_time_check_is_in_the_generated_code():
    source = ad.grad(nonnegative).specialize(np.ones(3)).source
    assert "if np.any(x < 0):\n        raise ValueError('x must be nonnegative')" in source
    source = ad.grad(asserts_traced).specialize(np.ones(3)).source
    assert "raise AssertionError('positive entries, 3 of them')" in source


# ---- np.errstate ------------------------------------------------------------------------------
def test_errstate_silences_the_generated_code_and_gradients_are_right():
    x = np.array([0.0, 1.0, 2.0])
    g = ad.grad(log_where)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = g(x)
        value, _ = ad.value_and_grad(log_where)(x)
    assert "with np.errstate(divide='ignore', invalid='ignore'):" in g.source
    np.testing.assert_allclose(value, log_where(x))
    y = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(g(y), np.log(y) + 1.0)
    np.testing.assert_allclose(got[1:], np.log(x[1:]) + 1.0)
    with np.errstate(all="raise"):  # the code's own errstate wins over the caller's
        g(x)


def test_errstate_through_forward_mode_and_second_order():
    x = np.array([0.5, 1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, tangent = ad.jvp(log_where)(np.array([0.0, 1.0, 2.0]), tangents=np.ones(3))
        h = ad.hessian(log_where)(x)
        hh = ad.grad(ad.grad(scaled_log))
        hh(2.0, np.array([0.0, 1.0, 2.0]))  # 0/0 on the masked entry: no warning
    np.testing.assert_allclose(tangent, np.sum(np.log([1.0, 2.0]) + 1.0))
    np.testing.assert_allclose(hh(2.0, x), -3.0 / 4.0)
    np.testing.assert_allclose(h, np.diag(1.0 / x))
    assert "np.errstate(" in hh.source


def test_errstate_around_a_return():
    x = np.array([0.25, 1.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(ad.grad(errstate_return)(x), 1.5 * np.sqrt(x))
        ad.grad(errstate_return)(np.array([-1.0, 1.0]))  # nan, silently


def test_errstate_is_dropped_in_cupy_code():
    source = ad.grad(log_where, backend="cupy").specialize(np.ones(4096)).source
    assert "errstate" not in source


def test_errstate_warn_is_taken_and_strict_settings_hint_an_explicit_check():
    x = np.array([0.5, 2.0])
    np.testing.assert_allclose(ad.grad(warn_errstate)(x), 1.0 / x)
    with pytest.raises(ad.CompileError, match=re.escape("np.isfinite")):
        ad.value_and_grad(strict_errstate)(np.array([0.0, 2.0]))


# ---- refused ----------------------------------------------------------------------------------
@pytest.mark.parametrize("f, args, text, message", [
    (bare_raise, (np.ones(2),), "raise", "a bare `raise` re-raises"),
    (raise_from, (np.ones(2),), 'KeyError("k")', "`raise ... from ...` is not supported"),
    (traced_message, (np.ones(2),), "x[0]", "the exception's message reads a traced value"),
    (raise_with_work, (np.ones(2),), 'raise ValueError("negative")',
     "this `raise` runs only on some paths"),
    (user_error, (np.ones(2),), 'MyError("mine")', "raises a built-in exception only"),
    (other_with, (np.ones(2),), "with np.printoptions", "`with` is not supported"),
    (two_errstates, (np.ones(2),), 'np.errstate(invalid="ignore")',
     "differs from the np.errstate(divide='ignore') before it"),
    (bad_errstate, (np.ones(2),), "np.errstate(", "np.errstate refuses these settings"),
    (strict_errstate, (np.array([0.0, 2.0]),), 'np.errstate(divide="raise")',
     "np.errstate(divide='raise') is not supported"),
])
def test_refused_forms_are_located(f, args, text, message):
    with pytest.raises(ad.CompileError, match=re.escape(message)) as info:
        ad.grad(f)(*args)
    assert text in str(info.value)
    assert "hint:" in str(info.value)
