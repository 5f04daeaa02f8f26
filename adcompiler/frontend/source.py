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
from dataclasses import dataclass

from ..errors import CompileError, Location


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


def read_function(fn) -> FunctionSource:
    """Parse ``fn``'s definition, keeping the user's own line and column numbers."""
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        raise CompileError(f"{fn!r} is not a Python function; adcompiler compiles `def` functions")
    filename = code.co_filename
    try:
        src_lines, first = source_lines(fn)
    except (OSError, TypeError) as exc:
        raise CompileError(f"cannot read the source of {fn.__name__!r} ({exc})",
                           hint="define the function in a file (or a notebook cell), not in exec()")
    if fn.__name__ == "<lambda>":
        line = src_lines[0].rstrip("\n")
        raise CompileError("this is a lambda; adcompiler compiles `def` functions",
                           Location(filename, first, max(line.find("lambda"), 0), line,
                                    max(line.find("lambda"), 0) + len("lambda")),
                           hint="write it as a def at module level")
    module = _parse(fn, src_lines, first)
    tree = next(n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef,
                                                              ast.AsyncFunctionDef)))
    lines = linecache.getlines(filename) or [""] * (first - 1) + src_lines
    return FunctionSource(fn, tree, filename, lines)


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
