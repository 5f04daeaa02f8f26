"""``torch.autograd``'s names on the tape, so that code (and PyTorch's own hints, such as the
in-place error's ``torch.autograd.set_detect_anomaly(True)``) reads the same with
``from adcompiler import tape as torch``: ``backward``, ``grad``, the anomaly mode and
``forward_ad``."""

from . import forward_ad  # noqa: F401
from .anomaly import (detect_anomaly, is_anomaly_check_nan_enabled,  # noqa: F401
                      is_anomaly_enabled, set_detect_anomaly)
from .engine import backward, grad  # noqa: F401

__all__ = ["backward", "grad", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "forward_ad"]
