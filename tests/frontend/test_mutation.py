"""Mutation compiled statically: y[i] = v, y[i] += v, y[a:b] = v, y[mask] = v, in loops too;
repeated indices as NumPy has them (the last write stays, ``+=`` adds once), in the compiler and
on the tape; the caller's arrays are never written; and the seeds' in-place scenarios, where
PyTorch (and our tape, which reproduces it) raises, compile to the correct gradient.
"""

import inspect

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from tests.helpers import assert_matches_numerical

RNG = np.random.default_rng(11)


def build(x, w):
    y = np.zeros(4)
    y[0] = x[0] * w
    y[1:3] = np.sin(x[1:3])
    y[3] += w * w
    return np.sum(y * y)


def into_param(x):
    x[0] = 3.0
    return np.sum(x * x)


def masked(x):
    y = x.copy()
    y[x > 0] = 0.0
    y[x < -0.5] *= 2.0
    return np.sum(y * x)


def loop_fill(x):
    out = np.zeros((3, 2))
    for i in range(3):
        out[i] = x * (i + 1.0)
    return np.sum(np.tanh(out))


def integer_array_assignment(x, v):
    y = x.copy()
    y[np.array([0, 2])] = v
    return np.sum(y * x)


def row_update_in_loop(X):
    Y = X.copy()
    for i in range(1, 3):
        Y[i] += Y[i - 1] * 0.5
    return np.sum(Y * Y)


def alias_sees_the_update(x):
    y = x * 1.0
    z = y
    y[1] = 5.0
    return np.sum(z * x)


# ---- repeated indices: NumPy keeps the last write (`=`), and `+=` is buffered (one add) -------
I3 = np.array([0, 2, 0])
W3 = np.array([1.0, 10.0, 100.0])


def repeated_assignment(x, v):
    y = x.copy()
    y[I3] = v           # y[0] = v[2]: v[0] is overwritten
    return np.sum(y * W3)


def repeated_accumulation(x, v):
    y = x.copy()
    y[I3] += v          # y[0] = x[0] + v[2], once
    return np.sum(y * W3)


def repeated_updates(x, v):
    y = x * 1.0
    y[[0, 2, 0]] -= np.tanh(v)
    y[[1, 1, 2]] *= v
    y[I3] = y[I3] * 0.5 + v * v
    return np.sum(y * y * x)


def repeated_columns(X, v):
    Y = X * 1.0
    Y[:, [2, 0, 2, -1]] += v
    return np.sum(Y * Y)


def repeated_traced_index(x, v, idx):
    y = x.copy()
    y[idx] = v * v      # idx is an argument: which write stays is found at run time
    y[idx] += np.sin(v)
    return np.sum(y * y * x)


def repeated_in_loop(x, v):
    y = x * 0.0
    for i in range(3):
        y[I3] += v * (i + 1.0) + x
    return np.sum(y * y)


def leading_ones(X, z):
    b = X * 0.0
    b[0] = z            # z of shape (1, 3) into a row of shape (3,)
    b[1:] += z * X[1]
    return np.sum(b * b + X * b)


NUMPY_SEMANTICS = [
    (repeated_assignment, (RNG.standard_normal(3), RNG.standard_normal(3)), (0, 1)),
    (repeated_accumulation, (RNG.standard_normal(3), RNG.standard_normal(3)), (0, 1)),
    (repeated_updates, (RNG.standard_normal(3), RNG.standard_normal(3)), (0, 1)),
    (repeated_columns, (RNG.standard_normal((2, 3)), RNG.standard_normal((2, 4))), (0, 1)),
    (repeated_traced_index, (RNG.standard_normal(3), RNG.standard_normal(4),
                             np.array([2, 0, 2, -1])), (0, 1)),
    (repeated_in_loop, (RNG.standard_normal(3), RNG.standard_normal(3)), (0, 1)),
    (leading_ones, (RNG.standard_normal((3, 3)), RNG.standard_normal((1, 3))), (0, 1)),
]

