"""Command-line defects fixed together: ``graph -o`` never overwrites without ``--force`` (and
never its module), ``compile`` and ``check`` go on past a function that fails, finding nothing
to compile is an error, ``check``'s summary claims only the comparisons that ran, marked methods
get a located message, and a constant index raises the smallest size a compiled body takes."""

import ast
import os

import numpy as np
import pytest

from adcompiler import cli
from adcompiler.cli import check as cli_check
from adcompiler.checking import near_examples as gradcheck
from adcompiler.frontend.reading.module import load_module
from adcompiler.checking.comparison import InputCheck
from adcompiler.aot.sizedeps import least_size

from tests.cli.test_cli import SAMPLES, import_path, write

SINC = "`np.i0` has no derivative rule in adcompiler"

THREE = '''
    import numpy as np
    import adcompiler as ad


    @ad.grad
    def good(x):
        return np.sum(x * x)


    @ad.grad
    def bad(x):
        return np.sum(np.i0(x))


    @ad.value_and_grad
    def good2(x):
        return np.sum(np.sin(x))


    def example_good():
        return (np.ones(3),)


    def example_bad():
        return (np.ones(3),)


    def example_good2():
        return (np.ones(3),)
'''


def run(capsys, *args):
    """``(exit status, stdout, stderr)`` of the command line, run in this process."""
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


# ---- 1. graph -o never overwrites without --force, and never its module ------------------------
def test_graph_refuses_an_existing_file_unless_forced(tmp_path, capsys):
    module = write(tmp_path, "three.py", THREE)
    mine = tmp_path / "g.dot"
    mine.write_text("my notes\n")
    code, _, err = run(capsys, "graph", f"{module}:good", "-o", mine)
    assert code == 2 and mine.read_text() == "my notes\n"
    assert f"error: {mine} already exists: graph does not overwrite a file unless told to" in err
    assert f"hint: pass --force to overwrite {mine}, or give -o another file name, such as " \
           "good.dot" in err
    code, _, err = run(capsys, "graph", f"{module}:good", "-o", mine, "--force")
    assert code == 0 and err == f"wrote {mine}\n"
    assert mine.read_text().startswith("digraph") and "cluster_backward" in mine.read_text()


