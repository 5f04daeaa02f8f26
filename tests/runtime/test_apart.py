"""adcompiler.runtime.apart: outputs that do not start at an input's offset within a page."""

import numpy as np

from adcompiler.runtime.apart import PAGE, empty_apart


def _at(offset, n, keep):
    """A float64 array of n elements starting at ``offset`` bytes (a multiple of 8) into a page;
    its backing array is appended to ``keep``."""
    backing = np.empty(n + PAGE)
    keep.append(backing)
    k = ((offset - backing.ctypes.data) % PAGE) // 8
    return backing[k:k + n]


def _gap(out, a):
    return (out.ctypes.data - a.ctypes.data) % PAGE


def test_an_output_starts_1_to_3_kib_after_its_inputs():
    keep = []
    for offset in (16, 0, 2048, 4080):
        x = _at(offset, 100_000, keep)
        y = _at(offset + 64, 100_000, keep)
        out = empty_apart((250, 400), x, y, 2.5)     # a float argument is no array to avoid
        assert out.shape == (250, 400) and out.dtype == np.float64
        assert out.flags.c_contiguous and out.flags.writeable
        assert not np.shares_memory(out, x) and not np.shares_memory(out, y)
        assert 1024 <= _gap(out, x) <= 3072 and 1024 <= _gap(out, y) <= 3072
        out[...] = 1.0                                # the whole view is usable
        assert out.sum() == 100_000


def test_without_a_start_that_fits_every_input_it_starts_where_its_buffer_does():
    keep = []
    inputs = [_at(offset, 1000, keep) for offset in (0, 1024, 2048, 3072)]
    out = empty_apart((1000,), *inputs)
    assert out.shape == (1000,) and out.ctypes.data == out.base.ctypes.data
    assert empty_apart((7,)).shape == (7,) and empty_apart((0, 3)).shape == (0, 3)
