"""The dynamic tape's answers to misuse found in a user trial: what a hook returns, what a
``custom_vjp``'s ``bwd`` returns, what is assigned to ``.grad``, ``retain_grad()`` on a view
written in place, ``@no_grad`` without parentheses, and non-tensors handed to ``backward`` and
``grad``. Each point is asserted on the tape alone, and again against PyTorch (the oracle) where
it is installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape


@pytest.fixture
def torch():
    """PyTorch with float64 as its default dtype (the tape's), or the test is skipped."""
    torch = pytest.importorskip("torch")
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield torch
    torch.set_default_dtype(previous)


def outcome(fn):
    """``("ok", value)`` or ``(error type name, message)``: what ``fn()`` did."""
    try:
        value = fn()
    except Exception as exc:   # noqa: BLE001 - the error is the result being compared
        return type(exc).__name__, str(exc)
    return "ok", value


def leaf(m, data):
    return m.tensor(data, requires_grad=True)


def grad_list(t):
    return None if t.grad is None else t.grad.tolist()


# ---- 1. a hook's result must be a tensor of the gradient's shape and dtype -------------------
def clip_typo(g):
    return g.sum()


HOOKS = {"sum": lambda g: g.sum(), "first": lambda g: g[:1], "row": lambda g: g.reshape(1, 3),
         "list": lambda g: g.tolist(), "ndarray": lambda g: g.numpy(), "float": lambda g: 1.0,
         "tuple": lambda g: (g,), "float32": lambda g: g.float(), "named": clip_typo,
         "double": lambda g: g * 2, "none": lambda g: None}


def run_hook(m, hook, on_leaf, create_graph=False):
    x = leaf(m, [1., 2., 3.])
    y = x if on_leaf else x * 2
    y.register_hook(hook)
    (y * 3).sum().backward(create_graph=create_graph)
    return grad_list(x)


@pytest.mark.parametrize("on_leaf", [True, False], ids=["leaf", "non-leaf"])
def test_hook_results_are_checked(on_leaf):
    for name in ("sum", "first", "row"):
        with pytest.raises(RuntimeError, match=r"^hook '<lambda>' has changed the size of value"):
            run_hook(tape, HOOKS[name], on_leaf)
    with pytest.raises(RuntimeError, match="^hook 'clip_typo' has changed the size of value"):
        run_hook(tape, clip_typo, on_leaf, create_graph=True)
    for name, shown in [("list", "list"), ("ndarray", "numpy.ndarray"), ("float", "float")]:
        with pytest.raises(TypeError, match=f"^expected Variable, but hook returned '{shown}'"):
            run_hook(tape, HOOKS[name], on_leaf)
    with pytest.raises(RuntimeError, match=r"has changed the type of value \(was "
                                           r"torch.DoubleTensor got torch.FloatTensor\)"):
        run_hook(tape, HOOKS["float32"], on_leaf)
    scale = 1.0 if on_leaf else 2.0                  # y = 2x for a non-leaf
    assert run_hook(tape, HOOKS["double"], on_leaf) == [6.0 * scale] * 3
    assert run_hook(tape, HOOKS["none"], on_leaf) == [3.0 * scale] * 3


@pytest.mark.parametrize("on_leaf", [True, False], ids=["leaf", "non-leaf"])
@pytest.mark.parametrize("name", sorted(HOOKS))
def test_hook_results_as_torch(torch, name, on_leaf):
    ours = outcome(lambda: run_hook(tape, HOOKS[name], on_leaf))
    theirs = outcome(lambda: run_hook(torch, HOOKS[name], on_leaf))
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1] if ours[0] == "ok" else ours[1].startswith(theirs[1])


# ---- 2. a custom_vjp's bwd must return its arguments' shapes ---------------------------------
@ad.custom_vjp
def sumsq(x):
    return np.sum(x * x)


def sumsq_fwd(x):
    return np.sum(x * x), x


def sumsq_bwd(x, g):
    return (2 * x * g,)


def summed_bwd(x, g):        # summed too far: a () cotangent for a (3,) argument
    return (np.sum(2 * x * g),)


def stacked_bwd(x, g):       # one row too many: (2, 3), which sums to (3,)
    return (np.stack([x * g, x * g]),)


def upcast_bwd(x, g):        # float64 for a float32 argument
    return ((2 * x * g).astype(np.float64),)


def sum_of_squares(name, bwd):
    """``sumsq`` with another ``bwd``, called ``name``."""
    fn = ad.custom_vjp(lambda x: np.sum(x * x))
    fn.__name__ = name
    fn.defvjp(sumsq_fwd, bwd)
    return fn


sumsq.defvjp(sumsq_fwd, sumsq_bwd)
summed = sum_of_squares("summed", summed_bwd)
stacked = sum_of_squares("stacked", stacked_bwd)
upcast = sum_of_squares("upcast", upcast_bwd)


