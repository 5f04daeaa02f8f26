"""Nested ``def`` and ``lambda`` in a compiled function, inlined at each call: closures over
traced values with Python's late binding, default and keyword arguments, lambdas passed to the
user's module-level helpers, calls in loops and branches, Python's scoping, module-level
lambdas (alone and in dicts and tuples), ``functools.partial`` objects and functions passed as
arguments, an ``if`` or loop whose nested def's ``return`` and names are its own, every transform,
the generated source, the CLI, and each refused form's located error. Gradients are checked
against finite differences and the dynamic tape."""

import functools
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.tape import dynamic_grad

from tests.helpers import check_grads

RNG = np.random.default_rng(16)
X = RNG.normal(size=4)
W = RNG.normal(size=(2, 4, 4)) * 0.5
Y = RNG.normal(size=(3, 4))
H = RNG.normal(size=(3, 4))


# ---- the functions compiled -------------------------------------------------------------------
def loss(W, x, y):
    def layer(h, w):
        return np.tanh(h @ w)
    act = lambda z: np.maximum(z, 0.0)  # noqa: E731
    h = act(layer(x, W[0]))
    sq = lambda r: r * r  # noqa: E731
    return np.mean(sq(h @ W[1] - y))


def apply(f, x):
    return f(x)


def twice(f, x):
    return f(f(x))


def passes_lambda(x):
    return np.sum(apply(lambda v: v * 2.0, x) ** 2) + np.sum(twice(np.sin, x))


def passes_closure(x, W):
    layer = lambda h: np.tanh(W[0] @ h)  # noqa: E731
    return np.sum(twice(layer, x) ** 2)


def reads_traced(x, W):
    def layer(h):
        return np.tanh(W[1] @ h) * scale
    scale = np.sum(x * x)   # bound after the def, before the call: read at the call
    return np.sum(layer(x) ** 2)


def late_binding(x):
    s = 2.0
    f = lambda v: v * s  # noqa: E731
    s = np.sin(x)           # the call reads this `s`, not 2.0
    return np.sum(f(x) ** 2)


def defaults(x):
    k = 3.0
    g = lambda v, k=k: v * k  # noqa: E731  (k=3.0, evaluated at the definition)
    k = 100.0

    def h(v, *, power=2, shift=np.sum(x)):
        return v ** power + shift
    return np.sum(g(x) + g(x, k=2.0) + g(k=0.5, v=x)) + np.sum(h(x) + h(x, power=3))


def star_args(x):
    def total(*parts, scale=1.0):
        return sum(parts) * scale
    return np.sum(total(x, x * x, np.sin(x), scale=0.5))


def in_for_loop(x):
    def step(v):
        return np.sin(v) * c + v * 0.5
    c = 1.5
    for i in range(3):
        x = step(x)
    return np.sum(x)


def reads_carried(x):
    acc = x
    f = lambda v: v * acc  # noqa: E731
    for i in range(3):
        acc = f(x) * 0.5   # each call reads the current `acc`, carried by the loop
    return np.sum(acc)


def in_branch(x):
    double = lambda v: v * 2.0  # noqa: E731
    if np.sum(x) > 0.0:
        y = double(x)
    else:
        y = np.sin(x)
    return np.sum(y * x)


def def_in_branch(x):
    if x[0] > 0.0:
        def f(v):
            return v * 2.0
    else:
        def f(v):
            return np.exp(v)
    return np.sum(f(x))


def own_locals(x):
    s = np.sin(x)

    def f(v):
        s = v * 3.0         # f's own `s`, as in Python: the outer one is untouched
        return s * s
    t = f(x)
    return np.sum(s * t)


def makes_scale(k):
    return lambda v: v * k


def from_helper(x):
    double = makes_scale(2.0)
    return np.sum(double(x) * makes_scale(np.sum(x))(x))


def in_comprehension(x):
    fs = [lambda v, k=k: v * k for k in range(1, 4)]
    return np.sum(sum(f(x) for f in fs) ** 2)


def called_in_comprehension(x):
    return np.sum(sum((lambda v: v * k)(x) for k in range(1, 4)) ** 2)


