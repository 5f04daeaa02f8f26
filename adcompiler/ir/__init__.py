"""The SSA graph: values, nodes, their text form, the shape rules and a verifier.

Grammar of the text form printed by ``print(graph)`` (and by ``.ir`` on a compiled gradient)::

    graph   ::= "graph" NAME "(" [param ("," param)*] ")" "{" const* node* "return" atoms "}"
    param   ::= NAME ":" type
    const   ::= NAME ":" type "=" "const"
    node    ::= [outs "="] PRIM ["[" attr ("," attr)* "]"] atom*   (one per line)
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

Control flow is structured: a node may own regions (:class:`Block`: params, nodes, outputs),
printed indented under it::

    y: f64[3] = cond p                     # if p: then-block, else: else-block
      then:
        ...
        yield y1
      else:
        yield x
    h: f64[3], hs: f64[5,3] = loop[stacked=1] 0 5 1 h0  # for i in range(0, 5, 1)
      body(i: int, h_in: f64[3]):
        ...
        yield h_next, h_in                 # next carried values, then per-iteration values

- ``cond`` takes a predicate; each of its two blocks yields one value per node output (a phi).
- ``loop`` takes ``start stop step`` and the initial carried values; its body block has params
  ``(i, *carried)`` and yields the next carried values followed by ``stacked`` per-iteration
  values, which the node returns stacked along a new first axis (as JAX's ``scan``; a nested
  while loop's lists go into a list of lists, printed ``list[list[f64[3]]]``). With
  ``reverse=True`` it runs its iterations backwards: the adjoint of a loop.
- ``while`` takes the initial carried values; its ``test`` block (params: the carried values)
  yields the predicate, its ``body`` block (same params) yields the next carried values and then
  ``stacked`` per-iteration values, which the node returns as Python lists (kind ``list``).
- ``fused`` (made by the fusion pass, after differentiation) takes the values its chain of
  elementwise nodes reads from outside; its ``expr`` block has one param per input and yields
  the chain's result.
- ``raise_if`` takes a predicate and has no outputs: a run-time check, ``if p: raise
  ValueError('...')`` (its ``exception``, ``args`` and ``negate`` attrs), which has no
  derivative and which dead-code elimination keeps (with any region holding it).
- Scoping: a block reads its params and any value defined before it in program order (Python's
  function scope). The adjoint of a ``cond`` reads values computed inside the forward block it
  replays; that is sound because it runs under the same predicate value.
"""

from .graph import Aval, Block, Graph, Literal, Node, Value, readers, walk

__all__ = ["Aval", "Block", "Graph", "Literal", "Node", "Value", "readers", "walk"]
