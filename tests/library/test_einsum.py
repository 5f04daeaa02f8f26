"""np.einsum in compiled code and on the tape: gradients against finite differences, the
dynamic tape and PyTorch (where installed); implicit outputs, ellipses, diagonals and broadcast
axes of length 1; jvp, vjp, value_and_grad and hessian; float32; the spelling of the generated
code; and located refusals of what is not supported."""

import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from tests.helpers import assert_matches_numerical, check_grads, directional_difference

SUBSCRIPTS = "ij,jk->ik"   # a module constant, read while compiling


def matmul(a, b):
    return np.sum(np.einsum("ij,jk->ik", a, b) ** 2)


def batched(a, b):
    return np.sum(np.tanh(np.einsum("bij,bjk->bik", a, b)))


def outer(u, v):
    return np.sum(np.einsum("i,j->ij", u, v) ** 2)


def contraction(a, b):
    return np.einsum("ij,ij->", a, b) ** 2


def transposed(a):
    return np.sum(np.einsum("ij->ji", a) * np.arange(6.0).reshape(3, 2))


def row_sums(a):
    return np.sum(np.einsum("ij->i", a) ** 3)


def chain(a, b, c):
    return np.sum(np.sin(np.einsum("ij,jk,kl->il", a, b, c)))


def implicit(a, b):
    return np.sum(np.einsum("ij,jk", a, b) ** 2)


def constant_subscripts(a, b):
    return np.sum(np.einsum(SUBSCRIPTS, a, b) ** 2)


def trace(a):
    return np.einsum("ii", a) ** 2


def diagonal(a):
    return np.sum(np.einsum("ii->i", a) ** 3)


def partial_diagonal(a, b):
    return np.sum(np.einsum("iij,jk->ik", a, b) ** 2)


def ellipsis(a, b):
    return np.sum(np.einsum("...ij,...jk->...ik", a, b) ** 2)


def broadcast_one(a, b):
    return np.sum(np.einsum("ij,ij->ij", a, b) ** 2)


def ellipsis_implicit(a, b):
    return np.sum(np.einsum("ab...,b...", a, b) * np.arange(40.0).reshape(4, 5, 2))


def upper_case_first(a, b):
    return np.sum(np.einsum("Ba,aC", a, b) * np.arange(8.0).reshape(2, 4))


def optimized(a, b, c):
    return np.sum(np.einsum("ij,jk,kl->il", a, b, c, optimize=True) ** 2)


def weighted(a, w):
    return np.sum(np.einsum("i,ij->j", w, a) ** 2)


RNG = np.random.default_rng(0)


def _r(*shape):
    return RNG.standard_normal(shape)


A34, B45, C52 = _r(3, 4), _r(4, 5), _r(5, 2)
CASES = [
    (matmul, (A34, B45)), (batched, (_r(2, 3, 4), _r(2, 4, 2))), (outer, (_r(3), _r(4))),
    (contraction, (A34, _r(3, 4))), (transposed, (_r(2, 3),)), (row_sums, (A34,)),
    (chain, (A34, B45, C52)), (implicit, (A34, B45)), (constant_subscripts, (A34, B45)),
    (trace, (_r(4, 4),)), (diagonal, (_r(4, 4),)), (partial_diagonal, (_r(3, 3, 4), B45)),
    (ellipsis, (_r(2, 3, 4), _r(1, 4, 5))), (broadcast_one, (_r(1, 3), _r(2, 3))),
    (optimized, (A34, B45, C52)), (weighted, (A34, _r(3))),
    (ellipsis_implicit, (_r(2, 3, 4, 5), _r(3, 5))), (upper_case_first, (_r(2, 3), _r(3, 4))),
]
IDS = [f.__name__ for f, _ in CASES]


def _all(args):
    return tuple(range(len(args)))


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_gradient_matches_finite_differences(f, args):
    check_grads(f, *args, wrt=_all(args))


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_value_and_gradient_match_the_tape(f, args):
    value, grads = ad.value_and_grad(f, wrt=_all(args))(*args)
    np.testing.assert_allclose(value, f(*args), rtol=1e-13)
    dynamic = tape.dynamic_grad(f, wrt=_all(args))(*args)
    for g, d in zip(grads, dynamic):
        np.testing.assert_allclose(g, d, rtol=1e-12, atol=1e-14)


