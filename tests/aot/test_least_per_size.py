"""Each size symbol of a shape-polymorphic body has its own least size.

A constant slice bound or index of a parameter (``x[:3]``, ``x[2]``, ``W[:, 4]``) bounds that
parameter's axis only, so the compiled module takes every other input at any size of at least 2
(its example's included, without keeping the example's own body), and refuses the bounded one
below its bound with a TypeError naming each symbol's least size. A symbol shared by several
inputs takes the largest of their bounds; a bound on anything else (a local, a helper's argument)
still holds for every size (:mod:`tests.cli.test_cli_failures_and_outputs`).
"""

import numpy as np
import pytest

from adcompiler.frontend.reading.module import load_module
from adcompiler.runtime.dispatch import _Signatures, _dispatch, _fits
from adcompiler.aot.sizedeps import least_size, least_sizes
from tests.aot import test_standalone_guards as guards
from tests.helpers import numerical_grad
from tests.cli.test_cli import adcompiler, import_path, write

MODULE = '''
    import numpy as np
    import adcompiler as ad


    @ad.grad(wrt=("x", "y"))
    def head(x, y):
        return np.sum(x[:3] ** 2) * np.sum(np.sin(y) * y)


    @ad.grad(wrt=("x", "y"))
    def third(x, y):
        return x[2] * np.sum(np.cos(y) * y)


    @ad.grad(wrt=("W", "v"))
    def column(W, v):
        return np.sum(np.tanh(W[:, 4]) * v[0]) + np.sum(W ** 2) * np.sum(v * v)


    @ad.grad(wrt=("x", "y"))
    def shared(x, y, z):
        return x[4] * np.sum(x * y) + np.sum(y[:3] ** 2) + np.sum(z * z)


    def example_head():
        return (np.linspace(0.1, 0.9, 5), np.array([0.3, -0.7]))


    def example_third():
        return (np.linspace(0.1, 0.9, 4), np.array([0.3, -0.7]))


    def example_column():
        return (np.linspace(-1.0, 1.0, 18).reshape(3, 6), np.array([0.5, -1.5]))


    def example_shared():
        return (np.linspace(0.1, 0.9, 6), np.linspace(-0.5, 0.5, 6), np.array([0.2, 0.4]))
'''

RNG = np.random.default_rng(11)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """``(module, compile's stderr, text)``: MODULE compiled by the console script."""
    directory = tmp_path_factory.mktemp("least")
    done = adcompiler("compile", write(directory, "bounds.py", MODULE))
    assert done.returncode == 0, done.stderr
    out = directory / "bounds_grad.py"
    return import_path(out), done.stderr, out.read_text()


def refusal(call, *args) -> str:
    with pytest.raises(TypeError) as info:
        call(*args)
    return str(info.value)


def check(module, name, args, monkeypatch):
    """The guard takes the call (never ``_dispatch``), ``_dispatch`` takes it too, and both give
    the finite differences of the function as written."""
    with monkeypatch.context() as patched:
        patched.setattr(module, "_dispatch", lambda t, a: pytest.fail(f"no guard took {a}"))
        got = getattr(module, f"grad_{name}")(*args)
    slow = module._dispatch(getattr(module, f"_GRAD_{name.upper()}"), args)
    for g, d, argnum in zip(got, slow, range(2)):
        np.testing.assert_array_equal(g, d)
        np.testing.assert_allclose(g, numerical_grad(getattr(module, name), list(args), argnum),
                                   rtol=1e-6, atol=1e-8)


def test_each_symbol_gets_its_own_least_size_and_the_example_no_body_of_its_own(compiled):
    _, stderr, text = compiled
    assert "note:" not in stderr
    assert all(f"grad_{n} (1 signature, any sizes)" in stderr
               for n in ("head", "third", "column", "shared"))
    assert "# grad of head for (x: float64[d1], y: float64[d2])\n" \
           "# d1: any size of at least 3; d2: any size of at least 2\n" in text
    assert "# grad of column for (W: float64[d1, d2], v: float64[d3])\n" \
           "# d1, d3: any sizes of at least 2; d2: any size of at least 5\n" in text
    assert "# grad of shared for (x: float64[d1], y: float64[d1], z: float64[d2])\n" \
           "# d1: any size of at least 5; d2: any size of at least 2\n" in text
    assert "}, least=[{'d1': 3}])" in text and "if d1 >= 3 and d2 >= 2:" in text


