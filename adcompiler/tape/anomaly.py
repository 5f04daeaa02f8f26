"""Anomaly detection, as PyTorch's ``torch.autograd.detect_anomaly``: while it is on, each node
keeps the traceback of the forward call that made it; an error in a node's backward is preceded
by a warning showing that traceback (``Error detected in MulBackward0. Traceback of forward call
that caused the error: ...``), and, with ``check_nan``, a backward that returns NaN is an error
naming the node and the output. The in-place error's hint then says that the traceback above
shows the operation, as PyTorch's does.

``set_detect_anomaly(mode, check_nan=True)`` sets the mode at once and, used as a context
manager, restores the previous one on exit; ``detect_anomaly(check_nan=True)`` turns it on
inside a ``with`` block (warning, as PyTorch does, that it slows every operation down).
Floor 1 of the tape: nothing here knows Tensor.
"""

from __future__ import annotations

import os
import traceback
import warnings

_STATE = {"enabled": False, "check_nan": True}
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return _STATE["enabled"]


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection, when on, checks backward results for NaN."""
    return _STATE["check_nan"]


class set_detect_anomaly:  # noqa: N801 - PyTorch's name: called as a function, or with `with`
    """Turn anomaly detection on or off now; as a context manager, restore the previous mode on
    exit."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.previous = dict(_STATE)
        _STATE.update(enabled=bool(mode), check_nan=bool(check_nan))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _STATE.update(self.previous)
        return False


class detect_anomaly:  # noqa: N801 - PyTorch's name
    """Anomaly detection inside a ``with`` block (or a decorated function)."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        self.previous = None

    def __enter__(self):
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)
        self.previous = set_detect_anomaly(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        return self.previous.__exit__(*exc)

    def __call__(self, fn):
        def run(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return run


def forward_trace() -> str | None:
    """Where the forward call now running was made, in the user's frames (adcompiler's own left
    out), formatted as a traceback; None while the mode is off."""
    if not _STATE["enabled"]:
        return None
    frames = [f for f in traceback.extract_stack()[:-1]
              if not os.path.abspath(f.filename).startswith(_PACKAGE + os.sep)]
    return "".join(traceback.format_list(frames))


def warn_error_in(node_name: str, trace: str | None):
    """Before an error in ``node_name``'s backward propagates: the warning with its forward
    traceback."""
    if trace is not None:
        warnings.warn(f"Error detected in {node_name}. Traceback of forward call that caused "
                      f"the error:\n{trace}", stacklevel=2)


def check_nan(node_name: str, grads, isnan):
    """The error for a backward that returned NaN, where check_nan is on."""
    if not (_STATE["enabled"] and _STATE["check_nan"]):
        return
    for i, g in enumerate(grads):
        if g is not None and isnan(g):
            raise RuntimeError(f"Function '{node_name}' returned nan values in its {i}th "
                               "output.")
