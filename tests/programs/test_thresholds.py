"""Every size threshold of the compiler, each tested on both sides of where it switches.

The compiler takes different code paths by array size. Each test here compiles a realistic
function at the largest size below a threshold and at the threshold (or the sizes on each side
of a ``>`` comparison), asserts that the path really switches there (a marker in ``.source`` or
``.ir``), and that the gradient equals the unoptimised compiled gradient (a new transform
object compiled inside :func:`adcompiler.backends.check_modes.unoptimised`), to 1e-12 normwise
relative in float64 (2e-6 in float32: the fused chains' SymPy rewrite rounds differently from
the plain code's operations, by a few float32 ulps). Planned code is called twice with different
inputs: the first gradient must survive the second call (buffers are reused across calls).

Size thresholds, one block each: module, constant, value (the comparison), what switches on at
or above it, and the tests that cross it. The value counts the elements of one value, not of an
argument (``x[1:]`` of a 4,096-element ``x`` has 4,095); for numba, of one loop piece.

adcompiler/passes/fuse.py  MIN_SIZE  4,096 elements (>=)
    Elementwise producer-consumer chains fuse into one ``fused`` node (``.ir``), and the SymPy
    pass (passes/algebra.py) rewrites the fused expression (``t1 + x * (7 - t1 ** 2)``); in loop
    bodies too. With ``backend="cupy"`` a fused chain is one ``cp.ElementwiseKernel`` (CuPy
    code plans no buffers and calls no numexpr). Tests: test_fuse_min_size,
    test_cupy_fuse_min_size, test_standalone_body_for_an_example_at_a_threshold.
adcompiler/backends/planner.py  MIN_BYTES  32,768 bytes (>=): 4,096 float64, 8,192 float32
    Elementwise results (fused or single) that cannot escape go into pooled ``out=_buf``
    buffers, fused chains computed op by op into them; a ``for`` loop's residual stacks are
    pooled (``hs = _buf0``); hoisted row arrays are pooled (``np.matmul(np.reshape(x, ...), Wx,
    out=_buf0)``), and so are other 2-D products that cannot escape (``np.matmul(A, B,
    out=_buf0)``). Tests: test_planner_min_bytes_elementwise, test_planner_min_bytes_loop_stacks,
    test_planner_min_bytes_row_arrays, test_planner_min_bytes_products,
    test_planner_min_bytes_other_modes (and test_fuse_min_size: in float64 both switch at 4,096
    elements).
adcompiler/passes/broadcast_products.py  MIN_ENTRIES  4,096 entries of the (n, k, d) product (>=)
    The float64 squared distances ``np.sum((X[:, None, :] - mu) ** 2, axis=2)`` and their
    adjoint are row norms and ``@`` of the operands translated by the smaller one's mean row
    (no (n, k, d) temporary); below, the broadcast as written. Plain broadcast products (``np.sum(A[:, None,
    :] * B[None], axis=2)``) are ``@`` at every size. Test: test_broadcast_products_min_entries.
adcompiler/backends/numexpr_chains.py  MIN_ELEMENTS  262,144 elements (>=)
    ``plan``: a float64 fused chain's arithmetic becomes ``ne.evaluate('...')`` (transcendentals
    stay ufuncs); ``threadable``: a ufunc into a buffer whose array arguments all have the
    result's shape runs as ``_threaded(np.f, ..., out=_buf)`` (adcompiler/runtime/threaded.py;
    float32 too). Only where numexpr is importable and on: ``ADCOMPILER_NUMEXPR=0``,
    ``numexpr_chains.disabled()`` and ``adcompiler compile`` turn both off. Tests:
    test_numexpr_min_elements, test_numexpr_float32_threads_without_numexpr.
adcompiler/backends/numba_emit.py  PARALLEL_MIN  32,768 elements of a loop piece (>=)
    An arithmetic-only loop piece becomes ``numba.prange`` (the kernel ``parallel=True``, the
    index ``numba.uint64(j)``). Test: test_numba_parallel_min.
adcompiler/backends/numba_emit.py  PARALLEL_MIN_CALLS  4,096 elements of a loop piece (>=)
    The same for a piece that calls a transcendental (``vtanh``, ``vexp``...). Test:
    test_numba_parallel_min_calls.
adcompiler/backends/numba_emit.py  WIDE_MIN  64 elements of a loop piece (>=)
    The piece calls ``wide_vectors()`` (LLVM may use 512-bit vectors) where they pay
    (backends/numba_target.py ``wide_vectors_pay``: AVX-512 CPUs of a list, or
    ``ADCOMPILER_NUMBA_VECTOR_BITS=512``; never with ``256``). Test: test_numba_wide_min.
adcompiler/backends/numba_emit.py  APART_MIN  4,194,304 elements of an output (>=)
    The wrapper allocates the output with ``empty_apart`` (runtime/apart.py: not at the page
    offset of an input the loop reads) instead of ``np.empty``. Test: test_numba_apart_min.
adcompiler/tape/format.py  THRESHOLD  1,000 elements (>)
    A tape tensor's repr is summarised, 3 edge items and ``...`` (from 1,001). Test:
    test_tape_repr_threshold.
adcompiler/backends/constants.py  SHOWN_ELEMENTS  8 elements (<=)
    The comment atop ``.source`` lists a constant array's values (``c: float64[8] = [...]``);
    from 9 on only its dtype and shape. Test: test_constants_comment_shown_elements.
adcompiler/aot/user_code.py  MAX_LITERAL  10,000 elements (>)
    ``adcompiler compile`` writes a constant array that is not a module-level name as a
    literal up to 10,000 elements; from 10,001 the function is refused (CompileError, nothing
    written for it). Test: test_standalone_max_literal.
adcompiler/aot/small_bodies.py  MIN_ELEMENTS  4,096 elements of a planned buffer (>=)
    A standalone module's body for every size runs itself where one of its buffers holds at
    least 4,096 elements, and hands the call to its body for small inputs (nothing planned or
    fused) below: ``if d1 < 4096: return _grad_loss_1_small(x)``. It is fusion's threshold and
    the planner's in float64. Test: test_small_body_min_elements.
adcompiler/frontend/expressions/comprehensions.py  MAX_ITERATIONS  1,000 items (>)
    A comprehension over an array's rows (or an unrolled loop) unrolls at most 1,000 items, and
    ``first, *rest = x`` puts at most 1,000 rows in ``rest``; more is a located CompileError.
    Tests: test_max_iterations_comprehension, test_max_iterations_unpacking.
adcompiler/backends/scatters.py  MIN_ENTRIES  2,048 values (>=)
    A gather's adjoint (and the user's ``np.add.at``) adding whole rows of a float64 target
    with one integer index array on its leading axis is ``t += _add_rows(idx, g, shape)`` (or
    ``t = _add_rows(...)``) from 2,048 values on, ``np.add.at`` below. Test:
    test_scatter_min_entries.
adcompiler/backends/scatters.py  MIN_WIDTH  4 values a row (>=)
    The same for rows of 4 values or more; narrower rows (and 1-D targets) keep ``np.add.at``.
    Test: test_scatter_min_width.
adcompiler/backends/scatters.py  TARGET_RATIO  10 target rows per index entry (<=)
    The same for a target of at most 10 times as many rows as the index has entries; beyond,
    ``np.add.at`` (the helper makes and adds the whole target). Test:
    test_scatter_target_ratio.
adcompiler/backends/scatters.py  SPARSE_ENTRIES  32,768 values (>=)
    Where SciPy is installed the helper is a sparse product (``scipy.sparse.csr_matrix``) from
    32,768 values on, flat indices through NumPy's 1-D ``np.add.at`` below (and always without
    SciPy). Test: test_scatter_sparse_entries.
adcompiler/api/tiers.py  ELEMENTS  1,000,000 array elements of a call, over every argument (>=)
    With numba installed, a ``grad``/``value_and_grad`` on the NumPy backend whose plan is a
    whole elementwise loop is compiled again for ``backend="numba"`` on a background thread,
    and runs the loop once its first result matched the NumPy code's (``.tier == "numba"``);
    below, the NumPy code only (``.tier == "numpy"``). ``tiered=True`` tiers up at any size.
    Test: test_tiers_elements.

Size-dependent choices without a constant of their own:

adcompiler/api/higher.py  choose_mode  input entries < output entries
    ``jacobian(mode="auto")`` takes forward mode (a jvp per input entry) below, reverse mode (a
    vjp per output entry) from equality on. Test: test_jacobian_mode_choice.
adcompiler/aot/polymorphic.py  _fresh, _Job.slots  sizes >= 2 become symbols (0 and 1 are kept)
    ``adcompiler compile`` merges variants compiled at the first primes above the example's
    sizes (and above 10): an example one element below a threshold (4,095) has variants above
    it whose code differs, so its body stays per shape; at the threshold the generalised body
    carries the planned code (``out=_buf``) to every size >= 2. Test:
    test_standalone_body_for_an_example_at_a_threshold.
adcompiler/backends/planner.py  _product_into_buffer  shapes, not sizes
    A large 2-D ``matmul`` goes into a pooled buffer unless both operands have the result's
    shape (a square (64, 64) @ (64, 64) does not). Test: test_planner_min_bytes_row_arrays
    (non-square).
adcompiler/passes/scales.py  _cost (CALL = 64)  elements + 64 per array call, within one chain
    Where a literal factor (a ``mean``'s ``1/n``) is applied. Relative sizes, and the pass runs
    in the unoptimised code too, so the reference makes the same choice (tests/passes/test_scales.py).
adcompiler/transforms/recompute.py  cheap_residuals  entries stacked vs entries saved
    Cheap residuals are recomputed in the adjoint loop instead of stacked; bitwise the same
    values, in both modes (tests/transforms/test_recomputed_residuals.py).
adcompiler/passes/negations.py  _no_larger  result size <= operand size
    A negation moves past a linear primitive whose result is no larger (exact).

Constants and literal comparisons that look like thresholds but are not array-size thresholds
are listed, each with its reason, in ``NOT_SIZE_THRESHOLDS`` and ``LITERAL_COMPARISONS``;
:func:`test_every_size_like_constant_is_listed` and
:func:`test_every_literal_size_comparison_is_listed` fail on a new one that is in none of them.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import operator
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends import constants as constants_comment
from adcompiler.backends import numba_emit, numexpr_chains, planner, scatters
from adcompiler.aot import small_bodies
from adcompiler.api import tiers
from adcompiler.backends.check_modes import unoptimised
from adcompiler.frontend.expressions import comprehensions
from adcompiler.templates import factorizations
from adcompiler.passes import broadcast_products, fuse
from adcompiler.tape import format as tape_format
from adcompiler.aot import user_code as standalone_user

ROOT = Path(__file__).resolve().parents[2]
HAVE_NUMEXPR = importlib.util.find_spec("numexpr") is not None
HAVE_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not importable")

SIDES = ("below", "at")
RNG_SEED = 20240601


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    """Every gradient here is compiled in this process (and numba kernels not cached)."""
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")


# ---- helpers ----------------------------------------------------------------------------------

def _flat(result):
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in _flat(r)]
    return [result]


def _rel(got, want):
    got, want = np.asarray(got), np.asarray(want)
    scale = float(np.max(np.abs(want.astype(np.float64)))) if want.size else 0.0
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    return float(np.max(diff)) / max(scale, 1e-300) if want.size else 0.0


def _tol(want):
    return 2e-6 if np.asarray(want).dtype == np.float32 else 1e-12


def _assert_close(got, want, what=""):
    for g, w in zip(_flat(got), _flat(want), strict=True):
        assert np.shape(g) == np.shape(w), what
        assert np.asarray(g).dtype == np.asarray(w).dtype, what
        err = _rel(g, w)
        assert err <= _tol(w), f"{what}: normwise relative error {err:.3g}"


def _perturbed(args):
    return tuple(a * 0.75 + 0.125 if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
                 for a in args)


def agrees_with_unoptimised(make, args, kwargs=None):
    """``make()`` (a new transform) called on ``args``, then on other values of the same shapes:
    each result equals the unoptimised gradient's, and the first result is not changed by the
    second call. Returns the optimised transform (its ``.source`` and ``.ir`` are the code)."""
    kwargs = kwargs or {}
    g = make()
    first = g(*args, **kwargs)
    kept = [np.array(a, copy=True) for a in _flat(first)]
    again = _perturbed(args)
    second = g(*again, **kwargs)
    with unoptimised():
        want_first = make()(*args, **kwargs)
        want_second = make()(*again, **kwargs)
    _assert_close(first, want_first, "first call")
    _assert_close(second, want_second, "second call")
    for a, b in zip(_flat(first), kept):
        np.testing.assert_array_equal(a, b, err_msg="a later call changed a returned result")
    return g


def _fused(g) -> bool:
    return re.search(r"= fused ", str(g.ir)) is not None


def _rng():
    return np.random.default_rng(RNG_SEED)


# ---- realistic functions ------------------------------------------------------------------------

def chain(x):
    """An elementwise chain: transcendentals and arithmetic."""
    return np.sum(np.tanh(x) * x + 3.0 * x * x - np.exp(-x))


def bias_layer(X, b):
    """A broadcast bias (b: (n,) over X: (m, n)), its gradient a sum over rows."""
    h = np.tanh(X + b)
    return np.sum(h * X - 0.5 * h * h)


def rosenbrock(x):
    """Slices: every chain has n - 1 elements; numba cuts dx into pieces of 1, n - 2, 1."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def carried(x, a):
    """A loop carrying a vector, elementwise in its body, stacked for the adjoint."""
    h = x[0]
    for t in range(x.shape[0]):
        h = np.tanh(h * a + x[t]) + 0.1 * h
    return np.sum(h * h)


