"""Tests of loading, the on-disk cache, numba's math kernels."""
