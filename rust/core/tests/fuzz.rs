//! Property-based fuzzing of the core's entry points (proptest, stable toolchain).
//!
//! Every entry point the Python binding calls gets random, extreme and malformed inputs; each
//! must return a value or an error, never panic, and what it returns must be sound: a converged
//! market has a finite certificate and a feasible plan, the equilibrium does not move when a
//! job's valuations or all budgets are scaled by any power of ten in 1e-300..1e300, and an
//! adaptation state read back from its bytes predicts bit for bit the same.
//!
//! Cases per property: `PROPTEST_CASES` (default 64 here, for CI; the campaign in
//! `docs/reliability.md` ran 10,000).

#![allow(clippy::needless_range_loop)]

use proptest::prelude::*;
use shockwave_core::adaptation::{
    predict_remaining, Estimator, JobModels, JobSpec, ModelSettings, ProgressUpdate,
    ThroughputSample, ThroughputValue, MAX_EPOCHS_PER_JOB, MIN_EPOCH_SECONDS,
};
use shockwave_core::market::{
    round_schedule, shift_bids, solve, MarketProblem, Method, RoundingInput, SolverSettings,
    SolverStatus,
};

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Magnitudes from 1e-300 to 1e300 (and exact zeros).
fn magnitude() -> impl Strategy<Value = f64> + Clone {
    prop_oneof![
        1 => Just(0.0),
        4 => (-300_i32..=300).prop_map(|e| 10f64.powi(e)),
        4 => 0.0..1.0f64,
        1 => 1e-320..1e-300f64,
        1 => Just(f64::MAX),
    ]
}

/// Anything a float can be, including what must be refused.
fn any_float() -> impl Strategy<Value = f64> + Clone {
    prop_oneof![
        8 => magnitude(),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(-1.0),
        1 => any::<f64>(),
    ]
}

#[derive(Debug, Clone)]
struct Market {
    jobs: usize,
    rounds: usize,
    types: usize,
    valuations: Vec<f64>,
    gangs: Vec<u32>,
    supply: Vec<f64>,
    budgets: Vec<f64>,
    progress: Vec<f64>,
    ceilings: Vec<f64>,
}

/// Markets of 1 to 5 jobs and rounds and 1 to 3 GPU types.
fn market(values: impl Strategy<Value = f64> + Clone) -> impl Strategy<Value = Market> {
    (
        1_usize..6,
        1_usize..6,
        prop_oneof![3 => Just(1_usize), 1 => 2_usize..4],
    )
        .prop_flat_map(move |(jobs, rounds, types)| {
            typed_market(values.clone(), jobs, rounds, types)
        })
}

fn typed_market(
    values: impl Strategy<Value = f64> + Clone,
    jobs: usize,
    rounds: usize,
    types: usize,
) -> impl Strategy<Value = Market> {
    {
        (
            prop::collection::vec(values.clone(), jobs * rounds * types),
            prop::collection::vec(0_u32..5, jobs),
            prop::collection::vec(
                prop_oneof![Just(4.0), 0.0..8.0f64, values.clone()],
                rounds * types,
            ),
            prop::collection::vec(values.clone(), jobs),
            prop::collection::vec(prop_oneof![Just(0.0), 0.0..1.0f64, values.clone()], jobs),
            prop::collection::vec(
                prop_oneof![Just(1.0), Just(f64::INFINITY), values.clone()],
                jobs,
            ),
        )
            .prop_map(
                move |(valuations, gangs, supply, budgets, progress, ceilings)| Market {
                    jobs,
                    rounds,
                    types,
                    valuations,
                    gangs,
                    supply,
                    budgets,
                    progress,
                    ceilings,
                },
            )
    }
}

impl Market {
    fn problem(&self) -> MarketProblem<'_> {
        MarketProblem {
            jobs: self.jobs,
            rounds: self.rounds,
            types: self.types,
            valuations: &self.valuations,
            gang_sizes: &self.gangs,
            supply: &self.supply,
            budgets: &self.budgets,
            progress: &self.progress,
            ceilings: &self.ceilings,
        }
    }
}

fn settings(method: Method, max_iter: usize) -> SolverSettings {
    SolverSettings {
        method,
        max_iter,
        ..SolverSettings::default()
    }
}

