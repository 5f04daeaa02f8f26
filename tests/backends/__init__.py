"""Tests of the emitters, buffer planning and the plan checker, names in generated code."""
