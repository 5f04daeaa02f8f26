"""Every derivative template, checked numerically by one helper, and against ``sympy.diff``.

:func:`check_rule` runs a primitive's rules through :func:`adcompiler.templates.cotangent` on
arrays (``ArrayOps``) with a random cotangent ``g`` and compares each argument's cotangent, entry
by entry, with central finite differences of ``sum(g * prim(*args))`` in float64. ``CASES`` holds
one or more cases for every registered rule; ``test_every_rule_is_checked`` fails when a rule
(or one of its arguments) has none. Elementwise rules are also run on SymPy symbols
(``SymbolicOps``) and compared with ``sympy.diff`` of the primitive's formula.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import sympy

from adcompiler import templates
from adcompiler.ir.primitives import ELEMENTWISE as ELEMENTWISE_ROWS
from adcompiler.ir.primitives import MATH_PRIMS, PRIMS, evaluate
from adcompiler.templates.ops import ArrayOps, SymbolicOps

from .factorization_cases import factorization_cases

EPS = 1e-6
RTOL, ATOL = 1e-6, 1e-8

_rng = np.random.default_rng(20240601)


# ---- the helper -------------------------------------------------------------------------------
def _is_float(x) -> bool:
    return isinstance(x, float) or (isinstance(x, (np.ndarray, np.generic))
                                    and x.dtype.kind == "f")


def _checked_argnums(prim, args):
    return [i for i, x in enumerate(args) if templates.has_rule(prim, i) and _is_float(x)]


def _loss(prim, args, params, g):
    """The scalar ``sum(g * prim(*args))``, in float64."""
    out = evaluate(prim, list(args), params)
    return float(np.sum(np.asarray(g, np.float64) * np.asarray(out, np.float64)))


def _bumped(x, j, delta):
    if isinstance(x, float):
        return x + delta
    y = np.array(x, copy=True)
    y.reshape(-1)[j] += delta
    return y


def _finite_differences(prim, args, params, g, i, eps):
    """d sum(g * prim(*args)) / d args[i], one entry at a time, by central differences."""
    x = args[i]
    grad = np.zeros(np.shape(x))
    for j in range(grad.size):
        hi = args[:i] + (_bumped(x, j, eps),) + args[i + 1:]
        lo = args[:i] + (_bumped(x, j, -eps),) + args[i + 1:]
        grad.reshape(-1)[j] = (_loss(prim, hi, params, g) - _loss(prim, lo, params, g)) / (2 * eps)
    return grad


def check_rule(prim, args, params=None, eps=EPS):
    """Check every rule of ``prim`` at ``args`` against central finite differences (float64).

    Each cotangent must have its argument's shape and dtype, must not modify the inputs, and
    must match the finite differences entry by entry.
    """
    params, args = dict(params or {}), tuple(args)
    ans = evaluate(prim, list(args), params)
    g = np.random.default_rng(len(str(params)) + 7).standard_normal(np.shape(ans))
    g = float(g) if isinstance(ans, float) else g.astype(np.result_type(ans))
    argnums = _checked_argnums(prim, args)
    assert argnums, f"{prim}: no float argument with a rule to check"
    for i in argnums:
        before = copy.deepcopy(args)
        ct = templates.cotangent(ArrayOps(), prim, i, g, ans, list(args), params)
        for old, new in zip(before, args):
            np.testing.assert_array_equal(old, new, err_msg=f"{prim} rule {i} wrote its inputs")
        assert np.shape(ct) == np.shape(args[i]), f"{prim} rule {i}: wrong shape"
        assert np.result_type(ct) == np.result_type(args[i]), f"{prim} rule {i}: wrong dtype"
        expected = _finite_differences(prim, args, params, g, i, eps)
        np.testing.assert_allclose(np.asarray(ct, np.float64), expected, rtol=RTOL, atol=ATOL,
                                   err_msg=f"{prim} rule for argument {i}, params {params}")


# ---- sampling in each primitive's domain --------------------------------------------------
def sample(shape, lo=-2.0, hi=2.0, signed=False):
    """Uniform in [lo, hi] (times a random sign if ``signed``); shape None gives a Python float."""
    x = _rng.uniform(lo, hi, () if shape is None else shape)
    if signed:
        x = x * _rng.choice([-1.0, 1.0], np.shape(x))
    return float(x) if shape is None else np.asarray(x)


def distinct(*shapes, lo=-2.0, hi=2.0):
    """Arrays whose entries are all different by at least 0.1 (no ties for max, min, clip)."""
    sizes = [1 if s is None else int(np.prod(s)) for s in shapes]
    grid = np.arange(round(lo * 10), round(hi * 10) + 1) / 10.0
    values = _rng.choice(grid, sum(sizes), replace=False) + 0.01 * _rng.uniform(-1, 1)
    out, k = [], 0
    for s, n in zip(shapes, sizes):
        out.append(float(values[k]) if s is None else values[k:k + n].reshape(s))
        k += n
    return out


# Where each elementwise rule is checked: its row's domain (ir.primitives.ELEMENTWISE), each
# argument's (lo, hi, signed) range away from poles, kinks and jumps.
UNARY_DOMAINS = {r.name: r.domain[0] for r in ELEMENTWISE_ROWS if len(r.domain) == 1}
BINARY_DOMAINS = {r.name: r.domain for r in ELEMENTWISE_ROWS if len(r.domain) == 2}
# sampled with `distinct`, away from ties: the binary rows without a domain (remainder, whose
# jumps need their own points, has _remainder_cases)
PIECEWISE_BINARY = tuple(r.name for r in ELEMENTWISE_ROWS if r.arity == 2 and r.differentiable
                         and not r.domain and r.name not in ("remainder", "polygamma"))
# polygamma(n, x): n an int (a literal in compiled code), x where the function is smooth
POLYGAMMA_ORDERS = (0, 1, 2, 3)

# Broadcasting pairs: equal shapes, a 0-d array or a Python float (None) on either side,
# a (1, n) row, a (n,) vector against a matrix, and a column against a row.
SHAPE_PAIRS = [((2, 3), (2, 3)), ((2, 3), ()), ((), (2, 3)), ((2, 3), (1, 3)), ((1, 3), (2, 3)),
               ((2, 1), (1, 3)), ((3,), (2, 3)), ((2, 3), None), (None, (3,)), ((), ())]


def _case(prim, args, params=None, eps=EPS, id=None):
    return pytest.param(prim, tuple(args), params or {}, eps, id=id or prim)


def _shape_id(shapes):
    return "-".join("py" if s is None else "x".join(map(str, s)) or "0d" for s in shapes)


def _elementwise_cases():
    for prim, (lo, hi, signed) in UNARY_DOMAINS.items():
        for shape in [(2, 3), (), None]:
            yield _case(prim, [sample(shape, lo, hi, signed)], id=f"{prim}-{_shape_id([shape])}")
    math_prims = {r.math_name: r.name for r in ELEMENTWISE_ROWS if r.math}
    for name in MATH_PRIMS:  # math.exp and friends on Python floats: the same rules
        prim = math_prims[name]
        domains = (UNARY_DOMAINS[prim],) if prim in UNARY_DOMAINS else BINARY_DOMAINS[prim]
        yield _case(prim, [sample(None, *d) for d in domains], {"py": name}, id=f"math.{name}")
    for prim, domains in BINARY_DOMAINS.items():
        for shapes in SHAPE_PAIRS:
            args = [sample(s, *d) for s, d in zip(shapes, domains)]
            yield _case(prim, args, id=f"{prim}-{_shape_id(shapes)}")
    for prim in PIECEWISE_BINARY:
        for shapes in SHAPE_PAIRS:
            yield _case(prim, distinct(*shapes), id=f"{prim}-{_shape_id(shapes)}")
    for n in POLYGAMMA_ORDERS:
        for shape in [(2, 3), (), None]:
            yield _case("polygamma", [n, sample(shape, 0.3, 4)],
                        id=f"polygamma-{n}-{_shape_id([shape])}")
    for y in (2, 3, 0.5):  # x ** literal: an int exponent allows a negative base
        x = sample((2, 3), -2, 2) if isinstance(y, int) else sample((2, 3), 0.5, 2)
        yield _case("power", [x, y], id=f"power-literal-{y}")
    cond = np.array([[True, False, True], [False, False, True]])
    for shapes in [((2, 3), (2, 3)), ((2, 3), ()), ((1, 3), None), ((), (2, 1))]:
        yield _case("where", [cond] + [sample(s) for s in shapes],
                    id=f"where-{_shape_id(shapes)}")
    for lo_shape, hi_shape in [(None, None), ((1, 3), ()), ((2, 3), (3,))]:
        x = distinct((2, 3), lo=-3, hi=3)[0] + 0.05
        lo = -np.abs(distinct(lo_shape, lo=0.1, hi=1.5)[0])
        hi = np.abs(distinct(hi_shape, lo=0.1, hi=1.5)[0])
        lo, hi = (float(lo) if lo_shape is None else lo), (float(hi) if hi_shape is None else hi)
        yield _case("clip", [x, lo, hi], id=f"clip-{_shape_id([lo_shape, hi_shape])}")


def away_from_jumps(x, y, margin=0.01) -> bool:
    """Whether every ``x / y`` (broadcast) is at least ``margin`` from an integer, where
    ``x % y`` jumps: finite differences there measure the jump, not the derivative."""
    q = np.asarray(x) / np.asarray(y)
    return bool(np.all(np.abs(q - np.round(q)) > margin))


def _remainder_cases():
    """``x % y`` with both signs on either side, away from its jumps (an own generator, so that
    the other cases keep their values)."""
    rng = np.random.default_rng(31)
    for shapes in SHAPE_PAIRS:
        sx, sy = (() if s is None else s for s in shapes)
        while True:
            x = rng.uniform(-3, 3, sx)
            y = rng.uniform(0.5, 2, sy) * rng.choice([-1.0, 1.0], sy)
            if away_from_jumps(x, y):
                break
        args = [float(a) if s is None else np.asarray(a) for a, s in zip((x, y), shapes)]
        yield _case("remainder", args, id=f"remainder-{_shape_id(shapes)}")


def _reduction_cases():
    axes = [None, 0, 1, -1, (0, 2), (-1, 0)]
    for prim in ["sum", "mean", "prod", "max", "min"]:
        make = (lambda s: distinct(s)[0]) if prim in ("max", "min") else (
            (lambda s: sample(s, 0.5, 1.5, True)) if prim == "prod" else sample)
        x = make((2, 3, 4))
        for axis in axes:
            for keepdims in (False, True):
                yield _case(prim, [x], {"axis": axis, "keepdims": keepdims},
                            id=f"{prim}-axis{axis}-keep{keepdims}")
        for axis in (None, 0, -1):
            yield _case(prim, [make((5,))], {"axis": axis}, id=f"{prim}-1d-axis{axis}")
        yield _case(prim, [make(())], id=f"{prim}-0d")
        if prim != "mean":  # NumPy reduces a 0-d array over axis 0 or -1 (not for mean)
            for axis, keepdims in [(0, False), (-1, True)]:
                yield _case(prim, [make(())], {"axis": axis, "keepdims": keepdims},
                            id=f"{prim}-0d-axis{axis}-keep{keepdims}")


def _prod_with_zeros_cases():
    """prod where ``ans / x`` would be 0/0: a slice with one zero, a slice with two."""
    x = sample((3, 4), 0.5, 1.5, True)
    x[0, 2] = x[1, 0] = x[1, 3] = 0.0
    for axis, keepdims in [(1, False), (-1, True), (0, False), ((0, 1), True)]:
        yield _case("prod", [x], {"axis": axis, "keepdims": keepdims},
                    id=f"prod-zeros-axis{axis}-keep{keepdims}")
    y = sample((2, 3), 0.5, 1.5, True)
    y[1, 1] = 0.0
    yield _case("prod", [y], id="prod-one-zero")
    yield _case("prod", [np.zeros(())], {"axis": 0}, id="prod-0d-zero")


def _scan_cases():
    """cumsum and cumprod along each axis; cumprod also where a slice has one zero, two, or
    starts with one (where ``revcumsum(g * y) / x`` would be 0/0)."""
    x = sample((3, 4), 0.5, 1.5, True)
    for prim in ("cumsum", "cumprod"):
        for axis in (0, 1):
            yield _case(prim, [x], {"axis": axis}, id=f"{prim}-axis{axis}")
        yield _case(prim, [sample((5,))], {"axis": 0}, id=f"{prim}-1d")
    z = x.copy()
    z[0, 0] = z[1, 2] = z[2, 1] = z[2, 3] = 0.0
    for axis in (0, 1):
        yield _case("cumprod", [z], {"axis": axis}, id=f"cumprod-zeros-axis{axis}")


def _linalg_cases():
    matmul_shapes = [((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((2, 3), (3, 4)),
                     ((2, 2, 3), (3, 4)), ((2, 3), (2, 3, 4)), ((3,), (2, 3, 4)),
                     ((2, 2, 3), (3,)), ((2, 2, 3), (2, 3, 4)), ((1, 2, 3), (4, 3, 2)),
                     ((2, 1, 2, 3), (3, 3, 2))]
    for shapes in matmul_shapes:
        yield _case("matmul", [sample(s) for s in shapes], id=f"matmul-{_shape_id(shapes)}")
    for shapes in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4))]:
        yield _case("dot", [sample(s) for s in shapes], id=f"dot-{_shape_id(shapes)}")
    for shapes in [((3,), (4,)), ((2, 2), (3,)), ((), (3,))]:
        yield _case("outer", [sample(s) for s in shapes], id=f"outer-{_shape_id(shapes)}")
    yield from _solver_cases()


def _solver_cases():
    """Well-conditioned square matrices, 2-D and stacked; solve's b a vector or a stack."""
    def square(*shape):
        return 4.0 * np.eye(shape[-1]) + sample(shape)
    for shapes in [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3, 2)),
                   ((3, 3), (2, 3, 2)), ((2, 3, 3), (1, 3, 1))]:
        yield _case("solve", [square(*shapes[0]), sample(shapes[1])],
                    id=f"solve-{_shape_id(shapes)}")
    for prim in ("inv", "det", "logabsdet"):
        for shape in [(3, 3), (2, 2, 2)]:
            yield _case(prim, [square(*shape)], id=f"{prim}-{_shape_id((shape,))}")
    yield _case("logabsdet", [square(3, 3) - 8.0 * np.eye(3)], id="logabsdet-negative-det")


