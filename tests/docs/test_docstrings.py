"""The examples in the public API's docstrings (shown on the reference pages) run, and print
what they say."""

import doctest

import pytest

import adcompiler as ad

PUBLIC = [ad.grad, ad.value_and_grad, ad.vjp, ad.CompileError]


@pytest.mark.parametrize("obj", PUBLIC, ids=lambda o: o.__name__)
def test_the_docstring_examples_run(obj):
    finder = doctest.DocTestFinder(recurse=False)
    (test,) = finder.find(obj, obj.__name__, globs={})
    assert test.examples, f"{obj.__name__}'s docstring has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"{runner.failures} of {obj.__name__}'s examples failed"


def test_how_it_works_shows_the_irs_grammar_as_the_package_docstring_has_it():
    import re
    import textwrap
    from pathlib import Path
    import adcompiler.ir
    doc = adcompiler.ir.__doc__
    grammar = textwrap.dedent(doc[doc.index("    graph   ::="):doc.index("Invariants")])
    page = (Path(__file__).resolve().parents[2] / "docs" / "how-it-works.md").read_text()
    shown = re.search(r"## The IR's text form.*?```text\n(.*?)```", page, re.S).group(1)
    assert shown.strip("\n") == grammar.strip("\n")
