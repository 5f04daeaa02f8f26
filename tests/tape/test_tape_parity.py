"""The tape takes every NumPy function the compiler takes, with the compiler's gradient.

For each function (the compositions ``var std diff flip roll swapaxes moveaxis full_like
empty_like vstack hstack column_stack logaddexp round``, the primitives ``hypot arctan2 arcsinh
arccosh arctanh cbrt log2 log10 exp2 floor ceil rint trunc cumsum cumprod``, ``trace diagonal
diag tril triu``, builtin ``max``/``min`` of traced numbers and ``np.add.at``): the tape's value
is NumPy's (dtype and shape too), its vector-Jacobian product is the compiled one
(``adcompiler.vjp``) and central finite differences', in float64; in float32 both gradients
are float32; and where PyTorch is installed, the tape's gradient is PyTorch's.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape

from tests.helpers import assert_matches_numerical
from tests.library.test_statistics_shifts_and_stacks import (  # the same functions, run on the tape here
    column_stack_vectors, diff_ends, diff_last, diff_twice, empty_like_written, flip_all,
    flip_axes, flip_lr_ud, full_like_int, full_like_traced, hstack_matrices, hstack_vectors,
    logaddexp_broadcast, logaddexp_pair, move, normal, roll_axis, roll_flat, roll_nothing,
    roll_pairs, std_method, swap, var_axes, var_method, vstack_rows)

rng = np.random.default_rng(5)
IDX = np.array([0, 2, 0, 1])            # np.add.at's rows, one repeated
ZERO_ROWS = np.array([[0.0], [1.0], [0.0]])   # std over a constant row: variance 0


def uniform(lo, hi, *shape):
    return rng.uniform(lo, hi, shape)


def distinct(n):
    return rng.permutation(n) / n + 0.1


# ---- the functions (the compiler reads their source) ---------------------------------------
def var_correction(x):
    return np.var(x, axis=0, correction=1)


def std_all(x):
    return np.std(x)


def std_zero_variance(x):
    return np.std(x[0] * ZERO_ROWS, axis=-1)


def logaddexp_zero(x):
    return np.logaddexp(0.0, x)


def rounded(x):
    return np.round(x, 1) * x + np.around(x * 10.0, -1) + x.round() * x


def distance(x, y):
    return np.hypot(x, y) + np.arctan2(y, x)


def inverse_hyperbolic(x):
    return np.arcsinh(x) + np.arccosh(1.5 + x * x) + np.arctanh(x * 0.9)


def roots_and_bases(x):
    return np.cbrt(x) + np.log2(x + 2.0) + np.log10(x + 2.0) * x + np.exp2(x)


def rounding(x, y):
    return np.floor(x * 3.0) * y + np.ceil(x) * x + np.rint(y * 2.0) * x + np.trunc(x * 5.0) * y


def sums(x):
    return np.cumsum(x, axis=1) + x.cumsum(-1)


def sums_flat(x):
    return np.cumsum(x) * 2.0 + x.cumsum(dtype=np.float64)


def products(x):
    return np.cumprod(x, axis=0) + x.cumprod(2)


def products_flat(x):
    return np.cumprod(x)


def trace_offset(m):
    return np.trace(m) + np.trace(m, 1) * 2.0 + m.trace(-1) * 3.0


def diagonals(m):
    return np.concatenate([np.diagonal(m), m.diagonal(1) * 2.0, np.diag(m, -1) * 3.0])


def diag_vector(v):
    return np.diag(v, 1)[1:, 1:] + np.diag(v * v) * 2.0


def triangles(m):
    return np.tril(m) + np.triu(m, 1) * 2.0 + np.tril(m * m, -1)


def extremes(x):
    return max(x[0], x[1]) * x[2] + min(x[3], x[4], x[5]) + max(x[1], 0.5) * x[0]


def extremes_of_floats(a, b):
    return max(a, b) * a + min(b, 2.0 * a)


def add_at(x, v):
    out = np.zeros_like(v[:3])
    np.add.at(out, IDX, v * x[0])
    return out * x


def add_at_broadcast(x):
    out = np.zeros_like(x)
    np.add.at(out, IDX, x[1] * 2.0)
    np.add.at(out, (IDX, 1), 3.0 * x[2, 0])
    return out * x


CUBE = lambda: (normal(2, 3, 4),)  # noqa: E731
CASES = [(f, CUBE) for f in (
    var_axes, var_method, var_correction, std_all, std_method, diff_last, diff_twice,
    diff_ends, flip_all, flip_axes, flip_lr_ud, roll_axis, roll_flat, roll_pairs, roll_nothing,
    swap, move, full_like_int, empty_like_written, hstack_matrices, sums, sums_flat, products,
    products_flat)] + [
    (std_zero_variance, lambda: (normal(2, 1, 4),)),
    (full_like_traced, lambda: (normal(2, 3, 4), 1.5)),
    (vstack_rows, lambda: (normal(2, 3, 4), normal(4))),
    (hstack_vectors, lambda: (normal(2, 3, 4), normal(4))),
    (column_stack_vectors, lambda: (normal(2, 3, 4), normal(3))),
    (logaddexp_pair, lambda: (normal(6), normal(6))),
    (logaddexp_broadcast, lambda: (normal(5), 0.7)),
    (logaddexp_zero, lambda: (normal(2, 3),)),
    (rounded, lambda: (uniform(0.02, 0.08, 5) + np.arange(5.0),)),
    (distance, lambda: (normal(3, 4), normal(4))),
    (inverse_hyperbolic, lambda: (uniform(-0.9, 0.9, 3, 2),)),
    (roots_and_bases, lambda: (uniform(0.5, 2.0, 6),)),
    (rounding, lambda: (uniform(0.01, 0.03, 4) + np.arange(4.0) / 2.0, uniform(0.1, 0.2, 4))),
    (trace_offset, lambda: (normal(4, 5),)),
    (diagonals, lambda: (normal(4, 4),)),
    (diag_vector, lambda: (normal(4),)),
    (triangles, lambda: (normal(3, 5),)),
    (extremes, lambda: (distinct(6),)),
    (extremes_of_floats, lambda: (0.7, 0.4)),
    (add_at, lambda: (normal(3, 2), normal(4, 2))),
    (add_at_broadcast, lambda: (normal(3, 2),)),
]
IDS = [f.__name__ for f, _ in CASES]


# ---- the three gradients ----------------------------------------------------------------------
def _float_args(args):
    return tuple(i for i, a in enumerate(args) if isinstance(a, (float, np.ndarray)))


def _cotangent(f, args):
    return np.random.default_rng(3).standard_normal(np.shape(f(*args)))


def on_tape(f, args, wrt, cotangent):
    """``f``'s value on tensors and the tape's vector-Jacobian product (arrays)."""
    leaves = {i: tape.tensor(args[i], requires_grad=True) for i in wrt}
    out = f(*[leaves.get(i, a) for i, a in enumerate(args)])
    assert isinstance(out, tape.Tensor) and out.requires_grad, f"{f.__name__}: no graph"
    c = np.asarray(cotangent, dtype=out.dtype)
    grads = tape.grad(out, [leaves[i] for i in wrt], grad_outputs=c, allow_unused=True)
    return out.detach().numpy(), [np.zeros(np.shape(args[i])) if g is None else g.numpy()
                                  for i, g in zip(wrt, grads)]


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_tape_gradient_is_the_compiled_one_and_the_numerical_one(f, make):
    args = make()
    wrt = _float_args(args)
    c = _cotangent(f, args)
    value, taped = on_tape(f, args, wrt, c)
    expected = f(*args)
    assert value.shape == np.shape(expected) and value.dtype == np.result_type(expected)
    np.testing.assert_allclose(value, expected, rtol=1e-13, atol=1e-15)
    compiled = ad.vjp(f, wrt=wrt)(*args, cotangent=c)
    assert_matches_numerical(lambda *a: np.sum(c * f(*a)), args, wrt, compiled)
    for got, want in zip(taped, compiled):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("f, make", CASES, ids=IDS)
def test_float32_gradients_stay_float32(f, make):
    """(*) A Python float stays a Python float (weak, as NumPy's scalars): as a tape leaf it
    would be a float64 0-d tensor, which NumPy's promotion does not treat as weak."""
    args = tuple(a.astype(np.float32) if isinstance(a, np.ndarray) else a for a in make())
    wrt = tuple(i for i, a in enumerate(args) if isinstance(a, np.ndarray))   # (*)
    if not wrt:
        pytest.skip("no array argument")
    c = _cotangent(f, args)
    value, taped = on_tape(f, args, wrt, c)
    expected = f(*args)
    assert value.dtype == np.result_type(expected), f"value is {value.dtype}"
    np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6)
    compiled = ad.vjp(f, wrt=wrt)(*args, cotangent=c.astype(value.dtype))
    for i, got, want in zip(wrt, taped, compiled):
        assert got.dtype == np.float32, f"argument {i}: tape gradient is {got.dtype}"
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


