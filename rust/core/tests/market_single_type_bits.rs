//! One GPU type (`K = 1`) gives the same bits as the solver before GPU types existed.
//!
//! `data/market_single_type_bits.txt` holds, for every case below, a 64-bit FNV-1a digest of the
//! solution (shares, prices, utilities, bids, objective, dual bound, gap, iteration counts,
//! status) and of the rounding of its shares, as computed by the solver of commit a1f77fc (the
//! last one with a single GPU type), recorded with
//!
//! ```text
//! SHOCKWAVE_RECORD_BITS=1 cargo test -p shockwave-core --test market_single_type_bits
//! ```
//!
//! The cases cover both methods, cold and warm starts, tolerances from 1e-4 to 1e-9, windows of
//! 1 to 60 rounds (20 takes the fixed-width specialisation), ceilings and none, progress, budgets
//! spanning 3^12, rounds too small for some gangs, jobs with nothing to gain, zero budgets, and
//! the interior point with and without AVX2. Instances come from a SplitMix64 stream (the same
//! on every platform).

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;

// (`MarketProblem` and `MarketSolution` for the synthetic module, which takes them from here)
use shockwave_core::market::{MarketProblem, MarketSolution, Method, SolverSettings};

#[path = "../src/market/synthetic.rs"]
#[allow(dead_code)]
mod synthetic;

#[path = "common/bits.rs"]
mod bits;

use bits::case_digest;
use synthetic::{SplitMix64, SyntheticMarket};

const RECORD: &str = "tests/data/market_single_type_bits.txt";

/// A market of the benchmark recipe with features switched on by `flags` (bits): 1 no ceilings,
/// 2 small rounds (4 GPUs: too small for 8-GPU gangs), 4 jobs with nothing to gain, 8 budgets
/// spanning 3^12, 16 a zero budget, 32 zero progress for a few jobs.
fn market(jobs: usize, rounds: usize, seed: u64, flags: u32) -> SyntheticMarket {
    let mut m = SyntheticMarket::random(jobs, rounds, seed);
    let mut rng = SplitMix64(seed ^ 0x5eed);
    if flags & 1 != 0 {
        m.ceilings.fill(f64::INFINITY);
    }
    if flags & 2 != 0 {
        for t in 0..rounds {
            if rng.uniform() < 0.3 && t > 0 {
                m.supply[t] = 4.0;
            }
        }
    }
    if flags & 4 != 0 {
        for i in 0..jobs {
            if rng.uniform() < 0.15 {
                m.valuations[i * rounds..(i + 1) * rounds].fill(0.0);
            }
        }
    }
    if flags & 8 != 0 {
        for b in &mut m.budgets {
            *b = 3f64.powi((13.0 * rng.uniform()) as i32);
        }
    }
    if flags & 16 != 0 && jobs > 1 {
        m.budgets[1] = 0.0;
    }
    if flags & 32 != 0 {
        for i in (0..jobs).step_by(3) {
            m.progress[i] = 0.0;
        }
    }
    m
}

fn cases() -> Vec<(String, SyntheticMarket, SolverSettings, bool)> {
    let mut out = Vec::new();
    let sizes: &[(usize, usize)] = &[
        (1, 1),
        (1, 3),
        (3, 1),
        (5, 4),
        (12, 5),
        (40, 8),
        (60, 20),
        (150, 20),
        (300, 20),
        (90, 21),
        (30, 60),
        (200, 12),
    ];
    let mut seed = 1u64;
    for &(jobs, rounds) in sizes {
        for flags in [0u32, 1, 2, 4, 8, 16 | 32, 1 | 2 | 4 | 8, 2 | 8 | 32] {
            seed += 1;
            let m = market(jobs, rounds, seed, flags);
            for (tol, method, simd) in [
                (1e-6, Method::InteriorPoint, true),
                (1e-4, Method::InteriorPoint, true),
                (1e-9, Method::InteriorPoint, true),
                (1e-6, Method::InteriorPoint, false),
                (1e-4, Method::ProportionalResponse, true),
            ] {
                let settings = SolverSettings {
                    tol,
                    method,
                    simd,
                    max_iter: 3_000,
                    ..SolverSettings::default()
                };
                for warm in [false, true] {
                    let name = format!(
                        "n{jobs}_t{rounds}_f{flags}_s{seed}_{}_{tol:e}_simd{}_warm{}",
                        method.name(),
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

fn run() -> String {
    let mut text = String::new();
    for (name, m, settings, warm) in cases() {
        writeln!(text, "{name} {:016x}", case_digest(&m, &settings, warm)).unwrap();
    }
    text
}

#[test]
fn one_type_gives_the_bits_recorded_before_types() {
    let text = run();
    if std::env::var_os("SHOCKWAVE_RECORD_BITS").is_some() {
        std::fs::write(RECORD, &text).expect("write the record");
        return;
    }
    let recorded = std::fs::read_to_string(RECORD).expect("the record");
    let mut differ = Vec::new();
    let mut lines = 0;
    for (now, then) in text.lines().zip(recorded.lines()) {
        lines += 1;
        if now != then {
            differ.push(format!("now {now} / recorded {then}"));
        }
    }
    assert_eq!(lines, recorded.lines().count(), "number of cases changed");
    assert_eq!(lines, text.lines().count());
    assert!(
        differ.is_empty(),
        "{} of {lines} cases differ:\n{}",
        differ.len(),
        differ[..differ.len().min(20)].join("\n")
    );
}
