"""A number that is a polynomial of the sizes gives a module for every size (issue #30).

``n * (n - 1) / 2`` (pairs), ``n * n``, ``n * d``, ``1.0 / (n * d)`` (a mean over a 2-D array
by hand), ``/ (n * d - 1)``, ``/ ((n - 1) * (d - 1))``, ``/ (n + d)``: the compiler folds the
sizes into one number, which :mod:`adcompiler.aot.polynomials` fits exactly as a polynomial of
degree two of the sizes (or one over it), with further samples of the sizes it changes with
taken only where the first samples fit no formula; a polynomial times a float that no small
fraction is (``0.5 * math.log(2 * math.pi) * n * (n - 1)``) too. Each function is compiled at
700 x 400 (600 x 16 for the pairs' distances, a 600 x 600 product: above the planner's,
fusion's and numexpr's thresholds, though ``adcompiler compile`` leaves numexpr out) and called
without adcompiler at four or more other sizes, small and large, against the unoptimised
gradient. A number of degree three, or exponential in a size, still keeps the body per shape,
saying which (tests/aot/test_sizes_as_numbers.py).
"""

import math

import numpy as np
import pytest

from adcompiler.aot import antiunify, polymorphic, polynomials
from adcompiler.backends import numexpr_chains, planner
from adcompiler.cli.main import main
from adcompiler.passes import fuse
from tests.aot.test_every_size import compare_calls, reference
from tests.cli.test_cli import adcompiler, import_path, write

RNG = np.random.default_rng(3031)

FORMS = {   # name: (the size expression, the gradient's factor the module reads)
    "pairs": ("n * (n - 1) / 2", "4 / (d1 * (d1 - 1))"),
    "square": ("n * n * 1e-6", "2e-06 * d1 ** 2"),
    "product": ("n * d * 1e-6", ("2e-06 * (d1 * d2)", "2e-06 * d1 * d2")),   # as samples tell
    "mean": ("1.0 / (n * d)", "2 / (d1 * d2)"),
    "unbiased": ("n * d - 1", "2 / (d1 * d2 - 1)"),
    "table": ("(n - 1) * (d - 1)", "2 / ((d1 - 1) * (d2 - 1))"),
    "plus": ("n + d", "2 / (d1 + d2)"),
    "logpairs": ("0.5 * math.log(2 * math.pi) * n * (n - 1)",   # a float no fraction is
                 "1.8378770664093453 * d1 * (d1 - 1)"),
}

TEMPLATE = '''
@ad.grad
def {name}(x):
    n, d = x.shape
    m = np.sum(x) / (n * d)
    return np.sum(np.tanh(x - m) ** 2) {op} ({expr})


def example_{name}():
    return (np.random.default_rng({seed}).standard_normal((700, 400)),)
'''


def source() -> str:
    parts = ["import math\n\nimport numpy as np\n\nimport adcompiler as ad\n"]
    for seed, (name, (expr, _)) in enumerate(FORMS.items()):
        op = "*" if name in ("square", "product", "mean", "logpairs") else "/"
        parts.append(TEMPLATE.format(name=name, op=op, expr=expr, seed=seed))
    return "\n".join(parts)


def test_the_examples_lie_above_the_thresholds():
    for elements in (700 * 400, 600 * 600):
        assert elements >= max(fuse.MIN_SIZE, planner.MIN_BYTES // 8,
                               numexpr_chains.MIN_ELEMENTS)


def test_polynomials_of_sizes_give_a_module_for_every_size(tmp_path):
    path = write(tmp_path, "poly.py", source())
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    for name in FORMS:
        assert f"grad_{name} (1 signature, any sizes)" in done.stderr, done.stderr
    assert "per shape" not in done.stderr and "stays" not in done.stderr, done.stderr
    text = (tmp_path / "poly_grad.py").read_text()
    for name, (_, formula) in FORMS.items():
        body = text[text.index(f"def _grad_{name}_1("):]
        body = body[:body.index("\n\n\n")]
        assert any(f"dx = ({f}) * " in body for f in (formula if isinstance(formula, tuple)
                                                        else (formula,))), (name, formula)
    user = import_path(path)
    cases = []
    for n, d in ((3, 2), (40, 5), (2000, 150), (9, 1000), (701, 64)):   # example 700 x 400
        x = RNG.standard_normal((n, d))
        cases += [(f"grad_{name}", (x,), reference(getattr(user, name), (x,))) for name in FORMS]
    compare_calls(tmp_path, cases, module="poly_grad")


