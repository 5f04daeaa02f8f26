"""Tests of the NumPy library's families, end to end (compiler and tape)."""
