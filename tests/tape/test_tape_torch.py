"""The tape against PyTorch itself, when it is installed (an optional check, skipped without it).

The same expressions run on ``adcompiler.tape`` and on ``torch`` (float64 both): values, printed
text (PyTorch's default dtype set to float64, ours), ``grad_fn`` names and first and second
derivatives must agree. (Known differences, not exercised: ``2 / x`` records one DivBackward0
where PyTorch records a reciprocal and a MulBackward0; ``x // y`` records no node (it carries no
gradient, as ``sign``), where PyTorch records one whose backward raises "not implemented", and
``2.0 % x`` records a RemainderBackward1 with the remainder's rule, where PyTorch has none.)
"""

from __future__ import annotations

import numpy as np
import pytest

from adcompiler import tape

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def float64_by_default():
    """PyTorch then prints float64 as we do, without a dtype suffix."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)

EXPRESSIONS = {
    "seed f": lambda m, x, y: m.log(x) + x * y - m.sin(y),
    "broadcast": lambda m, x, y: (x * y.reshape(-1, 1) + 2.0) ** 2,
    "reductions": lambda m, x, y: m.sum(m.exp(x) / (1 + y), dim=0),
    "mean": lambda m, x, y: (x * x).mean() - y.amax(),
    "where": lambda m, x, y: m.where(x > y, x, y * 3.0),
    "clamp": lambda m, x, y: m.clamp(x - y, -0.5, 0.5) * x,
    "matmul": lambda m, x, y: m.tanh(x.reshape(2, 2)) @ y.reshape(2, 2),
    "slices": lambda m, x, y: x[1:] * y[:-1] - x[-1] + y[..., 1:3].sum(),
    "cat": lambda m, x, y: m.cat([x, y * 2]).reshape(2, 4).T,
    "pow": lambda m, x, y: 2 ** x + x ** y.abs() - (x * x + 1) / 3,
    "unary": lambda m, x, y: m.sqrt(x * x + 1) + m.atan(y) + m.log1p(x.abs()) - m.neg(y),
    "index": lambda m, x, y: x[[0, 2, 2]] * y[1],
    "remainder": lambda m, x, y: (x % (y * 1.3)) * x + m.remainder(x, 0.7),
}


def _inputs(lib):
    x = [0.3, 1.2, 0.8, 2.0]
    y = [1.1, 0.4, -0.7, 0.2]
    return lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)


def _names(t, seen=None):
    """Every node name behind ``t``, depth first, in next_functions order."""
    seen = [] if seen is None else seen
    stack = [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or any(node is s for s in seen):
            continue
        seen.append(node)
        stack.extend(reversed([n for n, _ in node.next_functions]))
    return [type(n).__name__ for n in seen]


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_same_as_pytorch(name):
    expr = EXPRESSIONS[name]
    (x, y), (tx, ty) = _inputs(tape), _inputs(torch)
    out, tout = expr(tape, x, y), expr(torch, tx, ty)
    assert repr(out) == repr(tout)
    assert _names(out) == _names(tout)
    weights = np.linspace(-1.0, 1.0, out.size).reshape(out.shape)
    gx, gy = tape.grad(out, [x, y], grad_outputs=weights, create_graph=True)
    tgx, tgy = torch.autograd.grad(tout, [tx, ty], torch.tensor(weights), create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), tgx.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gy.detach().numpy(), tgy.detach().numpy(), rtol=1e-12)
    second, tsecond = (gx * gy).sum(), (tgx * tgy).sum()
    assert second.requires_grad == tsecond.requires_grad    # False for a bilinear expression
    if tsecond.requires_grad:
        hx, = tape.grad(second, [x], allow_unused=True)
        thx, = torch.autograd.grad(tsecond, [tx], allow_unused=True)
        if thx is None:
            assert hx is None or not np.any(hx.numpy())
        else:
            np.testing.assert_allclose(hx.numpy(), thx.numpy(), rtol=1e-10, atol=1e-12)


def test_version_counting_as_pytorch():
    a, ta = tape.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0],
                                                                      requires_grad=True)
    b, tb = a * 1, ta * 1
    for step in (lambda t: t.add_(1), lambda t: t.__setitem__(0, 5.0), lambda t: t.mul_(2),
                 lambda t: t.fill_(3.0), lambda t: t.zero_(), lambda t: t.detach().add_(1)):
        step(b)
        step(tb)
        assert (b._version, type(b.grad_fn).__name__) == (tb._version, type(tb.grad_fn).__name__)


def test_node_names_that_depend_on_the_primitive_alone_come_from_its_row():
    from adcompiler.ir.primitives import PRIMS
    from adcompiler.tape.names import node_name
    assert PRIMS["transpose"].torch == "PermuteBackward0" == node_name("transpose", (), {})
    assert PRIMS["tanh"].torch == "TanhBackward0" == node_name("tanh", (), {})
    a = torch.ones(2, 3, requires_grad=True)
    t = tape.ones((2, 3), requires_grad=True)
    assert type(t.T.grad_fn).__name__ == type(a.T.grad_fn).__name__ == "PermuteBackward0"
