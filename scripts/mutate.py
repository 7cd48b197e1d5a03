"""Mutation testing of judgecp's numbers (issue 37): mutmut over the functions that compute them.

A mutant is a small deliberate bug (``<`` for ``<=``, ``n - 1`` for ``n + 1``, a
constant changed, an argument dropped); a test suite that passes with it has
not checked what that code computes. This script runs mutmut 3 (the ``dev``
extra) over :data:`SCOPE`, the functions of the conformal quantiles and
scores, PPI++ and its variance, the selective-risk bounds and the sequential
tests, with the fast tests of those modules (``scripts/mutation.toml``), and
prints each module's kill rate and every surviving mutant's diff.

    python scripts/mutate.py [--modules conformal,ppi] [--jobs 2] [--report build/mutate/report.md] [--fresh]
    python scripts/mutate.py --report-only      # the last run's counts, without running

It works in ``build/mutate`` (``judgecp`` there is a link to ``plugin/``, the
tests a copy): mutmut names a mutant by the module its file path gives, and
the tests import ``judgecp``. A full run takes 17 to 30 minutes on a 2-core
machine (docs/testing.md has the last one); ``--modules`` runs a part.
Mutants are counted as mutmut reports them: killed (a test failed), survived
(every test that runs the function passed), timeout (counted as killed: the
mutant made a test hang), no tests (no selected test calls the function;
counted as survived).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import fnmatch
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "build" / "mutate"
ALL = ("*",)
#: module -> (its file under judgecp/, the functions mutated: mutmut's names without the module,
#: ``x_<function>`` or ``xǁ<class>ǁ<method>``; ``*`` every function). What is left out computes no
#: number: constructors' defaults and the default regressor's hyperparameters (a model choice: any model keeps
#: the guarantee), a fitted state's JSON round trip and its checks (tests/test_calibrator_files.py), file locks
#: and the history file's reading (tests/test_history_detector.py's own tests), argument plumbing.
SCOPE: dict[str, tuple[str, tuple[str, ...]]] = {
    "conformal": ("stats/conformal.py", (
        "x_check_alpha", "x_conformal_rank", "x_min_calibration_size", "x_conformal_quantile",
        "xǁConformalMethodǁconformalize", "xǁConformalMethodǁcalibrate", "xǁConformalMethodǁfit_size",
        "xǁConformalMethodǁpredict", "xǁConformalMethodǁ_quantile", "xǁConformalMethodǁ_rank_alpha")),
    "sets": ("stats/methods/sets.py", (
        "x_rank_labels", "x_lac_scores", "x_margin_scores", "x_aps_scores", "x_true_label_scores", "x_sets_at",
        "xǁ_SetMethodǁ*", "xǁ_DeterministicSetMethodǁ*", "xǁAPSǁ_label_scores", "xǁRAPSǁ_tune",
        "xǁRAPSǁ_label_scores", "xǁRAPSǁ_penalty")),
    "split": ("stats/methods/split.py", ("xǁNaiveSplitǁpoint", "xǁNaiveSplitǁ_conformalize", "xǁNaiveSplitǁ_predict",
                                         "xǁNaiveSplitǁscore_bounds")),
    "ordinal": ("stats/methods/ordinal.py", ("x_greedy_contiguous_mass", "xǁOrdinalAPSǁ_uniforms",
                                             "xǁOrdinalAPSǁ_label_scores", "xǁOrdinalAPSǁ_conformalize*",
                                             "xǁOrdinalAPSǁ_predict", "xǁOrdinalCDFSetǁ*")),
    "ppi": ("stats/ppi.py", ("x_ppi_items", "x_ppi_mean", "x_stratification")),
    "ppi_design": ("stats/ppi_design.py", (
        "x_quantile", "x_normal_interval", "x_unit_sums", "x_clustered_variance", "x_tuned_lambda", "x_tuned_count",
        "x__correction", "x_design", "x_estimable", "x_difference", "x_ppi_python_lambda", "x_summarize")),
    "selective": ("stats/selective.py", ("xǁRiskControllerǁthresholds*", "x__last_of_ties", "x_largest_feasible_prefix",
                                         "xǁScopeǁ*", "xǁNaiveǁ*", "xǁHeuristicǁ*", "xǁVanillaǁ*",
                                         "xǁClopperPearsonǁgrid_values", "xǁClopperPearsonǁupper_bound",
                                         "xǁClopperPearsonǁthresholds_at_levels", "x_apply")),
    "drift": ("stats/drift.py", ALL),
    "history": ("workflows/nightly/history.py", (
        "xǁDetectorǁ*", "x_night_statistics", "x_shiryaev_roberts", "x_monitor", "x_night_order")),
    "checks": ("stats/checks.py", ALL),
}
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped",
          35: "suspicious", 36: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", -24: "timeout",
          -11: "segfault", -9: "timeout", 37: "caught by type check", None: "not run"}


def module_name(path: str) -> str:
    return "judgecp." + path.removesuffix(".py").replace("/", ".")


def patterns(modules: list[str]) -> list[str]:
    """mutmut's mutant-name globs for the functions of ``modules``."""
    out = []
    for key in modules:
        path, functions = SCOPE[key]
        out += [f"{module_name(path)}.{f}__mutmut_*" for f in functions]
    return out


