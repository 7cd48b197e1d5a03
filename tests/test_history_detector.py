"""The change detector of ``apply --history`` (issue 32) and its history file (issue 33).

The bets integrate to one (checked by quadrature, deterministic); without drift the detector's false
alarms over 25 nights stay within its guarantee (seeded Monte Carlo, binomial band at a false-failure
probability of 1e-3); a change after 25 quiet nights is flagged within 3 shifted nights, on shapes the old
monitor's power bets could not see (a missing tail, a bump in the middle) and on LLaVA-Critic's
diffusiondb items; the same night is not added twice; concurrent runs keep every night; gate reads the
alarm. Full-size figures: scripts/measure_drift_monitor.py (docs/benchmarks.md).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.stats import binom, chisquare

from judgecp import Fields, load
from judgecp.base.errors import InputError
from judgecp.cli import main
from judgecp.data import ScoreData
from judgecp.stats.drift import (
    BETA_LOG_NORMALISERS,
    BETAS,
    EPSILONS,
    FAMILY_WEIGHTS,
    TILT_LOG_NORMALISERS,
    TILTS,
    TREE_DEPTH,
    bet_statistics,
    cell_counts,
    log_bets,
    log_mean_exp,
    martingale_test,
    mixture_log_lr,
    online_pvalues,
    polya_log_lr,
    pvalues_after,
)
from judgecp.workflows.calibrators import calibrate, drift_statistic
from judgecp.workflows.nightly.history import (
    DEFAULT_HORIZON,
    Detector,
    monitor,
    night_digest,
    night_statistics,
    record_night,
    shiryaev_roberts,
)
from tests.helpers import judge_draw, shared_file

CELLS = 2**TREE_DEPTH
#: Each Monte-Carlo assertion fails on a correct detector with probability at most this.
FALSE_FAILURE = 1e-3


def at_most(rate: float, draws: int) -> int:
    """The most events a rate of at most ``rate`` gives in ``draws`` but with probability FALSE_FAILURE."""
    return int(binom.ppf(1 - FALSE_FAILURE, draws, rate))


def at_least(rate: float, draws: int) -> int:
    """The fewest events a rate of at least ``rate`` gives in ``draws`` but with probability FALSE_FAILURE."""
    return int(binom.ppf(FALSE_FAILURE, draws, rate))


def statistics_of(p: NDArray[np.float64], q: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """:func:`bet_statistics` of each row of p-values (last axis: the items), vectorised; ``q``: ``1 - p``
    given exactly (for p-values within rounding of 1)."""
    rows, n = int(np.prod(p.shape[:-1])), p.shape[-1]
    cell = np.minimum((p * CELLS).astype(np.int64), CELLS - 1).reshape(rows, n)
    counts = np.bincount((cell + CELLS * np.arange(rows)[:, None]).ravel(), minlength=CELLS * rows)
    log_q = np.log1p(-p) if q is None else np.log(q)
    sums = [np.full(p.shape[:-1], float(n)), p.sum(-1), np.log(p).sum(-1), log_q.sum(-1)]
    return np.concatenate([counts.reshape(*p.shape[:-1], CELLS), np.stack(sums, axis=-1)], axis=-1)


def uniform_statistics(rng: np.random.Generator, shape: tuple[int, ...], n: int) -> NDArray[np.float64]:
    """:func:`bet_statistics` of ``shape`` nights of ``n`` independent uniform p-values (the null, fast)."""
    return statistics_of(rng.uniform(size=(*shape, n)))


def test_the_vectorised_statistics_are_bet_statistics() -> None:
    p = np.random.default_rng(0).uniform(size=(3, 50))
    assert np.allclose(statistics_of(p), np.stack([bet_statistics(row) for row in p]))


# -- 1. the bets: every family is a density on (0, 1), item after item --------------------------------------


def _family_log_lr(statistics: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    n, s1, log_p, log_q = (statistics[..., CELLS + i] for i in range(4))
    return {"tree": polya_log_lr(statistics[..., :CELLS]),
            "tilt": log_mean_exp(TILTS * s1[..., None] - n[..., None] * TILT_LOG_NORMALISERS),
            "beta": log_mean_exp((BETAS[:, 0] - 1) * log_p[..., None] + (BETAS[:, 1] - 1) * log_q[..., None]
                                 - n[..., None] * BETA_LOG_NORMALISERS),
            "mixture": mixture_log_lr(statistics)}


def test_each_bet_integrates_to_one_after_any_earlier_items() -> None:
    """The bet on an item, given the items before it, is a density on (0, 1): E[M_(k+1) / M_k] = 1 under the
    null, checked by quadrature after 0, 1 and 30 earlier items, for each family and the mixture
    (Gauss-Legendre within each cell: exact for the tree, to rounding for the smooth bets; in the two edge
    cells after the substitution p = h x^20, which makes the unbounded beta bets with a >= 0.2 smooth). A
    bet that integrates to more than one is not a test martingale: the detector's guarantee would be void."""
    nodes, weights = np.polynomial.legendre.leggauss(60)
    K = 20
    x, wx = (nodes + 1) / 2, weights / 2
    h = 1 / CELLS
    inner = np.arange(1, CELLS - 1)
    grid = np.concatenate([h * x**K, ((inner[:, None] + x[None, :]) * h).ravel(), 1 - h * x**K])
    complement = np.concatenate([1 - grid[: -x.size], h * x**K])  # 1 - p, exact at the right edge
    edge = wx * K * h * x ** (K - 1)  # dp = K h x^(K - 1) dx
    w = np.concatenate([edge, np.tile(wx * h, inner.size), edge])
    rng = np.random.default_rng(0)
    for earlier in (np.zeros(0), rng.uniform(size=1), rng.beta(0.5, 2.0, size=30)):
        before = bet_statistics(earlier)
        then = _family_log_lr(before)
        if earlier.size == 0:
            assert all(abs(float(v)) < 1e-12 for v in then.values()), then  # every martingale starts at 1
        now = _family_log_lr(before[None, :] + statistics_of(grid[:, None], complement[:, None]))
        for name in now:
            integral = float(np.sum(w * np.exp(now[name] - then[name])))
            assert integral == pytest.approx(1.0, abs=1e-9), (name, earlier.size, integral)
    assert sum(FAMILY_WEIGHTS) == pytest.approx(1.0)


