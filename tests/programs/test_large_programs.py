"""Random programs at large sizes: the optimised code against the unoptimised code and the tape.

The random-program tests draw tiny shapes, where the compiler's fast paths are off: fusion of
elementwise chains (4,096 elements and more), ``out=`` buffers from a pool (32 KiB), numexpr and
threaded ufuncs (2^18 elements). Here every family of random programs is drawn at those sizes
(:mod:`tests.program_sizes`: (64, 64), (1, 4096), (4, 4096) rows to loop over... with their
broadcasting partners, and (512, 512), (520, 510), (2, 2^18)..., numexpr on or off), and each
transform's optimised result, compiled in ``poisoned()`` mode (every released or pooled buffer
filled with NaN), is compared with the *unoptimised* compiled result (no fusion, no buffers, no
numexpr, no in-place updates) and with the dynamic tape. Finite differences are no use at these
sizes; the three are exact derivatives at the same point and must agree to rounding.

Families: ``straight`` (tests/strategies.py), ``branches``, ``for``, ``while``, ``mutation``
(subscript updates of fresh buffers), ``helpers`` (calls of helper functions with loops and
in-place updates) and ``mixed`` (tests/control_strategies.py). Transforms: ``grad``,
``value_and_grad``, ``vjp`` (the program's result times ``np.tanh`` of a large argument, with an
array cotangent), ``jvp``, ``hvp`` (``hessian(f).hvp``; the tape's is ``dynamic_grad`` of
``dynamic_grad``) and ``module`` (an ``adcompiler compile`` module, compiled for the example's
shapes and called at them).

Tolerance: ``rtol = 1e-9`` with ``atol = 1e-9 * (1 + max |reference|)`` per result (for a
jvp's tangent, a sum over all entries, the scale is ``sum |g * t|``). The optimised code
computes each chain with the same operations in the same order, but it may regroup sums: a
reduction over a buffer rather than a view, an accumulated gradient added in another order,
numexpr's own loops. Those change a sum by a few ulps of the sum of its terms' magnitudes
(pairwise summation of 2^18 terms: ~1e-14 relative), so an entry that is the near-cancellation
of large terms is held to the scale of its array, not to its own size. 1e-9 leaves five orders
of magnitude above that, and a wrong buffer gives errors of order one (or NaN, poisoned).

Cost: the default run is derandomized and draws 3 programs per family and tier under grad, 2
per family and tier under the other transforms (103 programs, about 30 s on two cores; with
``ADCOMPILER_LONG_TESTS=1`` 5 and 3, 165 programs). The long campaign is opt-in:

    python -m tests.campaign --programs 20     # per family, transform and tier: 2,520 programs
    ADCOMPILER_CAMPAIGN=20 python -m pytest -s tests/programs/test_large_programs.py \
        --hypothesis-show-statistics            # every cell, random: the seed is printed

The campaign script never stops at a disagreement: it counts, per family and transform, the
programs run at large sizes, how many reached ``out=`` buffers and numexpr, how many disagreed
(and how many the compiler refused), and writes each disagreement's program, with a referee
(central differences along a direction), to a directory. Under pytest, ``ADCOMPILER_CAMPAIGN=N``
runs every family, tier and transform with N programs each, not derandomized (the seed is
printed, and ``ADCOMPILER_CAMPAIGN_SEED`` draws the same programs again), and stops at the
first disagreement of a cell to shrink it.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

import adcompiler
from adcompiler import tape
from adcompiler.backends import numexpr_chains
from adcompiler.backends.check_modes import poisoned, unoptimised

from tests import program_sizes
from tests.control_strategies import control_programs, tape_program
from tests.helpers import examples, import_source
from tests.strategies import Program, _copy, load, programs

RTOL = 1e-9
WRT = (0, 1, 2)
BRANCHES = ["if", "ifexp", "early_return"]
FAMILIES = {
    "straight": lambda s: programs(min_statements=3, sizes=s),
    "branches": lambda s: control_programs(sizes=s, controls=BRANCHES),
    "for": lambda s: control_programs(sizes=s, controls=["for_range", "for_array", "jump"]),
    "while": lambda s: control_programs(sizes=s, controls=["while", "jump"]),
    "mutation": lambda s: control_programs(sizes=s, controls=["buffer"]),
    "helpers": lambda s: programs(min_statements=3, sizes=s, calls=4),
    "mixed": lambda s: control_programs(sizes=s, calls=True),
}
CONTROL_FAMILIES = {"branches", "for", "while", "mutation", "mixed"}
TRANSFORMS = ["grad", "value_and_grad", "vjp", "jvp", "hvp", "module"]


TIERS = ["buffers", "numexpr", "numexpr-off"]   # numexpr's tier with numexpr on, and off


def large_programs(family, tier):
    """``(program, sizes)``: a program of ``family`` at large sizes of ``tier``
    ("buffers", "numexpr" or "numexpr-off": the sizes are numexpr's)."""
    sizes = program_sizes.sizes(tier.split("-")[0], control=family in CONTROL_FAMILIES)
    return sizes.flatmap(lambda s: FAMILIES[family](s).map(lambda p: (p, s)))


# ---- comparing ---------------------------------------------------------------------------------
class Disagreement(AssertionError):
    """The optimised result differs from the unoptimised one (or from the tape's)."""


def assert_close(got, want, what, scale=None, types=True):
    """``got`` is ``want`` to rounding: the same types (``types=False``: either may be a 0-d
    array or a NumPy scalar) and shapes, ``rtol = RTOL`` and an ``atol`` of ``RTOL`` times
    ``scale`` (default: 1 + the largest |want|)."""
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            raise Disagreement(f"{what}: {type(got).__name__} for {type(want).__name__} of "
                               f"{len(want)}")
        for i, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, f"{what}[{i}]", scale, types)
        return
    zero_d = (np.ndarray, np.generic)
    if type(got) is not type(want) and (types or not (isinstance(got, zero_d) and
                                                      isinstance(want, zero_d))):
        raise Disagreement(f"{what}: a {type(got).__name__} for a {type(want).__name__}")
    g, w = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if g.shape != w.shape:
        raise Disagreement(f"{what}: shape {g.shape} for {w.shape}")
    if not np.all(np.isfinite(w)):
        raise Disagreement(f"{what}: the reference is not finite")   # the strategy's bug
    atol = RTOL * (1.0 + (np.max(np.abs(w), initial=0.0) if scale is None else scale))
    if not (np.all(np.isfinite(g)) and np.allclose(g, w, rtol=RTOL, atol=atol)):
        bad = ~np.isclose(g, w, rtol=RTOL, atol=atol) | ~np.isfinite(g)
        where = np.argwhere(bad)[:3].tolist()
        raise Disagreement(
            f"{what}: {int(bad.sum())} of {w.size} entries differ (first at {where}: "
            f"{g[bad][:3].tolist()} for {w[bad][:3].tolist()}; max |want| "
            f"{np.max(np.abs(w), initial=0.0):.3g}, atol {atol:.3g})")


