"""Every derivative rule as the tape runs it, over the template tests' cases (``CASES``).

For each primitive and argument: the tape's backward pass gives exactly what the template gives
on arrays (``ArrayOps``), and the same again when the rules run on tensors under
``create_graph=True`` (``TensorOps``, so every ``ops`` call a rule makes exists on tensors); the
tangent rule (``templates.tangent``) matches central finite differences along a random
direction, agrees with the adjoint rule (``<g, J dx> == <J^T g, dx>``), and forward mode on the
tape (``forward_ad``) gives the same tangent.
"""

from __future__ import annotations

import numpy as np
import pytest

from adcompiler import tape, templates
from adcompiler.ir.primitives import evaluate
from adcompiler.tape import forward_ad as fwAD
from adcompiler.tape.record import apply
from adcompiler.templates.ops import ArrayOps

from tests.templates.test_templates import CASES, S, _case, check_rule, sample

RTOL, ATOL = 1e-6, 1e-8

# x[index] = v where NumPy keeps one of several writes (the last) or drops v's leading ones:
# the template cases hold distinct indices only, these run through every check below as well.
SETITEM_CASES = [
    _case("setitem", [sample((4, 3)), sample((5, 3)), np.array([0, 2, 0, 3, 0])],
          {"index": (("a", 0),)}, id="setitem-repeated"),
    _case("setitem", [sample((4, 3)), sample((3,)), np.array([1, -3, 2])],
          {"index": (("a", 0),)}, id="setitem-repeated-negative-broadcast"),
    _case("setitem", [sample((4, 3)), sample((4, 1)), np.array([2, 0, 2, 2])],
          {"index": (S, ("a", 0))}, id="setitem-repeated-cols"),
    _case("setitem", [sample((4, 3)), sample((2, 2)), np.array([[1, 1], [0, 1]]),
                      np.array([2])], {"index": (("a", 0), ("a", 1))}, id="setitem-repeated-2d"),
    _case("setitem", [sample((4, 3)), sample((1, 3))], {"index": (("i", 1),)},
          id="setitem-leading-ones"),
    _case("setitem", [sample((4, 3)), sample((1, 1, 2))],
          {"index": (("i", 0), ("s", 1, None, None))}, id="setitem-leading-ones-2"),
]


def _checked_argnums(prim, args):
    """The float arguments that have a rule (the ones a gradient flows to)."""
    return [i for i, x in enumerate(args) if templates.has_rule(prim, i)
            and (isinstance(x, float) or np.result_type(x).kind == "f")]


def _random_like(x, seed):
    rng = np.random.default_rng(seed)
    value = rng.standard_normal(np.shape(x))
    return float(value) if isinstance(x, float) else np.asarray(value).astype(np.result_type(x))


def _on_tape(prim, args, params, argnums, **kwargs):
    """The case recorded on the tape: leaves for ``argnums``, the other arguments as given."""
    leaves = {i: tape.tensor(args[i], requires_grad=True, **kwargs) for i in argnums}
    out = apply(prim, [leaves.get(i, a) for i, a in enumerate(args)], params)
    return out, [leaves[i] for i in argnums]


@pytest.mark.parametrize("prim, args, params, eps", SETITEM_CASES)
def test_setitem_rules_match_finite_differences(prim, args, params, eps):
    check_rule(prim, args, params, eps)


@pytest.mark.parametrize("prim, args, params, eps", CASES + SETITEM_CASES)
def test_tape_backward_runs_the_template(prim, args, params, eps):
    argnums = _checked_argnums(prim, args)
    ans = evaluate(prim, list(args), params)
    g = _random_like(ans, 3)
    expected = [templates.cotangent(ArrayOps(), prim, i, g, ans, list(args), params)
                for i in argnums]
    out, leaves = _on_tape(prim, args, params, argnums)
    np.testing.assert_allclose(out.detach().numpy(), ans, rtol=1e-15)
    plain = tape.grad(out, leaves, grad_outputs=g, allow_unused=True)
    out, leaves = _on_tape(prim, args, params, argnums)
    graphed = tape.grad(out, leaves, grad_outputs=tape.tensor(g), create_graph=True,
                        allow_unused=True)
    for i, want, got, again in zip(argnums, expected, plain, graphed):
        assert got.shape == np.shape(args[i]) and got.dtype == np.result_type(args[i])
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-14,
                                   err_msg=f"{prim} argument {i}")
        np.testing.assert_allclose(again.detach().numpy(), want, rtol=1e-12, atol=1e-14,
                                   err_msg=f"{prim} argument {i} (create_graph)")


