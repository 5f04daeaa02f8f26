"""The on-disk cache: keys follow everything the code depends on, entries reload exactly, a
corrupt entry is rebuilt, writes are atomic, and arrays from globals stay bound, never copied."""

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.runtime import cache

ROOT = Path(__file__).resolve().parents[2]
MODULE = '''
import numpy as np

W = np.array([[1.0, 2.0], [3.0, -1.0]])
SCALE = 2.0


def helper(z):
    return np.tanh(z) * SCALE


def loss(x, w):
    return (helper(x @ W) * w).sum()
'''


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("ADCOMPILER_CACHE_DIR", str(directory))
    monkeypatch.delenv("ADCOMPILER_CACHE", raising=False)
    return directory


def load(tmp_path, text=MODULE, name="user_model"):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


X = np.linspace(0.1, 0.6, 6).reshape(3, 2)


def entries(directory):
    return sorted(p for p in directory.glob("*.npz") if not p.name.startswith("."))


def test_a_second_compilation_loads_the_entry(cache_dir, tmp_path):
    user = load(tmp_path)
    first = ad.grad(user.loss, wrt=("x", "w"))
    expected = first(X, 0.5)
    assert len(entries(cache_dir)) == 1
    second = ad.grad(user.loss, wrt=("x", "w"))
    got = second(X, 0.5)
    assert isinstance(second.ir, cache.LazyGraph)          # loaded, not compiled
    assert second.source == first.source and str(second.ir) == str(first.ir)
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[1] == expected[1] and type(got[1]) is float
    assert [p.name for p in second.ir.params] == ["x", "w"]  # compiles the graph on demand


def test_global_arrays_stay_bound_after_loading(cache_dir, tmp_path):
    user = load(tmp_path)
    ad.grad(user.loss)(X, 0.5)                      # stored
    loaded = ad.grad(user.loss)
    before = loaded(X, 0.5)
    assert isinstance(loaded.ir, cache.LazyGraph)
    user.W[0, 0] = 5.0   # the compiler binds globals, never copies them: the change is seen
    compiled_now = ad.grad(user.loss)(X, 0.5)       # a new key: compiled afresh
    np.testing.assert_allclose(loaded(X, 0.5), compiled_now, rtol=1e-15)
    assert not np.allclose(before, compiled_now)


def test_the_key_follows_source_globals_options_and_signature(cache_dir, tmp_path):
    user = load(tmp_path)
    base = cache.key_for(user.loss, "grad", ("x",), ("f64", (3, 2)))
    assert base.digest == cache.key_for(user.loss, "grad", ("x",), ("f64", (3, 2))).digest
    changed = [cache.key_for(user.loss, "grad", ("w",), ("f64", (3, 2))),
               cache.key_for(user.loss, "value_and_grad", ("x",), ("f64", (3, 2))),
               cache.key_for(user.loss, "grad", ("x",), ("f64", (4, 2))),
               cache.key_for(user.loss, "grad", ("x",), ("f64", (3, 2)), backend="cupy")]
    user.W[1, 1] = 7.0                                      # an array read from a global
    changed.append(cache.key_for(user.loss, "grad", ("x",), ("f64", (3, 2))))
    edited = load(tmp_path, MODULE.replace("SCALE = 2.0", "SCALE = 3.0"), "user_model2")
    changed.append(cache.key_for(edited.loss, "grad", ("x",), ("f64", (3, 2))))
    helper = load(tmp_path, MODULE.replace("np.tanh(z)", "np.sin(z)"), "user_model3")
    changed.append(cache.key_for(helper.loss, "grad", ("x",), ("f64", (3, 2))))
    digests = [base.digest] + [k.digest for k in changed]
    assert len(set(digests)) == len(digests)


def test_unfingerprintable_globals_are_not_cached(cache_dir, tmp_path):
    user = load(tmp_path, MODULE + "\nclass Thing:\n    pass\n\n\nTHING = Thing()\n\n\n"
                "def uses(x):\n    return (x * SCALE).sum() if THING else 0.0\n")
    assert cache.key_for(user.uses, "grad", ("x",), ()) is None


def test_a_corrupt_entry_is_ignored_and_rebuilt(cache_dir, tmp_path):
    user = load(tmp_path)
    expected = ad.grad(user.loss)(X, 0.5)
    (entry,) = entries(cache_dir)
    for garbage in (b"not a zip file", entry.read_bytes()[:100], b""):
        entry.write_bytes(garbage)
        again = ad.grad(user.loss)
        np.testing.assert_array_equal(again(X, 0.5), expected)
        assert not isinstance(again.ir, cache.LazyGraph)   # rebuilt
        assert entries(cache_dir) == [entry]
        with np.load(entry, allow_pickle=False) as data:    # and rewritten whole
            assert "__source__" in data.files
    assert not list(cache_dir.glob(".tmp-*"))               # no temporary left behind


