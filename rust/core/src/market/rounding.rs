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
//!
//! # GPU types
//!
//! With `K` types the plan holds shares `x_itk` and each type has its own supply `S_tk`. What a job
//! is owed is kept per type, `d_ik = deficit_ik + sum_{s <= t} x_isk - received_ik`, and round `t`
//! considers the pairs (job, type) owed more than the tolerance, in decreasing order of what they
//! are owed (ties: larger share of the round on that type, then lower job index, then lower
//! type index). A pair is scheduled when its job has no gang in the round yet and the gang fits
//! in the type's GPUs still free (first fit): a job runs at most one gang, of one type, per round.
//! Backfilling gives each listed job not yet running the first type, in type order, where its gang
//! fits. With one type this is the rule above.
//!
//! Gangs are placed by count: a gang fits a type when that many of its GPUs are free in the round.
//! Placing them on servers (so that a gang does not straddle machines) belongs to the cluster
//! model; [`Capacity`] is the one place a round's fit is decided, where that placement goes.
use super::MarketError;

/// Jobs owed no more than this many rounds are not scheduled by the plan-following pass.
const OWED_TOLERANCE: f64 = 1e-9;

/// Entries sorted beyond the most that can still fit, per chunk of the plan-following pass.
const CHUNK_MARGIN: usize = 256;

/// A queue entry of the plan-following pass: what the pair is owed, its share of the round, the
/// job and the type.
type Candidate = (f64, f64, usize, usize);

/// The plan-following order of queue entries: most owed first, then the larger share, then the
/// lower job index, then the lower type index.
fn most_owed_first(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0)
        .then(b.1.total_cmp(&a.1))
        .then(a.2.cmp(&b.2))
        .then(a.3.cmp(&b.3))
}

/// Inputs of [`round_schedule`]; arrays are row-major: `jobs x rounds x types` (shares),
/// `rounds x types` (supply), `jobs x types` (deficit).
#[derive(Clone, Copy, Debug)]
pub struct RoundingInput<'a> {
    pub jobs: usize,
    pub rounds: usize,
    /// GPU types `K` (1: homogeneous).
    pub types: usize,
    /// Planned shares `x_itk` in `[0, 1]`.
    pub shares: &'a [f64],
    /// Gang sizes, in GPUs (>= 1).
    pub gang_sizes: &'a [u32],
    /// GPUs of each type per round (>= 0).
    pub supply: &'a [f64],
    /// Jobs to receive leftover GPUs, in priority order (distinct indices).
    pub backfill_order: Option<&'a [usize]>,
    /// Rounds owed to each job on each type by earlier plans (finite; negative when ahead).
    pub deficit: Option<&'a [f64]>,
}

/// The GPUs still free in one round, per type, and where a gang fits: by count (a gang fits a
/// type when that many of its GPUs are free). The cluster model's server packing replaces this
/// count with a placement on servers.
struct Capacity {
    free: Vec<f64>,
}

impl Capacity {
    /// Round `t`'s supply of every type.
    fn of_round(supply: &[f64], t: usize, types: usize) -> Self {
        Self {
            free: supply[t * types..(t + 1) * types].to_vec(),
        }
    }

    /// Whether a gang of `gang` GPUs fits type `k`.
    fn fits(&self, k: usize, gang: f64) -> bool {
        gang <= self.free[k]
    }

    /// Place a gang of `gang` GPUs on type `k` (it fits).
    fn take(&mut self, k: usize, gang: f64) {
        self.free[k] -= gang;
    }

    /// Whether any gang (of one GPU or more) still fits some type.
    fn any(&self) -> bool {
        self.free.iter().any(|&f| f >= 1.0)
    }

    /// The most gangs that can still be placed.
    fn most_gangs(&self) -> f64 {
        self.free.iter().map(|f| f.max(0.0).floor()).sum()
    }
}

