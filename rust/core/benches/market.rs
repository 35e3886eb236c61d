//! Timing of the market solver's core (no Python): `cargo bench -p shockwave-core --bench market`.
//!
//! A plain harness (no dependencies): each case is solved cold and warm (from the previous
//! round's bids, shifted one round, on the next round's market), repeated, and the median wall
//! time printed with the iteration counts and the certified gap. Instances:
//! `SyntheticMarket::random` (the unit tests' recipe, `src/market/synthetic.rs`: compiled only
//! for the unit tests and this benchmark, not part of the crate's API).

use std::time::Instant;

use shockwave_core::market::{
    shift_bids, solve, MarketProblem, MarketSolution, Method, SolverSettings,
};

#[path = "../src/market/synthetic.rs"]
#[allow(dead_code)]
mod synthetic;

use synthetic::SyntheticMarket as Market;

fn timed(
    m: &Market,
    settings: &SolverSettings,
    warm: Option<&[f64]>,
    repeats: usize,
) -> (f64, MarketSolution) {
    let mut times = Vec::with_capacity(repeats);
    let mut last = None;
    for _ in 0..repeats {
        let start = Instant::now();
        let solution = solve(&m.problem(), settings, warm);
        times.push(start.elapsed().as_secs_f64());
        last = Some(solution);
    }
    times.sort_by(f64::total_cmp);
    match last {
        Some(Ok(solution)) => (times[times.len() / 2], solution),
        Some(Err(e)) => {
            eprintln!("solve failed: {e}");
            std::process::exit(1)
        }
        None => std::process::exit(1),
    }
}

fn main() {
    let filter: Option<String> = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    println!("method   N      T   tol    start  median_ms  iters (pr+ipm)  gap       converged");
    for &(jobs, rounds) in &[
        (100, 20),
        (1000, 20),
        (10_000, 20),
        (100, 60),
        (1000, 60),
        (10_000, 60),
    ] {
        let label = format!("{jobs}x{rounds}");
        if filter.as_ref().is_some_and(|f| !label.contains(f.as_str())) {
            continue;
        }
        let repeats = if jobs >= 10_000 { 3 } else { 11 };
        let m = Market::random(jobs, rounds, 1);
        for &tol in &[1e-4, 1e-6] {
            for method in [Method::InteriorPoint, Method::ProportionalResponse] {
                if method == Method::ProportionalResponse && jobs >= 10_000 {
                    continue;
                }
                let settings = SolverSettings {
                    tol,
                    method,
                    ..SolverSettings::default()
                };
                let (cold_s, cold) = timed(&m, &settings, None, repeats);
                let next = m.next_round(&cold);
                let bids = match shift_bids(&cold.bids, jobs, rounds, 1, 1) {
                    Ok(b) => b,
                    Err(e) => {
                        eprintln!("{e}");
                        std::process::exit(1)
                    }
                };
                let (warm_s, warm) = timed(&next, &settings, Some(&bids), repeats);
                let (_, next_cold) = timed(&next, &settings, None, 1);
                let name = match method {
                    Method::InteriorPoint => "ipm",
                    Method::ProportionalResponse => "pr",
                };
                for (start, secs, s) in [
                    ("cold", cold_s, &cold),
                    ("warm", warm_s, &warm),
                    ("cold'", f64::NAN, &next_cold),
                ] {
                    println!(
                        "{name:<8} {jobs:<6} {rounds:<3} {tol:.0e}  {start:<6} {:>9.3}  {:>5} ({}+{})  {:.2e}  {}",
                        secs * 1e3,
                        s.iterations,
                        s.pr_iterations,
                        s.ipm_iterations,
                        s.gap,
                        s.converged
                    );
                }
            }
        }
    }
    simd_pairs(filter.as_deref());
}

/// The interior point cold to 1e-6 with and without AVX2, in alternating pairs (the two
/// settings see the same machine load): medians of each and of the per-pair ratio, and whether
/// the two solutions are the same bits.
fn simd_pairs(filter: Option<&str>) {
    println!();
    println!("simd pairs (ipm, cold, 1e-6): N      T   pairs  off_ms  on_ms  ratio  same_bits");
    for &(jobs, rounds) in &[(100, 20), (1000, 20), (10_000, 20), (1000, 60)] {
        let label = format!("{jobs}x{rounds}");
        if filter.is_some_and(|f| !label.contains(f)) {
            continue;
        }
        let m = Market::random(jobs, rounds, 1);
        let on = SolverSettings::default();
        let off = SolverSettings { simd: false, ..on };
        let (pairs, repeats) = if jobs >= 10_000 { (5, 1) } else { (15, 3) };
        let (mut t_off, mut t_on, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        let (mut a, mut b) = (None, None);
        for _ in 0..pairs {
            let (x, sx) = timed(&m, &off, None, repeats);
            let (y, sy) = timed(&m, &on, None, repeats);
            t_off.push(x);
            t_on.push(y);
            ratios.push(y / x);
            (a, b) = (Some(sx), Some(sy));
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!(
            "                             {jobs:<6} {rounds:<3} {pairs:<5}  {:>6.2}  {:>5.2}  {:.3}  {}",
            median(&mut t_off) * 1e3,
            median(&mut t_on) * 1e3,
            median(&mut ratios),
            a == b
        );
    }
}
