"""Tests of custom_vjp rules."""