def fresh(args):
    return tuple(_copy(a) for a in args)


def optimised(make, call, numexpr):
    """``call(make())`` compiled with every fast path (numexpr as given), buffers poisoned;
    ``(result, transform)`` (its ``.source`` is the generated code)."""
    with poisoned(), contextlib.nullcontext() if numexpr else numexpr_chains.disabled():
        transform = make()
        return call(transform), transform


def reference(make, call):
    with unoptimised():
        return call(make())


def reached(source) -> dict:
    """Which fast paths the generated code takes."""
    return {"buffers": "out=_buf" in source, "numexpr": "ne.evaluate" in source}


def tangents_for(args, rng):
    return tuple(float(rng.standard_normal()) if type(a) is float
                 else rng.standard_normal(np.shape(a)) for a in args)


def largest(args) -> int:
    """The position of the largest argument."""
    return max(range(len(args)), key=lambda i: np.size(args[i]))


def vjp_program(program: Program) -> Program:
    """The program with an array result: each ``return e`` of ``f`` is ``return (e) *
    np.tanh(p)``, ``p`` its largest argument."""
    p = "xyz"[largest(program.args)]
    head, body = program.source.split("\ndef f(x, y, z):\n", 1)
    body = re.sub(r"^(\s+)return (.+)$", rf"\1return (\2) * np.tanh({p})", body, flags=re.M)
    return Program(head + "\ndef f(x, y, z):\n" + body, program.args)