def test_a_slice_bound_bounds_its_input_only(compiled, monkeypatch):
    m = compiled[0]
    for n, k in ((5, 2), (3, 2), (3, 7), (8, 3)):      # the example: (5, 2)
        check(m, "head", (RNG.normal(size=n), RNG.normal(size=k)), monkeypatch)
    text = refusal(m.grad_head, np.ones(2), np.ones(2))
    assert text.splitlines()[1:4] == [
        "  (x: float64[d1], y: float64[d2])",
        "(a named size is any size of at least 2, d1 of at least 3; the same name, the same "
        "size)",
        "but was given"]
    assert "  (x: float64[2], y: float64[2])" in text


def test_a_constant_index_bounds_its_input_only(compiled, monkeypatch):
    m = compiled[0]
    for n, k in ((3, 2), (4, 5), (11, 2)):
        check(m, "third", (RNG.normal(size=n), RNG.normal(size=k)), monkeypatch)
    assert "d1 of at least 3;" in refusal(m.grad_third, np.ones(2), np.ones(4))


def test_a_column_index_bounds_the_second_axis_only(compiled, monkeypatch):
    m = compiled[0]
    for shape, k in (((3, 6), 2), ((2, 5), 2), ((7, 5), 3)):
        check(m, "column", (RNG.normal(size=shape), RNG.normal(size=k)), monkeypatch)
    text = refusal(m.grad_column, np.ones((3, 4)), np.ones(2))
    assert "(a named size is any size of at least 2, d2 of at least 5; " in text


def test_a_shared_symbol_takes_the_largest_bound_of_its_inputs(compiled, monkeypatch):
    m = compiled[0]
    for n, k in ((5, 2), (9, 4)):
        check(m, "shared", (RNG.normal(size=n), RNG.normal(size=n), RNG.normal(size=k)),
              monkeypatch)
    text = refusal(m.grad_shared, np.ones(4), np.ones(4), np.ones(2))   # y[:3] fits, x[4] not
    assert "(a named size is any size of at least 2, d1 of at least 5; " in text
    assert "  (x: float64[5], y: float64[6], z: float64[2])" in \
        refusal(m.grad_shared, np.ones(5), np.ones(6), np.ones(2))


# ---- where the bounds come from -----------------------------------------------------------------
BOUNDS = '''
    import numpy as np

    K = 4

    def own(x, W, y):
        return x[:3].sum() + W[:, K] + W[-6:, 0] + x[None, -4] + y[0] + y[1:-1].sum()

    def ellipsis(T):
        return T[..., 5].sum() + T[..., 3, :].sum() + T[2, ...].sum()

    def unknown(x, i, m):
        return x[i, 6] + x[m, ..., 7] + x.shape[9] + np.shape(x)[8] + x[0][4]

    def rebound(x, y):
        x = x.T
        z = y
        return x[:, 3] + z[5]

    def shadowed(x):
        return (lambda x: x[4])(x * 2.0)

    def called(x, y):
        return own(x, x, y) + y[:2].sum()
'''


