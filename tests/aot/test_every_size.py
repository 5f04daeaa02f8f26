"""A module ``adcompiler compile`` writes works at every size its function works for.

Compiled at realistic example sizes (a batch of 300 and 128 hidden units, a sequence of 100
steps, 5,000 samples, 300,000 elements), above the fusion, memory-planning and numexpr
thresholds, each workload gets one body for any sizes: ahead of time the size-dependent
decisions are the same for every size (:mod:`adcompiler.ir.sizing`), so the code compiled for
the merge's sample sizes agrees. (Before, the MLP at this batch compiled per shape and refused a
batch of 50: its buffers were planned at some sample sizes only.) The module, imported where
adcompiler cannot be imported, is called at sizes it was not compiled with, below and above each
threshold, and must give the unoptimised gradient's values (no fusion, buffers or numexpr). A
call with inconsistent sizes names the two parameters' sizes; a module-level value computed by
code says why compiling cannot read it and what to write instead.
"""

import re

import numpy as np

import adcompiler as ad
from adcompiler.backends import numexpr_chains, planner
from adcompiler.backends.check_modes import unoptimised
from adcompiler.passes import fuse
from tests.cli.test_cli import COUNT_SLOW, adcompiler, import_path, run_isolated, write
from tests.helpers import assert_close_normwise

RNG = np.random.default_rng(30)

WORKLOADS = '''
    import numpy as np

    import adcompiler as ad


    @ad.value_and_grad(wrt=("W1", "b1", "W2", "b2"))
    def mlp(W1, b1, W2, b2, x, onehot):
        h = np.tanh(x @ W1 + b1)
        logits = h @ W2 + b2
        shifted = logits - np.max(logits, axis=1, keepdims=True)
        logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
        return -np.mean(np.sum(onehot * logp, axis=1))


    def example_mlp():
        rng = np.random.default_rng(0)
        x = rng.standard_normal((300, 16))
        onehot = np.eye(4)[rng.integers(0, 4, size=300)]
        return (rng.standard_normal((16, 128)) * 0.1, np.zeros(128),
                rng.standard_normal((128, 4)) * 0.1, np.zeros(4), x, onehot)


    @ad.grad(wrt=("Wx", "Wh"))
    def rnn(Wx, Wh, xs):
        h = np.zeros(Wh.shape[0])
        total = 0.0
        for t in range(xs.shape[0]):
            h = np.tanh(xs[t] @ Wx + h @ Wh)
            total = total + np.sum(h * h)
        return total


    def example_rnn():
        rng = np.random.default_rng(1)
        return (rng.standard_normal((16, 128)) * 0.1, rng.standard_normal((128, 128)) * 0.05,
                rng.standard_normal((100, 16)))


    @ad.grad(wrt=("w", "b"))
    def logistic(w, b, X, y):
        z = X @ w + b
        return np.mean(np.logaddexp(0.0, z) - y * z)


    def example_logistic():
        rng = np.random.default_rng(2)
        X = rng.standard_normal((5000, 16))
        return rng.standard_normal(16) * 0.1, 0.0, X, (rng.random(5000) < 0.5) * 1.0


    @ad.grad
    def elementwise(x):
        return np.sum(np.tanh(x) * x ** 2 + np.exp(-x) * (1.0 - x))


    def example_elementwise():
        return (np.random.default_rng(3).standard_normal((600, 500)) * 0.5,)
'''


def normal(*shape, scale=1.0):
    return RNG.standard_normal(shape) * scale


def mlp_args(batch, hidden):
    onehot = np.eye(4)[RNG.integers(0, 4, size=batch)]
    return (normal(16, hidden, scale=0.1), normal(hidden), normal(hidden, 4, scale=0.1),
            normal(4), normal(batch, 16), onehot)


def flat(result) -> list:
    """A gradient's arrays in order: value_and_grad's ``(value, (dW1, db1...))`` flattened."""
    if isinstance(result, tuple):
        return [a for r in result for a in flat(r)]
    return [np.asarray(result)]


