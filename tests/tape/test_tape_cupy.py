"""The dynamic tape on CuPy arrays: results stay on the device and equal the tape's on NumPy
arrays and the compiled gradients (the static-versus-dynamic comparison, on the device).

Run on tests/fake_cupy.py (NumPy playing CuPy, as strict as CuPy: no implicit host copies, no
NumPy function dispatching to device arrays, repeated indices written in an order that is not
NumPy's), and, where CuPy sees a GPU, on the GPU.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import adcompiler as ad
from adcompiler import tape
from adcompiler.tape.xp import compute

from tests import fake_cupy
from tests.fake_cupy import on_device
from tests.control_strategies import control_programs, tape_program
from tests.cupy_helpers import BINARY, HAS_GPU, UNARY, assert_close, cases, elementwise
from tests.strategies import load, programs

CASES = cases(np.random.default_rng(8))
# derandomized, as the other random-program tests: a fixed set of programs each run, so a
# CI run cannot fail on a program no earlier run drew (a constant array meeting device
# tensors, say, which raises PyTorch's device error by design)
SETTINGS = dict(deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))


@pytest.fixture
def cp():
    with fake_cupy.install() as module:
        yield module


def _expression(t, w):
    h = np.tanh(t @ w) * 2.0 + np.exp(-t[:, :1]) / (1.0 + t[:, 1:2] ** 2)
    h = np.where(h > 0.1, h, 0.5 * h) + np.maximum(h, -0.2) * np.sum(t, axis=1, keepdims=True)
    h[0] = h[1] * 3.0
    return (h.reshape(-1)[::2].mean() + np.linalg.norm(t) + (t.T @ t).sum()).astype(np.float32)


def test_tape_on_the_device_equals_the_tape_on_the_host(cp):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((6, 3)), rng.standard_normal((3, 4))
    grads, devices = [], []
    for data in ((x, w), on_device(cp, (x, w))):
        t, v = (tape.tensor(a, requires_grad=True) for a in data)
        loss = _expression(t, v)
        loss.backward()
        assert loss.dtype == np.float32
        grads.append((t.grad._data, v.grad._data))
        devices.append(t.grad.device)
    assert devices == ["cpu", "cuda:0"] and type(grads[1][0]) is fake_cupy.ndarray
    assert_close(grads[1], grads[0], 1e-6)   # through a float32 result


def _primitive_calls():
    """``(prim, args, params)`` for every primitive that computes on arrays."""
    rng = np.random.default_rng(3)
    m, v = rng.uniform(0.2, 0.9, (3, 4)), rng.uniform(0.2, 0.9, 4)
    idx, rows = np.array([2, 0, 2]), (("a", 0), ("s", None, None, None))
    axes = [{"axis": None, "keepdims": False}, {"axis": 1, "keepdims": True}]
    calls = [(p, (m,), {}) for p in UNARY] + [(p, (m, v), {}) for p in BINARY]
    calls += [(p, (m,), kw) for p in ("sum", "mean", "prod", "max", "min") for kw in axes]
    calls += [(p, (m, 0.5), {}) for p in ("add", "power", "maximum")] + [
        ("subtract", (2.0, m), {}), ("where", (m > 0.5, m, 0.0), {}),
        ("clip", (m, 0.3, v), {}), ("matmul", (m, m.T), {}), ("dot", (m, v), {}),
        ("outer", (v, v), {}), ("transpose", (m,), {"axes": (1, 0)}),
        ("reshape", (m,), {"shape": (2, 6)}), ("expand_dims", (v,), {"axis": 0}),
        ("squeeze", (m[:1],), {"axis": None}), ("broadcast_to", (v,), {"shape": (2, 3, 4)}),
        ("concatenate", (m, m), {"axis": 0}), ("stack", (v, v), {"axis": 1}),
        ("stack", (m[0, :1].reshape(()), 0.5), {"axis": 0}),
        ("getitem", (m, idx), {"index": rows}), ("setitem", (m, m, idx), {"index": rows}),
        ("last_writes", (m, idx), {"index": rows}), ("zeros_like", (m,), {}),
        ("ones_like", (m,), {}), ("full", (m[0, :1].reshape(()), (2, 2)), {"dtype": None}),
        ("astype", (m,), {"dtype": np.dtype(np.float32)}), ("copy", (m,), {}),
        ("asarray", (m,), {}), ("to_float", (m[0, :1].reshape(()),), {}),
        ("sum_to", (m,), {"shape": (1, 4)}),
        ("scatter_add", (m, idx), {"shape": (3, 4), "index": rows}),
        ("index_add", (m, m, idx), {"index": rows}), ("list_get", ([m, v], 1), {})]
    return calls


def test_every_primitive_computes_on_the_device_what_numpy_computes(cp):
    """The tape's own dispatch (``tape.xp.compute``): CuPy's spelling of each primitive on CuPy
    arrays, against the compiler's NumPy reference; repeated indices included."""
    for prim, args, params in _primitive_calls():
        want = compute(prim, list(args), params)
        got = compute(prim, [[cp.asarray(x) for x in a] if isinstance(a, list) else
                             cp.asarray(a) if isinstance(a, np.ndarray) else a
                             for a in args], params)
        assert type(got) is (float if prim == "to_float" else fake_cupy.ndarray), prim
        assert_close(got, want, 1e-14)
        assert prim == "to_float" or got.dtype == np.asarray(want).dtype, prim


