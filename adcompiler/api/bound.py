"""A transform decorated in a class, reached through an instance: ``model.loss`` binds ``model``.

``@ad.grad`` (and every other transform) on a method gives an object whose ``__get__`` returns
a :class:`BoundTransform`: calling it calls the transform with the instance first, as a bound
method does, and so does every callable attribute the transform documents (its class's
``bound_attributes``: ``.specialize``, a Hessian's ``.hvp`` and that product's own
``.specialize``...), so ``model.hloss.hvp(x, tangents=v)`` is ``Model.hloss.hvp(model, x,
tangents=v)``. Any other attribute (``.source``, ``.ir``, ``.primal``, ``.wrt``) is the
transform's own.

It is a ``functools.partial`` with the instance as its one argument, so a call costs what a
bound method's does (no Python frame of its own).
"""

from __future__ import annotations

import functools


_FORWARDED = ("__name__", "__qualname__")  # not __wrapped__: inspect.signature drops self


class BoundTransform(functools.partial):
    """``transform`` with ``obj`` bound first; ``__func__`` and ``__self__`` as a method's."""

    __slots__ = ()  # BoundTransform(transform, obj): functools.partial's own constructor, in C

    @property
    def __func__(self):
        return self.func

    @property
    def __self__(self):
        return self.args[0]

    def __getattr__(self, name):
        if name.startswith("__") and name not in _FORWARDED:  # not the transform's: copy...
            raise AttributeError(name)
        value = getattr(self.func, name)
        if name in getattr(type(self.func), "bound_attributes", ()):
            return BoundTransform(value, self.args[0])
        return value

    def __repr__(self):
        return f"<bound {self.func!r} of {self.args[0]!r}>"


def bind(transform, obj):
    """What ``transform.__get__(obj)`` gives: the transform itself through the class."""
    return transform if obj is None else BoundTransform(transform, obj)


__all__ = ["BoundTransform", "bind"]
