"""Every public function of ``np``, ``np.linalg`` and ``np.fft`` has a decision (issue 29,
part 8): it compiles (a handler in frontend/calls.py's FUNCTIONS: a rule, a composition, an
integer pass-through), or it is refused with the reason that fits it and what to write instead
(frontend/library/refusals.py); pure ones also run while compiling where their arguments are
known (static_numpy.py). A function NumPy adds shows up here, undecided."""

import types

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.frontend.calls import FUNCTIONS
from adcompiler.frontend.library import refusals


def _public():
    for prefix, namespace in (("", np), ("linalg.", np.linalg), ("fft.", np.fft)):
        for name in sorted(dir(namespace)):
            value = getattr(namespace, name)
            if name.startswith("_") or isinstance(value, (type, types.ModuleType)) or \
                    not callable(value):
                continue
            yield prefix + name, value


def test_every_public_numpy_function_has_a_decision():
    compiled = {id(f) for f in FUNCTIONS}
    undecided = [name for name, f in _public()
                 if id(f) not in compiled and refusals.decision(name) is None]
    assert undecided == []


def test_no_compiled_function_is_also_refused():
    compiled = {id(f) for f in FUNCTIONS}
    both = [name for name, f in _public() if id(f) in compiled and refusals.decision(name)]
    assert both == []


def spectrum(x):
    return np.sum(np.abs(np.fft.rfft(x)))


def with_copysign(x):
    return np.sum(np.copysign(x, -1.0))


def bits(k, x):
    return np.sum(x * np.bitwise_and(k, 1))


@pytest.mark.parametrize("f, args, words, hint", [
    (spectrum, (np.ones(4),), "returns complex values", "cosine and sine matrices"),
    (with_copysign, (np.ones(3),), "has no derivative rule in adcompiler",
     "instead of `np.copysign`: np.abs(x) * np.where(y < 0, -1.0, 1.0), or give it a rule"),
    (bits, (np.arange(3), np.ones(3)), "returns integers or booleans", "pass the result in"),
])
def test_a_refusal_says_why_and_what_to_write(f, args, words, hint):
    wrt = 1 if f is bits else 0
    with pytest.raises(ad.CompileError) as info:
        ad.grad(f, wrt=wrt)(*args)
    assert words in info.value.message and hint in info.value.hint
    assert info.value.filename == __file__
