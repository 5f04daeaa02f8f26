"""Desugaring: Python forms rewritten into simpler ones, so lowering sees fewer forms.

On the AST, before a loop is lowered: :mod:`.jumps` (``break``/``continue``, and ``range``
with traced bounds, into structured loops with flags) and :mod:`.reversed_range`
(``reversed(range(...))`` into a forward ``range``). While lowering: :mod:`.chains`
(``lo < x < hi`` into ``lo < x and x < hi``, each operand evaluated once) over
:mod:`.shortcircuit` (which right operands of ``and``/``or`` may run unconditionally).
Invariant: a rewrite keeps Python's meaning, the order of evaluation and the user's line
numbers, so errors still point at what the user wrote.
"""
