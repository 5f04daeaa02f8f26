"""The on-disk cache of compiled gradients: ``fetch(key, build)`` loads a stored one, or builds it.

Invariants: an entry is found only under the digest of everything its code depends on (the
source of the function and of what it reads: functions, constants, arrays by content; the mode,
``wrt``, the input signature, the backend; adcompiler's own sources and version, Python's and
NumPy's version), so a stale entry is never used; writes are atomic (a temporary file, then
``os.replace``); an unreadable or corrupt entry is a miss, rebuilt and overwritten; arrays the
code reads from the user's globals or closures are rebound to the live objects on load (bound,
never copied), as the compiler binds them. ``ADCOMPILER_CACHE=0`` turns the cache off;
``ADCOMPILER_CACHE_DIR`` moves it (default: ``$XDG_CACHE_HOME/adcompiler``, else
``~/.cache/adcompiler``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import sys
import tempfile
import types
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..backends import check_modes, numexpr_chains
from ..ir import sizing
from ..frontend.reading.freshness import code_shape
from ..frontend.reading.source import source_lines
from ..version import __version__
from .compile import Compiled, load_function

BACKEND = "numpy"
_SUFFIX = ".npz"
_NAMESPACE = {"np", "cp", "math", "__name__", "__builtins__"}
_MODULES = ("numpy", "math", "cupy", "adcompiler")


# ---- where, and whether ----------------------------------------------------------------------
def enabled() -> bool:
    return os.environ.get("ADCOMPILER_CACHE", "1").strip().lower() not in ("0", "false", "no",
                                                                           "off")


def cache_dir() -> Path:
    """``$ADCOMPILER_CACHE_DIR``, else the platform's user cache directory, as platformdirs'
    ``user_cache_dir("adcompiler", appauthor=False)`` names it (written out here to keep the
    run-time dependencies to numpy, sympy and astor): ``$XDG_CACHE_HOME/adcompiler`` or
    ``~/.cache/adcompiler`` on Linux and other Unix, ``~/Library/Caches/adcompiler`` on macOS,
    ``%LOCALAPPDATA%\\adcompiler\\Cache`` on Windows."""
    if os.environ.get("ADCOMPILER_CACHE_DIR"):
        return Path(os.environ["ADCOMPILER_CACHE_DIR"])
    home = Path(os.path.expanduser("~"))
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(local) / "adcompiler" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "adcompiler"
    return Path(os.environ.get("XDG_CACHE_HOME", "").strip() or home / ".cache") / "adcompiler"


@lru_cache(maxsize=1)
def compiler_fingerprint() -> str:
    """adcompiler's version and a digest of its own sources (templates included): editing the
    compiler invalidates every entry."""
    from ..templates import ops as templates_ops
    digest = hashlib.sha256()
    roots = [Path(__file__).resolve().parents[1], Path(templates_ops.__file__).resolve().parent]
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return (f"adcompiler {__version__} {digest.hexdigest()[:16]}; python {sys.version_info[:3]}; "
            f"numpy {np.__version__}")


# ---- keys ------------------------------------------------------------------------------------
@dataclass
class Key:
    digest: str
    text: str
    live: dict = field(default_factory=dict)   # label -> array read from a global or closure


class _Uncachable(Exception):
    """The function reads something whose content cannot be fingerprinted."""


def key_for(fn, mode, wrt, signature, backend=BACKEND):
    """The cache key of ``mode`` of ``fn`` for this signature, or None when it cannot be cached."""
    if not enabled():
        return None
    parts, live = [], {}
    try:
        _fingerprint_function(fn, "", parts, live, set())
    except (_Uncachable, OSError, TypeError, AttributeError):
        return None  # not a plain def (a gradient of a gradient, a custom_vjp function...)
    text = "\n".join([compiler_fingerprint(), numexpr_chains.fingerprint(),
                      check_modes.fingerprint(), f"backend {backend}",
                      *filter(None, [sizing.fingerprint()]), f"mode {mode}",
                      f"wrt {wrt!r}", f"signature {signature!r}", *parts])
    if " at 0x" in text:  # a static argument whose repr is its identity
        return None
    return Key(hashlib.sha256(text.encode()).hexdigest(), text, live)


def _fingerprint_function(fn, label, parts, live, seen):
    if id(fn) in seen:
        parts.append(f"{label} = (seen) {fn.__qualname__}")
        return
    seen.add(id(fn))
    parts.append(f"{label} = def {fn.__qualname__}:\n{''.join(source_lines(fn)[0])}")
    # what Python runs, beside what the file says: after an edit without a reload the two
    # differ, and no entry compiled from the new text may serve the old code
    shape = hashlib.sha256(repr(code_shape(fn.__code__)).encode()).hexdigest()
    parts.append(f"{label} runs {shape}")
    closure = dict(zip(fn.__code__.co_freevars,
                       [c.cell_contents for c in fn.__closure__ or ()]))
    defaults = [*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()]
    for i, value in enumerate(defaults):  # def mlp(h, layers=LAYERS): read as a constant
        _fingerprint_value(value, f"{label}default[{i}]", parts, live, seen)
    for name in sorted(_names_read(fn.__code__)):
        if name in closure:
            scope, value = "closure", closure[name]
        elif name in fn.__globals__:
            scope, value = "global", fn.__globals__[name]
        else:
            continue  # a builtin, or an attribute's name
        _fingerprint_value(value, f"{label}{scope}:{name}", parts, live, seen)


def _names_read(code) -> set:
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_read(const)
    return names


def _fingerprint_value(value, label, parts, live, seen):
    if isinstance(value, types.ModuleType):
        if value.__name__.split(".")[0] not in _MODULES:
            raise _Uncachable(label)
        parts.append(f"{label} = module {value.__name__}")
    elif hasattr(value, "primal") and hasattr(value, "wrt"):  # a GradientFunction
        _fingerprint_function(value.primal, label + ".", parts, live, seen)
    elif isinstance(value, types.FunctionType):
        _fingerprint_function(value, label + ".", parts, live, seen)
    elif isinstance(value, np.ndarray):
        live[label] = value
        data = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        parts.append(f"{label} = array {value.dtype.str} {value.shape} {data}")
    elif isinstance(value, (tuple, list)):
        parts.append(f"{label} = {type(value).__name__} of {len(value)}")
        for i, item in enumerate(value):
            _fingerprint_value(item, f"{label}[{i}]", parts, live, seen)
    elif isinstance(value, (int, float, complex, str, bytes, type(None), np.generic, np.dtype,
                            type, np.ufunc, types.BuiltinFunctionType)):
        parts.append(f"{label} = {type(value).__name__} {value!r}")
    elif getattr(value, "__module__", "").split(".")[0] in ("numpy", "cupy"):
        parts.append(f"{label} = {value.__module__}.{getattr(value, '__qualname__', value)!r}")
    else:
        raise _Uncachable(label)


# ---- entries ---------------------------------------------------------------------------------
def fetch(key, build):
    """The stored compilation under ``key``, else ``build()``, stored. ``key`` None: build only."""
    if key is None:
        return build()
    compiled = get(key, build)
    if compiled is None:
        compiled = build()
        put(key, compiled)
    return compiled


def get(key: Key, rebuild=None):
    """The stored compilation, or None (missing, unreadable, corrupt or not matching the key)."""
    path = _entry(key.digest)
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["__meta__"]))
            if meta["key"] != key.text:
                return None
            source = str(data["__source__"])
            constants = {name: (key.live[origin[5:]] if origin.startswith("live:")
                                else np.array(data[f"const_{name}"]))
                         for name, origin in meta["constants"].items()}
        function = load_function(source, meta["fname"], constants)
    except Exception:  # noqa: BLE001 - whatever is wrong with an entry, it is rebuilt
        return None
    graph = LazyGraph(meta["ir"], (lambda: rebuild().graph) if rebuild else None)
    return Compiled(graph, source, function, meta["fname"])


def put(key: Key, compiled) -> bool:
    """Store ``compiled`` under ``key`` atomically; False (and nothing stored) where it cannot."""
    constants = constants_of(compiled)
    by_identity = {id(v): label for label, v in key.live.items()}
    origins, arrays = {}, {}
    for name, value in constants.items():
        if id(value) in by_identity:
            origins[name] = "live:" + by_identity[id(value)]
        elif isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
            origins[name], arrays[f"const_{name}"] = "stored", value
        else:
            return False
    meta = {"key": key.text, "fname": compiled.fname, "ir": str(compiled.graph),
            "constants": origins}
    directory, temporary = cache_dir(), None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".tmp-", suffix=_SUFFIX,
                                         delete=False) as fh:
            temporary = fh.name
            np.savez(fh, __meta__=np.array(json.dumps(meta)),
                     __source__=np.array(compiled.source), **arrays)
        _make_way(_entry(key.digest))
        os.replace(temporary, _entry(key.digest))
    except OSError:  # a read-only or full disk: compile without caching
        if temporary:
            Path(temporary).unlink(missing_ok=True)
        return False
    return True


def _make_way(path: Path):
    """An entry's path holding something other than a file (a directory made there by hand or
    by another tool) is cleared, as a corrupt entry is overwritten: else the entry could never
    be stored again, and the cache would stop helping without a word."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)


