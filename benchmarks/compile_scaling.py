"""How compile time grows with a literal in the function body: ``c = np.array([...])`` of n
floats, n from 5,000 to 200,000, each compiled once in a fresh process with the cache off.
Linear growth shows as a flat time per element.

    python -m benchmarks.compile_scaling [n ...]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

SIZES = (5_000, 20_000, 50_000, 200_000)
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


def compile_seconds(n: int, directory: Path) -> float:
    values = ", ".join(repr(0.5 * i) for i in range(n))
    (directory / "literal_module.py").write_text(
        f"import numpy as np\n\n\ndef loss(x):\n    c = np.array([{values}])\n"
        "    return np.sum(x * c[:3])\n")
    done = subprocess.run([sys.executable, "-c", _TIMED, str(directory)], check=True,
                          capture_output=True, text=True, env={"ADCOMPILER_CACHE": "0",
                                                               "PATH": "/usr/bin:/bin",
                                                               "PYTHONPATH": _root()})
    return float(done.stdout.strip().splitlines()[-1])


def _root() -> str:
    return str(Path(__file__).resolve().parents[1])


def main(sizes=SIZES):
    print(f"{'floats':>8} {'seconds':>8} {'us per float':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            seconds = compile_seconds(n, Path(tmp))
            print(f"{n:>8,} {seconds:>8.2f} {1e6 * seconds / n:>13.1f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or SIZES)
