"""Anomaly detection on the tape, as PyTorch's: the forward traceback of the node whose backward
fails, NaN-returning backward functions named, the in-place error's hint, and the mode's
state (set at once, restored on leaving a ``with``). Where torch is installed, the same
scenarios run there and the texts are compared."""

import warnings

import numpy as np
import pytest

from adcompiler import tape


def _inplace_after_use(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = a + 1
    c = b * b                       # saves b: the line the warning must point at
    b.add_(1)
    c.sum().backward()


def _nan_backward(lib):
    x = lib.tensor([0.0], requires_grad=True)
    (lib.sqrt(x) * 0).sum().backward()       # 0 * (1 / (2 sqrt(0))) = nan


def _run(lib, scenario):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly():
            with pytest.raises(RuntimeError) as info:
                scenario(lib)
    return str(info.value), [str(w.message) for w in caught if w.category is UserWarning]


def test_an_error_in_backward_shows_the_forward_call_that_made_the_node():
    message, warned = _run(tape, _inplace_after_use)
    assert warned[0].startswith("Anomaly Detection has been enabled.")
    assert warned[1].startswith("Error detected in MulBackward0. Traceback of forward call "
                                "that caused the error:\n")
    assert "c = b * b" in warned[1] and "test_anomaly.py" in warned[1]
    assert "adcompiler/tape" not in warned[1]                  # the user's frames only
    assert message.endswith("Hint: the backtrace further above shows the operation that failed "
                            "to compute its gradient. The variable in question was changed in "
                            "there or anywhere later. Good luck!")


def test_a_backward_returning_nan_is_an_error_naming_it():
    message, warned = _run(tape, _nan_backward)
    assert message == "Function 'SqrtBackward0' returned nan values in its 0th output."
    assert warned[1].startswith("Error detected in SqrtBackward0.")


def test_without_the_mode_nothing_is_kept_and_nan_passes():
    x = tape.tensor([0.0], requires_grad=True)
    y = tape.sqrt(x) * 0
    assert y.grad_fn.trace is None
    y.sum().backward()
    assert np.isnan(x.grad._data[0])
    a = tape.tensor([1.0, 2.0], requires_grad=True)
    b = a + 1
    c = b * b
    b.add_(1)
    with pytest.raises(RuntimeError, match=r"with torch\.autograd\.set_detect_anomaly\(True\)"):
        c.sum().backward()


def test_the_mode_is_set_at_once_and_restored_by_with():
    assert not tape.is_anomaly_enabled() and tape.is_anomaly_check_nan_enabled()
    tape.set_detect_anomaly(True)
    try:
        assert tape.is_anomaly_enabled()
        with tape.set_detect_anomaly(True, check_nan=False):
            assert tape.is_anomaly_enabled() and not tape.is_anomaly_check_nan_enabled()
            x = tape.tensor([0.0], requires_grad=True)
            (tape.sqrt(x) * 0).sum().backward()               # NaN, not checked
            assert np.isnan(x.grad._data[0])
        assert tape.is_anomaly_enabled() and tape.is_anomaly_check_nan_enabled()
    finally:
        tape.set_detect_anomaly(False)
    assert not tape.is_anomaly_enabled()
    assert tape.autograd.set_detect_anomaly is tape.set_detect_anomaly


@pytest.mark.parametrize("scenario", [_inplace_after_use, _nan_backward])
def test_the_texts_are_pytorchs(scenario):
    torch = pytest.importorskip("torch")
    ours, our_warnings = _run(tape, scenario)
    theirs, their_warnings = _run(torch, scenario)
    ours = ours.replace("DoubleTensor", "FloatTensor").replace("AddBackward0", "Add")
    assert ours == theirs          # (PyTorch names the node "Add" in this one message)
    assert our_warnings[0] == their_warnings[0]
    assert our_warnings[1].split(":")[0] == their_warnings[1].split(":")[0]
