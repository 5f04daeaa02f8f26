"""The passes' one walk over nested scopes (passes/rewrite.py's ``Walker``) and simplify's
registered rules (``passes.simplify.RULES``), on a loop inside a branch of an ``if``."""

import importlib
import inspect

import numpy as np

import adcompiler as ad
from adcompiler.frontend.lower import lower_function
from adcompiler.ir import Aval, walk
from adcompiler.ir.verify import verify
from adcompiler.passes.cse import eliminate_common_subexpressions
from adcompiler.passes.dce import eliminate_dead_code
from adcompiler.passes.rewrite import Rewrite, Walker
from adcompiler.passes.simplify import RULES, simplify

simplify_module = importlib.import_module("adcompiler.passes.simplify")  # (the package's
# `simplify` is the pass)


def loop_in_branch(x, n):
    if n > 0:
        for i in range(3):
            unused = x * 3.0  # noqa: F841  (read by nothing: DCE drops it)
            x = x * 1.0 - 0.0
    else:
        x = x + x
    return np.sum(x)


def _graph(fn=loop_in_branch):
    return lower_function(fn, {"x": Aval("array", "float64", (3,)), "n": Aval("float", "float64")})


def _branches(graph):
    (cond,) = [n for n in graph.nodes if n.prim == "cond"]
    return cond.regions


def _record(order):
    def visit(node, scope):
        order.append((node.prim, scope))
        return (node,)
    return visit


def _inside(scope, node, block):
    return scope + (node.prim,)


def test_walker_visits_blocks_before_their_owner_forwards():
    order, left = [], []
    walker = Walker(visit=_record(order), enter=_inside,
                    leave=lambda nodes, scope: left.append(scope) or nodes)
    walker.graph(_graph(), ())
    assert order == [("greater", ()),
                     ("multiply", ("cond", "loop")), ("multiply", ("cond", "loop")),
                     ("subtract", ("cond", "loop")), ("loop", ("cond",)),
                     ("add", ("cond",)), ("cond", ()), ("sum", ())]
    assert left == [("cond", "loop"), ("cond",), ("cond",), ()]  # body, then, else, graph


def test_walker_visits_owners_before_their_blocks_backwards():
    order = []
    Walker(visit=_record(order), enter=_inside, backwards=True).graph(_graph(), ())
    assert order == [("sum", ()), ("cond", ()), ("loop", ("cond",)),
                     ("subtract", ("cond", "loop")), ("multiply", ("cond", "loop")),
                     ("multiply", ("cond", "loop")), ("add", ("cond",)), ("greater", ())]


def test_walker_without_write_replaces_no_list():
    graph = _graph()
    before = [(n, len(n.regions)) for n in walk(graph.nodes)]
    Walker(visit=lambda node, scope: (), write=False).graph(graph)
    assert [(n, len(n.regions)) for n in walk(graph.nodes)] == before


def test_passes_reach_the_loop_inside_the_branch():
    """DCE drops the unread product in the loop's body; simplify's rules drop ``* 1.0 - 0.0``
    there and double ``x + x`` in the other branch."""
    graph = eliminate_dead_code(simplify(_graph()))
    then, other = _branches(graph)
    (loop,) = then.nodes
    body = loop.regions[0]
    assert body.nodes == [] and body.outputs == [body.params[1]]
    (double,) = other.nodes
    assert double.prim == "multiply" and double.inputs[0].value == 2.0
    verify(graph)


def test_simplify_runs_the_registered_rules(monkeypatch):
    """``RULES`` is what simplify runs: without them the body keeps its three nodes; with the
    identities alone only the unread ``x * 3.0`` stays there (left to DCE), and so does
    ``x + x``."""
    assert all(list(inspect.signature(rule).parameters) == ["node", "ctx"] for rule in RULES)
    monkeypatch.setattr(simplify_module, "RULES", ())
    then, other = _branches(simplify(_graph()))
    assert [n.prim for n in then.nodes[0].regions[0].nodes] == ["multiply", "multiply", "subtract"]
    identity = simplify_module.identities.identity
    monkeypatch.setattr(simplify_module, "RULES", (identity,))
    then, other = _branches(simplify(_graph()))
    (unread,) = then.nodes[0].regions[0].nodes
    assert unread.inputs[1].value == 3.0 and [n.prim for n in other.nodes] == ["add"]


def test_a_rule_giving_a_value_ends_the_visit(monkeypatch):
    """A rule's ``Rewrite(value=...)`` replaces the node's result; later rules do not see it."""
    seen = []

    def zero_products(node, ctx):
        return Rewrite(value=node.inputs[0]) if node.prim == "multiply" else None

    def spy(node, ctx):
        seen.append(node.prim)

    monkeypatch.setattr(simplify_module, "RULES", (zero_products, spy))
    graph = simplify(_graph())
    assert "multiply" not in seen and "subtract" in seen
    assert not any(n.prim == "multiply" for n in walk(graph.nodes))


def test_cse_scopes_blocks():
    """A block reuses what was computed before it, never what a sibling block computed."""
    def f(x, n):
        y = x * 2.0
        if n > 0:
            z = x * 2.0 + x * 3.0
        else:
            z = x * 3.0
        return np.sum(z + y)

    graph = eliminate_common_subexpressions(_graph(f))
    then, other = _branches(graph)
    assert [n.prim for n in then.nodes] == ["multiply", "add"]  # x * 2.0 is y's
    assert [n.prim for n in other.nodes] == ["multiply"]        # x * 3.0 of its own
    verify(graph)


def test_gradient_through_the_simplified_branch():
    g = ad.grad(loop_in_branch, wrt="x")
    assert np.allclose(g(np.arange(3.0), 1.0), np.ones(3))
    assert np.allclose(g(np.arange(3.0), -1.0), 2.0 * np.ones(3))