def _einsum_cases():
    """Einsums in normal form: a chain of three (the first, a middle and the last operand), a
    full contraction (a 0-d cotangent), letters summed within one operand (broadcast back)."""
    for subscripts, shapes in [("ij,jk,kl->il", ((2, 3), (3, 4), (4, 2))),
                               ("ij,ij->", ((2, 3), (2, 3))), ("ij->i", ((2, 3),)),
                               ("ijk,j->ki", ((2, 3, 4), (3,))), ("i,j->ij", ((2,), (3,)))]:
        yield _case("einsum", [sample(s) for s in shapes], {"subscripts": subscripts},
                    id=f"einsum-{subscripts}")


S = ("s", None, None, None)  # the index spec of a full slice `:`


def _shape_cases():
    x = sample((2, 3, 4))
    for shape in [(6, 4), (24,), (4, -1), (2, 1, 12)]:
        yield _case("reshape", [x], {"shape": shape}, id=f"reshape-{shape}")
    for axis in [0, -1, 2, (0, 2)]:
        yield _case("expand_dims", [sample((2, 3))], {"axis": axis}, id=f"expand_dims-{axis}")
    for axis in [None, 0, -1, (0, 2)]:
        yield _case("squeeze", [sample((1, 3, 1))], {"axis": axis}, id=f"squeeze-{axis}")
    for axes in [None, (1, 0, 2), (2, 0, 1), (-1, 0, 1)]:
        yield _case("transpose", [x], {"axes": axes}, id=f"transpose-{axes}")
    yield _case("transpose", [sample((2, 3))], id="transpose-2d")
    for shape, to in [((3,), (2, 3)), ((2, 1), (2, 3)), ((), (2, 3)), ((1, 3), (4, 2, 3))]:
        yield _case("broadcast_to", [sample(shape)], {"shape": to}, id=f"broadcast_to-{to}")
    for shape, to in [((2, 3), (1, 3)), ((2, 3), ()), ((2, 3), (3,)), ((2, 3), (2, 1)),
                      ((4, 2, 3), (2, 1)), ((4, 2, 3), (1, 1, 3)), ((2, 3), (2, 3))]:
        yield _case("sum_to", [sample(shape)], {"shape": to}, id=f"sum_to-{shape}-{to}")
    for shapes, axis in [(((2, 3), (2, 2)), 1), (((2, 3), (1, 3), (3, 3)), 0),
                         (((2, 3), (2, 1)), -1), (((3,), (2,)), 0)]:
        yield _case("concatenate", [sample(s) for s in shapes], {"axis": axis},
                    id=f"concatenate-axis{axis}-{len(shapes)}")
    for n, axis in [(2, 0), (3, 1), (2, -1)]:
        yield _case("stack", [sample((2, 3)) for _ in range(n)], {"axis": axis},
                    id=f"stack-axis{axis}-{n}")
    yield from _getitem_cases()


