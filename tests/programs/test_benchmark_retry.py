"""The runner's second look at disturbed measurements (benchmarks/run.py): within its budget,
and never for a task whose first gradient alone outlasts what is left of it."""

from benchmarks import run


class _Bar:
    def start(self, *args):
        pass

    def done(self, *args):
        pass


def _row(system, first_s, others_cpu=0.9):
    return {"workload": "gru", "system": system, "status": "ok", "first_s": first_s,
            "median_s": 1e-3, "others_cpu": others_cpu}


def test_a_disturbed_row_whose_first_gradient_outlasts_the_budget_is_not_run_again(monkeypatch):
    measured = []

    def measure(task, settings, budget):
        measured.append(task[1])
        return dict(_row(task[1], 0.5, others_cpu=0.1))

    monkeypatch.setattr(run, "_measure", measure)
    rows = [_row("hand", 0.01), _row("torch_compile", 200.0), _row("torch", 0.2, 0.1)]
    tasks = [("gru", s, 1) for s in ("hand", "torch_compile", "torch")]
    budget = {"wait": 0, "retry": 150.0}
    run._retry_disturbed(rows, tasks, {}, budget, _Bar())
    assert measured == ["hand"]                     # torch is quiet; torch_compile too long
    assert rows[0]["retried"] and rows[0]["others_cpu"] == 0.1
    assert rows[1]["others_cpu"] == 0.9 and "retried" not in rows[1]


def test_a_disturbed_row_that_fits_the_budget_is_run_again_and_the_quieter_kept(monkeypatch):
    monkeypatch.setattr(run, "_measure",
                        lambda task, settings, budget: _row(task[1], 20.0, others_cpu=0.3))
    rows = [_row("torch_compile", 20.0)]
    run._retry_disturbed(rows, [("gru", "torch_compile", 1)], {}, {"wait": 0, "retry": 150.0},
                         _Bar())
    assert rows[0]["retried"] and rows[0]["others_cpu"] == 0.3