def nested_twice(x):
    a = 2.0

    def outer(v):
        b = v * a

        def inner(w):
            return np.sin(w * b) + a
        return inner(v)
    a = 3.0
    return np.sum(outer(x))


def immediately_called(x):
    return np.sum((lambda v: np.exp(v))(x))


def bare_call_writes(x):
    y = np.zeros(4)

    def put(v):
        y[0] = np.sum(v * v)   # writes the enclosing function's array, as NumPy does
    put(x)
    return np.sum(y * x)


# ---- module-level lambdas, tables of them, partials, functions passed as arguments ------------
relu = lambda z: np.maximum(z, 0.0)  # noqa: E731
ACTS = {
    "relu": lambda z: np.maximum(z, 0.0),
    "sq": lambda z: z * z, "sin": lambda z: np.sin(z) * 2.0,  # one line, two lambdas
}
PAIR = (lambda z: z * 3.0, np.tanh)


def dense(h, w, scale=1.0):
    return np.tanh(h * w) * scale


def softsign(z):
    return z / (1.0 + z * z)


HALF_TANH = functools.partial(dense, w=2.0, scale=0.5)
ROW_LAYER = functools.partial(dense, w=W[0, 0])   # an array fixed: a constant of the graph


def module_lambda(x):
    return np.sum(relu(x) * x)


def lambda_table(x):
    return np.sum(ACTS["sq"](x) + ACTS["sin"](x) + PAIR[0](x) * PAIR[1](x))


def uses_partials(x):
    return np.sum(HALF_TANH(x) + ROW_LAYER(x, scale=3.0))


def takes_act(x, act):
    return np.sum(act(x) * x)


def act_of_act(x, act):
    return np.sum(apply(act, x) + apply(relu, x))


# ---- an `if` defining a nested def: its `return` is not the branch's ------------------------
def scale_into(y, x):
    s = x
    if np.sum(x) > 0.0:
        def double(v):
            return v * 2.0
        s = double(x)
    y[0] = np.sum(s * s)    # after the `if`, once: not inside each branch


def fills(x):
    y = np.zeros(4)
    scale_into(y, x)
    return np.sum(y * x)


def no_effect(x):
    if np.sum(x) > 0.0:
        def double(v):
            return v * 2.0
        x = double(x)       # rebinds the helper's own `x`: no effect, no value returned


def calls_no_effect(x):
    no_effect(x)
    return np.sum(np.sin(x))


def after_def_in_branch(x):
    if np.sum(x) > 0.0:
        def double(v):
            return v * 2.0
        x = double(x)
    y = np.exp(x)
    return np.sum(np.sin(y) * y)


def nested_own_alias(x):
    y = x * 1.0
    z = y
    for i in range(3):
        def g(v):
            y = v * 2.0     # g's own `y`: the loop neither carries nor updates the outer one
            y *= 0.25
            return y
        x = g(x) + z
    return np.sum(x * y)


# ---- Python's scopes around a nested function: a comprehension's names are its own -----------
def closure_outside_comprehension(x):
    w = x[1]

    def layer(h):
        return h * w        # the function's `w`: the generator's `w` is the generator's own
    return sum(layer(x[0]) for w in [10.0, 20.0])


def lambda_outside_comprehension(x):
    i = x[2]
    f = lambda: i * 2.0  # noqa: E731
    return sum([f() * x[j] + x[i] for i in range(3) for j in range(2)])


def defined_in_outer_comprehension(x):
    """The lambda reads the outer comprehension's `i`, not the inner one's it is called in."""
    ys = [[g() * x[0] for i in range(10, 12)] for i in range(1, 3) for g in [lambda: i * x[1]]]
    return sum(sum(row) for row in ys)


def called_through_another(x):
    w = x[1]
    g = lambda: w * w  # noqa: E731

    def f(v):
        return v * g()      # g, called from f, still reads the function's `w`
    return sum(f(x[w]) for w in range(3))


def default_binds_comprehension_variable(x):
    fs = [lambda v, k=i: v * k for i in range(3)]   # the default binds `i`: no late binding
    return sum(g(x[0]) for g in fs)


def own_comprehension_variable(x):
    fs = [lambda v: v * sum(j for j in range(3)) for j in range(2)]   # its own `j`
    return fs[0](x[0]) + fs[1](x[1])