# ---- scalar losses: adcompiler.grad against tape.dynamic_grad --------------------------------
def loss_logaddexp(x):
    return np.sum(np.logaddexp(0.0, x) * np.arange(1.0, 3.0))


def loss_mixed(x, y):
    spread = np.std(x, axis=0, ddof=1) + np.var(np.diff(x, axis=1))
    return np.sum(spread * y) + np.trace(np.cumsum(x, axis=0)[:, :3]) + max(y[0], y[1])


def loss_stacked(x, y):
    z = np.vstack([np.roll(x, 1, axis=1), np.flip(x, 0)]) * np.hypot(y, 1.0)
    return np.sum(np.swapaxes(z, 0, 1) * np.moveaxis(z, 0, 1) + np.column_stack([y, y])[:, :1])


@pytest.mark.parametrize("loss, args", [
    (loss_logaddexp, (np.array([1.0, 2.0]),)),
    (loss_mixed, (normal(3, 3), normal(3))),
    (loss_stacked, (normal(2, 3), normal(3))),
], ids=["logaddexp", "mixed", "stacked"])
def test_dynamic_grad_is_the_compiled_grad(loss, args):
    wrt = tuple(range(len(args)))
    compiled = ad.grad(loss, wrt=wrt)(*args)
    dynamic = tape.dynamic_grad(loss, wrt=wrt)(*args)
    assert_matches_numerical(loss, args, wrt, dynamic)
    for got, want in zip(dynamic, compiled):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_logaddexp_of_zero_and_a_tensor_as_in_the_report():
    t = tape.tensor(np.array([1.0, 2.0]), requires_grad=True)
    np.logaddexp(0.0, t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), 1.0 / (1.0 + np.exp(-np.array([1.0, 2.0]))))


