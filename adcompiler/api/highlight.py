"""Syntax highlighting of generated source: ANSI colours for a terminal, HTML for notebooks.

Invariant: pygments is optional; without it (or for text that is not Python) the text comes back
unchanged (HTML-escaped, inside ``<pre>``, for HTML). Highlighting never changes the characters.
"""

from __future__ import annotations

import functools
import html as _html


@functools.lru_cache(maxsize=None)
def _pygments():
    """pygments' highlight, lexer and formatters, loaded on first use; None without it."""
    try:
        import pygments
        from pygments.formatters import HtmlFormatter, TerminalFormatter
        from pygments.lexers import PythonLexer
    except ImportError:  # pragma: no cover - exercised only where pygments is missing
        return None
    return pygments.highlight, PythonLexer, HtmlFormatter, TerminalFormatter


def terminal(text: str) -> str:
    """``text`` (Python source) with ANSI colours, or unchanged without pygments."""
    if _pygments() is None:
        return text
    highlight, lexer, _, formatter = _pygments()
    out = highlight(text, lexer(), formatter())
    return out if text.endswith("\n") else out.rstrip("\n")


def html(text: str, python: bool = True) -> str:
    """An HTML block showing ``text``: highlighted Python source, or plain preformatted text."""
    if _pygments() is None or not python:
        return f"<pre>{_html.escape(text)}</pre>"
    highlight, lexer, formatter, _ = _pygments()
    return highlight(text, lexer(), formatter(noclasses=True, nobackground=True))


class Source(str):
    """Generated source as ``.source`` returns it: a plain str everywhere (print it, write it,
    compare it), shown in a notebook as highlighted code in a monospace block rather than as
    a quoted string full of ``\\n``."""

    __slots__ = ()

    def _repr_html_(self):
        return html(str(self).rstrip("\n"))

    def _repr_markdown_(self):
        return f"```python\n{str(self).rstrip()}\n```"