CASES = NUMPY_SEMANTICS + [
    (build, (RNG.standard_normal(4), 0.7), (0, 1)),
    (into_param, (RNG.standard_normal(3),), (0,)),
    (masked, (RNG.standard_normal(6),), (0,)),
    (loop_fill, (RNG.standard_normal(2),), (0,)),
    (integer_array_assignment, (RNG.standard_normal(4), RNG.standard_normal(2)), (0, 1)),
    (row_update_in_loop, (RNG.standard_normal((3, 2)),), (0,)),
    (alias_sees_the_update, (RNG.standard_normal(3),), (0,)),
]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_mutation_gradients_match_finite_differences_and_leave_inputs_alone(f, args, wrt):
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    grads = ad.grad(f, wrt=wrt)(*args)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)  # the caller's data is untouched
    assert_matches_numerical(f, args, wrt, grads, rtol=1e-5, atol=1e-7)


def test_repeated_indices_follow_numpy():
    """By hand: y . W3 with y[I3] = v reads v[1] (into y[2]) and v[2] (into y[0]), never v[0];
    x[0] and x[2] are overwritten. With `+=`, x passes through once and v[0] is dropped."""
    x, v = RNG.standard_normal(3), RNG.standard_normal(3)
    dx, dv = ad.grad(repeated_assignment, wrt=(0, 1))(x, v)
    np.testing.assert_array_equal(dx, [0.0, 10.0, 0.0])
    np.testing.assert_array_equal(dv, [0.0, 100.0, 1.0])
    dx, dv = ad.grad(repeated_accumulation, wrt=(0, 1))(x, v)
    np.testing.assert_array_equal(dx, W3)
    np.testing.assert_array_equal(dv, [0.0, 100.0, 1.0])
    for f in (repeated_assignment, repeated_accumulation):
        for got, want in zip(tape.dynamic_grad(f, wrt=(0, 1))(x, v), ad.grad(f, wrt=(0, 1))(x, v)):
            np.testing.assert_array_equal(got, want)


def test_the_tape_agrees_on_repeated_indices_and_leading_ones():
    for f, args, wrt in NUMPY_SEMANTICS:
        compiled = ad.grad(f, wrt=wrt)(*args)
        dynamic = tape.dynamic_grad(f, wrt=wrt)(*args)
        for c, d in zip(compiled, dynamic):
            assert np.shape(c) == np.shape(d)
            np.testing.assert_allclose(c, d, rtol=1e-12, atol=1e-14, err_msg=f.__name__)


def test_which_write_stays_in_generated_code():
    """Distinct constant indices need nothing; repeated constant ones a mask found while
    compiling; an index argument the helper `_last_writes`, run on the call's index."""
    g = ad.grad(integer_array_assignment, wrt=(0, 1))
    g(np.ones(4), np.ones(2))
    assert "np.where" not in g.source and "kept" not in g.source
    g = ad.grad(repeated_assignment, wrt=1)
    g(np.ones(3), np.ones(3))
    assert "dv = np.where(kept_I3, " in g.source and "_last_writes" not in g.source
    g = ad.grad(repeated_traced_index, wrt=1)
    args = (np.ones(3), np.ones(4), np.array([2, 0, 2, -1]))
    g(*args)
    assert "def _last_writes(" in g.source and "_last_writes((3,), idx)" in g.source
    # the helper follows NumPy wherever the repeats are, so other index values need no recompile
    args = (RNG.standard_normal(3), RNG.standard_normal(4), np.array([1, 1, 0, 1]))
    assert_matches_numerical(repeated_traced_index, args, (1,), (g(*args),), rtol=1e-5,
                             atol=1e-7)


def test_the_tape_agrees_on_mutation():
    x = RNG.standard_normal(6)
    np.testing.assert_allclose(ad.grad(masked)(x), tape.dynamic_grad(masked)(x), rtol=1e-12)
    X = RNG.standard_normal((3, 2))
    np.testing.assert_allclose(ad.grad(row_update_in_loop)(X),
                               tape.dynamic_grad(row_update_in_loop)(X), rtol=1e-12)


# ---- the seeds' in-place scenarios: PyTorch raises, the compiler differentiates -------------
def modified_after_use(a):
    """Seed 000/001: b is used by b*b, then b[0] is overwritten before backward."""
    b = a + 2
    loss = (b * b).mean()
    b[0] = 1000.0
    return loss


def overwritten_before_use(a):
    """Seed 000: a[:] = 0 on what would be a leaf, then loss = mean(a*a)."""
    a[:] = 0.0
    return (a * a).mean()