# ---- an array default is the array itself: later in-place writes show through it --------------
def default_written_after(x):
    y = np.zeros_like(x)

    def h(v, a=y):
        return np.sum(a) * v
    y[0] = x[0]
    return h(x[1])


def default_updated_in_place(x):
    y = np.zeros_like(x)
    k = lambda v, a=(y, 1.0): np.sum(a[0] * v) + a[1]  # noqa: E731
    y += x * x
    return k(2.0) + k(1.0, a=(x, 0.5))


def default_written_by_its_function(x):
    y = np.zeros_like(x)

    def h(v, a=y):
        a[0] = a[0] + v     # the default persists between calls, as in Python
        return np.sum(a * x)
    return h(x[0]) + h(x[1]) * y[0]


SCOPES = [closure_outside_comprehension, lambda_outside_comprehension,
          defined_in_outer_comprehension, called_through_another,
          default_binds_comprehension_variable, own_comprehension_variable,
          default_written_after, default_updated_in_place, default_written_by_its_function]


CASES = [
    (module_lambda, (X,), (0,)),
    (lambda_table, (X,), (0,)),
    (uses_partials, (X,), (0,)),
    (takes_act, (X, np.sin), (0,)),
    (takes_act, (X, softsign), (0,)),
    (takes_act, (X, relu), (0,)),
    (takes_act, (X, lambda z: np.exp(z) * 0.5), (0,)),
    (takes_act, (X, HALF_TANH), (0,)),
    (act_of_act, (X, lambda z: z * z), (0,)),
    (calls_no_effect, (X,), (0,)),
    (after_def_in_branch, (np.abs(X),), (0,)),
    (after_def_in_branch, (-np.abs(X),), (0,)),
    (nested_own_alias, (X,), (0,)),
    (loss, (W, H, Y), (0, 1)),
    (passes_lambda, (X,), (0,)),
    (passes_closure, (X, W), (0, 1)),
    (reads_traced, (X, W), (0, 1)),
    (late_binding, (X,), (0,)),
    (defaults, (X,), (0,)),
    (star_args, (X,), (0,)),
    (in_for_loop, (X,), (0,)),
    (reads_carried, (X,), (0,)),
    (in_branch, (np.abs(X),), (0,)),
    (in_branch, (-np.abs(X),), (0,)),
    (def_in_branch, (np.abs(X),), (0,)),
    (def_in_branch, (-np.abs(X),), (0,)),
    (own_locals, (X,), (0,)),
    (from_helper, (X,), (0,)),
    (in_comprehension, (X,), (0,)),
    (immediately_called, (X,), (0,)),
    (called_in_comprehension, (X,), (0,)),
    (nested_twice, (X,), (0,)),
    *[(f, (X,), (0,)) for f in SCOPES],
]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[f"{c[0].__name__}{k}"
                                                      for k, c in enumerate(CASES)])