def test_custom_vjp_cotangents_must_have_the_arguments_shape():
    x = leaf(tape, [1., 2., 3.])
    sumsq(x).backward()
    assert x.grad.tolist() == [2., 4., 6.]
    with pytest.raises(RuntimeError, match=r"^Function SummedBackward returned an invalid "
                                           r"gradient at index 0 - got \[\] but expected shape "
                                           r"\[3\]: summed_bwd \(the bwd of custom_vjp summed\)"):
        summed(leaf(tape, [1., 2., 3.])).backward()
    # PyTorch would sum this one to (3,); the compiled gradient refuses it, and so does the tape
    with pytest.raises(RuntimeError, match=r"got \[2, 3\] but expected shape \[3\]"):
        stacked(leaf(tape, [1., 2., 3.])).backward()
    with pytest.raises(RuntimeError, match="the bwd of custom_vjp summed"):
        tape.dynamic_grad(lambda v: summed(v))(np.array([1., 2., 3.]))
    with pytest.raises(RuntimeError, match="got dtype float64 but expected float32"):
        upcast(leaf(tape, np.ones(3, np.float32))).backward()


def test_custom_vjp_cotangents_as_torch(torch):
    class Summed(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x * x).sum()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return (2 * x * g).sum()

    theirs = outcome(lambda: Summed.apply(leaf(torch, [1., 2., 3.])).backward())
    ours = outcome(lambda: summed(leaf(tape, [1., 2., 3.])).backward())
    phrase = "returned an invalid gradient at index 0 - got [] but expected shape"
    assert ours[0] == theirs[0] == "RuntimeError"
    assert phrase in ours[1] and phrase in theirs[1]


# ---- 3. .grad = value: a tensor of the leaf's dtype and shape, or None -----------------------
ASSIGNED = [  # (label, value from (module, leaf), error type, phrase in both messages)
    ("long", lambda m, x: m.tensor([0, 0]), "RuntimeError",
     "attempting to assign a gradient with dtype 'long int' to a tensor with grad_dtype 'Double'"),
    ("float32", lambda m, x: m.tensor([0., 0.]).float(), "RuntimeError",
     "attempting to assign a gradient with dtype 'float' to a tensor with grad_dtype 'Double'"),
    ("size", lambda m, x: m.zeros(3), "RuntimeError",
     "attempting to assign a gradient of size '[3]' to a tensor of size '[2]'"),
    ("ndarray", lambda m, x: np.zeros(2), "TypeError",
     "assigned grad expected to be a Tensor or None but got grad of type numpy.ndarray"),
    ("list", lambda m, x: [0., 0.], "TypeError",
     "assigned grad expected to be a Tensor or None but got grad of type list"),
    ("itself", lambda m, x: x, "RuntimeError", "can't assign Variable as its own grad"),
    ("zeros", lambda m, x: m.zeros(2), "ok", None),
    ("None", lambda m, x: None, "ok", None),
]


def assign_grad(m, make):
    x = leaf(m, [1., 2.])
    value = make(m, x)
    x.grad = value
    assert x.grad is value
    return x


@pytest.mark.parametrize("label, make, error, phrase", ASSIGNED, ids=[a[0] for a in ASSIGNED])
def test_assigned_grad_is_checked(label, make, error, phrase):
    kind, result = outcome(lambda: assign_grad(tape, make))
    assert kind == error
    if error != "ok":
        assert phrase in result
        return
    (result * result).sum().backward()           # accumulates into the assigned tensor
    assert result.grad.tolist() == [2., 4.] and result.grad.dtype == np.float64


@pytest.mark.parametrize("label, make, error, phrase", ASSIGNED, ids=[a[0] for a in ASSIGNED])
def test_assigned_grad_as_torch(torch, label, make, error, phrase):
    kind, message = outcome(lambda: assign_grad(torch, make))
    assert kind == error
    assert phrase is None or phrase in message


# ---- 4. retain_grad() keeps the gradient of the tensor's current value -----------------------
def retained(m, write, loss):
    """y = 2x, r = y[0] retains its grad; ``write(y, r)`` updates in place; backward of
    ``loss(y, r)``: r's retained gradient (None where r's current graph was not reached)."""
    x = leaf(m, [[1., 2.], [3., 4.]])
    y = x * 2
    r = y[0]
    r.retain_grad()
    write(y, r)
    loss(y, r).sum().backward()
    return grad_list(r)


WRITES = {"none": lambda y, r: None, "view": lambda y, r: r.mul_(5),
          "base": lambda y, r: y.mul_(5), "part": lambda y, r: r[0:1].mul_(5),
          "other row": lambda y, r: y[1].mul_(5)}
LOSSES = {"y*y": lambda y, r: y * y, "r*r": lambda y, r: r * r}