def test_the_stream_pvalues_are_uniform_with_ties() -> None:
    """The p-values the detector bets on (:func:`night_statistics`: smoothed online conformal p-values of
    the whole stream) are uniform on exchangeable data, ties included (values on a grid of 0.1): 40 seeded
    streams of 600 calibration and 25 x 200 night items; chi-square over the 64 cells and the mean of sum p,
    each at 1e-3."""
    rows = []
    for seed in range(40):
        values = np.round(np.random.default_rng(seed).normal(size=600 + 25 * 200), 1)  # ties on purpose
        rows.append(night_statistics(values[:600], list(values[600:].reshape(25, 200)), seed=seed))
    st = np.concatenate(rows)
    counts = st[:, :CELLS].sum(axis=0)
    assert chisquare(counts).pvalue > FALSE_FAILURE, counts
    n = st[:, CELLS].sum()
    z = (st[:, CELLS + 1].sum() - n / 2) / math.sqrt(n / 12)
    assert abs(z) < 3.3, z


# -- 2. false alarms: the guarantee -----------------------------------------------------------------------


def test_no_false_alarm_over_25_healthy_nights_beyond_the_guarantee() -> None:
    """Without drift, P(an alarm within the first 25 nights) <= 25 / A with A = horizon / level = 10,000
    (Doob: R_T - T is a martingale). 800 seeded streams of 25 nights of 200 independent uniform p-values
    (what the stream gives under exchangeability, test above): alarms at most the binomial 1 - 1e-3 quantile
    at rate 0.0025 (8 of 800). The issue's target (no false alarm in >= 98% of sequences) is within that.
    A threshold of 25 alarms in about 2.6% of streams and fails this test."""
    level, horizon, nights, streams = 0.01, DEFAULT_HORIZON, 25, 800
    log_r, since = shiryaev_roberts(uniform_statistics(np.random.default_rng(2), (streams, nights), 200))
    detectors = [Detector(level, horizon, log_r[k], since[k]) for k in range(streams)]
    assert detectors[0].threshold == 10_000
    alarms = sum(bool(d.alarm_nights.size) for d in detectors)
    assert alarms <= at_most(nights / detectors[0].threshold, streams), alarms
    # R_T - T is a martingale: R_T has mean T. Its mean over streams is dominated by rare large values, but it
    # is never above the mean by much more than its spread allows (a one-sided check on the bets' scale).
    assert np.exp(log_r[:, -1]).mean() <= nights * 3, np.exp(log_r[:, -1]).mean()


