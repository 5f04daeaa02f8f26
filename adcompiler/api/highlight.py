"""Syntax highlighting of generated source: ANSI colours for a terminal, HTML for notebooks.

Invariant: pygments is optional; without it (or for text that is not Python) the text comes back
unchanged (HTML-escaped, inside ``<pre>``, for HTML). Highlighting never changes the characters.
"""

from __future__ import annotations

import html as _html

try:
    import pygments
    from pygments.formatters import HtmlFormatter, TerminalFormatter
    from pygments.lexers import PythonLexer
except ImportError:  # pragma: no cover - exercised only where pygments is missing
    pygments = None


def terminal(text: str) -> str:
    """``text`` (Python source) with ANSI colours, or unchanged without pygments."""
    if pygments is None:
        return text
    out = pygments.highlight(text, PythonLexer(), TerminalFormatter())
    return out if text.endswith("\n") else out.rstrip("\n")


def html(text: str, python: bool = True) -> str:
    """An HTML block showing ``text``: highlighted Python source, or plain preformatted text."""
    if pygments is None or not python:
        return f"<pre>{_html.escape(text)}</pre>"
    formatter = HtmlFormatter(noclasses=True, nobackground=True)
    return pygments.highlight(text, PythonLexer(), formatter)
