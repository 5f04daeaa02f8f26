"""check_grad's report in a notebook: a table (Markdown and HTML), with the figures str() prints,
not a dataclass dump."""

import importlib
import re

import numpy as np

import adcompiler as ad


def weighted(w_in, b):
    return np.sum(np.tanh(w_in * 2.0) + b ** 2)


def test_the_report_is_a_table_in_markdown_and_html():
    report = ad.check_grad(weighted, np.array([0.1, -0.3, 0.7]), 0.5, wrt=("w_in", "b"))
    text = str(report)
    markdown = report._repr_markdown_()
    lines = markdown.splitlines()
    assert lines[0] == "**check\\_grad(weighted): rtol=1e-05, atol=1e-06**: ok"
    assert lines[2] == "| input | shape | vs finite diff | vs tape | result |"
    rows = [ln.strip("| ").split(" | ") for ln in lines[4:]]
    assert [r[0] for r in rows] == ["w\\_in", "b"] and [r[1] for r in rows] == ["(3,)", "()"]
    for row, check in zip(rows, report.inputs):
        assert float(row[2]) == float(f"{check.vs_numerical:.2e}")   # the figures str() shows
        assert row[2] in text and row[4] == "ok"
    html = report._repr_html_()
    assert html.count("<tr>") == 3 and "<td>w_in</td><td>(3,)</td>" in html
    assert re.search(r"<td>b</td><td>\(\)</td><td>[0-9.e+-]+</td>", html)


def test_a_mismatch_shows_in_the_table(monkeypatch):
    module = importlib.import_module("adcompiler.checking.check_grad")
    real = module.compare

    def off(label, compiled, numerical, tape, rtol, atol):
        return real(label, compiled + 1.0, numerical, tape, rtol, atol)

    monkeypatch.setattr(module, "compare", off)
    report = ad.check_grad(weighted, np.array([0.1, -0.3, 0.7]), 0.5, wrt=("w_in", "b"),
                           raise_on_failure=False)
    assert not report.ok
    assert report._repr_markdown_().splitlines()[0].endswith(": MISMATCH")
    assert "<td>MISMATCH</td>" in report._repr_html_()
