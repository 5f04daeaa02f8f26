"""Reading: the user's source, before anything is lowered.

:mod:`.source` reads a function's source (``linecache``, ``ast``) and locates nodes in the
user's file; :mod:`.parameters` binds a call to a function's parameters as Python would and
reads ``wrt``; :mod:`.module` loads a user's module statically (its functions, imports and
constants, never its top level), with :mod:`.module_writes` (module-level arrays the module
might change in place) over :mod:`.alias_writes` (where a function body writes into a value
it holds, through its local aliases); :mod:`.public` names adcompiler's public objects for the
modules that import them; :mod:`.scopes` reads Python's scopes from the AST (a body's own
nodes, a nested function's free names, the names only comprehensions bind). Invariant:
nothing here runs the user's code or emits IR.
"""
