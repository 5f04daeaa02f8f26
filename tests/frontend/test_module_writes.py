"""Module-level arrays the module changes in place after their definition: the command line reads
the module without running it, so a compiled function reading such an array would use stale
values. It is refused at the change (file:line:col, the line, a caret, a hint); a module that
only reads its arrays compiles exactly as before, with the gradients its definitions give."""

import textwrap

import numpy as np
import pytest

from adcompiler import cli

from tests.cli.test_cli import import_path, write
from tests.cli.test_cli_inputs import numeric_grad as numeric

HEAD = '''
import numpy as np
import adcompiler as ad

W = np.array([1.0, 2.0])
'''
TAIL = '''

@ad.grad
def f(x):
    return np.sum(x * W)


def example_f():
    return (np.array([0.3, 0.4]),)
'''
HINT = ("hint: write the final values in its definition (np.array([...]) of literals), pass "
        "it to f as a parameter, or compute it inside the function")
HINT_CHANGED_BY = ("hint: write the final values in its definition (np.array([...]) of "
                   "literals), or compute it inside the function")

# name -> (code after the definition, line, column, the line shown, caret, what is said)
TOP_LEVEL = {
    "subscript": ("W[0] = 10.0\n", 5, 1, "W[0] = 10.0", "^^^^", ""),
    "fill": ("W.fill(3.0)\n", 5, 1, "W.fill(3.0)", "^" * 11, ""),
    "copyto": ("np.copyto(W, np.array([5.0, 6.0]))\n", 5, 1,
               "np.copyto(W, np.array([5.0, 6.0]))", "^" * 34, ""),
    "slice": ("W[:] = 7.0\n", 5, 1, "W[:] = 7.0", "^^^^", ""),
    "out": ("np.multiply(W, 2.0, out=W)\n", 5, 1, "np.multiply(W, 2.0, out=W)", "^" * 26, ""),
    "shape": ("W.shape = (2, 1)\n", 5, 1, "W.shape = (2, 1)", "^" * 7, ""),
    "alias": ("V = W\nV[1] = -1.0\n", 5, 5, "V = W", "    ^", ""),
    "loop": ("for i in range(2):\n    W[i] = 0.0\n", 6, 5, "W[i] = 0.0", "^^^^", ""),
    "call": ("print(W)\n", 5, 1, "print(W)", "^" * 8, ""),
}
FUNCTIONS = {
    "called": ("def g():\n    W[0] = 99.0\n\n\ng()\n", 6, 5, "W[0] = 99.0", "^^^^",
               "`g` stores into it here"),
    "ellipsis": ("def g():\n    W[...] = 1.0\n", 6, 5, "W[...] = 1.0", "^" * 6,
                 "`g` stores into it here"),
    "method": ("def g():\n    W.fill(1.0)\n", 6, 5, "W.fill(1.0)", "^" * 11,
               "`g` calls .fill() on it here"),
    "copyto": ("def g(v):\n    np.copyto(W, v)\n", 6, 5, "np.copyto(W, v)", "^" * 15,
               "`g` writes into it here with copyto()"),
    "augmented": ("def g():\n    W[1:] += 1.0\n", 6, 5, "W[1:] += 1.0", "^" * 5,
                  "`g` stores into it here"),
    "nested": ("def g():\n    W[0][1] = 1.0\n", 6, 5, "W[0][1] = 1.0", "^" * 7,
               "`g` stores into it here"),
    "out": ("def g(x):\n    return np.add(x, 1.0, out=W)\n", 6, 12,
            "return np.add(x, 1.0, out=W)", "       " + "^" * 21, "`g` writes into it here (out=)"),
    "sort_in_method": ("class C:\n    def m(self):\n        W.sort()\n", 7, 9, "W.sort()",
                       "^" * 8, "`m` calls .sort() on it here"),
    "local_alias": ("def g():\n    V = W[0:1]\n    V[0] = 3.0\n", 7, 5, "V[0] = 3.0", "^^^^",
                    "`g` stores into it here"),
    "passed": ("def h(a):\n    a *= 2.0\n\n\ndef g():\n    h(W)\n", 10, 5, "h(W)", "^^^^",
               "`g` passes it here to `h`, which changes it in place (line 6)"),
    "global": ("def g():\n    global W\n    W = np.zeros(2)\n", 7, 5, "W = np.zeros(2)", "^",
               "`g` rebinds it here (global W)"),
}


