"""Python operators on tensors: arithmetic and ``@`` record primitives, comparisons give boolean
tensors, ``t[i]`` records a gather (a view for a basic index: ints, slices, None, ``...``), and
``t[i] = v`` / ``t += v`` are in-place updates.

Invariant: every operator maps to exactly one primitive of ``adcompiler.ir.primitives`` (or to
:mod:`.inplace`), so the tape and the compiler differentiate the same operations.

Layering: above what records (:mod:`.record`, :mod:`.views`, :mod:`.inplace`,
:mod:`.numpy_api`); :class:`Operators` is not a base class: :mod:`.assembly` copies its members
onto ``Tensor`` (:mod:`.tensor`, which imports nothing from here).
"""

from __future__ import annotations

from . import inplace, numpy_api, views
from .record import apply


def _binary(prim):
    def forward(self, other):
        return apply(prim, (self, other))

    def reflected(self, other):
        return apply(prim, (other, self))
    forward.__name__, reflected.__name__ = f"__{prim}__", f"__r{prim}__"
    return forward, reflected


def _compare(prim):
    def compare(self, other):
        if other is None or isinstance(other, str):
            return NotImplemented
        return apply(prim, (self, other))
    compare.__name__ = f"__{prim}__"
    return compare


def _update(prim):
    def update(self, other):
        return inplace.update(self, prim, other)
    update.__name__ = f"__i{prim}__"
    return update


def _logical(prim):
    def logical(self, other):
        return numpy_api.logical(prim, self, other)
    return logical


class Operators:
    """The operator methods of :class:`~adcompiler.tape.Tensor` (attached by :mod:`.assembly`)."""

    __add__, __radd__ = _binary("add")
    __sub__, __rsub__ = _binary("subtract")
    __mul__, __rmul__ = _binary("multiply")
    __truediv__, __rtruediv__ = _binary("divide")
    __mod__, __rmod__ = _binary("remainder")
    __floordiv__, __rfloordiv__ = _binary("floor_divide")
    __matmul__, __rmatmul__ = _binary("matmul")
    __rpow__ = _binary("power")[1]

    def __pow__(self, exponent, modulo=None):
        if modulo is not None:
            return NotImplemented
        return apply("power", (self, exponent))

    def __neg__(self):
        return apply("negative", (self,))

    def __pos__(self):
        return self

    def __abs__(self):
        return apply("abs", (self,))

    __lt__, __le__ = _compare("less"), _compare("less_equal")
    __gt__, __ge__ = _compare("greater"), _compare("greater_equal")
    __eq__, __ne__ = _compare("equal"), _compare("not_equal")
    __and__ = __rand__ = _logical("logical_and")
    __or__ = __ror__ = _logical("logical_or")

    def __invert__(self):
        return numpy_api.logical("logical_not", self)

    # ---- indexing and in-place updates --------------------------------------------------------
    def __getitem__(self, key):
        spec, arrays = inplace.index_spec(key, self._data)
        if not arrays:
            return views.make("getitem", self, {"index": spec})
        return apply("getitem", (self, *arrays), {"index": spec})

    def __setitem__(self, key, value):
        inplace.setitem(self, key, value)

    __iadd__ = _update("add")
    __isub__ = _update("subtract")
    __imul__ = _update("multiply")
    __itruediv__ = _update("divide")
    __ipow__ = _update("power")
    __imod__ = _update("remainder")
    __ifloordiv__ = _update("floor_divide")
