"""Where the command line writes: output paths checked before any work, files written safely.

Invariants: an output is never one of the input modules (by ``os.path.samefile`` where it
exists, else by its resolved path), never a directory, and lies in a directory that exists; an
existing file is replaced only when ``adcompiler compile`` wrote it (its header and marker line,
:func:`adcompiler.aot.standalone.is_generated`) or with ``--force``; ``graph`` replaces an existing
file only with ``--force``, and its own input module never. A file is written whole through
a temporary file beside it and ``os.replace``, and the temporary file is removed on any failure.
Problems are CompileErrors (no line to point at) naming the user's path and what to do instead.
"""

from __future__ import annotations

import os
import tempfile

from ..errors import CompileError
from ..aot.standalone import is_generated


def check_output(out: str, inputs=(), force=True, example="NAME_grad.py", source=""):
    """Raise a CompileError if ``out`` cannot or must not be written (see the module's
    invariants); ``force`` allows replacing a file adcompiler did not write. ``example`` is a
    file name the hints suggest for ``-o``; ``source`` the module whose default output ``out``
    is (``-o`` was not given)."""
    other = f"name another output: adcompiler compile {source} -o OTHER.py" if source else \
        "give -o another file name" + \
        (f", such as {example}" if example != os.path.basename(out) else "")
    if os.path.isdir(out):
        raise CompileError(f"{out} is a directory: give a file name",
                           hint=f"-o {os.path.join(out, example)}")
    parent = os.path.dirname(out) or os.curdir
    if not os.path.isdir(parent):
        what = "is not a directory" if os.path.exists(parent) else "does not exist"
        raise CompileError(f"cannot write {out}: directory {parent} {what}",
                           hint=f"create {parent} first, or give -o a path in an existing "
                                "directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CompileError(f"cannot write {out}: directory {parent} is not writable",
                           hint="give -o a path in a directory you can write to")
    for path in inputs:
        if _same_file(out, path):
            what = f"{out}, where compile writes the gradients of {source}, is a module to " \
                "compile" if source else f"the output {out} is the input module {path}"
            raise CompileError(f"{what}: writing it would replace your source",
                               hint=f"rename {path}, or {other}" if source else other)
    if os.path.lexists(out) and not os.path.isfile(out):
        raise CompileError(f"{out} exists and is not a regular file: refusing to replace it",
                           hint=other)
    if not force and os.path.exists(out) and not written_by_adcompiler(out):
        raise CompileError(f"{out} exists and was not written by adcompiler compile: refusing "
                           "to replace it", hint=f"pass --force to overwrite it, or {other}")


def check_drawing(out: str, source: str, force=False, example="f.dot"):
    """``graph -o out`` of the module ``source``: never over ``source`` (even with ``force``),
    and over an existing file only with ``force``."""
    check_output(out, [source], True, example)
    if not force and os.path.lexists(out):
        other = f", such as {example}" if example != os.path.basename(out) else ""
        raise CompileError(f"{out} already exists: graph does not overwrite a file unless told "
                           "to", hint=f"pass --force to overwrite {out}, or give -o another "
                                      f"file name{other}")


def written_by_adcompiler(path: str) -> bool:
    """Whether the file at ``path`` is a module ``adcompiler compile`` wrote."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    return is_generated(data.decode("utf-8", errors="replace"))


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:   # one of them does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def write_file(path: str, data: bytes):
    """Write ``data`` to ``path`` through a temporary file beside it and ``os.replace`` (never
    torn); on failure no temporary file is left, and the error names ``path``."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.",
                                   suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise CompileError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None and os.path.lexists(tmp):
            os.unlink(tmp)


def generated_sources(paths) -> set:
    """Those of ``paths`` that ``adcompiler compile`` wrote (outputs, not inputs)."""
    return {p for p in paths if written_by_adcompiler(p)}