def rnn(x, W, h0):
    """A recurrent loop: ``hs`` (T, n) stacks h for the adjoint loop, which reads ``hs[t]``."""
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(h @ W + x[t])
    return np.sum(h * h)


def rnn_rows(x, Wx, Wh, h0):
    """``x[t] @ Wx`` is hoisted out of the loop as one product, read back by rows."""
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ Wx + h @ Wh)
    return np.sum(h * h)


def activation(x):
    """A vector-valued function, for vjp."""
    return np.tanh(x) * x + np.exp(-x)


# ---- passes/fuse.py MIN_SIZE --------------------------------------------------------------------

def _fuse_case(case, side):
    n = fuse.MIN_SIZE - (side == "below")
    rng = _rng()
    if case == "chain-float64":
        return (lambda: ad.grad(chain)), (rng.uniform(-1, 1, n),), True
    if case == "chain-float32":   # 4,096 float32: fused, but 16 KiB, below the planner's 32 KiB
        return (lambda: ad.grad(chain)), (rng.uniform(-1, 1, n).astype(np.float32),), False
    if case == "bias-2d":
        shape = (63, 65) if side == "below" else (64, 64)
        assert (np.prod(shape) >= fuse.MIN_SIZE) == (side == "at")
        return ((lambda: ad.grad(bias_layer, wrt=(0, 1))),
                (rng.standard_normal(shape), rng.standard_normal(shape[1])), True)
    if case == "rosenbrock-slices":   # x[1:] of MIN_SIZE + 1 elements has MIN_SIZE
        return (lambda: ad.grad(rosenbrock)), (rng.uniform(-1, 1, n + 1),), True
    if case == "loop-body":
        return ((lambda: ad.grad(carried, wrt=(0, 1))),
                (rng.standard_normal((3, n)) * 0.5, rng.standard_normal(n)), True)
    raise AssertionError(case)


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("case", ["chain-float64", "chain-float32", "bias-2d",
                                  "rosenbrock-slices", "loop-body"])
