"""A benchmark worker imports adcompiler's run-time libraries (the SciPy the GP's generated code
calls) with adcompiler, before the memory baseline, as a peer's import holds its own linear
algebra; the hand-written system imports NumPy only."""

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("scipy")

PROBE = textwrap.dedent("""
    import sys
    from benchmarks import systems
    systems.import_system(sys.argv[1])
    print("scipy.linalg" in sys.modules, "adcompiler" in sys.modules)
""")


def imported(system):
    done = subprocess.run([sys.executable, "-c", PROBE, system], capture_output=True, text=True,
                          check=True)
    return done.stdout.split()


@pytest.mark.parametrize("system", ["compiled", "generated", "standalone"])
def test_adcompilers_systems_import_scipy_before_the_baseline(system):
    assert imported(system) == ["True", "True"]


def test_the_hand_written_system_imports_numpy_only():
    assert imported("hand") == ["False", "False"]