REALISTIC = '''
import math

import numpy as np

import adcompiler as ad


@ad.value_and_grad(wrt=("mu", "log_s"))
def gauss(mu, log_s, x):
    n, d = x.shape
    r = (x - mu) * np.exp(-log_s)
    return -0.5 * np.sum(r * r) - n * np.sum(log_s) - 0.5 * n * d * math.log(2 * math.pi)


def example_gauss():
    rng = np.random.default_rng(1)
    return (rng.standard_normal(400), 0.1 * rng.standard_normal(400),
            rng.standard_normal((700, 400)))


@ad.value_and_grad
def spread(x):
    return np.var(x, ddof=1) + np.std(x)


def example_spread():
    return (np.random.default_rng(2).standard_normal((700, 400)),)


@ad.grad
def pairdist(x):
    n = x.shape[0]
    sq = np.sum(x * x, axis=1)
    dist = sq[:, None] + sq[None, :] - 2 * (x @ x.T)
    return np.sum(np.sqrt(dist + 1.0)) / (n * (n - 1))


def example_pairdist():
    return (np.random.default_rng(4).standard_normal((600, 16)),)
'''


def test_a_likelihood_constant_a_whole_array_variance_and_a_mean_over_pairs(tmp_path):
    """Each was per shape before: ``0.5 * n * d * log(2 pi)`` in the value (41168.446287569335
    at 700 x 64), ``np.var(x, ddof=1)``'s 44799 there, the pairs' 5.574136008918617e-06 at
    n = 300; here each is compiled at sizes above every threshold."""
    path = write(tmp_path, "realistic.py", REALISTIC)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    for name in ("value_and_grad_gauss", "value_and_grad_spread", "grad_pairdist"):
        assert f"{name} (1 signature, any sizes)" in done.stderr, done.stderr
    text = (tmp_path / "realistic_grad.py").read_text()
    assert "(0.9189385332046727 * (d1 * d2))" in text and "/ (d1 * d2 - 1)" in text
    assert "1 / (2 * d1 * (d1 - 1))" in text
    user, cases = import_path(path), []
    for n, d in ((3, 2), (50, 7), (2000, 150), (301, 64)):
        args = (RNG.standard_normal(d), 0.1 * RNG.standard_normal(d), RNG.standard_normal((n, d)))
        cases.append(("value_and_grad_gauss", args, reference(user.gauss, args)))
        cases.append(("value_and_grad_spread", args[2:], reference(user.spread, args[2:])))
        cases.append(("grad_pairdist", args[2:], reference(user.pairdist, args[2:])))
    compare_calls(tmp_path, cases, module="realistic_grad")


def compiles(tmp_path, monkeypatch, text) -> int:
    """How many times ``adcompiler compile`` compiles a gradient for a module of ``text``."""
    count = [0]
    real = polymorphic.compile_gradient

    def counted(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)
    monkeypatch.setattr(polymorphic, "compile_gradient", counted)
    assert main(["compile", str(write(tmp_path, "counted.py", text))]) == 0
    return count[0]


ONE = '''
import numpy as np

import adcompiler as ad


@ad.grad
def f(x):
    n, d = x.shape
    return np.sum(np.tanh(x)) / ({expr})


def example_f():
    return (np.ones((700, 64)),)
'''


def test_further_samples_are_taken_only_for_a_number_the_first_ones_do_not_fit(
        tmp_path, monkeypatch):
    """A product (``n * d``) and a polynomial of one size (``n * (n - 1)``: the example is a
    fourth point) take the usual samples; a polynomial of two takes three more for each
    body (n and d moved again, then together), both bodies (large, small) alike."""
    usual = compiles(tmp_path, monkeypatch, ONE.format(expr="n * d"))
    assert compiles(tmp_path, monkeypatch, ONE.format(expr="n * (n - 1)")) == usual
    assert compiles(tmp_path, monkeypatch, ONE.format(expr="(n - 1) * (d - 1)")) == usual + 6


# ---- the fit ---------------------------------------------------------------------------------
BASE = [{"d1": 100003, "d2": 67}, {"d1": 100019, "d2": 67}, {"d1": 100003, "d2": 71},
        {"d1": 100043, "d2": 73}, {"d1": 100049, "d2": 67}, {"d1": 100003, "d2": 79},
        {"d1": 100019, "d2": 71}]   # the base, each moved, both moved, then the further ones
MOVES = {"d1": 1, "d2": 2}


