"""Tests of the public transforms and what runs when they are called."""