def _getitem_cases():
    x = sample((4, 3))
    basic = {"slice": (("s", 1, None, None),), "int": (("i", 0),), "negative-int": (("i", -1),),
             "reverse": (S, ("s", None, None, -1)), "step": (("s", 0, None, 2), ("i", 1)),
             "newaxis": (("n",), S, ("i", 2)), "ellipsis": (("e",), ("i", 0))}
    for name, index in basic.items():
        yield _case("getitem", [x], {"index": index}, id=f"getitem-{name}")
    repeated = np.array([0, 2, 0, 3, 0])
    arrays = {"array": ((repeated,), (("a", 0),)),
              "array-cols": ((np.array([2, 0, 2]),), (S, ("a", 0))),
              "two-arrays": ((repeated, np.array([1])), (("a", 0), ("a", 1))),
              "2d-array": ((np.array([[0, 1], [1, 1]]),), (("a", 0), ("s", 1, None, None)))}
    for name, (idx, index) in arrays.items():
        yield _case("getitem", [x, *idx], {"index": index}, id=f"getitem-{name}")
    g = sample((5, 3))
    yield _case("scatter_add", [g, repeated], {"shape": (4, 3), "index": (("a", 0),)},
                id="scatter_add-repeated")
    yield _case("scatter_add", [sample((3,))], {"shape": (4, 3), "index": (("i", 1),)},
                id="scatter_add-int")
    yield _case("index_add", [sample((4, 3)), g, repeated], {"index": (("a", 0),)},
                id="index_add-repeated")
    yield _case("index_add", [sample((4, 3)), sample((3,)), np.array(2)],
                {"index": (("a", 0),)}, id="index_add-loop-counter")
    # a while loop's stack, read by index: its cotangent has one row per element (the runtime
    # form of a list's cotangent); k an int (generated code) or a 0-d counter
    yield _case("list_get", [sample((4, 3)), 2], id="list_get-row")
    yield _case("list_get", [sample((5,)), np.array(1)], id="list_get-counter")
    # x[index] = v: rows, a broadcast row, distinct index arrays, a Python float.
    for name, v, arrays, index in [("rows", sample((2, 3)), (), (("s", 1, 3, None),)),
                                   ("broadcast", sample((3,)), (), (("s", None, None, 2),)),
                                   ("array", sample((2, 3)), (np.array([3, 0]),), (("a", 0),)),
                                   ("py", 1.5, (), (S, ("i", 1)))]:
        yield _case("setitem", [sample((4, 3)), v, *arrays], {"index": index},
                    id=f"setitem-{name}")


