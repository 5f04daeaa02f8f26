"""Tests of the optimisation passes, on the IR they rewrite."""