def prepare(fresh: bool) -> None:
    """``build/mutate``: judgecp (a link to plugin/), a copy of the tests, mutmut's configuration. mutmut keeps
    each mutant's result between runs (``mutants/**/*.meta``): a run of other modules adds to them; ``fresh``
    starts over."""
    if fresh and WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(parents=True, exist_ok=True)
    for name, target in (("judgecp", "plugin"), ("scripts", "scripts")):  # tests load scripts/measure_*.py
        if not (WORK / name).exists():
            (WORK / name).symlink_to(REPO / target)
    shutil.rmtree(WORK / "tests", ignore_errors=True)
    # The harness folders' tests are not selected, but tests/vlmeval/fixtures hold files test_compare.py reads.
    shutil.copytree(REPO / "tests", WORK / "tests", ignore=shutil.ignore_patterns("__pycache__", "lm_eval", "lmms_eval",
                                                                                   "ensemble"))
    shutil.copy(REPO / "scripts" / "mutation.toml", WORK / "pyproject.toml")


def results() -> dict[str, dict[str, int | None]]:
    """Every mutant's exit code, by module key (mutmut's ``.meta`` files), for the functions in scope."""
    out: dict[str, dict[str, int | None]] = {}
    for key, (path, functions) in SCOPE.items():
        meta = WORK / "mutants" / "judgecp" / (path + ".meta")
        if not meta.exists():
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        prefix = module_name(path) + "."
        out[key] = {name: code for name, code in codes.items()
                    if any(fnmatch.fnmatchcase(name, f"{prefix}{f}__mutmut_*") for f in functions)}
    return out


def sample(modules: list[str], size: int, seed: int) -> list[str]:
    """``size`` mutants of each module drawn uniformly without replacement (sorted names, ``random.Random(seed)``)."""
    rng = random.Random(seed)
    picked: list[str] = []
    for key in modules:
        path, functions = SCOPE[key]
        meta = WORK / "mutants" / "judgecp" / (path + ".meta")
        if not meta.exists():
            sys.exit(f"--sample: {meta} is missing: run once without --sample (mutmut generates the mutants first)")
        prefix = module_name(path) + "."
        names = sorted(n for n in json.loads(meta.read_text())["exit_code_by_key"]
                       if any(fnmatch.fnmatchcase(n, f"{prefix}{f}__mutmut_*") for f in functions))
        picked += rng.sample(names, min(size, len(names)))
    return picked


def diff(name: str) -> str:
    shown = subprocess.run([str(Path(sys.executable).parent / "mutmut"), "show", name], cwd=WORK,
                           capture_output=True, text=True, check=False).stdout
    return "\n".join(line for line in shown.splitlines() if re.match(r"^[-+][^-+]", line))


