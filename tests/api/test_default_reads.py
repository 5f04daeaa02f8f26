"""A helper's default values (``def mlp(h, layers=LAYERS)``, ``W=W0``, ``s=SCALE``) are read as
constants of the compiled code, so they are part of what is checked: the on-disk cache keys
them (a later process with another ``W0`` got the earlier process's gradient: [2, 4] for
[18, 36]), and a list held in a default has its items checked before each call (after
``LAYERS[0] = 3 I`` the gradient stayed [8, 16] for [72, 144])."""

import os
import subprocess
import sys
import textwrap

import numpy as np

import adcompiler as ad

LAYERS = [np.eye(2)]


def mlp(h, layers=LAYERS):
    for W in layers:
        h = h @ W
    return h


def loss(x):
    return np.sum(mlp(x) ** 2)


def test_a_list_in_a_default_is_checked(monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    x = np.array([1.0, 2.0])
    g = ad.grad(loss)
    saved = list(LAYERS)
    try:
        np.testing.assert_allclose(g(x), 2 * x)
        LAYERS[0] = 3.0 * np.eye(2)
        np.testing.assert_allclose(g(x), 18 * x)
    finally:
        LAYERS[:] = saved


MODULE = '''
    import sys
    import numpy as np
    import adcompiler as ad

    SCALE = float(sys.argv[1])
    W0 = SCALE * np.eye(2)
    LAYERS = [W0]


    def with_array(h, W=W0):
        return h @ W


    def with_list(h, ws=LAYERS):
        return h @ ws[0]


    def with_float(h, s=SCALE):
        return h * s


    def a(x):
        return np.sum(with_array(x) ** 2)


    def b(x):
        return np.sum(with_list(x) ** 2)


    def c(x):
        return np.sum(with_float(x) ** 2)


    x = np.array([1.0, 2.0])
    print([ad.grad(f)(x).tolist() for f in (a, b, c)])
'''


def test_the_disk_cache_keys_defaults(tmp_path):
    path = tmp_path / "defaults_module.py"
    path.write_text(textwrap.dedent(MODULE))
    env = dict(os.environ, ADCOMPILER_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("ADCOMPILER_CACHE", None)
    outs = [subprocess.run([sys.executable, str(path), scale], capture_output=True, text=True,
                           env=env, timeout=120) for scale in ("1", "3", "1")]
    assert [o.returncode for o in outs] == [0, 0, 0], [o.stderr for o in outs]
    one, three, again = (eval(o.stdout) for o in outs)
    assert one == [[2.0, 4.0]] * 3 and again == one
    assert three == [[18.0, 36.0]] * 3
