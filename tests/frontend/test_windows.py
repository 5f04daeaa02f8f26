"""Windows that move with a loop counter (``x[t - 1:t + 2]``):
adcompiler/frontend/expressions/windows.py.

Each gradient is checked against finite differences and the dynamic tape; each refusal names
the user's line and says why.
"""

import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.tape import dynamic_grad
from tests.helpers import assert_matches_numerical, numerical_grad
from tests.cli.test_cli import adcompiler as run_cli, import_path, write

RNG = np.random.default_rng(7)
X = RNG.normal(size=8)
W = RNG.normal(size=3)
M = RNG.normal(size=(4, 7))


def stencil(x, w):
    s = 0.0
    for t in range(1, x.shape[0] - 1):
        s = s + np.sum(x[t - 1:t + 2] * w) ** 2
    return s


def strided(x, w):
    s = 0.0
    for t in range(x.shape[0] - 4):
        s = s + np.sum(np.tanh(x[t:t + 5:2]) * w)
    return s


def backwards(x, w):
    s = 0.0
    for t in reversed(range(x.shape[0] - 2)):
        s = s * 0.5 + np.sum(x[t:t + 3] * w)
    return s


def written(x, w):
    y = np.zeros_like(x)
    for t in range(x.shape[0] - 1):
        y[t:t + 2] += x[t] * w[0]
    return np.sum(y * y)


def patches(m, w):
    s = 0.0
    for i in range(m.shape[0] - 1):
        for j in range(0, m.shape[1] - 2, 2):
            s = s + np.sum(np.tanh(m[i:i + 2][:, j:j + 3]) * w)
    return s


def ellipsis(m, w):
    s = 0.0
    for j in range(m.shape[1] - 2):
        s = s + np.sum(m[..., j:j + 3] @ w)
    return s


def convolution(x, w):
    s = 0.0
    for t in range(x.shape[0] - 4):
        s = s + np.sum(w * x[t:t + 5]) ** 2
    return s


CASES = [(stencil, (X, W)), (strided, (X, W)), (backwards, (X, W)), (written, (X, W)),
         (patches, (M, W)), (ellipsis, (M, W)), (convolution, (X, RNG.normal(size=5)))]


