"""Tests of ahead-of-time modules: shapes, guards, specialisations."""
