//! Warm starts: shifting a plan's bids to the next window, and bringing a caller's bids to the
//! solvers' normalised units.

use super::instance::Instance;
use super::MarketError;

/// A warm-start row spending more than this many times its job's budget is scaled down to the
/// budget (see `normalised_bids`).
const WARM_SPEND_LIMIT: f64 = 1e3;

/// Validate warm-start bids and bring them to normalised budget units.
pub(super) fn normalised_bids(inst: &Instance, bids: &[f64]) -> Result<Vec<f64>, MarketError> {
    if bids.len() != inst.jobs * inst.rounds {
        return Err(MarketError::new(
            "warm_start",
            format!(
                "expected {} x {} bids, got {} values",
                inst.jobs,
                inst.rounds,
                bids.len()
            ),
        ));
    }
    if let Some(k) = bids.iter().position(|b| !b.is_finite() || *b < 0.0) {
        return Err(MarketError::new(
            "warm_start",
            format!("bid {k} is negative or not finite ({})", bids[k]),
        ));
    }
    let total = inst.budget_total;
    if total <= 0.0 {
        return Ok(vec![0.0; bids.len()]);
    }
    let mut normalised: Vec<f64> = bids.iter().map(|b| b / total).collect();
    // A job never spends more than its budget: a row whose bids sum far past it (or overflowed
    // in the division) is scaled down to spend exactly its budget. Its ratios across rounds are
    // kept. (A shifted or smoothed warm start may spend a few budgets: it is used as given.)
    for b in 0..inst.buyers() {
        let i = inst.job_of[b];
        let range = i * inst.rounds..(i + 1) * inst.rounds;
        let row = &mut normalised[range.clone()];
        let spend: f64 = row.iter().sum();
        if spend > WARM_SPEND_LIMIT * inst.w[b] {
            if spend.is_finite() {
                let factor = inst.w[b] / spend;
                row.iter_mut().for_each(|x| *x *= factor);
            } else {
                // Overflowed: rescale the caller's row by its largest bid first.
                let original = &bids[range];
                let largest = original.iter().copied().fold(0.0, f64::max);
                let relative: f64 = original.iter().map(|x| x / largest).sum();
                for (x, &o) in row.iter_mut().zip(original) {
                    *x = o / largest / relative * inst.w[b];
                }
            }
        }
    }
    Ok(normalised)
}

/// Bids of a `jobs x rounds` market shifted `elapsed` rounds forward, for warm-starting the next
/// plan: column `t` takes the old column `t + elapsed`; the columns that enter the window repeat
/// the old last column (the job's most recent spending rate). With `elapsed >= rounds` every row
/// is zero (no information: cold start).
///
/// # Errors
/// If `bids` does not hold `jobs x rounds` values.
pub fn shift_bids(
    bids: &[f64],
    jobs: usize,
    rounds: usize,
    elapsed: usize,
) -> Result<Vec<f64>, MarketError> {
    if rounds > crate::limits::MAX_ROUNDS {
        return Err(MarketError::new(
            "bids",
            format!("{rounds} rounds; a window may have at most 2^32"),
        ));
    }
    if Some(bids.len()) != jobs.checked_mul(rounds) {
        return Err(MarketError::new(
            "bids",
            format!("expected {jobs} x {rounds} values, got {}", bids.len()),
        ));
    }
    let mut shifted = vec![0.0; bids.len()];
    if elapsed < rounds {
        for i in 0..jobs {
            let row = &bids[i * rounds..(i + 1) * rounds];
            let out = &mut shifted[i * rounds..(i + 1) * rounds];
            out[..rounds - elapsed].copy_from_slice(&row[elapsed..]);
            out[rounds - elapsed..].fill(row[rounds - 1]);
        }
    }
    Ok(shifted)
}
