"""The adaptation model: estimators, calibration, valuations and the batched API."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from shockwave.adaptation import (
    ESTIMATORS,
    Estimator,
    JobModels,
    predict_remaining,
    runtime_regimes,
)
from shockwave.throughputs import ThroughputTable
from shockwave.traces import load_workload
from shockwave.workload import Job, Workload

TRACES = Path(__file__).resolve().parent.parent / "traces"


@pytest.fixture(scope="module")
def canonical() -> Workload:
    """The canonical 120-job trace profiled with the TACC throughputs."""
    return load_workload(TRACES / "canonical_120jobs.trace", TRACES / "tacc_throughputs.json")


def models_at(
    job: Job, epochs_done: float, estimator: Estimator = "markov", **settings: object
) -> JobModels:
    """A container holding ``job`` after it trained its profile up to ``epochs_done``."""
    models = JobModels(estimator, **settings)  # type: ignore[arg-type]
    models.add_job(job)
    completed = math.floor(epochs_done)
    current = job.batch_sizes[min(completed, job.num_epochs - 1)]
    models.observe(
        [job.job_id],
        [epochs_done],
        [current],
        completed_batch_sizes=job.batch_sizes[:completed],
        completed_counts=[completed],
    )
    return models


def true_remaining(job: Job, epochs_done: float) -> float:
    """Remaining seconds of the profile after ``epochs_done`` epochs."""
    completed = math.floor(epochs_done)
    if completed >= job.num_epochs:
        return 0.0
    fraction = epochs_done - completed
    return float(job.epoch_seconds[completed:].sum() - fraction * job.epoch_seconds[completed])


def mean_of(models: JobModels, estimator: Estimator | None = None) -> float:
    return float(models.predict(0, estimator=estimator).remaining_mean_seconds[0])


def static_job(epochs: int = 12, seconds: float = 37.0, batch_size: int = 64) -> Job:
    return Job(
        job_id=7,
        arrival_time=0.0,
        gang_size=1,
        model="ResNet-18",
        dataset="CIFAR-10",
        mode="static",
        batch_sizes=np.full(epochs, batch_size),
        epoch_seconds=np.full(epochs, seconds),
    )


def staircase_job(runs: list[tuple[int, int, float]], job_id: int = 3) -> Job:
    """A job from ``(batch size, epochs, seconds per epoch)`` runs."""
    bs = np.concatenate([np.full(n, b) for b, n, _ in runs])
    secs = np.concatenate([np.full(n, s) for _, n, s in runs])
    return Job(job_id, 0.0, 1, "ResNet-18", "CIFAR-10", "gns", bs, secs)


# --- static jobs -----------------------------------------------------------------------------


@pytest.mark.parametrize("epochs_done", [0.0, 3.0, 5.25, 11.5])
@pytest.mark.parametrize("estimator", ["markov", "oracle"])
def test_static_jobs_are_predicted_exactly(epochs_done: float, estimator: Estimator) -> None:
    job = static_job()
    models = models_at(job, epochs_done, estimator)
    prediction = models.predict(3, 120.0)
    expected = (job.num_epochs - epochs_done) * 37.0
    assert prediction.remaining_mean_seconds[0] == pytest.approx(expected, rel=1e-12)
    assert prediction.remaining_std_seconds[0] == 0.0
    assert prediction.offsets[0] == pytest.approx(epochs_done / job.num_epochs)


@pytest.mark.parametrize("epochs_done", [0, 3, 11])
def test_dirichlet_on_a_static_job_is_exact_up_to_the_originals_current_epoch_quirk(
    epochs_done: int,
) -> None:
    # The original counts the epoch in progress as observed and subtracts it, so a static job is
    # predicted (E - e - 1) * d; with whole-second durations its rounding is exact.
    job = static_job()
    models = models_at(job, float(epochs_done), "dirichlet")
    assert mean_of(models) == pytest.approx((job.num_epochs - epochs_done - 1) * 37.0)
    assert models.predict(0).remaining_std_seconds[0] == 0.0


def test_finished_jobs_have_nothing_left() -> None:
    job = static_job()
    for estimator in ESTIMATORS:
        prediction = models_at(job, float(job.num_epochs), estimator).predict(4, 120.0)
        assert prediction.remaining_mean_seconds[0] == 0.0
        assert prediction.offsets[0] == 1.0
        assert not prediction.valuations.any()


# --- the dirichlet estimator (NOTES.md section 5.3) --------------------------------------------


def dirichlet_by_hand(profile: list[int], seconds: dict[int, float], completed: int) -> float:
    """The original's rule, step by step, as NOTES.md section 5.3 states it."""
    total = len(profile)
    sizes = sorted(set(profile))
    posterior = {b: total / len(sizes) for b in sizes}
    observed = profile[: completed + 1]
    for b in observed:
        posterior[b] += 1
    concentration = sum(posterior.values())
    rebased = {b: total * a / concentration for b, a in posterior.items()}
    for b in observed:
        if rebased[b] >= 1:
            rebased[b] -= 1
    remaining = total - completed
    inflated = max(int(sum(rebased.values()) + 1), remaining)
    mean_seconds = {b: max(1.0, round(seconds[b])) for b in sizes}
    raw = sum(m * mean_seconds[b] for b, m in rebased.items())
    return raw * remaining / inflated


