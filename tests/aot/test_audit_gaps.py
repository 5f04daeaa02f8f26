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