def _conversion_cases():
    yield _case("copy", [sample((2, 3))])
    yield _case("asarray", [sample(())])
    yield _case("to_float", [sample(())])
    yield _case("full", [1.5], {"shape": (2, 3)}, id="full-py")
    yield _case("full", [sample(())], {"shape": (3,)}, id="full-0d")
    # Dyadic values and steps, so that float32 round trips are exact.
    x32 = (np.round(_rng.uniform(-2, 2, (2, 3)) * 64) / 64).astype(np.float32)
    yield _case("astype", [x32], {"dtype": "float64"}, eps=2.0 ** -4, id="astype-f32-f64")
    yield _case("astype", [x32.astype(np.float64)], {"dtype": "float32"}, eps=2.0 ** -4,
                id="astype-f64-f32")


def _logistic_cases():
    """sigmoid, softplus and log_sigmoid: no rows (adcompiler.passes.logistic makes them from
    users' spellings and spells them back in ufuncs), rules from the result alone."""
    for prim in ("sigmoid", "softplus", "log_sigmoid"):
        for shape in [(2, 3), ()]:
            yield _case(prim, [sample(shape, -6.0, 6.0)], id=f"{prim}-{_shape_id([shape])}")


CASES = [*_elementwise_cases(), *_remainder_cases(), *_reduction_cases(),
         *_prod_with_zeros_cases(), *_scan_cases(),
         *_linalg_cases(), *factorization_cases(), *_einsum_cases(), *_shape_cases(),
         *_conversion_cases(), *_logistic_cases()]


