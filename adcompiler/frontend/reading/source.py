"""Read a function's source (``linecache`` and ``ast``; ``inspect`` where needed), and locate
AST nodes in the user's file.

Invariant: :class:`FunctionSource` holds the parsed ``FunctionDef`` with line numbers that are
the user's real line numbers, and :meth:`FunctionSource.error` builds a CompileError pointing there.
The user's file is only read, never executed or written.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import os
from dataclasses import dataclass

from ...errors import CompileError, Location
from .freshness import check_fresh

_TYPE_PARAMS = {"type_params": []} if "type_params" in ast.FunctionDef._fields else {}


@dataclass
class FunctionSource:
    fn: object
    tree: ast.FunctionDef
    filename: str
    lines: list          # the whole file's lines (for carets), 1-based via lines[lineno - 1]

    def location(self, node) -> Location:
        lineno = getattr(node, "lineno", self.tree.lineno)
        line = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        col = _chars(line, getattr(node, "col_offset", 0))
        end_col = getattr(node, "end_col_offset", None)
        if getattr(node, "end_lineno", lineno) != lineno:
            end_col = len(line.rstrip())
        elif end_col is not None:
            end_col = _chars(line, end_col)
        return Location(self.filename, lineno, col, line.rstrip("\n"), end_col)

    def error(self, node, message, hint="") -> CompileError:
        return CompileError(message, self.location(node), hint)

    def text(self, node) -> str:
        """The user's source text of a statement or expression, on one line. (Sliced from the
        file's lines directly: ast.get_source_segment re-splits the whole file per call.)"""
        end_lineno = getattr(node, "end_lineno", None)
        if end_lineno is None or not 0 < node.lineno <= end_lineno <= len(self.lines):
            return " ".join(ast.unparse(node).split())
        chunk = [ln.encode("utf-8") for ln in self.lines[node.lineno - 1:end_lineno]]
        chunk[-1] = chunk[-1][:node.end_col_offset]
        chunk[0] = chunk[0][node.col_offset:]
        return " ".join(b"".join(chunk).decode("utf-8", errors="replace").split())


def _chars(line: str, byte_offset: int) -> int:
    """The ast module counts columns in UTF-8 bytes; carets count characters."""
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace"))


def read_function(fn, inlined=False) -> FunctionSource:
    """Parse ``fn``'s definition, keeping the user's own line and column numbers. A lambda is
    read only where it is ``inlined`` (called by compiled code), as a def returning its body:
    a compiled function itself is a def, whose name its generated code takes."""
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        raise CompileError(f"{fn!r} is not a Python function; adcompiler compiles `def` functions")
    if fn.__name__ == "<lambda>" and inlined:
        return _read_lambda(fn)
    try:
        return _read_def(fn)
    except CompileError:
        # linecache's check compares the file's size and time stamp: a file written again
        # within the same second at the same size (a script regenerated, then imported) keeps
        # its old lines there. Read the file again before saying it is not the function's.
        entry = linecache.cache.get(code.co_filename)
        if not entry or len(entry) != 4 or entry[1] is None or \
                not os.path.isfile(code.co_filename):
            raise   # (a notebook cell's text, which linecache holds without a file: kept)
        linecache.updatecache(code.co_filename)
        return _read_def(fn)


def _read_def(fn) -> FunctionSource:
    code = fn.__code__
    filename = code.co_filename
    try:
        src_lines, first = source_lines(fn)
    except (OSError, TypeError) as exc:
        raise CompileError(f"cannot read the source of {fn.__name__!r} ({exc})",
                           hint="define the function in a file (or a notebook cell), not in exec()")
    if fn.__name__ == "<lambda>":
        line = src_lines[0].rstrip("\n")
        raise CompileError("this is a lambda; adcompiler compiles `def` functions (a lambda "
                           "can be called inside one)",
                           Location(filename, first, max(line.find("lambda"), 0), line,
                                    max(line.find("lambda"), 0) + len("lambda")),
                           hint="write it as a def at module level")
    module = _parse(fn, src_lines, first)
    tree = _definition(module, fn, filename, first)
    lines = linecache.getlines(filename) or [""] * (first - 1) + src_lines
    source = FunctionSource(fn, tree, filename, lines)
    if _CHECKED.get(code) is not lines:
        check_fresh(fn, tree, lines, lambda message, hint: source.error(tree, message, hint))
        _CHECKED[code] = lines
    return source


_CHECKED: dict = {}  # code object -> the file's lines (as linecache holds them) it was checked on


def _definition(module, fn, filename, first) -> ast.FunctionDef:
    """The ``def`` of ``fn`` in the source read for it; a located error where that source is
    not ``fn``'s (its file changed after it was defined, or another text is cached for it)."""
    code = fn.__code__
    params = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    for node in ast.walk(module):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
            if node.name == code.co_name and names == params:
                return node
            break
    raise CompileError(f"the source read for {fn.__name__!r} at {filename}:{first} is not its "
                       f"definition: the file changed after {fn.__name__} was defined, or "
                       "another text is cached under its file name",
                       hint="reload the module (or re-run the cell that defines it), then "
                            "take the gradient again")


def as_def(node, name: str, body: list) -> ast.FunctionDef:
    """A ``def`` named ``name`` with ``node``'s parameters and ``body``, located at ``node``
    (a lambda reads as ``def <lambda>(...): return <its body>``)."""
    tree = ast.FunctionDef(name=name, args=node.args, body=body, decorator_list=[],
                           returns=None, **_TYPE_PARAMS)
    ast.copy_location(tree, node)
    tree.end_lineno, tree.end_col_offset = node.end_lineno, node.end_col_offset
    return tree


