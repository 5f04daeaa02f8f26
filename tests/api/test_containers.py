"""Parameter containers (pytrees): dicts, lists, tuples, NamedTuples and dataclasses of arrays
and floats as arguments, in ``wrt`` and as gradients, in every transform, with JAX's pytree
semantics written out: the gradient has the argument's container types, keys and order, None
where it holds None. Values against the gradient of the same function taking the leaves as
separate parameters, and against central differences."""

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.tape import dynamic_grad


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")


RNG = np.random.default_rng(29)
W1, B1 = RNG.normal(size=(3, 4)), RNG.normal(size=4)
W2, B2 = RNG.normal(size=(4, 2)), RNG.normal(size=2)
X = RNG.normal(size=(5, 3))


def numeric(f, x, eps=1e-6):
    """Central differences of the scalar ``f`` at the array or float ``x``."""
    if isinstance(x, float):
        return (f(x + eps) - f(x - eps)) / (2 * eps)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


# ---- the oracle: the same network with every array its own parameter -------------------------
def split_loss(W1, b1, W2, b2, x):
    h = np.tanh(x @ W1 + b1)
    return np.sum((h @ W2 + b2) ** 2)


def split_gradient():
    return ad.grad(split_loss, wrt=("W1", "b1", "W2", "b2"))(W1, B1, W2, B2, X)


def dict_loss(params, x):
    h = np.tanh(x @ params["W1"] + params["b1"])
    return np.sum((h @ params["W2"] + params["b2"]) ** 2)


def test_a_dict_gradient_is_a_dict_with_the_keys_in_order():
    params = {"W1": W1, "b1": B1, "W2": W2, "b2": B2}
    g = ad.grad(dict_loss)(params, X)
    assert type(g) is dict and list(g) == ["W1", "b1", "W2", "b2"]
    for got, want in zip(g.values(), split_gradient()):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    reordered = {"b2": B2, "W2": W2, "b1": B1, "W1": W1}
    assert list(ad.grad(dict_loss)(reordered, X)) == ["b2", "W2", "b1", "W1"]


class Params(NamedTuple):
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray


@dataclasses.dataclass
class Mutable:
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray


@dataclasses.dataclass(frozen=True)
class Frozen:
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray


def attribute_loss(params, x):
    h = np.tanh(x @ params.W1 + params.b1)
    return np.sum((h @ params.W2 + params.b2) ** 2)


@pytest.mark.parametrize("kind", [Params, Mutable, Frozen])
def test_namedtuples_and_dataclasses_come_back_as_their_class(kind):
    g = ad.grad(attribute_loss)(kind(W1, B1, W2, B2), X)
    assert type(g) is kind
    for field, want in zip(("W1", "b1", "W2", "b2"), split_gradient()):
        np.testing.assert_allclose(getattr(g, field), want, rtol=1e-12)


def layers_loss(layers, x):
    h = x
    for W, b in layers[:-1]:
        h = np.tanh(h @ W + b)
    W, b = layers[-1]
    return np.sum((h @ W + b) ** 2) + 0.0 * len(layers)


def test_a_list_of_layer_tuples():
    g = ad.grad(layers_loss)([(W1, B1), (W2, B2)], X)
    assert type(g) is list and [type(t) for t in g] == [tuple, tuple]
    want = split_gradient()
    for got, w in zip([g[0][0], g[0][1], g[1][0], g[1][1]], want):
        np.testing.assert_allclose(got, w, rtol=1e-12)


def nested_loss(p):
    enc = p["enc"]
    return np.sum(np.sin(enc["W"]) * enc["scale"]) + p["dec"][0] * p["dec"][1] ** 3


def test_nested_containers_with_none_and_floats():
    p = {"enc": {"W": W1, "scale": 1.5, "bias": None}, "dec": [0.7, -1.2]}
    g = ad.grad(nested_loss)(p)
    assert list(g) == ["enc", "dec"] and list(g["enc"]) == ["W", "scale", "bias"]
    assert g["enc"]["bias"] is None                       # as jax.grad: None stays None
    assert type(g["enc"]["scale"]) is float and type(g["dec"]) is list
    np.testing.assert_allclose(g["enc"]["W"], 1.5 * np.cos(W1), rtol=1e-12)
    np.testing.assert_allclose(g["enc"]["scale"], np.sum(np.sin(W1)), rtol=1e-12)
    assert g["dec"] == pytest.approx([-1.2 ** 3, 3 * 0.7 * 1.2 ** 2], rel=1e-12)