def test_an_entry_replaced_by_a_directory_is_rebuilt(cache_dir, tmp_path):
    user = load(tmp_path)
    expected = ad.grad(user.loss)(X, 0.5)
    (entry,) = entries(cache_dir)
    entry.unlink()
    (entry / "inside").mkdir(parents=True)                 # a directory where the file was
    (entry / "inside" / "note.txt").write_text("made by another tool")
    again = ad.grad(user.loss)
    np.testing.assert_array_equal(again(X, 0.5), expected)
    assert entry.is_file()                                  # stored again, as a file
    reloaded = ad.grad(user.loss)
    np.testing.assert_array_equal(reloaded(X, 0.5), expected)
    assert isinstance(reloaded.ir, cache.LazyGraph)         # and used: the cache helps again
    entry.unlink()
    entry.mkdir()
    assert cache.clear() == 1 and not entry.exists()        # clear takes it too


def test_an_entry_for_another_key_is_not_used(cache_dir, tmp_path):
    user = load(tmp_path)
    ad.grad(user.loss)(X, 0.5)
    (entry,) = entries(cache_dir)
    k = cache.key_for(user.loss, "grad", ("w",), ("other",))
    entry.rename(cache_dir / f"{k.digest}.npz")             # the stored key text differs
    assert cache.get(k) is None


def test_the_cache_can_be_turned_off(cache_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    user = load(tmp_path)
    ad.grad(user.loss)(X, 0.5)
    assert not entries(cache_dir)


def test_default_directory_is_the_user_cache_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("ADCOMPILER_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "adcompiler"


def cli(*args, env_dir):
    env = dict(os.environ, ADCOMPILER_CACHE_DIR=str(env_dir))
    return subprocess.run([sys.executable, "-m", "adcompiler", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_command_line_survives_a_corrupt_entry_and_manages_the_cache(tmp_path):
    directory = tmp_path / "cli-cache"
    target = f"{ROOT / 'samples' / 'mlp.py'}:loss"
    first = cli("show", target, env_dir=directory)
    assert first.returncode == 0 and len(entries(directory)) == 1
    entries(directory)[0].write_bytes(b"\x00" * 64)
    second = cli("show", target, env_dir=directory)
    assert second.returncode == 0 and second.stdout == first.stdout
    assert "Traceback" not in second.stderr
    info = cli("cache", "info", env_dir=directory)
    assert f"directory: {directory}" in info.stdout and "entries:   1" in info.stdout
    (directory / "keep.txt").write_text("not ours")
    cleared = cli("cache", "clear", env_dir=directory)
    assert cleared.stdout.startswith("removed 1 entries")
    assert not entries(directory) and (directory / "keep.txt").exists()


def test_cache_writes_are_atomic(cache_dir, tmp_path, monkeypatch):
    """A write that fails before its rename leaves neither a torn entry nor its temporary."""
    user = load(tmp_path)

    def crash(src, dst):
        raise OSError("simulated crash")
    monkeypatch.setattr(cache.os, "replace", crash)
    ad.grad(user.loss)(X, 0.5)                 # the failed write does not fail compilation
    assert not entries(cache_dir) and not list(cache_dir.glob(".tmp-*"))


def test_keys_are_identical_across_processes(tmp_path):
    path = tmp_path / "user_model.py"
    path.write_text(MODULE)
    script = textwrap.dedent(f"""
        import importlib.util
        from adcompiler.runtime import cache
        spec = importlib.util.spec_from_file_location("m", {str(path)!r})
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        print(cache.key_for(m.loss, "grad", ("x",), ("f64", (3, 2))).digest)
    """)
    outs = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env={"PYTHONHASHSEED": seed, "ADCOMPILER_CACHE_DIR": str(tmp_path)},
                           check=True).stdout for seed in ("1", "2")}
    assert len(outs) == 1


@pytest.mark.parametrize("platform, env, expected", [
    ("linux", {}, "{home}/.cache/adcompiler"),
    ("linux", {"XDG_CACHE_HOME": "/xdg"}, "/xdg/adcompiler"),
    ("darwin", {}, "{home}/Library/Caches/adcompiler"),
    ("win32", {"LOCALAPPDATA": "C:/Users/u/AppData/Local"},
     "C:/Users/u/AppData/Local/adcompiler/Cache"),
    ("linux", {"ADCOMPILER_CACHE_DIR": "/mine"}, "/mine"),
])
def test_the_cache_directory_follows_the_platform(monkeypatch, tmp_path, platform, env,
                                                  expected):
    for name in ("ADCOMPILER_CACHE_DIR", "XDG_CACHE_HOME", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(sys, "platform", platform)
    assert cache.cache_dir() == Path(expected.format(home=tmp_path))


def test_the_cache_directory_is_platformdirs_own_here(monkeypatch):
    platformdirs = pytest.importorskip("platformdirs")
    monkeypatch.delenv("ADCOMPILER_CACHE_DIR", raising=False)
    assert cache.cache_dir() == Path(platformdirs.user_cache_dir("adcompiler", appauthor=False))
