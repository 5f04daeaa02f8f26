"""Tests of check_grad, adcompiler check and the symbolic mode."""
