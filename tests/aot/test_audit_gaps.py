"""Three gaps an audit of ``adcompiler compile`` found (issue 30): a standalone module's size
errors name a container's leaves as the user writes them (``params['b1']``, ``layer.W``,
``layers[0]``), not by the bodies' flattened parameters; a module-level literal's statement is
copied by slicing the file's lines (not by re-splitting the whole file per statement); a
function-body constant too large to write as a literal is a located error, in the user's words."""

import textwrap

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
