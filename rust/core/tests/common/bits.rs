//! The digest the recorded-bits tests compare: 64-bit FNV-1a over a solution's every output and
//! the rounding of its shares.

use shockwave_core::market::{
    round_schedule, shift_bids, solve, MarketSolution, RoundingInput, SolverSettings,
};

use super::synthetic::SyntheticMarket;

/// FNV-1a over 64-bit words.
struct Digest(u64);

impl Digest {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
    fn word(&mut self, w: u64) {
        for byte in w.to_le_bytes() {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn floats(&mut self, values: &[f64]) {
        self.word(values.len() as u64);
        for v in values {
            self.word(v.to_bits());
        }
    }
}

/// The digest of `s` and of `schedule`, the rounding of its shares.
fn digest(s: &MarketSolution, schedule: &[bool]) -> u64 {
    let mut d = Digest::new();
    d.floats(&s.shares);
    d.floats(&s.prices);
    d.floats(&s.utilities);
    d.floats(&s.bids);
    d.floats(&[s.objective, s.dual_bound, s.gap]);
    d.word(s.iterations as u64);
    d.word(s.pr_iterations as u64);
    d.word(s.ipm_iterations as u64);
    d.word(u64::from(s.converged));
    d.word(s.status.name().len() as u64 + 100 * s.status.name().as_bytes()[0] as u64);
    d.word(schedule.len() as u64);
    for chunk in schedule.chunks(64) {
        let mut w = 0u64;
        for (k, &b) in chunk.iter().enumerate() {
            w |= u64::from(b) << k;
        }
        d.word(w);
    }
    d.0
}

/// The digest of `m` solved with `settings` (with `warm`: of the market one round later, warm
/// started from the first solve's bids shifted by a round) and of the rounding of its shares.
pub fn case_digest(m: &SyntheticMarket, settings: &SolverSettings, warm: bool) -> u64 {
    let cold = solve(&m.problem(), settings, None).expect("solve");
    let (market, solution) = if warm {
        let next = m.next_round(&cold);
        let bids = shift_bids(&cold.bids, m.jobs, m.rounds, m.types, 1).expect("shift");
        let s = solve(&next.problem(), settings, Some(&bids)).expect("warm solve");
        (next, s)
    } else {
        (m.clone(), cold)
    };
    let order: Vec<usize> = (0..market.jobs).rev().collect();
    let deficit: Vec<f64> = (0..market.jobs * market.types)
        .map(|i| (i % 3) as f64 * 0.25)
        .collect();
    let schedule = round_schedule(&RoundingInput {
        jobs: market.jobs,
        rounds: market.rounds,
        types: market.types,
        shares: &solution.shares,
        gang_sizes: &market.gang_sizes,
        supply: &market.supply,
        backfill_order: Some(&order),
        deficit: Some(&deficit),
    })
    .expect("rounding");
    digest(&solution, &schedule)
}
