"""Bindings: what a name may be bound to while lowering, besides a Value or a static object.

:mod:`.unreadable`: the markers of names that cannot be read where Python would have a value
(reading one is a located error); :mod:`.structured`: tuples and lists of traced values,
carried through loops and joined after branches, leaf by leaf (dicts and dataclasses too);
:mod:`.trees`: container arguments (pytrees), their structure and traced leaves;
:mod:`.functions`: a nested ``def`` or ``lambda`` (``LocalFunction``); :mod:`.memory`: which values share memory (NumPy's
views), read from the graph built so far; :mod:`.lists`: a ``while`` loop's list before, while
and after the loop builds it. Invariant: these are plain values and functions of
them, shared by the expression and the statement lowering, and import neither.
"""