# ---- the transforms ------------------------------------------------------------------------------
def check_grad(f, f_tape, args, numexpr, rng, directory, program, found):
    want = reference(lambda: adcompiler.grad(f, wrt=WRT), lambda t: t(*fresh(args)))
    got, t = optimised(lambda: adcompiler.grad(f, wrt=WRT), lambda t: t(*fresh(args)), numexpr)
    dynamic = tape.dynamic_grad(f_tape, wrt=WRT)(*fresh(args))
    found.update(kind="gradient", of=f, results=dict(unoptimised=want, optimised=got,
                                                     tape=dynamic))
    assert_close(got, want, "grad: optimised against unoptimised")
    assert_close(dynamic, want, "grad: the tape against unoptimised")
    return t.source


def check_value_and_grad(f, f_tape, args, numexpr, rng, directory, program, found):
    make = lambda: adcompiler.value_and_grad(f, wrt=WRT)   # noqa: E731
    want = reference(make, lambda t: t(*fresh(args)))
    got, t = optimised(make, lambda t: t(*fresh(args)), numexpr)
    value, grads = tape.dynamic_value_and_grad(f_tape, wrt=WRT)(*fresh(args))
    found.update(kind="gradient", of=f, results=dict(unoptimised=want[1], optimised=got[1],
                                                     tape=grads))
    assert_close(got, want, "value_and_grad: optimised against unoptimised")
    assert_close(float(got[0]), float(f(*fresh(args))), "value_and_grad: value against f")
    assert_close(float(value), float(want[0]), "value_and_grad: the tape's value")
    assert_close(grads, want[1], "value_and_grad: the tape against unoptimised")
    return t.source


def check_vjp(f, f_tape, args, numexpr, rng, directory, program, found):
    vjp = vjp_program(program)
    _, g, _ = load(vjp, directory)
    _, g_tape, _ = load(tape_program(vjp), directory)
    c = rng.standard_normal(np.shape(args[largest(args)]))
    make = lambda: adcompiler.vjp(g, wrt=WRT)   # noqa: E731
    want = reference(make, lambda t: t(*fresh(args), cotangent=c))
    got, t = optimised(make, lambda t: t(*fresh(args), cotangent=c), numexpr)
    dynamic = tape.dynamic_grad(lambda x, y, z: (g_tape(x, y, z) * c).sum(), wrt=WRT)(
        *fresh(args))
    found.update(kind="gradient", of=lambda *a: float(np.sum(g(*a) * c)),
                 results=dict(unoptimised=want, optimised=got, tape=dynamic))
    assert_close(got, want, "vjp: optimised against unoptimised")
    assert_close(dynamic, want, "vjp: the tape against unoptimised")
    return t.source


def check_jvp(f, f_tape, args, numexpr, rng, directory, program, found):
    u = tangents_for(args, rng)
    make = lambda: adcompiler.jvp(f, wrt=WRT)   # noqa: E731
    want = reference(make, lambda t: t(*fresh(args), tangents=u))
    got, t = optimised(make, lambda t: t(*fresh(args), tangents=u), numexpr)
    grads = tape.dynamic_grad(f_tape, wrt=WRT)(*fresh(args))
    terms = [np.multiply(gi, ui) for gi, ui in zip(grads, u)]
    scale = float(sum(np.sum(np.abs(p)) for p in terms))
    found.update(kind="tangent", of=f, direction=u, results=dict(
        unoptimised=want[1], optimised=got[1], tape=float(sum(np.sum(p) for p in terms))))
    assert_close(float(got[0]), float(want[0]), "jvp: the value, optimised against unoptimised")
    assert_close(float(got[1]), float(want[1]), "jvp: the tangent, optimised against "
                 "unoptimised", scale)
    assert_close(float(sum(np.sum(p) for p in terms)), float(want[1]),
                 "jvp: the tape's gradient . tangents against unoptimised", scale)
    return t.source


def check_hvp(f, f_tape, args, numexpr, rng, directory, program, found):
    v = tangents_for(args, rng)
    make = lambda: adcompiler.hessian(f, wrt=WRT).hvp   # noqa: E731
    want = reference(make, lambda t: t(*fresh(args), tangents=v))
    got, t = optimised(make, lambda t: t(*fresh(args), tangents=v), numexpr)
    inner = tape.dynamic_grad(f_tape, wrt=WRT)

    def along_v(x, y, z):
        return sum((gi * vi).sum() for gi, vi in zip(inner(x, y, z), v))
    dynamic = tape.dynamic_grad(along_v, wrt=WRT)(*fresh(args))
    found.update(kind="hvp", of=adcompiler.grad(f, wrt=WRT), direction=v, results=dict(
        unoptimised=want[1], optimised=got[1], tape=dynamic))
    assert_close(got, want, "hvp: optimised against unoptimised")
    assert_close(dynamic, want[1], "hvp: the tape's (grad of grad . v) against unoptimised")
    return t.source