@pytest.mark.parametrize("cid, f, args, wrt", CASES, ids=[c[0] for c in CASES])
def test_dynamic_gradients_on_the_device_equal_the_compiled_ones(cp, cid, f, args, wrt):
    """Static versus dynamic, on the device: the tape on CuPy arrays, the compiled CuPy code,
    and the compiled NumPy code agree."""
    dynamic = tape.dynamic_grad(f, wrt=wrt)(*on_device(cp, args))
    static = ad.grad(f, wrt=wrt, backend="cupy")(*on_device(cp, args))
    rtol = 1e-5 if "f32" in cid else 1e-10
    assert_close(dynamic, static, rtol)
    assert_close(dynamic, ad.grad(f, wrt=wrt)(*args), rtol)
    for g, a in zip(dynamic if isinstance(dynamic, tuple) else (dynamic,), [args[i] for i in wrt]):
        assert type(g) is (float if isinstance(a, float) else fake_cupy.ndarray)


def test_astype_and_assignment_under_create_graph_run_on_the_device(cp):
    """Once NumPy-only paths: ``.astype()`` of a device tensor, and indexed assignment recorded
    under ``create_graph=True`` (second derivatives through a ``CopySlices``)."""
    x = np.linspace(-1.0, 1.0, 5)
    results = []
    for data in (x, cp.asarray(x)):
        t = tape.tensor(data, requires_grad=True)
        y = (t * t).astype(np.float32).astype(np.float64) * t
        buf = tape.zeros(5, device=t.device)
        buf[1:] = y[:-1] * t[1:]
        (g,) = tape.grad(buf.sum(), t, create_graph=True)
        g.sum().backward()
        results.append((g.detach()._data, t.grad._data))
    assert_close(results[1], results[0], 1e-6)


def test_repeated_indices_keep_numpys_last_write_on_the_device(cp):
    v, idx = np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([0, 0, 2, 1, 2])

    def f(v, idx):
        y = tape.zeros(3, device=v.device)
        y[idx] = v * v
        return (y * tape.tensor(np.array([1.0, 2.0, 3.0]), device=v.device)).sum()
    want = tape.dynamic_value_and_grad(f)(v, idx)
    assert float(want[0]) == 4.0 + 2 * 16.0 + 3 * 25.0   # NumPy: the last writes stay
    assert_close(tape.dynamic_value_and_grad(f)(cp.asarray(v), cp.asarray(idx)), want, 1e-12)


def test_numpy_arrays_mixed_with_device_tensors_are_refused(cp):
    t = tape.tensor(cp.asarray(np.ones(3)), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"same device, but found at least two devices, "
                                           r"cuda:0 and cpu! \(multiply was given a CuPy"):
        t * np.ones(3)
    with pytest.raises(RuntimeError, match="found at least two devices, cpu, cuda:0"):
        t + tape.tensor(np.ones(3))
    with pytest.raises(RuntimeError, match="same device"):
        t[0] = tape.tensor(np.ones(()), requires_grad=True)
    # scalars are fine: Python's, NumPy's, and 0-d NumPy constants
    y = (t * np.float64(2.0) + np.array(1.5) - 1).sum()
    y.backward()
    assert t.grad.device == "cuda:0" and t.grad.tolist() == [2.0, 2.0, 2.0]


def test_forward_mode_hooks_and_plain_functions_on_the_device(cp):
    x = cp.asarray(np.array([0.5, -1.0, 2.0]))
    with tape.forward_ad.dual_level():
        d = tape.forward_ad.make_dual(tape.tensor(x), tape.tensor(cp.ones(3)))
        tangent = tape.forward_ad.unpack_dual(np.sum(np.sin(d) * d)).tangent
    assert float(tangent) == pytest.approx(float(np.sum(np.cos([0.5, -1.0, 2.0])
                                                        * [0.5, -1.0, 2.0]
                                                        + np.sin([0.5, -1.0, 2.0]))))
    t = tape.tensor(x, requires_grad=True)
    seen = []
    t.register_hook(lambda g: seen.append(g.device))
    (np.floor(t.detach()) * t).sum().backward()   # np.floor has no rule: CuPy's, no gradient
    assert seen == ["cuda:0"] and t.grad.tolist() == [0.0, -1.0, 2.0]
    assert [i.tolist() for i in np.where(t.detach() > 0)] == [[0, 2]]
    assert tape.randn(2, 3, device="cuda").device == "cuda:0"