def compare_calls(directory, cases, module="workloads_grad", normwise=None):
    """Run every ``(call, args, expected)`` on the module in one isolated process (no
    adcompiler there); each call must take its guard, never ``_dispatch``, and give
    ``expected`` to 1e-12 (``normwise``: each array's largest error at most that times its
    largest entry, where an entry is a sum that cancels)."""
    np.savez(directory / "cases.npz", *[a for _, args, _ in cases for a in args])
    spec = [(call, [type(a).__name__ if isinstance(a, float) else "array" for a in args])
            for call, args, _ in cases]
    run_isolated(COUNT_SLOW + f"""
import numpy as np
data, k, out = np.load("cases.npz"), 0, {{}}
m = counting({module!r})
for i, (call, kinds) in enumerate({spec!r}):
    args = []
    for kind in kinds:
        a = data[f"arr_{{k}}"]
        args.append(float(a) if kind == "float" else a)
        k += 1
    def flat(r):
        return [a for x in r for a in flat(x)] if isinstance(r, tuple) else [np.asarray(r)]
    for j, a in enumerate(flat(getattr(m, call)(*args))):
        out[f"{{i}}_{{j}}"] = a
np.savez("got.npz", **out)
assert slow == [], slow
""", directory)
    got = np.load(directory / "got.npz")
    for i, (call, args, expected) in enumerate(cases):
        expected = flat(expected)
        assert len([k for k in got.files if k.startswith(f"{i}_")]) == len(expected), call
        for j, e in enumerate(expected):
            where = f"{call} at {[np.shape(a) for a in args]}"
            if normwise is not None:
                try:
                    assert_close_normwise(got[f"{i}_{j}"], np.asarray(e), normwise)
                except AssertionError as exc:
                    raise AssertionError(where) from exc
            else:
                np.testing.assert_allclose(got[f"{i}_{j}"], e, rtol=1e-12, atol=1e-14,
                                           err_msg=where)


def reference(gradient, args):
    """The unoptimised gradient (no fusion, no buffers, no numexpr) of the decorated function."""
    transform = ad.value_and_grad if gradient.mode == "value_and_grad" else ad.grad
    with unoptimised():
        return transform(gradient.primal, wrt=gradient.wrt)(*args)