# -- 3. power: a change after 25 quiet nights ---------------------------------------------------------------


def _flagged_within(healthy: Any, shifted: Any, *, streams: int, shifted_nights: int = 3,
                    seed: int = 0) -> tuple[int, int]:
    """How many of ``streams`` seeded streams (600 calibration items, 25 healthy nights of 200, then
    ``shifted_nights`` shifted ones) alarm during the shifted nights, and how many before them."""
    flagged = early = 0
    for k in range(streams):
        rng = np.random.default_rng([seed, k])
        nights = [healthy(rng, 200) for _ in range(25)] + shifted(rng, shifted_nights, 200)
        alarms = monitor(healthy(rng, 600), nights, level=0.01).alarm_nights
        early += bool(alarms.size) and alarms[0] <= 25
        flagged += bool(alarms.size) and alarms[0] > 25
    return flagged, early


def _shape(sample: Any) -> Any:
    return lambda rng, k, n: [sample(rng, n) for _ in range(k)]


def _bump(rng: np.random.Generator, n: int) -> NDArray[np.float64]:
    out = rng.uniform(size=n)
    moved = rng.uniform(size=n) < 0.25
    out[moved] = np.clip(rng.normal(0.5, 0.04, int(moved.sum())), 0.0, 1.0)
    return out


@pytest.mark.parametrize(("name", "shifted"), [
    ("no top decile", _shape(lambda rng, n: rng.uniform(0.0, 0.9, n))),
    ("a bump in the middle", _shape(_bump)),
])
def test_a_change_after_25_quiet_nights_is_flagged_within_3_nights(name: str, shifted: Any) -> None:
    """A judge statistic uniform on (0, 1) (the tests are rank tests: any continuous law is this one), 25
    quiet nights, then nights missing the top decile, or with a quarter of the items in a bump in the
    middle: shapes power bets cannot see (the old monitor flagged 0 of 20 by the 5th such night,
    scripts/measure_drift_monitor.py). 30 streams: flagged within 3 shifted nights in at least the binomial
    1e-3 quantile at 80% (the issue's target; measured 100% at full size), and no early alarm."""
    flagged, early = _flagged_within(lambda rng, n: rng.uniform(size=n), shifted, streams=30)
    assert flagged >= at_least(0.8, 30), (name, flagged)
    assert early <= at_most(25 / 10_000, 30), (name, early)


def test_the_evidence_a_change_needs_does_not_grow_with_the_quiet_nights_before_it() -> None:
    """Every night's martingale has the same stake (Shiryaev-Roberts): after 100 quiet nights a change is
    flagged as soon as after 25. The old monitor staked 1/(t(t+1)) on night t: a change after night 100
    needed 10,100 times the evidence of one on night 1 (with those stakes this test flags 2 of 30). 30
    streams of p-values (the stream's, fast: uniform while quiet; U(0.1, 1) on nights missing the top
    decile, as the stream gives them against a large reference): flagged within 2 shifted nights in at least
    the binomial 1e-3 quantile at 80% (measured 30 of 30), and the change placed on night 101."""
    rng, streams, quiet = np.random.default_rng(5), 30, 100
    stream = np.concatenate([uniform_statistics(rng, (streams, quiet), 200),
                             statistics_of(rng.uniform(0.1, 1.0, size=(streams, 2, 200)))], axis=1)
    log_r, since = shiryaev_roberts(stream)
    first = [Detector(0.01, DEFAULT_HORIZON, log_r[k], since[k]).alarm_nights for k in range(streams)]
    assert sum(bool(a.size) and a[0] <= quiet for a in first) <= at_most(quiet / 10_000, streams)
    assert sum(bool(a.size) and a[0] > quiet for a in first) >= at_least(0.8, streams)
    assert np.median(since[:, -1]) == quiet + 1  # the change is placed where it began