def _refused(tmp_path, capsys, text, command="compile", target=None):
    path = write(tmp_path, "m.py", text)
    args = [command, f"{path}:f" if target else str(path)]
    assert cli.main(args) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "all gradients agree" not in captured.out
    assert not (tmp_path / "m_grad.py").exists()
    return path, captured.err.splitlines()


@pytest.mark.parametrize("name", sorted(TOP_LEVEL))
def test_a_top_level_change_after_the_definition_is_refused_there(tmp_path, capsys, name):
    code, line, col, shown, caret, _ = TOP_LEVEL[name]
    path, (header, shown_line, caret_line, hint) = _refused(tmp_path, capsys,
                                                           HEAD + code + TAIL)
    assert header == (f"{path}:{line}:{col}: error: f reads `W`, a module-level array defined "
                      "at line 4, and this top-level statement may change it in place after "
                      "that: adcompiler reads m.py without running it, so f would be compiled "
                      "with the values of that definition")
    assert shown_line == "    " + shown and caret_line == "    " + caret
    assert hint == HINT


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_function_writing_into_the_array_is_refused_at_the_write(tmp_path, capsys, name):
    code, line, col, shown, caret, what = FUNCTIONS[name]
    text = HEAD.replace("[1.0, 2.0]", "[[1.0, 2.0]]") if name == "nested" else HEAD
    path, (header, shown_line, caret_line, hint) = _refused(tmp_path, capsys,
                                                           text + code + TAIL)
    assert header.startswith(f"{path}:{line}:{col}: error: f reads `W`, a module-level array "
                             f"defined at line 4, and {what}: adcompiler reads m.py without "
                             "running it"), header
    assert shown_line == "    " + shown and caret_line == "    " + caret
    assert hint.startswith(HINT_CHANGED_BY) and "pass it to f as an argument" in hint


@pytest.mark.parametrize("command", ["show", "check", "graph"])
def test_show_check_and_graph_refuse_it_too(tmp_path, capsys, command):
    path = write(tmp_path, "m.py", HEAD + "W[0] = 10.0\n" + TAIL)
    extra = ["-o", str(tmp_path / "g.dot")] if command == "graph" else []
    assert cli.main([command, f"{path}:f", *extra]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"{path}:5:1: error: f reads `W`")
    assert "ok" not in captured.out and not (tmp_path / "g.dot").exists()


def test_a_change_reached_through_a_helper_or_a_second_name_is_refused(tmp_path, capsys):
    path, lines = _refused(tmp_path, capsys, '''
        import numpy as np
        import adcompiler as ad

        W = V = np.array([1.0, 2.0])
        V[0] = 5.0


        def scaled(x):
            return x * W


        @ad.grad
        def f(x):
            return np.sum(scaled(x))


        def example_f():
            return (np.ones(2),)
        ''')
    assert lines[0].startswith(f"{path}:5:1: error: f reads `W` (through `scaled`), a "
                               "module-level array defined at line 4, and this top-level "
                               "statement may change it in place after that (as `V`, the same "
                               "object)")
    assert lines[1:3] == ["    V[0] = 5.0", "    ^^^^"]


def test_an_example_reading_a_changed_array_is_refused_before_it_runs(tmp_path, capsys):
    path, lines = _refused(tmp_path, capsys, '''
        import numpy as np
        import adcompiler as ad

        X0 = np.array([1.0, 2.0])
        X0 *= 3.0


        @ad.grad
        def f(x):
            return np.sum(x * x)


        def example_f():
            return (X0,)
        ''')
    # X0 *= 3.0 rebinds X0 at top level: the existing "not resolved" error, at the example
    assert "example_f() raised NameError" in lines[0]
    path, lines = _refused(tmp_path, capsys, '''
        import numpy as np
        import adcompiler as ad

        X0 = np.array([1.0, 2.0])
        X0.fill(3.0)


        @ad.grad
        def f(x):
            return np.sum(x * x)


        def example_f():
            return (X0,)
        ''')
    assert lines[0].startswith(f"{path}:5:1: error: example_f reads `X0`, a module-level array "
                               "defined at line 4")
    assert lines[0].endswith("so example_f would be run with the values of that definition")


