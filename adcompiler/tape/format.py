"""PyTorch's tensor repr: ``tensor([10.,  5.,  2.,  3.], requires_grad=True)``,
``tensor(7.3891, grad_fn=<ExpBackward0>)``, 4 decimals, scientific when the range calls for it,
80 columns, summarised past 1000 elements (a port of ``torch/_tensor_str.py``).

Invariant: the text depends only on the values, dtype, device and autograd state; float64, int64
and bool are the default dtypes (no ``dtype=`` suffix), the other dtypes print NumPy's name.

Layering: on the floor, below ``Tensor`` (:mod:`.tensor` takes its repr from here): it reads a
tensor's attributes only, and imports only :mod:`.xp`, :mod:`.lazy` and :mod:`.mode`. A Dask
tensor prints its graph's repr (``dask.array<...>``), never computing it.
"""

from __future__ import annotations

import math

import numpy as np

from .mode import dual_level_token
from .lazy import is_dask_array
from .xp import device_of, to_numpy

PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = 4, 1000, 3, 80
_DEFAULT_DTYPES = ("float64", "int64", "bool")


class _Formatter:
    """Chooses one width and style (integer-valued, fixed or scientific) for all the values."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        flat = values.reshape(-1)
        if not self.floating:
            self.max_width = max([1] + [len(str(v)) for v in flat.tolist()])
            return
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        magnitude = np.abs(finite).astype(np.float64)
        low, high = magnitude.min(), magnitude.max()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        self.sci_mode = bool(high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4)
        if self.sci_mode:
            widths = [len(f"{v:.{PRECISION}e}") for v in finite.tolist()]
        elif self.int_mode:
            widths = [len(f"{v:.0f}") + 1 for v in finite.tolist()]
        else:
            widths = [len(f"{v:.{PRECISION}f}") for v in finite.tolist()]
        self.max_width = max(widths)

    def format(self, value) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{PRECISION}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{PRECISION}f}"
        return " " * (self.max_width - len(text)) + text


def _summarized(a: np.ndarray) -> np.ndarray:
    """The edge items that a summarised print shows, so the formatter sees only those."""
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate([a[:EDGEITEMS], a[-EDGEITEMS:]]) if len(a) > 2 * EDGEITEMS else a
    rows = list(a[:EDGEITEMS]) + list(a[-EDGEITEMS:]) if len(a) > 2 * EDGEITEMS else list(a)
    return np.stack([_summarized(r) for r in rows])


def _vector(a, indent, summarize, fmt):
    per_line = max(1, math.floor((LINEWIDTH - indent) / (fmt.max_width + 2)))
    if summarize and len(a) > 2 * EDGEITEMS:
        data = ([fmt.format(v) for v in a[:EDGEITEMS].tolist()] + [" ..."]
                + [fmt.format(v) for v in a[-EDGEITEMS:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a, indent, summarize, fmt):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt)
    if summarize and len(a) > 2 * EDGEITEMS:
        rows = ([_nested(a[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)] + ["..."]
                + [_nested(a[i], indent + 1, summarize, fmt)
                   for i in range(len(a) - EDGEITEMS, len(a))])
    else:
        rows = [_nested(r, indent + 1, summarize, fmt) for r in a]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def array_str(a: np.ndarray, indent: int) -> str:
    """The values part: ``[[0.2500, 0.2500],\\n        [0.2500, 0.2500]]`` at this indent."""
    if a.size == 0:
        return "[]"
    if a.dtype.kind == "c":
        return np.array2string(a, separator=", ", prefix=" " * indent)
    summarize = a.size > THRESHOLD
    fmt = _Formatter(_summarized(a) if summarize else a)
    return _nested(a, indent, summarize, fmt)


def _with_suffixes(text, suffixes, indent):
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last += len(suffix) + 2
    return "".join(parts) + ")"


def tensor_repr(t) -> str:
    """``tensor(...)`` with the suffixes PyTorch prints (device, dtype, grad_fn, tangent)."""
    prefix = "tensor("
    lazy = is_dask_array(t._data)   # its graph's repr: its values would compute it
    a = t._data if lazy else to_numpy(t._data)
    suffixes = []
    if device_of(t._data) != "cpu":
        suffixes.append(f"device='{device_of(t._data)}'")
    if a.size == 0 and a.ndim != 1:
        suffixes.append(f"size={tuple(a.shape)}")
    if a.dtype.name not in _DEFAULT_DTYPES or (a.size == 0 and a.dtype.name != "float64"):
        suffixes.append(f"dtype={a.dtype.name}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    level = dual_level_token()
    tangent = t._tangent(level) if level is not None else None
    if tangent is not None:
        suffixes.append(f"tangent={tangent}")
    body = repr(a) if lazy else array_str(a, len(prefix))
    return _with_suffixes(prefix + body, suffixes, len(prefix))