@lru_cache(maxsize=1)
def _llava_statistic() -> tuple[NDArray[np.float64], NDArray[np.str_]]:
    fields = Fields(label="gt_score", logprobs="s2_lp*", joins=(str(shared_file("mllm_judge", "task_labels.csv")),))
    data = load(shared_file("mllm_judge", "llava_critic_7b_features.csv"), "likert", fields)
    return np.asarray(drift_statistic(data)[1], dtype=np.float64), np.asarray(data.fields["orig_dataset"]).astype(str)


def test_diffusiondb_nights_after_25_quiet_ones_are_flagged_within_3_nights() -> None:
    """Issue 32's target on LLaVA-Critic: 600 calibration items and 25 nights of 200 drawn from all items,
    then nights of diffusiondb items only (each item used once before any repeats: 299 items): flagged
    within 3 shifted nights in at least the binomial 1e-3 quantile at 80% of 30 streams (measured 100% of
    500, by the first shifted night; the old monitor 0%)."""
    values, task = _llava_statistic()
    pool = values[task == "diffusiondb"]

    def shifted(rng: np.random.Generator, k: int, n: int) -> list[NDArray[np.float64]]:
        order = np.concatenate([rng.permutation(pool) for _ in range(math.ceil(k * n / pool.size))])
        return [order[i * n:(i + 1) * n] for i in range(k)]

    flagged, early = _flagged_within(lambda rng, n: rng.choice(values, n), shifted, streams=30)
    assert flagged >= at_least(0.8, 30), flagged
    assert early <= at_most(25 / 10_000, 30), early


# -- 4. the history file: the same night once, every night of concurrent runs ----------------------------------


@lru_cache(maxsize=1)
def _calibrator() -> Any:
    X, y = judge_draw(300, np.random.default_rng(9))
    return calibrate(ScoreData.from_arrays(X, y), method="naive", alpha=0.1)


def test_the_same_night_is_named_not_added_again(tmp_path: Path) -> None:
    cal, rng = _calibrator(), np.random.default_rng(3)
    path = tmp_path / "h.jsonl"
    first, second = rng.uniform(2, 4, 50), rng.uniform(2, 4, 50)
    assert record_night(path, cal, first, level=0.01)["night"] == 1
    assert record_night(path, cal, second, level=0.01)["night"] == 2
    before = path.read_bytes()
    again = record_night(path, cal, first[::-1], level=0.01)  # the same values in another row order
    assert again["recorded"] is False and again["duplicate_of"] == 1 and again["night"] == 1
    assert again["nights"] == 2 and path.read_bytes() == before
    assert record_night(path, cal, np.append(first, 3.0), level=0.01)["night"] == 3  # one more value: a new night


_WORKER = """
import pathlib, sys, time
import numpy as np
from judgecp.workflows.calibrators import Calibrator
from judgecp.workflows.nightly.history import record_night
cal = Calibrator.load(sys.argv[1])
folder = pathlib.Path(sys.argv[4])
(folder / f"ready{sys.argv[3]}").touch()
while not (folder / "go").exists():
    time.sleep(0.001)
for k in range(NIGHTS):
    values = np.random.default_rng([int(sys.argv[3]), k]).uniform(2.0, 4.0, 60)
    print(record_night(sys.argv[2], cal, values, level=0.01)["night"], flush=True)
"""
NIGHTS, WORKERS = 6, 3