def _code(g):
    """The generated code without its comments (which quote the user's lines)."""
    return "\n".join(line for line in g.source.splitlines() if not line.lstrip().startswith("#"))


def test_generated_code_reads_as_numpy():
    g = ad.grad(matmul, wrt=(0, 1))
    g(A34, B45)
    assert "np.einsum('ij,jk->ik', a, b)" in g.source
    assert "np.einsum('ik,jk->ij'" in g.source   # da: g with b, giving a's letters
    g = ad.grad(implicit, wrt=(0, 1))
    g(A34, B45)
    assert "np.einsum('ij,jk->ik', a, b)" in g.source   # the implicit output made explicit
    g = ad.grad(row_sums)
    g(A34)
    assert "np.broadcast_to(" in g.source   # j, summed within a alone, is broadcast back
    g = ad.grad(optimized, wrt=(0, 1, 2))
    g(A34, B45, C52)
    assert _code(g).count("optimize=True") == 4   # the forward einsum and its three adjoints


def test_transpose_is_a_transpose_not_an_einsum():
    g = ad.grad(transposed)
    g(_r(2, 3))
    assert "einsum" not in _code(g) and "np.transpose(" in _code(g)


def test_jvp_is_the_sum_of_the_tangents_contributions():
    ta, tb = _r(3, 4), _r(4, 5)
    value, tangent = ad.jvp(matmul, wrt=(0, 1))(A34, B45, tangents=(ta, tb))
    eps = 1e-6
    want = (matmul(A34 + eps * ta, B45 + eps * tb) - matmul(A34 - eps * ta, B45 - eps * tb))
    np.testing.assert_allclose(value, matmul(A34, B45), rtol=1e-13)
    np.testing.assert_allclose(tangent, want / (2 * eps), rtol=1e-6)


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_jvp_matches_directional_differences_and_the_tape(f, args):
    rng = np.random.default_rng(5)
    tangents = tuple(rng.standard_normal(np.shape(a)) for a in args)
    value, tangent = ad.jvp(f, wrt=_all(args))(*args, tangents=tangents)
    np.testing.assert_allclose(value, f(*args), rtol=1e-13)
    np.testing.assert_allclose(tangent, directional_difference(f, args, tangents), rtol=1e-6,
                               atol=1e-7)
    with tape.forward_ad.dual_level():
        duals = [tape.forward_ad.make_dual(tape.tensor(a), tape.tensor(t))
                 for a, t in zip(args, tangents)]
        dynamic = tape.forward_ad.unpack_dual(f(*duals)).tangent
    np.testing.assert_allclose(dynamic.numpy(), tangent, rtol=1e-12, atol=1e-14)


def contract(a, b):
    return np.einsum("ij,jk->ik", a, b)


def test_vjp_of_an_array_result():
    v = _r(3, 5)
    da, db = ad.vjp(contract, wrt=(0, 1))(A34, B45, cotangent=v)
    np.testing.assert_allclose(da, v @ B45.T, rtol=1e-12)
    np.testing.assert_allclose(db, A34.T @ v, rtol=1e-12)


def quadratic(x, m):
    return np.einsum("i,ij,j->", x, m, x)


def test_hessian_of_a_quadratic_form():
    m = _r(4, 4)
    np.testing.assert_allclose(ad.hessian(quadratic)(_r(4), m), m + m.T, rtol=1e-12)


def test_float32_stays_float32():
    a, b = A34.astype(np.float32), B45.astype(np.float32)
    grads = ad.grad(matmul, wrt=(0, 1))(a, b)
    assert [g.dtype for g in grads] == [np.float32, np.float32]
    assert_matches_numerical(matmul, [a, b], (0, 1), grads, rtol=1e-3, atol=1e-3)
    (g,) = ad.grad(row_sums, wrt=(0,))(a)
    assert g.dtype == np.float32