def module_source(program: Program, data: Path) -> str:
    """The program as a module for ``adcompiler compile``: ``f`` marked ``@adcompiler.grad``,
    ``example_f()`` loading the example arguments from ``data``."""
    head, body = program.source.split("\ndef f(x, y, z):\n", 1)
    kinds = ["float" if type(a) is float else "array" for a in program.args]
    example = (f"\n\ndef example_f():\n    data = np.load({str(data)!r})\n"
               f"    args = [data[k] for k in ('x', 'y', 'z')]\n"
               f"    return tuple(float(a) if k == 'float' else a for a, k in "
               f"zip(args, {kinds!r}))\n")
    return (head.replace("import numpy as np\n", "import numpy as np\n\nimport adcompiler\n", 1)
            + "\n@adcompiler.grad(wrt=(0, 1, 2))\ndef f(x, y, z):\n" + body + example)


def check_module(f, f_tape, args, numexpr, rng, directory, program, found):
    want = reference(lambda: adcompiler.grad(f, wrt=WRT), lambda t: t(*fresh(args)))
    name = f"large_{abs(hash(program.source)) % 10 ** 12}"
    data = Path(directory) / f"{name}.npz"
    np.savez(data, **{k: np.asarray(a) for k, a in zip("xyz", args)})
    path = Path(directory) / f"{name}.py"
    path.write_text(module_source(program, data))
    out = Path(directory) / f"{name}_grad.py"
    from adcompiler import cli
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = cli.main(["compile", str(path), "-o", str(out), "--force"])
    if status != 0:
        raise adcompiler.CompileError(f"adcompiler compile exited {status}:\n{err.getvalue()}")
    module = import_source(out.read_text(), directory, "largemod")
    got = module.grad_f(*fresh(args))
    found.update(kind="gradient", of=f, results=dict(unoptimised=want, module=got))
    assert_close(got, want, "adcompiler compile module: its grad_f against unoptimised")
    return out.read_text()


CHECKS = {name: globals()[f"check_{name}"] for name in TRANSFORMS}


def check(family, transform, program, numexpr, directory, seed=0, found=None):
    """Run one program through one transform; raises :class:`Disagreement` where the optimised
    result (or the tape's) differs from the unoptimised one. Returns :func:`reached` of the
    optimised code. ``found`` (a dict) receives what was compared: ``kind`` ("gradient",
    "tangent" or "hvp"), ``of`` (the function differentiated), ``args``, ``direction`` (for a
    tangent or an hvp) and ``results`` (by who computed them), for
    :func:`tests.campaign.referee`."""
    found = {} if found is None else found
    source, f, args = load(program, directory)
    _, f_tape, _ = load(tape_program(program), directory)
    rng = np.random.default_rng(seed)
    found["args"] = args
    with np.errstate(all="ignore"):   # as NumPy's default: the strategy keeps values finite
        generated = CHECKS[transform](f, f_tape, args, numexpr, rng, directory, program, found)
    np.testing.assert_equal(args, program.args)   # the inputs are left alone
    return reached(generated)


# ---- the default run: derandomized, a few programs per family, tier and transform -----------
CAMPAIGN = int(os.environ.get("ADCOMPILER_CAMPAIGN", "0") or 0)
SEED = int(os.environ.get("ADCOMPILER_CAMPAIGN_SEED") or random.randrange(2 ** 32))
if CAMPAIGN:
    print(f"tests/programs/test_large_programs.py: ADCOMPILER_CAMPAIGN={CAMPAIGN} programs per family, "
          f"tier and transform, seed {SEED} (ADCOMPILER_CAMPAIGN_SEED={SEED} draws them again)",
          file=sys.stderr)
SETTINGS = dict(database=None, deadline=None, derandomize=not CAMPAIGN,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.filter_too_much, HealthCheck.data_too_large])

