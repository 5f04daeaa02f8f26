"""The benchmark runner pins a worker with a thread count to that many CPUs: the thread variables
do not bind XLA, whose one-thread pass otherwise ran its matrix products on several threads."""

import os

import pytest

from benchmarks import run

AFFINITY = hasattr(os, "sched_getaffinity")
CPUS = len(os.sched_getaffinity(0)) if AFFINITY else 1


def test_no_thread_count_no_pin():
    assert run.worker_cpus(None) is None
    assert run.worker_cpus(CPUS) is None          # as many CPUs as there are: nothing to pin


@pytest.mark.skipif(CPUS < 2, reason="pinning needs a machine with two CPUs to choose from")
def test_a_count_below_the_cpus_pins_to_the_last_of_them():
    allowed = sorted(os.sched_getaffinity(0))
    assert run.worker_cpus(1) == {allowed[-1]}
    assert run.worker_cpus(CPUS - 1) == set(allowed[1:])


@pytest.mark.skipif(CPUS < 2, reason="pinning needs a machine with two CPUs to choose from")
def test_a_one_thread_worker_runs_on_one_cpu_and_says_so():
    settings = dict(run.QUICK, target=0.01, min_repeats=1)
    pinned = run.run_one("seed_f", "hand", settings, threads=1)
    free = run.run_one("seed_f", "hand", settings, threads=None)
    assert (pinned["status"], pinned["cpus"]) == ("ok", 1)
    assert (free["status"], free["cpus"]) == ("ok", CPUS)