@pytest.mark.parametrize("f, args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_gradients_of_moving_windows(f, args):
    saved = [a.copy() for a in args]
    grads = ad.grad(f, wrt=(0, 1))(*args)
    assert_matches_numerical(f, args, (0, 1), grads)
    for got, want in zip(grads, dynamic_grad(f, wrt=(0, 1))(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_equal(args, saved)


def test_a_window_reads_as_an_index_of_fixed_width():
    g = ad.grad(stencil, wrt=(0, 1))
    g(X, W)
    assert "t1 = t - 1 + window" in g.source and "t2 = x[t1]" in g.source
    window = g.specialize(X, W).function.__globals__["window"]
    np.testing.assert_array_equal(window, [0, 1, 2])
    assert "np.array(" not in g.source               # the scatter into dx is in place


def test_second_derivatives_through_a_window():
    h = ad.hessian(stencil, wrt=1)(X, W)
    rows = [x for x in (X[t - 1:t + 2] for t in range(1, X.size - 1))]
    want = sum(2.0 * np.outer(r, r) for r in rows)
    np.testing.assert_allclose(h, want, rtol=1e-12)


# ---- a window's entries never repeat: its adjoint adds with `+=`, not np.add.at ---------------
# (a line such as `dx[saved_2[k_1]] += dt3`: the window's index, read back from its residual)
ADDS_IN_PLACE = re.compile(r"^ *d\w+\[(\.\.\., )?(saved\w*\[\w+\]|t\d+)\] \+= \w+$", re.M)


@pytest.mark.parametrize("f, args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_the_adjoint_of_a_window_adds_in_place(f, args):
    g = ad.grad(f, wrt=(0, 1))
    g(*args)
    assert "np.add.at" not in g.source, g.source
    if f is written:  # `y[w] += v`: the store's adjoint zeroes dy[w] and its read adds dy[w]
        assert "dy_1[saved[t_1]]" in g.source and "dy_1[saved" not in g.source.replace(
            "dt2 = dy_1[saved[t_1]]", "")  # back: dy passes through untouched
    else:
        assert ADDS_IN_PLACE.search(g.source), g.source
    assert "_last_writes" not in g.source            # a store into a window keeps every write


def test_a_convolutions_gradient_reads_as_written_by_hand():
    g = ad.grad(convolution, wrt=(0, 1))
    g(X, CASES[-1][1][1])
    assert "        t1 = t + window\n        t2 = x[t1]\n" in g.source
    assert "        saved_2[t] = t1\n" in g.source
    assert "        dx[saved_2[t_1]] += dt3\n" in g.source


def repeated(x, w):
    idx = np.array([0, 0, 1])
    return np.sum(x[idx] * w) ** 2


def repeated_beside_a_window(x, w, idx):
    s = 0.0
    for t in range(1, x.shape[0] - 1):
        s = s + np.sum(x[t - 1:t + 2] * w * x[idx])
    return s


def repeated_store(x, w, idx):
    y = np.zeros_like(x)
    for t in range(x.shape[0] - 2):
        y[idx] += x[t:t + 3] * w
    return np.sum(y * y)


IDX = np.array([2, 2, 5])


@pytest.mark.parametrize("f, args", [(repeated, (X, W)), (repeated_beside_a_window, (X, W, IDX)),
                                     (repeated_store, (X, W, IDX))],
                         ids=["constant", "beside_a_window", "store"])
def test_an_index_that_may_repeat_keeps_add_at(f, args):
    g = ad.grad(f, wrt=(0, 1))
    grads = g(*args)
    assert_matches_numerical(f, args, (0, 1), grads)
    for got, want in zip(grads, dynamic_grad(f, wrt=(0, 1))(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    assert re.search(r"np\.add\.at\(d\w+, (const|idx), ", g.source), g.source
    if f is not repeated:                            # ...and only it: the window adds with +=
        assert ADDS_IN_PLACE.search(g.source) and g.source.count("np.add.at") == 1


def test_a_hessian_through_windows_adds_in_place():
    h = ad.hessian(stencil, wrt=0)
    rows = [np.pad(W, (t - 1, X.size - t - 2)) for t in range(1, X.size - 1)]
    np.testing.assert_allclose(h(X, W), sum(2.0 * np.outer(r, r) for r in rows), rtol=1e-12)
    assert "np.add.at" not in h.source and "_last_writes" not in h.source
    assert ADDS_IN_PLACE.search(h.source), h.source


@pytest.mark.parametrize("f, args", [(written, (X, W)), (patches, (M, W))],
                         ids=["written", "patches"])
def test_hessians_of_window_programs_match_differences_of_the_gradient(f, args):
    h = ad.hessian(f, wrt=0)
    got = h(*args)
    grad = ad.grad(f, wrt=0)
    x = args[0]
    for i in np.ndindex(x.shape):
        column = numerical_grad(lambda *a: grad(*a)[i], args, 0)
        np.testing.assert_allclose(got[i], column, rtol=1e-5, atol=1e-6)
    assert "np.add.at" not in h.source


def test_the_standalone_module_adds_in_place_too(tmp_path):
    path = write(tmp_path, "conv.py", """
        import numpy as np
        import adcompiler as ad


        @ad.grad(wrt=("x", "w"))
        def conv(x, w):
            s = 0.0
            for t in range(x.shape[0] - 4):
                s = s + np.sum(w * x[t:t + 5]) ** 2
            return s


        def example_conv():
            return np.linspace(-1.0, 1.0, 12), np.array([0.5, -1.0, 2.0, 0.25, 1.5])
    """)
    done = run_cli("compile", path, "-o", tmp_path / "conv_grad.py")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "conv_grad.py").read_text()
    assert "np.add.at" not in text and ADDS_IN_PLACE.search(text), text
    x, w = np.linspace(-1.0, 1.0, 12), np.array([0.5, -1.0, 2.0, 0.25, 1.5])
    got = import_path(tmp_path / "conv_grad.py").grad_conv(x, w)
    for g, want in zip(got, ad.grad(convolution, wrt=(0, 1))(x, w)):
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)


def test_a_window_read_is_a_view_as_numpys_slice_is():
    def scaled_in_place(x):
        y = x * 1.0
        s = 0.0
        for t in range(x.shape[0] - 1):
            v = y[t:t + 2]
            v *= 2.0
            s = s + np.sum(y)
        return s

    with pytest.raises(ad.CompileError) as err:
        ad.grad(scaled_in_place)(X)
    assert "`y` shares memory with `v`, which `v *= 2.0`" in str(err.value)


def grows(x):
    s = 0.0
    for t in range(1, x.shape[0]):
        s = s + np.sum(x[:t])
    return s


def wraps(x):
    s = 0.0
    for t in range(x.shape[0] - 1):
        s = s + np.sum(x[t - 1:t + 1])
    return s


def runs_past_the_end(x):
    s = 0.0
    for t in range(x.shape[0]):
        s = s + np.sum(x[t:t + 2])
    return s


def two_windows(m):
    s = 0.0
    for i in range(m.shape[0] - 1):
        s = s + np.sum(m[i:i + 2, i:i + 2])
    return s


def traced_step(x):
    s = 0.0
    for t in range(1, 3):
        s = s + np.sum(x[0:4:t])
    return s


def while_counter(x):
    s = 0.0
    n = 0
    while n < 3:
        s = s + np.sum(x[n:n + 2])
        n = n + 1
    return s


@pytest.mark.parametrize("f, arg, message, line", [
    (grows, np.linspace(0.0, 1.0, 1002),   # past the unrolling limit (frontend/statements/unrolled.py)
     "this slice's length changes from one iteration to the next", "x[:t]"),
    (wraps, X, "this window runs from -1 to 7 over the loop, outside the axis of length 8",
     "x[t - 1:t + 1]"),
    (runs_past_the_end, X, "runs from 0 to 9 over the loop, outside the axis of length 8",
     "x[t:t + 2]"),
    (two_windows, M, "must be the only index here other than plain slices", "m[i:i + 2, i:i + 2]"),
    (traced_step, X, "a moving slice's step must be a positive Python int", "x[0:4:t]"),
    (while_counter, X, "a slice bound must be known when compiling", "x[n:n + 2]"),
])
def test_windows_that_cannot_compile_say_why(f, arg, message, line):
    with pytest.raises(ad.CompileError) as err:
        ad.grad(f)(arg)
    text = str(err.value)
    assert message in text
    assert "test_windows.py" in text and line in text and "^" in text


def test_a_growing_slice_within_the_unrolling_limit_compiles():
    x = np.linspace(0.0, 1.0, 8)
    np.testing.assert_allclose(ad.grad(grows)(x), np.arange(7.0, -1.0, -1.0) * (x > -1))