def test_gradient_matches_differences_and_tape(f, args, wrt):
    grads = check_grads(f, *args, wrt=wrt, rtol=1e-5, atol=1e-6)
    for g, t in zip(grads, dynamic_grad(f, wrt=wrt)(*args)):
        np.testing.assert_allclose(g, t, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f", SCOPES, ids=[f.__name__ for f in SCOPES])
def test_values_follow_pythons_scopes(f):
    """The value is Python's own: a comprehension running at a call does not rebind the names
    a function defined outside it reads, and an array default sees in-place writes."""
    assert ad.value_and_grad(f)(X)[0] == pytest.approx(f(X.copy()), rel=1e-12, abs=1e-12)


def test_writes_through_a_closure():
    """``y[0] = ...`` inside the nested def writes the enclosing function's ``y``."""
    check_grads(bare_call_writes, X, rtol=1e-5, atol=1e-6)
    expected = np.sum(X * X) * X[0]
    assert ad.value_and_grad(bare_call_writes)(X)[0] == pytest.approx(expected, rel=1e-12)


def test_a_function_argument_keys_the_compiled_code_by_identity():
    """Each function passed compiles its own code; ``grad(takes_act)`` differentiates
    ``takes_act`` (named so in the source), the function only inlined."""
    g = ad.grad(takes_act)
    np.testing.assert_allclose(g(X, np.sin), np.sin(X) + X * np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(g(X, lambda z: z * z), 3 * X * X, rtol=1e-12)
    np.testing.assert_allclose(g(X, lambda z: z * 3.0), 6 * X, rtol=1e-12)
    source = g.specialize(X, relu).source
    assert source.startswith("def grad_takes_act(x, act):"), source
    assert "lambda" not in source, source


def test_a_lambda_without_source_is_refused():
    namespace = {}
    exec("f = lambda z: z * 2.0", namespace)
    with pytest.raises(ad.CompileError, match="cannot read the source of this lambda"):
        ad.grad(takes_act)(X, namespace["f"])


def test_an_if_defining_a_def_is_not_an_if_that_returns():
    """The nested def's ``return`` is its own: the statements after the ``if`` run once, after
    it (were they the continuation of each branch, ``y[0] = ...`` would be an update inside a
    block, refused, and a helper returning nothing would not return on every path)."""
    for x in (np.abs(X), -np.abs(X)):
        check_grads(fills, x, rtol=1e-5, atol=1e-6)
        s = x * 2.0 if np.sum(x) > 0.0 else x
        assert ad.value_and_grad(fills)(x)[0] == pytest.approx(np.sum(s * s) * x[0], rel=1e-12)
    source = ad.grad(after_def_in_branch).specialize(X).source
    assert "\n    y = np.exp(x)\n" in source and "y_1" not in source, source  # once, after


def test_late_binding_reads_the_value_at_the_call():
    """``f(x) = x * sin(x)`` (the rebound `s`), not ``2 * x``."""
    np.testing.assert_allclose(ad.grad(late_binding)(X),
                               2 * X * np.sin(X) * (np.sin(X) + X * np.cos(X)), rtol=1e-12)
    assert ad.value_and_grad(defaults)(X)[0] == pytest.approx(defaults(X), rel=1e-12)


def test_value_and_grad_jvp_hessian():
    value, (dW, dh) = ad.value_and_grad(loss, wrt=(0, 1))(W, H, Y)
    assert value == pytest.approx(loss(W, H, Y), rel=1e-12)
    tW, th = dynamic_grad(loss, wrt=(0, 1))(W, H, Y)
    np.testing.assert_allclose(dW, tW, rtol=1e-10)
    np.testing.assert_allclose(dh, th, rtol=1e-10)
    t = RNG.normal(size=4)
    value, tangent = ad.jvp(late_binding, wrt=0)(X, tangents=t)
    assert value == pytest.approx(late_binding(X), rel=1e-12)
    assert tangent == pytest.approx(ad.grad(late_binding)(X) @ t, rel=1e-10)
    Hs = ad.hessian(late_binding)(X)
    eps = 1e-6
    numeric = np.stack([(ad.grad(late_binding)(X + eps * e) - ad.grad(late_binding)(X - eps * e))
                        / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(Hs, numeric, rtol=1e-5, atol=1e-6)


def test_source_reads_as_the_inlined_bodies():
    source = ad.grad(loss).specialize(W, H, Y).source
    assert "h = np.maximum(" in source, source          # the user's own name
    assert "# grad of: r * r" in source, source          # the lambda's body
    assert "# grad of: return np.tanh(h @ w)" in source, source
    assert "lambda" not in source.split("# grad of")[0], source


def test_cli_compiles_nested_functions(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent("""
        import numpy as np
        import adcompiler as ad


        def apply(f, x):
            return f(x)


        @ad.grad
        def loss(w, x):
            def layer(h):
                return np.tanh(h * w)
            s = 2.0
            scale = lambda v: v * s
            s = 0.5
            return np.sum(scale(apply(lambda v: v * v, layer(x))))
    """).lstrip())
    done = subprocess.run([sys.executable, "-m", "adcompiler", "compile", str(path),
                           "--shape", "w=4", "--shape", "x=4"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "ADCOMPILER_CACHE": "0"})
    assert done.returncode == 0, done.stderr
    namespace = {}
    exec(compile((tmp_path / "model_grad.py").read_text(), "model_grad.py", "exec"), namespace)
    w, x = RNG.normal(size=4), RNG.normal(size=4)
    t = np.tanh(x * w)
    np.testing.assert_allclose(namespace["grad_loss"](w, x), 0.5 * 2 * t * (1 - t * t) * x,
                               rtol=1e-12)


# ---- refused forms ------------------------------------------------------------------------------
def recursive(x):
    def f(v):
        return f(v * 0.5)
    return np.sum(f(x))


def mutually_recursive(x):
    even = lambda v: odd(v)  # noqa: E731
    odd = lambda v: even(v)  # noqa: E731
    return np.sum(even(x))


def escapes(x):
    g = lambda v: v * x  # noqa: E731
    return g


def decorated(x):
    @staticmethod
    def f(v):
        return v
    return np.sum(f(x))


def uses_nonlocal(x):
    s = 1.0

    def f(v):
        nonlocal s  # noqa: F824
        return v * s
    return np.sum(f(x))


def uses_global(x):
    def f(v):
        global X  # noqa: F824
        return v
    return np.sum(f(x))


def keyword_dict(x):
    f = lambda v, **options: v  # noqa: E731
    return np.sum(f(x))


def wrong_call(x):
    f = lambda v: v  # noqa: E731
    return np.sum(f(x, x))


def unbound_in_nested(x):
    s = 1.0

    def f(v):
        t = s * v  # noqa: F823  (f's own `s`, assigned below: Python's UnboundLocalError)
        s = 2.0  # noqa: F841
        return t
    return np.sum(f(x))


def free_before_bound(x):
    f = lambda v: v * s  # noqa: E731
    t = f(x)
    s = 2.0
    return np.sum(t)


def after_comprehension(x):
    fs = [lambda v: v * k for k in range(1, 4)]
    return np.sum(fs[0](x))


def default_written_in_loop(x):
    y = np.zeros(4)

    def h(v, a=y):
        return np.sum(a * v)
    for i in range(4):
        y[i] = x[i]         # a loop carries names, not the array a default holds
    return h(2.0)


def traced_choice(x):
    if np.sum(x) > 0.0:
        f = lambda v: v * 2.0  # noqa: E731
    else:
        f = lambda v: v * 3.0  # noqa: E731
    return np.sum(f(x))


REFUSED = [
    (relu, 0, "lambda", "this is a lambda; adcompiler compiles `def` functions (a lambda can "
     "be called inside one)"),
    (recursive, 2, "f(v * 0.5)", "`f` calls itself: a recursive nested function cannot be "
     "inlined"),
    (mutually_recursive, 2, "even(v)", "this lambda calls itself"),
    (escapes, 1, "lambda v: v * x", "this lambda is returned from the compiled function"),
    (decorated, 1, "staticmethod", "a decorator on a nested `def` is not supported"),
    (uses_nonlocal, 4, "nonlocal s", "`nonlocal` is not supported"),
    (uses_global, 2, "global X", "`global` is not supported"),
    (keyword_dict, 1, "options", "`**kwargs` parameters are not supported in a nested function"),
    (wrong_call, 2, "f(x, x)", "TypeError: this lambda: too many positional arguments"),
    (unbound_in_nested, 4, "s", "local variable `s` is read before it is assigned"),
    (free_before_bound, 1, "s", "`s` is read before `free_before_bound` assigns it"),
    (traced_choice, 5, "f", "`f` is the lambda of line"),
    (after_comprehension, 2, "fs[0](x)", "this lambda reads `k`, the variable of the "
     "comprehension defining it, which has ended"),
    (default_written_in_loop, 4, "a", "`a` shares memory with `y`, which `y[i] = x[i]` "
     "(line"),
]


@pytest.mark.parametrize("f, offset, construct, message", REFUSED,
                         ids=[case[0].__name__ for case in REFUSED])
def test_refused_forms_are_located_errors(f, offset, construct, message):
    lineno = f.__code__.co_firstlineno + offset
    with open(__file__) as file:
        line = file.read().splitlines()[lineno - 1]
    col = line.index(construct) + 1
    where = re.escape(f"{os.path.basename(__file__)}:{lineno}:{col}: error: {message}")
    with pytest.raises(ad.CompileError, match=where) as info:
        ad.grad(f)(X)
    assert os.path.samefile(info.value.filename, __file__)
    assert str(info.value).split("\n")[2].strip() == "^" * len(construct), str(info.value)