def constants_of(compiled) -> dict:
    """The module-level names the generated source reads but does not define: its constants."""
    defined = set()
    for stmt in ast.parse(compiled.source).body:
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            defined.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            defined |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):   # numexpr, runtime.threaded
            defined |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
    host = getattr(compiled, "constants", None) or {}   # CuPy code holds device copies
    return {k: host.get(k, v) for k, v in compiled.function.__globals__.items()
            if k not in defined and k not in _NAMESPACE and not isinstance(v, types.ModuleType)}


def _entry(digest) -> Path:
    return cache_dir() / f"{digest}{_SUFFIX}"


def _entries() -> list:
    directory = cache_dir()
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir()
                  if p.suffix == _SUFFIX and (len(p.stem) == 64 or p.name.startswith(".tmp-")))


def info() -> dict:
    entries = _entries()
    return {"directory": str(cache_dir()), "enabled": enabled(), "entries": len(entries),
            "bytes": sum(p.stat().st_size for p in entries)}


def clear() -> int:
    """Remove this cache's entries (only files it wrote); returns how many."""
    entries = _entries()
    for path in entries:
        _make_way(path)
        path.unlink(missing_ok=True)
    return len(entries)


class LazyGraph:
    """The IR of a compilation loaded from the cache: prints as the stored text; reading anything
    else from it compiles the graph (once)."""

    def __init__(self, text, build):
        self.__dict__.update(_text=text, _build=build, _graph=None)

    def __str__(self):
        return self._text

    def __repr__(self):
        return f"<graph loaded from the adcompiler cache:\n{self._text}>"

    def __getattr__(self, name):
        if name.startswith("__") or self.__dict__.get("_build") is None:
            raise AttributeError(name)
        if self._graph is None:
            self.__dict__["_graph"] = self._build()
        return getattr(self._graph, name)
