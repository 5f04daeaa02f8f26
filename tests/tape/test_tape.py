"""The dynamic tape's behaviour beyond the seeds: printing, node names, the NumPy protocols,
hooks, ``backward`` / ``grad`` options, higher-order derivatives, in-place updates, grad mode,
forward mode, conversions and their errors. Expected texts are PyTorch's (2.x) own output.
"""

from __future__ import annotations

import math
import re
import sys

import numpy as np
import pytest

from adcompiler import tape
from adcompiler.tape import forward_ad as fwAD
from adcompiler.tape.xp import array_module


def leaf(values, dtype=None):
    return tape.tensor(values, requires_grad=True, dtype=dtype)


def numeric_grad(f, x, eps=1e-6):
    """Central differences of a scalar function of one float64 array."""
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        out[i] = (f(up) - f(down)) / (2 * eps)
    return out


# ---- printing --------------------------------------------------------------------------------
REPRS = [
    ([1.5, 2.25], "tensor([1.5000, 2.2500])"),
    ([1e-5, 1.], "tensor([1.0000e-05, 1.0000e+00])"),
    ([1e9, 1.], "tensor([1.0000e+09, 1.0000e+00])"),
    ([1234567., 1.], "tensor([1.2346e+06, 1.0000e+00])"),
    (float("nan"), "tensor(nan)"),
    ([float("inf"), 1.], "tensor([inf, 1.])"),
    ([0.1, float("nan"), 2.], "tensor([0.1000,    nan, 2.0000])"),
    (-0.5, "tensor(-0.5000)"),
    (1e10, "tensor(1.0000e+10)"),
    ([-1., 2.], "tensor([-1.,  2.])"),
    ([1, 2, 3], "tensor([1, 2, 3])"),
    ([True, False], "tensor([ True, False])"),
    (np.arange(30.), "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., "
                     "13.,\n        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., "
                     "26., 27.,\n        28., 29.])"),
    (np.arange(2000.), "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, "
                       "1.9980e+03,\n        1.9990e+03])"),
    (np.arange(24.).reshape(2, 3, 4),
     "tensor([[[ 0.,  1.,  2.,  3.],\n         [ 4.,  5.,  6.,  7.],\n"
     "         [ 8.,  9., 10., 11.]],\n\n        [[12., 13., 14., 15.],\n"
     "         [16., 17., 18., 19.],\n         [20., 21., 22., 23.]]])"),
    ([], "tensor([])"),
    (np.zeros((0, 3)), "tensor([], size=(0, 3))"),
    (np.array(3, np.int32), "tensor(3, dtype=int32)"),
]


@pytest.mark.parametrize("values, text", REPRS, ids=range(len(REPRS)))
def test_repr_follows_pytorch(values, text):
    assert repr(tape.tensor(values)) == text
    assert str(tape.tensor(values)) == text


def test_repr_suffixes():
    x = leaf([[1e-5, 2.]], np.float32)
    assert repr(x) == "tensor([[1.0000e-05, 2.0000e+00]], dtype=float32, requires_grad=True)"
    assert repr(x * 2) == ("tensor([[2.0000e-05, 4.0000e+00]], dtype=float32, "
                           "grad_fn=<MulBackward0>)")
    long = leaf(np.linspace(0, 1, 9)) * 3               # the suffix wraps past 80 columns
    assert repr(long) == ("tensor([0.0000, 0.3750, 0.7500, 1.1250, 1.5000, 1.8750, 2.2500, "
                          "2.6250, 3.0000],\n       grad_fn=<MulBackward0>)")
    assert f"{tape.tensor(2.5):.2f}" == "2.50"


def test_summarised_matrix():
    text = repr(tape.tensor(np.arange(2000.).reshape(40, 50)))
    lines = text.splitlines()
    assert lines[0] == "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 4.7000e+01, 4.8000e+01,"
    assert lines[1] == "         4.9000e+01],"
    assert lines[6] == "        ...,"
    assert len(lines) == 13 and lines[-1] == "         1.9990e+03]])"


