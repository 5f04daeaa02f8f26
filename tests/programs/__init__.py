"""Tests of whole programs across the layers: random programs and campaigns, golden sources, the README, benchmarks' smoke runs."""
