"""Expression lowering: each AST expression becomes a Value (emitted nodes) or a static object.

:mod:`.lowering` (names, constants, operators, attributes, calls: ``expr``), :mod:`.indexing`
(``x[...]`` reads into ``getitem`` nodes), :mod:`.lists` (``xs[k]`` of a list a ``while``
loop built, and the errors of its other uses), :mod:`.windows` (slices whose bounds move with a
loop counter, read as windows of fixed width), :mod:`.comprehensions` (comprehensions and
generator expressions consumed at once, unrolled while compiling). Invariant: an expression
that cannot be lowered raises a CompileError located at the innermost expression that failed.
"""
