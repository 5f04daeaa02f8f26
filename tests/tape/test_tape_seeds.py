"""Every runnable example of the seed documents, on the dynamic tape, with the printed output.

Seeds 000/001/003 (PyTorch's autograd): the worked graph ``l1 = input*w1; l2 = l1 + w2;
l3 = l1*w3; l4 = l2*l3; loss = mean(l4)``, leaves, ``retain_grad``, hooks, ``_version`` and the
three in-place errors, ``.data`` / ``no_grad``, and backward twice. Seed 002 (the AD survey):
``f(x1, x2) = ln(x1) + x1*x2 - sin(x2)`` at (2, 5) in reverse mode (``tape.grad``, the dv tables)
and in forward mode (dual numbers), and ``backward(gradient, inputs=...)`` / ``create_graph``.

Where the seeds print an older PyTorch's names (``<ExpBackward>``, ``<LogBackward>``) the tape
prints the modern ones (``ExpBackward0``); the tests check both the exact modern text and that it
names the seed's node. Our default float is float64, so the in-place error says
``torch.DoubleTensor`` where the seeds (float32) say ``torch.FloatTensor``; with float32 data the
text is the seeds' exactly.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from adcompiler import tape
from adcompiler.tape import forward_ad as fwAD

ADDRESS = r"0x[0-9a-f]+"
MODIFIED = ("one of the variables needed for gradient computation has been modified by an "
            "inplace operation: [torch.{kind} [2]], which is output 0 of AddBackward0, is at "
            "version 1; expected version 0 instead. Hint: enable anomaly detection to find the "
            "operation that failed to compute its gradient, with "
            "torch.autograd.set_detect_anomaly(True).")
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
INTERIOR = "leaf variable has been moved into the graph interior"
TWICE = ("Trying to backward through the graph a second time, but the saved intermediate "
         "results have already been freed. Specify retain_graph=True when calling backward the "
         "first time.")


def forward(inp):
    """The seeds' worked example; returns every intermediate."""
    w1 = tape.tensor(2.0, requires_grad=True)
    w2 = tape.tensor(3.0, requires_grad=True)
    w3 = tape.tensor(4.0, requires_grad=True)
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    l4 = l2 * l3
    loss = l4.mean()
    return w1, w2, w3, l1, l2, l3, l4, loss


def exact(text):
    """A regex for ``text`` where ``<ADDR>`` stands for any object address."""
    return "^" + re.escape(text).replace(re.escape("<ADDR>"), ADDRESS) + "$"


# ---- the computation graph -------------------------------------------------------------------
def test_exp_prints_its_grad_fn():
    a = tape.tensor(2.0, requires_grad=True)
    b = a.exp()
    assert repr(b) == "tensor(7.3891, grad_fn=<ExpBackward0>)"
    assert type(b.grad_fn).__name__.startswith("ExpBackward")     # the seed's <ExpBackward>
    assert b.grad_fn.next_functions[0][0].variable is a


def test_forward_prints_data_grad_and_grad_fn(capsys):
    w1, w2, w3, l1, l2, l3, l4, loss = forward(tape.ones([2, 2], requires_grad=False))
    print(w1.data, w1.grad, w1.grad_fn)
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        print(l1.data, l1.grad, l1.grad_fn)
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        print(loss.data, loss.grad, loss.grad_fn)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "tensor(2.) None None"
    assert lines[1] == "tensor([[2., 2.],"
    assert re.match(exact("        [2., 2.]]) None <MulBackward0 object at <ADDR>>"), lines[2])
    assert re.match(exact("tensor(40.) None <MeanBackward0 object at <ADDR>>"), lines[3])


def test_backward_gives_28_8_10_and_no_grads_on_non_leaves(capsys):
    inp = tape.ones([2, 2], requires_grad=False)
    w1, w2, w3, l1, l2, l3, l4, loss = forward(inp)
    loss.backward()
    print(w1.grad, w2.grad, w3.grad)
    with pytest.warns(UserWarning):
        print(l1.grad, l2.grad, l3.grad, l4.grad, loss.grad)
    print(inp.grad)
    assert capsys.readouterr().out == ("tensor(28.) tensor(8.) tensor(10.)\n"
                                       "None None None None None\nNone\n")
    assert (w1.grad.item(), w2.grad.item(), w3.grad.item()) == (28.0, 8.0, 10.0)


def test_an_input_that_requires_grad_gets_14s():
    inp = tape.ones([2, 2], requires_grad=True)
    *_, loss = forward(inp)
    loss.backward()
    assert repr(inp.grad) == "tensor([[14., 14.],\n        [14., 14.]])"
    np.testing.assert_array_equal(inp.grad.numpy(), np.full((2, 2), 14.0))


