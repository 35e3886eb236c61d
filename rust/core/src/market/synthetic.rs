//! Synthetic markets of the Shockwave policy's shape, for the unit tests and the benchmark
//! (`benches/market.rs` includes this file; it is not part of the crate's API).
//!
//! The recipe (`tests/market_reference.random_market` in Python is the same but for the rounds
//! left, log-uniform in [3, 300] there): gangs {1, 2, 4, 8} with probabilities 0.6 / 0.2 / 0.12
//! / 0.08; progress uniform in [0, 0.9); rounds left log-uniform in [30 e^-1.5, 30 e^1.5];
//! valuations nearly interchangeable across the window (a slow growth and 5 % noise: the hard
//! case for proportional response); budgets 3^k, k uniform in 0..6; ceilings at 1; a third of
//! the requested GPUs available in every round (at least 8).

use super::{MarketProblem, MarketSolution};

/// SplitMix64: a tiny deterministic generator (no dependency, same stream on every platform).
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// An owned market (row-major `(jobs, rounds, types)` valuations), viewable as a
/// [`MarketProblem`].
#[derive(Clone, Debug)]
pub struct SyntheticMarket {
    /// Buyers.
    pub jobs: usize,
    /// Rounds in the window.
    pub rounds: usize,
    /// GPU types.
    pub types: usize,
    /// `a_itk`, row-major.
    pub valuations: Vec<f64>,
    /// GPUs per job.
    pub gang_sizes: Vec<u32>,
    /// GPUs per round and type, row-major.
    pub supply: Vec<f64>,
    /// Budgets.
    pub budgets: Vec<f64>,
    /// Utility already earned, in [0, 1).
    pub progress: Vec<f64>,
    /// Utility ceilings.
    pub ceilings: Vec<f64>,
}

impl SyntheticMarket {
    /// A market drawn with the module's recipe from `seed`.
    pub fn random(jobs: usize, rounds: usize, seed: u64) -> Self {
        let mut rng = SplitMix64(seed);
        let mut m = Self {
            jobs,
            rounds,
            types: 1,
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
            let rounds_left = (30f64.ln() + (2.0 * rng.uniform() - 1.0) * 1.5).exp();
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

    /// The same jobs on `types` GPU types (`SyntheticMarket::random(jobs, rounds, seed)` with
    /// speeds): type 0 is the recipe's GPU, each next type slower for every job by a factor drawn
    /// in [0.35, 0.85] (as GPU generations differ by model); valuations scale with the speed. The
    /// recipe's GPUs are split evenly over the types (at least 8 of each per round).
    pub fn random_typed(jobs: usize, rounds: usize, types: usize, seed: u64) -> Self {
        let one = Self::random(jobs, rounds, seed);
        let mut rng = SplitMix64(seed ^ 0x7970_6573);
        let mut valuations = Vec::with_capacity(jobs * rounds * types);
        for i in 0..jobs {
            let mut speeds = vec![1.0; types];
            for k in 1..types {
                speeds[k] = speeds[k - 1] * (0.35 + 0.5 * rng.uniform());
            }
            for t in 0..rounds {
                for &speed in &speeds {
                    valuations.push(one.valuations[i * rounds + t] * speed);
                }
            }
        }
        let gpus: u32 = one.gang_sizes.iter().sum();
        let each = (f64::from(gpus / 3) / types as f64).floor().max(8.0);
        Self {
            types,
            valuations,
            supply: vec![each; rounds * types],
            ..one
        }
    }

    /// The market one round later, after serving `plan`'s first round: valuations shift one
    /// round (the last repeats), progress grows by what the first round earned (at most 0.99).
    pub fn next_round(&self, plan: &MarketSolution) -> Self {
        let (t, k) = (self.rounds, self.types);
        let mut next = self.clone();
        for i in 0..self.jobs {
            let row = &mut next.valuations[i * t * k..(i + 1) * t * k];
            row.rotate_left(k);
            if t >= 2 {
                let (head, last) = row.split_at_mut((t - 1) * k);
                last.copy_from_slice(&head[(t - 2) * k..]);
            }
            let gained: f64 = (0..k)
                .map(|j| self.valuations[i * t * k + j] * plan.shares[i * t * k + j])
                .sum();
            next.progress[i] = (self.progress[i] + gained).min(0.99);
        }
        next
    }

    /// The borrowed view the solver takes.
    pub fn problem(&self) -> MarketProblem<'_> {
        MarketProblem {
            jobs: self.jobs,
            rounds: self.rounds,
            types: self.types,
            valuations: &self.valuations,
            gang_sizes: &self.gang_sizes,
            supply: &self.supply,
            budgets: &self.budgets,
            progress: &self.progress,
            ceilings: &self.ceilings,
        }
    }
}