@pytest.mark.parametrize("prim, args, params, eps", CASES)
def test_rule_matches_finite_differences(prim, args, params, eps):
    check_rule(prim, args, params, eps)


# ---- coverage: every rule, and every argument of every rule, has a case -------------------
def _registered_rules():
    out = set()
    for prim, rules in templates.VJPS.items():
        out.update((prim, i) for i, rule in enumerate(rules) if rule is not None)
    return out


def test_every_rule_is_checked():
    covered = {(c.values[0], i) for c in CASES for i in _checked_argnums(c.values[0], c.values[1])}
    assert _registered_rules() - covered == set()
    assert set(templates.VARIADIC) - {prim for prim, _ in covered} == set()
    for prim in templates.VARIADIC:  # the first, a middle and the last input of a sequence
        assert {0, 1, 2} <= {i for p, i in covered if p == prim}


def test_flags_agree_with_rules():
    """Differentiable primitives have rules; primitives flagged not differentiable have none."""
    registered = set(templates.VJPS) | set(templates.VARIADIC) | set(templates.USER_VJPS)
    # Control-flow nodes (cond, loop) are differentiated through their regions, not by a rule.
    differentiable = {p for p, spec in PRIMS.items()
                      if spec.differentiable and spec.family != "control"}
    assert differentiable - registered == set()
    assert registered - differentiable == set()