def config_loss(params, config):
    z = params["w"] * config["scale"]
    for _ in range(config["steps"]):
        z = np.tanh(z)
    return np.sum(z) if config["reduce"] == "sum" else np.mean(z)


def test_static_entries_of_a_container_not_differentiated():
    """Ints and strings of a container that is not differentiated are static, as ints are;
    its floats and arrays traced."""
    w = np.linspace(-1, 1, 4)
    g = ad.grad(config_loss)({"w": w}, {"scale": 2.0, "steps": 2, "reduce": "sum"})
    np.testing.assert_allclose(g["w"], numeric(lambda v: config_loss(
        {"w": v}, {"scale": 2.0, "steps": 2, "reduce": "sum"}), w), rtol=1e-7)
    g2 = ad.grad(config_loss)({"w": w}, {"scale": 2.0, "steps": 2, "reduce": "mean"})
    np.testing.assert_allclose(g2["w"], g["w"] / 4, rtol=1e-12)


def test_value_and_grad_and_wrt_naming_a_container_beside_an_array():
    params = {"W1": W1, "b1": B1, "W2": W2, "b2": B2}
    value, g = ad.value_and_grad(dict_loss)(params, X)
    assert value == pytest.approx(split_loss(W1, B1, W2, B2, X), rel=1e-12)
    np.testing.assert_allclose(g["W2"], split_gradient()[2], rtol=1e-12)
    gp, gx = ad.grad(dict_loss, wrt=("params", "x"))(params, X)
    assert list(gp) == list(params)
    np.testing.assert_allclose(gx, ad.grad(split_loss, wrt="x")(W1, B1, W2, B2, X),
                               rtol=1e-12)


def test_an_mlp_trained_with_a_params_dict():
    params = {"W1": W1.copy(), "b1": B1.copy(), "W2": W2.copy(), "b2": B2.copy()}
    step = ad.value_and_grad(dict_loss)
    losses = []
    for _ in range(5):
        loss, g = step(params, X)
        losses.append(loss)
        params = {k: params[k] - 0.01 * g[k] for k in params}
    assert all(b < a for a, b in zip(losses, losses[1:]))
    flat = [W1.copy(), B1.copy(), W2.copy(), B2.copy()]
    for _ in range(5):   # the same steps with the arrays as separate parameters
        flat = [p - 0.01 * d for p, d in zip(flat, ad.grad(
            split_loss, wrt=("W1", "b1", "W2", "b2"))(*flat, X))]
    for got, want in zip(params.values(), flat):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert len(step._cache) == 1   # every step had the same structure: compiled once


def test_the_source_names_leaves_after_their_keys():
    g = ad.grad(dict_loss)
    g({"W1": W1, "b1": B1, "W2": W2, "b2": B2}, X)
    assert "def grad_dict_loss(params_W1, params_b1, params_W2, params_b2, x):" in g.source
    assert "dparams_W1" in g.source and "p_0" not in g.source
    h = ad.grad(layers_loss)
    h([(W1, B1), (W2, B2)], X)
    assert "layers_0_0, layers_0_1, layers_1_0, layers_1_1" in h.source


def test_keys_and_lengths_are_the_signature():
    g = ad.grad(layers_loss)
    g([(W1, B1), (W2, B2)], X)
    g([(W1 + 1, B1), (W2, B2 - 1)], X)   # same structure and shapes: reused
    assert len(g._cache) == 1
    W3, b3 = RNG.normal(size=(2, 2)), RNG.normal(size=2)
    g3 = g([(W1, B1), (W2, B2), (W3, b3)], X)   # one layer more: compiled again
    assert len(g._cache) == 2 and len(g3) == 3
    h = ad.grad(dict_loss)
    h({"W1": W1, "b1": B1, "W2": W2, "b2": B2}, X)
    h({"b1": B1, "W1": W1, "W2": W2, "b2": B2}, X)   # other order: another key
    assert len(h._cache) == 2


def helper_layer(p, x):
    return np.tanh(x @ p["W"] + p["b"])


def helper_loss(net, x):
    total = 0.0
    for name, p in net.items():
        total = total + np.sum(helper_layer(p, x[:, : p["W"].shape[0]]) ** 2)
    for key in net.keys():
        total = total + 0.5 * np.sum(net[key]["b"])
    for p in net.values():
        total = total + 0.1 * np.sum(p["W"])
    return total