def test_graph_never_writes_over_its_module_even_with_force(tmp_path, capsys):
    module = write(tmp_path, "model.dot", THREE)     # a module named like a drawing
    os.symlink("model.dot", tmp_path / "link.dot")
    before = module.read_text()
    for out in (module, tmp_path / "link.dot", tmp_path / "sub" / ".." / "model.dot"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        code, _, err = run(capsys, "graph", f"{module}:good", "-o", out, "--force")
        assert code == 2 and module.read_text() == before
        assert f"error: the output {out} is the input module {module}: writing it would " \
               "replace your source" in err
    assert os.path.islink(tmp_path / "link.dot")


def test_graph_checks_the_format_before_compiling(tmp_path, capsys):
    module = write(tmp_path, "three.py", THREE)
    code, _, err = run(capsys, "graph", f"{module}:bad", "-o", tmp_path / "g.txt")
    assert code == 2 and SINC not in err   # refused before compiling
    assert "cannot draw to" in err and "must end in .dot, .svg or .png (such as bad.dot)" in err


# ---- 2. compile (and check) go on past a function that fails -----------------------------------
def test_compile_writes_the_functions_that_compile_and_names_those_left_out(tmp_path, capsys):
    module = write(tmp_path, "three.py", THREE)
    code, _, err = run(capsys, "compile", module)
    assert code == 2
    assert f"{module}:12:19: error: {SINC}\n    return np.sum(np.i0(x))\n" \
           "                  ^^^^^\nhint: " in err
    out = tmp_path / "three_grad.py"
    assert f"wrote {out}: grad_good (1 signature, any sizes), value_and_grad_good2 " \
           "(1 signature, any sizes)" in err
    assert f"left out of {out}, as they failed to compile (errors above): bad" in err
    assert err.index("error: `np.i0`") < err.index("wrote")
    text = out.read_text()
    assert "Left out, as they failed to compile (run the command above for the errors): bad " \
           "(line 11)." in text[:text.index('"""', 3)]
    m = import_path(out)
    assert not hasattr(m, "grad_bad")
    np.testing.assert_allclose(m.grad_good(np.array([1.0, 2.0, -3.0])), [2.0, 4.0, -6.0])
    value, g = m.value_and_grad_good2(np.array([0.0, 1.0]))
    np.testing.assert_allclose([value, *g], [np.sin(1.0), 1.0, np.cos(1.0)])


def test_compile_writes_nothing_when_no_function_compiles(tmp_path, capsys):
    module = write(tmp_path, "bad.py", THREE.replace("np.sum(x * x)", "np.sum(np.i0(x))")
                   .replace("np.sum(np.sin(x))", "np.sum(np.i0(x))"))
    code, _, err = run(capsys, "compile", module)
    assert code == 2 and err.count(f"error: {SINC}") == 3
    assert f"adcompiler: error: {module}: none of good, bad, good2 compiled (errors above): " \
           "nothing written" in err
    assert not (tmp_path / "bad_grad.py").exists()


def test_a_directory_counts_a_module_compiled_in_part(tmp_path, capsys):
    write(tmp_path, "three.py", THREE)
    write(tmp_path, "plain.py", "def helper(x):\n    return x\n")
    code, _, err = run(capsys, "compile", tmp_path)
    assert code == 2 and (tmp_path / "three_grad.py").exists()
    assert err.rstrip().endswith("compiled 1 of 2 modules (1 with functions left out, 0 failed, "
                                 "1 without marked functions)")


def test_check_goes_on_past_a_function_that_fails(tmp_path, capsys):
    module = write(tmp_path, "three.py", THREE)
    code, out, err = run(capsys, "check", module)
    assert code == 2 and f"{module}:12:19: error: {SINC}" in err
    checked = [ln.split()[0] for ln in out.splitlines() if ln.startswith(str(module))]
    assert checked == [f"{module}:good", f"{module}:good2"]
    assert out.splitlines()[-2:] == [
        "not checked, as they failed to compile (errors above): bad",
        "the other gradients agree with finite differences and the dynamic tape"]


# ---- 3. nothing to compile is an error ----------------------------------------------------------
def test_an_empty_directory_is_an_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "compile", tmp_path / "empty")
    assert code == 2 and err == (f"adcompiler: error: nothing to compile: {tmp_path / 'empty'} "
                                 "holds no Python modules (.py files)\n")


def test_modules_without_marked_functions_are_an_error(tmp_path, capsys):
    write(tmp_path, "plain.py", "def helper(x):\n    return x\n")
    code, _, err = run(capsys, "compile", tmp_path)
    assert code == 2 and not (tmp_path / "plain_grad.py").exists()
    assert "compiled 0 of 1 module (0 failed, 1 without marked functions)\n" in err
    assert err.endswith(f"adcompiler: error: nothing to compile: no module under {tmp_path} "
                        "marks a function with @adcompiler.grad, value_and_grad, vjp or jvp\n")


def test_a_directory_of_outputs_only_and_an_empty_one_beside_a_module(tmp_path, capsys):
    (tmp_path / "src").mkdir()
    write(tmp_path / "src", "three.py", THREE)
    assert run(capsys, "compile", tmp_path / "src")[0] == 2      # bad fails, the rest written
    (tmp_path / "src" / "three.py").unlink()
    code, _, err = run(capsys, "compile", tmp_path / "src")
    assert code == 2 and f"{tmp_path / 'src'} holds only modules adcompiler compile wrote " \
                         "(three_grad.py)" in err
    (tmp_path / "empty").mkdir()
    seed = tmp_path / "seed_f.py"
    seed.write_text((SAMPLES / "seed_f.py").read_text())
    code, _, err = run(capsys, "compile", seed, tmp_path / "empty")
    assert code == 0 and (tmp_path / "seed_f_grad.py").exists()
    assert f"adcompiler: warning: {tmp_path / 'empty'} holds no Python modules (.py files): " \
           "nothing to compile there" in err


