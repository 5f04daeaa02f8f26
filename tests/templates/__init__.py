"""Tests of the derivative rules, checked numerically and against SymPy."""