def test_a_changed_list_is_refused_with_a_hint_for_lists(tmp_path, capsys):
    path, lines = _refused(tmp_path, capsys, '''
        import numpy as np
        import adcompiler as ad

        SCALES = [1.0, 2.0]
        SCALES.append(3.0)


        @ad.grad
        def f(x):
            return x * SCALES[0]


        def example_f():
            return (1.5,)
        ''')
    assert lines[0].startswith(f"{path}:5:1: error: f reads `SCALES`, a module-level list "
                               "defined at line 4")
    assert lines[3].startswith("hint: write the final values in its definition (a literal)")


def _compiled_gradient(tmp_path, capsys, text, x):
    path = write(tmp_path, "m.py", text)
    assert cli.main(["compile", str(path)]) == 0, capsys.readouterr().err
    module = import_path(tmp_path / "m_grad.py")
    return module, module.grad_f(x)


def test_reads_at_top_level_and_writes_elsewhere_still_compile(tmp_path, capsys):
    """Arithmetic, comparisons and .shape at top level; under the main guard; into a local or a
    parameter named W; into a copy; a row of a 1-d array is a number: none changes W."""
    module, g = _compiled_gradient(tmp_path, capsys, HEAD + textwrap.dedent('''
        W2 = W * 2.0
        N = W.shape[0]
        assert (W > 0).all() and W.ndim == 1 and -W is not W
        W.setflags(write=False)


        def local():
            W = np.zeros(2)
            W[0] = 1.0
            return W


        def parameter(W):
            W[0] = 1.0


        def copied(x):
            V = W.copy()
            V[0] = x
            s = W[0]
            s += x
            return V, s


        def fresh(v):
            v = v.copy()
            v[0] = 0.0
            return v


        def uses_fresh():
            return fresh(W)


        if __name__ == "__main__":
            W[0] = 100.0
        ''') + TAIL, np.array([0.3, 0.4]))
    np.testing.assert_array_equal(g, [1.0, 2.0])
    np.testing.assert_array_equal(module.W, [1.0, 2.0])
    assert module.f(np.array([1.0, 1.0])) == 3.0


def test_an_array_only_read_in_functions_compiles_as_before(tmp_path, capsys):
    module, g = _compiled_gradient(tmp_path, capsys, '''
        import numpy as np
        import adcompiler as ad

        W = np.array([[1.0, -2.0], [0.5, 3.0]])
        B = np.array([0.1, 0.2])


        def layer(x):
            return np.tanh(W @ x + B)


        @ad.grad
        def f(x):
            return np.sum(layer(x) ** 2)


        def example_f():
            return (np.array([0.3, -0.4]),)
        ''', np.array([0.3, -0.4]))
    x = np.array([0.3, -0.4])
    t = np.tanh(np.array([[1.0, -2.0], [0.5, 3.0]]) @ x + np.array([0.1, 0.2]))
    np.testing.assert_allclose(g, np.array([[1.0, -2.0], [0.5, 3.0]]).T @ (2 * t * (1 - t ** 2)),
                               rtol=1e-12)
    x2 = np.array([1.0, 2.0])
    np.testing.assert_allclose(module.grad_f(x2), numeric(module.f, x2), rtol=1e-6)


def test_an_array_changed_but_not_read_by_the_function_does_not_stop_it(tmp_path, capsys):
    module, g = _compiled_gradient(tmp_path, capsys, '''
        import numpy as np
        import adcompiler as ad

        SCRATCH = np.zeros(2)
        SCRATCH[0] = 1.0


        @ad.grad
        def f(x):
            return np.sum(x ** 3)


        def example_f():
            return (np.array([0.3, 0.4]),)
        ''', np.array([0.3, 0.4]))
    np.testing.assert_allclose(g, 3 * np.array([0.3, 0.4]) ** 2, rtol=1e-12)