def test_logaddexp_at_a_tie_gives_half_to_each_and_infinities_stay_finite():
    a = tape.tensor(np.array([0.5, -np.inf]), requires_grad=True)
    b = tape.tensor(np.array([0.5, -np.inf]), requires_grad=True)
    out = np.logaddexp(a, b)
    np.testing.assert_array_equal(out.detach().numpy(), np.logaddexp([0.5, -np.inf],
                                                                      [0.5, -np.inf]))
    out[0].backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.5, 0.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.5, 0.0])


def test_add_at_into_a_tensor_is_one_recorded_update():
    x = tape.tensor(np.ones(3), requires_grad=True)
    out = tape.zeros(3)
    assert np.add.at(out, np.array([0, 0, 2]), x * 2.0) is None
    assert out._version == 1 and type(out.grad_fn).__name__ == "IndexAddBackward0"
    np.testing.assert_array_equal(out.detach().numpy(), [4.0, 0.0, 2.0])
    (out * np.array([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 6.0])


def test_views_where_numpy_gives_views():
    x = tape.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True) * 1.0
    for view in (np.flip(x, 1), np.swapaxes(x, 0, 1), np.moveaxis(x, 0, 1), np.fliplr(x)):
        assert np.shares_memory(view.detach().numpy(), x.detach().numpy())
    rolled = np.roll(x, 1)
    assert not np.shares_memory(rolled.detach().numpy(), x.detach().numpy())


def test_functions_the_compiler_refuses_run_on_values_and_refuse_lost_gradients():
    x = tape.tensor(normal(2, 3, 3), requires_grad=True)
    coordinates = np.array([0.0, 0.5, 2.0])   # np.gradient's non-uniform spacing: refused
    with pytest.raises(TypeError, match="np.gradient is not differentiable on the tape"):
        np.gradient(x, coordinates, axis=2)
    with tape.no_grad():
        np.testing.assert_allclose(np.gradient(x, coordinates, axis=2).numpy(),
                                   np.gradient(x.detach().numpy(), coordinates, axis=2))
    with pytest.raises(TypeError, match="np.var: where= not supported"):
        np.var(x, where=x > 0)


# ---- PyTorch, where it is installed ---------------------------------------------------------
def _torch_references(torch):
    return {
        var_axes: lambda x: torch.var(x, dim=(0, 2), correction=1, keepdim=True),
        var_correction: lambda x: torch.var(x, dim=0, correction=1),
        std_all: lambda x: torch.std(x, correction=0),
        std_zero_variance: lambda x: torch.std(x[0] * torch.tensor(ZERO_ROWS), dim=-1,
                                               correction=0),
        diff_last: lambda x: torch.diff(x),
        flip_all: lambda x: torch.flip(x, dims=(0, 1, 2)),
        roll_pairs: lambda x: torch.roll(x, (1, -4, 3), dims=(0, 2, 2)),
        move: lambda x: torch.movedim(x, (0, 1), (-1, 0)),
        logaddexp_pair: torch.logaddexp,
        logaddexp_zero: lambda x: torch.logaddexp(torch.zeros(()), x),
        distance: lambda x, y: torch.hypot(x, y) + torch.atan2(y, x),
        inverse_hyperbolic: lambda x: torch.asinh(x) + torch.acosh(1.5 + x * x) +
        torch.atanh(x * 0.9),
        sums: lambda x: torch.cumsum(x, 1) + torch.cumsum(x, -1),
        products: lambda x: torch.cumprod(x, 0) + torch.cumprod(x, 2),
        trace_offset: lambda m: (torch.trace(m) + torch.diagonal(m, 1).sum() * 2.0 +
                                 torch.diagonal(m, -1).sum() * 3.0),
        triangles: lambda m: torch.tril(m) + torch.triu(m, 1) * 2.0 + torch.tril(m * m, -1),
    }


def test_tape_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    makes = dict(CASES)
    for f, reference in _torch_references(torch).items():
        args = makes[f]()
        c = _cotangent(f, args)
        _, taped = on_tape(f, args, range(len(args)), c)
        leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
        out = reference(*leaves)
        grads = torch.autograd.grad(out, leaves, grad_outputs=torch.tensor(c))
        for got, want in zip(taped, grads):
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-14,
                                       err_msg=f.__name__)