def test_fuse_min_size(case, side):
    make, args, planned_too = _fuse_case(case, side)
    g = agrees_with_unoptimised(make, args)
    assert _fused(g) == (side == "at"), str(g.ir)
    # float64: 4,096 elements are 32 KiB, so the planner switches at the same size
    assert ("out=_buf" in g.source) == (side == "at" and planned_too), g.source


@pytest.mark.parametrize("side", SIDES)
def test_cupy_fuse_min_size(side):
    """backend="cupy" (on tests/fake_cupy.py, NumPy playing CuPy and running each kernel's C
    text): a fused chain is one ``cp.ElementwiseKernel``; CuPy code plans no buffers (CuPy's
    memory pool recycles device memory) and calls no numexpr."""
    from tests import fake_cupy
    n = fuse.MIN_SIZE - (side == "below")
    x = _rng().uniform(-1, 1, n)
    with fake_cupy.install() as cp:
        g = ad.grad(chain, backend="cupy")
        first = g(cp.asarray(x))
        kept = first.get().copy()
        second = g(cp.asarray(x * 0.75 + 0.125))
        got = [first.get(), second.get()]
    with unoptimised():
        want = [ad.grad(chain)(x), ad.grad(chain)(x * 0.75 + 0.125)]
    _assert_close(got, want, "cupy")
    np.testing.assert_array_equal(got[0], kept)
    assert ("cp.ElementwiseKernel(" in g.source) == (side == "at"), g.source
    assert "out=_buf" not in g.source and "ne.evaluate" not in g.source


# ---- backends/planner.py MIN_BYTES --------------------------------------------------------------

@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_planner_min_bytes_elementwise(dtype, side):
    """float32: 8,191 and 8,192 elements, both fused (above MIN_SIZE), only 8,192 planned."""
    itemsize = np.dtype(dtype).itemsize
    n = planner.MIN_BYTES // itemsize - (side == "below")
    x = _rng().uniform(-1, 1, n).astype(dtype)
    g = agrees_with_unoptimised(lambda: ad.grad(chain), (x,))
    assert ("out=_buf" in g.source) == (side == "at"), g.source
    assert _fused(g) == (n >= fuse.MIN_SIZE)


_POOLED_STACK = re.compile(r"^\s*\w+ = _buf\d+$", re.M)   # hs = _buf0: a stack from the pool


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_planner_min_bytes_loop_stacks(dtype, side):
    """The stacks ``hs`` of (T, n) entries: 63 x 65 = 4,095 and 64 x 64 float64; 90 x 91 =
    8,190 (8,191 is prime) and 64 x 128 float32."""
    shape = {(np.float64, "below"): (63, 65), (np.float64, "at"): (64, 64),
             (np.float32, "below"): (90, 91), (np.float32, "at"): (64, 128)}[dtype, side]
    T, n = shape
    assert (T * n * np.dtype(dtype).itemsize >= planner.MIN_BYTES) == (side == "at")
    rng = _rng()
    args = (rng.standard_normal((T, n)).astype(dtype),
            (rng.standard_normal((n, n)) * 0.1).astype(dtype), rng.standard_normal(n).astype(dtype))
    g = agrees_with_unoptimised(lambda: ad.grad(rnn, wrt=(0, 1, 2)), args)
    assert (_POOLED_STACK.search(g.source) is not None) == (side == "at"), g.source
    assert re.search(r"\w+ = hs\w*\[t_?\d*\]", g.source), "the adjoint reads the stack"


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_planner_min_bytes_row_arrays(dtype, side):
    """``x[t] @ Wx`` hoisted: a (T, B, n) row array, (T*B, d) @ (d, n) with d != n (a square
    product with both operands of the result's shape is not put in a buffer)."""
    d = 32
    shape = {(np.float64, "below"): (7, 9, 65), (np.float64, "at"): (8, 8, 64),
             (np.float32, "below"): (9, 10, 91), (np.float32, "at"): (8, 16, 64)}[dtype, side]
    T, B, n = shape
    assert (T * B * n * np.dtype(dtype).itemsize >= planner.MIN_BYTES) == (side == "at")
    rng = _rng()
    args = (rng.standard_normal((T, B, d)).astype(dtype),
            (rng.standard_normal((d, n)) * 0.1).astype(dtype),
            (rng.standard_normal((n, n)) * 0.1).astype(dtype),
            rng.standard_normal((B, n)).astype(dtype))
    g = agrees_with_unoptimised(lambda: ad.grad(rnn_rows, wrt=(0, 1, 2, 3)), args)
    assert "x_Wx[t]" in g.source, g.source      # hoisted on both sides
    pooled_rows = re.search(r"np\.matmul\(np\.reshape\(x, .*out=_buf\d+\)", g.source)
    assert (pooled_rows is not None) == (side == "at"), g.source
    assert (_POOLED_STACK.search(g.source) is not None) == (side == "at"), g.source


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("mode", ["value_and_grad", "vjp", "jvp"])
def test_planner_min_bytes_other_modes(mode, side):
    n = planner.MIN_BYTES // 8 - (side == "below")
    rng = _rng()
    x = rng.uniform(-1, 1, n)
    if mode == "value_and_grad":
        make, kwargs = (lambda: ad.value_and_grad(chain)), {}
    elif mode == "vjp":
        make, kwargs = (lambda: ad.vjp(activation)), {"cotangent": rng.standard_normal(n)}
    else:
        make, kwargs = (lambda: ad.jvp(chain)), {"tangents": rng.standard_normal(n)}
    g = agrees_with_unoptimised(make, (x,), kwargs)
    assert ("out=_buf" in g.source) == (side == "at"), g.source


def product_layer(A, B):
    P = A @ B
    return np.sum(np.tanh(P) * P)


@pytest.mark.parametrize("side", SIDES)
def test_planner_min_bytes_products(side):
    """``A @ B`` of (63, 65) = 4,095 and (64, 64) float64 entries, from (n, 3) @ (3, m)."""
    n, m = (63, 65) if side == "below" else (64, 64)
    rng = _rng()
    args = (rng.standard_normal((n, 3)), rng.standard_normal((3, m)))
    g = agrees_with_unoptimised(lambda: ad.grad(product_layer, wrt=(0, 1)), args)
    assert ("P = np.matmul(A, B, out=_buf" in g.source) == (side == "at"), g.source


# ---- passes/broadcast_products.py MIN_ENTRIES -----------------------------------------------------

def mixture(mu, log_sigma, X):
    diff = X[:, None, :] - mu[None, :, :]
    comp = -log_sigma - 0.5 * np.sum(diff * diff, axis=2) * np.exp(-2.0 * log_sigma)
    m = np.max(comp, axis=1, keepdims=True)
    return -np.mean(m + np.log(np.sum(np.exp(comp - m), axis=1, keepdims=True)))