# ---- 4. check's summary claims only the comparisons that ran ------------------------------------
def test_check_says_where_the_tape_was_not_compared(capsys):
    code, out, _ = run(capsys, "check", SAMPLES / "seed_f.py")
    assert code == 0
    assert out.splitlines()[-2:] == [
        "not compared with the dynamic tape: f (the tape could not run it: RuntimeError, above)",
        "all gradients agree with finite differences (the dynamic tape was not compared)"]


def test_check_of_a_jvp_and_a_gradient_names_the_one_the_tape_compared(tmp_path, capsys):
    module = write(tmp_path, "mixed.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def g(x):
            return np.sum(np.tanh(x))


        @ad.jvp(wrt="x")
        def t(x):
            return np.sin(x)


        def example_g():
            return (np.linspace(0.1, 1.0, 4),)


        def example_t():
            return (np.linspace(0.1, 1.0, 4),)
        ''')
    code, out, _ = run(capsys, "check", module)
    assert code == 0
    assert "  (against finite differences along the tangent only: the dynamic tape takes " \
           "gradients, not jvps)" in out
    assert out.splitlines()[-2:] == [
        "not compared with the dynamic tape: t (a jvp: its tangent is compared with finite "
        "differences only)",
        "all gradients agree with finite differences, and with the dynamic tape where it was "
        "compared (g)"]


def test_a_failure_without_the_tape_does_not_claim_the_tape(monkeypatch, capsys):
    monkeypatch.setattr(gradcheck, "EPS", 0.2)  # differences this coarse are wrong
    code, out, _ = run(capsys, "check", SAMPLES / "seed_f.py")
    assert code == 1
    assert out.splitlines()[-1] == ("FAILED: 2 gradients disagree with finite differences, the "
                                    "dynamic tape not compared (with finite differences: x1 of "
                                    "f, x2 of f)")


def test_the_summary_names_each_comparison_that_failed():
    def row(name, what, vs_numerical, tolerance, vs_tape=float("nan")):
        return InputCheck(name, None, None, None, vs_numerical, vs_tape, False, tolerance, what)
    rows = [row("W", "float64[2]", 1e-2, 1e-5, vs_tape=0.0),
            row("b", "float64[2]", 0.0, 1e-5, vs_tape=1e-2), row("value", "", 1.0, 1e-6)]
    text = cli_check.summary([("loss", rows[0]), ("loss", rows[1]), ("vg", rows[2])],
                             ["loss", "vg"], {})
    assert text == ("FAILED: 3 gradients disagree with finite differences or the dynamic tape "
                    "(the value of vg differs from the function's; with finite differences: W of "
                    "loss; with the dynamic tape: b of loss)")
    assert cli_check.summary([], ["loss"], {"t": "a jvp"}).splitlines() == [
        "not compared with the dynamic tape: t (a jvp)",
        "all gradients agree with finite differences, and with the dynamic tape where it was "
        "compared (loss)"]


# ---- 5. marked methods get a located message ----------------------------------------------------
METHODS = '''
    import numpy as np
    from adcompiler import grad as g


    class Model:
        scale = 2.0

        @g(wrt="x")
        def loss(self, x):
            return np.sum(x * self.scale)
'''


def test_a_module_whose_only_marked_code_is_a_method_says_so_at_its_line(tmp_path, capsys):
    module = write(tmp_path, "model.py", METHODS)
    for args in (("compile", module), ("check", module), ("show", f"{module}:Model.loss"),
                 ("show", f"{module}:loss"), ("graph", f"{module}:loss", "-o",
                                              tmp_path / "g.dot")):
        code, _, err = run(capsys, *args)
        assert code == 2 and "no function marked" not in err
        assert err.startswith(
            f"{module}:8:6: error: Model.loss is a method marked @adcompiler.grad: the command "
            "line compiles module-level functions only, not methods (yet)\n"
            '    @g(wrt="x")\n     ^^^^^^^^^^\nhint: move the code into a module-level function '
            "taking what it reads from self as parameters"), args
    assert not (tmp_path / "model_grad.py").exists() and not (tmp_path / "g.dot").exists()


def test_a_marked_method_beside_functions_is_noted_where_it_is(tmp_path, capsys):
    module = write(tmp_path, "both.py", METHODS + '''

    @g
    def f(x):
        return np.sum(x ** 3)


    def example_f():
        return (np.ones(2),)
    ''')
    code, _, err = run(capsys, "compile", module)
    out = tmp_path / "both_grad.py"
    assert code == 0 and out.exists()
    assert f"{module}:8:6: note: Model.loss is a method marked @adcompiler.grad, left out of " \
           f"{out}: the command line compiles module-level functions only; move its code into " \
           "a module-level function marked @adcompiler.grad and call it from the method" in err
    code, stdout, _ = run(capsys, "check", module)
    assert code == 0 and f"{module}:8:6: note: Model.loss is a method marked " \
                         "@adcompiler.grad, not checked:" in stdout


def test_an_unmarked_method_named_as_class_dot_method_is_located(tmp_path, capsys):
    module = write(tmp_path, "plain.py", '''
        import numpy as np


        class Model:
            def loss(self, x):
                return np.sum(x)
        ''')
    code, _, err = run(capsys, "show", f"{module}:Model.loss")
    assert code == 2 and err.startswith(f"{module}:5:5: error: Model.loss is a method: the "
                                        "command line works on module-level functions only")
    code, _, err = run(capsys, "show", f"{module}:Model.other")
    assert code == 2 and f"({module} has no method Model.other)" in err


# ---- 6. a constant index raises the smallest size ----------------------------------------------
def test_the_least_size_counts_constant_indices(tmp_path):
    module = load_module(str(write(tmp_path, "indices.py", '''
        import numpy as np

        K = 4

        def third(x):
            return x[2]

        def from_the_end(x):
            return x[-3] * x[-1]

        def first(x):
            return x[0] + x[1] + x[-2]

        def column(x):
            return x[:, K].sum() + x[0, 1]

        def ranks(x):
            return x.shape[3] + np.shape(x)[2] + x[..., 0].sum()

        def calls(x):
            return third(x) + first(x)
        ''')))
    got = {name: least_size(module, name)
           for name in ("third", "from_the_end", "first", "column", "ranks", "calls")}
    assert got == {"third": 3, "from_the_end": 3, "first": 2, "column": 5, "ranks": 2,
                   "calls": 3}


def test_a_compiled_index_takes_only_the_sizes_it_fits(tmp_path, capsys):
    module = write(tmp_path, "idx.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def f(x):
            return x[2] * np.sum(x)


        def example_f():
            return (np.ones(5),)
        ''')
    assert run(capsys, "compile", module)[0] == 0
    out = tmp_path / "idx_grad.py"
    assert "# grad of f for (x: float64[d1])\n# d1: any size of at least 3\n" in out.read_text()
    m = import_path(out)
    np.testing.assert_allclose(m.grad_f(np.array([1.0, 2.0, 3.0])), [3.0, 3.0, 9.0])
    with pytest.raises(TypeError, match=r"\(a named size is any size of at least 3; "):
        m.grad_f(np.array([1.0, 2.0]))   # was an IndexError inside the body