def updated_leaf(a):
    """Seed 000: a.add_(10.) on a leaf; in NumPy, a += 10."""
    a += 10.0
    return (a * a).mean()


def test_modified_after_use_compiles_where_pytorch_raises():
    a = np.array([1.0, 3.0])
    t = tape.tensor(a, requires_grad=True)
    b = t + 2
    loss = (b * b).mean()
    b[0] = 1000.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    # statically the loss was computed before the write: d mean(b*b)/da = b = a + 2
    np.testing.assert_allclose(ad.grad(modified_after_use)(a), a + 2)


def test_leaf_overwritten_compiles_where_pytorch_raises():
    a = np.array([10.0, 5.0, 2.0, 3.0])
    t = tape.tensor(a, requires_grad=True)
    t[:] = 0
    with pytest.raises(RuntimeError, match="leaf variable has been moved into the graph"):
        (t * t).mean().backward()
    # every entry is overwritten, so nothing flows back to the input
    np.testing.assert_array_equal(ad.grad(overwritten_before_use)(a), np.zeros(4))
    np.testing.assert_array_equal(a, [10.0, 5.0, 2.0, 3.0])


def test_updated_leaf_compiles_where_pytorch_raises():
    a = np.array([10.0, 5.0, 2.0, 3.0])
    t = tape.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        t.add_(10.0)
    # d mean((a+10)^2)/da = (a + 10) / 2
    np.testing.assert_allclose(ad.grad(updated_leaf)(a), (a + 10.0) / 2)


def test_writing_into_a_global_array_is_a_located_error():
    with pytest.raises(ad.CompileError) as info:
        ad.grad(writes_global)(np.ones(3))
    assert "module global" in info.value.message
    assert info.value.lineno == writes_global.__code__.co_firstlineno + 1


TABLE = np.ones(3)


def writes_global(x):
    TABLE[0] = 2.0
    return np.sum(TABLE * x)


def test_in_place_accumulation_in_generated_code():
    g = ad.grad(loop_fill)
    g(np.ones(2))
    assert "out[i] = x * " in g.source  # the forward loop fills its own array in place


# ---- forward mode and Hessians through subscript updates --------------------------------------
def scatter_and_square(x):
    b = np.zeros(3)
    b[1] = x[0] * 2.0
    b[0:2] += x[1:]
    b[[0, 2]] *= x[2]
    return np.sum(b * b)