@pytest.mark.parametrize("f, args, equation", [
    (matmul, (A34, B45), "ij,jk->ik"), (batched, (_r(2, 3, 4), _r(2, 4, 2)), "bij,bjk->bik"),
    (chain, (A34, B45, C52), "ij,jk,kl->il"), (row_sums, (A34,), "ij->i"),
    (diagonal, (_r(4, 4),), "ii->i"), (trace, (_r(4, 4),), "ii"),
])
def test_against_torch(f, args, equation):
    torch = pytest.importorskip("torch")
    ts = [torch.tensor(x, requires_grad=True) for x in args]
    y = torch.einsum(equation, *ts)
    out = {matmul: lambda: (y ** 2).sum(), batched: lambda: torch.tanh(y).sum(),
           chain: lambda: torch.sin(y).sum(), row_sums: lambda: (y ** 3).sum(),
           diagonal: lambda: (y ** 3).sum(), trace: lambda: y ** 2}[f]()
    out.backward()
    for g, t in zip(ad.grad(f, wrt=_all(args))(*args), ts):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_the_tape_names_its_node_and_keeps_permutations_as_views():
    a = tape.tensor(A34, requires_grad=True)
    y = np.einsum("ij,jk->ik", a, tape.tensor(B45))
    assert type(y.grad_fn).__name__ == "EinsumBackward0"
    t = np.einsum("ij->ji", a)
    assert type(t.grad_fn).__name__ == "PermuteBackward0" and t._view is not None


# ---- refusals -------------------------------------------------------------------------------
def bad_sublist(a, b):   # the sublist form compiles (tests/library/test_part4_gathers.py)
    return np.sum(np.einsum(a, [0, 60], b, [60, 2], [0, 2]))


def too_few(a):
    return np.sum(np.einsum("ij,jk->ik", a))


def bad_letter(a):
    return np.sum(np.einsum("i1->i", a))


def hidden_ellipsis(a):
    return np.sum(np.einsum("...i->i", a))


def with_path(a, b):
    return np.sum(np.einsum("ij,jk->ik", a, b, optimize=["einsum_path", (0, 1)]))


def with_dtype(a, b):
    return np.sum(np.einsum("ij,jk->ik", a, b, dtype=np.float32))


def with_out(a, b, c):
    return np.sum(np.einsum("ij,jk->ik", a, b, out=c))


def mismatched(a, b):
    return np.sum(np.einsum("ij,jk->ik", a, b))


def unequal_diagonal(a):
    return np.sum(np.einsum("ii->i", a))


REFUSED = [
    (bad_sublist, (A34, B45), "`np.einsum()` subscript 60 is not within the valid range [0, 52)",
     "np.einsum(\"ij"),
    (too_few, (A34,), "`np.einsum()` has subscripts for 2 operands but 1 was given", "ij,jk"),
    (bad_letter, (A34,), "`np.einsum()` subscripts may hold letters and one '...' per operand, "
     "not '1'", "np.einsum"),
    (hidden_ellipsis, (A34,), "`np.einsum()` sums over the axes of '...' but its output has no "
     "'...'", "put '...' in the output"),
    (with_path, (A34, B45), "`np.einsum()` with optimize=['einsum_path', (0, 1)] is not "
     "supported", "optimize=True"),
    (with_dtype, (A34, B45), "`np.einsum()` does not support `dtype=` here", ".astype"),
    (with_out, (A34, B45, _r(3, 5)), "`np.einsum()` does not support `out=` here",
     "the returned value"),
    (mismatched, (A34, _r(3, 5)), "`np.einsum()` index 'j' has length 4 in one operand and 3 "
     "in operand 1", "NumPy refuses this too"),
    (unequal_diagonal, (A34,), "`np.einsum()` operand 0 repeats index 'i' on axes of lengths "
     "3 and 4", "np.einsum"),
]


@pytest.mark.parametrize("f, args, message, hint", REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_refusals_are_located(f, args, message, hint):
    with pytest.raises(ad.CompileError, match=re.escape(message)) as err:
        ad.grad(f)(*args)
    assert hint in err.value.hint
    assert "test_einsum.py" in str(err.value)


def test_the_tape_refuses_what_numpy_refuses():
    a = tape.tensor(A34, requires_grad=True)
    with pytest.raises(ValueError, match=re.escape("np.einsum has subscripts for 2 operands")):
        np.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match=re.escape("subscript 60 is not within the valid range")):
        np.einsum(a, [0, 60], [60])   # the sublist form records as its subscripts