/// A converged answer must be finite and feasible.
fn check_sound(m: &Market, method: Method, warm: Option<&[f64]>) -> Result<(), TestCaseError> {
    let Ok(sol) = solve(&m.problem(), &settings(method, 2_000), warm) else {
        return Ok(()); // refused with an error: fine
    };
    for &x in &sol.shares {
        prop_assert!((0.0..=1.0).contains(&x), "share {x}");
    }
    let k = m.types;
    for slot in sol.shares.chunks_exact(k) {
        let held: f64 = slot.iter().sum();
        prop_assert!(held <= 1.0 + 1e-9, "{held} gangs in a round");
    }
    for g in 0..m.rounds * k {
        let used: f64 = (0..m.jobs)
            .map(|i| f64::from(m.gangs[i]) * sol.shares[i * m.rounds * k + g])
            .sum();
        prop_assert!(
            used <= m.supply[g] * (1.0 + 1e-9) + 1e-9,
            "good {g} oversold"
        );
    }
    // The status explains every answer: converged exactly when it says so.
    prop_assert_eq!(sol.converged, sol.status == SolverStatus::Converged);
    if sol.converged {
        prop_assert!(sol.gap.is_finite() && sol.gap <= 1e-6);
        prop_assert!(sol.objective.is_finite() && sol.dual_bound.is_finite());
        prop_assert!(sol.utilities.iter().all(|u| u.is_finite()));
        prop_assert!(sol.prices.iter().all(|p| p.is_finite() && *p >= 0.0));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn market_never_panics_and_converged_is_sound(m in market(any_float())) {
        check_sound(&m, Method::InteriorPoint, None)?;
        check_sound(&m, Method::ProportionalResponse, None)?;
    }

    #[test]
    fn market_with_extreme_magnitudes(m in market(magnitude()), warm in prop::collection::vec(magnitude(), 25)) {
        check_sound(&m, Method::InteriorPoint, None)?;
        let cells = m.jobs * m.rounds * m.types;
        let bids: Vec<f64> = (0..cells).map(|k| warm[k % warm.len()]).collect();
        check_sound(&m, Method::InteriorPoint, Some(&bids))?;
    }

    /// Scaling one job's valuations (no progress, no ceiling) or all budgets by any power of ten
    /// leaves the equilibrium shares where they were.
    #[test]
    fn equilibrium_is_scale_invariant(
        jobs in 1_usize..5,
        rounds in 1_usize..5,
        seed in prop::collection::vec(0.01..1.0f64, 25),
        row_scale in prop::collection::vec(-300_i32..=300, 5),
        budget_scale in -300_i32..=300,
    ) {
        let base = Market {
            jobs,
            rounds,
            types: 1,
            valuations: (0..jobs * rounds).map(|k| seed[k % seed.len()]).collect(),
            gangs: vec![1; jobs],
            supply: vec![1.0; rounds],
            budgets: (0..jobs).map(|i| seed[(7 * i + 3) % seed.len()]).collect(),
            progress: vec![0.0; jobs],
            ceilings: vec![f64::INFINITY; jobs],
        };
        let mut scaled = base.clone();
        for i in 0..jobs {
            let k = 10f64.powi(row_scale[i]);
            for t in 0..rounds {
                scaled.valuations[i * rounds + t] *= k;
            }
        }
        let b = 10f64.powi(budget_scale);
        scaled.budgets.iter_mut().for_each(|w| *w *= b);
        let s = settings(Method::InteriorPoint, 20_000);
        let one = solve(&base.problem(), &s, None);
        let two = solve(&scaled.problem(), &s, None);
        prop_assert!(one.is_ok() && two.is_ok());
        if let (Ok(one), Ok(two)) = (one, two) {
            if one.converged && two.converged {
                // Utilities per job, relative to the job's scale, agree within the certificate.
                for i in 0..jobs {
                    let k = 10f64.powi(row_scale[i]);
                    let (u1, u2) = (one.utilities[i], two.utilities[i] / k);
                    prop_assert!((u1 - u2).abs() <= 1e-2 * u1.max(1e-12), "job {i}: {u1} vs {u2}");
                }
            }
        }
    }

    #[test]
    fn shift_and_rounding_never_panic(
        jobs in 0_usize..5,
        rounds in 0_usize..6,
        types in 0_usize..4,
        elapsed in any::<usize>(),
        values in prop::collection::vec(any_float(), 36),
        gangs in prop::collection::vec(0_u32..6, 6),
        order in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let cells = jobs * rounds * types;
        let bids: Vec<f64> = (0..cells).map(|k| values[k % values.len()]).collect();
        let _ = shift_bids(&bids, jobs, rounds, types, elapsed);
        let _ = shift_bids(&bids, jobs + 1, rounds, types, elapsed);
        let shares: Vec<f64> = bids.iter().map(|x| x.abs().min(1.0)).collect();
        let supply: Vec<f64> = (0..rounds * types).map(|t| values[t % 36].abs()).collect();
        let deficit: Vec<f64> = (0..jobs * types).map(|i| values[(i + 6) % 36]).collect();
        let input = RoundingInput {
            jobs,
            rounds,
            types,
            shares: &shares,
            gang_sizes: &gangs[..jobs],
            supply: &supply,
            backfill_order: Some(&order),
            deficit: Some(&deficit),
        };
        let _ = round_schedule(&input);
    }
}

#[derive(Debug, Clone)]
enum Step {
    Add {
        id: i64,
        batch: Vec<i64>,
        seconds: Vec<f64>,
    },
    Remove(i64),
    Observe {
        id: i64,
        done: f64,
        batch: i64,
    },
    Throughput {
        id: i64,
        round: i64,
        batch: i64,
        value: f64,
        steps: bool,
    },
    Predict {
        rounds: usize,
        seconds: f64,
        estimator: u8,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let id = -2_i64..6;
    let batch = prop_oneof![Just(32_i64), Just(64), Just(128), any::<i64>()];
    prop_oneof![
        (
            id.clone(),
            prop::collection::vec(batch.clone(), 0..12),
            prop::collection::vec(any_float(), 0..12)
        )
            .prop_map(|(id, batch, seconds)| Step::Add { id, batch, seconds }),
        id.clone().prop_map(Step::Remove),
        (id.clone(), any_float(), batch.clone()).prop_map(|(id, done, batch)| Step::Observe {
            id,
            done,
            batch
        }),
        (id, -1_i64..50, batch, any_float(), any::<bool>()).prop_map(
            |(id, round, batch, value, steps)| Step::Throughput {
                id,
                round,
                batch,
                value,
                steps
            }
        ),
        (
            prop_oneof![0_usize..40, Just(usize::MAX), Just(1_usize << 40)],
            any_float(),
            0_u8..3
        )
            .prop_map(|(rounds, seconds, estimator)| Step::Predict {
                rounds,
                seconds,
                estimator
            }),
    ]
}

fn estimator(k: u8) -> Estimator {
    match k {
        0 => Estimator::Markov,
        1 => Estimator::Dirichlet,
        _ => Estimator::Oracle,
    }
}

proptest! {
    #![proptest_config(config())]

    /// Random sequences of calls: errors are fine, panics are not; at every step the state read
    /// back from its bytes (which hold no memoised prediction) predicts bit for bit what the
    /// original predicts (answering unchanged jobs from their memos).
    #[test]
    fn job_models_survive_any_sequence(steps in prop::collection::vec(step(), 1..25)) {
        let mut models = match JobModels::new(ModelSettings { threads: 1, ..ModelSettings::default() }) {
            Ok(m) => m,
            Err(e) => return Err(TestCaseError::fail(e.to_string())),
        };
        for step in steps {
            match step {
                Step::Add { id, batch, seconds } => {
                    let spec = JobSpec { batch_sizes: &batch, epoch_seconds: &seconds, epoch_counts: None, extra_regimes: &[], samples_per_epoch: Some(5e4) };
                    let _ = models.add(id, &spec);
                }
                Step::Remove(id) => { let _ = models.remove(id); }
                Step::Observe { id, done, batch } => {
                    let update = ProgressUpdate { job_id: id, epochs_done: done, current_batch_size: batch, completed_batch_sizes: None };
                    let _ = models.observe(&[update]);
                }
                Step::Throughput { id, round, batch, value, steps } => {
                    let value = if steps { ThroughputValue::StepsPerSecond(value) } else { ThroughputValue::EpochSeconds(value) };
                    let _ = models.observe_throughput(&[ThroughputSample { job_id: id, round, batch_size: batch, value }]);
                }
                Step::Predict { rounds, seconds, estimator: k } => {
                    let first = models.predict(None, estimator(k), rounds, seconds);
                    let copy = JobModels::from_bytes(&models.to_bytes());
                    prop_assert!(copy.is_ok());
                    if let (Ok(first), Ok(mut copy)) = (first, copy) {
                        let second = copy.predict(None, estimator(k), rounds, seconds);
                        prop_assert!(second.is_ok());
                        if let Ok(second) = second {
                            prop_assert_eq!(bits(&first.mean_seconds), bits(&second.mean_seconds));
                            prop_assert_eq!(bits(&first.valuations), bits(&second.valuations));
                            prop_assert_eq!(bits(&first.offsets), bits(&second.offsets));
                        }
                    }
                }
            }
        }
    }

    /// Corrupted, truncated or random bytes are refused, never a panic or a huge allocation.
    #[test]
    fn state_bytes_are_validated(flip in any::<usize>(), value in any::<u8>(), cut in any::<usize>(), noise in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut models = JobModels::new(ModelSettings::default()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let spec = JobSpec { batch_sizes: &[32, 32, 64], epoch_seconds: &[10.0, 10.0, 6.0], epoch_counts: None, extra_regimes: &[(128, 4.0)], samples_per_epoch: None };
        models.add(7, &spec).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let bytes = models.to_bytes();
        let mut mutated = bytes.clone();
        let k = flip % mutated.len();
        mutated[k] = value;
        let _ = JobModels::from_bytes(&mutated);
        let _ = JobModels::from_bytes(&bytes[..cut % bytes.len()]);
        let _ = JobModels::from_bytes(&noise);
        let mut prefixed = b"SWJM\x01\0\0\0\0\0\0\0".to_vec();
        prefixed.extend_from_slice(&noise);
        let _ = JobModels::from_bytes(&prefixed);
    }

    #[test]
    fn predict_remaining_never_panics(
        so_far in prop::collection::vec(prop_oneof![Just(32_i64), Just(64), any::<i64>()], 0..8),
        regimes in prop::collection::vec((prop_oneof![Just(32_i64), Just(64), any::<i64>()], any_float()), 0..4),
        total in any::<i64>(),
        fraction in any_float(),
        k in 0_u8..3,
    ) {
        let (bs, secs): (Vec<i64>, Vec<f64>) = regimes.into_iter().unzip();
        let _ = predict_remaining(&so_far, &bs, &secs, total, fraction, estimator(k), &ModelSettings::default());
    }
}

proptest! {
    #![proptest_config(config())]

    /// Run-length profiles with any counts and durations: refused at once past
    /// `MAX_EPOCHS_PER_JOB` epochs (a count of `2^63 - 1` once kept a core busy for centuries)
    /// or below `MIN_EPOCH_SECONDS`; what is accepted predicts finite valuations.
    #[test]
    fn run_counts_and_durations_are_bounded(
        counts in prop::collection::vec(prop_oneof![1_u64..4, 1_u64..=u64::MAX, Just(MAX_EPOCHS_PER_JOB), Just(MAX_EPOCHS_PER_JOB + 1)], 1..4),
        seconds in prop_oneof![Just(5e-324), Just(MIN_EPOCH_SECONDS), magnitude()],
        round_seconds in prop_oneof![Just(120.0), magnitude()],
    ) {
        let mut models = JobModels::new(ModelSettings::default()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let batch: Vec<i64> = (0..counts.len() as i64).map(|k| 32 << k).collect();
        let secs = vec![seconds; counts.len()];
        let spec = JobSpec { batch_sizes: &batch, epoch_seconds: &secs, epoch_counts: Some(&counts), extra_regimes: &[], samples_per_epoch: None };
        let total = counts.iter().try_fold(0_u64, |t, &c| t.checked_add(c));
        let accepted = models.add(1, &spec);
        let fits = total.is_some_and(|t| t <= MAX_EPOCHS_PER_JOB);
        if !fits {
            prop_assert!(accepted.is_err_and(|e| e.argument == "epoch_counts"));
        } else if seconds < MIN_EPOCH_SECONDS {
            prop_assert!(accepted.is_err_and(|e| e.argument == "epoch_seconds"));
        } else if accepted.is_ok() {
            for k in 0..3 {
                if let Ok(prediction) = models.predict(None, estimator(k), 4, round_seconds) {
                    prop_assert!(prediction.valuations.iter().all(|v| v.is_finite()));
                }
            }
        }
    }
}

fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}
