"""Bindings: what a name may be bound to while lowering, besides a Value or a static object.

:mod:`.structured` holds tuples and lists of traced values (carried through loops and joined
after branches, leaf by leaf). Invariant: these are plain values, shared by the expression and
the statement lowering, and import neither.
"""