def test_concurrent_runs_on_one_history_keep_every_night(tmp_path: Path) -> None:
    """Issue 33: three processes recording 6 nights each into one history at once (released together once
    all are ready): 18 nights, numbered 1..18 in the file, each process told distinct numbers, every
    night's values there once (by digest), and the file still verifies (a 19th night is recorded on top).
    Without the lock nights are lost (the last rename wins)."""
    cal = _calibrator()
    cal.save(tmp_path / "cal.json")
    history, sync = tmp_path / "h.jsonl", tmp_path / "sync"
    sync.mkdir()
    code = _WORKER.replace("NIGHTS", str(NIGHTS))
    workers = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "cal.json"), str(history), str(w),
                                 str(sync)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for w in range(WORKERS)]
    while len(list(sync.glob("ready*"))) < WORKERS and all(w.poll() is None for w in workers):
        time.sleep(0.01)
    (sync / "go").touch()
    told = []
    for worker in workers:
        out, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err
        told += [int(line) for line in out.split()]
    total = NIGHTS * WORKERS
    lines = [json.loads(line) for line in history.read_text().splitlines()]
    assert [line["night"] for line in lines] == list(range(1, total + 1))
    assert sorted(told) == list(range(1, total + 1))
    wanted = {night_digest(np.random.default_rng([w, k]).uniform(2.0, 4.0, 60))
              for w in range(WORKERS) for k in range(NIGHTS)}
    assert {line["digest"] for line in lines} == wanted
    assert record_night(history, cal, np.linspace(2, 4, 60), level=0.01)["night"] == total + 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.json", "h.jsonl", "sync"]  # no lock or temporary file


def test_a_history_of_the_old_monitor_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps({"schema": "judgecp.history/1", "night": 1, "values": [1.0]}) + "\n")
    with pytest.raises(InputError, match=r"judgecp\.history/1.*new file") as info:
        record_night(path, _calibrator(), np.linspace(2, 4, 20), level=0.01)
    assert "\n" not in str(info.value)


# -- 5. the CLI: the summary line, a repeated night, gate ----------------------------------------------------


def _csv(path: Path, X: NDArray[np.float64], y: NDArray[np.float64], ids: list[str], labeled: bool) -> Path:
    lines = ["sample_id,s2_lp1,s2_lp2,s2_lp3,s2_lp4,s2_lp5,gt_score"]
    for i in range(len(ids)):
        lines.append(",".join([ids[i], *(f"{v:.10f}" for v in X[i]), f"{y[i]:.1f}" if labeled else ""]))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_gate_fails_on_the_history_alarm_of_a_night_whose_own_test_passes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Night 4 (items humans rated <= 2) starts the alarm; night 5 is healthy: its own KS test passes but the
    history's alarm stands, and `gate --no-drift` fails on it (it passed before: no history metric);
    `gate --list` names the history's metrics. Applying night 5 again is named, not added."""
    rng = np.random.default_rng(0)
    X, y = judge_draw(1300, rng)
    low_x, low_y = judge_draw(1500, rng)
    X[900:1100], y[900:1100] = low_x[low_y <= 2][:200], low_y[low_y <= 2][:200]
    flags = ["--logprobs", "s2_lp*", "--id", "sample_id", "--label", "gt_score"]
    _csv(tmp_path / "cal.csv", X[:300], y[:300], [f"c{i}" for i in range(300)], labeled=True)
    assert main(["calibrate", str(tmp_path / "cal.csv"), "-o", str(tmp_path / "cal.json"), *flags]) == 0
    history = tmp_path / "h.jsonl"
    for night in range(1, 6):
        rows = slice(300 + 200 * (night - 1), 300 + 200 * night)
        _csv(tmp_path / f"n{night}.csv", X[rows], y[rows], [f"n{night}_{i}" for i in range(200)], labeled=False)
        capsys.readouterr()
        assert main(["apply", str(tmp_path / "cal.json"), str(tmp_path / f"n{night}.csv"), *flags,
                     "--json", str(tmp_path / f"s{night}.json"), "--history", str(history)]) == 0
        out = capsys.readouterr().out
        summary = json.loads((tmp_path / f"s{night}.json").read_text())
        assert f"night {night} of {night}, evidence" in out
        assert summary["history"]["alarm"] is (night >= 4), (night, summary["history"]["evidence_by_night"])
    assert summary["drift"]["drift"] is False and summary["history"]["first_alarm"] == 4
    assert "ALARM since night 4" in out
    assert main(["gate", str(tmp_path / "s3.json"), "--no-drift"]) == 0
    capsys.readouterr()
    assert main(["gate", str(tmp_path / "s5.json"), "--no-drift"]) == 1
    assert "drift detected across nights (history.alarm" in capsys.readouterr().out
    assert main(["gate", str(tmp_path / "s5.json"), "--list"]) == 0
    listed = capsys.readouterr().out
    assert "history.alarm = 1" in listed and "history.threshold = 10000" in listed
    before = history.read_bytes()
    assert main(["apply", str(tmp_path / "cal.json"), str(tmp_path / "n5.csv"), *flags,
                 "--json", str(tmp_path / "again.json"), "--history", str(history)]) == 0
    out, err = capsys.readouterr()
    assert "NOT ADDED: the run's values are night 5's" in out and "not added again" in err
    assert history.read_bytes() == before
    again = json.loads((tmp_path / "again.json").read_text())["history"]
    assert again["recorded"] is False and again["duplicate_of"] == 5 and again["nights"] == 5