def test_items_keys_values_and_a_helper_taking_the_container():
    net = {"a": {"W": W1, "b": B1}, "b": {"W": W2[:3], "b": B2}}
    g = ad.grad(helper_loss)(net, X)
    for layer in ("a", "b"):
        for key in ("W", "b"):
            def f(v, layer=layer, key=key):
                changed = {k: dict(p) for k, p in net.items()}
                changed[layer][key] = v
                return helper_loss(changed, X)
            np.testing.assert_allclose(g[layer][key], numeric(f, net[layer][key]), rtol=1e-6,
                                       atol=1e-8)


def varargs(x, *args):
    return np.sum(x * args[0]) + sum(np.sum(a ** 2) for a in args[1:])


def keywords(x, **extra):
    return np.sum(x * extra["scale"]) + extra["shift"] ** 2


def test_args_and_kwargs_parameters():
    x, a, b = np.arange(3.0), np.ones(3), np.full(3, 2.0)
    np.testing.assert_array_equal(ad.grad(varargs)(x, a, b), a)
    g = ad.grad(varargs, wrt="args")(x, a, b, 3.0)
    assert type(g) is tuple and len(g) == 3
    np.testing.assert_array_equal(g[0], x)
    np.testing.assert_array_equal(g[1], 2 * b)
    assert g[2] == 6.0
    gx, gk = ad.grad(keywords, wrt=("x", "extra"))(x, scale=a, shift=1.5)
    np.testing.assert_array_equal(gx, a)
    assert list(gk) == ["scale", "shift"] and gk["shift"] == 3.0
    np.testing.assert_array_equal(gk["scale"], x)


# ---- forward mode, Jacobians, Hessians --------------------------------------------------------
def vector_out(p):
    return np.tanh(p["a"] * p["s"][0]) + p["s"][1]


def test_jvp_takes_a_container_of_tangents():
    p = {"W1": W1, "b1": B1, "W2": W2, "b2": B2}
    t = {"W1": RNG.normal(size=W1.shape), "b1": RNG.normal(size=4),
         "W2": RNG.normal(size=W2.shape), "b2": RNG.normal(size=2)}
    value, tangent = ad.jvp(dict_loss)(p, X, tangents=t)
    assert value == pytest.approx(dict_loss(p, X), rel=1e-12)
    line = numeric(lambda s: dict_loss({k: p[k] + s * t[k] for k in p}, X), 0.0)
    assert tangent == pytest.approx(line, rel=1e-6)
    with pytest.raises(TypeError, match=r"the tangent for 'params' is \{'W1': \*"):
        ad.jvp(dict_loss)(p, X, tangents={"W1": t["W1"]})


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_a_jacobian_has_the_input_structure(mode):
    p = {"a": np.linspace(-1, 1, 3), "s": [0.5, 2.0]}
    J = ad.jacobian(vector_out, mode=mode)(p)
    assert list(J) == ["a", "s"] and type(J["s"]) is list
    assert J["a"].shape == (3, 3) and J["s"][0].shape == (3,)
    s0 = 0.5
    np.testing.assert_allclose(J["a"], np.diag(s0 / np.cosh(p["a"] * s0) ** 2), rtol=1e-12)
    np.testing.assert_allclose(J["s"][0], p["a"] / np.cosh(p["a"] * s0) ** 2, rtol=1e-12)
    np.testing.assert_allclose(J["s"][1], np.ones(3), rtol=1e-12)


def test_a_hessian_nests_the_structure_in_itself():
    p = {"enc": {"W": np.array([0.3, -0.8]), "bias": None}, "dec": [0.7, -1.2]}
    H = ad.hessian(nested_hessian_loss)(p)
    assert list(H) == ["enc", "dec"] and list(H["enc"]) == ["W", "bias"]
    assert H["enc"]["bias"] is None
    assert list(H["enc"]["W"]) == ["enc", "dec"] and H["enc"]["W"]["enc"]["bias"] is None
    np.testing.assert_allclose(H["enc"]["W"]["enc"]["W"], np.diag(-np.sin(p["enc"]["W"])),
                               rtol=1e-12)
    assert np.shape(H["enc"]["W"]["dec"][0]) == (2,)
    d0, d1 = p["dec"]
    np.testing.assert_allclose(H["dec"][0]["dec"][1], 3 * d1 ** 2, rtol=1e-12)
    np.testing.assert_allclose(H["dec"][1]["dec"][1], 6 * d0 * d1, rtol=1e-12)
    np.testing.assert_allclose(H["dec"][0]["enc"]["W"], np.zeros(2))


