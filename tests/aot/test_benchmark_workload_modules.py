"""Every benchmark workload's ``adcompiler compile`` module serves every size (issue #30).

Each workload's own function (``benchmarks/workloads.py``) is compiled ahead of time for the
shapes the benchmark runs it at (a batch of 256, hidden 256, 100 steps, 10^5 points, a
128 x 128 transformer block...), and the module is imported in a process where adcompiler
cannot be imported, then called at two sizes it was not compiled with: a tiny one (below the
planner's and fusion's thresholds: the module's small body) and a middling one (above them).
Every call must take the module's generated guard (none falls back to ``_dispatch``) and give
the unoptimised decorated gradient to 1e-12. Seed f (two floats) has no size to vary, and the
seed graph's 2 x 2 example is covered by tests/cli.
"""

import contextlib
import inspect
import io

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends.check_modes import unoptimised
from adcompiler.cli.main import main
from benchmarks import workloads as W
from benchmarks.systems import shape_options
from tests.aot.test_every_size import compare_calls
from tests.cli.test_cli import run_isolated
from tests.programs.test_benchmarks_smoke import TINY

# a size each workload was not compiled with, above the thresholds (the tiny one is TINY's)
MIDDLING = {
    "elementwise": W.make_vector(70_001),
    "rosenbrock": W.make_vector(50_000),
    "logistic": lambda: W.make_logistic(n=3000, d=40),
    "mlp": lambda: W.make_mlp(batch=100, d_in=50, hidden=70, classes=6),
    "rnn": lambda: W.make_rnn(T=20, hidden=40, d_in=10, batch=8),
    "small_mlp": lambda: W.make_small_mlp(batch=30, d_in=10, hidden=60),
    "gmm": lambda: W.make_gmm(n=5000, k=5, d=3),
    "heat": lambda: W.make_heat(n=1000, steps=30),
    "gp_nll": lambda: W.make_gp(n=120, d=2),
    "matfact": lambda: W.make_matfact(users=300, items=200, rank=8, pairs=5000),
    "gru": lambda: W.make_gru(T=20, hidden=24, d_in=8, batch=6),
    "transformer": lambda: W.make_transformer(seq=40, d_model=64, d_ff=96),
    "ode_rk4": lambda: W.make_ode(batch=30, d=4, hidden=20, steps=15),
}
# the benchmark's own sizes (the elementwise workloads' 10^6 entry stands for its family)
AT = {"elementwise": "elementwise_1e6", "rosenbrock": "rosenbrock_1e6"}


def workload(name):
    return W.BY_NAME[AT.get(name, name)] if name in AT else \
        next(w for w in W.WORKLOADS if w.fn.__name__ == name)


def compile_module(tmp_path, bench) -> str:
    """Write the workload's function as a user would decorate it, compile it for the
    benchmark's shapes in this process, and return what ``adcompiler compile`` said."""
    path = tmp_path / "workload.py"
    path.write_text("import math\n\nimport numpy as np\n\nimport adcompiler as ad\n\n\n"
                    f"@ad.grad(wrt={tuple(bench.wrt)!r})\n{inspect.getsource(bench.fn)}")
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        code = main(["compile", str(path), "-o", str(tmp_path / "compiled.py"),
                     *shape_options(bench.fn, bench.make())])
    assert code == 0, said.getvalue()
    return said.getvalue()


@pytest.mark.parametrize("name", sorted(MIDDLING))
def test_the_module_compiled_at_the_benchmarks_sizes_takes_other_sizes(tmp_path, name):
    bench = workload(name)
    said = compile_module(tmp_path, bench)
    assert f"grad_{name} (1 signature, any sizes" in said, said
    assert "per shape" not in said, said
    cases = []
    for make in (TINY[name], MIDDLING[name]):
        args = make()
        with unoptimised():
            expected = ad.grad(bench.fn, wrt=bench.wrt)(*args)
        cases.append((f"grad_{name}", args, expected))
    compare_calls(tmp_path, cases, module="compiled")


def test_the_mixtures_dimension_is_a_number_in_its_formula_and_takes_every_size(tmp_path):
    """gmm reads ``d = X.shape[1]`` and computes with it as a number (``d * log_sigma``,
    ``0.5 * d * log_2pi``): compiled at the benchmark's d = 2, where the algebra folds the size
    into the code's 2.0 (``-(2 * (a + b))``), the module takes every d of 2 or more (the body is
    merged from samples apart from the example, and the float ``0.5 * d * log_2pi`` is
    ``0.9189385332046727 * d2`` bit for bit); d = 1 broadcasts, so it is a signature of its own,
    and the module says so."""
    bench = workload("gmm")
    said = compile_module(tmp_path, bench)
    assert "grad_gmm (1 signature, any sizes" in said, said
    text = (tmp_path / "compiled.py").read_text()
    assert "stays 2" not in text.split('"""')[1]
    assert "0.9189385332046727 * d2" in text   # 0.5 * d * log_2pi, exact at every d
    cases = []
    for n, k, d in ((50, 3, 3), (5000, 5, 5), (3000, 7, 8), (2001, 16, 2), (40, 2, 17)):
        args = W.make_gmm(n=n, k=k, d=d)
        with unoptimised():
            expected = ad.grad(bench.fn, wrt=bench.wrt)(*args)
        cases.append(("grad_gmm", args, expected))
    compare_calls(tmp_path, cases, module="compiled")
    np.savez(tmp_path / "one.npz", *W.make_gmm(n=50, k=3, d=1))
    said = run_isolated("""
        import numpy as np, compiled
        data = np.load("one.npz")
        try:
            compiled.grad_gmm(*[data[f"arr_{i}"] for i in range(4)])
        except TypeError as e:
            print(e)
    """, tmp_path)
    assert "mu: float64[d1, d2]" in said and "float64[3, 1]" in said, said


def test_the_mixture_at_d_1_is_a_second_example_signature_and_takes_every_n_and_k(tmp_path):
    """d = 1 broadcasts (a (n, 1) array is no (n, d) one), so a module for it returns it from
    ``example_gmm()`` beside the benchmark's d = 2 (both at its 10^5 points and 16 components):
    then d = 1 takes every n and k too, and d = 2's body every other d."""
    bench = workload("gmm")
    path = tmp_path / "workload.py"
    path.write_text("import numpy as np\n\nimport adcompiler as ad\n\n\n"
                    f"@ad.grad(wrt={tuple(bench.wrt)!r})\n{inspect.getsource(bench.fn)}\n\n"
                    "def example_gmm():\n"
                    "    rng = np.random.default_rng(0)\n"
                    "    return [(rng.standard_normal((16, d)), 0.1 * rng.standard_normal(16),\n"
                    "             0.1 * rng.standard_normal(16),\n"
                    "             rng.standard_normal((100_000, d))) for d in (2, 1)]\n")
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        assert main(["compile", str(path), "-o", str(tmp_path / "compiled.py")]) == 0
    assert "grad_gmm (2 signatures, any sizes" in said.getvalue(), said.getvalue()
    cases = []
    for n, k, d in ((50, 3, 1), (5000, 5, 1), (100_000, 16, 1), (3000, 7, 4)):
        args = W.make_gmm(n=n, k=k, d=d)
        with unoptimised():
            expected = ad.grad(bench.fn, wrt=bench.wrt)(*args)
        cases.append(("grad_gmm", args, expected))
    compare_calls(tmp_path, cases, module="compiled")
