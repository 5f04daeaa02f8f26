"""User names that equal names the generated code makes up: a loop's residual stack (``zs`` for
``z``, ``zss`` for a stack of stacks, ``ks`` for a while loop's counter, ``saved`` for a
temporary), a tangent parameter (``x_dot``), a module-level constant (``const``) or one of the
user's globals (``ys``). Each function is checked against the same function with plain names and
against finite differences, in every mode that emits code (grad, vjp, jvp, the Hessian, grad of
grad, reverse-mode Jacobians, and the standalone module ``adcompiler compile`` writes).

The generated code once gave such a stack the user's name when the user's variable was dead for
the gradient, although the loop still assigned it, so the loop overwrote its own residuals.
"""

import ast
import importlib.util
import textwrap

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import cli
from tests.helpers import assert_matches_numerical, numerical_grad

V = np.array([0.5, 1.0, 0.8, 0.3])
ys = np.array([1.0, 0.5, 0.8, 0.2])      # observations: a global the stack of `y` would shadow


def scalar_accumulator(c):                # `zs` is also the residual stack of `z`
    z = 0.1
    zs = 0.0
    for i in range(3):
        z = z * z + c
        zs = zs + z
    return zs


def scalar_accumulator_plain(c):
    z = 0.1
    total = 0.0
    for i in range(3):
        z = z * z + c
        total = total + z
    return total


def trajectory(r, x0):                    # `xs[i] = x`: the user's record of `x`
    xs = np.zeros(3)
    x = x0
    for i in range(3):
        x = r * x * (1.0 - x)
        xs[i] = x
    return np.sum(xs)


def trajectory_plain(r, x0):
    traj = np.zeros(3)
    x = x0
    for i in range(3):
        x = r * x * (1.0 - x)
        traj[i] = x
    return np.sum(traj)


def with_break(c):                        # `ts`: the stack of the branch predicates
    z = 0.1
    ts = 0.0
    for i in range(4):
        z = z * z + c
        if z > 0.9:
            break
        ts = ts + z
    return ts


def while_counter(c, v):                  # `ks`: the list of the while loop's counter `k`
    z = 0.1
    ks = 0.0
    k = 0
    while k < 4:
        z = z * z + c * v[k]
        if z > 0.3:
            z = z * 0.5
        ks = ks + z
        k += 1
    return ks


def nested(c):                            # `zss`: the stack of the inner loop's `z` stacks
    z = 0.1
    zss = 0.0
    for i in range(2):
        for j in range(2):
            z = z * z + c
            zss = zss + z
    return zss


def saved_in_while(r, x0):                # `saved`: the residuals of temporaries
    saved = np.zeros(50)
    x = x0
    k = 0
    while x > 0.05:
        x = x * r * (1.1 - x)
        saved[k] = x
        k += 1
    return np.sum(saved)


def escape(c):
    z = 0.0
    zs = 0.0
    for i in range(50):
        z = z * z + c
        if abs(z) > 2.0:
            break
        zs = zs + z
    return zs


def h_dot(x):                             # `ys` next to `y`, in a function named like a tangent
    y = 0.0
    ys = 0.0
    for i in range(3):
        y = y * x + 1.0
        ys = ys + y
    return ys


def velocity(x, v):                       # `x_dot`, `x_dot_1`: the tangent parameter's names
    x_dot = v
    x = x + 0.1 * x_dot
    x_dot = x_dot - 0.1 * x
    return x * x_dot


def decay(x):                             # `const`: the name of a constant made while compiling
    const = 1.0
    M = np.eye(2) * 0.5
    y = x
    for i in range(3):
        y = M @ y + const * np.sin(y)
        const = const * 0.9
    return np.sum(y)


def observed(k):                          # the global `ys` is read in the loop stacking `y`
    y = 1.0
    err = 0.0
    for i in range(4):
        y = y - 0.3 * k * y
        err = err + (y - ys[i]) ** 2
    return err


def observed_before(k):                   # ... and read only before the loop
    first = ys[0] * k
    y = 1.0
    for i in range(4):
        y = y - 0.3 * k * y
    return y * first


def generated_names(x):                   # names the emitter makes up: temporaries, buffers
    t1 = np.sin(x)
    _buf0 = x * 2.0
    dx = 0.0
    for i in range(3):
        t1 = np.tanh(t1) * _buf0
        dx = dx + np.sum(t1)
    return np.sum(t1 * t1)