def nested_hessian_loss(p):
    return np.sum(np.sin(p["enc"]["W"])) + p["dec"][0] * p["dec"][1] ** 3


# ---- the tape and check_grad -----------------------------------------------------------------
def deep_loss(p, x):
    h = x
    for W, b in p["layers"]:
        h = np.tanh(h @ W + b)
    return np.sum(h ** 2) * p["scale"]


def test_the_tape_equals_the_compiler_on_containers():
    p = {"layers": [(W1, B1), (W2, B2)], "scale": 1.5, "skip": None}
    compiled = ad.grad(deep_loss)(p, X)
    taped = dynamic_grad(deep_loss)(p, X)
    assert taped["skip"] is None and type(taped["layers"][1]) is tuple
    for (cw, cb), (tw, tb) in zip(compiled["layers"], taped["layers"]):
        np.testing.assert_allclose(tw, cw, rtol=1e-12)
        np.testing.assert_allclose(tb, cb, rtol=1e-12)
    assert taped["scale"] == pytest.approx(compiled["scale"], rel=1e-12)


def test_check_grad_checks_each_leaf():
    p = {"layers": [(W1, B1), (W2, B2)], "scale": 1.5, "skip": None}
    report = ad.check_grad(deep_loss, p, X, wrt=("p", "x"))
    assert [c.name for c in report.inputs] == [
        "p['layers'][0][0]", "p['layers'][0][1]", "p['layers'][1][0]", "p['layers'][1][1]",
        "p['scale']", "x"]
    assert report.ok


# ---- what cannot work, refused where it is written ---------------------------------------------
def first(p):
    return np.sum(p["W"] ** 2)


def test_refusals_name_the_entry():
    with pytest.raises(TypeError, match=r"'p' is a dict with the key \('a', 1\).*use str keys"):
        ad.grad(first)({("a", 1): np.ones(2), "W": np.ones(2)})
    with pytest.raises(TypeError, match=r"\"p\['n'\]\": it is an integer \(3\)"):
        ad.grad(first)({"n": 3, "W": np.ones(2)})
    with pytest.raises(TypeError, match="hold no float or array to differentiate"):
        ad.grad(first, wrt="p")({"W": None})


def grows_in_loop(p):
    s = (p["W"],)
    for i in range(3):
        s = s + (p["W"] * i,)
    return np.sum(s[0])


def traced_key(p, k):
    return np.sum(p[k])


def missing_key(p):
    return np.sum(p["V"])


def test_located_errors_in_the_function():
    with pytest.raises(ad.CompileError, match="a tuple of 1 entry before this loop and a "
                       "tuple of 2 entries after one iteration") as err:
        ad.grad(grows_in_loop)({"W": np.ones(2)})
    assert err.value.lineno == grows_in_loop.__code__.co_firstlineno + 2
    with pytest.raises(ad.CompileError, match="KeyError: 'V'"):
        ad.grad(missing_key)({"W": np.ones(2)})
    with pytest.raises(ad.CompileError, match="a dict key here is a traced value"):
        ad.grad(traced_key)({"W": np.ones(2)}, np.ones(1))


# ---- dicts built in the function, and containers carried through loops and branches ----------
def built_dicts(x, scale):
    d = {"a": x, "b": 2.0 * x}
    e = {**d, "b": d["b"] * scale, "c": np.sin(x)}
    squares = {k: v ** 2 for k, v in e.items() if k != "a"}
    return np.sum(e["a"] * e["b"]) + sum(np.sum(v) for v in squares.values())


def test_dict_displays_unpacking_and_comprehensions():
    x = np.linspace(-1, 1, 4)
    g = ad.grad(built_dicts)(x, 3.0)
    np.testing.assert_allclose(g, numeric(lambda v: built_dicts(v, 3.0), x), rtol=1e-7)
    gs = ad.grad(built_dicts, wrt="scale")(x, 3.0)
    assert gs == pytest.approx(numeric(lambda s: built_dicts(x, s), 3.0), rel=1e-7)


