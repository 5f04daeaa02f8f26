"""The NumPy library's calls: one module per family of functions, each binding a call's
arguments as NumPy would (:mod:`.binding`) and spelling it in primitives, or in the
compositions written once in :mod:`adcompiler.compositions` (which the tape runs too).

:mod:`.creation` (``np.zeros``... conversions, constants made while compiling),
:mod:`.compositions` (the Builder's side of :mod:`adcompiler.compositions`: ``var``, ``diff``,
``roll``, stacks...), :mod:`.diagonal`, :mod:`.einsum`, :mod:`.norms`, :mod:`.products`,
:mod:`.scans`, :mod:`.signals`, :mod:`.solvers`, :mod:`.sorting`, :mod:`.splits`,
:mod:`.statistics`. :mod:`adcompiler.frontend.calls` maps each callable onto its handler here.
Invariant: a handler takes Values and static objects and returns them; a call it does not
take is a :class:`.binding.CallError`, which the lowering locates; nothing here imports the
rest of the frontend.
"""