def test_an_example_below_the_least_size_keeps_its_own_body(tmp_path, capsys):
    module = write(tmp_path, "pair.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def f(x, y):
            z = x * 1.0   # a local's index: which size it bounds is not known, so all are
            return z[2] * np.sum(y * y)


        def example_f():
            return (np.ones(5), np.ones(2))
        ''')
    code, _, err = run(capsys, "compile", module)
    assert code == 0 and "grad_f (2 signatures, any sizes)" in err
    assert "  note: grad_f keeps a body for its example (x: float64[5], y: float64[2]): its " \
           "body for other sizes takes d1, d2: any sizes of at least 3 only (a constant index " \
           "or slice bound in f, not of a parameter's own, bounds every size)" in err
    m = import_path(tmp_path / "pair_grad.py")
    np.testing.assert_allclose(m.grad_f(np.arange(5.0), np.array([1.0, 2.0])),
                               [0.0, 0.0, 5.0, 0.0, 0.0])                      # the example
    np.testing.assert_allclose(m.grad_f(np.arange(4.0), np.ones(3)), [0.0, 0.0, 3.0, 0.0])
    tree = ast.parse((tmp_path / "pair_grad.py").read_text())
    assert {n.name for n in tree.body if isinstance(n, ast.FunctionDef)} >= {"_grad_f_1",
                                                                              "_grad_f_2"}
