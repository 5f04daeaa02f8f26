"""Shared fixtures: the on-disk cache lives in a temporary directory, never in the real home."""

import contextlib
import os

import pytest


@contextlib.contextmanager
def _environment(**values):
    """Set (a str) or unset (None) environment variables, which the suite's subprocesses
    inherit; restore what was there on exit."""
    saved = {k: os.environ.get(k) for k in values}
    _set(values)
    try:
        yield
    finally:
        _set(saved)


def _set(values):
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory):
    """Every compilation in the suite (and in the subprocesses it starts, which inherit the
    environment) caches under a fresh temporary directory."""
    with _environment(ADCOMPILER_CACHE_DIR=str(tmp_path_factory.mktemp("adcompiler-cache")),
                      ADCOMPILER_CACHE=None):
        yield


@pytest.fixture(autouse=True, scope="session")
def _verify_plans():
    """Every gradient the suite compiles (here and in the subprocesses it starts) goes through
    :func:`adcompiler.backends.verify_plan.verify_plan` before it loads: a plan that writes a
    buffer a live name still holds, or returns a pool buffer, fails the test that compiled it."""
    with _environment(ADCOMPILER_VERIFY_PLANS="1"):
        yield


@pytest.fixture(autouse=True, scope="session")
def _no_tiers():
    """No background tier-up (adcompiler.api.tiers) unless a test asks for it: a gradient that
    moves to numba loops between two calls would make the suite's value comparisons depend on
    timing. tests/api/test_tiers.py sets ``ADCOMPILER_TIERED=1`` and waits for the tier-up;
    ``ADCOMPILER_TEST_TIERS=1`` runs the whole suite with tiering on."""
    if os.environ.get("ADCOMPILER_TEST_TIERS") == "1":
        yield
        return
    with _environment(ADCOMPILER_TIERED="0"):
        yield


@pytest.fixture(autouse=True)
def _numba_threads(monkeypatch):
    """Generated numba kernels as numba with threads writes them, whatever NUMBA_NUM_THREADS
    says: with one thread no loop is a ``prange`` (``numba_target.threads_pay``), and the tests
    of the thresholds read the ``prange`` loops. tests/backends/test_numba_backend.py tests the
    one-thread rule itself (``monkeypatch.undo()``)."""
    from adcompiler.backends import numba_target
    monkeypatch.setattr(numba_target, "threads_pay", lambda: True)