@pytest.mark.parametrize("formula, expected", [
    (lambda n, d: 1 / (n * (n - 1) / 2), "2 / (d1 * (d1 - 1))"),
    (lambda n, d: 1 / (n * d - 1), "1 / (d1 * d2 - 1)"),
    (lambda n, d: 1.5 / (n + d), "3 / (2 * (d1 + d2))"),
    (lambda n, d: 3.0 * (1 / ((n - 1) * (d - 1))), "3 * (1 / ((d1 - 1) * (d2 - 1)))"),
    (lambda n, d: (n + 1) * (d - 2) / 3, "(d1 + 1) * (d2 - 2) / 3"),
    (lambda n, d: float(n * n + 3 * d * d - 5), "float(d1 ** 2 + 3 * d2 ** 2 - 5)"),
    (lambda n, d: n * (n - 1) // 2, "d1 * (d1 - 1) // 2"),
])
def test_polynomials_of_large_sizes_are_fitted_exactly(formula, expected):
    values = [formula(s["d1"], s["d2"]) for s in BASE]
    fit = antiunify.fit_number(values, BASE, 0, MOVES)
    assert fit is not None and fit.expr == expected
    for n, d in ((2, 2), (3, 10 ** 6), (10 ** 7, 5)):   # exact at sizes far from the samples
        assert fit.literal({"d1": n, "d2": d}) == repr(formula(n, d))


SMALL = [{"d1": 701, "d2": 67}, {"d1": 709, "d2": 67}, {"d1": 701, "d2": 71},
         {"d1": 719, "d2": 73}, {"d1": 727, "d2": 67}, {"d1": 701, "d2": 79},
         {"d1": 709, "d2": 71}]


def test_a_polynomial_times_a_float_no_fraction_is_is_fitted_as_python_evaluates_it():
    """``0.5 * math.log(2 * math.pi) * n * (n - 1)``: ((f * n) * (n - 1)), f = 0.9189...,
    and ``math.pi / (n * d + 1)``,
    found from the values' ratios (to a part in 10^9, so at sizes of thousands rather than
    10^5: the samples' ratios then fix the polynomial's small terms)."""
    half_log = 0.5 * math.log(2 * math.pi)
    values = [half_log * s["d1"] * (s["d1"] - 1) for s in SMALL]
    fit = antiunify.fit_number(values, SMALL, 0, MOVES)
    assert fit is not None and fit.expr == "0.9189385332046727 * d1 * (d1 - 1)"
    for n in (2, 3, 10 ** 6, 10 ** 7 + 3):
        assert fit.literal({"d1": n, "d2": 2}) == repr(half_log * n * (n - 1))
    values = [math.pi / (s["d1"] * s["d2"] + 1) for s in SMALL]
    fit = antiunify.fit_number(values, SMALL, 0, MOVES)
    assert fit is not None and fit.expr == "3.141592653589793 / (d1 * d2 + 1)"
    assert fit.literal({"d1": 10 ** 5, "d2": 3}) == repr(math.pi / (3 * 10 ** 5 + 1))


def test_numbers_of_higher_degree_or_too_few_samples_are_refused():
    cubic = [1 / (s["d1"] * (s["d1"] - 1) * (s["d1"] - 2) / 6) for s in BASE]
    assert antiunify.fit_number(cubic, BASE, 0, MOVES) is None
    growth = [1.001 ** (s["d1"] / 1000) for s in BASE]
    assert antiunify.fit_number(growth, BASE, 0, MOVES) is None
    # six terms in two sizes: the first five samples cannot fit them, let alone check them
    pairs = [1 / (s["d1"] * (s["d2"] - 1) + s["d2"] ** 2) for s in BASE]
    assert antiunify.fit_number(pairs[:5], BASE[:5], 0, MOVES) is None
    assert antiunify.fit_number(pairs, BASE, 0, MOVES).expr == "1 / (d1 * d2 + d2 ** 2 - d1)"
    # an integer that is no integer polynomial at every size: (n * n + n) / 3 at n = 1 (mod 3)
    sizes = [{"d1": n} for n in (9, 12, 15, 18, 21)]
    assert polynomials.candidates([(n * n + n) // 3 for n in (9, 12, 15, 18, 21)], sizes, 0,
                                  {"d1": 1}, int) == []


def test_a_merge_that_fails_names_the_sizes_its_number_changes_with():
    sources = [f"def f(x):\n    return x * {1 / (s['d1'] * (s['d1'] - 1) * (s['d2'] - 1))!r}\n"
               for s in BASE[:4]]
    why = antiunify.merge(sources, BASE[:4], 0, MOVES)
    assert isinstance(why, antiunify.Unfitted) and why.symbols == {"d1", "d2"}
    assert why.startswith("the number ") and "polynomial of degree two" in why