def test_the_drift_statistics_at_their_edges() -> None:
    """Mutation testing's survivors (docs/testing.md): a p-value of exactly 1 keeps sum log(1 - p) finite (the
    bet's statistics clip it below 1), and an empty run's martingale result still names its level."""
    stats = bet_statistics(np.array([0.25, 1.0, 0.5]))
    assert np.isfinite(stats).all()
    assert stats[-1] == pytest.approx(math.log(0.75) + math.log(2.0**-53) + math.log(0.5))
    empty = martingale_test(np.arange(5.0), np.zeros(0), level=0.02)
    assert empty["level"] == 0.02 and empty["n_run"] == 0 and empty["alarm"] is None
    # The tilt family's normaliser log E[exp(t U)] = log((e^t - 1) / t) for U uniform: 0 at t = 0 (its limit).
    assert (TILTS == 0).any() and (TILT_LOG_NORMALISERS[TILTS == 0] == 0).all()
    nonzero = TILTS != 0
    assert TILT_LOG_NORMALISERS[nonzero] == pytest.approx(np.log(np.expm1(TILTS[nonzero]) / TILTS[nonzero]))


def test_online_pvalues_and_bets_by_hand() -> None:
    """Mutation testing's survivors (docs/testing.md): the smoothed online p-value of item i ranks it among the
    items before it and itself, p_i = (#{j <= i: s_j > s_i} + u_i #{j <= i: s_j = s_i}) / (seen + i), counted
    here by loops, on a sequence with ties, after no item and after three; each bet is log(e p^(e - 1)); a
    martingale's result reports its final value, at most its running maximum."""
    seq = np.array([2.0, 1.0, 2.0, 3.0, 1.0, 2.0])
    u = np.array([0.3, 0.9, 0.5, 0.1, 0.7, 0.2])
    for seen in (np.zeros(0), np.array([1.0, 2.0, 2.5])):
        every = np.concatenate([seen, seq])
        want = []
        for i in range(seq.size):
            before = every[: seen.size + i + 1]
            want.append(((before > seq[i]).sum() + u[i] * (before == seq[i]).sum()) / before.size)
        assert pvalues_after(seen, seq, u) == pytest.approx(want, rel=1e-12)
    p = np.array([0.01, 0.5, 1.0])
    want_bets = np.log(EPSILONS)[None, :] + (EPSILONS[None, :] - 1.0) * np.log(p)[:, None]
    assert log_bets(p) == pytest.approx(want_bets, rel=1e-12)
    out = martingale_test(np.arange(20.0), np.arange(20.0) + 0.5, level=0.05, seed=1)
    assert 0 < out["final"] <= out["max"]