def report(codes: dict[str, dict[str, int | None]], seconds: float | None) -> str:
    lines = [
        "| module | mutants | killed | survived | no tests | kill rate |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    total = collections.Counter[str]()
    survivors: list[str] = []
    for key, by_name in codes.items():
        c = collections.Counter(STATUS.get(code, f"exit {code}") for code in by_name.values())
        killed = c["killed"] + c["timeout"] + c["segfault"]
        ran = sum(c.values()) - c["not run"] - c["skipped"]
        if not ran:
            continue
        total.update(mutants=ran, killed=killed, survived=c["survived"], none=c["no tests"])
        lines.append(f"| {SCOPE[key][0]} | {ran} | {killed} | {c['survived']} | {c['no tests']} | "
                     f"{100 * killed / ran:.1f}% |")
        survivors += [name for name, code in by_name.items() if STATUS.get(code) in ("survived", "no tests")
                      or (code is not None and code not in STATUS)]
    if total["mutants"]:
        lines.append(f"| all | {total['mutants']} | {total['killed']} | {total['survived']} | {total['none']} | "
                     f"{100 * total['killed'] / total['mutants']:.1f}% |")
    head = [f"mutmut {mutmut_version()}, {datetime.date.today().isoformat()}, {platform.node()} "
            f"({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})"
            + (f", {seconds / 60:.0f} min" if seconds is not None else ""), ""]
    body = ["", f"Survivors ({len(survivors)}):", ""]
    for name in survivors:
        body += [f"- `{name}`", "", "```diff", diff(name), "```", ""]
    return "\n".join(head + lines + body)


def mutmut_version() -> str:
    from importlib.metadata import version

    return version("mutmut")


def main() -> None:
    global WORK
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--modules", default=",".join(SCOPE), help=f"comma-separated, of {', '.join(SCOPE)}")
    p.add_argument("--jobs", type=int, default=2, help="mutmut's worker processes")
    p.add_argument("--report", default="", help="where the Markdown report goes (default: report.md in --work)")
    p.add_argument("--work", default=str(WORK), help="mutmut's folder (its results stay there between runs; a "
                   "second folder lets two runs of different modules go at once)")
    p.add_argument("--report-only", action="store_true", help="count the last run's results, run nothing")
    p.add_argument("--fresh", action="store_true", help="forget every earlier result (build/mutate) first")
    p.add_argument("--sample", type=int, default=0, help="run a uniform random sample of this many mutants of each "
                   "module (seeded by --seed) instead of all: an estimate of the kill rate when a full run does not "
                   "fit the time (mutmut must have generated the mutants once: build/<work>/mutants/**/*.meta)")
    p.add_argument("--seed", type=int, default=37, help="the sample's seed")
    p.add_argument("--mutants", default="", help="comma-separated mutant names or globs: re-run only these "
                   "(after a test was added), keeping the other results")
    args = p.parse_args()
    WORK = Path(args.work).resolve()
    args.report = args.report or str(WORK / "report.md")
    modules = [m.strip() for m in args.modules.split(",") if m.strip()]
    unknown = sorted(set(modules) - set(SCOPE))
    if unknown:
        p.error(f"--modules: {unknown} not among {', '.join(SCOPE)}")
    seconds = None
    if not args.report_only:
        prepare(args.fresh and not args.mutants)
        if args.mutants:  # new tests for the same mutants: which tests run which function is measured again
            (WORK / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
        start = time.monotonic()
        names = args.mutants.split(",") if args.mutants else patterns(modules)
        if args.sample:
            names = sample(modules, args.sample, args.seed)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "JUDGECP_DISABLE_PLUGIN_AUTOLOAD": "1"}
        subprocess.run([str(Path(sys.executable).parent / "mutmut"), "run", "--max-children", str(args.jobs), *names],
                       cwd=WORK, env=env, check=False, stdout=subprocess.DEVNULL)
        seconds = time.monotonic() - start
    codes = {k: v for k, v in results().items() if k in modules}
    text = report(codes, seconds)
    Path(args.report).parent.mkdir(parents=True, exist_ok=True)
    Path(args.report).write_text(text + "\n")
    print(text.split("\n\nSurvivors")[0])
    print(f"\nsurvivors and their diffs: {args.report}")


if __name__ == "__main__":
    main()
