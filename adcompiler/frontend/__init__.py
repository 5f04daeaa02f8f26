"""The frontend: read a function's source, fence off unsupported syntax, lower it to SSA IR.

The steps, each a sub-package, in the order a function goes through them (a package imports
only those listed before it, and :mod:`.calls`, which :mod:`.expressions` reads):

- :mod:`.reading`: the user's source (a function's, a module's, read statically), its
  parameters, and Python's scopes read from the AST.
- :mod:`.desugaring`: Python forms rewritten into simpler ones before or while lowering
  (``break``/``continue``, ``reversed(range(...))``, chained comparisons, ``and``/``or``).
- :mod:`.library`: the NumPy library's calls, bound as NumPy binds them and spelled in
  primitives or in the compositions of :mod:`adcompiler.compositions`, family by family.
- :mod:`.bindings`: what a name may be bound to while lowering besides a Value: tuples and
  lists of them, markers of names that cannot be read, nested functions.
- :mod:`.expressions`: each expression form lowered to a Value or a static Python object.
- :mod:`.statements`: each statement form lowered, and the state they share.

At the top: :mod:`.calls` (the table of callables, array methods and attributes user code may
call, filled from :mod:`.library` only), :mod:`.fence` (the syntax fence, run before
lowering, on the statements' own predicates) and :mod:`.lower` (``lower_function``, the entry,
and the ``Lowering`` those parts are assembled into); :mod:`.registry`, how expression and
statement handlers register by AST node type.
"""
