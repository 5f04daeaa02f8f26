"""Golden tests: the generated source and IR of the seed examples, byte for byte.

A change to the emitter or the passes that alters these must update them on purpose.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

import adcompiler as ad

ROOT = Path(__file__).resolve().parents[2]


def _load_sample(name):
    from adcompiler.frontend.reading.module import load_module
    return load_module(str(ROOT / "samples" / f"{name}.py"))


SEED_GRAPH_SOURCE = '''\
def grad_loss(w1, w2, w3, inp):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    # grad of: l3 = l1 * w3
    t1 = l2 * w3
    dw3 = 0.25 * float((l2 * l1).sum())
    # grad of: l2 = l1 + w2
    t1 += l3
    dw2 = 0.25 * float(l3.sum())
    # grad of: l1 = inp * w1
    dw1 = 0.25 * float((t1 * inp).sum())
    return dw1, dw2, dw3
'''

SEED_GRAPH_IR = '''\
graph loss(w1: float, w2: float, w3: float, inp: f64[2,2]) {
  l1: f64[2,2] = multiply inp w1
  l2: f64[2,2] = add l1 w2
  l3: f64[2,2] = multiply l1 w3
  # adjoint
  %0: f64[2,2] = multiply l2 w3
  %1: f64[2,2] = multiply l2 l1
  %2: f64[] = sum_to[shape=()] %1
  %3: float = to_float %2
  dw3: float = multiply 0.25 %3
  %4: f64[2,2] = add %0 l3
  %5: f64[] = sum_to[shape=()] l3
  %6: float = to_float %5
  dw2: float = multiply 0.25 %6
  %7: f64[2,2] = multiply %4 inp
  %8: f64[] = sum_to[shape=()] %7
  %9: float = to_float %8
  dw1: float = multiply 0.25 %9
  return dw1, dw2, dw3
}'''

SEED_F_SOURCE = '''\
def value_and_grad_f(x1, x2):
    v1 = math.log(x1)
    v2 = x1 * x2
    v3 = math.sin(x2)
    v4 = v1 + v2
    f = v4 - v3
    # grad of: v3 = math.sin(x2)
    t1 = math.cos(x2)
    # grad of: v2 = x1 * x2
    dx2 = x1 - t1
    # grad of: v1 = math.log(x1)
    dx1 = x2 + 1.0 / x1
    return f, dx1, dx2
'''

SEED_F_IR = '''\
graph f(x1: float, x2: float) {
  v1: float = log[py='log'] x1
  v2: float = multiply x1 x2
  v3: float = sin[py='sin'] x2
  v4: float = add v1 v2
  f: float = subtract v4 v3
  # adjoint
  %0: float = cos[py='cos'] x2
  dx2_1: float = subtract x1 %0
  %1: float = divide 1.0 x1
  dx1_1: float = add x2 %1
  return f, dx1_1, dx2_1
}'''


def _seed_graph():
    m = _load_sample("seed_graph")
    g = ad.grad(m.functions["loss"], wrt=("w1", "w2", "w3"))
    assert g(2.0, 3.0, 4.0, np.ones((2, 2))) == (28.0, 8.0, 10.0)
    return g


def _seed_f():
    m = _load_sample("seed_f")
    g = ad.value_and_grad(m.functions["f"], wrt=("x1", "x2"))
    value, (d1, d2) = g(2.0, 5.0)
    assert abs(value - 11.652071455223084) < 1e-12
    assert (d1, abs(d2 - 1.7163378145367738) < 1e-12) == (5.5, True)
    return g


def test_seed_graph_source():
    assert _seed_graph().source == SEED_GRAPH_SOURCE


def test_seed_graph_ir():
    assert str(_seed_graph().ir) == SEED_GRAPH_IR


def test_seed_f_source():
    assert _seed_f().source == SEED_F_SOURCE


def test_seed_f_ir():
    assert str(_seed_f().ir) == SEED_F_IR


def test_source_is_identical_across_processes():
    script = textwrap.dedent(f"""
        import numpy as np, adcompiler as ad
        from adcompiler.frontend.reading.module import load_module
        m = load_module({str(ROOT / 'samples' / 'mlp.py')!r})
        g = ad.grad(m.functions['loss'], wrt=('W1', 'b1', 'W2', 'b2'))
        print(g.specialize(*m.functions['example_loss']()).source)
        print(g.ir)
    """)
    outs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           check=True, env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin",
                                                "ADCOMPILER_CACHE": "0"}).stdout
            for seed in ("1", "2")]
    assert outs[0] == outs[1]
    assert "def grad_loss(W1, b1, W2, b2, x, onehot):" in outs[0]
