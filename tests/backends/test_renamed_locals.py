"""Renaming a function's local variables never changes its derivatives, whichever names they get:
in particular names the generated code makes up for its own values (a loop's residual stack
``<v>s``, a stack of stacks ``<v>ss``, ``saved``, ``ts``, the temporaries ``t1``, a constant's
``const``, an adjoint ``d<v>``, a tangent ``<v>_dot``, a buffer ``_buf0``...).

The loop and branch programs of tests/programs/test_control_flow.py, tests/programs/test_nested_control_flow.py and
tests/frontend/test_loop_targets.py, and random programs of tests/control_strategies.py, are rewritten
with locals renamed (Hypothesis draws the names, each one a name the compiler could generate for
another value of the function); the renamed program's gradient must equal the original's and
finite differences, and its tangents the original's.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import keyword
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import adcompiler as ad
from tests.programs import test_control_flow
from tests.frontend import test_loop_targets
from tests.programs import test_nested_control_flow
from tests.control_strategies import control_programs
from tests.helpers import assert_matches_numerical, examples, import_source
from tests.programs.test_random_control_flow import time_limit
from tests.programs.test_random_programs import check_gradients

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                      HealthCheck.too_slow])
# names the compiler makes up whatever the function's names are
GENERATED = ["saved", "saved_1", "saveds", "ts", "t", "t1", "t2", "t3", "dt1", "const", "k", "ks",
             "k_1", "i_1", "steps", "g", "cotangent", "tangents", "_buf0", "t_taken", "window"]
TAKEN = set(dir(builtins)) | {"np", "math"}

X32 = np.arange(1.0, 7.0).reshape(3, 2)
CASES = ([(test_control_flow, f, args, wrt) for f, args, wrt in test_control_flow.CASES]
         + [(test_nested_control_flow, f, args, wrt)
            for f, args, wrt in test_nested_control_flow.CASES]
         + [(test_loop_targets, f, (X32,), (0,)) for f in test_loop_targets.CASES])


def _locals(fdef) -> list:
    """The names ``fdef`` binds, in order of first binding, but its parameters."""
    params = {a.arg for a in fdef.args.args}
    out = []
    for node in ast.walk(fdef):
        if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
                and node.id not in params and node.id not in out):
            out.append(node.id)
    return out


def _candidates(stems) -> list:
    """Names generated for values named ``stems``, and names generated for any function."""
    made = [name for s in stems
            for name in (s + "s", s + "ss", "d" + s, s + "_dot", s + "_1", s + "_taken")]
    return made + GENERATED


def draw_renaming(data, fdef) -> dict:
    """A new name for each local of ``fdef`` (or its own), drawn among the names the compiler
    could generate for the function's other values: never a parameter's, a global's or another
    local's."""
    params = [a.arg for a in fdef.args.args]
    names = _locals(fdef)
    loaded = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name)}
    final: dict = {}
    for v in names:
        stems = params + [final.get(u, u) for u in names if u != v]
        used = TAKEN | loaded | set(params) | set(final.values()) | (set(names) - set(final))
        pool = sorted({n for n in _candidates(stems) if n.isidentifier()
                       and not keyword.iskeyword(n) and n not in used})
        stacks = [n for n in pool if any(n in (s + "s", s + "ss") for s in stems)]
        choice = st.sampled_from(pool + [v])  # a stack's name half the time: the usual clash
        if stacks:
            choice = st.one_of(st.sampled_from(stacks), choice)
        final[v] = data.draw(choice, label=f"rename {v}")
    return final


class _Rename(ast.NodeTransformer):
    def __init__(self, mapping):
        self.mapping = mapping

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(self.mapping.get(node.id, node.id), node.ctx), node)


def renamed_source(fdef, mapping) -> str:
    return ast.unparse(ast.fix_missing_locations(_Rename(mapping).visit(fdef)))


def _definition(source: str, name: str):
    return next(n for n in ast.parse(source).body
                if isinstance(n, ast.FunctionDef) and n.name == name)


def _copies(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _tangents(args, wrt):
    rng = np.random.default_rng(11)
    return tuple(float(rng.standard_normal()) if isinstance(args[i], float)
                 else rng.standard_normal(np.shape(args[i])) for i in wrt)


@settings(max_examples=examples(60, 20), **SETTINGS)
@given(case=st.sampled_from(CASES), data=st.data())
def test_renamed_loops_and_branches_keep_their_derivatives(case, data, tmp_path):
    module, f, args, wrt = case
    fdef = _definition(textwrap.dedent(inspect.getsource(f)), f.__name__)
    mapping = draw_renaming(data, fdef)
    body = renamed_source(fdef, mapping)
    note(body)
    header = f"import numpy as np\nfrom {module.__name__} import *\n\n\n"
    g = getattr(import_source(header + body + "\n", tmp_path, "renamed"), f.__name__)
    with time_limit("the renamed function's derivatives"):
        grads = ad.grad(g, wrt=wrt)(*_copies(args))
        expected = ad.grad(f, wrt=wrt)(*_copies(args))
        tangents = _tangents(args, wrt)
        tangent = ad.jvp(g, wrt=wrt)(*_copies(args), tangents=tangents)[1]
        expected_tangent = ad.jvp(f, wrt=wrt)(*_copies(args), tangents=tangents)[1]
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    assert_matches_numerical(g, args, wrt, grads, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(tangent, expected_tangent, rtol=1e-12, atol=1e-14)


@settings(max_examples=examples(60, 20), **SETTINGS)
@given(program=control_programs(), data=st.data())
def test_renamed_random_programs_keep_their_gradients(program, data, tmp_path):
    head, _, _ = program.source.partition("def f(")
    fdef = _definition(program.source, "f")
    body = renamed_source(fdef, draw_renaming(data, fdef))
    note(body)
    original = import_source(program.source, tmp_path, "original").f
    renamed = import_source(head + body + "\n", tmp_path, "renamed").f
    args, wrt = program.args, (0, 1, 2)
    tangents = _tangents(args, wrt)
    with time_limit("the derivatives"):
        expected = ad.grad(original, wrt=wrt)(*_copies(args))
        check_gradients(renamed, _copies(args))
        grads = ad.grad(renamed, wrt=wrt)(*_copies(args))
        tangent = ad.jvp(renamed, wrt=wrt)(*_copies(args), tangents=tangents)[1]
        expected_tangent = ad.jvp(original, wrt=wrt)(*_copies(args), tangents=tangents)[1]
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tangent, expected_tangent, rtol=1e-12, atol=1e-14)


def test_the_renaming_draws_generated_names():
    """The strategy does what the tests rely on: a stack's name for a loop's accumulator."""
    fdef = _definition(textwrap.dedent(inspect.getsource(test_control_flow.accumulate)),
                       "accumulate")
    seen = set()

    @settings(max_examples=60, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def collect(data):
        seen.add(draw_renaming(data, fdef)["s"])

    collect()
    assert {"xs", "dx", "x_dot", "saved"} & seen and not {"x", "np", "range"} & seen


@pytest.mark.parametrize("f", [test_control_flow.accumulate, test_nested_control_flow.while_in_for])
def test_renaming_only_touches_locals(f):
    fdef = _definition(textwrap.dedent(inspect.getsource(f)), f.__name__)
    mapping = {v: v + "_renamed" for v in _locals(fdef)}
    source = renamed_source(fdef, mapping)
    assert "np." in source and f"def {f.__name__}(x)" in source
    assert all(v + "_renamed" in source for v in mapping)