# ---- CuPy, played by NumPy (tests/fake_cupy.py: device arrays only, as CuPy) -----------------
DEVICE_CASES = [(matmul, (A34, B45)), (chain, (A34, B45, C52)), (row_sums, (A34,)),
                (diagonal, (_r(4, 4),)), (contraction, (A34, _r(3, 4))),
                (broadcast_one, (_r(1, 3), _r(2, 3))), (optimized, (A34, B45, C52))]


@pytest.mark.parametrize("f, args", DEVICE_CASES, ids=[f.__name__ for f, _ in DEVICE_CASES])
def test_cupy_code_and_tape_on_the_stand_in(f, args):
    from tests import fake_cupy
    from tests.cupy_helpers import assert_close, compile_both
    want = ad.grad(f, wrt=_all(args))(*args)
    compiled, _ = compile_both(f, args, _all(args))
    assert "cp.einsum(" in compiled.source or f in (row_sums, diagonal, contraction)
    with fake_cupy.install() as cp:
        function = __import__("adcompiler").runtime.compile.load_function(
            compiled.source, compiled.fname, compiled.constants, cp, {})
        assert_close(function(*fake_cupy.on_device(cp, args)), want, 1e-12)
        tensors = [tape.tensor(a, requires_grad=True) for a in fake_cupy.on_device(cp, args)]
        f(*tensors).backward()
        assert_close(tuple(t.grad._data for t in tensors), want, 1e-12)


# ---- a list holding traced values as an operand: their stack, as np.array of them -----------
def list_first(a, v):
    return np.einsum("i,i", [a, 2.0], v)


def list_second(a, v):
    return np.einsum("i,i->i", v, [a, a * 3.0]).sum()


def test_a_list_holding_traced_values_is_their_stack():
    v = np.array([1.0, 2.0])
    assert list_first(1.5, v) == 5.5 and list_second(1.5, v) == 10.5   # NumPy's values
    for f, want_value, want_a, want_v in ((list_first, 5.5, 1.0, [1.5, 2.0]),
                                          (list_second, 10.5, 7.0, [1.5, 4.5])):
        value, (ga, gv) = ad.value_and_grad(f, wrt=(0, 1))(1.5, v)
        assert value == want_value and ga == want_a
        np.testing.assert_array_equal(gv, want_v)
        a, t = tape.tensor(1.5, requires_grad=True), tape.tensor(v, requires_grad=True)
        out = f(a, t)
        out.backward()
        assert out.item() == want_value and a.grad.item() == want_a
        np.testing.assert_array_equal(t.grad.numpy(), want_v)


# ---- subscripts that change nothing: a new view on the tape, never the operand itself --------
def unchanged(x):
    b = x * 2.0
    y = np.einsum("i->i", b)
    return (b * 2.0).sum() + (y * 3.0).sum()


def test_subscripts_that_change_nothing_give_a_new_view_on_the_tape():
    x = tape.tensor(np.ones(2), requires_grad=True)
    b = x * 2.0
    y = np.einsum("i->i", b)
    assert y is not b and y._view is not None
    assert type(y.grad_fn).__name__ == "PermuteBackward0"   # as torch.einsum("i->i", ...)
    y.retain_grad()
    b.retain_grad()
    ((b * 2.0).sum() + (y * 3.0).sum()).backward()
    np.testing.assert_array_equal(y.grad.numpy(), [3.0, 3.0])   # PyTorch's: y's own use only
    np.testing.assert_array_equal(b.grad.numpy(), [5.0, 5.0])
    np.testing.assert_array_equal(x.grad.numpy(), [10.0, 10.0])
    np.testing.assert_array_equal(ad.grad(unchanged)(np.ones(2)), [10.0, 10.0])
    s = tape.tensor(2.0, requires_grad=True) * 1.0
    assert np.einsum("->", s) is not s


# ---- a diagonal on the tape is a writable view of its operand, as NumPy's and PyTorch's ------
def written_diagonal(a):
    b = a * 1.0
    y = np.einsum("ii->i", b)
    y[0] = y[0] * 3.0          # writes b[0, 0] too
    return (b ** 2).sum() + (y ** 2).sum()


