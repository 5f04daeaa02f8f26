"""Three gaps an audit of ``adcompiler compile`` found (issue 30): a standalone module's size
errors name a container's leaves as the user writes them (``params['b1']``, ``layer.W``,
``layers[0]``), not by the bodies' flattened parameters; a module-level literal's statement is
copied by slicing the file's lines (not by re-splitting the whole file per statement); a
function-body constant too large to write as a literal is a located error, in the user's words."""

import ast
import io
import textwrap

from adcompiler.aot import user_code
from adcompiler.cli.main import main
from tests.cli.test_cli import adcompiler, run_isolated, write

DICT_MODEL = '''
    import numpy as np
    import adcompiler as ad


    @ad.grad
    def loss(params, x):
        h = np.tanh(x @ params["W1"] + params["b1"])
        return np.sum(h ** 2)


    def example_loss():
        return {"W1": np.ones((2, 6)) * 0.1, "b1": np.zeros(6)}, np.ones((4, 2))
    '''

RECORD_MODEL = '''
    from typing import NamedTuple

    import numpy as np
    import adcompiler as ad


    class Layer(NamedTuple):
        W: np.ndarray
        b: np.ndarray


    @ad.grad(wrt=("p", "layers"))
    def loss(p, layers, x):
        h = np.tanh(x @ p.W + p.b)
        return np.sum((h @ layers[0]) ** 2) + np.sum(layers[1])


    def example_loss():
        return (Layer(np.ones((3, 4)) * 0.1, np.zeros(4)), [np.ones(4), np.ones(2)],
                np.ones((5, 3)))
    '''


def _first_line_of_error(tmp_path, module, call):
    """The first line of the TypeError ``call`` raises in a process without adcompiler."""
    return run_isolated(textwrap.dedent(f"""
        import numpy as np, {module}
        Layer = getattr({module}, "Layer", None)
        """) + textwrap.dedent(f"""
        try:
            {call}
        except TypeError as err:
            print(str(err).splitlines()[0])
        else:
            raise AssertionError("no TypeError")
        """), tmp_path).strip()


def test_a_dict_leaf_size_error_names_the_users_key(tmp_path):
    write(tmp_path, "dict_model.py", DICT_MODEL)
    done = adcompiler("compile", "dict_model.py", "-o", "dict_model_grad.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = _first_line_of_error(tmp_path, "dict_model_grad", "dict_model_grad.grad_loss("
                                "{'W1': np.ones((2, 5)), 'b1': np.ones(4)}, np.ones((3, 2)))")
    assert line == ("grad_loss(): inconsistent sizes: len(params['b1']) is 4 but "
                    "params['W1'].shape[1] is 5, and the function needs them equal (both are "
                    "d2)"), line
    assert "params_" not in line


def test_record_field_and_list_item_size_errors_name_them_as_written(tmp_path):
    write(tmp_path, "record_model.py", RECORD_MODEL)
    done = adcompiler("compile", "record_model.py", "-o", "record_model_grad.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    field = _first_line_of_error(tmp_path, "record_model_grad", "record_model_grad.grad_loss("
                                 "Layer(np.ones((3, 4)), np.ones(5)), [np.ones(4), np.ones(2)], "
                                 "np.ones((5, 3)))")
    assert "len(p.b) is 5 but p.W.shape[1] is 4" in field, field
    item = _first_line_of_error(tmp_path, "record_model_grad", "record_model_grad.grad_loss("
                                "Layer(np.ones((3, 4)), np.ones(4)), [np.ones(7), np.ones(2)], "
                                "np.ones((5, 3)))")
    assert "len(layers[0]) is 7 but" in item and "p.W.shape[1] is 4" in item, item
    assert "p_W" not in field + item and "layers_0" not in field + item


SEGMENTS = '''\
import numpy as np
NAME = "café ü"  # a comment after it
C = np.array([1.5, 2.5,
              3.5])   # and after a statement of two lines
if True: K = 2; J = 3
E = "é"; F = 1.0
D = {"é": 1.0,
     "b": 2.0}
'''


def test_a_statement_sliced_from_the_lines_is_get_source_segments_text():
    tree = ast.parse(SEGMENTS)
    lines = io.StringIO(SEGMENTS).readlines()
    nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.stmt, ast.expr))]
    assert len(nodes) > 20
    for node in nodes:
        assert user_code.segment(lines, node) == ast.get_source_segment(SEGMENTS, node), \
            ast.dump(node)


LITERAL_MODEL = '''
    import numpy as np
    import adcompiler as ad

    SCALE = 2.0  # é: a byte offset that is not a character's
    C = np.array([0.5, 1.5,
                  2.5, 3.5])
    NAME = "é"; D = np.eye(2)   # two statements on a line


    @ad.grad
    def loss(x):
        return np.sum(x * C[:3]) * SCALE + np.sum(D)


    def example_loss():
        return (np.ones(3),)
    '''