@pytest.mark.parametrize("completed", [0, 1, 4, 9, 10, 13])
def test_dirichlet_matches_the_rules_by_hand(completed: int) -> None:
    runs = [(16, 5, 60.4), (32, 3, 33.5), (64, 6, 20.7)]
    job = staircase_job(runs)
    profile = job.batch_sizes.tolist()
    seconds = {b: s for b, _, s in runs}
    models = models_at(job, float(completed), "dirichlet")
    assert mean_of(models) == pytest.approx(dirichlet_by_hand(profile, seconds, completed))


def test_dirichlet_reproduces_the_notes_example(canonical: Workload) -> None:
    # NOTES.md section 5.3: job 40 (LM bs 10, Accordion, E = 273): 13,192 s at e = 0 and
    # 6,465 s at e = 136.
    job = canonical[40]
    assert mean_of(models_at(job, 0.0, "dirichlet")) == pytest.approx(13_192, abs=0.5)
    assert mean_of(models_at(job, 136.0, "dirichlet")) == pytest.approx(6_465, abs=0.5)


def test_the_originals_dirichlet_rule_is_not_monotone() -> None:
    # A job that trains every epoch at batch size 16 (2 s) with candidates {8: 1 s, 16: 2 s}
    # and 7 epochs: after 5 epochs the rule predicts more than after 4, because step 4 stops
    # subtracting observed epochs once m_b < 1. Kept for fidelity; markov is monotone here.
    regimes = {8: 1.0, 16: 2.0}
    after_four, _ = predict_remaining([16] * 4, regimes, 7, estimator="dirichlet")
    after_five, _ = predict_remaining([16] * 5, regimes, 7, estimator="dirichlet")
    assert after_four == pytest.approx(83 / 22)
    assert after_five == pytest.approx(95 / 24)
    assert after_five > after_four
    markov = [predict_remaining([16] * k, regimes, 7)[0] for k in range(1, 8)]
    assert markov == sorted(markov, reverse=True)


def test_dirichlet_observes_the_profile_not_the_reported_batch_sizes() -> None:
    job = staircase_job([(16, 5, 60.0), (64, 5, 20.0)])
    reported = JobModels("dirichlet")
    reported.add_job(job)
    # The job reports running at 64 all along (as the original's runtime rules may).
    reported.observe([3], [4.0], [64], completed_batch_sizes=[64] * 4, completed_counts=[4])
    assert mean_of(reported) == pytest.approx(mean_of(models_at(job, 4.0, "dirichlet")))


def test_dirichlet_unrounded_durations_option() -> None:
    job = staircase_job([(16, 5, 60.4), (64, 5, 20.4)])
    rounded = mean_of(models_at(job, 2.0, "dirichlet"))
    exact = mean_of(models_at(job, 2.0, "dirichlet", round_durations=False))
    assert rounded != exact
    assert exact == pytest.approx(rounded * 60.4 / 60.0, rel=0.02)


# --- markov ------------------------------------------------------------------------------------


