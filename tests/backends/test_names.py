"""The user's names in the generated code: a name ending in ``_<digits>`` (``w_1``, ``layer_2``) is
the user's, kept whole, not mistaken for an SSA version of ``w`` (which crashed on parameters)."""

import numpy as np

import adcompiler as ad
from tests.helpers import assert_matches_numerical


def numbered(w_1, layer_2):
    h_1 = np.tanh(w_1 * layer_2)
    h_1 = h_1 * 2.0
    return np.sum(h_1 ** 2)


def numbered_loop(h_0, w_1):
    for _ in range(3):
        h_0 = np.tanh(h_0 * w_1)
    return np.sum(h_0)


W, L = np.array([0.3, -1.2, 0.7]), np.array([0.5, 2.0, -0.4])


def test_parameters_ending_in_digits_keep_their_names():
    g = ad.grad(numbered, wrt=(0, 1))
    dw, dl = g(W, L)
    assert_matches_numerical(numbered, (W, L), (0, 1), (dw, dl))
    src = g.source
    assert src.startswith("def grad_numbered(w_1, layer_2):")
    for name in ("dw_1 = ", "dlayer_2 = ", "dh_1 = ", "h_1 = "):
        assert name in src
    assert "return dw_1, dlayer_2" in src


def test_value_and_grad_jvp_and_loops_with_such_names():
    value, dw = ad.value_and_grad(numbered)(W, L)
    assert value == numbered(W, L)
    assert_matches_numerical(numbered, (W, L), (0,), (dw,))
    out, dot = ad.jvp(numbered)(W, L, tangents=np.ones(3))
    assert out == numbered(W, L)
    np.testing.assert_allclose(dot, np.sum(dw), rtol=1e-12)
    assert "w_1_dot" in ad.jvp(numbered).specialize(W, L).source
    g = ad.grad(numbered_loop, wrt=("h_0", "w_1"))
    assert_matches_numerical(numbered_loop, (W, L), (0, 1), g(W, L))
