"""The ``adcompiler`` command line, run as a console script in a subprocess.

The standalone modules ``compile`` writes are imported in a process where adcompiler cannot be
imported, and must give the gradients ``adcompiler.grad`` gives; compiling never runs the
module's top level; user mistakes print ``path:line:col: error:`` with the line and a caret and
exit with 2, never with a traceback.
"""

import importlib.util
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import cli
from adcompiler.checking import near_examples as gradcheck
from adcompiler.aot.user_code import MAX_LITERAL, literal as _literal

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"

# Run first in the isolated process: any import of adcompiler fails there.
BLOCKER = textwrap.dedent("""
    import sys
    class _NoAdcompiler:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "adcompiler":
                raise ImportError("adcompiler is blocked in this process")
    sys.meta_path.insert(0, _NoAdcompiler())
    sys.path.insert(0, sys.argv[1])
""")


def adcompiler(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "adcompiler", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


# In the isolated process: count the calls no generated guard takes (they go to ``_dispatch``)
COUNT_SLOW = textwrap.dedent("""
    import importlib
    slow = []
    def counting(module_name):
        module = importlib.import_module(module_name)
        if not hasattr(module, "_real_dispatch"):
            module._real_dispatch = module._dispatch
            def _dispatch(table, args):
                slow.append(table.name)
                return module._real_dispatch(table, args)
            module._dispatch = _dispatch
        return module
""")


def run_isolated(code, directory):
    """Run ``code`` with ``directory`` on sys.path, where adcompiler cannot be imported."""
    script = BLOCKER + textwrap.dedent(code) + textwrap.dedent("""
        assert not any(m.split(".")[0] == "adcompiler" for m in sys.modules), sys.modules
        try:
            import adcompiler
        except ImportError:
            pass
        else:
            raise AssertionError("adcompiler was importable")
    """)
    done = subprocess.run([sys.executable, "-I", "-c", script, str(directory)], cwd=directory,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def import_path(path):
    spec = importlib.util.spec_from_file_location(Path(path).stem + "_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def compare_isolated(out_dir, module_name, call, args, expected):
    """Call ``module_name.call(*args)`` in the isolated process and compare with ``expected``;
    the call must take its generated guard, not ``_dispatch``."""
    np.savez(out_dir / "inputs.npz", *[np.asarray(a) for a in args])
    kinds = [type(a).__name__ if isinstance(a, (float, int)) else "array" for a in args]
    got = run_isolated(COUNT_SLOW + textwrap.dedent(f"""
        import json, numpy as np
        m = counting("{module_name}")
        data = np.load("inputs.npz")
        convert = {{"float": float, "int": int, "array": lambda a: a}}
        args = [convert[k](data[f"arr_{{i}}"]) for i, k in enumerate({kinds!r})]
        result = m.{call}(*args)
        def flat(r):
            if isinstance(r, tuple):
                return [flat(x) for x in r]
            return {{"float": isinstance(r, float), "value": np.asarray(r).tolist()}}
        print(json.dumps([flat(result), slow]))
    """), out_dir)
    got, slow = json.loads(got)
    assert slow == [], f"{module_name}.{call} did not take its guard"
    assert_same(got, expected)


def assert_same(got, expected):
    if isinstance(expected, tuple):
        assert isinstance(got, list) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same(g, e)
        return
    assert got["float"] == isinstance(expected, float)
    np.testing.assert_allclose(np.asarray(got["value"]), expected, rtol=1e-12, atol=1e-14)


# ---- compile: standalone modules --------------------------------------------------------------
def test_compiled_samples_give_adcompilers_gradients_without_adcompiler(tmp_path):
    for sample in ("seed_graph", "seed_f", "mlp"):
        shutil.copy(SAMPLES / f"{sample}.py", tmp_path)
    done = adcompiler("compile", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "[1/3]" in done.stderr and "[3/3]" in done.stderr
    assert "compiled 3 of 3 modules" in done.stderr
    for sample, call in (("seed_graph", "grad_loss"), ("seed_f", "value_and_grad_f"),
                         ("mlp", "grad_loss")):
        text = (tmp_path / f"{sample}_grad.py").read_text()
        assert "adcompiler" not in "".join(ln for ln in text.splitlines(True)
                                           if ln.startswith(("import", "from")))
        user = import_path(tmp_path / f"{sample}.py")
        args = getattr(user, f"example_{call.split('_')[-1]}")()
        expected = getattr(user, call.split("_")[-1])(*args)
        compare_isolated(tmp_path, f"{sample}_grad", call, args, expected)


def test_the_standalone_module_defines_the_primal_and_rejects_other_shapes(tmp_path):
    shutil.copy(SAMPLES / "seed_graph.py", tmp_path)
    assert adcompiler("compile", tmp_path / "seed_graph.py", "-o",
                      tmp_path / "out.py").returncode == 0
    out = run_isolated("""
        import numpy as np, out
        print(out.loss(2.0, 3.0, 4.0, np.ones((2, 2))))
        print(out.grad_loss(2.0, 3.0, 4.0, np.ones((3, 5))))  # any sizes of at least 2
        try:
            out.grad_loss(2.0, 3.0, 4.0, np.ones((1, 2)))
        except TypeError as exc:
            print(exc)
    """, tmp_path)
    user = import_path(tmp_path / "seed_graph.py")
    assert out.splitlines() == [
        "40.0",
        repr(user.loss(2.0, 3.0, 4.0, np.ones((3, 5)))),
        "grad_loss() was compiled for the inputs",
        "  (w1: float, w2: float, w3: float, inp: float64[d1, d2])",
        "(a named size is any size of at least 2; the same name, the same size)",
        "but was given",
        "  (w1: float, w2: float, w3: float, inp: float64[1, 2])",
        "to compile it for these inputs, return them from example_loss() in seed_graph.py (it "
        "may return a list of argument tuples, one per signature) and run `adcompiler compile "
        "seed_graph.py` again"]


def test_a_directory_compiles_each_module_and_reports_the_failures(tmp_path):
    shutil.copy(SAMPLES / "seed_graph.py", tmp_path)
    write(tmp_path, "broken.py", ERRORS["no_rule.py"][0])
    write(tmp_path, "plain.py", "def helper(x):\n    return x\n")
    done = adcompiler("compile", tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "broken.py:7:9: error: `np.i0` has no derivative rule" in done.stderr
    assert "compiled 1 of 3 modules (1 failed, 1 without marked functions)" in done.stderr
    first = (tmp_path / "seed_graph_grad.py").read_bytes()
    assert not (tmp_path / "broken_grad.py").exists() and not (tmp_path / "plain_grad.py").exists()
    assert adcompiler("compile", tmp_path / "seed_graph.py").returncode == 0
    assert (tmp_path / "seed_graph_grad.py").read_bytes() == first   # deterministic


MODES = '''
    import numpy as np
    import adcompiler as ad

    W = np.array([[1.0, -2.0], [0.5, 3.0]])
    BIG = np.full((2, 10_000), 0.5)
    SCALE = 2.5


    def helper(z):
        return np.tanh(z) * SCALE


    @ad.grad(wrt=("x",))
    def one(x, k=2):
        return (helper(x @ W) ** k).sum() + (x @ BIG).sum()


    @ad.value_and_grad(wrt=("x", "y"))
    def both(x, y):
        return (x * y).sum() + np.sin(y).sum()


    @ad.vjp(wrt="x")
    def vector(x, c):
        return np.exp(x) * c


    @ad.jvp(wrt="x")
    def tangent(x, y):
        return np.sin(x) * y


    def example_tangent():
        return np.array([0.1, 0.2]), 1.5


    def example_one():
        return [(np.ones((3, 2)) * 0.1,), (np.full((4, 2), 0.2), 3)]


    def example_both():
        return [(np.ones(3), 2.0), (np.ones(3), np.array([1.0, 2.0, 0.5]))]


    def example_vector():
        return np.array([0.1, 0.2]), 1.5
'''


def test_signatures_modes_and_constants(tmp_path):
    path = write(tmp_path, "modes.py", MODES)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "modes_grad.py").read_text()
    assert "x @ W" in text and "W = np.array([[1.0, -2.0], [0.5, 3.0]])" in text
    assert "BIG = np.full((2, 10_000), 0.5)" in text and text.count("_grad_one_") >= 2
    user = import_path(path)
    x3, x4 = np.linspace(0.1, 0.6, 6).reshape(3, 2), np.full((4, 2), 0.3)
    y = np.array([1.0, 2.0, 0.5])
    c = np.array([0.5, -1.0])
    cases = [("grad_one", (x3,), user.one(x3)), ("grad_one", (x4, 3), user.one(x4, 3)),
             ("value_and_grad_both", (x3[:, 0], 1.5), user.both(x3[:, 0], 1.5)),
             ("value_and_grad_both", (x3[:, 0], y), user.both(x3[:, 0], y))]
    for call, args, expected in cases:
        compare_isolated(tmp_path, "modes_grad", call, args, expected)
    out = run_isolated(COUNT_SLOW + textwrap.dedent("""
        import numpy as np
        m = counting("modes_grad")
        print(m.vjp_vector(np.array([0.1, 0.2]), 1.5, cotangent=np.array([0.5, -1.0])).tolist())
        assert slow == [], slow   # the call took its guard
    """), tmp_path)
    expected = user.vector(np.array([0.1, 0.2]), 1.5, cotangent=c)
    np.testing.assert_allclose(json.loads(out), expected, rtol=1e-14)
    out = run_isolated(COUNT_SLOW + textwrap.dedent("""
        import numpy as np
        m = counting("modes_grad")
        value, tangent = m.jvp_tangent(np.array([0.1, 0.2]), 1.5, tangents=[1.0, -2.0])
        print([value.tolist(), tangent.tolist()])
        assert slow == [], slow
    """), tmp_path)
    expected = user.tangent(np.array([0.1, 0.2]), 1.5, tangents=np.array([1.0, -2.0]))
    np.testing.assert_allclose(json.loads(out), expected, rtol=1e-14)


def test_large_constants_are_refused_as_literals_but_small_ones_round_trip():
    for value in (np.array([1.5, np.nan, -np.inf, 1e-300]), np.arange(6, dtype=np.int32),
                  np.array(2.5, dtype=np.float32), np.array([[True, False]])):
        back = eval(_literal(value, "f"), {"np": np})
        assert back.dtype == value.dtype and back.shape == value.shape
        np.testing.assert_array_equal(back, value)
    with pytest.raises(ad.CompileError, match="up to 10,000 elements"):
        _literal(np.zeros(MAX_LITERAL + 1), "_grad_f_1")


SIDE_EFFECTS = '''
    import numpy as np
    import adcompiler as ad

    open({trace!r}, "w").write("the top level ran")
    print("SIDE EFFECT")
    RATE = float(input())
    raise SystemExit("the top level ran")


    @ad.grad
    def f(x: print("SIDE EFFECT")) -> open({trace!r}, "w"):
        return (x * x).sum()


    def example_f():
        return (np.ones(3),)
'''


def test_compiling_never_runs_the_modules_top_level(tmp_path):
    trace = tmp_path / "trace.txt"
    path = write(tmp_path, "effects.py", SIDE_EFFECTS.format(trace=str(trace)))
    for args in (("compile", path), ("show", f"{path}:f"), ("check", path),
                 ("graph", f"{path}:f", "-o", tmp_path / "g.dot")):
        done = adcompiler(*args)
        assert done.returncode == 0, done.stderr
        assert "SIDE EFFECT" not in done.stdout + done.stderr
        assert not trace.exists()
    out = run_isolated("import numpy as np, effects_grad as m; print(m.grad_f(np.ones(3)))",
                       tmp_path)
    assert out.strip() == "[2. 2. 2.]"


# ---- errors -----------------------------------------------------------------------------------
ERRORS = {
    "no_rule.py": ('''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def f(x):
            y = np.i0(x) * 2.0
            return y.sum()


        def example_f():
            return (np.ones(3),)
        ''', "compile", 7, 9, "`np.i0` has no derivative rule", "y = np.i0(x) * 2.0",
        "    ^^^^^"),
    "unresolved.py": ('''
        import numpy as np
        import torch as sp
        import adcompiler as ad


        @ad.grad
        def f(x):
            return sp.expit(x).sum()


        def example_f():
            return (np.ones(3),)
        ''', "compile", 8, 12, "name `sp` is not defined", "return sp.expit(x).sum()",
        "       ^^"),
    "syntax.py": ('''
        import numpy as np

        def f(x)
            return x
        ''', "compile", 3, 9, "syntax error", "def f(x)", "        ^"),
    "default.py": ('''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def f(x, scale=np.random.rand()):
            return (x * scale).sum()
        ''', "compile", 6, 16, "a default value must be a literal",
        "def f(x, scale=np.random.rand()):", "               ^^^^^^^^^^^^^^^^"),
    "example.py": ('''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def f(x):
            return x.sum()


        def example_f():
            n = 3
            return (np.ones(n) / SIZE,)
        ''', "show", 12, 5, "example_f() raised NameError", "return (np.ones(n) / SIZE,)",
        "^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_are_located_with_a_caret_and_exit_2(tmp_path, name):
    text, command, line, col, message, shown, caret = ERRORS[name]
    path = write(tmp_path, name, text)
    done = adcompiler(command, path if command == "compile" else f"{path}:f")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    header, shown_line, caret_line, *rest = done.stderr.splitlines()
    assert header.startswith(f"{path}:{line}:{col}: error: {message}"), header
    assert shown_line == "    " + shown
    assert caret_line == "    " + caret
    if name == "unresolved.py":
        assert rest == [f"hint: `sp` is bound at {path}:2 by `import torch`: only imports "
                        "of numpy, math, scipy and cupy are resolved without running code"]
    assert not (tmp_path / name.replace(".py", "_grad.py")).exists()


@pytest.mark.parametrize("args, message", [
    (("compile", "missing.py"), "adcompiler: error: no such file: missing.py"),
    (("compile", SAMPLES / "mlp.py", "--backend", "tpu"), "invalid choice: 'tpu'"),
    (("compile", SAMPLES / "mlp.py", "--mode", "sideways"), "invalid choice: 'sideways'"),
    (("show", SAMPLES / "mlp.py"), "expected PATH.py:FUNCTION"),
    (("show", f"{SAMPLES / 'mlp.py'}:nothing"), "defines no function 'nothing'"),
    (("graph", f"{SAMPLES / 'mlp.py'}:loss", "-o", "g.gif"), "must end in .dot, .svg or .png"),
    (("show", f"{SAMPLES / 'mlp.py'}:loss", "--shape", "x=a,b"), "argument --shape: 'x=a,b'"),
])
def test_command_line_mistakes_exit_2_without_a_traceback(tmp_path, args, message):
    done = adcompiler(*args, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert message in done.stderr


# ---- show, graph, check -----------------------------------------------------------------------
def test_show_prints_source_ir_and_their_parts():
    target = f"{SAMPLES / 'seed_graph.py'}:loss"
    whole = adcompiler("show", target).stdout
    forward = adcompiler("show", target, "--forward").stdout.splitlines()
    adjoint = adcompiler("show", target, "--adjoint").stdout.splitlines()
    assert "\x1b[" not in whole  # plain text in a pipe
    assert forward[:4] == whole.splitlines()[:4] and "# grad of" not in "".join(forward)
    # the adjoint of l4 = l2 * l3 was two 0.25 * scalings, which hoist_scales moved onto dw1..3
    assert adjoint[2] == "    # grad of: l3 = l1 * w3" and adjoint[-1] == whole.splitlines()[-1]
    ir_adjoint = adcompiler("show", target, "--ir", "--adjoint").stdout
    assert ir_adjoint.startswith("graph loss(") and "  # adjoint\n" in ir_adjoint
    assert "= multiply inp w1" not in ir_adjoint and "return dw1, dw2, dw3" in ir_adjoint
    ir_forward = adcompiler("show", target, "--ir", "--forward").stdout
    assert "l1: f64[2,2] = multiply inp w1" in ir_forward and "return" not in ir_forward
    coloured = adcompiler("show", target, "--color", "always").stdout
    assert "\x1b[" in coloured


def test_show_a_vjp_needs_no_cotangent_example(tmp_path):
    path = write(tmp_path, "modes.py", MODES)
    done = adcompiler("show", f"{path}:vector")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("def vjp_vector(x, c, cotangent):")


def test_graph_writes_dot_and_png(tmp_path):
    target = f"{SAMPLES / 'seed_graph.py'}:loss"
    assert adcompiler("graph", target, "-o", tmp_path / "g.dot").returncode == 0
    dot = (tmp_path / "g.dot").read_text()
    assert dot.startswith("digraph") and "cluster_forward" in dot and "cluster_backward" in dot
    for op in ("multiply", "add", "mean", "l4: f64[2,2]"):
        assert op in dot
    green = [ln for ln in dot.splitlines() if "#a8e6a1" in ln]
    assert sum('label="w1\\nfloat"' in ln or 'label="inp\\nf64[2,2]"' in ln for ln in green) == 2
    assert sum("(gradient)" in ln for ln in green) == 3
    seed = next(ln.split()[0] for ln in dot.splitlines() if "(seed)" in ln)
    entered = [ln.split()[2] for ln in dot.splitlines() if ln.strip().startswith(f"{seed} ->")]
    labels = {ln.split()[0]: ln for ln in dot.splitlines() if "[label=" in ln}
    # the chain rule's first steps, where the seed's 1 enters: l2 * w3 (toward l1), l2 * l1
    # (toward w3) and the sum of l3 (toward w2); the mean's 1/4 comes last
    assert len(entered) == 3 and all("#fbe0c6" in labels[n] for n in entered)
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed (apt-get install graphviz)")
    done = adcompiler("graph", target, "-o", tmp_path / "g.png")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_graph_draws_control_flow(tmp_path):
    path = write(tmp_path, "loops.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def f(h, W):
            for i in range(3):
                h = np.tanh(W @ h)
            if h.sum() > 0:
                h = h * 2.0
            return (h * h).sum()


        def example_f():
            return np.ones(3) * 0.1, np.eye(3) * 0.5
        ''')
    done = adcompiler("graph", f"{path}:f", "-o", tmp_path / "loops.dot")
    assert done.returncode == 0, done.stderr
    dot = (tmp_path / "loops.dot").read_text()
    assert 'label="if"' in dot and 'label="body"' in dot
    assert 'label="for loop, 3 steps"' in dot                       # forward
    assert "the loop's adjoint, its steps last to first, 3 steps" in dot
    assert 'label="to the next step"' in dot and "yield" not in dot
    assert "getitem[" not in dot and "sum_to[" not in dot and "to_float" not in dot


def test_check_agrees_on_the_samples_and_reports_each_input():
    done = adcompiler("check", SAMPLES / "mlp.py")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [ln.split() for ln in done.stdout.splitlines() if "worst relative error" in ln]
    assert [r[0] for r in rows] == ["W1", "b1", "W2", "b2"]
    assert all(r[-1] == "ok" and float(r[r.index("error") + 1]) < 1e-6 for r in rows)
    done = adcompiler("check", f"{SAMPLES / 'seed_f.py'}:f")
    assert done.returncode == 0 and "x2         float" in done.stdout


def test_check_and_show_handle_every_mode(tmp_path):
    path = write(tmp_path, "modes.py", MODES)
    done = adcompiler("check", path)
    assert done.returncode == 0, done.stdout + done.stderr
    names = [ln.split()[0] for ln in done.stdout.splitlines() if "relative error" in ln]
    assert names == ["x", "x", "value", "x", "y", "value", "x", "y", "x", "value", "tangent"]
    ir = adcompiler("show", f"{path}:tangent", "--ir", "--adjoint").stdout
    assert "  # tangent" in ir and "sin x" not in ir and ir.rstrip().endswith("}")


def test_check_exits_1_when_the_gradient_disagrees(monkeypatch, capsys):
    monkeypatch.setattr(gradcheck, "EPS", 0.2)  # differences this coarse are wrong
    assert cli.main(["check", str(SAMPLES / "seed_f.py")]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH" in out and out.splitlines()[-1].startswith("FAILED")


# ---- notebooks --------------------------------------------------------------------------------
def test_notebook_display_shows_the_latest_source():
    user = import_path(SAMPLES / "seed_graph.py")
    assert "not compiled yet" in user.loss._repr_markdown_()
    user.loss(*user.example_loss())
    assert user.loss._repr_markdown_() == f"```python\n{user.loss.source.rstrip()}\n```"
    html = user.loss._repr_html_()
    assert html.lstrip().startswith("<div") and "grad_loss" in html and "dw1" in html
