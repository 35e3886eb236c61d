//! Warm starts: shifting a plan's bids to the next window, and bringing a caller's bids to the
//! solvers' normalised units.

use super::instance::Instance;
use super::MarketError;
use crate::buffers::Buffer;

/// A warm-start row spending more than this many times its job's budget is scaled down to the
/// budget (see `normalised_bids`).
const WARM_SPEND_LIMIT: f64 = 1e3;

/// Validate warm-start bids (the caller's `jobs x rounds x types` layout) and bring them to
/// normalised budget units, each job's row in the solvers' type-major order.
pub(super) fn normalised_bids(inst: &Instance, bids: &[f64]) -> Result<Buffer, MarketError> {
    let goods = inst.goods();
    if bids.len() != inst.jobs * goods {
        let shape = if inst.types == 1 {
            format!("{} x {}", inst.jobs, inst.rounds)
        } else {
            format!("{} x {} x {}", inst.jobs, inst.rounds, inst.types)
        };
        return Err(MarketError::new(
            "warm_start",
            format!("expected {shape} bids, got {} values", bids.len()),
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
        return Ok(Buffer::zeroed(bids.len()));
    }
    let mut normalised = Buffer::with_capacity(bids.len());
    if inst.types == 1 {
        normalised.extend(bids.iter().map(|b| b / total));
    } else {
        normalised.extend(
            (0..bids.len())
                .map(|e| bids[(e / goods) * goods + inst.caller_good(e % goods)] / total),
        );
    }
    // A job never spends more than its budget: a row whose bids sum far past it (or overflowed
    // in the division) is scaled down to spend exactly its budget. Its ratios across rounds are
    // kept. (A shifted or smoothed warm start may spend a few budgets: it is used as given.)
    for b in 0..inst.buyers() {
        let i = inst.job_of[b];
        let range = i * goods..(i + 1) * goods;
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

/// Bids of a `jobs x rounds x types` market (row-major) shifted `elapsed` rounds forward, for
/// warm-starting the next plan: round `t` takes the old round `t + elapsed` (all its types); the
/// rounds that enter the window repeat the old last round (the job's most recent spending rate).
/// With `elapsed >= rounds` every row is zero (no information: cold start).
///
/// # Errors
/// If `bids` does not hold `jobs x rounds x types` values, or `types` is 0.
pub fn shift_bids(
    bids: &[f64],
    jobs: usize,
    rounds: usize,
    types: usize,
    elapsed: usize,
) -> Result<Vec<f64>, MarketError> {
    if rounds > crate::limits::MAX_ROUNDS {
        return Err(MarketError::new(
            "bids",
            format!("{rounds} rounds; a window may have at most 2^32"),
        ));
    }
    if types == 0 {
        return Err(MarketError::new("bids", "no GPU types".to_string()));
    }
    let width = rounds.checked_mul(types);
    if Some(bids.len()) != width.and_then(|w| jobs.checked_mul(w)) {
        let shape = if types == 1 {
            format!("{jobs} x {rounds}")
        } else {
            format!("{jobs} x {rounds} x {types}")
        };
        return Err(MarketError::new(
            "bids",
            format!("expected {shape} values, got {}", bids.len()),
        ));
    }
    let width = rounds * types;
    let mut shifted = vec![0.0; bids.len()];
    if elapsed < rounds {
        let (kept, last) = ((rounds - elapsed) * types, (rounds - 1) * types);
        for i in 0..jobs {
            let row = &bids[i * width..(i + 1) * width];
            let out = &mut shifted[i * width..(i + 1) * width];
            out[..kept].copy_from_slice(&row[elapsed * types..]);
            for block in out[kept..].chunks_exact_mut(types) {
                block.copy_from_slice(&row[last..]);
            }
        }
    }
    Ok(shifted)
}