# ---- random programs: the tape on the device against the tape on the host -------------------
def _device_zeros(*args, **kwargs):
    return tape.zeros(*args, device="cuda", **kwargs)


def _tape_on_device(program, tmp_path):
    _, f, args = load(tape_program(program), tmp_path)
    want = tape.dynamic_grad(f, wrt=(0, 1, 2))(*args)
    with fake_cupy.install() as cp, np.errstate(all="ignore"):
        f.__globals__["_tape"] = type("DeviceTape", (), {"zeros": staticmethod(_device_zeros)})
        got = tape.dynamic_grad(f, wrt=(0, 1, 2))(*on_device(cp, args))
    assert_close(got, want, 1e-10)
    for g, a in zip(got, args):
        assert type(g) is (float if isinstance(a, float) else fake_cupy.ndarray)


def test_a_python_number_as_either_operand_of_outer_and_dot(cp):
    """cupy.outer(x, 0.0) raises (CuPy's functions take arrays): every operand is moved (a
    random control-flow program computed np.outer(x, v1) with v1 = 0.0), forward and back."""
    x = np.array([0.5, -1.0, 2.0])
    t = tape.tensor(on_device(cp, (x,))[0], requires_grad=True)
    np.testing.assert_array_equal(np.outer(t, 2.0).detach().numpy(), np.outer(x, 2.0))
    np.testing.assert_array_equal(np.outer(3.0, t).detach().numpy(), np.outer(3.0, x))
    np.testing.assert_array_equal(np.dot(3.0, t).detach().numpy(), 3.0 * x)
    # and back: the rules reshape the Python number too (a random program's loop computed
    # np.outer(v2, x) with v2 = 0.0 and failed in the backward pass)
    w = on_device(cp, (np.array([1.0, 2.0, -1.0]),))[0]
    (np.outer(3.0, t) * w).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [3.0, 6.0, -3.0])
    t.grad = None
    (np.outer(t, 0.5) * 4.0).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [2.0, 2.0, 2.0])


@settings(max_examples=40, **SETTINGS)
@given(program=programs())
def test_random_programs_on_the_device_tape(tmp_path_factory, program):
    _tape_on_device(program, tmp_path_factory.mktemp("p"))


@settings(max_examples=40, **SETTINGS)
@given(program=control_programs(math=False))
def test_random_control_flow_on_the_device_tape(tmp_path_factory, program):
    _tape_on_device(program, tmp_path_factory.mktemp("p"))


# ---- on the GPU -------------------------------------------------------------------------------
@pytest.mark.skipif(not HAS_GPU, reason="needs CuPy and a CUDA device")
def test_gpu_tape_runs_on_cupy_arrays():
    import cupy
    x = np.random.default_rng(4).standard_normal((64, 8))
    results = []
    for data in (x, cupy.asarray(x)):
        t = tape.tensor(data, requires_grad=True)
        loss = (np.tanh(t) * t + 3.0 * t * t - np.exp(-t)).sum()
        loss.backward()
        assert t.grad.device == ("cpu" if data is x else "cuda:0")
        results.append(t.grad.numpy())
    assert_close(results[1], results[0], 1e-10)
    dyn = tape.dynamic_grad(elementwise)(cupy.asarray(x.ravel()))
    assert_close(dyn, ad.grad(elementwise)(x.ravel()), 1e-10)


def test_diagonals_trace_and_diag_on_the_device(cp):
    """The diagonal's positions go to the operand's device (CuPy indexes with its own arrays)."""
    m = np.arange(9.0).reshape(3, 3) + 1.0
    v = np.array([1.0, -2.0])
    t, u = (tape.tensor(a, requires_grad=True) for a in on_device(cp, (m, v)))
    loss = np.trace(t) * 2.0 + np.sum(np.diagonal(t, 1) ** 2) + np.sum(np.diag(u, 1) * 3.0)
    loss.backward()
    assert float(loss.detach().numpy()) == 2.0 * 15.0 + 2.0 ** 2 + 6.0 ** 2 + 3.0 * -1.0
    want = 2.0 * np.eye(3)
    want[0, 1], want[1, 2] = 2 * 2.0, 2 * 6.0
    np.testing.assert_array_equal(t.grad.numpy(), want)
    np.testing.assert_array_equal(u.grad.numpy(), [3.0, 3.0])
    assert type(t.grad._data) is fake_cupy.ndarray
