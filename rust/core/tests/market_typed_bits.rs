//! With GPU types (`K > 1`) the solver gives the bits recorded before its passes were split over
//! threads, on any number of threads.
//!
//! `data/market_typed_bits.txt` holds, for every case below, the digest of `common/bits.rs` (the
//! solution's every output and the rounding of its shares), as computed by the solver of commit
//! e58478c, whose passes with GPU types ran on one thread whatever `threads` said; recorded with
//!
//! ```text
//! SHOCKWAVE_RECORD_BITS=1 cargo test -p shockwave-core --test market_typed_bits
//! ```
//!
//! The cases cover 2 to 5 types, windows of 1 to 20 rounds (20 with three types takes the
//! fixed-width specialisation), markets below and above the jobs that pay for a second thread,
//! cold and warm starts, tolerances from 1e-4 to 1e-8, ceilings and none, budgets spanning 3^12,
//! types too small for some gangs, jobs with nothing to gain, and the interior point with and
//! without AVX2; every case is solved on one thread, and those of 256 jobs or more (which a
//! second thread splits) on 2 and 7 as well.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;

// (`MarketProblem` and `MarketSolution` for the synthetic module, which takes them from here)
use shockwave_core::market::{MarketProblem, MarketSolution, SolverSettings};

#[path = "../src/market/synthetic.rs"]
#[allow(dead_code)]
mod synthetic;

#[path = "common/bits.rs"]
mod bits;

use bits::case_digest;
use synthetic::{SplitMix64, SyntheticMarket};

const RECORD: &str = "tests/data/market_typed_bits.txt";

/// A typed market of the benchmark recipe with features switched on by `flags` (bits): 1 no
/// ceilings, 2 small goods (4 GPUs: too small for 8-GPU gangs), 4 jobs with nothing to gain,
/// 8 budgets spanning 3^12.
fn market(jobs: usize, rounds: usize, types: usize, seed: u64, flags: u32) -> SyntheticMarket {
    let mut m = SyntheticMarket::random_typed(jobs, rounds, types, seed);
    let mut rng = SplitMix64(seed ^ 0x5eed);
    let goods = rounds * types;
    if flags & 1 != 0 {
        m.ceilings.fill(f64::INFINITY);
    }
    if flags & 2 != 0 {
        for g in 1..goods {
            if rng.uniform() < 0.3 {
                m.supply[g] = 4.0;
            }
        }
    }
    if flags & 4 != 0 {
        for i in 0..jobs {
            if rng.uniform() < 0.15 {
                m.valuations[i * goods..(i + 1) * goods].fill(0.0);
            }
        }
    }
    if flags & 8 != 0 {
        for b in &mut m.budgets {
            *b = 3f64.powi((13.0 * rng.uniform()) as i32);
        }
    }
    m
}

fn cases() -> Vec<(String, SyntheticMarket, SolverSettings, bool)> {
    let mut out = Vec::new();
    let sizes: &[(usize, usize, usize)] = &[
        (1, 1, 2),
        (5, 4, 3),
        (40, 8, 2),
        (60, 20, 3),
        (150, 20, 3),
        (90, 13, 5),
        (300, 20, 3),
        (1_100, 9, 2),
    ];
    let mut seed = 1u64;
    for &(jobs, rounds, types) in sizes {
        // the markets that a second thread splits (at least 256 jobs) take fewer variants: the
        // debug build solves each three times
        let large = jobs >= 256;
        let flags: &[u32] = if large {
            &[0, 1 | 2 | 8]
        } else {
            &[0, 1, 2 | 4, 8, 1 | 2 | 8]
        };
        let settings: &[(f64, bool)] = if large {
            &[(1e-6, true), (1e-4, false)]
        } else {
            &[(1e-6, true), (1e-4, true), (1e-8, true), (1e-6, false)]
        };
        for &flags in flags {
            seed += 1;
            let m = market(jobs, rounds, types, seed, flags);
            for &(tol, simd) in settings {
                let settings = SolverSettings {
                    tol,
                    simd,
                    max_iter: 3_000,
                    ..SolverSettings::default()
                };
                for warm in [false, true] {
                    let name = format!(
                        "n{jobs}_t{rounds}_k{types}_f{flags}_s{seed}_{tol:e}_simd{}_warm{}",
                        u8::from(simd),
                        u8::from(warm)
                    );
                    out.push((name, m.clone(), settings, warm));
                }
            }
        }
    }
    out
}

/// The digest of every case with at least `min_jobs` jobs, solved on `threads` threads.
fn run(threads: usize, min_jobs: usize) -> String {
    let mut text = String::new();
    for (name, m, settings, warm) in cases() {
        if m.jobs < min_jobs {
            continue;
        }
        let settings = SolverSettings {
            threads,
            ..settings
        };
        writeln!(text, "{name} {:016x}", case_digest(&m, &settings, warm)).unwrap();
    }
    text
}

#[test]
fn types_give_the_recorded_bits_on_any_number_of_threads() {
    if std::env::var_os("SHOCKWAVE_RECORD_BITS").is_some() {
        std::fs::write(RECORD, run(1, 0)).expect("write the record");
        return;
    }
    let recorded = std::fs::read_to_string(RECORD).expect("the record");
    // every case on one thread; those that more threads split (256 jobs and more) on 2 and 7
    for (threads, min_jobs) in [(1, 0), (2, 256), (7, 256)] {
        let text = run(threads, min_jobs);
        let expected: Vec<&str> = recorded
            .lines()
            .filter(|line| jobs_of(line) >= min_jobs)
            .collect();
        assert_eq!(
            text.lines().count(),
            expected.len(),
            "number of cases changed"
        );
        let differ: Vec<String> = text
            .lines()
            .zip(expected)
            .filter(|(now, then)| now != then)
            .map(|(now, then)| format!("now {now} / recorded {then}"))
            .collect();
        assert!(
            differ.is_empty(),
            "{threads} thread(s): {} cases differ:\n{}",
            differ.len(),
            differ[..differ.len().min(20)].join("\n")
        );
    }
}

/// The jobs of a recorded case, from its name (`n<jobs>_...`).
fn jobs_of(line: &str) -> usize {
    line.strip_prefix('n')
        .and_then(|rest| rest.split('_').next())
        .and_then(|jobs| jobs.parse().ok())
        .unwrap_or(0)
}