@pytest.mark.parametrize("side", SIDES)
def test_broadcast_products_min_entries(side):
    """(455, 3, 3) = 4,095 and (1024, 2, 2) = 4,096 entries of ``X[:, None, :] - mu``."""
    n, k, d = (455, 3, 3) if side == "below" else (1024, 2, 2)
    assert (n * k * d >= broadcast_products.MIN_ENTRIES) == (side == "at")
    rng = _rng()
    args = (rng.standard_normal((k, d)), 0.1 * rng.standard_normal(k),
            rng.standard_normal((n, d)))
    g = agrees_with_unoptimised(lambda: ad.grad(mixture, wrt=(0, 1, 2)), args)
    code = "\n".join(line.split("#")[0] for line in g.source.splitlines())
    assert ("X[:, None, :]" not in code) == (side == "at"), g.source
    assert ("np.mean(mu, axis=0)" in g.source) == (side == "at"), g.source


# ---- backends/numexpr_chains.py MIN_ELEMENTS (and runtime/threaded.py) ------------------------

@contextlib.contextmanager
def _numexpr_setting(setting, monkeypatch):
    if setting == "on":
        if not HAVE_NUMEXPR:
            pytest.skip("numexpr is not importable")
        monkeypatch.delenv("ADCOMPILER_NUMEXPR", raising=False)
        yield
    elif setting == "env-0":
        monkeypatch.setenv("ADCOMPILER_NUMEXPR", "0")
        yield
    else:
        with numexpr_chains.disabled():
            yield


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("setting", ["on", "env-0", "disabled"])
@pytest.mark.parametrize("case", ["chain", "bias-2d", "loop"])
def test_numexpr_min_elements(case, setting, side, monkeypatch):
    n = numexpr_chains.MIN_ELEMENTS - (side == "below")
    rng = _rng()
    if case == "chain":
        make, args = (lambda: ad.grad(chain)), (rng.uniform(-1, 1, n),)
    elif case == "bias-2d":
        shape = (511, 513) if side == "below" else (512, 512)
        assert (np.prod(shape) >= numexpr_chains.MIN_ELEMENTS) == (side == "at")
        make = lambda: ad.grad(bias_layer, wrt=(0, 1))   # noqa: E731
        args = (rng.standard_normal(shape), rng.standard_normal(shape[1]))
    else:
        make = lambda: ad.grad(carried, wrt=(0, 1))   # noqa: E731
        args = (rng.standard_normal((2, n)) * 0.5, rng.standard_normal(n))
    with _numexpr_setting(setting, monkeypatch):
        g = agrees_with_unoptimised(make, args)
    src = g.source
    on_path = side == "at" and setting == "on"
    assert "out=_buf" in src                    # planned on both sides (far above 32 KiB)
    assert ("_threaded(" in src) == on_path, src
    if case != "loop":   # the loop's chains are cut by the carried value: ufuncs only
        assert ("ne.evaluate(" in src) == on_path, src
    if on_path:
        assert "import numexpr as ne" in src or case == "loop"


@pytest.mark.parametrize("side", SIDES)
def test_numexpr_float32_threads_without_numexpr(side, monkeypatch):
    """numexpr would compute a float32 chain in float64, so float32 chains stay ufuncs; the
    large ones are still cut over threads."""
    if not HAVE_NUMEXPR:
        pytest.skip("numexpr is not importable")
    monkeypatch.delenv("ADCOMPILER_NUMEXPR", raising=False)
    n = numexpr_chains.MIN_ELEMENTS - (side == "below")
    x = _rng().uniform(-1, 1, n).astype(np.float32)
    g = agrees_with_unoptimised(lambda: ad.grad(chain), (x,))
    assert "ne.evaluate(" not in g.source
    assert ("_threaded(" in g.source) == (side == "at"), g.source


# ---- backends/numba_emit.py PARALLEL_MIN, PARALLEL_MIN_CALLS, WIDE_MIN ------------------------

def _numba_against_numpy(f, x):
    return agrees_with_unoptimised(lambda: ad.grad(f, backend="numba"), (x,))


@needs_numba
@pytest.mark.parametrize("side", SIDES)
def test_numba_parallel_min(side):
    """Rosenbrock's middle piece has n - 2 elements and only arithmetic."""
    piece = numba_emit.PARALLEL_MIN - (side == "below")
    n = piece + 2
    g = _numba_against_numpy(rosenbrock, _rng().uniform(-1.5, 1.5, n))
    src = g.source
    assert f"range(1, {n - 1})" in src, src
    assert (f"numba.prange(1, {n - 1})" in src) == (side == "at"), src
    assert ("parallel=True" in src) == (side == "at")
    assert ("numba.uint64(j)" in src) == (side == "at")


@needs_numba
@pytest.mark.parametrize("side", SIDES)
def test_numba_parallel_min_calls(side):
    """One piece of n elements calling vexp_tanh: threads from 4,096 on, not 32,768."""
    n = numba_emit.PARALLEL_MIN_CALLS - (side == "below")
    g = _numba_against_numpy(chain, _rng().uniform(-2, 2, n))
    src = g.source
    assert "vexp_tanh(" in src, src
    assert (f"numba.prange(0, {n})" in src) == (side == "at"), src
    assert ("parallel=True" in src) == (side == "at")


@needs_numba
@pytest.mark.parametrize("bits", ["512", "256"])
@pytest.mark.parametrize("side", SIDES)
def test_numba_wide_min(side, bits, monkeypatch):
    """Rosenbrock's middle piece of 63 and 64 elements; its end pieces (1 element) never."""
    monkeypatch.setenv("ADCOMPILER_NUMBA_VECTOR_BITS", bits)
    n = numba_emit.WIDE_MIN - (side == "below") + 2
    g = _numba_against_numpy(rosenbrock, _rng().uniform(-1.5, 1.5, n))
    src = g.source
    assert src.count("wide_vectors()  #") == (side == "at" and bits == "512"), src
    assert "prange" not in src


@needs_numba
@pytest.mark.parametrize("side", SIDES)
def test_numba_apart_min(side):
    """The elementwise chain's output of n elements: empty_apart from 4,194,304 on, whose start
    then lies 1-3 KiB after x's mod 4 KiB (x made to start at a page's offset 16, as NumPy's
    mmap'd arrays do)."""
    from adcompiler.runtime import apart
    n = numba_emit.APART_MIN - (side == "below")
    page = apart.PAGE // 8
    backing = np.empty(n + 2 * page)
    k = ((-backing.ctypes.data + 16) % apart.PAGE) // 8
    x = backing[k:k + n]
    x[:] = _rng().uniform(-2, 2, n)
    g = _numba_against_numpy(chain, x)
    assert ("empty_apart(" in g.source) == (side == "at"), g.source
    dx = g(x)
    if side == "at":
        assert 1024 <= (dx.ctypes.data - x.ctypes.data) % apart.PAGE <= 3072


# ---- api/tiers.py ELEMENTS -----------------------------------------------------------------