def _read_lambda(fn) -> FunctionSource:
    """The lambda ``fn`` (at module level, in a dict or list, passed as an argument), found in
    its file's syntax tree: on its first line, with its parameters, and (where one line holds
    several) the one whose body holds every position its code object records."""
    code = fn.__code__
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename)
    where = Location(code.co_filename, code.co_firstlineno, 0,
                     lines[code.co_firstlineno - 1].rstrip("\n")
                     if 0 < code.co_firstlineno <= len(lines) else "")
    found = _lambdas_at(_parsed(code.co_filename, lines, where), code)
    if not found:
        raise CompileError("cannot read the source of this lambda", where, "define it in a "
                           "file (or a notebook cell), not in exec() or at the prompt")
    if len(found) > 1:  # (Python 3.10, whose code objects keep no columns)
        raise CompileError("cannot tell which lambda of this line is called", where,
                           "put it on a line of its own, or write it as a `def`")
    body = [ast.copy_location(ast.Return(found[0].body), found[0].body)]
    return FunctionSource(fn, as_def(found[0], "<lambda>", body), code.co_filename, lines)


def _lambdas_at(module, code) -> list:
    """The lambdas of ``module`` that may be ``code``: by line and parameters, then by the
    columns of ``code``'s instructions (Python 3.11 on); the innermost where nested."""
    n = code.co_argcount + code.co_kwonlyargcount
    params = list(code.co_varnames[:n])
    found = [node for node in ast.walk(module) if isinstance(node, ast.Lambda)
             and node.lineno == code.co_firstlineno
             and [a.arg for a in (*node.args.posonlyargs, *node.args.args,
                                  *node.args.kwonlyargs)] == params]
    if len(found) > 1 and hasattr(code, "co_positions"):
        spans = [(p[0], p[2], p[1], p[3]) for p in code.co_positions()
                 if None not in p and (p[0], p[2]) != (p[1], p[3])]
        found = [f for f in found if all(_inside(s, f.body) for s in spans)]
        found = sorted(found, key=lambda f: (f.body.end_lineno - f.body.lineno,
                                             f.body.end_col_offset - f.body.col_offset))[:1]
    return found


def _inside(span, node) -> bool:
    line, col, end_line, end_col = span
    return ((node.lineno, node.col_offset) <= (line, col)
            and (end_line, end_col) <= (node.end_lineno, node.end_col_offset))


_PARSED: dict = {}  # file name -> (its lines, as linecache holds them; their syntax tree)


def _parsed(filename, lines, where) -> ast.Module:
    held = _PARSED.get(filename)
    if held is None or held[0] is not lines:
        try:
            held = _PARSED[filename] = (lines, ast.parse("".join(lines)))
        except (SyntaxError, ValueError) as exc:
            raise CompileError(f"cannot parse the source of this lambda's file ({exc})", where,
                               "reload the module after editing its file") from None
    return held[1]


def source_lines(fn) -> tuple:
    """``inspect.getsourcelines(fn)``, read without ``tokenize`` where the ``def`` (or its first
    decorator) starts a line of its file: the lines up to the next line that starts a new
    top-level statement are parsed, and used if they are exactly that one definition. Else
    (a method, a nested def, a lambda, anything that does not parse) ``inspect`` answers.
    tokenize compiles its regular expressions on first use: 2 ms of a fresh process's first
    gradient of a 5-line function, which this skips."""
    code = fn.__code__
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename)
    start = code.co_firstlineno - 1
    if fn.__name__ != "<lambda>" and 0 <= start < len(lines) and lines[start][:1].strip():
        chunk = lines[start:_next_statement(lines, start)]
        try:
            body = ast.parse("".join(chunk)).body
        except (SyntaxError, ValueError):
            body = []
        if (len(body) == 1 and isinstance(body[0], (ast.FunctionDef, ast.AsyncFunctionDef))
                and body[0].name == fn.__name__):
            return chunk[:body[0].end_lineno], start + 1
    return inspect.getsourcelines(fn)


def _next_statement(lines, start) -> int:
    """The index of the first line after the definition's header at ``start`` that starts
    with a character other than a blank, ``#`` or a closing bracket (len(lines) if none)."""
    k = start
    while k < len(lines) and lines[k].startswith("@"):
        k += 1
    for j in range(k + 1, len(lines)):
        first = lines[j][:1]
        if first.strip() and first not in "#)]}":
            return j
    return len(lines)


def _parse(fn, src_lines, first) -> ast.Module:
    """Parse the definition where it stands: an indented one (a method, a nested def) is parsed
    inside an ``if`` block, so columns stay the file's own and no dedent can go wrong."""
    src = "".join(src_lines)
    indented = src_lines[0][:1].isspace()
    try:
        module = ast.parse("if 1:\n" + src if indented else src)
    except SyntaxError as exc:  # the file changed since it was imported
        raise CompileError(f"cannot parse the source of {fn.__name__!r} ({exc.msg})",
                           Location(fn.__code__.co_filename, first, 0,
                                    src_lines[0].rstrip("\n")),
                           "reload the module after editing its file") from None
    ast.increment_lineno(module, first - 1 - indented)
    return module