def test_markov_is_exact_in_the_last_epoch(canonical: Workload) -> None:
    for job in canonical:
        done = job.num_epochs - 1 + 0.25
        assert mean_of(models_at(job, done)) == pytest.approx(true_remaining(job, done), rel=1e-9)


def test_markov_converges_to_the_truth_near_the_end(canonical: Workload) -> None:
    adapting = [job for job in canonical if len(np.unique(job.batch_sizes)) > 1]
    medians = []
    for share in (0.25, 0.5, 0.75, 0.9):
        errors = []
        for job in adapting:
            done = float(int(share * job.num_epochs))
            truth = true_remaining(job, done)
            errors.append(abs(mean_of(models_at(job, done)) - truth) / truth)
        medians.append(float(np.median(errors)))
    assert medians == sorted(medians, reverse=True)
    assert medians[-1] < 1e-3


def test_markov_beats_dirichlet_on_adapting_canonical_jobs(canonical: Workload) -> None:
    adapting = [job for job in canonical if len(np.unique(job.batch_sizes)) > 1]
    errors: dict[str, list[float]] = {"markov": [], "dirichlet": []}
    for job in adapting:
        for share in (0.1, 0.25, 0.5, 0.75):
            done = float(int(share * job.num_epochs))
            truth = true_remaining(job, done)
            for estimator in errors:
                models = models_at(job, done, estimator, round_durations=False)  # type: ignore[arg-type]
                errors[estimator].append(abs(mean_of(models) - truth) / truth)
    assert np.mean(errors["markov"]) < 0.5 * np.mean(errors["dirichlet"])


def test_markov_learns_batch_sizes_do_not_go_back() -> None:
    # Two regimes, the job moved from the slow one to the fast one: the rest is fast.
    job = staircase_job([(16, 10, 50.0), (64, 40, 10.0)])
    done = 20.0
    prediction = mean_of(models_at(job, done))
    assert prediction == pytest.approx(true_remaining(job, done), rel=0.03)


def test_markov_learns_from_a_long_stay_that_stays_are_long() -> None:
    # Four regimes, the third one slow. The longer the job stays at its first batch size, the
    # lower the pooled forward hazard, the longer the stay it expects in the slow regime: the
    # prediction may rise while the job trains (Bayesian learning, not monotone), a little.
    regimes = {8: 1.0, 16: 7.0, 32: 300.0, 64: 1.0}
    means = [predict_remaining([8] * k, regimes, 19)[0] for k in range(1, 10)]
    rises = [b / a - 1 for a, b in itertools.pairwise(means) if b > a]
    assert rises
    assert max(rises) < 0.05


def test_markov_std_reflects_uncertainty_about_the_switch() -> None:
    job = staircase_job([(16, 10, 50.0), (64, 40, 10.0)])
    early = models_at(job, 2.0).predict(0)
    late = models_at(job, 30.0).predict(0)
    assert early.remaining_std_seconds[0] > 0.0
    assert late.remaining_std_seconds[0] < 0.1 * early.remaining_std_seconds[0]


def test_markov_deadline_can_be_switched_off() -> None:
    job = staircase_job([(16, 10, 50.0), (64, 40, 10.0)])
    with_deadline = mean_of(models_at(job, 8.0))
    without = mean_of(models_at(job, 8.0, deadline=False))
    # Without the deadline the chain forgets it must reach the fast regime: it predicts longer.
    assert without > with_deadline