# What the default run covers: every family under grad, at every tier; each other transform
# over two families (loops among them) at the buffer tier and numexpr's (on).
DEFAULT_RUN = {
    "grad": (list(FAMILIES), TIERS),
    "value_and_grad": (["for", "mutation"], TIERS[:2]),
    "vjp": (["while", "straight"], TIERS[:2]),
    "jvp": (["for", "helpers"], TIERS[:2]),
    "hvp": (["while", "branches"], TIERS[:2]),
    "module": (["for", "straight"], TIERS[:2]),
}
GRAD_EXAMPLES = CAMPAIGN or examples(5, 3)    # per family and tier (ADCOMPILER_LONG_TESTS=1: 5)
OTHER_EXAMPLES = CAMPAIGN or examples(3, 2)   # per family, tier and transform (long: 3)


def _cases(grad):
    return [pytest.param(family, tier, transform, id=f"{transform}-{family}-{tier}")
            for transform in TRANSFORMS if (transform == "grad") == grad
            for family in (FAMILIES if CAMPAIGN else DEFAULT_RUN[transform][0])
            for tier in (TIERS if CAMPAIGN else DEFAULT_RUN[transform][1])]


def _campaign_seed(test):
    return hypothesis_seed(SEED)(test) if CAMPAIGN else test   # derandomized by default


def _check_drawn(family, tier, transform, data, seed, directory):
    program, sizes = data.draw(large_programs(family, tier), label="program, sizes")
    note(program.source[program.source.index("def f"):])
    note(f"shapes: {[np.shape(a) for a in program.args]}")
    if CAMPAIGN:
        note(f"ADCOMPILER_CAMPAIGN_SEED={SEED} draws this program again")
    paths = check(family, transform, program, tier != "numexpr-off", directory, seed)
    event(", ".join(k for k, v in paths.items() if v) or "no fast path")


@pytest.mark.parametrize("family, tier, transform", _cases(grad=True))
@settings(max_examples=GRAD_EXAMPLES, **SETTINGS)
@_campaign_seed
@given(data=st.data(), seed=st.integers(0, 2 ** 32 - 1))
def test_every_family_under_grad(family, tier, transform, data, seed, tmp_path):
    _check_drawn(family, tier, transform, data, seed, tmp_path)


@pytest.mark.parametrize("family, tier, transform", _cases(grad=False))
@settings(max_examples=OTHER_EXAMPLES, **SETTINGS)
@_campaign_seed
@given(data=st.data(), seed=st.integers(0, 2 ** 32 - 1))
def test_every_transform_over_two_families(family, tier, transform, data, seed, tmp_path):
    _check_drawn(family, tier, transform, data, seed, tmp_path)