def decay(params, n):
    for _ in range(n):
        params = {**params, "W": params["W"] * params["rate"]}
    return np.sum(params["W"])


def branch(p, x):
    if np.sum(x) > 0:   # a traced condition: the dict is joined entry by entry
        p = {"W": p["W"] * 2.0, "b": p["b"]}
    else:
        p = {"W": p["W"], "b": p["b"] - 1.0}
    return np.sum(p["W"] * x) + np.sum(p["b"] ** 2)


def test_a_dict_carried_through_a_loop_and_joined_after_a_branch():
    w = np.array([1.0, -2.0])
    g = ad.grad(decay)({"W": w, "rate": 0.5}, 3)
    np.testing.assert_allclose(g["W"], np.full(2, 0.125), rtol=1e-12)
    assert g["rate"] == pytest.approx(3 * 0.5 ** 2 * np.sum(w), rel=1e-12)
    p = {"W": w, "b": np.array([0.5])}
    for x in (np.array([1.0, 2.0]), np.array([-1.0, -2.0])):
        g = ad.grad(branch)(p, x)
        for key in p:
            def f(v, key=key):
                return branch({**p, key: v}, x)
            np.testing.assert_allclose(g[key], numeric(f, p[key]), rtol=1e-7)


def spread(x, *args, **kwargs):
    return helper_sum(x, *args, **kwargs)


def helper_sum(x, a, b, scale=1.0):
    return np.sum(x * a + b) * scale


def test_star_and_double_star_in_calls():
    x, a = np.arange(3.0), np.full(3, 2.0)
    g = ad.grad(spread, wrt=("x", "args", "kwargs"))(x, a, 1.0, scale=3.0)
    np.testing.assert_array_equal(g[0], 3.0 * a)
    np.testing.assert_array_equal(g[1][0], 3.0 * x)
    assert g[1][1] == 9.0 and g[2] == {"scale": pytest.approx(np.sum(x * a + 1.0))}


def assigns_into(p):
    p["W"] = p["W"] * 2
    return np.sum(p["W"])


def test_assigning_into_a_dict_says_to_rebind_it():
    with pytest.raises(ad.CompileError, match="`p` is a dict: assigning into it is not "
                       "supported") as err:
        ad.grad(assigns_into)({"W": np.ones(2)})
    assert 'p = {**p, "W": ...}' in err.value.hint
    assert err.value.lineno == assigns_into.__code__.co_firstlineno + 1


def int_keys(x):
    d = {k: x * k for k in range(3)}
    return np.sum(d[2] * d[1])


def stars_rows(x):
    a, *rest = x
    return a * np.sum(np.stack([*rest]))


def test_once_refused_dict_comprehension_and_star_display():
    """tests/frontend's refusals of ``{k: ... for k in range(3)}`` and ``[*rest]``: both
    compile now."""
    x = np.array([0.5, -1.5, 2.0])
    np.testing.assert_allclose(ad.grad(int_keys)(x), numeric(int_keys, x), rtol=1e-7)
    np.testing.assert_allclose(ad.grad(stars_rows)(x), numeric(stars_rows, x), rtol=1e-7)


# ---- vjp of a function returning a container ----------------------------------------------------
def returns_container(p):
    return {"h": np.tanh(p["W"]) * 2.0, "stats": (np.sum(p["b"] ** 2), None)}


def test_vjp_of_a_returned_container_takes_a_cotangent_of_its_structure():
    p = {"W": np.array([0.3, -0.4]), "b": np.arange(3.0)}
    ct = {"h": np.array([1.0, -2.0]), "stats": (0.5, None)}
    g = ad.vjp(returns_container)(p, cotangent=ct)

    def weighted(W, b):   # <f(p), ct> summed over the leaves: what the vjp differentiates
        out = returns_container({"W": W, "b": b})
        return np.sum(out["h"] * ct["h"]) + out["stats"][0] * ct["stats"][0]
    np.testing.assert_allclose(g["W"], numeric(lambda W: weighted(W, p["b"]), p["W"]),
                               rtol=1e-7)
    np.testing.assert_allclose(g["b"], numeric(lambda b: weighted(p["W"], b), p["b"]),
                               rtol=1e-7)
    with pytest.raises(ValueError, match=r"cotangent= is \{'h': \*\}, but returns_container "
                       r"returns \{'h': \*, 'stats': \(\*, None\)\}"):
        ad.vjp(returns_container)(p, cotangent={"h": ct["h"]})
    with pytest.raises(ValueError, match=r"the cotangent has shape \(3,\), but the result has "
                       r"shape \(2,\)"):
        ad.vjp(returns_container)(p, cotangent={"h": np.ones(3), "stats": (0.5, None)})


