"""Tests of the adcompiler command."""