def counter_named_like_an_adjoint(x, a):   # `da`: the gradient of `a`, here a loop counter
    y = x
    da = 0
    while da < 4:
        da = da + 1
        if np.sum(y) > 3.0:
            continue
        y = y + np.sin(y) * a
        if a * da > 0.9:
            break
    return np.sum(y * y)


def counter_named_like_a_tangent(x, a):    # `y_dot`: the tangent of `y`, here a loop counter
    y = x
    y_dot = 0
    while y_dot < 4:
        y_dot = y_dot + 1
        if np.sum(y) > 3.0:
            continue
        y = y + np.sin(y) * a
        if a * y_dot > 0.9:
            break
    return np.sum(y * y)


def builtin_names(x):                      # `reversed`, `int`: builtins the adjoint calls
    reversed = np.sin(x)
    int = 0
    h = x
    while int < 3:
        h = np.tanh(h) * reversed + x[int]
        int = int + 1
    return np.sum(h)


CASES = [(scalar_accumulator, (0.4,)), (trajectory, (3.2, 0.3)), (with_break, (0.4,)),
         (nested, (0.4,)), (saved_in_while, (0.9, 0.8)), (escape, (0.2,)), (h_dot, (0.7,)),
         (velocity, (0.3, 1.0)), (decay, (np.array([0.3, -0.5]),)), (observed, (0.7,)),
         (observed_before, (0.7,)), (generated_names, (np.array([0.3, -0.5, 0.2]),)),
         (counter_named_like_an_adjoint, (np.array([0.3, 0.1]), 0.35)),
         (counter_named_like_a_tangent, (np.array([0.3, 0.1]), 0.35)),
         (builtin_names, (np.array([0.3, 0.5, -0.2, 0.8]),))]
IDS = [f.__name__ for f, _ in CASES]


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_reverse_modes_match_finite_differences(f, args):
    wrt = tuple(range(len(args)))
    grads = ad.grad(f, wrt=wrt)(*args)
    assert_matches_numerical(f, args, wrt, grads, rtol=1e-5)
    for g, h in zip(ad.vjp(f, wrt=wrt)(*args, cotangent=1.0), grads):
        np.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ad.jacobian(f, wrt=0, mode="rev")(*args), grads[0],
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_jvp_agrees_with_the_gradient(f, args):
    wrt = tuple(range(len(args)))
    rng = np.random.default_rng(5)
    tangents = tuple(float(rng.standard_normal()) if isinstance(a, float)
                     else rng.standard_normal(np.shape(a)) for a in args)
    value, tangent = ad.jvp(f, wrt=wrt)(*args, tangents=tangents)
    grads = ad.grad(f, wrt=wrt)(*args)
    expected = sum(float(np.sum(g * t)) for g, t in zip(grads, tangents))
    assert float(tangent) == pytest.approx(expected, rel=1e-10, abs=1e-12)
    assert float(value) == pytest.approx(float(f(*args)), rel=1e-12)


@pytest.mark.parametrize("f, args", [c for c in CASES if isinstance(c[1][0], float)],
                         ids=[f.__name__ for f, a in CASES if isinstance(a[0], float)])
