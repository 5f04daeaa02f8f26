"""Statement lowering: one handler per statement form, registered by AST node type, and the
state the handlers share, passed explicitly.

- :mod:`.table`: the registry (``STATEMENTS``, filled by ``@statement(ast.If)`` beside each
  handler; ``lower_statement`` looks a statement's handler up; ``CONTINUED``, by
  ``@continued(ast.With)``: the forms that, at a function's level, run the rest after them).
- :mod:`.blocks`: a function body (``return`` ends it) and a branch's or loop's body, run
  statement by statement through the registry.
- :mod:`.context`: the lowering's state in three objects: ``Scope`` (the names),
  ``LoopContext`` (the blocks open around a statement), ``Unrolling`` (comprehensions).
- :mod:`.assignments`: ``x = ...``, ``x: T = ...``, ``x op= ...``, a nested ``def``.
- :mod:`.expression_statements`: the forms of ``ast.Expr`` (``xs.append(v)``,
  ``np.add.at(...)``, a bare call of the user's function), each told by its predicate.
- :mod:`.checks`: ``raise``, ``assert``, ``with np.errstate(...)``, run-time checks.
- :mod:`.control`: ``if`` (and conditional expressions, ``and``/``or``): ``cond`` nodes.
- :mod:`.loops`: compiled ``for``/``while`` loops; :mod:`.unrolled`: a ``for`` over a Python
  sequence, unrolled; :mod:`.loop_updates`: in-place updates inside loop bodies.
- :mod:`.joins`: one aval for a variable from every path binding it; :mod:`.conditions`: a
  traced condition's checks.
- :mod:`.inplace`: ``y op= v`` with NumPy's in-place semantics (every alias rebound);
  :mod:`.setitem`: ``y[idx] = v`` and ``np.add.at`` as functional updates; :mod:`.unpacking`:
  ``a, *rest = p``; :mod:`.lists`: the lists a ``while`` loop appends to;
  :mod:`.local_functions`: a nested ``def`` or ``lambda``, and calls inlining it.

Every handler is a function of the lowering, and so is everything statement lowering needs
(:func:`.loops.lower_for`, :func:`.unrolled.lower_unrolled`, :mod:`.loop_updates`,
:func:`.control.merge_branches`, :func:`.inplace.update_aliases`,
:func:`.setitem.assign_subscript`, :func:`.unpacking.unpacked`...); what they call on the
lowering (``expr``, ``bind``, ``operand``...) is still its mixins' (the expressions', the
windows', :class:`.local_functions.LocalFunctionLowering`'s and
:class:`.control.ControlLowering`'s ``bool_step``), none of which changes another's method (no
``super()``). The handlers register on import:
:mod:`..lower` imports every module holding one.
Invariant: every statement the fence lets through has a handler, or does nothing (``pass``, a
docstring).
"""
