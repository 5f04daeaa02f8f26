"""Reading a function's source without tokenize (frontend/reading/source.py: source_lines): the same
definition inspect finds, or inspect's answer where the quick reading cannot be sure."""

import ast
import importlib.util
import inspect
import textwrap

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.frontend.reading.source import source_lines

MODULE = '''\
import numpy as np


def keep(f):
    return f


def plain(x):
    return np.sum(x * x)


@keep
@keep
def decorated(x):
    return x


def long_signature(
    x,
    y,
):
    # a comment at column 0 follows
# like this one
    return np.sum(x * y)


def column_zero_string(x):
    note = """
a line at column 0 inside a string
"""
    return np.sum(x * 2.0)


class Model:
    def method(self, x):
        return np.sum(x)


def outer():
    def inner(x):
        return np.sum(np.sin(x))
    return inner


def last(x):
    return np.sum(np.tanh(x))'''


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "user_module.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("user_module_for_source_tests", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def functions(mod):
    return [mod.plain, mod.decorated, mod.long_signature, mod.column_zero_string,
            mod.Model.method, mod.outer(), mod.last]


def test_the_same_definition_as_inspect(module):
    for fn in functions(module):
        got, first = source_lines(fn)
        want, want_first = inspect.getsourcelines(fn)
        assert first == want_first, fn.__name__
        parse = (lambda ls: ast.dump(ast.parse(textwrap.dedent("".join(ls)))))
        assert parse(got) == parse(want), fn.__name__


def test_compiled_gradients_of_those_functions(module):
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(ad.grad(module.plain)(x), 2 * x)
    np.testing.assert_allclose(ad.grad(module.long_signature)(x, x + 1), x + 1)
    np.testing.assert_allclose(ad.grad(module.column_zero_string)(x), np.full(3, 2.0))
    np.testing.assert_allclose(ad.grad(module.outer())(x), np.cos(x))
    np.testing.assert_allclose(ad.grad(module.last)(x), 1 - np.tanh(x) ** 2)


def test_a_cached_text_that_is_not_the_definition_is_a_located_error():
    """inspect reads a function's lines from linecache by line number: where another text is
    cached under its file name (an edited file not reloaded, a tool's own registration), the
    lines found are some other code, which must never be compiled as this function."""
    import linecache
    ns = {"np": np}
    linecache.cache["<edited>"] = (60, None, ["text\n", "def other(q):\n", "    return q\n",
                                              "x = 1\n", "y = 2\n", "z = 3\n"], "<edited>")
    exec(compile("\n\n\n\ndef h(x):\n    return np.sum(x * x)\n", "<edited>", "exec"), ns)
    try:
        with pytest.raises(ad.CompileError, match="the source read for 'h' at <edited>:2 is not "
                                                  "its definition") as err:
            ad.grad(ns["h"])(np.ones(2))
        assert "reload the module" in str(err.value)
    finally:
        del linecache.cache["<edited>"]
