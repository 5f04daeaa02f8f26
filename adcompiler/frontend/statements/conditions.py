"""Check a traced condition (of an ``if``, a ``while``, a conditional expression, an ``assert``, a
run-time check) before it is branched on.

Invariant: a condition that reaches a ``cond``, ``while`` or ``raise_if`` node is one traced
truth value (shape ``()``); a list (a while loop's stack) or an array of more elements is a
located error, as Python's ambiguous truth value is.
"""

from __future__ import annotations


def check_condition(src, node, test):
    if test.aval.kind == "list":   # a while loop's list (.lists)
        raise src.error(node, "a list as a condition is not supported",
                        "test one element (xs[k] > 0)")
    if test.aval.known_shape != ():
        raise src.error(node, "the condition is an array of shape "
                        f"{test.aval.known_shape}: its truth value is ambiguous",
                        "reduce it (np.all, np.any, .sum() > 0) or use np.where")
