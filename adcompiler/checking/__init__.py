"""Checking gradients: ``check_grad``, ``adcompiler check``, finite differences and the symbolic mode."""

from .check_grad import GradientCheckError, check_grad
from .symbolic import symbolic
