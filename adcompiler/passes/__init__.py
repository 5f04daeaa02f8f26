"""Graph-to-graph optimisation passes, run in the order of :data:`PIPELINE`.

Each pass is a function ``Graph -> Graph`` in its own module, named by a verb.
"""

from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .simplify import simplify

PIPELINE = (
    simplify,                         # folds literals and identities (x * 1, x ** 1): fewer nodes
    eliminate_common_subexpressions,  # after simplify, so that x * 1.0 and x meet as the same x
    eliminate_dead_code,              # last: the two passes above leave unused nodes behind
)


def optimize(graph):
    for run_pass in PIPELINE:
        graph = run_pass(graph)
    return graph