# --- valuations --------------------------------------------------------------------------------


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_valuations_follow_continuous_service(estimator: Estimator) -> None:
    job = staircase_job([(16, 4, 50.0), (64, 20, 30.0)])
    prediction = models_at(job, 2.5, estimator).predict(20, 120.0)
    row = prediction.valuations[0]
    remaining_fraction = 1.0 - prediction.offsets[0]
    assert (row >= 0).all()
    # The job finishes inside the window: the row sums to its remaining fraction...
    assert row.sum() == pytest.approx(remaining_fraction, rel=1e-9)
    # ...and is 0 after its expected finish (continuous service). The original's planner
    # converts epochs to time with the mean duration of the epochs so far (here 50 s).
    finish_seconds = (
        remaining_fraction * job.num_epochs * 50.0
        if estimator == "dirichlet"
        else prediction.remaining_mean_seconds[0]
    )
    last_round = int(finish_seconds // 120.0)
    assert row[last_round] > 0
    assert not row[last_round + 1 :].any()


def test_static_valuations_are_the_progress_rate() -> None:
    job = static_job(epochs=100, seconds=40.0)
    prediction = models_at(job, 10.0).predict(5, 120.0)
    np.testing.assert_allclose(prediction.valuations[0], np.full(5, 3.0 / 100), rtol=1e-12)


def test_markov_valuations_agree_with_the_mean_when_the_job_ends_in_the_window() -> None:
    job = staircase_job([(16, 6, 50.0), (64, 30, 25.0)])
    for done in (0.0, 3.5, 6.0, 20.0):
        prediction = models_at(job, done).predict(20, 120.0)
        served = prediction.valuations[0].cumsum() * job.num_epochs
        remaining = job.num_epochs - done
        mean_rounds = prediction.remaining_mean_seconds[0] / 120.0
        # Progress completes in the round holding the expected finish.
        assert served[int(mean_rounds)] == pytest.approx(remaining, rel=1e-9)
        if int(mean_rounds) > 0:
            assert served[int(mean_rounds) - 1] < remaining


# --- calibration -------------------------------------------------------------------------------


def test_markov_rate_calibration_tracks_a_slower_job() -> None:
    job = static_job(epochs=50, seconds=40.0)
    models = models_at(job, 5.0)
    rounds = np.arange(1, 21)
    models.observe_throughput(
        np.full(20, job.job_id), rounds, np.full(20, 64), epoch_seconds=np.full(20, 50.0)
    )
    # 20 samples at rate ratio 0.8, one pseudo-sample at 1 per level.
    job_ratio = (20 * 0.8 + 1.0) / 21
    ratio = (20 * 0.8 + job_ratio) / 21
    state = models.state(job.job_id)
    assert state.rate_factors[0] == pytest.approx(1 / ratio)
    assert mean_of(models) == pytest.approx(45 * 40.0 / ratio)


def test_markov_calibration_averages_rates_not_durations() -> None:
    # Throughput +-50 % around the profile: rates average to the profile's.
    job = static_job(epochs=50, seconds=40.0)
    models = models_at(job, 5.0)
    measured = np.array([40.0 / 1.5, 40.0 / 0.5] * 10)
    models.observe_throughput(
        np.full(20, 7), np.arange(1, 21), np.full(20, 64), epoch_seconds=measured
    )
    assert mean_of(models) == pytest.approx(45 * 40.0)


def test_original_calibration_window_rule_by_hand() -> None:
    # Profile: 10 epochs of 100 s. One sample in round 3 at half the profiled rate.
    job = static_job(epochs=10, seconds=100.0)
    models = models_at(job, 1.0, "dirichlet")
    models.observe_throughput([7], [3], [64], epoch_seconds=[200.0])
    # measured = 3 * 120 / 200 = 1.8 epochs; profiled over 360 s = 3 + 60/100 = 3.6 epochs;
    # off by 50 % > 40 %: every duration *= 3.6 / 1.8.
    assert models.state(7).window_factor == pytest.approx(2.0)
    assert mean_of(models) == pytest.approx(8 * 200.0)
    # A second sample at the nominal rate is within the band of the calibrated walk: it sticks.
    models.observe_throughput([7], [4], [64], epoch_seconds=[100.0])
    assert models.state(7).window_factor == pytest.approx(2.0)


def test_original_calibration_ignores_small_deviations() -> None:
    job = static_job(epochs=10, seconds=100.0)
    models = models_at(job, 1.0, "dirichlet")
    models.observe_throughput([7], [3], [64], epoch_seconds=[130.0])
    assert models.state(7).window_factor == 1.0


def test_steps_per_second_reads_like_epoch_seconds(canonical: Workload) -> None:
    job = canonical[40]
    assert job.samples_per_epoch is not None
    steps = JobModels()
    steps.add_job(job)
    secs = JobModels()
    secs.add_job(job)
    rate = 3.5  # steps/s at batch size 10
    steps.observe_throughput([40], [2], [10], steps_per_second=[rate])
    secs.observe_throughput([40], [2], [10], epoch_seconds=[job.samples_per_epoch / (10 * rate)])
    assert mean_of(steps) == mean_of(secs)


# --- the batched API ---------------------------------------------------------------------------


def test_jobs_come_and_go(canonical: Workload) -> None:
    models = JobModels()
    for job in canonical.jobs[:5]:
        models.add_job(job)
    assert len(models) == 5
    assert 3 in models
    models.remove(3)
    assert 3 not in models
    np.testing.assert_array_equal(models.job_ids, [0, 1, 2, 4])
    prediction = models.predict(20, 120.0)
    assert prediction.valuations.shape == (4, 20)
    np.testing.assert_array_equal(prediction.job_ids, [0, 1, 2, 4])


def test_predict_subset_in_requested_order(canonical: Workload) -> None:
    models = JobModels()
    for job in canonical.jobs[:6]:
        models.add_job(job)
    everything = models.predict(5, 120.0)
    subset = models.predict(5, 120.0, job_ids=[5, 1])
    np.testing.assert_array_equal(subset.job_ids, [5, 1])
    np.testing.assert_array_equal(subset.valuations, everything.valuations[[5, 1]])


def test_unreported_epochs_ran_at_the_previous_batch_size() -> None:
    job = staircase_job([(16, 5, 50.0), (64, 15, 20.0)])
    explicit = models_at(job, 8.0)
    implicit = JobModels()
    implicit.add_job(job)
    implicit.observe([3], [5.0], [64])  # five epochs at 16, now at 64
    implicit.observe([3], [8.0], [64])  # three more at 64
    assert mean_of(implicit) == mean_of(explicit)


def test_longest_remaining_first(canonical: Workload) -> None:
    models = JobModels()
    for job in canonical.jobs[:10]:
        models.add_job(job)
    prediction = models.predict(0)
    order = prediction.longest_remaining_first()
    ids, seconds = prediction.job_ids.tolist(), prediction.remaining_mean_seconds.tolist()
    means = dict(zip(ids, seconds, strict=True))
    assert [means[i] for i in order] == sorted(means.values(), reverse=True)


def test_predictions_are_deterministic_and_thread_independent(canonical: Workload) -> None:
    def run(threads: int) -> list[npt.NDArray[np.float64]]:
        models = JobModels(threads=threads)
        jobs = [canonical[i % 120] for i in range(1500)]
        for k, job in enumerate(jobs):
            models.add(k, job.batch_sizes, job.epoch_seconds)
        done = np.array([0.37 * job.num_epochs for job in jobs])
        current = [job.batch_sizes[int(d)] for job, d in zip(jobs, done, strict=True)]
        models.observe(np.arange(len(jobs)), done, current)
        p = models.predict(20, 120.0)
        return [p.remaining_mean_seconds, p.remaining_std_seconds, p.valuations, p.offsets]

    single, again, threaded = run(1), run(1), run(4)
    for a, b, c in zip(single, again, threaded, strict=True):
        assert a.tobytes() == b.tobytes() == c.tobytes()


def test_one_job_function_shares_the_batched_code_path() -> None:
    job = staircase_job([(16, 5, 50.0), (32, 5, 30.0), (64, 15, 20.0)])
    done = 7
    batched = mean_of(models_at(job, float(done)))
    history = job.batch_sizes[: done + 1]
    regimes = {16: 50.0, 32: 30.0, 64: 20.0}
    mean, std = predict_remaining(history, regimes, job.num_epochs)
    assert mean == batched
    assert std == models_at(job, float(done)).predict(0).remaining_std_seconds[0]
    fraction_mean, _ = predict_remaining(history, regimes, job.num_epochs, epoch_fraction=0.5)
    assert fraction_mean == pytest.approx(mean - 0.5 * 30.0)


def test_one_job_dirichlet_observes_the_given_history() -> None:
    regimes = {16: 60.0, 64: 20.0}
    history = [16, 16, 16]
    profile = [16, 16, 16, 64, 64, 64, 64, 64]
    mean, _ = predict_remaining(history, regimes, len(profile), estimator="dirichlet")
    assert mean == pytest.approx(dirichlet_by_hand(profile, regimes, 2))


def test_runtime_regimes_follow_the_originals_runtime_rules(canonical: Workload) -> None:
    throughputs = canonical.throughputs
    assert isinstance(throughputs, ThroughputTable)
    # Job 2: ResNet-50 bs 64 GNS on 1 GPU, too short for its staircase (static profile); the
    # runtime rule still doubles it to 128.
    assert set(runtime_regimes(canonical[2], throughputs)) == {128}
    # Job 5: LM at its largest batch size: nothing to reach.
    assert runtime_regimes(canonical[5], throughputs) == {}
    # Job 3: Transformer Accordion: never adapted.
    assert runtime_regimes(canonical[3], throughputs) == {}
    seconds = runtime_regimes(canonical[2], throughputs)[128]
    assert seconds == pytest.approx(100_000 / 128 / throughputs.isolated("ResNet-50", 128, 1))


def test_add_job_with_throughputs_accepts_runtime_batch_sizes(canonical: Workload) -> None:
    job = canonical[2]
    assert canonical.throughputs is not None
    seconds_at_128 = runtime_regimes(job, canonical.throughputs)[128]
    models = JobModels()
    models.add_job(job, throughputs=canonical.throughputs)
    models.observe([2], [3.0], [128])
    state = models.state(2)
    np.testing.assert_array_equal(state.batch_sizes, [64, 128])
    # The extra regime is not known to be visited; the job now runs in it.
    assert state.current_batch_size == 128
    assert mean_of(models) == pytest.approx(24 * seconds_at_128, rel=0.02)


# --- bad input ---------------------------------------------------------------------------------


def test_bad_profiles_name_the_field() -> None:
    models = JobModels()
    with pytest.raises(ValueError, match="epoch_seconds"):
        models.add(1, [32, 32], [10.0, math.nan])
    with pytest.raises(ValueError, match="epoch_seconds"):
        models.add(1, [32, 32], [10.0])
    with pytest.raises(ValueError, match="batch_sizes"):
        models.add(1, [], [])
    with pytest.raises(ValueError, match="batch_sizes"):
        models.add(1, [32, -1], [1.0, 1.0])
    with pytest.raises(ValueError, match="batch_sizes"):
        models.add(1, [[32]], [[1.0]])
    with pytest.raises(ValueError, match="batch_sizes"):
        models.add(1, [32.5], [1.0])
    with pytest.raises(ValueError, match="extra_regimes"):
        models.add(1, [32], [1.0], extra_regimes={32: 2.0})
    with pytest.raises(ValueError, match="samples_per_epoch"):
        models.add(1, [32], [1.0], samples_per_epoch=-3)
    models.add(1, [32], [1.0])
    with pytest.raises(ValueError, match="job_id"):
        models.add(1, [32], [1.0])
    assert len(models) == 1


def test_bad_observations_name_the_field_and_change_nothing() -> None:
    models = JobModels()
    models.add(1, [32] * 5 + [64] * 5, [10.0] * 5 + [6.0] * 5)
    models.add(2, [32] * 4, [10.0] * 4)
    models.observe([1, 2], [2.5, 1.0], [32, 32])
    before = models.predict(4, 120.0)
    bad_calls = [
        ("epochs_done", dict(job_ids=[1], epochs_done=[2.0], current_batch_sizes=[32])),
        ("epochs_done", dict(job_ids=[1], epochs_done=[11.0], current_batch_sizes=[32])),
        ("epochs_done", dict(job_ids=[1], epochs_done=[math.nan], current_batch_sizes=[32])),
        ("current_batch_sizes", dict(job_ids=[1], epochs_done=[3.0], current_batch_sizes=[48])),
        ("job_ids", dict(job_ids=[9], epochs_done=[3.0], current_batch_sizes=[32])),
        ("job_ids", dict(job_ids=[1, 1], epochs_done=[3.0, 4.0], current_batch_sizes=[32, 32])),
        ("epochs_done", dict(job_ids=[1, 2], epochs_done=[3.0], current_batch_sizes=[32, 32])),
        # job 2 is valid, job 1 is not: job 2 must not be updated either.
        (
            "current_batch_sizes",
            dict(job_ids=[2, 1], epochs_done=[2.0, 3.0], current_batch_sizes=[32, 7]),
        ),
    ]
    for field, call in bad_calls:
        with pytest.raises(ValueError, match=field):
            models.observe(**call)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="completed_counts"):
        models.observe([1], [4.0], [32], completed_batch_sizes=[32], completed_counts=[1])
    with pytest.raises(ValueError, match="completed_batch_sizes"):
        models.observe([1], [3.0], [32], completed_batch_sizes=[99], completed_counts=[1])
    with pytest.raises(ValueError, match="completed_counts"):
        models.observe([1], [3.0], [32], completed_batch_sizes=[32])
    after = models.predict(4, 120.0)
    assert before.remaining_mean_seconds.tobytes() == after.remaining_mean_seconds.tobytes()
    assert models.state(2).epochs_done == 1.0


