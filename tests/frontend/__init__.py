"""Tests of reading a function's source, the fence, and lowering statements and calls."""