# ---- node names ------------------------------------------------------------------------------
def _names():
    a, x, v = leaf([1.0, 3.0]), leaf([[1., 2.], [3., 4.]]), leaf([1., 2.])
    return {
        "2 - a": 2 - a, "a - 2": a - 2, "a ** 2": a ** 2, "2 ** a": 2 ** a, "a ** a": a ** a,
        "a / 2": a / 2, "-a": -a, "x.T": x.T, "reshape": x.reshape(4), "x[0]": x[0],
        "x[:, 1]": x[:, 1], "x[0:1]": x[0:1], "x[[0, 1]]": x[[0, 1]], "x[x > 1]": x[x > 1],
        "sum": x.sum(), "sum0": x.sum(0), "mean0": x.mean(0), "max": x.max(), "amax0": x.amax(0),
        "prod": x.prod(), "prod0": x.prod(0), "where": np.where(x > 1, x, 0.),
        "clamp": x.clamp(0, 1), "mm": x @ x, "mv": x @ v, "dot": v @ v, "abs": x.abs(),
        "sqrt": x.sqrt(), "square": np.square(x), "unsqueeze": x.unsqueeze(0),
        "squeeze1": x[None].squeeze(0), "squeeze": x[None].squeeze(), "expand": v.expand(3, 2),
        "cat": np.concatenate([x, x]), "stack": np.stack([x, x]), "clone": x.clone(),
        "maximum": np.maximum(x, x * 2), "atan": x.atan(), "log1p": x.log1p(),
        "expm1": x.expm1(), "permute": x.permute(1, 0), "min": x.min(), "amin": x.amin(1),
        "x[0, 1]": x[0, 1], "x[..., 0]": x[..., 0], "x[None]": x[None],
        "clamp_t": np.clip(x, tape.zeros(2), tape.ones(2)),
    }


PYTORCH_NAMES = {
    "2 - a": "RsubBackward1", "a - 2": "SubBackward0", "a ** 2": "PowBackward0",
    "2 ** a": "PowBackward2", "a ** a": "PowBackward1", "a / 2": "DivBackward0",
    "-a": "NegBackward0", "x.T": "PermuteBackward0", "reshape": "ViewBackward0",
    "x[0]": "SelectBackward0", "x[:, 1]": "SelectBackward0", "x[0:1]": "SliceBackward0",
    "x[[0, 1]]": "IndexBackward0", "x[x > 1]": "IndexBackward0", "sum": "SumBackward0",
    "sum0": "SumBackward1", "mean0": "MeanBackward1", "max": "MaxBackward1",
    "amax0": "AmaxBackward0", "prod": "ProdBackward0", "prod0": "ProdBackward1",
    "where": "WhereBackward0", "clamp": "ClampBackward1", "clamp_t": "ClampBackward0",
    "mm": "MmBackward0", "mv": "MvBackward0", "dot": "DotBackward0", "abs": "AbsBackward0",
    "sqrt": "SqrtBackward0", "square": "PowBackward0", "unsqueeze": "UnsqueezeBackward0",
    "squeeze1": "SqueezeBackward1", "squeeze": "SqueezeBackward0", "expand": "ExpandBackward0",
    "cat": "CatBackward0", "stack": "StackBackward0", "clone": "CloneBackward0",
    "maximum": "MaximumBackward0", "atan": "AtanBackward0", "log1p": "Log1PBackward0",
    "expm1": "Expm1Backward0", "permute": "PermuteBackward0", "min": "MinBackward1",
    "amin": "AminBackward0", "x[0, 1]": "SelectBackward0", "x[..., 0]": "SelectBackward0",
    "x[None]": "UnsqueezeBackward0",
}


def test_node_names_are_pytorchs():
    names = {k: type(t.grad_fn).__name__ for k, t in _names().items()}
    assert names == PYTORCH_NAMES


def test_next_functions_show_the_graph():
    a = leaf([1.0, 2.0])
    b = a * a
    (n0, i0), (n1, i1) = b.grad_fn.next_functions
    assert n0 is n1 and type(n0).__name__ == "AccumulateGrad" and n0.variable is a
    assert (i0, i1) == (0, 0)
    c = b * tape.tensor([1.0, 1.0])
    assert c.grad_fn.next_functions == ((b.grad_fn, 0), (None, 0))
    assert re.fullmatch(r"<MulBackward0 object at 0x[0-9a-f]+>", repr(c.grad_fn))
    assert c.grad_fn.name() == "MulBackward0"