# ---- the fast paths are reached ------------------------------------------------------------------
def test_the_tiers_are_the_compilers_thresholds():
    """tests/program_sizes.py's tiers start where the compiler's fast paths do: fusion and the
    ``out=`` buffer pool (4,096 float64), numexpr and threaded ufuncs (2^18 elements)."""
    from adcompiler.backends.numexpr_chains import MIN_ELEMENTS
    from adcompiler.backends.planner import MIN_BYTES
    from adcompiler.passes.fuse import MIN_SIZE
    assert program_sizes.THRESHOLDS == {"buffers": max(MIN_SIZE, MIN_BYTES // 8),
                                        "numexpr": MIN_ELEMENTS}


def test_large_programs_reach_the_fast_paths(tmp_path):
    """The large sizes are not for nothing: across a fixed draw of straight-line and control
    programs at each tier, most gradients compile with ``out=`` buffers, and at 2^18 elements
    (numexpr on) many with ``ne.evaluate``."""
    seen = {tier: [] for tier in program_sizes.BASES}

    for tier in program_sizes.BASES:
        for family in ("straight", "mixed"):
            @settings(max_examples=8, **{**SETTINGS, "derandomize": True})
            @given(drawn=large_programs(family, tier))
            def collect(drawn):
                program, _ = drawn
                with poisoned():
                    compiled = adcompiler.grad(load(program, tmp_path)[1], wrt=WRT).specialize(
                        *program.args)
                seen[tier].append(reached(compiled.source))
            collect()
    for tier, found in seen.items():
        share = {k: sum(r[k] for r in found) / len(found) for k in ("buffers", "numexpr")}
        assert share["buffers"] >= 0.5, (tier, share)
        if tier == "numexpr":
            assert share["numexpr"] >= 0.3, (tier, share)


# ---- what the large programs found, at their smallest --------------------------------------------
# (H v after two ifs, and H v of a 0-d array: tests/transforms/test_hvp_residuals.py)
def hvp_of_a_branch(x, y):
    if np.sum(x) > 0.0:
        v = np.tanh(x * y)
    else:
        v = x
    return np.sum(v)


def test_hvp_of_a_branch_value_of_two_arguments():
    """One ``if`` computing ``np.tanh(x * y)``: before bd76a71 neither ``v_dot`` nor the
    tangent of its residual ``1 - v * v`` was computed, and H v was wrong for x and y alike (in
    the large hvp checks, 5 of 630 programs, branches and mixed)."""
    x, y = np.array([0.5, -1.0, 1.2]), np.array([0.7, 0.2, -0.4])
    vx, vy = np.array([1.0, 0.5, -2.0]), np.array([0.3, -0.1, 0.2])
    _, hv = adcompiler.hessian(hvp_of_a_branch, wrt=(0, 1)).hvp(x, y, tangents=(vx, vy))
    eps = 1e-6
    g = adcompiler.grad(hvp_of_a_branch, wrt=(0, 1))
    up, down = g(x + eps * vx, y + eps * vy), g(x - eps * vx, y - eps * vy)
    for h, a, b in zip(hv, up, down):
        np.testing.assert_allclose(h, (a - b) / (2 * eps), rtol=1e-6, atol=1e-8)


def transposed_after_an_if(x):
    s = np.sum(np.tanh(x))
    if np.sum(x) < -20.0:
        s = s * 3.0
    s = s.T
    return s


def transposed_after_an_early_return(x):
    s = np.sum(np.tanh(x))
    if np.sum(x) < -20.0:
        return s
    s = s.T
    return s


@pytest.mark.parametrize("f", [transposed_after_an_if, transposed_after_an_early_return])
def test_the_transpose_of_a_sum_after_an_if(f):
    """The adjoint of a 0-d sum's ``.T`` transposes the seed: it was written ``(1.0).T`` (an
    AttributeError; the large programs met it at 512 x 512), then folded into the literal, which
    after an if or an early return raised an IRError (a 0-d array made a float), until ac976b3."""
    x = np.array([0.5, -1.0, 1.2])
    np.testing.assert_allclose(adcompiler.grad(f)(x), 1 - np.tanh(x) ** 2, rtol=1e-12)


def rebound_in_an_if(x, y):
    v = np.sin(y) * y
    if np.max(x) <= 3.98:
        v = np.tanh(v)
    return np.sum(v)


def scalar_of_a_buffer_in_a_while(x, y):
    v = np.multiply(y, x)
    n = 0
    while n < 4:
        n = n + 1
        if np.sum(x) > 2.43:
            continue
        v = v - 0.1 * np.cos(v[n - 1])
    return np.sum(v)


@pytest.mark.parametrize("f, args", [
    (rebound_in_an_if, (0.5, (64, 64))),
    (scalar_of_a_buffer_in_a_while, (0.3, (4096,))),
], ids=["rebound_in_an_if", "scalar_of_a_buffer_in_a_while"])
def test_poisoned_plans_that_are_right_pass_the_plan_check(f, args, monkeypatch):
    """Two right plans verify_plan refused in poisoned code until 120e8df (the values agree
    with the unoptimised code): ``_poison(_buf1)`` while ``v`` may hold it, read next at ``dv =
    1 - v * v``, though only under the same test ``if t2:`` whose branch rebound ``v``; and
    ``v[n - 1]``, a NumPy scalar of a 1-D buffer, taken as holding the buffer in a list."""
    monkeypatch.setenv("ADCOMPILER_VERIFY_PLANS", "1")
    x, shape = args
    y = np.random.default_rng(0).uniform(-1.5, 1.5, shape)
    want = reference(lambda: adcompiler.grad(f, wrt=(0, 1)), lambda t: t(x, y.copy()))
    got, _ = optimised(lambda: adcompiler.grad(f, wrt=(0, 1)), lambda t: t(x, y.copy()), True)
    assert_close(got, want, "optimised against unoptimised")
