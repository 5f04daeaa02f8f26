"""Tests of the SSA graph, the primitive table's rows and the shape rules."""
