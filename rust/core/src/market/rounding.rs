//! From fractional shares to an integral schedule of whole gangs.
//!
//! Rounds are filled in order. Before round `t`, job `i` is *owed*
//! `d_i = deficit_i + sum_{s <= t} x_is - received_i` rounds: its carried deficit (rounds owed by
//! earlier plans, possibly negative), plus its planned shares through round `t`, minus the rounds
//! this schedule has already given it. Jobs owed more than a tiny tolerance are considered in
//! decreasing order of what they are owed (ties: larger share of this round first, then lower job
//! index), and each is scheduled if its gang fits in the GPUs still free (first fit: a gang that
//! does not fit is skipped, not waited for). A job is thus never scheduled unless it is owed
//! something, and the longest-owed go first, so whenever the gangs pack (for instance equal gang
//! sizes and integral supply) every job's count of rounds stays within one of its plan.
//!
//! Then, if a backfill order is given, GPUs still free in the round go to the listed jobs in that
//! order (first fit again), skipping jobs already running and gangs larger than the round's
//! supply. Backfilled rounds are extra (work conservation): they are not charged against the plan.
//!
//! The caller of a receding-horizon loop keeps the long-run counts honest by carrying
//! `deficit_i + x_i0 - ran_i0` (planned minus received in the dispatched round) into the next plan.

use super::MarketError;

/// Jobs owed no more than this many rounds are not scheduled by the plan-following pass.
const OWED_TOLERANCE: f64 = 1e-9;

/// Entries sorted beyond the most that can still fit, per chunk of the plan-following pass.
const CHUNK_MARGIN: usize = 256;

/// The plan-following order of queue entries `(owed, share of the round, job)`: most owed first,
/// then the larger share, then the lower job index.
fn most_owed_first(a: &(f64, f64, usize), b: &(f64, f64, usize)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0)
        .then(b.1.total_cmp(&a.1))
        .then(a.2.cmp(&b.2))
}

/// Inputs of [`round_schedule`]; matrices are row-major `jobs x rounds`.
#[derive(Clone, Copy, Debug)]
pub struct RoundingInput<'a> {
    pub jobs: usize,
    pub rounds: usize,
    /// Planned shares `x_it` in `[0, 1]`.
    pub shares: &'a [f64],
    /// Gang sizes, in GPUs (>= 1).
    pub gang_sizes: &'a [u32],
    /// GPUs per round (>= 0).
    pub supply: &'a [f64],
    /// Jobs to receive leftover GPUs, in priority order (distinct indices).
    pub backfill_order: Option<&'a [usize]>,
    /// Rounds owed to each job by earlier plans (finite; negative when ahead).
    pub deficit: Option<&'a [f64]>,
}

fn validate(input: &RoundingInput<'_>) -> Result<(), MarketError> {
    let (jobs, rounds) = (input.jobs, input.rounds);
    if rounds > crate::limits::MAX_ROUNDS {
        return Err(MarketError::new(
            "shares",
            format!("{rounds} rounds; a window may have at most 2^32"),
        ));
    }
    if Some(input.shares.len()) != jobs.checked_mul(rounds) {
        return Err(MarketError::new(
            "shares",
            format!(
                "expected {jobs} x {rounds} values, got {}",
                input.shares.len()
            ),
        ));
    }
    if let Some(k) = input
        .shares
        .iter()
        .position(|x| !(x.is_finite() && (0.0..=1.0).contains(x)))
    {
        return Err(MarketError::new(
            "shares",
            format!("entry {k} is {}, outside [0, 1]", input.shares[k]),
        ));
    }
    if input.gang_sizes.len() != jobs {
        return Err(MarketError::new(
            "gang_sizes",
            format!("expected {jobs} values, got {}", input.gang_sizes.len()),
        ));
    }
    if let Some(i) = input.gang_sizes.iter().position(|&g| g == 0) {
        return Err(MarketError::new(
            "gang_sizes",
            format!("job {i} has gang size 0"),
        ));
    }
    if input.supply.len() != rounds {
        return Err(MarketError::new(
            "supply",
            format!("expected {rounds} values, got {}", input.supply.len()),
        ));
    }
    if let Some(t) = input
        .supply
        .iter()
        .position(|g| !(g.is_finite() && *g >= 0.0))
    {
        return Err(MarketError::new(
            "supply",
            format!(
                "round {t} has supply {}, not a finite nonnegative number",
                input.supply[t]
            ),
        ));
    }
    if let Some(order) = input.backfill_order {
        let mut seen = vec![false; jobs];
        for &i in order {
            if i >= jobs {
                return Err(MarketError::new(
                    "backfill_order",
                    format!("job {i} does not exist (there are {jobs} jobs)"),
                ));
            }
            if seen[i] {
                return Err(MarketError::new(
                    "backfill_order",
                    format!("job {i} is listed twice"),
                ));
            }
            seen[i] = true;
        }
    }
    if let Some(deficit) = input.deficit {
        if deficit.len() != jobs {
            return Err(MarketError::new(
                "deficit",
                format!("expected {jobs} values, got {}", deficit.len()),
            ));
        }
        if let Some(i) = deficit.iter().position(|d| !d.is_finite()) {
            return Err(MarketError::new(
                "deficit",
                format!("job {i} has deficit {}, not finite", deficit[i]),
            ));
        }
    }
    Ok(())
}