def _directional(prim, args, params, i, dx, eps):
    """(f(x + eps dx) - f(x - eps dx)) / 2 eps, in float64."""
    def at(sign):
        moved = list(args)
        moved[i] = args[i] + sign * eps * dx
        return np.asarray(evaluate(prim, moved, params), np.float64)
    return (at(1) - at(-1)) / (2 * eps)


@pytest.mark.parametrize("prim, args, params, eps", CASES + SETITEM_CASES)
def test_tangent_rule(prim, args, params, eps):
    ans = evaluate(prim, list(args), params)
    g = _random_like(ans, 5)
    for i in _checked_argnums(prim, args):
        assert templates.has_jvp(prim, i), f"{prim} argument {i} has no tangent rule"
        dx = _random_like(args[i], 7 + i)
        if eps > 1e-3:   # the float32 cases: dyadic directions keep every step exact
            dx, g = np.round(np.asarray(dx) * 4) / 4, np.round(np.asarray(g) * 4) / 4
        t = templates.tangent(ArrayOps(), prim, i, dx, ans, list(args), params)
        assert np.shape(t) == np.shape(ans), f"{prim} argument {i}: tangent shape"
        np.testing.assert_allclose(np.asarray(t, np.float64),
                                   _directional(prim, args, params, i, dx, eps),
                                   rtol=RTOL, atol=ATOL, err_msg=f"{prim} argument {i}")
        ct = templates.cotangent(ArrayOps(), prim, i, g, ans, list(args), params)
        assert np.sum(np.multiply(g, t, dtype=np.float64)) == pytest.approx(
            np.sum(np.multiply(ct, dx, dtype=np.float64)), rel=1e-9, abs=1e-12)
        _check_forward_mode(prim, args, params, i, dx, t)


def _check_forward_mode(prim, args, params, i, dx, expected):
    with fwAD.dual_level():
        dual = fwAD.make_dual(tape.tensor(args[i]), tape.tensor(dx))
        out = apply(prim, [dual if j == i else a for j, a in enumerate(args)], params)
        tangent = fwAD.unpack_dual(out).tangent
    assert tangent is not None and tangent.shape == out.shape
    np.testing.assert_allclose(tangent.numpy(), expected, rtol=1e-12, atol=1e-14)


def test_every_tangent_rule_is_checked():
    covered = {(c.values[0], i) for c in CASES for i in _checked_argnums(c.values[0], c.values[1])}
    registered = {(p, i) for p, rules in templates.JVPS.items()
                  for i, rule in enumerate(rules) if rule is not None}
    assert registered - covered == set()
    assert set(templates.JVP_VARIADIC) <= {p for p, _ in covered}


def test_every_adjoint_rule_has_a_tangent_rule():
    adjoints = {(p, i) for p, rules in templates.VJPS.items()
                for i, rule in enumerate(rules) if rule is not None}
    assert {(p, i) for p, i in adjoints if not templates.has_jvp(p, i)} == set()
    assert set(templates.VARIADIC) <= set(templates.JVP_VARIADIC)


def test_float32_stays_float32():
    x = tape.tensor(np.array([0.5, 1.5], np.float32), requires_grad=True)
    y = (np.tanh(x) * 2.0 + x ** 2).sum() / 3.0
    assert y.dtype == np.float32
    y.backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad.numpy(), (2 * (1 - np.tanh([0.5, 1.5]) ** 2)
                                                + 2 * np.array([0.5, 1.5])) / 3, rtol=1e-6)