def written_first(a):          # the same, written where the compiler sees it: b[0, 0] itself
    b = a * 1.0
    b[0, 0] = b[0, 0] * 3.0
    return (b ** 2).sum() + (np.einsum("ii->i", b) ** 2).sum()


def written_diagonal_3d(a):
    b = a * 1.0
    y = np.einsum("iji->ji", b)
    y[1] *= 3.0                # writes b[:, 1, :]'s diagonal
    return (b ** 2).sum() + (y ** 3).sum()


def written_first_3d(a):
    b = a * 1.0
    i = np.arange(a.shape[0])
    b[i, 1, i] = b[i, 1, i] * 3.0
    return (b ** 2).sum() + (np.einsum("iji->ji", b) ** 3).sum()


@pytest.mark.parametrize("f, same, shape", [(written_diagonal, written_first, (2, 2)),
                                            (written_diagonal_3d, written_first_3d, (3, 4, 3))])
def test_the_tapes_diagonal_is_a_writable_view(f, same, shape):
    a = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    assert f(a.copy()) == same(a.copy())                     # NumPy writes through the view
    x = tape.tensor(a.copy(), requires_grad=True)
    out = f(x)
    out.backward()
    np.testing.assert_allclose(out.item(), same(a.copy()), rtol=1e-14)
    np.testing.assert_allclose(x.grad.numpy(), ad.grad(same)(a.copy()), rtol=1e-13)
    if shape == (2, 2):        # the tester's numbers (PyTorch's)
        assert out.item() == 63.0
        np.testing.assert_array_equal(np.asarray(x.grad.numpy()).ravel(), [36.0, 4, 6, 16])
    y = np.einsum("ii->i", tape.tensor(np.eye(2), requires_grad=True) * 1.0)
    assert type(y.grad_fn).__name__ == "DiagonalBackward0" and y._view is not None


def test_a_diagonal_of_a_leaf_refuses_writes_as_pytorch():
    x = tape.tensor(np.eye(2), requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        np.einsum("ii->i", x)[0] = 1.0


def diagonal_powers(a):
    return np.sum(np.einsum("ii->i", a) ** 3) + np.sum(np.einsum("iij->ij", a[:, :, None] * a) ** 2)


def test_second_derivatives_through_the_tapes_diagonal_view():
    a = _r(3, 3)
    x = tape.tensor(a, requires_grad=True)
    (g,) = tape.grad(diagonal_powers(x), [x], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), ad.grad(diagonal_powers)(a), rtol=1e-12)
    direction = _r(3, 3)
    (hv,) = tape.grad((g * tape.tensor(direction)).sum(), [x])
    want = np.einsum("ijkl,kl->ij", ad.hessian(diagonal_powers)(a), direction)
    np.testing.assert_allclose(hv.numpy(), want, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("subscripts, shapes", [
    ("ii->i", [(3, 3)]), ("iji->ij", [(2, 3, 2)]), ("iji->ji", [(2, 3, 2)]),
    ("ijji->ij", [(3, 2, 2, 3)]), ("iij->i", [(4, 4, 2)]), ("iii->i", [(3, 3, 3)]),
    ("iij,jk->ik", [(3, 3, 4), (4, 5)]), ("ii->i", [(0, 0)]), ("kiji->jk", [(2, 3, 4, 3)])])
def test_the_rule_of_an_operand_with_repeated_letters(subscripts, shapes):
    """The adjoint of a diagonal (the tape's view step) against the dense Jacobian."""
    from adcompiler.templates.einsum import einsum_vjp
    from adcompiler.templates.ops import ArrayOps
    xs = [_r(*s) for s in shapes]
    ans = np.einsum(subscripts, *xs)
    g = _r(*ans.shape)
    for k, x in enumerate(xs):
        got = einsum_vjp(ArrayOps(np), k, g, ans, *xs, subscripts=subscripts)
        want = np.zeros(x.shape)
        for index in np.ndindex(x.shape):
            unit = np.zeros(x.shape)
            unit[index] = 1.0
            want[index] = np.sum(g * np.einsum(subscripts, *xs[:k], unit, *xs[k + 1:]))
        assert got.shape == x.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
