"""Expression lowering: each AST expression becomes a Value (emitted nodes) or a static object.

:mod:`.table` (the registry: one handler per AST expression type, registered beside it with
``@expression(ast.BinOp)``; the lowering's ``expr`` looks a node's handler up), :mod:`.lowering`
(names, constants, operators, attributes, calls), :mod:`.indexing` (``x[...]`` reads into
``getitem`` nodes), :mod:`.lists` (``xs[k]`` of a list a ``while`` loop built, and the errors of
its other uses), :mod:`.windows` (slices whose bounds move with a loop counter, read as windows
of fixed width), :mod:`.comprehensions` (comprehensions and generator expressions consumed at
once, unrolled while compiling), :mod:`.containers` (dict displays and comprehensions, a dict
read by key, ``*``/``**`` unpacking); ``if``-expressions, ``and``/``or`` and ``lambda`` register
theirs in :mod:`..statements.control` and :mod:`..statements.local_functions`, beside the
statements they share code with. Invariant: an expression that cannot be lowered raises a
CompileError located at the innermost expression that failed.
"""