def cubic(x, cfg):
    return x ** 3 * cfg["a"] + cfg["b"][0] * x


def test_grad_of_grad_with_a_container_beside_the_variable():
    gg = ad.grad(ad.grad(cubic))
    assert gg(2.0, {"a": 1.5, "b": [4.0]}) == pytest.approx(6 * 2.0 * 1.5, rel=1e-12)
    with pytest.raises(ad.CompileError, match="with respect to the container 'cfg' is a "
                       "container of gradients") as err:
        ad.grad(ad.grad(cubic, wrt="cfg"), wrt="x")(2.0, {"a": 1.5, "b": [4.0]})
    assert "adcompiler.hessian(cubic)" in err.value.hint


STANDALONE = '''\
import numpy as np
import adcompiler as ad


@ad.grad
def loss(params, x):
    return np.sum(np.tanh(x @ params["W1"] + params["b1"]) ** 2)


def example_loss():
    return ({"W1": np.linspace(-1, 1, 12).reshape(3, 4), "b1": np.zeros(4)},
            np.linspace(0, 1, 15).reshape(5, 3))


@ad.value_and_grad(wrt=("layers", "x"))
def deep(layers, x, cfg):
    for W, b in layers:
        x = np.tanh(x @ W + b)
    return cfg["scale"] * np.sum(x ** cfg["power"])


def example_deep():
    return ([(np.full((2, 3), 0.5), np.zeros(3)), (np.eye(3), np.ones(3))],
            np.array([[1.0, -1.0]]), {"scale": 2.0, "power": 2, "skip": None})
'''


def test_a_standalone_module_takes_and_returns_containers(tmp_path, monkeypatch):
    """``adcompiler compile`` writes a dispatcher that unpacks each container into the leaves
    its bodies take, checks the structure compiled for, and packs the gradient back: the
    same values and containers as adcompiler.grad at run time."""
    import importlib
    import subprocess
    import sys
    path = tmp_path / "containermod.py"
    path.write_text(STANDALONE)
    done = subprocess.run([sys.executable, "-m", "adcompiler", "compile", str(path)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "containermod_grad.py").read_text()
    assert "params_W1 = params['W1']" in text and "import adcompiler" not in text
    monkeypatch.syspath_prepend(str(tmp_path))
    user, standalone = (importlib.import_module(m) for m in ("containermod", "containermod_grad"))
    args = user.example_loss()
    for batch in (5, 2, 9):   # the body reads the batch size from x
        x = np.linspace(-1, 1, 3 * batch).reshape(batch, 3)
        got, want = standalone.grad_loss(args[0], x), user.loss(args[0], x)
        assert list(got) == ["W1", "b1"]
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-12)
    # the leaves' sizes vary too, tied to x's as the code ties them (aot/polymorphic.py)
    assert "params_W1: float64[d1, d2], params_b1: float64[d2], x: float64[d3, d1]" in text
    args = user.example_deep()
    (value, (dlayers, dx)), (value2, (dlayers2, dx2)) = standalone.value_and_grad_deep(*args), \
        user.deep(*args)
    assert value == pytest.approx(value2, rel=1e-12)
    assert type(dlayers) is list and type(dlayers[1]) is tuple
    for (dW, db), (dW2, db2) in zip(dlayers, dlayers2):
        np.testing.assert_allclose(dW, dW2, rtol=1e-12)
        np.testing.assert_allclose(db, db2, rtol=1e-12)
    np.testing.assert_allclose(dx, dx2, rtol=1e-12)
    with pytest.raises(TypeError, match=r"grad_loss: params is not \{'W1': \*, 'b1': \*\}"):
        standalone.grad_loss({"W1": args[0][0][0]}, args[1])
    cfg = {"scale": 2.0, "power": 3, "skip": None}   # a static entry the body folded in
    with pytest.raises(TypeError, match="cfg is not"):
        standalone.value_and_grad_deep(args[0], args[1], cfg)


