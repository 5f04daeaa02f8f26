"""A size the function computes with as a number gives a module for every size (issue #30).

``d = X.shape[1]`` then ``d * log_sigma``, ``0.5 * d * math.log(2 * math.pi)``, ``x.sum() / n``,
``/ (n - 1)``, ``float(n)``, ``np.sqrt(d)``, ``math.sqrt(d)``, ``math.log(n)``: the compiler
folds the size into the code's numbers, so the merge (:mod:`adcompiler.aot.antiunify`) must find
each number's formula, bit for bit (``0.5 * d * 1.8378770664093453`` is
``0.9189385332046727 * d2``; ``0.5 / (n - 1)`` is ``1 / (2 * (d1 - 1))``; ``math.sqrt(d)`` is
``np.sqrt(d2)``), and the example's own coincidences must not fix its sizes: at d = 2
the algebra folds ``-d * a - 2.0 * b``'s 2 with the 2.0 (``-(2 * (a + b))``), and at n = 2000
``n / 1000.0`` is written as the int 2; the body is then merged from the samples apart, whose
algebra holds at every size. A choice made by size (the distance product's orientation, at
d < k and d > k) is made the same for every size ahead of time. Each function is compiled at
sizes above the planner's and fusion's thresholds (and numexpr's, though ``adcompiler
compile`` leaves numexpr out), then called without adcompiler at other sizes below and above
them (d = 1, which broadcasts, as a second example signature), against the unoptimised
gradient to 1e-13 of each array's largest entry. A size the code truly fixes still stays the
example's, and the module says which and why.
"""

import numpy as np

from adcompiler.backends import numexpr_chains, planner
from adcompiler.passes import fuse
from tests.aot.test_every_size import compare_calls, reference
from tests.cli.test_cli import adcompiler, import_path, run_isolated, write

RNG = np.random.default_rng(3030)

SOURCE = '''
    import math

    import numpy as np

    import adcompiler as ad


    @ad.grad(wrt=("log_s",))
    def isotropic(log_s, x):
        n, d = x.shape
        sq = np.sum(x * x, axis=1)
        ll = -d * log_s - 0.5 * sq * np.exp(-2.0 * log_s) - 0.5 * d * math.log(2 * math.pi)
        return -np.sum(np.exp(ll)) / n


    def example_isotropic():   # d = 1 broadcasts: a signature of its own
        rng = np.random.default_rng(4)
        return [(0.1 * rng.standard_normal(6000), rng.standard_normal((6000, d)))
                for d in (2, 1)]


    @ad.grad(wrt=("mu", "log_sigma"))
    def mixture(mu, log_sigma, X):
        d = X.shape[1]
        diff = X[:, None, :] - mu[None, :, :]
        sq = np.sum(diff * diff, axis=2)
        comp = -d * log_sigma - 0.5 * sq * np.exp(-2.0 * log_sigma)
        m = np.max(comp, axis=1, keepdims=True)
        return -np.sum(m + np.log(np.sum(np.exp(comp - m), axis=1, keepdims=True)))


    def example_mixture():
        rng = np.random.default_rng(9)
        return (rng.standard_normal((16, 3)), 0.1 * rng.standard_normal(16),
                rng.standard_normal((5000, 3)))


    @ad.value_and_grad
    def tempered(x):
        n, d = x.shape
        return np.sum(np.log1p(np.exp(x * np.sqrt(d) - 0.25 * n)))


    def example_tempered():
        return (np.random.default_rng(6).standard_normal((700, 400)),)


    @ad.grad
    def unbiased(x):
        n = x.shape[0]
        m = x.sum(axis=0) / n
        v = np.sum((x - m) ** 2, axis=0) / (n - 1)
        return np.sum(np.sqrt(v + float(n) / 1000.0))


    def example_unbiased():
        return (np.random.default_rng(7).standard_normal((2000, 200)),)


    @ad.grad
    def rescaled(x):
        n, d = x.shape
        return np.sum(np.tanh(x / math.sqrt(d)) * math.log(n))


    def example_rescaled():
        return (np.random.default_rng(10).standard_normal((700, 64)),)


    @ad.grad
    def weighted(x):
        n, d = x.shape
        return d * np.sum(np.array([1.0, 2.0]) * np.tanh(x) ** 2) / n


    def example_weighted():
        return (np.random.default_rng(8).standard_normal((6000, 2)),)
'''

EXAMPLES = {"isotropic": (6000, 2), "mixture": (5000, 16, 3), "tempered": (700, 400),
            "unbiased": (2000, 200), "rescaled": (700, 64), "weighted": (6000, 2)}


