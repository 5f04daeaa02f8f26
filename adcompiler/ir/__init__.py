"""The SSA graph: values, nodes, a text printer and a verifier.

Grammar of the text form printed by ``print(graph)`` (and by ``.ir`` on a compiled gradient)::

    graph   ::= "graph" NAME "(" [param ("," param)*] ")" "{" const* node* "return" atoms "}"
    param   ::= NAME ":" type
    const   ::= NAME ":" type "=" "const"
    node    ::= outs "=" PRIM ["[" attr ("," attr)* "]"] atom*     (one per line)
    outs    ::= NAME ":" type ("," NAME ":" type)*
    atom    ::= NAME | LITERAL                          (a Python int, float or bool)
    attr    ::= KEY "=" PYTHON_LITERAL
    type    ::= DTYPE "[" [DIM ("," DIM)*] "]"          (an array of known shape: f64[2,2])
              | DTYPE "[?]"                             (an array of unknown shape)
              | "float" | "int" | "bool"                (a Python scalar)

Invariants (checked by :func:`adcompiler.ir.verify.verify`):

- single assignment: every value is defined exactly once, by a parameter, a constant or a node;
- defined before use: a node reads only parameters, constants, literals and outputs of earlier nodes;
- arity: every node has the number of inputs its primitive declares;
- shapes where known: a node's output abstract value equals what its primitive's shape rule gives.

Structured control flow arrives with the control-flow issue as nodes that own regions; the
straight-line grammar above is the body of every region.
"""

from .graph import Aval, Graph, Literal, Node, Value

__all__ = ["Aval", "Graph", "Literal", "Node", "Value"]
