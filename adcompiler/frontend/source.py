"""Read a function's source with ``inspect`` and ``ast``, and locate AST nodes in the user's file.

Invariant: :class:`FunctionSource` holds the parsed ``FunctionDef`` with line numbers that are
the user's real line numbers, and :meth:`FunctionSource.error` builds a CompileError pointing there.
The user's file is only read, never executed or written.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
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
        col = getattr(node, "col_offset", 0)
        line = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        end_col = getattr(node, "end_col_offset", None)
        if getattr(node, "end_lineno", lineno) != lineno:
            end_col = len(line.rstrip())
        return Location(self.filename, lineno, col, line.rstrip("\n"), end_col)

    def error(self, node, message, hint="") -> CompileError:
        return CompileError(message, self.location(node), hint)

    def text(self, node) -> str:
        """The user's source text of a statement or expression, on one line."""
        seg = ast.get_source_segment("".join(self.lines), node, padded=False)
        if seg is None:
            seg = ast.unparse(node)
        return " ".join(seg.split())


def read_function(fn) -> FunctionSource:
    """Parse ``fn``'s definition, keeping the user's own line and column numbers."""
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        raise CompileError(f"{fn!r} is not a Python function; adcompiler compiles `def` functions")
    filename = code.co_filename
    try:
        src_lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise CompileError(f"cannot read the source of {fn.__name__!r} ({exc})",
                           hint="define the function in a file (or a notebook cell), not in exec()")
    src = textwrap.dedent("".join(src_lines))
    indent = len(src_lines[0]) - len(src_lines[0].lstrip())
    module = ast.parse(src)
    ast.increment_lineno(module, first - 1)
    for node in ast.walk(module):
        if hasattr(node, "col_offset"):
            node.col_offset += indent
            if getattr(node, "end_col_offset", None) is not None:
                node.end_col_offset += indent
    tree = next((n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                None)
    if tree is None:  # a lambda
        raise CompileError(f"{fn.__name__!r} is a lambda; adcompiler compiles `def` functions",
                           Location(filename, first, indent, src_lines[0].rstrip("\n")),
                           hint="write it as a def")
    lines = linecache.getlines(filename) or [""] * (first - 1) + src_lines
    return FunctionSource(fn, tree, filename, lines)
