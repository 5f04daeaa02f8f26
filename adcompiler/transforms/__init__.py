"""Transforms: the adjoint of a graph (``reverse.py``, control flow in ``control.py``) and its
tangents (``forward.py``), each node's from its rule in ``templates/``."""