def test_module_level_statements_are_copied_without_resplitting_the_file(tmp_path, monkeypatch):
    """``ast.get_source_segment`` splits the whole file again per statement (80,000 floats at
    module level took 12 s to compile, 1 s now: benchmarks/compile_scaling.py)."""
    calls = []
    real = ast.get_source_segment
    monkeypatch.setattr(ast, "get_source_segment",
                        lambda *a, **k: calls.append(a) or real(*a, **k))
    model = write(tmp_path, "literal_model.py", LITERAL_MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    assert main(["compile", model.name, "-o", "literal_model_grad.py"]) == 0
    assert calls == []
    text = (tmp_path / "literal_model_grad.py").read_text()
    assert ("SCALE = 2.0\nC = np.array([0.5, 1.5,\n              2.5, 3.5])\nD = np.eye(2)\n"
            in text), text[:600]
    got = run_isolated("""
        import numpy as np, literal_model_grad
        print(literal_model_grad.grad_loss(np.ones(3)).tolist())
        """, tmp_path)
    assert got.strip() == "[1.0, 3.0, 5.0]"


def _body_literal(n, where="body"):
    """A module whose loss reads a literal of ``n`` floats: in its body, in a helper it calls,
    or at module level (annotated)."""
    values = ", ".join(repr(0.5 * i) for i in range(n))
    head = "import numpy as np\nimport adcompiler as ad\n\n"
    tail = "\n\ndef example_loss():\n    return (np.ones(3),)\n"
    if where == "module":
        return (head + f"C: np.ndarray = np.array([{values}])\n\n\n@ad.grad\ndef loss(x):\n"
                "    return np.sum(x * C[:3])\n" + tail)
    if where == "helper":
        return (head + f"\ndef table():\n    return np.array([[{values}]])\n\n\n@ad.grad\n"
                "def loss(x):\n    return np.sum(x * table()[0, :3])\n" + tail)
    return (head + f"\n@ad.grad\ndef loss(x):\n    c = np.array([{values}])\n"
            "    return np.sum(x * c[:3])\n" + tail)


def test_a_body_literal_over_the_limit_is_located_in_the_users_words(tmp_path):
    write(tmp_path, "big_body.py", _body_literal(10_001))
    done = adcompiler("compile", "big_body.py", "-o", "big_body_grad.py", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0].startswith("big_body.py:7:18: error: loss makes a constant array of shape "
                               "(10001,) in its body (10,001 float64 elements); a standalone "
                               "module writes a constant made in a function as a literal, up to "
                               "10,000 elements"), done.stderr
    assert lines[1] == "    c = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, " \
                       "5.0, 5.5, ...", lines[1]   # the 170,000-character line, cut
    assert lines[2] == "    " + " " * len("c = np.array(") + "^" * 64
    assert lines[3].startswith("hint: pass the array to the function as a parameter")
    assert "module-level literal (`C = np.array([...])` of numbers)" in lines[3]
    assert "_grad_loss" not in done.stderr and len(done.stderr) < 1000
    assert not (tmp_path / "big_body_grad.py").exists()


def test_a_literal_in_a_helper_is_located_in_the_helper(tmp_path):
    write(tmp_path, "big_helper.py", _body_literal(12_000, "helper"))
    done = adcompiler("compile", "big_helper.py", "-o", "big_helper_grad.py", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("big_helper.py:6:21: error: loss makes a constant array of "
                                  "shape (1, 12000) in the body of table, which it calls"), \
        done.stderr


def test_the_limit_itself_and_the_hints_module_level_literal_compile(tmp_path):
    """10,000 floats in the body are written as a literal; 12,000 at module level (annotated,
    as the hint allows) are copied as the user wrote them; both modules give the gradient."""
    for name, n, where in (("at_limit", 10_000, "body"), ("at_module", 12_000, "module")):
        write(tmp_path, f"{name}.py", _body_literal(n, where))
        done = adcompiler("compile", f"{name}.py", "-o", f"{name}_grad.py", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert "C: np.ndarray = np.array([0.0, 0.5," in (tmp_path / "at_module_grad.py").read_text()
    got = run_isolated("""
        import numpy as np, at_limit_grad, at_module_grad
        print(at_limit_grad.grad_loss(np.ones(3)).tolist(),
              at_module_grad.grad_loss(np.ones(3)).tolist())
        """, tmp_path)
    assert got.split() == ["[0.0,", "0.5,", "1.0]"] * 2


def test_a_constructor_of_literals_over_the_limit_is_located_at_its_call(tmp_path):
    write(tmp_path, "big_linspace.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def loss(x):
            w = np.linspace(0.0, 1.0, 4)
            c = np.linspace(0.0, 1.0, 10001)
            return np.sum(x * c[:3]) + np.sum(w)


        def example_loss():
            return (np.ones(3),)
        ''')
    done = adcompiler("compile", "big_linspace.py", "-o", "out.py", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[:3] == [
        "big_linspace.py:8:9: error: loss makes a constant array of shape (10001,) in its body "
        "(10,001 float64 elements); a standalone module writes a constant made in a function "
        "as a literal, up to 10,000 elements",
        "    c = np.linspace(0.0, 1.0, 10001)",
        "        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^"], done.stderr
