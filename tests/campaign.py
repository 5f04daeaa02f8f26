"""The long campaign of tests/programs/test_large_programs.py: many random programs at large sizes, the
optimised code against the unoptimised code and the tape, counted rather than stopped at.

    python -m tests.campaign --programs 20                 # per family, transform and tier
    python -m tests.campaign --programs 50 --families for,while --transforms grad,hvp
    python -m tests.campaign --programs 20 --shard 1/2     # half the cells (run 2/2 beside it)

For each family (straight, branches, for, while, mutation, helpers, mixed), transform (grad,
value_and_grad, vjp, jvp, hvp, module) and tier (buffers, numexpr, numexpr-off) it draws
``--programs`` programs (hypothesis, random, from ``--seed``: printed; the same seed draws the
same programs of a cell again, whichever other cells run) and runs
:func:`tests.programs.test_large_programs.check` on each. A program either agrees, or *disagrees* (the
optimised result, or the tape's, differs from the unoptimised one), or is *refused* (a
CompileError), or has its optimised *plan* refused by ``verify_plan`` (on, as in the suite,
unless ``--no-plan-check``; the program is checked again with it off, to tell a false positive),
or *fails* otherwise (another exception, a hang past ``--time-limit`` seconds).
Each program that does not agree is written to ``--out``: its source, shapes, transform and
message, and for a disagreement a *referee*, central differences along a direction, saying
which of the results is right; the arguments in an ``.npz`` beside it. At the end it
prints, per family and transform (the tiers added up), the programs run, how many of the
optimised codes had ``out=`` buffers and ``ne.evaluate``, and how many disagreed, were refused,
had their plan refused or failed; then per tier. The exit status is 1 if any disagreed, had its
plan refused or failed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import tempfile
import time
import traceback
import zlib
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

import adcompiler

from adcompiler.backends.check_modes import unoptimised

from tests.helpers import raising_after
from tests.programs.test_large_programs import (FAMILIES, TIERS, TRANSFORMS, Disagreement, check, fresh,
                                  large_programs, tangents_for)

COLUMNS = ("programs", "buffers", "numexpr", "disagreed", "refused", "plan", "failed")


class Hang(Exception):
    pass


def time_limit(seconds):
    return raising_after(seconds, Hang(f"still running after {seconds} s"))


def run_cell(family, transform, tier, programs, seed, out, limit, directory):
    """Tally one cell: ``programs`` programs of ``family`` at ``tier`` through ``transform``."""
    tally = collections.Counter()

    @settings(max_examples=programs, database=None, deadline=None, derandomize=False,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @hypothesis_seed(seed)
    @given(drawn=large_programs(family, tier), program_seed=st.integers(0, 2 ** 32 - 1))
    def one(drawn, program_seed):
        program, sizes = drawn
        tally["programs"] += 1
        found = {}
        try:
            with time_limit(limit):
                paths = check(family, transform, program, tier != "numexpr-off", directory,
                              program_seed, found)
        except Disagreement as exc:
            kind, message = "disagreed", str(exc)
            try:
                with time_limit(limit):
                    message += "\n" + referee(found, program_seed)
            except (Exception, Hang) as err:  # noqa: BLE001
                message += f"\nno referee: {type(err).__name__}: {err}"
        except adcompiler.CompileError as exc:
            kind, message = "refused", str(exc)
        except (Exception, Hang) as exc:  # noqa: BLE001 - counted, written out, reported
            kind, message = "failed", "".join(traceback.format_exception(exc))[-4000:]
            if type(exc).__name__ == "PlanError":   # verify_plan refused the optimised plan
                kind, message = "plan", f"{exc}\nwith the plan check off: " + \
                    unchecked(family, transform, program, tier, directory, program_seed, limit)
        else:
            tally.update(k for k, v in paths.items() if v)
            return
        tally[kind] += 1
        write(out, family, transform, tier, program, sizes, program_seed, kind, message)

    one()
    return tally


def unchecked(family, transform, program, tier, directory, seed, limit):
    """The check again with ``ADCOMPILER_VERIFY_PLANS`` off: do the values agree?"""
    saved = os.environ.get("ADCOMPILER_VERIFY_PLANS")
    os.environ["ADCOMPILER_VERIFY_PLANS"] = "0"
    try:
        with time_limit(limit):
            check(family, transform, program, tier != "numexpr-off", directory, seed)
        return "the values agree (the plan check's false positive?)"
    except (Exception, Hang) as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"
    finally:
        if saved is None:
            os.environ.pop("ADCOMPILER_VERIFY_PLANS")
        else:
            os.environ["ADCOMPILER_VERIFY_PLANS"] = saved


def _shifted(args, direction, step):
    return tuple(a + step * t if type(a) is float else np.asarray(a + step * t)
                 for a, t in zip(args, direction))


def referee(found, seed, eps=1e-6):
    """Who is right where results disagree: central differences along a direction (the
    tangents of a jvp or hvp; a random one for a gradient) of the function (the unoptimised
    gradient, for an hvp), against each result's directional derivative. A line of text."""
    args, results = found["args"], found["results"]
    direction = found.get("direction") or tangents_for(args, np.random.default_rng(seed + 1))
    with unoptimised(), np.errstate(all="ignore"):
        up = found["of"](*fresh(_shifted(args, direction, eps)))
        down = found["of"](*fresh(_shifted(args, direction, -eps)))
    if found["kind"] == "hvp":
        want = [(np.asarray(a) - np.asarray(b)) / (2 * eps) for a, b in zip(up, down)]
        scale = 1 + max(float(np.max(np.abs(w), initial=0)) for w in want)
        errors = {who: max(float(np.max(np.abs(np.asarray(r) - w), initial=0))
                           for r, w in zip(hv, want)) / scale for who, hv in results.items()}
        what = "H v against differences of the unoptimised gradient along v"
    else:
        want = (float(up) - float(down)) / (2 * eps)
        if found["kind"] == "gradient":
            got = {who: float(sum(np.sum(np.multiply(g, t)) for g, t in zip(r, direction)))
                   for who, r in results.items()}
            what = "<gradient, u> against differences of f along a random u"
        else:
            got, what = {who: float(r) for who, r in results.items()}, \
                "the tangent against differences of f along it"
        errors = {who: abs(g - want) / (1 + abs(want)) for who, g in got.items()}
    return f"referee ({what}; relative errors, about 1e-7 is agreement): " + ", ".join(
        f"{who} {e:.1e}" for who, e in errors.items())