# ---- leaf tensors ----------------------------------------------------------------------------
def test_leaves():
    a = tape.ones([2, 2], requires_grad=True)
    assert a.is_leaf
    b = a + 2
    assert not b.is_leaf                        # made by an operation, not by the user
    assert tape.ones([2, 2], requires_grad=False).is_leaf
    w1, w2, w3, l1, l2, l3, l4, loss = forward(tape.ones([2, 2]))
    assert [t.is_leaf for t in (w1, w2, w3, l1, l2, l3, l4, loss)] == [True] * 3 + [False] * 5


def test_retain_grad_keeps_intermediate_gradients():
    w1, w2, w3, l1, l2, l3, l4, loss = forward(tape.ones([2, 2], requires_grad=False))
    l1.retain_grad()
    l4.retain_grad()
    loss.retain_grad()
    loss.backward()
    assert repr(loss.grad) == "tensor(1.)"
    assert repr(l4.grad) == "tensor([[0.2500, 0.2500],\n        [0.2500, 0.2500]])"
    assert repr(l1.grad) == "tensor([[7., 7.],\n        [7., 7.]])"


def test_hooks_print_in_backward_order_and_keep_nothing(capsys):
    w1, w2, w3, l1, l2, l3, l4, loss = forward(tape.ones([2, 2], requires_grad=False))
    l1.register_hook(lambda grad: print('l1 grad: ', grad))
    l4.register_hook(lambda grad: print('l4 grad: ', grad))
    loss.register_hook(lambda grad: print('loss grad: ', grad))
    loss.backward()
    with pytest.warns(UserWarning):
        print(loss.grad)
    assert capsys.readouterr().out == (
        "loss grad:  tensor(1.)\n"
        "l4 grad:  tensor([[0.2500, 0.2500],\n        [0.2500, 0.2500]])\n"
        "l1 grad:  tensor([[7., 7.],\n        [7., 7.]])\n"
        "None\n")
    assert w1.grad.item() == 28.0               # printing hooks leave the gradients alone


# ---- in-place operations ---------------------------------------------------------------------
def test_rebinding_is_not_in_place_but_item_assignment_is():
    a = tape.tensor([3.0, 1.0])
    before = id(a)
    a = a.exp()
    assert id(a) != before
    a = tape.tensor([3.0, 1.0])
    before = id(a)
    a[0] = 10
    assert id(a) == before
    assert repr(a) == "tensor([10.,  1.])"
    assert a._version == 1


@pytest.mark.parametrize("dtype, kind", [(None, "DoubleTensor"), (np.float32, "FloatTensor")])
def test_version_counter_and_modified_error(dtype, kind):
    a = tape.tensor([1.0, 3.0], requires_grad=True, dtype=dtype)
    b = a + 2
    assert b._version == 0
    loss = (b * b).mean()
    b[0] = 1000.0
    assert b._version == 1
    with pytest.raises(RuntimeError) as err:
        loss.backward()
    assert str(err.value) == MODIFIED.format(kind=kind)


def test_no_error_where_the_adjoint_needs_no_saved_value():
    x = tape.tensor([1.0, 3.0], requires_grad=True)
    b = x * 2
    y = (b + 1).sum()          # y = b + 1: dy/db is 1, whatever b holds
    b[0] = 1000.0
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_slice_assignment_moves_a_leaf_into_the_graph_interior():
    a = tape.tensor([10., 5., 2., 3.], requires_grad=True)
    assert (repr(a), a.is_leaf) == ("tensor([10.,  5.,  2.,  3.], requires_grad=True)", True)
    a[:] = 0
    assert (repr(a), a.is_leaf) == ("tensor([0., 0., 0., 0.], grad_fn=<CopySlices>)", False)
    loss = (a * a).mean()
    with pytest.raises(RuntimeError, match=f"^{INTERIOR}$"):
        loss.backward()


def test_in_place_update_of_a_leaf_raises_at_once():
    a = tape.tensor([10., 5., 2., 3.], requires_grad=True)
    with pytest.raises(RuntimeError, match=f"^{re.escape(LEAF_INPLACE)}$"):
        a.add_(10.)
    with pytest.raises(RuntimeError, match=f"^{re.escape(LEAF_INPLACE)}$"):
        a += 10.
    assert a._version == 0 and a.tolist() == [10., 5., 2., 3.]