def test_the_examples_lie_above_the_thresholds_and_the_calls_on_both_sides():
    for shape in EXAMPLES.values():
        assert np.prod(shape[:1]) * shape[-1] >= max(fuse.MIN_SIZE, planner.MIN_BYTES // 8)
    assert 700 * 400 >= numexpr_chains.MIN_ELEMENTS and 2000 * 200 >= numexpr_chains.MIN_ELEMENTS


def normal(*shape, scale=1.0):
    return RNG.standard_normal(shape) * scale


def cases_of(user) -> list:
    cases = []
    for n, d in ((7, 3), (40, 5), (5000, 3), (3001, 7), (900, 2), (9, 1), (5000, 1)):
        args = (normal(n, scale=0.1), normal(n, d))
        cases.append(("grad_isotropic", args, reference(user.isotropic, args)))
    for n, k, d in ((9, 2, 4), (300, 5, 40), (4000, 16, 2), (2000, 7, 11)):   # 5000, 16, 3
        args = (normal(k, d), normal(k, scale=0.1), normal(n, d))
        cases.append(("grad_mixture", args, reference(user.mixture, args)))
    for n, d in ((5, 3), (64, 64), (1000, 300), (70, 5000)):   # example 700 x 400
        args = (normal(n, d),)
        cases.append(("value_and_grad_tempered", args, reference(user.tempered, args)))
    for n, d in ((3, 2), (1000, 2), (2000, 200), (4999, 60)):   # example 2000 x 200
        args = (normal(n, d),)
        cases.append(("grad_unbiased", args, reference(user.unbiased, args)))
    for n, d in ((5, 3), (300, 10), (2000, 81)):   # example 700 x 64
        args = (normal(n, d),)
        cases.append(("grad_rescaled", args, reference(user.rescaled, args)))
    for n in (3, 50, 9000):   # example 6000 x 2: d stays 2
        args = (normal(n, 2),)
        cases.append(("grad_weighted", args, reference(user.weighted, args)))
    return cases


def test_sizes_used_as_numbers_give_a_module_for_every_size(tmp_path):
    path = write(tmp_path, "sizes.py", SOURCE)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    assert "grad_isotropic (2 signatures, any sizes)" in done.stderr, done.stderr
    for name in ("grad_mixture", "value_and_grad_tempered", "grad_unbiased", "grad_rescaled",
                 "grad_weighted"):
        assert f"{name} (1 signature, any sizes)" in done.stderr, done.stderr
    assert "per shape" not in done.stderr, done.stderr
    text = (tmp_path / "sizes_grad.py").read_text()
    header = text.split('"""')[1]
    # the numbers made of sizes are formulas, exact at every size
    assert "0.9189385332046727 * d2" in text           # 0.5 * d * log(2 pi)
    # 0.5 / (n - 1), the 0.5 of the root's rule apart (two float literals: passes/algebra.py)
    assert "0.5 / np.sqrt(t3 / (d1 - 1) + (d1 / 1000)) / (d1 - 1)" in text
    assert "d1 / 1000" in text and "np.sqrt(d2)" in text
    assert "x / np.sqrt(d2)" in text and "np.log(d1)" in text   # math.sqrt(d), math.log(n)
    # only the size a constant array fixes stays, said in the header and the body's comment
    assert header.count("stays") == 1, header
    assert "- grad_weighted: x.shape[1] stays 2: its sizes are tied, to each other or to a " \
        "number in the code" in " ".join(header.split()), header
    assert "# fixed: x.shape[1] stays 2: its sizes are tied" in text
    # normwise: the mixture's dmu entries are sums of n terms that cancel, and the module
    # expands the distances (passes/broadcast_products.py), as the decorator's code does
    compare_calls(tmp_path, cases_of(import_path(path)), module="sizes_grad", normwise=1e-13)


def test_a_call_at_a_fixed_size_other_than_the_examples_is_refused_saying_which(tmp_path):
    write(tmp_path, "sizes.py", SOURCE)
    assert adcompiler("compile", tmp_path / "sizes.py").returncode == 0
    np.save(tmp_path / "three.npy", normal(50, 3))
    said = run_isolated("""
        import numpy as np, sizes_grad
        try:
            sizes_grad.grad_weighted(np.load("three.npy"))
        except TypeError as e:
            print(e)
    """, tmp_path)
    assert "x: float64[d1, 2]" in said and "x: float64[50, 3]" in said, said


def test_a_number_no_formula_gives_keeps_the_body_per_shape_saying_which(tmp_path):
    """``n * (n - 1) / 2`` is now a polynomial the merge fits (tests/aot/test_polynomial_sizes.py:
    ``2 / (d1 * (d1 - 1))`` here); the triples' ``n * (n - 1) * (n - 2) / 6``, of degree three,
    and ``1.001 ** n`` are not: those bodies stay per shape, the note naming each number and its
    line."""
    path = write(tmp_path, "pairs.py", '''
        import numpy as np

        import adcompiler as ad


        @ad.grad
        def pairs(x):
            n = x.shape[0]
            return np.sum(np.tanh(x)) / (n * (n - 1) / 2)


        def example_pairs():
            return (np.random.default_rng(11).standard_normal((700, 64)),)


        @ad.grad
        def triples(x):
            n = x.shape[0]
            return np.sum(np.tanh(x)) / (n * (n - 1) * (n - 2) / 6)


        def example_triples():
            return (np.random.default_rng(12).standard_normal((700, 64)),)


        @ad.grad
        def growth(x):
            n = x.shape[0]
            return np.sum(np.tanh(x)) * 1.001 ** n


        def example_growth():
            return (np.random.default_rng(13).standard_normal((700, 64)),)
    ''')
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    assert "grad_pairs (1 signature, any sizes)" in done.stderr, done.stderr
    assert "dx = (2 / (d1 * (d1 - 1))) * " in (tmp_path / "pairs_grad.py").read_text()
    said = " ".join(done.stderr.split())
    assert "grad_triples (1 signature, per shape)" in said, said
    assert "grad_growth (1 signature, per shape)" in said, said
    why = "changes with the sizes in a way that is not a product, a sum or a polynomial of " \
        "degree two of sizes"
    assert f"the number 1.7567930796407005e-08 in `# dx = 1.7567930796407005e-08 * (1 - t1 * " \
        f"t1)` {why}" in said, said
    assert f"the number 2.0130484867099283 in `# dx = 2.0130484867099283 * (1 - t1 * t1)` " \
        f"{why}" in said, said
