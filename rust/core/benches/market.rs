//! Timing of the market solver's core (no Python): `cargo bench -p shockwave-core --bench market`.
//!
//! A plain harness (no dependencies): each case is solved cold and warm (from the previous
//! round's bids, shifted one round, on the next round's market), repeated, and the median wall
//! time printed with the iteration counts and the certified gap. Instances follow the recipe of
//! `benches/market_instances.py`: nearly interchangeable rounds (the hard case for proportional
//! response), progress in [0, 0.9), ceilings at 1, budgets 3^k for k in 0..6, gangs
//! {1, 2, 4, 8}, a third of the requested GPUs available per round.

use std::time::Instant;

use shockwave_core::market::{
    shift_bids, solve, MarketProblem, MarketSolution, Method, SolverSettings,
};

struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Market {
    jobs: usize,
    rounds: usize,
    valuations: Vec<f64>,
    gang_sizes: Vec<u32>,
    supply: Vec<f64>,
    budgets: Vec<f64>,
    progress: Vec<f64>,
    ceilings: Vec<f64>,
}

impl Market {
    fn random(jobs: usize, rounds: usize, seed: u64) -> Self {
        let mut rng = Rng(seed);
        let mut m = Market {
            jobs,
            rounds,
            valuations: Vec::with_capacity(jobs * rounds),
            gang_sizes: Vec::with_capacity(jobs),
            supply: Vec::new(),
            budgets: Vec::with_capacity(jobs),
            progress: Vec::with_capacity(jobs),
            ceilings: vec![1.0; jobs],
        };
        for _ in 0..jobs {
            let g = rng.uniform();
            let gang = if g < 0.6 {
                1
            } else if g < 0.8 {
                2
            } else if g < 0.92 {
                4
            } else {
                8
            };
            let progress = 0.9 * rng.uniform();
            let rounds_left = (30f64.ln() + 1.0 * (2.0 * rng.uniform() - 1.0) * 1.5).exp();
            let growth = 0.5 * rng.uniform();
            for t in 0..rounds {
                let shape = 1.0 + growth * t as f64 / rounds as f64;
                let noise = 0.95 + 0.1 * rng.uniform();
                m.valuations
                    .push((1.0 - progress) / rounds_left * shape * noise);
            }
            m.gang_sizes.push(gang);
            m.progress.push(progress);
            m.budgets.push(3f64.powi((6.0 * rng.uniform()) as i32));
        }
        let gpus: u32 = m.gang_sizes.iter().sum();
        m.supply = vec![f64::from(gpus / 3).max(8.0); rounds];
        m
    }

    /// The market one round later, after serving `plan`'s first round.
    fn next_round(&self, plan: &MarketSolution) -> Market {
        let t = self.rounds;
        let mut next = Market {
            jobs: self.jobs,
            rounds: t,
            valuations: self.valuations.clone(),
            gang_sizes: self.gang_sizes.clone(),
            supply: self.supply.clone(),
            budgets: self.budgets.clone(),
            progress: self.progress.clone(),
            ceilings: self.ceilings.clone(),
        };
        for i in 0..self.jobs {
            let row = &mut next.valuations[i * t..(i + 1) * t];
            row.rotate_left(1);
            row[t - 1] = row[t - 2];
            let gained = self.valuations[i * t] * plan.shares[i * t];
            next.progress[i] = (self.progress[i] + gained).min(0.99);
        }
        next
    }

    fn problem(&self) -> MarketProblem<'_> {
        MarketProblem {
            jobs: self.jobs,
            rounds: self.rounds,
            valuations: &self.valuations,
            gang_sizes: &self.gang_sizes,
            supply: &self.supply,
            budgets: &self.budgets,
            progress: &self.progress,
            ceilings: &self.ceilings,
        }
    }
}

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
                let bids = match shift_bids(&cold.bids, jobs, rounds, 1) {
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
}
