"""The frontend: read a function's source, fence off unsupported syntax, lower it to SSA IR."""