@needs_numba
@pytest.mark.parametrize("side", SIDES)
def test_tiers_elements(side, monkeypatch):
    """The default tiers up a call of at least 10^6 array elements, counted over every
    argument: here 2 x 500,000 tiers up, one element fewer stays NumPy code; both sides give the
    unoptimised gradient, the tiered one through the numba loop."""
    monkeypatch.setenv("ADCOMPILER_TIERED", "1")   # tests/conftest.py turns tiering off
    half = tiers.ELEMENTS // 2
    x = _rng().uniform(-2.0, 2.0, half)
    y = _rng().uniform(-2.0, 2.0, half - (side == "below"))
    g = agrees_with_unoptimised(lambda: ad.grad(two_chains, wrt=(0, 1)), (x, y))
    assert g.wait_tier(120) == ("checking" if side == "at" else "numpy")
    g(x, y)
    assert g.tier == ("numba" if side == "at" else "numpy")
    assert (g.tier_source is not None) == (side == "at")
    with unoptimised():
        want = ad.grad(two_chains, wrt=(0, 1), tiered=False)(x, y)
    for got, ref in zip(g(x, y), want):
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())


def two_chains(x, y):
    return np.sum(np.tanh(x) * x) + np.sum(y * y - np.exp(-y))


# ---- tape/format.py THRESHOLD --------------------------------------------------------------

@pytest.mark.parametrize("side", ["at", "above"])
def test_tape_repr_threshold(side):
    """The repr of the tape's gradient: every value up to 1,000 elements, 3 + 3 from 1,001."""
    from adcompiler import tape
    n = tape_format.THRESHOLD + (side == "above")
    x = np.linspace(-1.0, 1.0, n)
    leaf = tape.tensor(x, requires_grad=True)
    (grad,) = tape.grad(np.sum(np.tanh(leaf) * leaf), [leaf])
    with unoptimised():
        want = ad.grad(tanh_times_x)(x)
    np.testing.assert_allclose(grad.numpy(), want, rtol=1e-12, atol=1e-15)
    text = repr(grad)
    assert ("..." in text) == (side == "above"), text[:200]
    shown = re.findall(r"-?\d+\.\d{4}", text)
    assert len(shown) == (2 * tape_format.EDGEITEMS if side == "above" else n)


def tanh_times_x(x):
    return np.sum(np.tanh(x) * x)


# ---- backends/constants.py SHOWN_ELEMENTS ----------------------------------------------------

def _reads_constant(n):
    c = np.linspace(0.5, 1.5, n)

    def scaled(x):
        return np.sum(np.sin(x * c) * x)
    return scaled


@pytest.mark.parametrize("side", ["at", "above"])
def test_constants_comment_shown_elements(side):
    n = constants_comment.SHOWN_ELEMENTS + (side == "above")
    f = _reads_constant(n)
    g = agrees_with_unoptimised(lambda: ad.grad(f), (np.linspace(-1.0, 1.0, n),))
    line = next(ln for ln in g.source.splitlines() if ln.startswith("#   c: "))
    assert line.startswith(f"#   c: float64[{n}]"), line
    assert (" = [0.5, " in line) == (side == "at"), line


# ---- standalone: MAX_LITERAL, and a polymorphic body made at a threshold ----------------------

def _compile_module(tmp_path, name, text, capsys):
    from adcompiler import cli
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    code = cli.main(["compile", str(path)])
    _, err = capsys.readouterr()
    return code, err, tmp_path / f"{name}_grad.py"


