"""How compile time grows with a literal of n floats, each compiled once in a fresh process with
the cache off: ``function``, ``c = np.array([...])`` in the function body, n from 5,000 to
200,000, compiled by ``adcompiler.grad``; ``module``, ``C = np.array([...])`` at module level
read by a marked function, n from 5,000 to 80,000, compiled by ``adcompiler compile`` (which
copies the statement into the standalone module). Linear growth shows as a flat time per
element.

    python -m benchmarks.compile_scaling [function|module] [n ...]   (both cases by default)
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

SIZES = (5_000, 20_000, 50_000, 200_000)
MODULE_SIZES = (5_000, 20_000, 80_000)
_TIMED = textwrap.dedent("""
    import sys, time
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import literal_module
    import adcompiler as ad
    start = time.perf_counter()
    ad.grad(literal_module.loss)(np.ones(3))
    print(time.perf_counter() - start)
""")


_TIMED_MODULE = textwrap.dedent("""
    import os, sys, time
    from adcompiler.cli.main import main
    os.chdir(sys.argv[1])
    start = time.perf_counter()
    assert main(["compile", "literal_module.py", "-o", "literal_module_grad.py"]) == 0
    print(time.perf_counter() - start)
""")


def compile_seconds(n: int, directory: Path) -> float:
    """``adcompiler.grad`` of a function whose body holds a literal of ``n`` floats."""
    values = ", ".join(repr(0.5 * i) for i in range(n))
    (directory / "literal_module.py").write_text(
        f"import numpy as np\n\n\ndef loss(x):\n    c = np.array([{values}])\n"
        "    return np.sum(x * c[:3])\n")
    return _timed(_TIMED, directory)


def module_compile_seconds(n: int, directory: Path) -> float:
    """``adcompiler compile`` of a module with a module-level literal of ``n`` floats."""
    values = ", ".join(repr(0.5 * i) for i in range(n))
    (directory / "literal_module.py").write_text(
        f"import numpy as np\nimport adcompiler as ad\n\nC = np.array([{values}])\n\n\n"
        "@ad.grad\ndef loss(x):\n    return np.sum(x * C[:3])\n\n\n"
        "def example_loss():\n    return (np.ones(3),)\n")
    return _timed(_TIMED_MODULE, directory)


def _timed(script: str, directory: Path) -> float:
    done = subprocess.run([sys.executable, "-c", script, str(directory)], check=True,
                          capture_output=True, text=True, env={"ADCOMPILER_CACHE": "0",
                                                               "PATH": "/usr/bin:/bin",
                                                               "PYTHONPATH": _root()})
    return float(done.stdout.strip().splitlines()[-1])


def _root() -> str:
    return str(Path(__file__).resolve().parents[1])


CASES = {"function": (compile_seconds, SIZES), "module": (module_compile_seconds, MODULE_SIZES)}


def main(cases=tuple(CASES), sizes=()):
    for case in cases:
        timer, default = CASES[case]
        print(f"{case + ' literal':<16} {'floats':>8} {'seconds':>8} {'us per float':>13}",
              flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            for n in sizes or default:
                seconds = timer(n, Path(tmp))
                print(f"{'':<16} {n:>8,} {seconds:>8.2f} {1e6 * seconds / n:>13.1f}", flush=True)


if __name__ == "__main__":
    main([a for a in sys.argv[1:] if a in CASES] or tuple(CASES),
         [int(a) for a in sys.argv[1:] if a not in CASES])
