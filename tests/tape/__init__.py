"""Tests of the dynamic tape, against PyTorch."""