# the elementwise workload's sizes: each threshold's two sides, in elements (fusion's and the
# planner's are both 4,096 float64, where the module's body for small inputs hands over)
ELEMENT_SIZES = [(3, 4), (63, 65), (64, 64), (5, numexpr_chains.MIN_ELEMENTS // 5 - 1),
                 (700, 400)]


def test_thresholds_lie_between_the_sizes_called():
    """The sizes the module is called with below are on both sides of every threshold."""
    counts = [a * b for a, b in ELEMENT_SIZES]
    for threshold in (fuse.MIN_SIZE, planner.MIN_BYTES // 8, numexpr_chains.MIN_ELEMENTS):
        assert min(counts) < threshold < max(counts)


def test_workloads_compiled_at_realistic_sizes_take_every_size(tmp_path):
    path = write(tmp_path, "workloads.py", WORKLOADS)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    for name in ("value_and_grad_mlp", "grad_rnn", "grad_logistic", "grad_elementwise"):
        assert f"{name} (1 signature, any sizes)" in done.stderr, done.stderr
    assert "per shape" not in done.stderr
    text = (tmp_path / "workloads_grad.py").read_text()
    # below the thresholds, a second body with nothing planned or fused (aot.small_bodies):
    # one test on the sizes the first body has read, before its pool
    first = text[text.index("def _grad_elementwise_1("):]
    assert first.index("if d1 * d2 < 4096:\n        return _grad_elementwise_1_small(x)") < \
        first.index(".setdefault(")
    small = text[text.index("def _grad_elementwise_1_small("):]
    small = small[:small.index("\n\n\n")]
    assert "out=" not in small and "_buf" not in small
    user = import_path(path)
    cases = []
    for batch, hidden in ((50, 64), (7, 3), (300, 128), (1200, 200)):   # example: 300, 128
        args = mlp_args(batch, hidden)
        cases.append(("value_and_grad_mlp", args, reference(user.mlp, args)))
    for steps, hidden in ((3, 5), (100, 128), (150, 40)):               # example: 100, 128
        args = (normal(16, hidden, scale=0.1), normal(hidden, hidden, scale=0.05),
                normal(steps, 16))
        cases.append(("grad_rnn", args, reference(user.rnn, args)))
    for n in (10, 4095, 20000):                                         # example: 5000
        args = (normal(16, scale=0.1), 0.25, normal(n, 16), (RNG.random(n) < 0.5) * 1.0)
        cases.append(("grad_logistic", args, reference(user.logistic, args)))
    for shape in ELEMENT_SIZES:                                         # example: 600 x 500
        x = normal(*shape, scale=0.5)
        cases.append(("grad_elementwise", (x,), reference(user.elementwise, (x,))))
    compare_calls(tmp_path, cases)   # every call took its guard, none went to _dispatch


ISSUE_MLP = '''
    import numpy as np
    import adcompiler as ad


    @ad.value_and_grad(wrt=("W1", "b1", "W2", "b2"))
    def loss(W1, b1, W2, b2, x, y):
        h = np.tanh(x @ W1 + b1)
        return np.mean((h @ W2 + b2 - y) ** 2)


    def example_loss():
        rng = np.random.default_rng(0)
        return (rng.standard_normal((2, {hidden})) * 0.1, np.zeros({hidden}),
                rng.standard_normal(({hidden}, 1)) * 0.1, np.zeros(1),
                rng.standard_normal(({batch}, 2)), rng.standard_normal(({batch}, 1)))
'''


def test_an_example_just_below_the_planner_threshold_takes_every_size(tmp_path):
    """The issue's MLP at a batch of 50 and 64 hidden units: its hidden layer (3,200 elements)
    is below the planner's 4,096, while the sizes merged with it (primes above 50 and 64) are
    partly above, so it compiled per shape and refused a batch of 300; now one body takes both."""
    path = write(tmp_path, "mlp.py", ISSUE_MLP.format(batch=50, hidden=64))
    done = adcompiler("compile", path)
    assert done.returncode == 0 and "value_and_grad_loss (1 signature, any sizes)" in \
        done.stderr, done.stderr
    user = import_path(path)
    cases = []
    for batch, hidden in ((50, 64), (300, 64), (8, 32), (1000, 128)):
        args = (normal(2, hidden, scale=0.1), normal(hidden), normal(hidden, 1, scale=0.1),
                normal(1), normal(batch, 2), normal(batch, 1))
        cases.append(("value_and_grad_loss", args, reference(user.loss, args)))
    compare_calls(tmp_path, cases, "mlp_grad")


def test_the_decorator_keeps_its_per_size_code(tmp_path):
    """The option is for ahead of time only: ``ad.grad`` still plans buffers by the sizes it is
    called with (none below MIN_BYTES, ``out=`` above)."""
    user = import_path(write(tmp_path, "workloads.py", WORKLOADS))
    small = user.elementwise.specialize(np.ones((4, 4))).source
    large = user.elementwise.specialize(np.ones((300, 300))).source
    assert "out=" not in small and "_buf" not in small
    assert "out=" in large


def test_inconsistent_sizes_name_the_two_parameters(tmp_path):
    path = write(tmp_path, "workloads.py", WORKLOADS)
    assert adcompiler("compile", path).returncode == 0
    out = run_isolated("""
        import numpy as np, workloads_grad as m
        W1, b1, W2, b2 = np.ones((16, 8)), np.ones(8), np.ones((8, 4)), np.ones(4)
        for x, onehot, b in ((np.ones((50, 15)), np.ones((50, 4)), b1),
                             (np.ones((50, 16)), np.ones((49, 4)), b1),
                             (np.ones((50, 16)), np.ones((50, 4)), np.ones(9))):
            try:
                m.value_and_grad_mlp(W1, b, W2, b2, x, onehot)
            except TypeError as exc:
                print(str(exc).splitlines()[0])
    """, tmp_path).splitlines()
    assert out == [
        "value_and_grad_mlp(): inconsistent sizes: x.shape[1] is 15 but W1.shape[0] is 16, "
        "and the function needs them equal (both are d1)",
        "value_and_grad_mlp(): inconsistent sizes: onehot.shape[0] is 49 but x.shape[0] is 50, "
        "and the function needs them equal (both are d4)",
        "value_and_grad_mlp(): inconsistent sizes: len(b1) is 9 but W1.shape[1] is 8, and the "
        "function needs them equal (both are d2)"]


def test_a_module_level_value_built_by_code_says_why_and_what_to_write(tmp_path):
    path = write(tmp_path, "layer.py", '''
        import numpy as np
        import adcompiler as ad

        rng = np.random.default_rng(0)
        LAYER_W = rng.normal(size=(4, 3))


        @ad.grad
        def f(x):
            return np.sum(np.tanh(x @ LAYER_W))


        def example_f():
            return (np.ones((2, 4)),)
        ''')
    done = adcompiler("compile", path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0] == (
        f"{path}:10:31: error: `LAYER_W` is computed when layer.py runs (line 5: `LAYER_W = "
        "rng.normal(size=(4, 3))`), and compiling reads the file without running it: its value "
        "is not known here")
    assert lines[1:3] == ["    return np.sum(np.tanh(x @ LAYER_W))", " " * 30 + "^" * 7]
    assert lines[3] == (
        "hint: pass `LAYER_W` to the function as a parameter (and return its value from the "
        "example function), or write its value literally at line 5 (numbers, np.pi, "
        "np.array([...]) of numbers, and lists and tuples of those)")


GP = '''
    import numpy as np

    import adcompiler as ad


    @ad.grad(wrt=("theta",))
    def gp_nll(theta, X, y):
        n = X.shape[0]
        sq = np.sum(X * X, axis=1)
        d2 = sq[:, None] + sq[None, :] - 2.0 * (X @ X.T)
        K = np.exp(2.0 * theta[1] - 0.5 * d2 * np.exp(-2.0 * theta[0]))
        K = K + np.exp(2.0 * theta[2]) * np.eye(n)
        L = np.linalg.cholesky(K)
        alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
        return 0.5 * (y @ alpha) + np.sum(np.log(np.diag(L))) + 0.5 * n * 1.8378770664093453


    def example_gp_nll():
        rng = np.random.default_rng(4)
        return np.log([1.0, 1.0, 0.1]), rng.standard_normal((300, 3)), rng.standard_normal(300)
'''


def test_constants_the_function_makes_from_sizes_are_made_by_the_body(tmp_path):
    """``np.eye(n)`` and the positions ``np.diag`` reads are computed while compiling, as
    constants: a 300 x 300 identity could not be written into the module (over 10,000
    elements), and it changes with n. Ahead of time the body makes them (``np.eye(d1)``)."""
    path = write(tmp_path, "gp.py", GP)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    assert "grad_gp_nll (1 signature, any sizes)" in done.stderr, done.stderr
    text = (tmp_path / "gp_grad.py").read_text()
    n = re.search(r"d\d+(?=, d\d+ = X\.shape)", text).group()   # X's first size's symbol
    assert f"const = np.eye({n})" in text and f"np.arange(0, {n} ** 2, {n} + 1)" in text
    user = import_path(path)
    cases = []
    for n in (300, 2, 7, 64, 301):
        args = (np.log([0.7, 1.2, 0.3]), normal(n, 3), normal(n))
        cases.append(("grad_gp_nll", args, reference(user.gp_nll, args)))
    compare_calls(tmp_path, cases, module="gp_grad")


def test_constant_arrays_are_spelled_as_the_calls_that_make_them():
    from adcompiler.backends.constant_exprs import spelled
    cases = [np.eye(5), np.eye(3, dtype=np.float32), np.arange(0, 49, 8), np.arange(7, 1, -2),
             np.arange(4, dtype=np.int32), np.zeros((3, 4)), np.full(6, -2.5),
             np.ones(3, dtype=np.int64), np.array([1.0])]
    for a in cases:
        made = eval(spelled(a), {"np": np})
        assert made.dtype == a.dtype and made.shape == a.shape and np.array_equal(made, a)
    for a in (np.array([1.0, 2.0, 4.0]), np.array([3, 1, 2]), np.eye(3)[::-1].copy(),
              np.array([np.inf, np.inf]), np.zeros(0), np.array([1 + 2j, 1 + 2j])):
        assert spelled(a) is None
