"""The guard chain's two savings (adcompiler/api/fastpath.py, fastpath_inline.py): the user's own
signature (keywords and defaults bound by Python) and the generated body pasted under its guard.
Every case compares values with the generated function itself, or with the gradient by hand."""

from __future__ import annotations

import inspect
import math
import threading

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.api import fastpath
from adcompiler.api.inlining import body_of
from adcompiler.runtime.compile import load_function


def seed_f(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def elementwise(x):
    return np.sum(np.tanh(x) * x + 3.0 * x * x)


def d_elementwise(x):
    t = np.tanh(x)
    return t + x * (1 - t * t) + 6.0 * x


def scaled(x, n=3, s=2.0):
    return np.sum(x ** n) * s


def product(x, y):
    return np.sum(np.sin(x) * y)


def chain_of(g):
    return type(g).__call__


def generated(g, *args):
    """What the generated function for these arguments returns, called directly."""
    return g.specialize(*args).function(*args)


def same(result, expected):
    if isinstance(expected, tuple):
        assert isinstance(result, tuple) and len(result) == len(expected)
        for r, e in zip(result, expected):
            same(r, e)
    else:
        assert type(result) is type(expected)
        np.testing.assert_array_equal(result, expected)


# ---- seed f: the user's signature, the body inlined -------------------------------------------
def test_seed_f_is_inlined_and_identical_to_the_generated_function():
    g = ad.grad(seed_f, wrt=(0, 1))
    first = g(2.0, 5.0)
    chain = chain_of(g)
    assert chain.__inlined__ == (0,)
    assert "_adc_run0" not in chain.__code__.co_names and "math" in chain.__code__.co_names
    assert "math.cos(x2)" in chain.__source__ and chain.__name__ == "seed_f"
    for x1, x2 in [(2.0, 5.0), (0.5, -1.0), (3.0, 0.0), (1e-3, 1e3)]:
        same(g(x1, x2), generated(g, x1, x2))
    assert first == (5.0 + 1.0 / 2.0, 2.0 - math.cos(5.0))


def test_keywords_bind_like_the_function_and_give_the_same_results():
    g = ad.grad(seed_f, wrt=(0, 1))
    expected = generated(g, 2.0, 5.0)
    same(g(x1=2.0, x2=5.0), expected)
    same(g(2.0, x2=5.0), expected)
    same(g(x2=5.0, x1=2.0), expected)
    same(g(2.0, 5.0), expected)


@pytest.mark.parametrize("args, kwargs", [((2.0,), {}), ((2.0, 5.0, 1.0), {}),
                                          ((2.0,), {"y": 5.0}), ((2.0,), {"x1": 5.0}),
                                          ((), {})])
def test_a_wrong_call_raises_pythons_type_error_with_the_functions_name(args, kwargs):
    g = ad.grad(seed_f, wrt=(0, 1))
    g(2.0, 5.0)                                   # the chain now holds a guard
    with pytest.raises(TypeError) as direct:
        seed_f(*args, **kwargs)
    with pytest.raises(TypeError) as through:
        g(*args, **kwargs)
    assert str(through.value) == str(direct.value)
    assert "seed_f()" in str(through.value)


def test_an_error_inside_the_inlined_body_is_the_users_functions_error():
    """The bare generated function divides by zero at x1 = 0.0; through the gradient object
    (inlined body or not) the call raises what seed_f itself raises there: math.log's
    ValueError (adcompiler.api.poles)."""
    g = ad.grad(seed_f, wrt=(0, 1))
    g(2.0, 5.0)
    assert chain_of(g).__inlined__ == (0,)
    with pytest.raises(ZeroDivisionError):
        g.specialize(0.0, 5.0).function(0.0, 5.0)
    for _ in range(2):
        with pytest.raises(ValueError, match="math domain error"):
            g(0.0, 5.0)


# ---- several signatures on one object ---------------------------------------------------------
def test_floats_then_arrays_then_another_shape_then_another_dtype():
    g = ad.grad(elementwise)
    cases = [1.5, np.linspace(-1, 1, 3), np.linspace(-2, 2, 7), -0.25,
             np.linspace(-1, 1, 3).astype(np.float32), np.linspace(0, 1, 12).reshape(3, 4)]
    for _ in range(2):                            # second round: all from the chain
        for x in cases:
            same(g(x), generated(g, x))
            np.testing.assert_allclose(g(x), d_elementwise(x), rtol=1e-5)
    assert len(chain_of(g).__inlined__) >= 4


def test_static_arguments_and_defaults_give_the_same_results():
    g = ad.value_and_grad(scaled)
    x = np.linspace(0.5, 1.5, 4)
    for _ in range(2):
        same(g(x), generated(g, x, 3, 2.0))
        same(g(x, 2), generated(g, x, 2, 2.0))
        same(g(x, s=1.5), generated(g, x, 3, 1.5))
        same(g(s=1.5, x=x, n=2), generated(g, x, 2, 1.5))
        same(g(x, 3, 2.0), generated(g, x, 3, 2.0))
    value, grad = g(x)
    assert value == pytest.approx(np.sum(x ** 3) * 2.0)
    np.testing.assert_allclose(grad, 6.0 * x ** 2)
    assert "n=_adc_default1" in chain_of(g).__source__


# ---- user names like the chain's own ----------------------------------------------------------
def shadow_builtins(type, x):
    return x * x * type


def shadow_old_names(_slow, _run0, _given, _ndarray, x):
    return x * _slow + x * x * _run0 + _given * _ndarray * x


def shadow_chain_names(x, _adc_slow, _adc_type):
    return x * x * _adc_slow + _adc_type * x


def test_parameters_named_like_builtins_and_old_chain_names_keep_the_signature():
    g = ad.grad(shadow_builtins, wrt=(0, 1))
    for _ in range(2):
        same(g(3.0, 2.0), (4.0, 12.0))
        same(g(x=2.0, type=3.0), (4.0, 12.0))
    assert chain_of(g).__inlined__ == (0,)
    h = ad.grad(shadow_old_names, wrt=(0, 1, 2, 3, 4))
    args = (2.0, 3.0, 5.0, 7.0, 1.5)
    for _ in range(2):
        same(h(*args), generated(h, *args))
        same(h(2.0, 3.0, _given=5.0, _ndarray=7.0, x=1.5), generated(h, *args))
    assert h(*args)[4] == pytest.approx(2.0 + 2 * 1.5 * 3.0 + 5.0 * 7.0)


def test_parameters_named_like_the_chains_names_fall_back_to_the_generic_form():
    g = ad.grad(shadow_chain_names, wrt=(0, 1, 2))
    for _ in range(2):
        same(g(2.0, 3.0, 5.0), generated(g, 2.0, 3.0, 5.0))
        same(g(2.0, _adc_type=5.0, _adc_slow=3.0), generated(g, 2.0, 3.0, 5.0))
    chain = chain_of(g)
    assert "rest" in chain.__code__.co_varnames and chain.__inlined__ == ()
    assert "_adc_run0" in chain.__code__.co_names
    assert g(2.0, 3.0, 5.0) == (2 * 2.0 * 3.0 + 5.0, 4.0, 2.0)
    with pytest.raises(TypeError):
        g(2.0)


# ---- other parameter kinds and other transforms -----------------------------------------------
def with_varargs(x, *rest):
    return np.sum(x * x)


def keyword_only(x, *, s=2.0):
    return np.sum(x * x) * s


def test_varargs_and_keyword_only_keep_the_generic_form():
    g = ad.grad(with_varargs)
    assert "rest" in chain_of(g).__code__.co_varnames        # the generic form
    x = np.linspace(0, 1, 3)
    for rest in [(), (np.ones(2),), (1.0, np.ones(2))]:   # `rest` a container: no fast path
        for _ in range(2):
            np.testing.assert_array_equal(g(x, *rest), 2.0 * x)
    k = ad.grad(keyword_only)
    x = np.linspace(0, 1, 3)
    for _ in range(2):
        np.testing.assert_array_equal(k(x), 4.0 * x)
        np.testing.assert_array_equal(k(x, s=3.0), 6.0 * x)
    assert "kwargs" in chain_of(k).__code__.co_varnames
    with pytest.raises(TypeError):
        k(x, 3.0)


def test_value_and_grad_single_is_inlined_and_tuple_wrt_is_packaged():
    x, y = np.linspace(0, 1, 3), np.linspace(1, 2, 3)
    single = ad.value_and_grad(product)
    tupled = ad.value_and_grad(product, wrt=("x", "y"))
    one = ad.grad(product, wrt=("x",))
    for _ in range(2):
        same(single(x, y), generated(single, x, y))
        value, grads = tupled(x, y)
        raw = generated(tupled, x, y)
        same((value, grads), (raw[0], raw[1:]))
        same(one(x, y), (generated(one, x, y),))
    assert chain_of(single).__inlined__ == (0,)
    assert chain_of(tupled).__inlined__ == () and chain_of(one).__inlined__ == ()
    np.testing.assert_allclose(grads[1], np.sin(x))


def vector(x, y):
    return np.sin(x) * y


def test_vjp_keeps_the_generic_form_and_its_results():
    v = ad.vjp(vector, wrt=("x", "y"))
    x, y, c = np.linspace(0, 1, 3), np.linspace(1, 2, 3), np.array([1.0, -2.0, 0.5])
    for _ in range(2):
        gx, gy = v(x, y, cotangent=c)
        np.testing.assert_allclose(gx, np.cos(x) * y * c)
        np.testing.assert_allclose(gy, np.sin(x) * c)
    assert "kwargs" in chain_of(v).__code__.co_varnames
    with pytest.raises(TypeError, match="cotangent"):
        v(x, y)


def cube(x):
    return x * x * x


def test_a_gradient_of_a_gradient_is_inlined():
    gg = ad.grad(ad.grad(cube))
    for _ in range(2):
        assert gg(2.0) == 12.0 and gg(-1.5) == -9.0
    assert chain_of(gg).__inlined__ == (0,)


# ---- generated code with work buffers ---------------------------------------------------------
def test_buffered_code_is_inlined_sharing_its_buffer_list_and_stays_right_across_threads():
    g = ad.grad(elementwise)
    xs = [np.linspace(-1, 1, 50000) * (k + 1) for k in range(4)]
    expected = [d_elementwise(x) for x in xs]
    np.testing.assert_allclose(g(xs[0]), expected[0], rtol=1e-12)
    source = g.source
    assert "_grad_elementwise_buffers" in source
    chain = chain_of(g)
    assert chain.__inlined__ == (0,) and "_grad_elementwise_buffers" in chain.__source__
    module = g._last.function.__globals__
    assert chain.__globals__["_grad_elementwise_buffers"] is module["_grad_elementwise_buffers"]
    for _ in range(5):
        for x, e in zip(xs, expected):
            np.testing.assert_allclose(g(x), e, rtol=1e-12)
    errors, results = [], {}

    def work(k):
        try:
            out = [g(xs[k]) for _ in range(20)]
            results[k] = out
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k, out in results.items():
        for r in out:
            np.testing.assert_allclose(r, expected[k], rtol=1e-12)
    assert len({id(r) for out in results.values() for r in out}) == 80   # no result is reused


def test_a_second_buffered_signature_with_its_own_buffer_list_is_called_not_inlined():
    g = ad.grad(elementwise)
    a, b = np.linspace(-1, 1, 50000), np.linspace(-1, 1, 60000)
    for _ in range(3):
        np.testing.assert_allclose(g(a), d_elementwise(a), rtol=1e-12)
        np.testing.assert_allclose(g(b), d_elementwise(b), rtol=1e-12)
    chain = chain_of(g)
    assert chain.__inlined__ == (0,) and "_adc_run1" in chain.__code__.co_names


def test_numexpr_code_is_not_inlined():
    pytest.importorskip("numexpr")
    g = ad.grad(elementwise)
    x = np.linspace(-1, 1, 300000)
    for _ in range(2):
        np.testing.assert_allclose(g(x), d_elementwise(x), rtol=1e-12)
    if "ne.evaluate" in g.source:
        assert chain_of(g).__inlined__ == ()


# ---- the conditions, one by one ---------------------------------------------------------------
def loaded(source, constants=None, name="f"):
    return load_function(source, name, dict(constants or {})), source


@pytest.mark.parametrize("source", [
    "def f(x):\n    global y\n    y = x\n    return x\n",
    "y = 1.0\n\n\ndef g():\n    global y\n    y = 2.0\n\n\ndef f(x):\n    return x * y\n",
    "def f(x):\n    return (lambda: x)()\n",
    "def f(x):\n    return [x for _ in range(2)][0]\n",
    "def f(x):\n    if x > 0:\n        return x\n",                       # it may fall through
    "def f(x):\n    try:\n        return x\n    finally:\n        pass\n",
    "def f(x):\n    import math\n    return math.sin(x)\n",
    "def f(x):\n    return locals()['x']\n",
    "def f(x, y=1.0):\n    return x * y\n",                              # a default
    "def f(x):\n    s = '''a\nb'''\n    return x\n",                     # a string over lines
])
def test_unusual_bodies_are_refused(source):
    function, text = loaded(source)
    assert body_of(function, text, list(function.__code__.co_varnames[
        :function.__code__.co_argcount])) is None


def test_a_source_that_is_not_what_runs_is_refused():
    function, _ = loaded("def f(x):\n    return x * 2.0\n")
    assert body_of(function, "def f(x):\n    return x * 3.0\n", ["x"]) is None
    assert body_of(function, "def f(x):\n    return x * 2.0\n", ["y"]) is None
    assert body_of(function, "def f(x):\n    return x * 2.0\n", ["x"]) is not None


def test_global_conflicts_and_local_collisions_fall_back_to_a_call():
    first, s1 = loaded("def f(x):\n    return x * K\n", {"K": 2.0})
    second, s2 = loaded("def f(x):\n    return x * K\n", {"K": 3.0})     # K: another object
    reader, s3 = loaded("def f(x):\n    _adc_slow = x\n    return _adc_slow\n")
    f64 = np.dtype(np.float64)
    entries = [((float,), first), ((((2,), f64),), second), ((((3,), f64),), reader)]
    sources = {key: text for (key, _), text in zip(entries, (s1, s2, s3))}
    chain = fastpath.build(1, entries, lambda args, kwargs: "slow", sources=sources,
                           signature=inspect.signature(lambda x: x), name="f")
    assert chain.__inlined__ == (0,)
    assert chain(2.0) == 4.0
    np.testing.assert_array_equal(chain(np.ones(2)), 3.0 * np.ones(2))
    np.testing.assert_array_equal(chain(np.ones(3)), np.ones(3))
    assert chain(x=2.0) == 4.0 and chain(np.ones(4)) == "slow"
