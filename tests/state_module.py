"""Module-level state read by the functions of tests/api/test_state.py (rebound there, then reset)."""

import numpy as np

SCALE = 2.0
WEIGHTS = np.ones(3)


def times_ten(x):
    return x * 10.0


def scaled(x):
    return x * SCALE


helper = scaled
other_helper = times_ten


def uses_globals(x):
    return np.sum(helper(x) * WEIGHTS)


def pure(x):
    return np.sum(np.tanh(x))


def reset():
    global SCALE, WEIGHTS, helper
    SCALE, WEIGHTS, helper = 2.0, np.ones(3), scaled
