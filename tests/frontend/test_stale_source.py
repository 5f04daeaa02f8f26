"""A file edited after its module was imported is never compiled in place of the function
Python runs (frontend/reading/freshness.py): the gradient is a located error until the module
is reloaded, the on-disk cache's key follows the code that runs, and the check raises nothing
for the code people write (closures, methods with private names and super(), nested defs,
comprehensions, annotations, decorators)."""

import importlib
import importlib.util
import os
import sys
import textwrap

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.frontend.reading.source import read_function
from adcompiler.runtime import cache

MODULE = textwrap.dedent('''\
    from __future__ import annotations

    import numpy as np
    import adcompiler as ad
    from numpy import sum as total


    def loss(x):
        return np.sum(x ** 2)


    @ad.grad
    def decorated(x):
        return total(np.tanh(x))


    def make(k):
        def scaled(x: np.ndarray) -> float:
            def square(z: np.ndarray):
                return z * z
            return np.sum(k * square(x)) + sum(float(i) for i in range(3))
        return scaled


    class Base:
        def energy(self, x):
            return np.sum(x)


    class Model(Base):
        def __init__(self):
            self.__scale = 2.0

        def energy(self, x):
            return self.__scale * np.sum(x ** 2) + super().energy(x)
    ''')

X = np.array([0.5, -1.0, 2.0])


@pytest.fixture
def user(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "stale_user_model.py"
    path.write_text(MODULE)
    module = importlib.import_module("stale_user_model")
    yield path, module
    sys.modules.pop("stale_user_model", None)


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_the_code_people_write_is_not_called_stale(user):
    _, m = user
    np.testing.assert_allclose(ad.grad(m.loss)(X), 2 * X)
    np.testing.assert_allclose(m.decorated(X), 1 - np.tanh(X) ** 2)
    np.testing.assert_allclose(ad.grad(m.make(3.0))(X), 6 * X)
    # a method reading a private name (mangled to _Model__scale) and calling super()
    assert read_function(m.Model.energy).tree.name == "energy"
    assert read_function(m.Model.__init__).tree.name == "__init__"


def test_an_edit_after_import_is_a_located_error_until_reloaded(user):
    path, m = user
    _edit(path, "return np.sum(x ** 2)", "return np.sum(x ** 3)")
    for transform in (ad.grad, ad.value_and_grad):
        with pytest.raises(ad.CompileError) as info:
            transform(m.loss)(X)
        assert "changed after its module was imported" in str(info.value)
        assert info.value.filename == str(path)
        assert info.value.lineno == 8                                 # the def
        assert "reload the module" in str(info.value)
    assert m.loss(X) == pytest.approx(np.sum(X ** 2))               # Python runs the old one
    reloaded = importlib.reload(m)
    np.testing.assert_allclose(ad.grad(reloaded.loss)(X), 3 * X ** 2)


def test_an_edit_that_leaves_the_code_alone_is_not_an_error(user):
    path, m = user
    _edit(path, "return np.sum(x ** 2)", "return np.sum(x ** 2)  # squared, on purpose")
    np.testing.assert_allclose(ad.grad(m.loss)(X), 2 * X)


def test_a_method_edited_after_import_is_an_error(user):
    path, m = user
    _edit(path, "self.__scale * np.sum(x ** 2)", "self.__scale * np.sum(x ** 4)")
    with pytest.raises(ad.CompileError, match="changed after its module was imported"):
        read_function(m.Model.energy)


def test_a_closure_edited_after_import_is_an_error(user):
    path, m = user
    _edit(path, "return z * z", "return z * z * z")
    with pytest.raises(ad.CompileError, match="changed after its module was imported"):
        ad.grad(m.make(3.0))(X)


def test_the_cache_key_follows_the_code_that_runs(user, monkeypatch, tmp_path):
    monkeypatch.setenv("ADCOMPILER_CACHE_DIR", str(tmp_path / "cache"))
    path, m = user
    old = m.loss
    before = cache.key_for(old, "grad", ("x",), ())
    _edit(path, "return np.sum(x ** 2)", "return np.sum(x ** 3)")
    reloaded = importlib.reload(m).loss
    stale = cache.key_for(old, "grad", ("x",), ())       # the new text, the old code
    fresh = cache.key_for(reloaded, "grad", ("x",), ())  # the new text, its own code
    assert len({before.digest, stale.digest, fresh.digest}) == 3


def test_a_file_rewritten_at_the_same_size_and_time_is_read_again(tmp_path, monkeypatch):
    """linecache trusts a file's size and time stamp: a script written again within the same
    second at the same size, then imported under another name, keeps its old lines there.
    The function is fresh; the lines are not: they are read again, not called stale."""
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "rewritten_script.py"
    path.write_text("import numpy as np\n\n\ndef f(x):\n    return np.sum(x ** 2)\n")
    stamp = path.stat().st_mtime_ns
    first = importlib.import_module("rewritten_script")
    np.testing.assert_allclose(ad.grad(first.f)(X), 2 * X)          # caches its lines
    path.write_text("import numpy as np\n\n\ndef f(x):\n    return np.sum(x ** 3)\n")
    os.utime(path, ns=(stamp, stamp))                               # same size, same time
    spec = importlib.util.spec_from_file_location("rewritten_script_2", path)
    second = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(second)
    np.testing.assert_allclose(ad.grad(second.f)(X), 3 * X ** 2)
    sys.modules.pop("rewritten_script", None)