def test_polya_counts_must_be_whole_and_not_negative() -> None:
    """Mutation testing's survivor: a negative count is refused as a fractional one is."""
    for bad in ([-1.0] + [1.0] * 15, [0.5] + [1.0] * 15):
        with pytest.raises(ValueError, match="whole numbers >= 0"):
            polya_log_lr(np.array(bad))


def test_log_mean_exp_by_row_and_online_pvalues_of_ties() -> None:
    """Mutation testing's survivors: log-mean-exp takes each row's own maximum (a row far below another does not
    underflow to -inf); on a sequence of ties each smoothed p-value is its own uniform (greater 0, equal i, of i)."""
    assert log_mean_exp(np.array([[0.0, 0.0], [-1000.0, -1000.0]]), axis=1) == pytest.approx([0.0, -1000.0])
    u = np.random.default_rng(4).uniform(size=5)
    assert online_pvalues(np.zeros(5), np.random.default_rng(4)) == pytest.approx(u, rel=1e-12)
    assert cell_counts(np.array([0.0, 0.5, 1.0]), depth=1).tolist() == [1, 2]


def _martingale_by_loops(calibration: np.ndarray, run: np.ndarray, level: float, seed: int) -> dict[str, Any]:
    """martingale_test's path recomputed item by item: the same seeded order and tie-breaking uniforms, each
    p-value counted by comparisons, each power martingale multiplied out with math.fsum of logs, the mixture
    averaged over the exponents and both signs."""
    rng = np.random.default_rng(seed)
    seq = [*rng.permutation(calibration).tolist(), *rng.permutation(run).tolist()]
    paths = []
    for sign in (1.0, -1.0):
        u = rng.uniform(size=len(seq))
        signed = [sign * a for a in seq]
        logs = [0.0] * EPSILONS.size
        path = []
        for i in range(calibration.size, len(seq)):
            before = signed[: i + 1]
            p = (sum(b > signed[i] for b in before) + u[i] * sum(b == signed[i] for b in before)) / (i + 1)
            bets = [math.log(e) + (e - 1.0) * math.log(max(p, 1e-300)) for e in EPSILONS]
            logs = [math.fsum((lg, bet)) for lg, bet in zip(logs, bets, strict=True)]
            path.append(logs)
        paths.append(path)
    values = [sum(math.exp(v) for v in paths[0][k] + paths[1][k]) / (2 * EPSILONS.size) for k in range(run.size)]
    first = next((k + 1 for k, v in enumerate(values) if v >= 1.0 / level), None)
    return {"max": max(values), "final": values[-1], "first_alarm": first}


@pytest.mark.parametrize("shift", [0.0, 0.8, 2.0])
def test_the_martingale_path_and_its_first_alarm_against_loops(shift: float) -> None:
    """The martingale's first alarm, maximum and final value against an item-by-item recomputation
    (:func:`_martingale_by_loops`): a mutation testing survivor reported the first alarm one item late, which
    no test pinned. Runs shifted by 0, 0.8 and 2 standard deviations: no alarm, an alarm part-way, an early one."""
    rng = np.random.default_rng(11)
    cal = rng.normal(size=60).round(1)  # rounded: ties, broken by the uniforms
    run = (rng.normal(size=40) + shift).round(1)
    got = martingale_test(cal, run, level=0.05, seed=3)
    want = _martingale_by_loops(cal, run, level=0.05, seed=3)
    assert got["first_alarm"] == want["first_alarm"]
    assert got["alarm"] is (want["first_alarm"] is not None)
    assert got["max"] == pytest.approx(want["max"], rel=1e-9)
    assert got["final"] == pytest.approx(want["final"], rel=1e-9)
    if shift == 2.0:
        assert want["first_alarm"] is not None and want["first_alarm"] < run.size
