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