def test_bad_throughput_samples_name_the_field() -> None:
    models = JobModels()
    models.add(1, [32] * 5, [10.0] * 5)
    models.observe_throughput([1], [4], [32], epoch_seconds=[11.0])
    with pytest.raises(ValueError, match="round_indices"):
        models.observe_throughput([1], [4], [32], epoch_seconds=[11.0])
    with pytest.raises(ValueError, match="round_indices"):
        models.observe_throughput([1, 1], [6, 5], [32, 32], epoch_seconds=[11.0, 11.0])
    with pytest.raises(ValueError, match="round_indices"):
        models.observe_throughput([1], [-1], [32], epoch_seconds=[11.0])
    with pytest.raises(ValueError, match="batch_sizes"):
        models.observe_throughput([1], [5], [64], epoch_seconds=[11.0])
    with pytest.raises(ValueError, match="epoch_seconds"):
        models.observe_throughput([1], [5], [32], epoch_seconds=[0.0])
    with pytest.raises(ValueError, match="steps_per_second"):
        models.observe_throughput([1], [5], [32], steps_per_second=[3.0])
    with pytest.raises(ValueError, match="epoch_seconds"):
        models.observe_throughput([1], [5], [32])
    assert models.state(1).rate_factors[0] == pytest.approx(1 / ((10 / 11 + (10 / 11 + 1) / 2) / 2))