def _import(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LITERAL_MODULE = '''\
import numpy as np
import adcompiler as ad


@ad.grad
def weighted(x):
    c = np.linspace(0.0, 1.0, {n})   # made while compiling: a literal in the standalone module
    return np.sum(np.tanh(x) * c)


def example_weighted():
    return (np.linspace(-1.0, 1.0, {n}),)
'''


@pytest.mark.parametrize("side", ["at", "above"])
def test_standalone_max_literal(side, tmp_path, capsys):
    n = standalone_user.MAX_LITERAL + (side == "above")
    name = f"literal_{side}"
    code, err, out = _compile_module(tmp_path, name, LITERAL_MODULE.format(n=n), capsys)
    if side == "above":
        assert code != 0 and not out.exists()
        assert f"({n:,} float64 elements)" in err and "up to 10,000 elements" in err, err
        return
    assert code == 0, err
    assert "_const = np.array([0.0, " in out.read_text()
    generated = _import(out, f"{name}_grad_module")
    user = _import(tmp_path / f"{name}.py", f"{name}_user")
    x = np.random.default_rng(1).uniform(-1, 1, n)
    with unoptimised():
        want = ad.grad(user.weighted.primal)(x)
    _assert_close(generated.grad_weighted(x), want, "standalone")


CHAIN_MODULE = '''\
import numpy as np
import adcompiler as ad


@ad.grad
def loss(x):
    return np.sum(np.tanh(x) * x + 3.0 * x * x - np.exp(-x))


def example_loss():
    return (np.linspace(-1.0, 1.0, {n}),)
'''


@pytest.mark.parametrize("side", SIDES)
def test_standalone_body_for_an_example_at_a_threshold(side, tmp_path, capsys):
    """Ahead of time a size that can vary counts as large for every threshold
    (:mod:`adcompiler.ir.sizing`), so the variants a polymorphic body is merged from agree on
    both sides of MIN_SIZE (before, an example just below it was compiled per shape: its
    variants crossed it); the body is fused and planned, and runs at every size, below and above
    each threshold, with the unoptimised gradient's values."""
    n = fuse.MIN_SIZE - (side == "below")
    name = f"example_{side}"
    code, err, out = _compile_module(tmp_path, name, CHAIN_MODULE.format(n=n), capsys)
    assert code == 0, err
    text = out.read_text()
    generated = _import(out, f"{name}_grad_module")
    user = _import(tmp_path / f"{name}.py", f"{name}_user")
    assert "d1 = x.shape[0]" in text, err
    assert "out=_buf" in text
    for size in [n, 3, fuse.MIN_SIZE - 1, fuse.MIN_SIZE, planner.MIN_BYTES // 4,
                 2 * planner.MIN_BYTES]:
        x = np.random.default_rng(size).uniform(-1, 1, size)
        with unoptimised():
            want = ad.grad(user.loss.primal)(x)
        _assert_close(generated.grad_loss(x), want, f"standalone at {size}")


def test_small_body_min_elements(tmp_path, capsys):
    """The module's first body runs itself from MIN_ELEMENTS elements in a buffer (planned, fused)
    and its body for small inputs below (plain expressions), with the unoptimised gradient's
    values on both sides; the threshold is fusion's and the planner's in float64."""
    assert small_bodies.MIN_ELEMENTS == fuse.MIN_SIZE == planner.MIN_BYTES // 8
    code, err, out = _compile_module(tmp_path, "small_side", CHAIN_MODULE.format(n=300), capsys)
    assert code == 0, err
    text = out.read_text()
    assert "if d1 < 4096:\n        return _grad_loss_1_small(x)" in text
    generated = _import(out, "small_side_grad_module")
    user = _import(tmp_path / "small_side.py", "small_side_user")
    ran, small = [], generated._grad_loss_1_small
    generated._grad_loss_1_small = lambda *a: ran.append(len(a[0])) or small(*a)
    for size in (small_bodies.MIN_ELEMENTS - 1, small_bodies.MIN_ELEMENTS):
        x = np.random.default_rng(size).uniform(-1, 1, size)
        with unoptimised():
            want = ad.grad(user.loss.primal)(x)
        _assert_close(generated.grad_loss(x), want, f"standalone at {size}")
        _assert_close(generated.grad_loss(x * 0.5), ad.grad(user.loss.primal)(x * 0.5))
    assert ran == [small_bodies.MIN_ELEMENTS - 1] * 2


# ---- frontend/expressions/comprehensions.py MAX_ITERATIONS ------------------------------

def rows_listed(x, w):
    rows = [r for r in x]
    return np.sum(np.tanh(rows[0] * w)) + np.sum(x * x)


def rest_unpacked(x, w):
    first, *rest = x
    return np.sum(np.tanh(first * w) * rest[-1])


@pytest.mark.parametrize("side", ["at", "above"])
def test_max_iterations_comprehension(side):
    n = comprehensions.MAX_ITERATIONS + (side == "above")
    args = (np.random.default_rng(2).standard_normal((n, 2)), np.array([0.5, -1.5]))
    if side == "above":
        with pytest.raises(ad.CompileError, match="unroll more than 1000 iterations"):
            ad.grad(rows_listed)(*args)
        return
    agrees_with_unoptimised(lambda: ad.grad(rows_listed, wrt=(0, 1)), args)


@pytest.mark.parametrize("side", ["at", "above"])
def test_max_iterations_unpacking(side):
    """``rest`` takes n - 1 rows: 1,000 compile, 1,001 do not."""
    n = comprehensions.MAX_ITERATIONS + 1 + (side == "above")
    args = (np.random.default_rng(3).standard_normal((n, 2)), np.array([0.5, -1.5]))
    if side == "above":
        with pytest.raises(ad.CompileError, match="would take more than 1000 rows"):
            ad.grad(rest_unpacked)(*args)
        return
    agrees_with_unoptimised(lambda: ad.grad(rest_unpacked, wrt=(0, 1)), args)


# ---- backends/scatters.py MIN_ENTRIES, MIN_WIDTH, TARGET_RATIO, SPARSE_ENTRIES ----------------

def factors(U, V, iu, iv, r):
    """Matrix factorization's gathers with repeats: U's adjoint an update of 0.02 U, V's a
    scatter alone."""
    e = np.sum(U[iu] * V[iv], axis=1) - r
    return np.sum(e * e) + 0.01 * np.sum(U * U)


def _scatter_case(n, m, w, scipy_on, monkeypatch):
    """The factorization's gradient at n pairs into (m, w) factors (negative indices in iu)
    against the unoptimised one; returns its source."""
    monkeypatch.setattr(factorizations, "_SCIPY", [scipy_on, scipy_on])
    rng = _rng()
    args = (rng.standard_normal((m, w)), rng.standard_normal((m, w)), rng.integers(-m, m, n),
            rng.integers(0, m, n), rng.standard_normal(n))
    return agrees_with_unoptimised(lambda: ad.grad(factors, wrt=(0, 1)), args).source


def _rows_helper(source) -> bool:
    return "dU += _add_rows(iu, " in source and "dV = _add_rows(iv, " in source


@pytest.mark.parametrize("side", SIDES)
def test_scatter_min_entries(side, monkeypatch):
    n = scatters.MIN_ENTRIES // 4 - (side == "below")   # rows of 4: 2,044 and 2,048 values
    source = _scatter_case(n, 50, 4, False, monkeypatch)
    assert _rows_helper(source) == (side == "at"), source
    assert ("np.add.at(dU, iu, " in source) == (side == "below"), source


@pytest.mark.parametrize("side", SIDES)
def test_scatter_min_width(side, monkeypatch):
    w = scatters.MIN_WIDTH - (side == "below")
    source = _scatter_case(1000, 50, w, False, monkeypatch)
    assert _rows_helper(source) == (side == "at"), source


@pytest.mark.parametrize("side", ["at", "above"])
def test_scatter_target_ratio(side, monkeypatch):
    n = 200
    source = _scatter_case(n, scatters.TARGET_RATIO * n + (side == "above"), 16, False,
                           monkeypatch)
    assert _rows_helper(source) == (side == "at"), source


@pytest.mark.parametrize("scipy_on", [False, True])
@pytest.mark.parametrize("side", SIDES)
def test_scatter_sparse_entries(side, scipy_on, monkeypatch):
    if scipy_on:
        pytest.importorskip("scipy.sparse")
    n = scatters.SPARSE_ENTRIES // 32 - (side == "below")   # rows of 32: 32,736 and 32,768
    source = _scatter_case(n, 500, 32, scipy_on, monkeypatch)
    assert _rows_helper(source), source
    assert ("scipy.sparse.csr_matrix" in source) == (scipy_on and side == "at"), source


# ---- higher.py choose_mode (relative) --------------------------------------------------------

A = np.random.default_rng(4).standard_normal((6, 6))


def squashed(x):
    return np.tanh(A[:, : x.shape[0]] @ x)


@pytest.mark.parametrize("side", SIDES)
def test_jacobian_mode_choice(side):
    """Six outputs: five inputs take forward mode, six reverse mode; both give the same."""
    n_in = A.shape[0] - (side == "below")
    x = np.linspace(-0.5, 0.5, n_in)
    jac = ad.jacobian(squashed)
    got = jac(x)
    assert jac.last_mode == ("fwd" if side == "below" else "rev")
    with unoptimised():
        want = ad.jacobian(squashed)(x)
        other = ad.jacobian(squashed, mode="rev" if side == "below" else "fwd")(x)
    _assert_close(got, want, "auto")
    _assert_close(got, other, "the other mode")


# ---- completeness guards -------------------------------------------------------------------

# "module.CONSTANT" -> (its value, the tests that cross it)
THRESHOLDS = {
    "adcompiler.passes.fuse.MIN_SIZE": (
        4096, ("test_fuse_min_size", "test_cupy_fuse_min_size",
               "test_standalone_body_for_an_example_at_a_threshold")),
    "adcompiler.backends.planner.MIN_BYTES": (32768, ("test_planner_min_bytes_elementwise",
                                                      "test_planner_min_bytes_loop_stacks",
                                                      "test_planner_min_bytes_row_arrays",
                                                      "test_planner_min_bytes_products",
                                                      "test_planner_min_bytes_other_modes")),
    "adcompiler.passes.broadcast_products.MIN_ENTRIES": (
        4096, ("test_broadcast_products_min_entries",)),
    "adcompiler.backends.numexpr_chains.MIN_ELEMENTS": (
        262144, ("test_numexpr_min_elements", "test_numexpr_float32_threads_without_numexpr")),
    "adcompiler.backends.numba_emit.PARALLEL_MIN": (32768, ("test_numba_parallel_min",)),
    "adcompiler.backends.numba_emit.PARALLEL_MIN_CALLS": (4096, ("test_numba_parallel_min_calls",)),
    "adcompiler.backends.numba_emit.WIDE_MIN": (64, ("test_numba_wide_min",)),
    "adcompiler.backends.numba_emit.APART_MIN": (4194304, ("test_numba_apart_min",)),
    "adcompiler.tape.format.THRESHOLD": (1000, ("test_tape_repr_threshold",)),
    "adcompiler.backends.constants.SHOWN_ELEMENTS": (8, ("test_constants_comment_shown_elements",)),
    "adcompiler.aot.user_code.MAX_LITERAL": (10000, ("test_standalone_max_literal",)),
    "adcompiler.aot.small_bodies.MIN_ELEMENTS": (4096, ("test_small_body_min_elements",)),
    "adcompiler.frontend.expressions.comprehensions.MAX_ITERATIONS": (
        1000, ("test_max_iterations_comprehension", "test_max_iterations_unpacking")),
    "adcompiler.backends.scatters.MIN_ENTRIES": (2048, ("test_scatter_min_entries",)),
    "adcompiler.backends.scatters.MIN_WIDTH": (4, ("test_scatter_min_width",)),
    "adcompiler.backends.scatters.TARGET_RATIO": (10, ("test_scatter_target_ratio",)),
    "adcompiler.backends.scatters.SPARSE_ENTRIES": (32768, ("test_scatter_sparse_entries",)),
    "adcompiler.api.tiers.ELEMENTS": (1000000, ("test_tiers_elements",)),
}

# "module.CONSTANT" -> why it is not an array-size threshold
NOT_SIZE_THRESHOLDS = {
    "adcompiler.api.tiers.CHUNK":
        "how many values the tier-up's check compares at once (its temporaries' size); every "
        "value is compared at every size (tests/api/test_tiers.py)",
    "adcompiler.ir.shapes._NO_BYTES":
        "a dtype whose items take no bytes, for the stand-ins shape inference gathers from (no "
        "size: tests/ir/test_shape_inference.py)",
    "adcompiler.passes.small_factors.RATIO":
        "how many times fewer elements a factor of an adjoint's product has than the product to "
        "count as small (a ratio of the two, the same at every size; the rewrite changes "
        "rounding only: tests/passes/test_small_factors.py, its size switch MIN_SIZE there)",
    "adcompiler.transforms.while_checkpoints.MAX_EPOCHS":
        "epochs of doubling segments a checkpointed while loop runs (reach 2 ** 32 iterations, "
        "a count of steps, not an array size; tests/transforms/test_while_checkpoints.py)",
    "adcompiler.backends.scatters.CHUNK":
        "flat indices the helper makes per np.add.at call (bounds its memory; the same sums, "
        "in the same order, at every size: tests/backends/test_scatters.py)",
    "adcompiler.frontend.reading.depth.FRAMES":
        "frames of recursion a deeply nested function compiles with (expression depth, not "
        "array size; tests/frontend/test_deep_expressions.py crosses it)",
    "adcompiler.frontend.reading.depth.STACK": "bytes of the roomy thread's stack, as FRAMES",
    "adcompiler.frontend.reading.freshness._FUTURE": "the __future__ compiler flags (a bit mask)",
    "adcompiler.backends.loop_plan.MAX_TERMS":
        "terms in one numba loop body (graph size); past it the numba backend writes NumPy code",
    "adcompiler.backends.loop_plan.MAX_PIECES":
        "pieces one output's slices cut it into (slice offsets, not sizes)",
    "adcompiler.backends.numba_emit._ATOM": "operator precedence of an atom when parenthesising",
    "adcompiler.api.fastpath.MAX_GUARDS": "compiled signatures the generated guard chain tests",
    "adcompiler.frontend.statements.loops._MAX_AVAL_ROUNDS":
        "rounds of a loop's carried-aval inference",
    "adcompiler.frontend.lower._MAX_INLINE_DEPTH": "nesting depth of inlined helper calls",
    "adcompiler.api.function_keys._DEPTH": "how deep helpers inside helpers are compared",
    "adcompiler.passes.algebra.MAX_NODES":
        "operations of a fused expression given to SymPy (graph size; fused blocks exist only "
        "from fuse.MIN_SIZE, which test_fuse_min_size crosses)",
    "adcompiler.passes.algebra.MIN_NODES": "operations of a fused expression, as MAX_NODES",
    "adcompiler.passes.algebra_poly.MAX_TERMS": "terms of a polynomial expansion",
    "adcompiler.passes.algebra_poly.MAX_POWER": "the largest integer power expanded",
    "adcompiler.passes.algebra_probe._DEPTH": "how far back an input is traced",
    "adcompiler.passes.scales.CALL":
        "cost weight (elements per array call) in a relative cost comparison of one chain; "
        "the pass runs in the unoptimised code too (tests/passes/test_scales.py)",
    "adcompiler.passes.scales.MAX_CHAIN": "values in one chain of scaled values (graph size)",
    "adcompiler.passes.scales.BUDGET": "cuts weighed per chain (compile time)",
    "adcompiler.runtime.numba_math._X_MIN": "exp's argument clamp (a value, not a size)",
    "adcompiler.runtime.numba_math._X_MAX": "exp's argument clamp (a value, not a size)",
    "adcompiler.runtime.apart.PAGE": "bytes of the address bits compared (a page, not a size)",
    "adcompiler.runtime.apart._STEP": "bytes between the page offsets tried",
    "adcompiler.runtime.numba_math._SHIFT_BITS": "the bits of exp's rounding shifter 1.5 * 2^52 "
                                                  "(a float's bit pattern, not a size)",
    "adcompiler.aot.sizedeps._SIZE_CALLS": "names of the size functions (len, shape, size)",
    "adcompiler.aot.guards.WIDTH": "line width of generated guard code",
    "adcompiler.aot.polynomials.MAX_SIZES":
        "sizes one number folded from a polynomial of them may change with (a count of size "
        "symbols, not a size: tests/aot/test_polynomial_sizes.py fits one of two)",
    "adcompiler.aot.polynomials.DENOMINATOR":
        "the largest denominator of a fitted polynomial's coefficients (a fraction's, not an "
        "array size; tests/aot/test_polynomial_sizes.py)",
    "adcompiler.api.state._DEPTH": "depth of object attributes read (self.cfg.scale)",
    "adcompiler.checking.symbolic._SIMPLIFY_MAX_OPS": "operations given to sympy.simplify (check_symbolic)",
    "adcompiler.tape.format.PRECISION": "decimals printed",
    "adcompiler.tape.format.EDGEITEMS": "items printed at each edge of a summarised tensor",
    "adcompiler.tape.format.LINEWIDTH": "columns of a printed tensor",
    "adcompiler.transforms.recompute._LIMIT": "operations per recomputed residual (graph size)",
    "adcompiler.ir.sizing.SMALL":
        "what a size that can vary counts for in a module's body for small inputs, to be below "
        "every threshold (not one itself: test_small_body_min_elements crosses where it runs)",
    "adcompiler.ir.sizing.SYMBOLIC":
        "what a size that can vary counts for ahead of time, to be above every threshold (not "
        "one itself: tests/aot/test_every_size.py calls modules on both sides of each)",
}

# (module, comparison as ast.unparse writes it) -> why it is not an array-size threshold
LITERAL_COMPARISONS = {
    ("adcompiler.pipeline", "len(v.aval.shape) >= 3"):
        "an array's rank (a cube that gmm's broadcast makes), not its size: the numba backend's "
        "fallback gets the NumPy backend's products (tests/backends/test_numba_nests.py)",
    ("adcompiler.cli.inputs", "len(text) <= 30"): "characters of a value shown in a message",
    ("adcompiler.checking.near_examples",
     "x.dtype.itemsize < 8"): "low precision dtypes get a looser tolerance",
    ("adcompiler.ir.shapes", "len(_DTYPES) >= 4096"): "entries of a dtype-inference cache",
    ("adcompiler.api.signature", "len(text) <= 24"): "characters of a value shown in a signature",
    ("adcompiler.aot.forward",
     "len(call) + sum((len(o) + 2 for o in options)) > 76"): "line length of generated code",
    ("adcompiler.api.state", "len(objects) < 1000"): "objects whose attributes are scanned",
    ("adcompiler.backends.numba_reasons", "len(text) > 60"): "characters of a line quoted in a "
                                                             "message",
}

_SIZE_LIKE = re.compile(r"(^|_)(MIN|MAX|THRESHOLD|LIMIT|ELEMENTS|BYTES|SIZE|SIZES|CUTOFF)(_|$)",
                        re.I)
_SIZE_TEXT = re.compile(r"\b(len|size|prod|nbytes|itemsize|shape|ndim)\b")
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
           ast.FloorDiv: operator.floordiv}