def test_second_derivatives_match_finite_differences(f, args):
    grad = ad.grad(f)
    expected = numerical_grad(lambda *a: grad(*a), args, 0)
    assert ad.hessian(f, wrt=0)(*args) == pytest.approx(expected, rel=1e-5, abs=1e-6)
    assert ad.grad(ad.grad(f))(*args) == pytest.approx(expected, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("f, plain, args", [
    (scalar_accumulator, scalar_accumulator_plain, (0.4,)),
    (trajectory, trajectory_plain, (3.2, 0.3))])
def test_a_name_gives_the_gradient_of_the_same_function_with_another(f, plain, args):
    wrt = tuple(range(len(args)))
    for g, h in zip(ad.grad(f, wrt=wrt)(*args), ad.grad(plain, wrt=wrt)(*args)):
        assert g == h


def test_a_while_loops_counter_list_keeps_its_name_apart():
    grads = ad.grad(while_counter, wrt=(0, 1))(0.4, V)
    assert_matches_numerical(while_counter, (0.4, V), (0, 1), grads, rtol=1e-5)


def test_dead_carried_values_are_not_computed_in_the_gradient():
    """The user's accumulator is not needed by the gradient: no statement assigns it."""
    g = ad.grad(scalar_accumulator)
    g(0.4)
    body = g.source[g.source.index("def grad_"):]
    assert "zs = zs + z" not in body and "zs_1 = zs + z" not in body, body
    g = ad.grad(trajectory)
    g(3.2, 0.3)
    assert "np.zeros((3,))" not in g.source, g.source


def test_a_tangent_parameter_takes_a_name_no_user_value_holds():
    value, tangent = ad.jvp(velocity, wrt="x")(0.3, 1.0, tangents=1.0)
    assert value == pytest.approx(velocity(0.3, 1.0))
    assert tangent == pytest.approx(numerical_grad(velocity, (0.3, 1.0), 0))


def test_module_level_names_never_become_locals():
    """A constant's name (``const``) and the user's globals are read, never assigned, in the
    function: one assignment would make every read of them local."""
    x = np.array([0.3, -0.5])
    for f, args in [(decay, (x,)), (observed, (0.7,)), (observed_before, (0.7,))]:
        g = ad.grad(f)
        grads = (g(*args),)
        assert_matches_numerical(f, args, (0,), grads, rtol=1e-5)
        stored = {n.id for n in ast.walk(ast.parse(g.source))
                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        assert g.constants and not stored & set(g.constants), g.source


STANDALONE = textwrap.dedent('''
        import numpy as np
        import adcompiler


        @adcompiler.grad
        def escape(c):
            z = 0.0
            zs = 0.0
            for i in range(50):
                z = z * z + c
                if abs(z) > 2.0:
                    break
                zs = zs + z
            return zs


        def example_escape():
            return (0.2,)


        @adcompiler.jvp(wrt="x")
        def velocity(x, v):
            x_dot = v
            x = x + 0.1 * x_dot
            x_dot = x_dot - 0.1 * x
            return x * x_dot


        def example_velocity():
            return (0.3, 1.0)


        @adcompiler.grad
        def decay(x):
            const = 1.0
            M = np.eye(2) * 0.5
            y = x
            for i in range(3):
                y = M @ y + const * np.sin(y)
                const = const * 0.9
            return np.sum(y)


        def example_decay():
            return (np.array([0.3, -0.5]),)
''')


def test_the_standalone_module_computes_the_same_derivatives(tmp_path, monkeypatch):
    path = tmp_path / "clashing.py"
    path.write_text(STANDALONE)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cli.main(["compile", str(path)]) == 0
    spec = importlib.util.spec_from_file_location("clashing_grad", tmp_path / "clashing_grad.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.grad_escape(0.2) == pytest.approx(ad.grad(escape)(0.2), rel=1e-12)
    assert module.jvp_velocity(0.3, 1.0, tangents=1.0) == pytest.approx(
        ad.jvp(velocity, wrt="x")(0.3, 1.0, tangents=1.0), rel=1e-12)
    x = np.array([0.3, -0.5])
    np.testing.assert_allclose(module.grad_decay(x), ad.grad(decay)(x), rtol=1e-12)


def cotangent_local(x):
    cotangent = x * 2.0
    return cotangent * x


def test_a_local_named_cotangent_in_a_vjp():
    assert ad.vjp(cotangent_local)(0.3, cotangent=2.0) == pytest.approx(2.0 * 4.0 * 0.3)


STANDALONE_DOT_PARAMETER = textwrap.dedent('''
        import adcompiler


        @adcompiler.jvp(wrt="x")
        def velocity(x, x_dot):
            return x * x_dot + x * x


        def example_velocity():
            return (0.3, 2.0)
''')


def test_a_parameter_named_like_a_tangent_in_the_standalone_module(tmp_path, monkeypatch):
    path = tmp_path / "dotted.py"
    path.write_text(STANDALONE_DOT_PARAMETER)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cli.main(["compile", str(path)]) == 0
    spec = importlib.util.spec_from_file_location("dotted_grad", tmp_path / "dotted_grad.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.jvp_velocity(0.3, 2.0, tangents=1.0) == pytest.approx((0.69, 2.6))


def loop_with_range_parameter(x, range):
    acc = 0.0
    for i in np.arange(3):
        acc = acc + x[i] * range
    return acc


def test_a_parameter_named_like_a_builtin_the_adjoint_calls_is_located():
    with pytest.raises(ad.CompileError, match=r"parameter `range` has the name of a builtin") as info:
        ad.grad(loop_with_range_parameter)(np.ones(3), 2.0)
    assert info.value.lineno == loop_with_range_parameter.__code__.co_firstlineno