def write(out, family, transform, tier, program, sizes, program_seed, kind, message):
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{kind}-{family}-{transform}-{tier}-{len(list(out.glob('*.py')))}"
    shapes = [("float" if type(a) is float else np.shape(a)) for a in program.args]
    header = "\n".join(f"# {line}" for line in [
        f"{kind}: family {family}, transform {transform}, tier {tier} ({sizes!r})",
        f"shapes {shapes}, seed of the tangents/cotangents {program_seed}",
        f"arguments: {stem}.npz (x, y, z; a float where the shape says so)",
        *message.splitlines()])
    (out / f"{stem}.py").write_text(header + "\n" + program.source)
    np.savez(out / f"{stem}.npz", **{k: np.asarray(a) for k, a in zip("xyz", program.args)})


def cell_seed(seed, family, transform, tier):
    """The seed of one cell: the same for the same cell whatever the other cells run."""
    return (seed + zlib.crc32(f"{family} {transform} {tier}".encode())) % 2 ** 32


def table(rows, label):
    width = max([len(label)] + [len(k) for k in rows])
    lines = [f"{label:<{width}}  " + "  ".join(f"{c:>9}" for c in COLUMNS)]
    for key, tally in rows.items():
        lines.append(f"{key:<{width}}  " + "  ".join(f"{tally[c]:>9}" for c in COLUMNS))
    total = sum(rows.values(), collections.Counter())
    lines.append(f"{'all':<{width}}  " + "  ".join(f"{total[c]:>9}" for c in COLUMNS))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tests.campaign",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--programs", type=int, default=10,
                        help="programs per family, transform and tier (default 10)")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--transforms", default=",".join(TRANSFORMS))
    parser.add_argument("--tiers", default=",".join(TIERS))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--shard", default="1/1", help="K/N: the K-th of N parts of the cells")
    parser.add_argument("--out", default=None, help="where programs that disagree are written")
    parser.add_argument("--time-limit", type=int, default=120, help="seconds per program")
    parser.add_argument("--json", default=None, help="also write the tallies to this file")
    parser.add_argument("--no-plan-check", action="store_true",
                        help="do not run verify_plan on each plan (the suite runs it)")
    args = parser.parse_args(argv)
    if not args.no_plan_check:
        os.environ["ADCOMPILER_VERIFY_PLANS"] = "1"   # as tests/conftest.py sets it
    seed = random.randrange(2 ** 32) if args.seed is None else args.seed
    out = Path(args.out or f"/tmp/adcompiler-campaign-{seed}")
    k, n = map(int, args.shard.split("/"))
    cells = [(f, t, tier) for f in args.families.split(",") for t in args.transforms.split(",")
             for tier in args.tiers.split(",")]
    for f, t, tier in cells:
        if f not in FAMILIES or t not in TRANSFORMS or tier not in TIERS:
            parser.error(f"no such family, transform or tier: {f}, {t}, {tier}")
    mine = cells[k - 1::n]
    print(f"campaign: seed {seed}, {args.programs} programs per cell, {len(mine)} cells "
          f"(shard {k}/{n}), disagreements to {out}", flush=True)
    tallies = {}
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="campaign-") as directory:
        for i, (family, transform, tier) in enumerate(mine):
            t0 = time.time()
            tally = run_cell(family, transform, tier, args.programs,
                             cell_seed(seed, family, transform, tier), out,
                             args.time_limit, directory)
            tallies[family, transform, tier] = tally
            print(f"[{i + 1}/{len(mine)}] {family:>8} {transform:>14} {tier:>11}: " +
                  ", ".join(f"{tally[c]} {c}" for c in COLUMNS) +
                  f" ({time.time() - t0:.0f} s)", flush=True)
    by_pair, by_tier = collections.defaultdict(collections.Counter), \
        collections.defaultdict(collections.Counter)
    for (family, transform, tier), tally in tallies.items():
        by_pair[f"{family} {transform}"].update(tally)
        by_tier[tier].update(tally)
    print(f"\ncampaign done in {time.time() - start:.0f} s, seed {seed} (shard {k}/{n})")
    print(table(dict(by_pair), "family transform"))
    print()
    print(table(dict(by_tier), "tier"))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {" ".join(key): dict(tally) for key, tally in tallies.items()}, indent=1))
    bad = sum(t["disagreed"] + t["plan"] + t["failed"] for t in tallies.values())
    if bad or any(t["refused"] for t in tallies.values()):
        print(f"programs that did not agree: {out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