def test_adcompiler_check_checks_each_leaf_near_the_example(tmp_path):
    import subprocess
    import sys
    path = tmp_path / "containermod.py"
    path.write_text(STANDALONE)
    done = subprocess.run([sys.executable, "-m", "adcompiler", "check", str(path)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "loss (params_W1: float64[3, 4], params_b1: float64[4], x: float64[5, 3])" in \
        done.stdout
    for label in ("params['W1']", "params['b1']", "layers[0][0]", "layers[1][1]"):
        assert any(line.strip().startswith(label) and line.rstrip().endswith("ok")
                   for line in done.stdout.splitlines()), (label, done.stdout)
    assert "all gradients agree" in done.stdout


SCALE = 2.0


def scaled_dict_loss(params, x):
    return SCALE * np.sum((x @ params["W"]) ** 2)


def test_the_container_fast_path_reruns_what_changed():
    """Repeated calls with a container skip classifying it (tree_keys), and still compile
    again where a global it read was rebound, or for another structure or shape."""
    global SCALE
    g = ad.grad(scaled_dict_loss)
    W, x = np.ones((3, 2)), np.arange(6.0).reshape(2, 3)
    first = g({"W": W}, x)
    np.testing.assert_allclose(g({"W": W}, x)["W"], first["W"])   # through the fast path
    assert len(g._trees) == 1
    try:
        SCALE = 3.0
        np.testing.assert_allclose(g({"W": W}, x)["W"], 1.5 * first["W"], rtol=1e-12)
    finally:
        SCALE = 2.0
    np.testing.assert_allclose(g({"W": W}, x)["W"], first["W"], rtol=1e-12)
    assert g({"W": np.ones((3, 4))}, x)["W"].shape == (3, 4)
    assert list(g({"W": W, "extra": 1.0}, x)) == ["W", "extra"]
    assert g({"W": W, "extra": 1.0}, x)["extra"] == 0.0


class State(NamedTuple):
    h: np.ndarray
    c: np.ndarray


@dataclasses.dataclass(frozen=True)
class FrozenState:
    h: np.ndarray
    c: np.ndarray


def recurrent(p, xs, kind):
    s = kind(np.zeros(2), np.zeros(2))
    for t in range(xs.shape[0]):   # a compiled loop carrying the state entry by entry
        c = np.tanh(s.c + xs[t] @ p["W"])
        s = kind(h=np.tanh(c) * 0.5, c=c)
    if kind is State:
        s = s._replace(h=s.h * 2.0)
    else:
        s = dataclasses.replace(s, h=s.h * 2.0)
    return np.sum(s.h)


@pytest.mark.parametrize("kind", [State, FrozenState])
def test_a_namedtuple_or_dataclass_state_built_and_carried_in_a_loop(kind):
    p, xs = {"W": RNG.normal(size=(3, 2))}, RNG.normal(size=(4, 3))
    g = ad.grad(recurrent)(p, xs, kind)
    np.testing.assert_allclose(g["W"], numeric(lambda W: recurrent({"W": W}, xs, kind),
                                               p["W"]), rtol=1e-6, atol=1e-9)


class _FakeDeviceArray:
    """Looks like a CuPy array to the backend checks (its type's module is cupy)."""
    __module__ = "cupy"
    shape, dtype = (2,), np.dtype("float64")


def test_the_backend_check_opens_containers():
    """NumPy arrays in a container given to CuPy code, and a CuPy array in one given to NumPy
    code, are refused by their entry's name (CuPy code does not copy inputs to the GPU)."""
    with pytest.raises(TypeError, match=r"compiled for CuPy .*\"p\['W'\]\" is a NumPy "
                       r"ndarray"):
        ad.grad(first, backend="cupy")({"W": np.ones(2)})
    with pytest.raises(TypeError, match=r"compiled for NumPy, but \"p\['W'\]\" is a CuPy"):
        ad.grad(first)({"W": _FakeDeviceArray()})


def several_results(p):
    return {"h": np.tanh(p["W"]) * p["s"], "total": np.sum(p["W"] ** 2)}, p["s"] ** 2


def test_a_jacobian_of_a_function_returning_a_container():
    """As jax.jacobian: the result's structure, each result's Jacobian in the input's."""
    p = {"W": np.array([0.3, -0.4]), "s": 1.5}
    J = ad.jacobian(several_results)(p)
    assert type(J) is tuple and list(J[0]) == ["h", "total"]
    assert list(J[0]["h"]) == ["W", "s"] and J[0]["h"]["W"].shape == (2, 2)
    np.testing.assert_allclose(J[0]["h"]["W"], np.diag(1.5 / np.cosh(p["W"]) ** 2), rtol=1e-12)
    np.testing.assert_allclose(J[0]["h"]["s"], np.tanh(p["W"]), rtol=1e-12)
    np.testing.assert_allclose(J[0]["total"]["W"], 2 * p["W"], rtol=1e-12)
    assert np.shape(J[0]["total"]["s"]) == () and float(J[0]["total"]["s"]) == 0.0
    assert float(J[1]["s"]) == pytest.approx(3.0) and J[1]["W"].shape == (2,)
    ad.jacobian(several_results).specialize(p)   # compiles the vjp it would run


@pytest.mark.parametrize("kind", [Params, Frozen, Mutable])
def test_the_tape_takes_namedtuples_dataclasses_and_args(kind):
    p = kind(W1, B1, W2, B2)
    taped, compiled = dynamic_grad(attribute_loss)(p, X), ad.grad(attribute_loss)(p, X)
    assert type(taped) is kind
    for field in ("W1", "b1", "W2", "b2"):
        np.testing.assert_allclose(getattr(taped, field), getattr(compiled, field), rtol=1e-12)
    x, a, b = np.arange(3.0), np.ones(3), np.full(3, 2.0)
    t = dynamic_grad(varargs, wrt="args")(x, a, b, 3.0)
    c = ad.grad(varargs, wrt="args")(x, a, b, 3.0)
    assert type(t) is tuple and t[2] == c[2] == 6.0
    for u, v in zip(t[:2], c[:2]):
        np.testing.assert_allclose(u, v, rtol=1e-12)


@ad.custom_vjp
def softplus(x):
    return np.log1p(np.exp(x))


def _softplus_fwd(x):
    return softplus(x), x


def _softplus_bwd(x, g):
    return (g / (1 + np.exp(-x)),)


softplus.defvjp(_softplus_fwd, _softplus_bwd)


def custom_loss(p):
    return np.sum(softplus(p["W"]) * p["s"])


def test_a_custom_rule_meets_a_container():
    """grad takes it; hessian through a custom_vjp function (whose second derivatives come
    from the gradient's own source, one wrt array at a time) refuses the container, located
    at the def, with what to write instead."""
    p = {"W": np.array([0.3, -0.2]), "s": 2.0}
    g = ad.grad(custom_loss)(p)
    np.testing.assert_allclose(g["W"], 2.0 / (1 + np.exp(-p["W"])), rtol=1e-12)
    assert g["s"] == pytest.approx(np.sum(np.log1p(np.exp(p["W"]))), rel=1e-12)
    with pytest.raises(ad.CompileError, match="the Hessian of custom_loss with respect to the "
                       "container 'p', through a custom_vjp function") as err:
        ad.hessian(custom_loss)(p)
    assert err.value.lineno == custom_loss.__code__.co_firstlineno
    assert "parameters of their own" in err.value.hint


def flagged(p, x):
    h = x @ p.W
    return np.sum(np.tanh(h) if p.act == "tanh" and p.use else h)


@dataclasses.dataclass
class Layer:
    W: np.ndarray
    act: str = "tanh"
    use: bool = True
    note: object = None


def test_string_and_bool_fields_of_a_differentiated_container_are_static():
    """As a JAX static field: no gradient, the gradient holds the value as it is; another value
    compiles again. An int there stays a TypeError (it may be meant as a float)."""
    x = np.array([[0.5, -1.0]])
    layer = Layer(np.array([[0.2], [0.4]]))
    g = ad.grad(flagged)(layer, x)
    assert (g.act, g.use, g.note) == ("tanh", True, None)
    np.testing.assert_allclose(g.W, x.T / np.cosh(x @ layer.W) ** 2, rtol=1e-12)
    g2 = ad.grad(flagged)(Layer(layer.W, "linear"), x)
    np.testing.assert_allclose(g2.W, x.T, rtol=1e-12)
    taped = dynamic_grad(flagged)(layer, x)
    assert taped.act == "tanh"
    np.testing.assert_allclose(taped.W, g.W, rtol=1e-12)
    with pytest.raises(TypeError, match=r"'p\.W': it is an integer"):
        ad.grad(flagged)(Layer(3), x)