/// Round `shares` into a schedule (row-major `jobs x rounds`, `true` = the job runs its whole
/// gang in that round) that never exceeds any round's supply. See the module documentation for
/// the rule and its guarantees.
///
/// # Errors
/// A [`MarketError`] naming the argument for a wrong shape, a share outside `[0, 1]`, a gang size
/// of 0, a negative or non-finite supply or deficit, or an invalid backfill order.
pub fn round_schedule(input: &RoundingInput<'_>) -> Result<Vec<bool>, MarketError> {
    validate(input)?;
    let (jobs, rounds) = (input.jobs, input.rounds);
    let mut schedule = vec![false; jobs * rounds];
    let mut owed: Vec<f64> = match input.deficit {
        Some(deficit) => deficit.to_vec(),
        None => vec![0.0; jobs],
    };
    // (owed, share of the round, job): the sort keys read once, not in every comparison
    let mut queue: Vec<(f64, f64, usize)> = Vec::with_capacity(jobs);
    for t in 0..rounds {
        let supply = input.supply[t];
        queue.clear();
        for i in 0..jobs {
            let share = input.shares[i * rounds + t];
            owed[i] += share;
            if owed[i] > OWED_TOLERANCE && f64::from(input.gang_sizes[i]) <= supply {
                queue.push((owed[i], share, i));
            }
        }
        // Most owed first, then the larger share, then the lower index: a total order (the
        // index breaks every tie), so unstable sorting gives the one order there is. Only the
        // head of that order is needed (a round fills after at most `supply` gangs), so it is
        // sorted a chunk at a time: select the chunk's entries, sort them, use them, and go on
        // only while GPUs are free.
        let mut free = supply;
        let mut rest: &mut [(f64, f64, usize)] = &mut queue;
        while !rest.is_empty() && free >= 1.0 {
            // at most floor(free) more gangs fit; a margin for the gangs that are skipped
            let wanted = (free.min(rest.len() as f64) as usize)
                .saturating_add(CHUNK_MARGIN)
                .min(rest.len());
            if wanted < rest.len() {
                rest.select_nth_unstable_by(wanted - 1, most_owed_first);
            }
            let (head, tail) = rest.split_at_mut(wanted);
            head.sort_unstable_by(most_owed_first);
            for &(_, _, i) in head.iter() {
                if free < 1.0 {
                    break; // no gang (>= 1 GPU) fits any more
                }
                let gang = f64::from(input.gang_sizes[i]);
                if gang <= free {
                    free -= gang;
                    schedule[i * rounds + t] = true;
                    owed[i] -= 1.0;
                }
            }
            rest = tail;
        }
        if let Some(order) = input.backfill_order {
            for &i in order {
                if free < 1.0 {
                    break;
                }
                let gang = f64::from(input.gang_sizes[i]);
                if !schedule[i * rounds + t] && gang <= free {
                    free -= gang;
                    schedule[i * rounds + t] = true;
                }
            }
        }
    }
    Ok(schedule)
}