fn validate(input: &RoundingInput<'_>) -> Result<(), MarketError> {
    let (jobs, rounds, types) = (input.jobs, input.rounds, input.types);
    if rounds > crate::limits::MAX_ROUNDS {
        return Err(MarketError::new(
            "shares",
            format!("{rounds} rounds; a window may have at most 2^32"),
        ));
    }
    if types == 0 || types > super::MAX_TYPES {
        return Err(MarketError::new(
            "shares",
            format!("{types} GPU types; a market has 1 to {}", super::MAX_TYPES),
        ));
    }
    let shape = if types == 1 {
        format!("{jobs} x {rounds}")
    } else {
        format!("{jobs} x {rounds} x {types}")
    };
    let goods = rounds.checked_mul(types);
    if Some(input.shares.len()) != goods.and_then(|g| jobs.checked_mul(g)) {
        return Err(MarketError::new(
            "shares",
            format!("expected {shape} values, got {}", input.shares.len()),
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
    if input.supply.len() != rounds * types {
        let expected = if types == 1 {
            format!("{rounds}")
        } else {
            format!("{rounds} x {types}")
        };
        return Err(MarketError::new(
            "supply",
            format!("expected {expected} values, got {}", input.supply.len()),
        ));
    }
    if let Some(g) = input
        .supply
        .iter()
        .position(|g| !(g.is_finite() && *g >= 0.0))
    {
        let place = if types == 1 {
            format!("round {g}")
        } else {
            format!("round {}, type {}", g / types, g % types)
        };
        return Err(MarketError::new(
            "supply",
            format!(
                "{place} has supply {}, not a finite nonnegative number",
                input.supply[g]
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
        if deficit.len() != jobs * types {
            let expected = if types == 1 {
                format!("{jobs}")
            } else {
                format!("{jobs} x {types}")
            };
            return Err(MarketError::new(
                "deficit",
                format!("expected {expected} values, got {}", deficit.len()),
            ));
        }
        if let Some(e) = deficit.iter().position(|d| !d.is_finite()) {
            let who = if types == 1 {
                format!("job {e}")
            } else {
                format!("job {}, type {}", e / types, e % types)
            };
            return Err(MarketError::new(
                "deficit",
                format!("{who} has deficit {}, not finite", deficit[e]),
            ));
        }
    }
    Ok(())
}

/// Round `shares` into a schedule (row-major `jobs x rounds x types`, `true` = the job runs its
/// whole gang on that type in that round; at most one type per job and round) that never exceeds
/// any type's supply in any round. See the module documentation for the rule and its guarantees.
///
/// # Errors
/// A [`MarketError`] naming the argument for a wrong shape, a share outside `[0, 1]`, a gang size
/// of 0, a negative or non-finite supply or deficit, or an invalid backfill order.
pub fn round_schedule(input: &RoundingInput<'_>) -> Result<Vec<bool>, MarketError> {
    validate(input)?;
    let (jobs, rounds, types) = (input.jobs, input.rounds, input.types);
    let goods = rounds * types;
    let mut schedule = vec![false; jobs * goods];
    let mut owed: Vec<f64> = match input.deficit {
        Some(deficit) => deficit.to_vec(),
        None => vec![0.0; jobs * types],
    };
    // whether each job runs in the current round
    let mut running = vec![false; if types > 1 { jobs } else { 0 }];
    // (owed, share of the round, job, type): the sort keys read once, not in every comparison
    let mut queue: Vec<Candidate> = Vec::with_capacity(jobs);
    for t in 0..rounds {
        let mut capacity = Capacity::of_round(input.supply, t, types);
        queue.clear();
        running.fill(false);
        for i in 0..jobs {
            let gang = f64::from(input.gang_sizes[i]);
            for k in 0..types {
                let share = input.shares[i * goods + t * types + k];
                let e = i * types + k;
                owed[e] += share;
                if owed[e] > OWED_TOLERANCE && gang <= input.supply[t * types + k] {
                    queue.push((owed[e], share, i, k));
                }
            }
        }
        // Most owed first, then the larger share, then the lower job and type: a total order,
        // so unstable sorting gives the one order there is. Only the head of that order is
        // needed (a round fills after at most `supply` gangs), so it is sorted a chunk at a
        // time: select the chunk's entries, sort them, use them, and go on only while GPUs are
        // free.
        let mut rest: &mut [Candidate] = &mut queue;
        while !rest.is_empty() && capacity.any() {
            // at most that many more gangs fit; a margin for the entries that are skipped
            let wanted = (capacity.most_gangs().min(rest.len() as f64) as usize)
                .saturating_add(CHUNK_MARGIN)
                .min(rest.len());
            if wanted < rest.len() {
                rest.select_nth_unstable_by(wanted - 1, most_owed_first);
            }
            let (head, tail) = rest.split_at_mut(wanted);
            head.sort_unstable_by(most_owed_first);
            for &(_, _, i, k) in head.iter() {
                if !capacity.any() {
                    break; // no gang (>= 1 GPU) fits any more
                }
                let gang = f64::from(input.gang_sizes[i]);
                if types > 1 && running[i] {
                    continue;
                }
                if capacity.fits(k, gang) {
                    capacity.take(k, gang);
                    schedule[i * goods + t * types + k] = true;
                    owed[i * types + k] -= 1.0;
                    if types > 1 {
                        running[i] = true;
                    }
                }
            }
            rest = tail;
        }
        if let Some(order) = input.backfill_order {
            for &i in order {
                if !capacity.any() {
                    break;
                }
                let gang = f64::from(input.gang_sizes[i]);
                let row = &mut schedule[i * goods + t * types..i * goods + (t + 1) * types];
                if row.iter().any(|&r| r) {
                    continue;
                }
                if let Some(k) = (0..types).find(|&k| capacity.fits(k, gang)) {
                    capacity.take(k, gang);
                    row[k] = true;
                }
            }
        }
    }
    Ok(schedule)
}