def _number(node):
    """The value of a constant numeric expression (``1 << 15``, ``10_000``, ``-746.0``)."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _number(node.operand)
        return None if v is None else -v
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        a, b = _number(node.left), _number(node.right)
        return None if a is None or b is None else _BINARY[type(node.op)](a, b)
    return None


def _bindings(stmt):
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
        yield stmt.target.id, stmt.value
    if isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                yield target.id, stmt.value
            elif (isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple)
                  and len(target.elts) == len(stmt.value.elts)):
                for t, v in zip(target.elts, stmt.value.elts):   # PRECISION, THRESHOLD = 4, 1000
                    if isinstance(t, ast.Name):
                        yield t.id, v


@functools.lru_cache(maxsize=1)
def _package_sources() -> tuple:
    """(dotted module name, syntax tree) of every source file of adcompiler/ and templates/."""
    return tuple(_parsed())


def _parsed():
    for path in sorted([*(ROOT / "adcompiler").rglob("*.py"), *(ROOT / "templates").rglob("*.py")]):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        yield module, ast.parse(path.read_text(encoding="utf-8"), str(path))


def size_like_constants(sources=None) -> dict:
    """``{"module.NAME": value}``: every module-level name bound to an integer constant, and
    every module- or class-level name that reads like a size bound (MIN_*, *_THRESHOLD, ...).
    ``sources``: (module, syntax tree) pairs, the package's by default."""
    found = {}
    for module, tree in _package_sources() if sources is None else sources:
        for stmt in tree.body:
            for name, value in _bindings(stmt):
                v = _number(value)
                if type(v) is int or _SIZE_LIKE.search(name):
                    found[f"{module}.{name}"] = v
        for cls in (s for s in tree.body if isinstance(s, ast.ClassDef)):
            for stmt in cls.body:
                for name, value in _bindings(stmt):
                    if _SIZE_LIKE.search(name) and not name.startswith("__"):
                        found[f"{module}.{cls.name}.{name}"] = _number(value)
    return found