def test_retain_grad_through_a_view_written_in_place():
    assert retained(tape, WRITES["none"], LOSSES["r*r"]) == [4., 8.]
    assert retained(tape, WRITES["none"], LOSSES["y*y"]) is None    # r is not on y*y's graph
    assert retained(tape, WRITES["view"], LOSSES["y*y"]) is None    # was stale [100, 200]
    assert retained(tape, WRITES["base"], LOSSES["y*y"]) is None
    assert retained(tape, WRITES["view"], LOSSES["r*r"]) == [20., 40.]
    assert retained(tape, WRITES["part"], LOSSES["r*r"]) == [20., 8.]
    assert retained(tape, WRITES["other row"], LOSSES["r*r"]) == [4., 8.]
    x = leaf(tape, [1., 2.])
    y = x * 2
    y.retain_grad()
    y.mul_(5)
    (y * y).sum().backward()
    assert y.grad.tolist() == [20., 40.]     # not a view: the retained grad follows the update


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("write", sorted(WRITES))
def test_retain_grad_through_a_view_as_torch(torch, write, loss):
    ours = outcome(lambda: retained(tape, WRITES[write], LOSSES[loss]))
    theirs = outcome(lambda: retained(torch, WRITES[write], LOSSES[loss]))
    assert ours == theirs


# ---- 5. @no_grad and @enable_grad without parentheses ----------------------------------------
def decorated(m):
    """Whether results require grad under bare ``@no_grad``, and bare ``@enable_grad`` inside
    ``no_grad``."""
    @m.no_grad
    def step(w):
        """One step."""
        return w * 2

    @m.enable_grad
    def tracked(w):
        return w * 2

    w = leaf(m, [1.])
    with m.no_grad():
        inside = tracked(w).requires_grad
    return step(w).requires_grad, inside, step.__name__, step.__doc__


def test_bare_grad_mode_decorators():
    assert decorated(tape) == (False, True, "step", "One step.")
    with pytest.raises(TypeError, match=r"no_grad\(\) takes no arguments"):
        tape.no_grad(3)
    assert tape.is_grad_enabled()


def test_bare_grad_mode_decorators_as_torch(torch):
    assert decorated(tape) == decorated(torch)


# ---- 6. non-tensors handed to backward() and grad() ------------------------------------------
MISUSE = [  # (label, call on (module, x), error type, phrase in both messages or None)
    ("outputs a float", lambda m, x: m.autograd.grad(3.0, x), "TypeError", None),
    ("inputs an ndarray", lambda m, x: m.autograd.grad((x * x).sum(), np.ones(2)),
     "RuntimeError", "all inputs have to be Tensors"),
    ("inputs with a float", lambda m, x: m.autograd.grad((x * x).sum(), [x, 1.0]),
     "RuntimeError", "all inputs have to be Tensors"),
    ("inputs empty", lambda m, x: m.autograd.grad((x * x).sum(), []),
     "RuntimeError", "`inputs` argument to `grad()` cannot be empty."),
    ("backward inputs an ndarray", lambda m, x: (x * x).sum().backward(inputs=np.ones(2)),
     "RuntimeError", "all inputs have to be Tensors"),
    ("backward inputs empty", lambda m, x: (x * x).sum().backward(inputs=[]),
     "RuntimeError", "`inputs` argument to `backward()` cannot be empty."),
    ("gradient a str", lambda m, x: (x * x).backward("abc"),
     "TypeError", "gradients can be either Tensors or None, but got str"),
]


class _Autograd:
    """``tape`` spelled as ``torch``: ``m.autograd.grad``."""
    autograd = tape
    tensor = staticmethod(tape.tensor)


@pytest.mark.parametrize("label, call, error, phrase", MISUSE, ids=[m[0] for m in MISUSE])
def test_misuse_of_backward_and_grad(label, call, error, phrase):
    kind, message = outcome(lambda: call(_Autograd, leaf(tape, [1., 2.])))
    assert kind == error
    assert phrase is None or phrase in message
    assert "object has no attribute" not in message


def test_misuse_messages_say_what_was_given():
    x = leaf(tape, [1., 2.])
    with pytest.raises(TypeError, match="outputs to differentiate must be Tensors .* got float"):
        tape.grad(3.0, x)
    with pytest.raises(RuntimeError, match="all inputs have to be Tensors, but got numpy.ndarray"):
        tape.grad((x * x).sum(), np.ones(2))
    (x * x).backward(np.ones(2))      # an array of numbers is a gradient on the tape (NumPy's)
    assert x.grad.tolist() == [2., 4.]


@pytest.mark.parametrize("label, call, error, phrase", MISUSE, ids=[m[0] for m in MISUSE])
def test_misuse_of_backward_and_grad_as_torch(torch, label, call, error, phrase):
    kind, message = outcome(lambda: call(torch, leaf(torch, [1., 2.])))
    assert kind == error
    assert phrase is None or phrase in message
