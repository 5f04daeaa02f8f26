"""What the CPU that numba-generated loops run on does well, decided when the code is
generated: whether a loop asks for 512-bit vectors (``wide_vectors()`` of
:mod:`adcompiler.runtime.numba_math`), and whether numba may run more than one thread.

Invariant: ``ADCOMPILER_NUMBA_VECTOR_BITS`` (``256`` or ``512``) overrides the CPU's answer; the
answers never change the values computed, only the vector width LLVM may use and whether a
loop is a ``prange``.
"""

from __future__ import annotations

import os

# LLVM's tuning for AVX-512 Intel CPUs prefers 256-bit vectors (on the first of them, Skylake-SP
# and Cascade Lake, 512-bit instructions lowered the clock). numba sets that for the whole
# process (NUMBA_CPU_FEATURES could change it, process-wide). ``wide_vectors()`` in a loop body
# sets LLVM's function attribute "prefer-vector-width"="512" on the function the loop is
# compiled into (in a prange loop: the outlined body), and on no other code. Measured on this
# project's 2-core AVX-512 machine (LLVM names it rocketlake), the elementwise gradient
# ``tanh(x[j]) + x[j] (7 - tanh^2) + exp(-x[j])`` at 10^6: 3.5 -> 2.5 ms on one thread, 1.87 ->
# 1.41 ms on two, with bit-identical results (the 8-wide code computes the same operations).

# AVX-512 CPUs where 512-bit vectors cost no clock speed worth the name (LLVM's CPU names).
# Zen 4 and 5 run them as two 256-bit halves: fewer instructions, no clock penalty (not
# measured here).
_WIDE_CPUS = frozenset({
    "icelake-client", "icelake-server", "tigerlake", "rocketlake", "sapphirerapids",
    "emeraldrapids", "graniterapids", "graniterapids-d", "diamondrapids", "znver4", "znver5"})


def wide_vectors_pay() -> bool:
    """Whether generated loops ask for 512-bit vectors: ``ADCOMPILER_NUMBA_VECTOR_BITS=512`` or
    ``256`` decides; otherwise yes on the CPUs of ``_WIDE_CPUS`` that have AVX-512F."""
    setting = os.environ.get("ADCOMPILER_NUMBA_VECTOR_BITS", "").strip()
    if setting in ("256", "512"):
        return setting == "512"
    from llvmlite import binding
    features = binding.get_host_cpu_features()
    return binding.get_host_cpu_name() in _WIDE_CPUS and bool(features.get("avx512f"))


def threads_pay() -> bool:
    """Whether a loop may be a ``prange``: numba has more than one thread
    (``NUMBA_NUM_THREADS``, which numba reads once; ``numba.set_num_threads`` can only lower the
    count). With one, a ``range`` loop does the same work without the parallel region: measured
    on Rosenbrock's gradient at 10^6, one thread, 557 against 605 µs a call, and the kernel
    compiles in about half the time (benchmarks/ELEMENTWISE.md)."""
    from numba import config
    return config.NUMBA_NUM_THREADS > 1
