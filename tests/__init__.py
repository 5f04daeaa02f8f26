"""The test suite (a package, so that test modules can share tests/strategies.py)."""