def test_the_bounds_are_per_axis_of_a_parameter_and_for_every_size_otherwise(tmp_path):
    module = load_module(str(write(tmp_path, "bounds.py", BOUNDS)))
    got = {name: least_sizes(module, name) for name in
           ("own", "ellipsis", "unknown", "rebound", "shadowed", "called")}
    assert got["own"].slots == {("x", 0): 4, ("W", 1): 5, ("W", 0): 6} and \
        got["own"].anywhere == 2
    assert got["ellipsis"].slots == {("T", -1): 6, ("T", -2): 4, ("T", 0): 3}
    # x[i, 6]: after an index of unknown width, 7 for all; x[m, ..., 7]: x's last axis, 8
    assert (got["unknown"].slots, got["unknown"].anywhere) == ({("x", -1): 8}, 7)
    assert (got["rebound"].slots, got["rebound"].anywhere) == ({}, 6)
    assert (got["shadowed"].slots, got["shadowed"].anywhere) == ({}, 5)
    assert (got["called"].slots, got["called"].anywhere) == ({}, 6)     # own's, for all
    assert least_size(module, "own") == 6 and least_size(module, "ellipsis") == 6
    # the axes from the end are resolved with the ranks; an axis no parameter has bounds all
    assert got["ellipsis"].resolve({"T": 3}) == ({("T", 2): 6, ("T", 1): 4, ("T", 0): 3}, 2)
    assert got["ellipsis"].resolve({"T": 1}) == ({("T", 0): 6}, 4)
    assert got["own"].resolve({"x": 1, "W": 2, "y": 1}) == (
        {("x", 0): 4, ("W", 1): 5, ("W", 0): 6}, 2)


# ---- the dispatcher and the guards --------------------------------------------------------------
F64 = "float64"
SIGNATURE = (("array", F64, ("d1",)), ("array", F64, ("d1", "d2")), ("array", F64, ("d3",)))
LEAST = {"d1": 5, "d2": 3}


def test_fits_checks_each_symbol_against_its_own_least_size():
    def sig(n, m, k):
        return (("array", F64, (n,)), ("array", F64, (n, m)), ("array", F64, (k,)))
    assert _fits(SIGNATURE, sig(5, 3, 2), LEAST)
    assert not _fits(SIGNATURE, sig(4, 3, 2), LEAST)       # d1
    assert not _fits(SIGNATURE, sig(5, 2, 2), LEAST)       # d2
    assert not _fits(SIGNATURE, sig(5, 3, 1), LEAST)       # d3: 2, as every symbol left out
    assert _fits(SIGNATURE, sig(4, 3, 3), 3)               # one number: every symbol
    assert not _fits(SIGNATURE, sig(5, 3, 2), 3)


def test_the_guards_take_only_what_dispatch_sends_to_the_same_body(monkeypatch):
    """As :func:`tests.aot.test_standalone_guards.test_guards_take_only_what_dispatch_sends_to_the_
    same_body`, with sizes around each symbol's own least size."""
    exact = (("array", F64, (9,)), ("array", F64, (9, 2)), ("array", F64, (9,)))
    monkeypatch.setitem(guards.TABLES, "per_symbol",
                        (("x", "W", "v"), [exact, SIGNATURE], [{}, LEAST], False))
    f, table = guards.dispatcher("per_symbol")
    rng = np.random.default_rng(3)
    taken = refused = 0
    for trial in range(1500):
        signature = (exact, SIGNATURE)[trial % 2]
        sizes = {d: int(rng.integers(2, 8)) for d in ("d1", "d2", "d3")}
        args = [guards.plain(e, sizes, False, rng) for e in signature]
        if trial % 3 == 0:
            k = rng.integers(len(args))
            args[k] = guards.mutated(args[k], signature[k], False, rng)
        want = guards.outcome(lambda *a: _dispatch(table, a), args)
        got = guards.outcome(f, args)
        if trial % 3 and signature is SIGNATURE:   # a plain call of the pattern's shapes
            fits = sizes["d1"] >= 5 and sizes["d2"] >= 3
            assert got[0] == ("_body_1" if fits else "error"), (sizes, got)
            taken, refused = taken + fits, refused + (not fits)
        got = got[1] if got[0] == "slow" else got
        if want[0] == "error" or got[0] == "error":
            assert got == want, (args, got, want)
        assert got[0] == want[0], (args, got, want)
    assert taken > 100 and refused > 100, (taken, refused)


def test_patterns_with_other_least_sizes_are_named_in_turn():
    one = (("array", F64, ("d1",)),)
    two = (("array", "float32", ("d1",)),)
    table = _Signatures("f", ("x",), "example_f", {one: None, two: None}, False,
                        [{"d1": 3}, {}])
    text = refusal(_dispatch, table, (np.ones(2),))
    assert "(a named size is, for the patterns above in turn, any size of at least 3; any size " \
           "of at least 2; the same name, the same size)" in text
