"""Forward mode with dual tensors, as ``torch.autograd.forward_ad``: inside ``dual_level()``,
``make_dual(x, dx)`` attaches the tangent ``dx`` to ``x`` and every operation pushes tangents
through the primitives' tangent rules (``templates.tangent``); ``unpack_dual`` reads them back.

Invariants: tangents belong to the level they were made in and vanish when it exits; a tangent
has its primal's shape and dtype; a dual (and an unpacked primal) is a view of the tensor it came
from, with its storage and graph, holding tangents of its own; the tangent of a view is a view of
its base's tangent, and an in-place update writes into a tensor's tangent
(:func:`.inplace.write_tangent`), as in PyTorch.

Layering: an entry point, above :mod:`.views` and ``Tensor`` (:mod:`.tensor`); nothing of the
tape imports it.
"""

from __future__ import annotations

import itertools
from collections import namedtuple

from . import mode, views
from .tensor import Tensor

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
_TOKENS = itertools.count()
_NO_LEVEL = ("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
             "enter_dual_level() first.")


class dual_level:
    """The context in which dual tensors live (``with forward_ad.dual_level():``)."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


_STACK: list = []


def enter_dual_level() -> int:
    if mode._DUAL_LEVEL.get() is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _STACK.append(mode._DUAL_LEVEL.set(next(_TOKENS)))
    return 0


def exit_dual_level(*, level=None):
    if not _STACK:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one created.")
    mode._DUAL_LEVEL.reset(_STACK.pop())


def make_dual(tensor, tangent, *, level=None):
    """A tensor with ``tensor``'s value (and graph) carrying ``tangent`` at the current level."""
    token = mode._DUAL_LEVEL.get()
    if token is None:
        raise RuntimeError(_NO_LEVEL)
    primal = tensor if isinstance(tensor, Tensor) else Tensor(tensor)
    tangent = tangent if isinstance(tangent, Tensor) else Tensor(tangent)
    if tangent.shape != primal.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(primal.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}.")
    dual = _alias(primal, "ViewBackward0")
    dual._set_tangent(token, tangent)
    return dual


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)``: the tangent at the current level, or None."""
    token = mode._DUAL_LEVEL.get()
    tangent = tensor._tangent(token) if token is not None else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_alias(tensor, "AliasBackward0"), tangent)


def _alias(t, name):
    """A view of all of ``t`` (its storage, version counter and graph: an in-place update of it
    updates ``t``, as PyTorch's dual is a view of its primal) that holds tangents of its own,
    none yet."""
    token = mode._FORWARD_ENABLED.set(False)
    try:
        out = views.make("reshape", t, {"shape": t.shape}, name=name)
    finally:
        mode._FORWARD_ENABLED.reset(token)
    if out._view is not None:
        out._view.owner, out._view.owner_steps = out, ()
    out._duals = None
    return out
