"""The device array of tests/fake_cupy.py: NumPy data that only CuPy operations may touch.

:class:`ndarray` wraps a NumPy array (not a subclass: code that confuses CuPy's arrays with
NumPy's must fail here as it would on a GPU). NumPy's ufuncs and functions refuse it, operators
and methods answer as CuPy's do (0-d arrays, never scalars, from reductions and integer
indexing), and a store whose index repeats keeps the first write, not NumPy's last. The helpers
(``_operand``, ``_static``, ``_array_arg``, ``_wrap``, ``_index``) are shared with the module
functions in tests/fake_cupy.py.
"""

from __future__ import annotations

import numpy as np

def _refuse_host(x, what="an operand"):
    if isinstance(x, np.ndarray):
        raise TypeError(f"Unsupported type {type(x)}: a NumPy array as {what} of a CuPy "
                        "operation (CuPy copies nothing to the device implicitly)")
    if isinstance(x, (list, tuple)):
        raise TypeError(f"Unsupported type {type(x)} as {what} of a CuPy operation")


def _operand(x):
    """A computation's operand: a device array's data, or a scalar."""
    if isinstance(x, ndarray):
        return x._a
    _refuse_host(x)
    return x


def _static(x):
    """A further argument: a device array's data; shapes, axes and scalars as they are."""
    if isinstance(x, np.ndarray):
        _refuse_host(x)
    return x._a if isinstance(x, ndarray) else x


def _array_arg(x, fn):
    if not isinstance(x, ndarray):
        raise TypeError(f"cupy.{fn} takes a cupy.ndarray, not {type(x).__name__}")
    return x._a


def _wrap(x):
    if isinstance(x, np.ndarray):
        return ndarray(x)
    if isinstance(x, np.generic):
        return ndarray(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    return x


def _index(key):
    """An index for NumPy: device index arrays unwrapped (NumPy ones and lists are copied to
    the device by CuPy, so they are accepted too)."""
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    return key._a if isinstance(key, ndarray) else key


def _store_first_wins(a, index, value):
    """``a[index] = value``, except that where an index repeats the *first* write stays: CuPy
    writes repeated indices in no set order, and code that counts on NumPy's (the last) must
    fail here rather than pass by luck."""
    targets = np.arange(a.size).reshape(a.shape)[index]
    if not isinstance(targets, np.ndarray) or np.unique(targets).size == targets.size:
        a[index] = value
        return
    value = np.asarray(value)
    value = value.reshape(value.shape[max(value.ndim - targets.ndim, 0):])
    values = np.broadcast_to(value, targets.shape).reshape(-1)
    _, first = np.unique(targets.reshape(-1), return_index=True)
    a[np.unravel_index(targets.reshape(-1)[first], a.shape)] = values[first]


class _Device:
    def __init__(self, index=0):
        self.id = index

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        pass


class ndarray:  # noqa: N801 - CuPy's name
    """A device array: NumPy data that only CuPy operations may touch."""

    __module__ = "cupy"
    __slots__ = ("_a",)
    __array_priority__ = 100
    __array_ufunc__ = None          # NumPy ufuncs refuse it; operators defer to it

    def __init__(self, data):
        self._a = data

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use "
                        "`.get()` to construct a NumPy array explicitly.")

    def __array_function__(self, func, types_, args, kwargs):
        return NotImplemented

    # ---- attributes ----------------------------------------------------------------------------
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    T = property(lambda self: ndarray(self._a.T))
    device = property(lambda self: _Device(0))

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "data": (self._a.__array_interface__["data"][0], False), "strides": None}

    def get(self):
        return self._a.copy()

    def nonzero(self):
        return tuple(ndarray(i) for i in self._a.nonzero())

    def fill(self, value):
        self._a.fill(_operand(value))

    def dot(self, other):
        return _wrap(np.asarray(self._a.dot(_array_arg(other, "dot"))))

    def clip(self, lo=None, hi=None):
        return _wrap(np.clip(self._a, _operand(lo), _operand(hi)))

    def __getitem__(self, key):
        return _wrap(self._a[_index(key)])

    def __setitem__(self, key, value):
        _refuse_host(value, "the value stored")
        _store_first_wins(self._a, _index(key), _operand(value))


def _passing(name, wrap):
    """A method that NumPy's array answers (wrapped as a device array where it gives one)."""
    def method(self, *args, **kwargs):
        result = getattr(self._a, name)(*args, **kwargs)
        return _wrap(result) if wrap else result
    method.__name__ = name
    return method


for _name in ("item", "tolist", "__repr__", "__len__", "__bool__", "__float__", "__int__",
              "__complex__"):
    setattr(ndarray, _name, _passing(_name, wrap=False))
for _name in ("copy", "astype", "reshape", "transpose", "ravel", "squeeze"):
    setattr(ndarray, _name, _passing(_name, wrap=True))
ndarray.__iter__ = lambda self: (_wrap(self._a[i]) for i in range(len(self._a)))


def _reduction(name):
    def method(self, axis=None, dtype=None, out=None, keepdims=False):
        kw = {"dtype": dtype} if dtype is not None and name in ("sum", "mean", "prod") else {}
        result = getattr(np, name)(self._a, axis=axis, keepdims=keepdims, **kw)
        if out is not None:
            out._a[...] = result
            return out
        return _wrap(np.asarray(result))
    method.__name__ = name
    return method


for _name in ("sum", "mean", "prod", "max", "min"):
    setattr(ndarray, _name, _reduction(_name))


def _operator(fn, reflected=False):
    def method(self, other):
        if not isinstance(other, (ndarray, np.ndarray, np.generic, int, float, complex, bool,
                                  list, tuple)):
            return NotImplemented     # a tensor, say: its reflected operator decides
        a, b = self._a, _operand(other)
        return _wrap(fn(b, a) if reflected else fn(a, b))
    return method


def _inplace(fn):
    def method(self, other):
        fn(self._a, _operand(other), out=self._a, casting="same_kind")
        return self
    return method


_OPERATORS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.divide,
              "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
              "matmul": np.matmul, "and": np.bitwise_and, "or": np.bitwise_or,
              "xor": np.bitwise_xor}
for _name, _fn in _OPERATORS.items():
    setattr(ndarray, f"__{_name}__", _operator(_fn))
    setattr(ndarray, f"__r{_name}__", _operator(_fn, reflected=True))
    if _name != "matmul":
        setattr(ndarray, f"__i{_name}__", _inplace(_fn))
for _name, _fn in {"lt": np.less, "le": np.less_equal, "gt": np.greater,
                   "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}.items():
    setattr(ndarray, f"__{_name}__", _operator(_fn))
ndarray.__hash__ = None
ndarray.__neg__ = lambda self: ndarray(np.asarray(-self._a))
ndarray.__pos__ = lambda self: ndarray(self._a.copy())
ndarray.__abs__ = lambda self: ndarray(np.asarray(np.abs(self._a)))
ndarray.__invert__ = lambda self: ndarray(np.asarray(~self._a))
