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
    "gmm": lambda: W.make_gmm(n=5000, k=5, d=2),   # d stays the example's: see below
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


def test_the_mixtures_dimension_stays_the_examples_and_the_module_says_so(tmp_path):
    bench = workload("gmm")
    compile_module(tmp_path, bench)
    header = (tmp_path / "compiled.py").read_text().split('"""')[1]
    assert "grad_gmm: mu.shape[1] and X.shape[1] stays 2" in header, header
    mu, log_sigma, logit_w, X = W.make_gmm(n=50, k=3, d=3)
    np.savez(tmp_path / "three.npz", mu, log_sigma, logit_w, X)
    said = run_isolated("""
        import numpy as np, compiled
        data = np.load("three.npz")
        try:
            compiled.grad_gmm(*[data[f"arr_{i}"] for i in range(4)])
        except TypeError as e:
            print(e)
    """, tmp_path)
    assert "X.shape[1] is 3, but the code is compiled for 2 only" in said, said
