"""Ahead-of-time modules (``adcompiler compile``): example inputs, specialisations, shape-polymorphic bodies, guards and the module written."""