def test_jvp_and_hessian_through_subscript_updates():
    """Forward mode emits setitem updates too (it once crashed in the emitter's in-place
    update, KeyError); jvp against <grad, t>, the Hessian against differences of the grad."""
    x = np.array([0.5, 1.0, 2.0])
    g = ad.grad(scatter_and_square)
    for t in np.eye(3):
        value, tangent = ad.jvp(scatter_and_square)(x, tangents=t)
        assert value == pytest.approx(scatter_and_square(x.copy()), rel=1e-13)
        assert tangent == pytest.approx(float(g(x) @ t), rel=1e-12)
    h = ad.hessian(scatter_and_square)(x)
    eps = 1e-6
    numerical = np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(h, numerical.T, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(h, h.T, rtol=1e-12)


# ---- a view read after its array changed in place: NumPy shows the change, SSA would not ------
# Each would be silently wrong if compiled functionally; the read marked `# stale` is refused.
def view_read_after_update_in_loop(x, z):
    acc = x * 1.0
    b = np.zeros((3, 3))
    for i in range(3):
        v5 = acc[1:]
        acc += x * z
        b[i, 1:] = v5  # stale
    return np.sum(b * b)


def view_read_after_update_in_branch(x, z):
    acc = x * 1.0
    v = acc[1:]
    if np.sum(x) > 0:
        acc += x * z
    return np.sum(v * v)  # stale


def view_from_before_the_loop_read_after_it(x, z):
    acc = x * 1.0
    v = acc.T
    for i in range(2):
        acc += x * z
    return np.sum(v * v)  # stale


def view_from_before_the_loop_read_in_it(x, z):
    acc = x * 1.0
    v = acc.reshape(3, 1)
    s = 0.0
    for i in range(2):
        s = s + np.sum(v * v)  # stale
        acc *= z
    return s


def view_read_in_the_next_iteration(x, z):
    acc = x * 1.0
    v = x[None] * 1.0
    s = 0.0
    for i in range(2):
        s = s + np.sum(v * v)  # stale
        v = acc[None]
        acc += x * z
    return s


def view_read_after_the_loop_it_went_stale_in(x, z):
    acc = x * 1.0
    v = x * 1.0
    for i in range(2):
        v = acc[...]
        acc += z
    return np.sum(v * x)  # stale


def array_read_after_its_view_changed_in_a_loop(x, z):
    acc = x * 1.0
    w = acc[0:2]
    for i in range(2):
        w += z[:2]
    return np.sum(acc * acc)  # stale


STALE_READS = [view_read_after_update_in_loop, view_read_after_update_in_branch,
               view_from_before_the_loop_read_after_it, view_from_before_the_loop_read_in_it,
               view_read_in_the_next_iteration, view_read_after_the_loop_it_went_stale_in,
               array_read_after_its_view_changed_in_a_loop]
XZ = (np.array([0.3, 0.5, 0.7]), np.array([1.1, 0.9, 1.3]))


@pytest.mark.parametrize("f", STALE_READS, ids=[f.__name__ for f in STALE_READS])
def test_a_stale_view_read_is_a_located_error(f):
    lines, first = inspect.getsourcelines(f)
    (offset,) = [i for i, line in enumerate(lines) if line.rstrip().endswith("# stale")]
    for transform in (ad.grad, ad.jvp):
        with pytest.raises(ad.CompileError) as info:
            transform(f)(*XZ)
        assert info.value.lineno == first + offset, str(info.value)
        message = info.value.message
        assert "shares memory with" in message and "changed in place" in message
        hint = info.value.hint   # a copy, or (a view bound once) the update through the array
        assert ".copy()" in hint or "write the update through the array itself" in hint


# The same programs made explicit compile, and agree with NumPy, differences and the tape.
def view_copied_before_update_in_loop(x, z):
    acc = x * 1.0
    b = np.zeros((3, 3))
    for i in range(3):
        v5 = acc[1:].copy()
        acc += x * z
        b[i, 1:] = v5
    return np.sum(b * b)


def view_read_before_update_and_taken_again(x, z):
    acc = x * 1.0
    s = 0.0
    for i in range(3):
        v = acc[1:]
        s = s + np.sum(v * acc[:2])  # read before the update: what NumPy reads too
        acc += x * z
        w = acc[1:]                   # a fresh view of the updated array
        s = s + np.sum(w * w)
    return s


def view_in_branch_not_read_after(x, z):
    acc = x * 1.0
    v = acc[1:]
    s = np.sum(v * v)
    if np.sum(x) > 0:
        acc += x * z
    return s + np.sum(acc * acc)


VIEWS_THAT_STAY_RIGHT = [view_copied_before_update_in_loop,  # (fills np.zeros: not on the tape)
                         view_read_before_update_and_taken_again, view_in_branch_not_read_after]


@pytest.mark.parametrize("f", VIEWS_THAT_STAY_RIGHT,
                         ids=[f.__name__ for f in VIEWS_THAT_STAY_RIGHT])
def test_views_read_before_the_update_or_copied_are_right(f):
    value, grads = ad.value_and_grad(f, wrt=(0, 1))(*XZ)
    assert float(value) == pytest.approx(float(f(*[a.copy() for a in XZ])), rel=1e-13)
    assert_matches_numerical(f, XZ, (0, 1), grads, rtol=1e-6, atol=1e-8)
    if f is not view_copied_before_update_in_loop:
        for c, d in zip(grads, tape.dynamic_grad(f, wrt=(0, 1))(*XZ)):
            np.testing.assert_allclose(c, d, rtol=1e-12, atol=1e-14)


def held_view_taken_again_in_the_loop(x, z):
    acc = x * 1.0
    v = acc[1:]
    for i in range(2):
        acc += z
        v = acc[1:]
    return np.sum(v * x[1:])


def test_a_view_held_across_the_loop_is_refused_where_it_is_read():
    """Conservative: `v` enters the loop as a view `acc += z` makes stale, and though the body
    takes it again, it is no longer carried; this reads the fresh view and would be right."""
    with pytest.raises(ad.CompileError, match="`v` shares memory with `acc`") as info:
        ad.grad(held_view_taken_again_in_the_loop)(*XZ)
    assert info.value.lineno == held_view_taken_again_in_the_loop.__code__.co_firstlineno + 6
