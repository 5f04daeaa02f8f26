"""The user's side of a standalone module: their statements copied verbatim, the names the
generated code must not clash with, and constants written as literals.

Invariants: the copied statements are the user's own text, in file order, minus decorators and
imports of adcompiler (where the copied code reads ``stop_gradient`` through one, a stand-in
without adcompiler replaces it: the identity, as it is in a forward pass); a literal round-trips
its array exactly (dtype, shape, NaN and infinities), and arrays above ``MAX_LITERAL`` elements
are refused with a hint (located at the display in the user's function that makes one).
"""

from __future__ import annotations

import ast
import dataclasses
import io
import os
import tokenize

import numpy as np

from ..errors import CompileError
from ..frontend.reading.public import PUBLIC

MAX_LITERAL = 10_000


def primal_section(module, roots, header_imports) -> str:
    """The user's statements defining ``roots`` and what they read, verbatim, in file order."""
    needed, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        stmt = module.definitions.get(name)
        if name in needed or stmt is None:
            continue
        needed.add(name)
        todo += [n.id for n in _nodes(stmt) if isinstance(n, ast.Name)]
    stmts = {id(module.definitions[n]): module.definitions[n] for n in needed}
    out = f"# ---- from {os.path.basename(module.path)}, as written (decorators removed) ----"
    previous = None
    for stmt in sorted(stmts.values(), key=lambda s: s.lineno):
        is_def = isinstance(stmt, (ast.FunctionDef, ast.ClassDef))
        if isinstance(stmt, ast.ClassDef):   # a record class, its @dataclass kept
            first = min([stmt.lineno] + [d.lineno for d in stmt.decorator_list])
            piece = "".join(module.lines[first - 1:stmt.end_lineno]).rstrip()
        elif is_def:
            piece = "".join(module.lines[stmt.lineno - 1:stmt.end_lineno]).rstrip()
        else:
            piece = segment(module.lines, stmt)
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) and _imports_adcompiler(stmt):
                piece, is_def = _stand_in(module, stmt, needed, stmts.values()), True
            if not piece or piece in header_imports:
                continue
        out += ("\n\n\n" if is_def or previous in (None, True) else "\n") + piece
        previous = is_def
    return out


def segment(lines, node) -> str:
    """The source text of ``node`` (as ``ast.get_source_segment`` gives it), sliced from the
    file's lines: that function re-splits the whole file per call, which made a module of long
    literals compile in quadratic time (columns are UTF-8 byte offsets, as the ast counts)."""
    chunk = [line.encode("utf-8") for line in lines[node.lineno - 1:node.end_lineno]]
    chunk[-1] = chunk[-1][:node.end_col_offset]
    chunk[0] = chunk[0][node.col_offset:]
    return b"".join(chunk).decode("utf-8")


def _stand_in(module, stmt, needed, copied) -> str:
    """What replaces ``import adcompiler as ad`` (``from adcompiler import stop_gradient``) for
    the copied code: the names it reads through it, where they are only stop_gradient."""
    adcompiler = PUBLIC["adcompiler"]
    out = []
    for alias in stmt.names:
        name = alias.asname or alias.name.split(".")[0]
        if name not in needed or module.namespace.get(name) is None:
            continue
        if module.namespace[name] is PUBLIC["stop_gradient"]:
            out.append(f"def {name}(x):\n    {_IDENTITY}\n    return x")
            continue
        used = {n.attr for s in copied for n in _nodes(s) if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name) and n.value.id == name}
        if module.namespace[name] is adcompiler and used == {"stop_gradient"}:
            out.append(f"class {name}:\n    \"\"\"adcompiler, as far as the code here uses it: "
                       f"this module runs without it.\"\"\"\n\n    @staticmethod\n"
                       f"    def stop_gradient(x):\n        {_IDENTITY}\n        return x")
    return "\n\n\n".join(out)


def _nodes(stmt):
    """The nodes of a statement as copied: a ``def``'s without its decorators."""
    parts = [stmt.args, *stmt.body] if isinstance(stmt, ast.FunctionDef) else [stmt]
    return [n for p in parts for n in ast.walk(p)]


_IDENTITY = '"""adcompiler.stop_gradient: x itself (no gradient flows through it)."""'


def _imports_adcompiler(stmt) -> bool:
    names = [stmt.module or ""] if isinstance(stmt, ast.ImportFrom) else \
        [a.name for a in stmt.names]
    return any(n.split(".")[0] == "adcompiler" for n in names)


def check_collisions(module, primal, ours, backend="numpy"):
    """The user's copied names must not clash with the generated ones (np and math excepted,
    when they are numpy and math; cp and cupyx for CuPy code, when they are cupy and cupyx)."""
    defined = _names_bound(primal)
    for name in sorted(defined & set(ours)):
        stmt = module.definitions.get(name)
        raise CompileError(f"the standalone module defines `{name}` for the generated code, and "
                           "this module defines it too", module.location(stmt) if stmt else None,
                           f"rename `{name}`")
    wanted = [("np", "numpy"), ("math", "math")]
    wanted += [("cp", "cupy"), ("cupyx", "cupyx")] if backend == "cupy" else []
    wanted += [("da", "dask.array")] if backend == "dask" else []
    for name, want in wanted:
        bound = getattr(module.namespace.get(name), "__name__", None)
        if name in defined and bound != want:
            stmt = module.definitions.get(name)
            raise CompileError(f"the generated code needs `{name}` to be {want}",
                               module.location(stmt) if stmt else None, f"rename `{name}`")