@pytest.mark.parametrize("way", ["data", "detach"])
def test_method_one_fill_through_data_or_detach(way):
    a = tape.tensor([10., 5., 2., 3.], requires_grad=True)
    before = id(a)
    (a.data if way == "data" else a.detach()).fill_(10.)
    assert repr(a) == "tensor([10., 10., 10., 10.], requires_grad=True)"
    assert a.is_leaf and id(a) == before
    assert a._version == (0 if way == "data" else 1)   # .data has its own version counter
    loss = (a * a).mean()
    loss.backward()
    assert repr(a.grad) == "tensor([5., 5., 5., 5.])"


def test_method_two_assign_under_no_grad():
    a = tape.tensor([10., 5., 2., 3.], requires_grad=True)
    with tape.no_grad():
        a[:] = 10.
    assert (repr(a), a.is_leaf) == ("tensor([10., 10., 10., 10.], requires_grad=True)", True)
    loss = (a * a).mean()
    loss.backward()
    assert repr(a.grad) == "tensor([5., 5., 5., 5.])"


# ---- dynamic graphs --------------------------------------------------------------------------
def test_backward_twice_fails_and_rebuilding_works():
    a = tape.tensor([3.0, 1.0], requires_grad=True)
    b = a * a
    loss = b.mean()
    loss.backward()
    with pytest.raises(RuntimeError) as err:
        loss.backward()
    assert str(err.value) == TWICE
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 1.0])   # the first pass only
    a = tape.tensor([3.0, 1.0], requires_grad=True)
    b = a * a
    loss = b.mean()
    loss.backward()
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 1.0])


def test_retain_graph_allows_a_second_backward():
    a = tape.tensor([3.0, 1.0], requires_grad=True)
    loss = (a * a).mean()
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_array_equal(a.grad.numpy(), [6.0, 2.0])  # accumulated twice


def test_tolist_of_a_randn_tensor():
    x = tape.randn(2, requires_grad=True)
    values = x.tolist()
    assert isinstance(values, list) and len(values) == 2
    assert all(isinstance(v, float) for v in values) and values == list(x.detach().numpy())
    assert repr(x).endswith(", requires_grad=True)")


