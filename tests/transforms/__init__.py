"""Tests of the reverse and forward transforms: adjoints, tangents, residuals."""