# ---- the NumPy protocols ---------------------------------------------------------------------
def test_numpy_functions_record_and_differentiate():
    xv, wv = np.array([[1., 2.5], [3., 4.5]]), np.array([0.5, -1.])  # away from kinks

    def f(x, w):
        return (np.exp(x).sum(axis=0).sum() + (x @ w).sum() + np.where(x > 2, x, -x).sum()
                + np.linalg.norm(x) + np.var(x) + np.std(x, axis=0).sum()
                + np.mean(np.maximum(x, 2.0), axis=1, keepdims=True).sum()
                + np.sum(np.clip(x, 1.5, 4.0) ** 2) + np.dot(x, w).sum() + np.outer(w, w).sum()
                + np.concatenate([x, x.T], axis=1).mean() + np.stack([x, x]).prod()
                + np.squeeze(np.expand_dims(x, 0), 0).sum() + np.transpose(x)[0].sum()
                + np.broadcast_to(w, (3, 2)).sum() + np.reshape(x, -1)[::2].sum())

    x, w = leaf(xv), leaf(wv)
    y = f(x, w)
    assert isinstance(y, tape.Tensor) and y.item() == pytest.approx(f(xv, wv))
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(lambda a: f(a, wv), xv), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), numeric_grad(lambda b: f(xv, b), wv), rtol=1e-6)


def test_plain_numpy_values_meet_tensors():
    x = leaf([1.0, 2.0])
    for y in (np.ones(2) + x, np.float64(2.0) * x, [1.0, 1.0] - x, np.array(2.0) ** x):
        assert isinstance(y, tape.Tensor) and y.requires_grad
    assert isinstance(np.ones((2, 2)) @ x, tape.Tensor)


def test_functions_without_rules():
    x = leaf([1.0, -2.0])
    mask = np.isfinite(x)                       # boolean: nothing to lose
    assert isinstance(mask, tape.Tensor) and mask.dtype == bool and not mask.requires_grad
    assert np.argmax(x) == 0 and x.argmin() == 1
    with pytest.raises(TypeError, match="np.fix is not differentiable"):
        np.fix(x)
    assert np.fix(x.detach()).tolist() == [1.0, -2.0]
    with tape.no_grad():
        assert np.fix(x).tolist() == [1.0, -2.0]


def test_out_argument():
    x = leaf([1.0, 2.0])
    y = x * 1
    np.multiply(y, 3.0, out=y)                  # in place into a tensor
    assert y._version == 1 and y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    with pytest.raises(TypeError, match="plain NumPy array"):
        np.add(x, 1.0, out=np.zeros(2))
    plain = np.zeros(2)
    np.add(x.detach(), 1.0, out=plain)
    assert plain.tolist() == [2.0, 3.0]


def test_module_functions_like_torch():
    x = leaf([1.0, 2.0])
    y = tape.sum(tape.exp(x) * tape.log(x), dim=0) + tape.mean(tape.where(x > 1, x, 0.0))
    assert y.grad_fn.name() == "AddBackward0"
    assert tape.cat([x, x]).shape == (4,) and tape.stack([x, x], dim=1).shape == (2, 2)
    assert tape.mm(tape.ones(2, 2), x).shape == (2,)


# ---- hooks and retain_grad -------------------------------------------------------------------
def test_hooks_replace_gradients_and_can_be_removed():
    x = leaf([1., 2.])
    y = x * 2
    y.retain_grad()
    handle = y.register_hook(lambda g: g * 3)
    y.sum().backward()
    assert y.grad.tolist() == [3., 3.] and x.grad.tolist() == [6., 6.]   # torch: same
    handle.remove()
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2., 2.]
    leaf_handle = x.register_hook(lambda g: g * 10)
    (x * 1).sum().backward()
    assert x.grad.tolist() == [12., 12.]
    leaf_handle.remove()
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tape.tensor(1.0).register_hook(print)


def test_hooks_run_in_grad_and_retain_grad_fills_there_too():
    x = leaf([1., 2.])
    y = x * 2
    y.retain_grad()
    z = (y * y).sum()
    tape.grad(z, [x], retain_graph=True)
    assert y.grad.tolist() == [4., 8.] and x.grad is None
    x.register_hook(lambda g: g * 100)
    assert tape.grad(z, [x], retain_graph=True)[0].tolist() == [800., 1600.]
    assert tape.grad(z, [y])[0].tolist() == [4., 8.]