def test_operators_on_python_floats_give_python_floats():
    """``evaluate`` computes what the emitted ``a + b`` computes: a float from two floats (the
    simplifier folds literal adjoints such as ``1.0 + 1.0`` with it)."""
    for prim in ("add", "subtract", "multiply", "divide", "power", "remainder",
                 "floor_divide"):
        assert type(evaluate(prim, [1.5, 2.0], {})) is float
    assert type(evaluate("remainder", [7, -3], {})) is int    # a loop counter stays an int
    assert type(evaluate("negative", [1.5], {})) is float
    assert type(evaluate("add", [np.float64(1.5), 2.0], {})) is np.float64


# ---- ties: the gradient is shared evenly, as in HIPS autograd and PyTorch -----------------
def test_ties_share_the_gradient_evenly():
    ops, g = ArrayOps(), np.array([1.0, 2.0])
    x, y = np.array([1.0, 3.0]), np.array([1.0, 2.0])
    ans = np.maximum(x, y)
    np.testing.assert_array_equal(templates.cotangent(ops, "maximum", 0, g, ans, [x, y], {}),
                                  [0.5, 2.0])
    np.testing.assert_array_equal(templates.cotangent(ops, "maximum", 1, g, ans, [x, y], {}),
                                  [0.5, 0.0])
    x = np.array([[2.0, 5.0, 5.0], [1.0, 1.0, 0.0]])
    ct = templates.cotangent(ops, "max", 0, g, x.max(axis=1), [x], {"axis": 1})
    np.testing.assert_array_equal(ct, [[0.0, 0.5, 0.5], [1.0, 1.0, 0.0]])