def test_broadcasting_in_numpy_itself():
    a = np.array([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(a + [[2], [3]], [[3, 4, 5], [7, 8, 9]])
    t = tape.tensor(a) + [[2], [3]]
    assert repr(t) == "tensor([[3, 4, 5],\n        [7, 8, 9]])"


# ---- seed 002: the survey's f(x1, x2) = ln(x1) + x1*x2 - sin(x2) at (2, 5) -----------------
def seed_f_inputs():
    return tape.tensor(2., requires_grad=True), tape.tensor(5., requires_grad=True)


def test_original_version(capsys):
    x1, x2 = seed_f_inputs()
    y = tape.log(x1) + x1 * x2 - tape.sin(x2)
    grads = tape.grad(y, [x1, x2])
    print('y is :', y)
    print('grad is : ', grads[0], grads[1])
    assert capsys.readouterr().out == ("y is : tensor(11.6521, grad_fn=<SubBackward0>)\n"
                                       "grad is :  tensor(5.5000) tensor(1.7163)\n")
    assert x1.grad is None and x2.grad is None     # grad() returns, it does not accumulate
    assert grads[1].item() == pytest.approx(2.0 - np.cos(5.0))


def test_forward_mode_simulation_with_grad(capsys):
    x1, x2 = seed_f_inputs()
    v1 = np.log(x1)                   # unmodified NumPy calls record too
    v2 = x1 * x2
    v3 = np.sin(x2)
    v4 = v1 + v2
    y = v4 - v3
    dv1 = tape.grad(v1, [x1], retain_graph=True)
    dv2 = tape.grad(v2, [x1], retain_graph=True)
    dv3 = tape.grad(v3, [x2], retain_graph=True)
    dv4 = tape.grad(v4, [x1, x2], retain_graph=True)
    grads = tape.grad(y, [x1, x2])
    for name, value in [("v1", v1), ("v2", v2), ("v3", v3), ("v4", v4), ("y", y)]:
        print(f"{name} is :", value)
    for name, value in [("dv1", dv1), ("dv2", dv2), ("dv3", dv3), ("dv4", dv4)]:
        print(f"{name} is :", value)
    print('grad is : ', grads[0], grads[1])
    assert capsys.readouterr().out == (
        "v1 is : tensor(0.6931, grad_fn=<LogBackward0>)\n"
        "v2 is : tensor(10., grad_fn=<MulBackward0>)\n"
        "v3 is : tensor(-0.9589, grad_fn=<SinBackward0>)\n"
        "v4 is : tensor(10.6931, grad_fn=<AddBackward0>)\n"
        "y is : tensor(11.6521, grad_fn=<SubBackward0>)\n"
        "dv1 is : (tensor(0.5000),)\n"
        "dv2 is : (tensor(5.),)\n"
        "dv3 is : (tensor(0.2837),)\n"
        "dv4 is : (tensor(5.5000), tensor(2.))\n"
        "grad is :  tensor(5.5000) tensor(1.7163)\n")


def test_reverse_mode_simulation_with_grad():
    x1, x2 = seed_f_inputs()
    v1 = tape.log(x1)
    v2 = x1 * x2
    v3 = tape.sin(x2)
    v4 = v1 + v2
    y = v4 - v3
    table = {"dv4": (y, [v4]), "dv3": (y, [v3]), "dv2": (v4, [v2]), "dv1": (v4, [v1]),
             "dv0": (v3, [x2]), "dv21": (v2, [x1]), "dv22": (v2, [x2]), "dv11": (v1, [x1])}
    printed = {name: repr(tape.grad(out, ins, retain_graph=True))
               for name, (out, ins) in table.items()}
    assert printed == {"dv4": "(tensor(1.),)", "dv3": "(tensor(-1.),)", "dv2": "(tensor(1.),)",
                       "dv1": "(tensor(1.),)", "dv0": "(tensor(0.2837),)",
                       "dv21": "(tensor(5.),)", "dv22": "(tensor(2.),)",
                       "dv11": "(tensor(0.5000),)"}
    grads = tape.grad(y, [x1, x2])
    assert repr(grads) == "(tensor(5.5000), tensor(1.7163))"


def test_forward_mode_with_dual_numbers():
    """The survey's tangent table: seeding x1 gives a Jacobian column per pass."""
    with fwAD.dual_level():
        x1 = fwAD.make_dual(tape.tensor(2.), tape.tensor(1.))
        x2 = fwAD.make_dual(tape.tensor(5.), tape.tensor(0.))
        v1 = np.log(x1)
        v2 = x1 * x2
        v3 = np.sin(x2)
        v4 = v1 + v2
        y = v4 - v3
        tangents = [fwAD.unpack_dual(v).tangent.item() for v in (v1, v2, v3, v4, y)]
        assert tangents == pytest.approx([0.5, 5.0, 0.0, 5.5, 5.5])
        assert repr(y) == "tensor(11.6521, tangent=5.5)"
        primal, tangent = fwAD.unpack_dual(y)
        assert (repr(primal), repr(tangent)) == ("tensor(11.6521)", "tensor(5.5000)")
        x1 = fwAD.make_dual(tape.tensor(2.), tape.tensor(0.))
        x2 = fwAD.make_dual(tape.tensor(5.), tape.tensor(1.))
        y = tape.log(x1) + x1 * x2 - tape.sin(x2)
        assert repr(fwAD.unpack_dual(y).tangent) == "tensor(1.7163)"
    assert fwAD.unpack_dual(y).tangent is None          # tangents vanish with their level


def test_backward_with_a_gradient_and_inputs():
    rng = np.random.default_rng(0)
    x = tape.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    y = tape.tensor(rng.standard_normal((2, 2)), requires_grad=True)

    def fn():
        return x ** 2 + y * x + y ** 2

    gradient = tape.ones(2, 2)
    tape.backward(fn(), gradient, inputs=[x, y])
    xv, yv = x.detach().numpy(), y.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), 2 * xv + yv)
    np.testing.assert_allclose(y.grad.numpy(), xv + 2 * yv)


def test_backward_inputs_accumulates_only_into_those():
    a = tape.tensor(1.0, requires_grad=True)
    b = tape.tensor(2.0, requires_grad=True)
    z = a ** 3 + b
    tape.backward([z], inputs=[a])
    assert a.grad.item() == 3.0 and b.grad is None


def test_create_graph_gives_differentiable_gradients():
    rng = np.random.default_rng(1)
    x = tape.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    y = tape.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    z = x ** 2 + y * x + y ** 2
    z.backward(tape.ones(2, 2), create_graph=True)
    x_grad = 2 * x + y
    y_grad = x + 2 * y
    np.testing.assert_allclose(x.grad.detach().numpy(), x_grad.detach().numpy())
    np.testing.assert_allclose(y.grad.detach().numpy(), y_grad.detach().numpy())
    assert repr(x.grad).endswith("grad_fn=<CopyBackwards>)")    # as the seed prints
    grad_sum = 2 * x.grad + y.grad
    (x_hv,) = tape.grad(outputs=[grad_sum], grad_outputs=[tape.ones(2, 2)], inputs=[x],
                        create_graph=True)
    np.testing.assert_array_equal(x_hv.detach().numpy(), np.full((2, 2), 5.0))  # 2*2 + 1