# ---- backward and grad options ---------------------------------------------------------------
def test_backward_errors():
    x = leaf([1., 2.])
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        tape.tensor([1.0]).sum().backward()
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape "
                                           r"of \(3,\) and output\[0\] has a shape of \(2,\)"):
        (x * 2).backward(np.ones(3))
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        tape.grad((x * 2).sum(), [x, leaf(1.0)])
    assert tape.grad((x * 2).sum(), [x, leaf(1.0)], allow_unused=True)[1] is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        tape.grad((x * 2).sum(), [tape.tensor(1.0)])


def test_gradients_accumulate_and_grad_does_not_touch_them():
    x = leaf([1., 2.])
    (x * x).sum().backward()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5., 7.]
    assert tape.grad((x * x).sum(), [x])[0].tolist() == [2., 4.]
    assert x.grad.tolist() == [5., 7.]


def test_gradient_weights_and_grad_outputs():
    x = leaf([1., 2., 3.])
    y = x ** 2
    y.backward(np.array([1., 0., -1.]))
    assert x.grad.tolist() == [2., 0., -6.]
    (gx,) = tape.grad(x ** 2, x, grad_outputs=tape.tensor([0.5, 0.5, 0.5]))
    assert gx.tolist() == [1., 2., 3.]


def test_backward_inputs_may_be_intermediate():
    x = leaf([1., 2.])
    y = x * 2
    (y * y).sum().backward(inputs=[y])
    assert y.grad.tolist() == [4., 8.] and x.grad is None


def test_grad_of_intermediates_and_multiple_outputs():
    x = leaf(3.0)
    a, b = x * 2, x * x
    assert tape.grad([a, b], [x])[0].item() == 8.0            # d(2x)/dx + d(x^2)/dx


def test_broadcast_gradients_sum_back_to_the_inputs_shape():
    row, col = leaf(np.ones((1, 3))), leaf(np.ones((2, 1)))
    s = leaf(2.0)
    ((row * col + s) * np.arange(6.).reshape(2, 3)).sum().backward()
    assert row.grad.shape == (1, 3) and row.grad.tolist() == [[3., 5., 7.]]
    assert col.grad.tolist() == [[3.], [12.]] and s.grad.item() == 15.0


# ---- higher order ----------------------------------------------------------------------------
def test_third_derivative_of_a_cube():
    a = leaf(3.0)
    (g1,) = tape.grad(a ** 3, [a], create_graph=True)
    (g2,) = tape.grad(g1, [a], create_graph=True)
    (g3,) = tape.grad(g2, [a])
    assert (g1.item(), g2.item(), g3.item()) == (27.0, 18.0, 6.0)
    assert g1.requires_grad and not g3.requires_grad


def test_hessian_vector_product_through_indexing_and_slices():
    xv = np.array([0.3, -0.7, 1.1, 0.2])
    v = np.array([1.0, -2.0, 0.5, 3.0])

    def f(x):
        y = x * 1.0
        y[1:3] = np.tanh(x[[0, 0]]) * x[1:3]      # CopySlices and a repeated gather
        return np.sum(y ** 3) + np.sum(np.sin(x) * x[::-1])

    x = leaf(xv)
    (g,) = tape.grad(f(x), [x], create_graph=True)
    (hv,) = tape.grad((g * tape.tensor(v)).sum(), [x])
    grad = lambda a: tape.dynamic_grad(f)(a)    # noqa: E731
    expected = numeric_grad(lambda a: float(np.dot(grad(a), v)), xv)
    np.testing.assert_allclose(hv.numpy(), expected, rtol=1e-6, atol=1e-8)


# ---- in-place updates ------------------------------------------------------------------------
def test_every_in_place_update_bumps_the_version_and_names_the_node():
    x = leaf([1., 2.])
    b = x * 1
    steps = [(lambda: b.fill_(2.), "FillBackward2"), (lambda: b.zero_(), "ZeroBackward0"),
             (lambda: b.add_(1), "AddBackward0"), (lambda: b.__iadd__(1), "AddBackward0"),
             (lambda: b.__imul__(2), "MulBackward0"), (lambda: b.sub_(x), "SubBackward0"),
             (lambda: b.div_(2), "DivBackward0"), (lambda: b.__setitem__(0, 3.), "CopySlices"),
             (lambda: b.copy_(x), "CopyBackwards"), (lambda: b.fill_(x[0]), "FillBackward3")]
    for version, (step, name) in enumerate(steps, start=1):
        step()
        assert (b._version, b.grad_fn.name()) == (version, name)