def literal_size_comparisons(sources=None) -> set:
    """``(module, text)`` of every ordering comparison of a size-like expression (len, .size,
    np.prod, nbytes, itemsize, shape) with a number literal beyond 2."""
    found = set()
    for module, tree in _package_sources() if sources is None else sources:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare) or not all(
                    isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops):
                continue
            parts = [node.left, *node.comparators]
            literal = [p for p in parts if type(_number(p)) in (int, float) and abs(_number(p)) > 2]
            others = [p for p in parts if p not in literal]
            if literal and any(_SIZE_TEXT.search(ast.unparse(p)) for p in others):
                found.add((module, ast.unparse(node)))
    return found


def test_every_size_like_constant_is_listed():
    found = size_like_constants()
    listed = set(THRESHOLDS) | set(NOT_SIZE_THRESHOLDS)
    new = sorted(set(found) - listed)
    assert not new, ("constants that look like size thresholds are in neither THRESHOLDS (with "
                     "a test on both sides) nor NOT_SIZE_THRESHOLDS (with a reason): "
                     f"{new}")
    gone = sorted(listed - set(found))
    assert not gone, f"listed constants no longer in the package: {gone}"
    assert not set(THRESHOLDS) & set(NOT_SIZE_THRESHOLDS)
    for key, (value, tests) in THRESHOLDS.items():
        assert found[key] == value, f"{key} is {found[key]}, the table says {value}"
        for name in tests:
            assert callable(globals().get(name)), f"{key}: no test named {name}"
        module, name = key.rsplit(".", 1)
        row = f"{module.replace('.', '/')}.py  {name}  {value:,} "
        assert row in __doc__, f"the module docstring has no row {row!r}"


def test_every_literal_size_comparison_is_listed():
    found = literal_size_comparisons()
    new = sorted(found - set(LITERAL_COMPARISONS))
    assert not new, ("size comparisons against a number literal are not listed in "
                     f"LITERAL_COMPARISONS (a threshold needs a named constant and a test): {new}")
    gone = sorted(set(LITERAL_COMPARISONS) - found)
    assert not gone, f"listed comparisons no longer in the package: {gone}"


def test_the_scanners_see_a_new_threshold():
    """What the two guards would catch: a new constant however it is named or written, a
    tuple assignment, a class-level bound, and a size compared with a literal."""
    source = ast.parse(textwrap.dedent("""
        CUTOFF_ROWS = 1 << 12
        LIMIT, OTHER = 10_000, "text"
        ROWS = 512
        _LOWER = 2.5
        MIN_SCALE = 0.5

        class Plan:
            MAX_WIDTH = 4096

        def choose(x):
            if x.size >= 5000 or np.prod(x.shape) < 3:
                return len(x) > 10
            return x.ndim == 3
    """))
    constants = size_like_constants([("pkg.mod", source)])
    assert constants == {"pkg.mod.CUTOFF_ROWS": 4096, "pkg.mod.LIMIT": 10000, "pkg.mod.ROWS": 512,
                         "pkg.mod.MIN_SCALE": 0.5, "pkg.mod.Plan.MAX_WIDTH": 4096}
    assert literal_size_comparisons([("pkg.mod", source)]) == {
        ("pkg.mod", "x.size >= 5000"), ("pkg.mod", "np.prod(x.shape) < 3"),
        ("pkg.mod", "len(x) > 10")}


def test_the_imported_values_are_the_tables():
    """The tests above derive their sizes from these constants as imported."""
    imported = {"adcompiler.passes.fuse.MIN_SIZE": fuse.MIN_SIZE,
                "adcompiler.backends.planner.MIN_BYTES": planner.MIN_BYTES,
                "adcompiler.passes.broadcast_products.MIN_ENTRIES":
                    broadcast_products.MIN_ENTRIES,
                "adcompiler.backends.numexpr_chains.MIN_ELEMENTS": numexpr_chains.MIN_ELEMENTS,
                "adcompiler.backends.numba_emit.PARALLEL_MIN": numba_emit.PARALLEL_MIN,
                "adcompiler.backends.numba_emit.PARALLEL_MIN_CALLS": numba_emit.PARALLEL_MIN_CALLS,
                "adcompiler.backends.numba_emit.WIDE_MIN": numba_emit.WIDE_MIN,
                "adcompiler.backends.numba_emit.APART_MIN": numba_emit.APART_MIN,
                "adcompiler.tape.format.THRESHOLD": tape_format.THRESHOLD,
                "adcompiler.backends.constants.SHOWN_ELEMENTS": constants_comment.SHOWN_ELEMENTS,
                "adcompiler.aot.user_code.MAX_LITERAL": standalone_user.MAX_LITERAL,
                "adcompiler.aot.small_bodies.MIN_ELEMENTS": small_bodies.MIN_ELEMENTS,
                "adcompiler.frontend.expressions.comprehensions.MAX_ITERATIONS":
                    comprehensions.MAX_ITERATIONS,
                "adcompiler.backends.scatters.MIN_ENTRIES": scatters.MIN_ENTRIES,
                "adcompiler.backends.scatters.MIN_WIDTH": scatters.MIN_WIDTH,
                "adcompiler.backends.scatters.TARGET_RATIO": scatters.TARGET_RATIO,
                "adcompiler.backends.scatters.SPARSE_ENTRIES": scatters.SPARSE_ENTRIES,
                "adcompiler.api.tiers.ELEMENTS": tiers.ELEMENTS}
    assert imported == {k: v for k, (v, _) in THRESHOLDS.items()}
