"""What a notebook shows: ``.source`` as highlighted monospace code (not a quoted string full of
``\\n``), still a plain str for everything else; pygments loads only when something is shown."""

import subprocess
import sys
from pathlib import Path

import numpy as np

import adcompiler as ad
from adcompiler.api.highlight import Source


def loss(w):
    return np.sum(np.tanh(w) ** 2)


def test_source_is_a_str_that_a_notebook_shows_as_code():
    g = ad.grad(loss)
    g(np.ones(3))
    source = g.source
    assert isinstance(source, str) and str(source) == g._latest().source
    assert source.splitlines()[0] == "def grad_loss(w):"
    markdown = source._repr_markdown_()
    assert markdown.startswith("```python\ndef grad_loss(w):\n") and markdown.endswith("\n```")
    html = source._repr_html_()
    assert html.startswith("<div") and "<pre" in html and "grad_loss" in html
    assert "\\n" not in html                              # lines, not an escaped string


def test_pygments_loads_only_when_something_is_shown():
    script = ("import numpy as np, sys, adcompiler as ad\n"
              "from tests.api.test_notebook_display import loss\n"
              "g = ad.grad(loss); g(np.ones(2)); s = g.source\n"
              "print('pygments' in sys.modules)\n"
              "s._repr_html_(); print('pygments' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=True, cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.split() == ["False", "True"]


def test_without_pygments_the_html_is_escaped_preformatted_text(monkeypatch):
    from adcompiler.api import highlight
    monkeypatch.setattr(highlight, "_pygments", lambda: None)
    assert Source("x = a < b\n")._repr_html_() == "<pre>x = a &lt; b</pre>"