def test_gradients_through_in_place_updates():
    xv, wv = np.array([0.5, -1.0, 2.0]), np.array(1.5)

    def f(x, w):
        b = x * 1.0
        b[1:] = x[:2] * w        # CopySlices with a gradient for both sides
        b *= w                   # MulBackward0 in place
        b[0] = 2.0               # the constant cuts x[0]'s old path
        b += x
        return (b * b).sum()

    x, w = leaf(xv), leaf(wv)
    f(x, w).backward()
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(lambda a: f(a, wv), xv), rtol=1e-6)
    np.testing.assert_allclose(w.grad.item(), numeric_grad(lambda c: f(xv, c), wv), rtol=1e-6)


def test_buffer_that_needs_no_grad_takes_one_that_does():
    w = leaf([1.0, 2.0])
    buf = tape.zeros(3)
    assert buf.is_leaf and not buf.requires_grad
    buf[:2] = w * w
    buf[2] = w[0]
    assert buf.requires_grad and buf.grad_fn.name() == "CopySlices"
    (buf * tape.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert w.grad.tolist() == [102.0, 40.0]


def test_detach_shares_the_version_counter_data_does_not():
    a = leaf([1.0, 2.0])
    d = a.detach()
    d[0] = 5.0
    assert a._version == 1 and a.tolist()[0] == 5.0
    a.data[1] = 7.0
    assert a._version == 1 and a.tolist() == [5.0, 7.0]


def test_in_place_errors():
    a = leaf([1.0, 2.0])
    for update in (lambda: a.fill_(1.0), lambda: a.zero_(), lambda: a.mul_(2),
                   lambda: a.__imul__(2), lambda: np.add(a, 1, out=a)):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            update()
    with tape.no_grad():
        a += 1                                   # allowed, and counted
    assert a._version == 1 and a.is_leaf
    b = a * 1
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match"):
        b += tape.ones(3, 2)
    c = tape.tensor([1, 2])
    with pytest.raises(TypeError, match="Cannot cast"):
        c += 0.5


def test_modified_output_of_exp_names_exp():
    x = leaf([1.0, 2.0])
    y = x.exp()               # exp's adjoint uses its own output
    z = y.sum()
    y[0] = 5.0
    with pytest.raises(RuntimeError, match=r"\[torch.DoubleTensor \[2\]\], which is output 0 of "
                                           r"ExpBackward0, is at version 1; expected version 0"):
        z.backward()


def test_saved_leaf_modified_under_no_grad():
    w = leaf([1.0, 2.0])
    y = (w * w).sum()
    with tape.no_grad():
        w[0] = 5.0
    with pytest.raises(RuntimeError, match=r"inplace operation: \[torch.DoubleTensor \[2\]\] is "
                                           r"at version 1; expected version 0 instead"):
        y.backward()


# ---- grad mode -------------------------------------------------------------------------------
def test_grad_modes():
    x = leaf(1.0)
    with tape.no_grad():
        y = x * 2
        assert not tape.is_grad_enabled()
        with tape.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.is_leaf and z.requires_grad
    with tape.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert tape.is_grad_enabled()

    @tape.no_grad()
    def double(t):
        return t * 2
    assert not double(x).requires_grad and tape.is_grad_enabled()
    tape.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        tape.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        tape.tensor([1, 2], requires_grad=True)
    x = leaf(1.0)
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        (x * 2).requires_grad = False
    assert not (x > 0).requires_grad and not x.detach().requires_grad
    assert not (x * 2).astype(np.int64).requires_grad


# ---- conversions -----------------------------------------------------------------------------
def test_math_and_float_refuse_a_tensor_that_requires_grad():
    x = leaf([0.5, 1.0])
    with pytest.raises(RuntimeError, match="would drop its gradient silently"):
        math.exp(x[0])
    with pytest.raises(RuntimeError, match="would drop its gradient"):
        float(x[0] * 2)
    with pytest.raises(ValueError, match="setting an array element") as err:
        np.zeros(2)[0] = x[0]                 # NumPy reports it, chained to our message
    assert "would drop its gradient" in str(err.value.__cause__)
    with pytest.raises(RuntimeError, match="Can't convert a Tensor that requires grad"):
        np.asarray(x)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        x.numpy()
    assert x[0].item() == 0.5 and float(x.detach()[0]) == 0.5
    with tape.no_grad():
        assert math.exp(x[1]) == pytest.approx(math.e)


def test_scalar_conversions_and_containers():
    t = tape.tensor([3.0, 4.0])
    assert [float(v) for v in t] == [3.0, 4.0] and len(t) == 2
    assert bool(tape.tensor([1.0])) and int(tape.tensor(7.9)) == 7
    assert ["a", "b", "c"][tape.tensor(2)] == "c"
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        bool(t)
    with pytest.raises(TypeError, match="0-d tensor"):
        len(tape.tensor(1.0))
    assert t[0] != 5.0 and (t == tape.tensor([3.0, 0.0])).tolist() == [True, False]
    assert {t: 1}[t] == 1                        # hashable by identity, like torch.Tensor


def test_copy_and_deepcopy():
    import copy
    x = leaf([1.0, 2.0])
    (x * x).sum().backward()
    y = copy.deepcopy(x)
    assert y.requires_grad and y.is_leaf and y.grad.tolist() == [2.0, 4.0]
    y.detach()[0] = 9.0
    assert x.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(x * 2)


# ---- forward mode ----------------------------------------------------------------------------
def test_dual_numbers_through_in_place_updates_and_broadcasting():
    xv, dv = np.array([0.3, 1.2, -0.5]), np.array([1.0, -1.0, 2.0])

    def f(x):
        y = x * np.ones((2, 1))
        y[0, 1:] = x[:2] ** 2
        y += np.sin(x)
        return np.sum(y * y, axis=0)

    with fwAD.dual_level():
        out = f(fwAD.make_dual(tape.tensor(xv), tape.tensor(dv)))
        tangent = fwAD.unpack_dual(out).tangent.numpy()
    eps = 1e-6
    expected = (f(tape.tensor(xv + eps * dv)).numpy() - f(tape.tensor(xv - eps * dv)).numpy())
    np.testing.assert_allclose(tangent, expected / (2 * eps), rtol=1e-6)


def test_forward_ad_errors_and_leaves():
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(tape.tensor(1.0), tape.tensor(1.0))
    w = leaf(2.0)
    with fwAD.dual_level() as level:
        assert level == 0
        with pytest.raises(RuntimeError, match="different size"):
            fwAD.make_dual(tape.tensor(1.0), tape.ones(3))
        d = fwAD.make_dual(w, tape.tensor(1.0))
        assert repr(d) == "tensor(2., grad_fn=<ViewBackward0>, tangent=1.0)"
        y = d * d
        assert fwAD.unpack_dual(y).tangent.item() == 4.0
    y.backward()                                  # the dual still reaches the leaf
    assert w.grad.item() == 4.0


# ---- the array-module seam -------------------------------------------------------------------
def test_numpy_data_never_imports_cupy():
    had_cupy = "cupy" in sys.modules
    x = leaf(np.ones(3))
    (np.exp(x) @ x).backward()
    assert array_module(x.detach().numpy()) is np
    assert x.device == "cpu"
    assert ("cupy" in sys.modules) == had_cupy


def test_cuda_device_needs_cupy():
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="needs CuPy"):
            tape.randn(2, requires_grad=True, device="cuda")
    else:
        x = tape.randn(2, requires_grad=True, device="cuda")
        assert x.device == "cuda:0" and repr(x).endswith("device='cuda:0', requires_grad=True)")


# ---- NumPy functions that write in place ----------------------------------------------------
def test_ufunc_at_with_a_value_that_requires_grad_is_refused():
    """``np.add.at`` writes in place and returns None: on the tape it would drop the gradient
    (into a plain array) or change a tensor unrecorded, so it is refused, as other NumPy
    functions without a derivative rule are. (The compiler takes ``np.add.at``.)"""
    x = leaf(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match="np.add.at is not differentiable on the tape"):
        np.add.at(np.zeros(3), np.array([0, 0, 2]), x * 2.0)
    y = tape.zeros(3, requires_grad=True)
    with pytest.raises(TypeError, match="np.add.at is not differentiable on the tape"):
        np.add.at(y, np.array([0, 0]), np.ones(2))
    plain = np.zeros(3)
    with tape.no_grad():
        np.add.at(plain, np.array([0, 0, 2]), x * 2.0)   # values only, on purpose
    np.testing.assert_array_equal(plain, [6.0, 0.0, 6.0])