def _names_bound(source) -> set:
    tree = ast.parse(source or "")
    out = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            out.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
        else:
            out |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Store)}
    return out


def token_names(source) -> set:
    return {t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type == tokenize.NAME}


def rename(source: str, mapping: dict) -> str:
    """``source`` with the identifiers in ``mapping`` renamed (attribute names left alone)."""
    lines = source.splitlines(True)
    edits, previous = [], None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string in mapping and previous != ".":
            edits.append((tok.start, tok.end, mapping[tok.string]))
        previous = tok.string if tok.type == tokenize.OP else None
    for (row, col), (_, end), new in reversed(edits):
        lines[row - 1] = lines[row - 1][:col] + new + lines[row - 1][end:]
    return "".join(lines)


def literal(value, owner) -> str:
    """``np.array([...], dtype="...")`` for a constant array, exactly round-tripping."""
    array = np.asarray(value)
    if not writable(array):
        raise CompileError(f"{owner} reads a constant array of shape {array.shape} "
                           f"({array.size:,} {array.dtype} elements) that is not a module-level "
                           f"name; the standalone module writes such constants as literals, "
                           f"up to {MAX_LITERAL:,} elements", hint=_MOVE_IT)
    return f"np.array({_nested(array.tolist())}, dtype={array.dtype.name!r})"


def writable(array) -> bool:
    """Whether :func:`literal` writes ``array``: numbers, up to ``MAX_LITERAL`` of them."""
    return array.size <= MAX_LITERAL and array.dtype.kind in "biufc"


_MOVE_IT = ("pass the array to the function as a parameter (and return it from the example "
            "function), or make it a module-level literal (`C = np.array([...])` of numbers), "
            "which the standalone module copies at any size; an array loaded or computed at "
            "run time (np.load(...), rng.normal(...)) must be a parameter: compiling never "
            "runs the file")


def refusal(module, fname, value) -> CompileError:
    """The located error for a constant that ``fname``'s code makes (a display of numbers,
    ``np.array([...])``, ``np.linspace(0, 1, 20000)``) and :func:`literal` cannot write: at the
    display or call making as many numbers, in ``fname`` or a function of the module, else at
    ``fname``'s def."""
    array = np.asarray(value)
    numeric = array.dtype.kind in "biufc"
    what = f"{array.size:,} {array.dtype} elements); a standalone module writes a constant " \
        f"made in a function as a literal, up to {MAX_LITERAL:,} elements" if numeric else \
        f"of dtype {array.dtype}); a standalone module writes a constant made in a function " \
        "as a literal of numbers"
    node, owner = _display_of(module, fname, array.size) if numeric else (None, fname)
    stmt = module.definitions.get(fname)
    where = _short(module.location(node)) if node is not None else \
        module.location(stmt) if stmt is not None else None
    body = "its body" if owner == fname else f"the body of {owner}, which it calls"
    return CompileError(f"{fname} makes a constant array of shape {array.shape} in {body} "
                        f"({what}", where, _MOVE_IT)


def _display_of(module, fname, size) -> tuple:
    """``(node, function)``: the outermost list or tuple display of ``size`` numbers, or call of
    literals making that many (``np.linspace(0, 1, 20000)``), in the module's functions
    (``fname``'s first); ``(None, fname)`` where none makes that many."""
    defs = [module.definitions.get(fname)] + [s for n, s in module.definitions.items()
                                              if n != fname and isinstance(s, ast.FunctionDef)]
    for stmt in defs:
        todo = [stmt] if isinstance(stmt, ast.FunctionDef) else []
        while todo:
            node = todo.pop()
            if _makes(module, node, size):
                return node, stmt.name
            todo += reversed(list(ast.iter_child_nodes(node)))
    return None, fname


# NumPy's constructors of arrays whose size follows from literal arguments
_MAKERS = ("arange", "linspace", "logspace", "geomspace", "eye", "identity", "tri", "ones",
           "zeros", "full")


def _makes(module, node, size) -> bool:
    """Whether ``node`` is a display of ``size`` numbers, or a call of a NumPy constructor whose
    literal arguments make an array of ``size`` elements."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return _numbers(node) == size
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MAKERS and isinstance(node.func.value, ast.Name)
            and module.namespace.get(node.func.value.id) is np):
        return False
    try:
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        return getattr(np, node.func.attr)(*args, **kwargs).size == size
    except (ValueError, TypeError, SyntaxError, MemoryError):
        return False


def _numbers(display) -> int:
    """How many numbers a (nested) display holds, as np.array of it has."""
    count, todo = 0, [display]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.List, ast.Tuple)):
            todo += node.elts
        else:
            count += 1
    return count


def _short(where, keep=60):
    """``where`` with a long line (a literal of thousands of numbers) cut after ``keep``
    characters of the construct, so the error shows its start and a caret under it."""
    if len(where.line) <= where.col + keep + 20:
        return where
    line = where.line[:where.col + keep] + " ..."
    return dataclasses.replace(where, line=line, end_col=len(line))


def _nested(x) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_nested(i) for i in x) + "]"
    if isinstance(x, float) and not np.isfinite(x):
        return "np.nan" if np.isnan(x) else ("np.inf" if x > 0 else "-np.inf")
    return repr(x)