# ---- elementwise rules on SymPy symbols against sympy.diff ----------------------------------
class _Floor(sympy.floor):
    """``floor`` whose derivative is 0: true away from the integers, where it jumps (SymPy
    leaves the derivative of ``floor`` unevaluated)."""

    def fdiff(self, argindex=1):
        return sympy.S.Zero


_OPERATORS = {"add": lambda x, y: x + y, "subtract": lambda x, y: x - y,
              "multiply": lambda x, y: x * y, "divide": lambda x, y: x / y,
              "power": lambda x, y: x ** y, "remainder": lambda x, y: x - y * _Floor(x / y)}
ELEMENTWISE = sorted(p for p, spec in PRIMS.items()
                     if spec.family == "elementwise" and spec.differentiable)


def _symbolic_primal(prim):
    """The primitive's formula on SymPy symbols, e.g. ``Max(x0, x1)`` for maximum."""
    return _OPERATORS.get(prim) or getattr(SymbolicOps(), prim)


def _point(prim, rng):
    """One random point in ``prim``'s domain, away from the ties of piecewise functions."""
    if prim in UNARY_DOMAINS:
        domains = (UNARY_DOMAINS[prim],)
    elif prim in BINARY_DOMAINS:
        domains = BINARY_DOMAINS[prim]
    elif prim == "where":
        return [float(rng.integers(0, 2)), *rng.uniform(-2, 2, 2)]
    elif prim == "polygamma":
        return [float(rng.choice(POLYGAMMA_ORDERS)), float(rng.uniform(0.3, 4))]
    elif prim == "remainder":  # both signs, away from the jumps
        while True:
            x, y = rng.uniform(-3, 3), rng.uniform(0.5, 2) * rng.choice([-1.0, 1.0])
            if away_from_jumps(x, y):
                return [float(x), float(y)]
    else:  # maximum, minimum, clip: no two values closer than 0.05
        n = PRIMS[prim].arity
        while True:
            values = rng.uniform(-2, 2, n)
            if np.min(np.abs(values[:, None] - values[None, :]) + 9 * np.eye(n)) > 0.05:
                return sorted(values[:1]) + sorted(values[1:]) if prim == "clip" else list(values)
    return [float(rng.uniform(lo, hi) * (rng.choice([-1, 1]) if signed else 1))
            for lo, hi, signed in domains]


@pytest.mark.parametrize("prim", ELEMENTWISE)
def test_elementwise_rule_matches_sympy(prim):
    n = PRIMS[prim].arity
    xs = sympy.symbols(f"x0:{n}", real=True)
    primal = _symbolic_primal(prim)(*xs)
    rng = np.random.default_rng(sum(map(ord, prim)))
    argnums = [i for i in range(n) if templates.has_rule(prim, i)]
    rules = {i: sympy.sympify(templates.cotangent(SymbolicOps(), prim, i, 1, primal, list(xs), {}))
             for i in argnums}
    derivatives = {i: sympy.diff(primal, xs[i]) for i in argnums}
    for _ in range(4):
        point = _point(prim, rng)
        at = dict(zip(xs, map(sympy.Float, point)))
        with np.errstate(all="raise"):
            value = evaluate(prim, point, {})
        assert float(primal.subs(at)) == pytest.approx(float(value), rel=1e-12)
        for i in argnums:
            got, want = float(rules[i].subs(at)), float(derivatives[i].subs(at))
            assert got == pytest.approx(want, rel=1e-10, abs=1e-12), (prim, i, point)