def test_bad_settings_and_windows_name_the_argument() -> None:
    with pytest.raises(ValueError, match="estimator"):
        JobModels("bayes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="prior_strength"):
        JobModels(prior_strength=0.0)
    with pytest.raises(ValueError, match="calibration_round_seconds"):
        JobModels(calibration_round_seconds=math.inf)
    with pytest.raises(ValueError, match="max_blocks"):
        JobModels(max_blocks=0)
    models = JobModels()
    models.add(1, [32] * 5, [10.0] * 5)
    with pytest.raises(ValueError, match="round_seconds"):
        models.predict(5, -1.0)
    with pytest.raises(ValueError, match="num_rounds"):
        models.predict(-1, 120.0)
    with pytest.raises(ValueError, match="job_ids"):
        models.predict(5, 120.0, job_ids=[2])
    with pytest.raises(ValueError, match="job_id"):
        models.remove(2)


def test_one_job_function_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="batch_sizes_so_far"):
        predict_remaining([], {32: 1.0}, 5)
    with pytest.raises(ValueError, match="batch_sizes_so_far"):
        predict_remaining([64], {32: 1.0}, 5)
    with pytest.raises(ValueError, match="batch_sizes_so_far"):
        predict_remaining([32] * 6, {32: 1.0}, 5)
    with pytest.raises(ValueError, match="total_epochs"):
        predict_remaining([32], {32: 1.0}, 0)
    with pytest.raises(ValueError, match="epoch_seconds_by_batch_size"):
        predict_remaining([32], {32: -1.0}, 5)
    with pytest.raises(ValueError, match="epoch_fraction"):
        predict_remaining([32], {32: 1.0}, 5, epoch_fraction=1.0)
    with pytest.raises(ValueError, match="estimator"):
        predict_remaining([32], {32: 1.0}, 5, estimator="oracle")
