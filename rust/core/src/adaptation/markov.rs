//! The `markov` estimator: a Markov chain over regimes with Dirichlet-prior transition rows,
//! solved by a Bellman recursion over (epochs remaining, regime).
//!
//! # Model
//!
//! Regimes `0..R` are the job's candidate batch sizes in ascending order, with calibrated epoch
//! durations `d_i`. The regime of each next epoch follows a Markov chain whose row `i` has a
//! Dirichlet prior with mean `m_i` and concentration `kappa` (pseudo-epochs); the posterior mean
//! given the observed transition counts `n_ij` is
//!
//! ```text
//! P_ij = (kappa * m_ij + n_ij) / (kappa + sum_j n_ij).
//! ```
//!
//! The prior rows share two hazards, themselves learned from the whole observed sequence (so a
//! row never visited inherits what the job's other rows showed):
//!
//! - forward `lambda` (per epoch, towards larger batch sizes): prior mean
//!   `lambda_0 = (R_p - 1) / E` (the `R_p` regimes of the profile visited in even shares of the `E`
//!   epochs) with `kappa` pseudo-epochs, posterior `(kappa * lambda_0 + forward moves) / (kappa +
//!   transitions out of rows that have a larger regime)`; the forward mass of row `i` goes to
//!   `j > i` with weights `jump_decay^(j - i - 1)` (mostly to the next batch size);
//! - backward `mu`: prior mean `backward_share * lambda_0` (batch sizes rarely go back), learned
//!   the same way from backward moves, spread evenly over `j < i`.
//!
//! `kappa = strength * E / R_p`: the prior weighs as much as one even share of the job.
//!
//! **Deadline.** Every batch size of the profile is used before the job ends. With `u_i` profile
//! regimes above `i` not yet visited and `k` epochs left (counting the one being entered), row
//! `i`'s forward mass is raised to at least `min(1, u_i / k)` (rest of the row scaled down). This
//! makes the transition law depend on the epochs remaining, which is why the recursion runs over
//! (epochs remaining, regime).
//!
//! # Recursion
//!
//! With `V_k(i)` the expected time of the last `k` epochs starting in regime `i` and `W_k(i)` its
//! second moment:
//!
//! ```text
//! V_k(i) = d_i + sum_j P^(k-1)_ij V_{k-1}(j)
//! W_k(i) = d_i^2 + 2 d_i sum_j P^(k-1)_ij V_{k-1}(j) + sum_j P^(k-1)_ij W_{k-1}(j)
//! ```
//!
//! For long jobs the epochs are grouped into at most `max_blocks` blocks of `g` epochs. Within a
//! block the transition law is held at the block's middle and at most one regime change is
//! resolved: from `i`, with per-epoch leave probability `q`, the job stays `a = (1 - (1 - q)^g) / q`
//! epochs in expectation and spends the rest of the block where it moved, and it starts the next
//! block in `i` with probability `(1 - q)^g`. With `g = 1` (every job with at most `max_blocks`
//! epochs left) this is exactly the per-epoch recursion. The same blocks, walked forward from the
//! current state, give the expected cumulative service time of each block: the progress curve of
//! [`super::progress`].
//!
//! The standard deviation is that of the chain given the posterior-mean transition law; it does
//! not include the uncertainty of the transition probabilities or of the durations.

use super::error::AdaptationError;
use super::progress::{RoundFiller, Segment};

/// Largest `max_blocks` accepted (each block keeps an `R x R` transition law, `R <= 64`).
pub const MAX_BLOCKS: usize = 4096;

/// Prior and numerical settings of the `markov` estimator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MarkovPrior {
    /// Prior weight as a multiple of one even share of the job (`E / R_p` epochs): the
    /// concentration of each transition row and of the pooled hazards. Must be > 0.
    pub strength: f64,
    /// Prior backward hazard as a share of the prior forward hazard (>= 0).
    pub backward_share: f64,
    /// Weight decay of forward jumps over more than one regime (>= 0; 0 = next regime only).
    pub jump_decay: f64,
    /// Apply the deadline (every profile regime is visited before the end).
    pub deadline: bool,
    /// Most blocks of epochs in the recursion (>= 1).
    pub max_blocks: usize,
}

impl Default for MarkovPrior {
    fn default() -> Self {
        Self {
            strength: 1.0,
            backward_share: 0.05,
            jump_decay: 0.25,
            deadline: true,
            max_blocks: 16,
        }
    }
}

impl MarkovPrior {
    /// Check the settings; errors name the field.
    pub fn validate(&self) -> Result<(), AdaptationError> {
        let positive = |name: &str, x: f64| {
            if x.is_finite() && x > 0.0 {
                Ok(())
            } else {
                Err(AdaptationError::new(
                    name,
                    format!("must be finite and > 0, got {x}"),
                ))
            }
        };
        let non_negative = |name: &str, x: f64| {
            if x.is_finite() && x >= 0.0 {
                Ok(())
            } else {
                Err(AdaptationError::new(
                    name,
                    format!("must be finite and >= 0, got {x}"),
                ))
            }
        };
        positive("prior_strength", self.strength)?;
        non_negative("backward_share", self.backward_share)?;
        non_negative("jump_decay", self.jump_decay)?;
        if self.max_blocks == 0 || self.max_blocks > MAX_BLOCKS {
            return Err(AdaptationError::new(
                "max_blocks",
                format!(
                    "must be in [1, {MAX_BLOCKS}] (the recursion keeps a transition law per \
                     block), got {}",
                    self.max_blocks
                ),
            ));
        }
        Ok(())
    }
}

/// What the chain knows about one job at prediction time.
#[derive(Debug, Clone, Copy)]
pub struct ChainInput<'a> {
    /// Calibrated epoch duration of each regime, seconds.
    pub seconds: &'a [f64],
    /// Whether each regime appears in the profile (must be visited).
    pub must_visit: &'a [bool],
    /// Whether each regime has been seen (completed epochs and the current one).
    pub visited: &'a [bool],
    /// Observed transition counts, row-major `R x R` (including the move into the current epoch).
    pub transitions: &'a [f64],
    /// Regime of the epoch in progress.
    pub current: usize,
    /// Fraction of the current epoch already done, in `[0, 1)`.
    pub fraction: f64,
    /// Whole epochs left after the current one.
    pub epochs_after: u64,
    /// Epochs of the job, `E`.
    pub total_epochs: u64,
}

/// Reusable work buffers of the `markov` estimator (one per thread; the contents are scratch).
#[derive(Debug, Default, Clone)]
pub struct Scratch {
    rows: Vec<f64>,
    decay: Vec<f64>,
    sums: Vec<RowSums>,
    plain: [Vec<BlockLaw>; 2],
    laws: Vec<BlockLaw>,
    v: Vec<f64>,
    w: Vec<f64>,
    next_v: Vec<f64>,
    next_w: Vec<f64>,
    pi: Vec<f64>,
    next: Vec<f64>,
}

/// Posterior-mean transition rows of `input` under `prior` (row-major `R x R`, without the
/// deadline) into `rows`.
pub fn posterior_rows(input: &ChainInput<'_>, prior: &MarkovPrior, rows: &mut Vec<f64>) {
    posterior_into(input, prior, rows, &mut Vec::new());
}

fn posterior_into(
    input: &ChainInput<'_>,
    prior: &MarkovPrior,
    rows: &mut Vec<f64>,
    decay: &mut Vec<f64>,
) {
    let r = input.seconds.len();
    let e = input.total_epochs.max(1) as f64;
    let profile_regimes = input.must_visit.iter().filter(|&&m| m).count().max(1);
    let lambda0 = (profile_regimes - 1) as f64 / e;
    let kappa = prior.strength * e / profile_regimes as f64;
    let mu0 = prior.backward_share * lambda0;
    let counts = input.transitions;
    let (mut fwd_moves, mut fwd_exposure, mut back_moves, mut back_exposure) = (0.0, 0.0, 0.0, 0.0);
    for (i, row) in counts.chunks(r.max(1)).enumerate().take(r) {
        let (back, rest) = row.split_at(i.min(row.len()));
        let forward = rest.get(1..).unwrap_or_default();
        let out: f64 = row.iter().sum();
        if i + 1 < r {
            fwd_exposure += out;
            fwd_moves += forward.iter().sum::<f64>();
        }
        if i > 0 {
            back_exposure += out;
            back_moves += back.iter().sum::<f64>();
        }
    }
    let lambda = (kappa * lambda0 + fwd_moves) / (kappa + fwd_exposure);
    let mu = (kappa * mu0 + back_moves) / (kappa + back_exposure);
    decay.clear();
    decay.extend((0..r).map(|m| prior.jump_decay.powi(m as i32)));
    rows.clear();
    rows.resize(r * r, 0.0);
    for (i, (row, observed)) in rows
        .chunks_mut(r.max(1))
        .zip(counts.chunks(r.max(1)))
        .enumerate()
    {
        let mut fwd = if i + 1 < r { lambda } else { 0.0 };
        let mut back = if i > 0 { mu } else { 0.0 };
        if fwd + back > 1.0 {
            let scale = 1.0 / (fwd + back);
            fwd *= scale;
            back *= scale;
        }
        let decay_sum: f64 = decay.iter().take(r - i - 1).sum();
        let out: f64 = observed.iter().sum();
        let denominator = kappa + out;
        for (j, (p, &n)) in row.iter_mut().zip(observed).enumerate() {
            let mean = if j > i {
                fwd * decay.get(j - i - 1).copied().unwrap_or(0.0) / decay_sum
            } else if j < i {
                back / i as f64
            } else {
                (1.0 - fwd - back).max(0.0)
            };
            *p = (kappa * mean + n) / denominator;
        }
    }
}

/// Expected remaining runtime and its standard deviation, seconds; and, if `filler` is given,
/// the expected progress curve under continuous service pushed into it.
pub fn solve(
    input: &ChainInput<'_>,
    prior: &MarkovPrior,
    scratch: &mut Scratch,
    filler: Option<&mut RoundFiller<'_>>,
) -> (f64, f64) {
    let r = input.seconds.len();
    let Scratch {
        rows,
        decay,
        sums,
        plain,
        laws,
        v,
        w,
        next_v,
        next_w,
        pi,
        next,
    } = scratch;
    posterior_into(input, prior, rows, decay);
    // Per-row constants of the block laws.
    sums.clear();
    for (i, row) in rows.chunks(r.max(1)).enumerate().take(r) {
        let mut sum = RowSums {
            seconds: input.seconds.get(i).copied().unwrap_or(0.0),
            ..RowSums::default()
        };
        for (j, (&p, &d)) in row.iter().zip(input.seconds).enumerate() {
            if j > i {
                sum.forward += p;
                sum.forward_seconds += p * d;
                let must = input.must_visit.get(j).copied().unwrap_or(false);
                let seen = input.visited.get(j).copied().unwrap_or(false);
                if must && !seen {
                    sum.unvisited += 1.0;
                }
            } else if j < i {
                sum.backward_seconds += p * d;
            } else {
                sum.diagonal = p;
            }
        }
        if !prior.deadline {
            sum.unvisited = 0.0;
        }
        sums.push(sum);
    }
    let n = input.epochs_after;
    let blocks = Blocks::new(n, prior.max_blocks);
    // The laws of every block (the backward and the forward pass share them).
    for (cache, g) in plain.iter_mut().zip([blocks.small, blocks.small + 1]) {
        cache.clear();
        if g > 0 {
            cache.extend(sums.iter().map(|sum| sum.law(1.0, 1.0, g)));
        }
    }
    laws.clear();
    for b in 0..blocks.count {
        let (g, k_mid) = blocks.block(b);
        let cached = plain[usize::from(g != blocks.small)].as_slice();
        for (sum, &plain_law) in sums.iter().zip(cached) {
            let (alpha, beta) = sum.deadline_scales(k_mid);
            laws.push(if alpha == 1.0 && beta == 1.0 {
                plain_law
            } else {
                sum.law(alpha, beta, g)
            });
        }
    }
    // Backward: V and W at the start of each block, from the last block to the first.
    for buffer in [&mut *v, &mut *w, &mut *next_v, &mut *next_w] {
        buffer.clear();
        buffer.resize(r, 0.0);
    }
    for block_laws in laws.chunks(r.max(1)).rev() {
        for (i, ((law, row), (nv, nw))) in block_laws
            .iter()
            .zip(rows.chunks(r.max(1)))
            .zip(next_v.iter_mut().zip(next_w.iter_mut()))
            .enumerate()
        {
            let (back, rest) = row.split_at(i);
            let forward = rest.get(1..).unwrap_or_default();
            let (v_back, v_rest) = v.split_at(i);
            let (w_back, w_rest) = w.split_at(i);
            let dot = |p: &[f64], x: &[f64]| -> f64 { p.iter().zip(x).map(|(a, b)| a * b).sum() };
            let fv = dot(forward, v_rest.get(1..).unwrap_or_default());
            let fw = dot(forward, w_rest.get(1..).unwrap_or_default());
            let bv = dot(back, v_back);
            let bw = dot(back, w_back);
            let vi = v_rest.first().copied().unwrap_or(0.0);
            let wi = w_rest.first().copied().unwrap_or(0.0);
            let pv = law.stay * vi + law.forward * fv + law.backward * bv;
            let pw = law.stay * wi + law.forward * fw + law.backward * bw;
            *nv = law.seconds + pv;
            *nw = law.seconds * law.seconds + 2.0 * law.seconds * pv + pw;
        }
        std::mem::swap(v, next_v);
        std::mem::swap(w, next_w);
    }
    // Entry: the regime of the first epoch after the current one.
    let current = input.current;
    pi.clear();
    pi.resize(r, 0.0);
    if n > 0 {
        let (alpha, beta) = sums
            .get(current)
            .map_or((1.0, 1.0), |sum| sum.deadline_scales(n as f64));
        let row = rows.get(current * r..(current + 1) * r).unwrap_or_default();
        for (j, (x, &p)) in pi.iter_mut().zip(row).enumerate() {
            *x = p * if j > current { alpha } else { beta };
        }
    }
    let rest_mean: f64 = pi.iter().zip(v.iter()).map(|(p, x)| p * x).sum();
    let rest_second: f64 = pi.iter().zip(w.iter()).map(|(p, x)| p * x).sum();
    let variance = (rest_second - rest_mean * rest_mean).max(0.0);
    let d_cur = input.seconds.get(current).copied().unwrap_or(0.0);
    let head = (1.0 - input.fraction) * d_cur;
    if let Some(filler) = filler {
        filler.push(Segment {
            seconds: head,
            epochs: 1.0 - input.fraction,
        });
        for (b, block_laws) in laws.chunks(r.max(1)).enumerate() {
            if filler.is_full() {
                break;
            }
            let mut time = 0.0;
            next.clear();
            next.resize(r, 0.0);
            for (i, ((law, row), &mass)) in block_laws
                .iter()
                .zip(rows.chunks(r.max(1)))
                .zip(pi.iter())
                .enumerate()
            {
                if mass <= 0.0 {
                    continue;
                }
                time += mass * law.seconds;
                let (forward, backward) = (mass * law.forward, mass * law.backward);
                for (j, (x, &p)) in next.iter_mut().zip(row).enumerate() {
                    *x += if j > i {
                        forward * p
                    } else if j < i {
                        backward * p
                    } else {
                        mass * law.stay
                    };
                }
            }
            filler.push(Segment {
                seconds: time,
                epochs: blocks.block(b).0 as f64,
            });
            std::mem::swap(pi, next);
        }
    }
    (head + rest_mean, variance.sqrt())
}

/// One regime's law over one block: expected block time, probability of starting the next block
/// in the same regime, and the factors turning the row's forward and backward entries into
/// block transition probabilities.
#[derive(Debug, Clone, Copy, Default)]
struct BlockLaw {
    seconds: f64,
    stay: f64,
    forward: f64,
    backward: f64,
}

/// Per-row constants of the block laws.
#[derive(Debug, Clone, Copy, Default)]
struct RowSums {
    /// `d_i`.
    seconds: f64,
    /// `P_ii`.
    diagonal: f64,
    /// `sum_{j > i} P_ij`.
    forward: f64,
    /// `sum_{j > i} P_ij d_j`.
    forward_seconds: f64,
    /// `sum_{j < i} P_ij d_j`.
    backward_seconds: f64,
    /// Profile regimes above `i` not visited yet (0 without the deadline).
    unvisited: f64,
}

impl RowSums {
    /// Factors `(alpha, beta)` on the row's forward and other entries for a move into an epoch
    /// with `k` epochs left: the deadline raises the forward mass to `min(1, u_i / k)`.
    fn deadline_scales(&self, k: f64) -> (f64, f64) {
        if self.unvisited <= 0.0 || k <= 0.0 || self.forward <= 0.0 {
            return (1.0, 1.0);
        }
        let target = (self.unvisited / k).min(1.0);
        if target <= self.forward {
            return (1.0, 1.0);
        }
        let rest = 1.0 - self.forward;
        let beta = if rest > 0.0 {
            (1.0 - target) / rest
        } else {
            0.0
        };
        (target / self.forward, beta)
    }

    /// The law over a block of `g` epochs with row factors `alpha`, `beta`.
    fn law(&self, alpha: f64, beta: f64, g: u64) -> BlockLaw {
        let gf = g as f64;
        let q = (1.0 - beta * self.diagonal).clamp(0.0, 1.0);
        if q <= 0.0 {
            return BlockLaw {
                seconds: gf * self.seconds,
                stay: 1.0,
                forward: 0.0,
                backward: 0.0,
            };
        }
        let leave = leave_within(q, g);
        let scale = leave / q;
        let moved = (alpha * self.forward_seconds + beta * self.backward_seconds) / q;
        BlockLaw {
            seconds: scale * self.seconds + (gf - scale) * moved,
            stay: 1.0 - leave,
            forward: scale * alpha,
            backward: scale * beta,
        }
    }
}

/// `1 - (1 - q)^g`, accurate for small `q * g`.
fn leave_within(q: f64, g: u64) -> f64 {
    if g == 1 {
        return q;
    }
    let gf = g as f64;
    if q * gf < 1e-3 {
        // Alternating binomial series; the first omitted term is below 1e-14 relative.
        let c2 = gf * (gf - 1.0) / 2.0;
        let c3 = c2 * (gf - 2.0) / 3.0;
        let c4 = c3 * (gf - 3.0) / 4.0;
        return q * (gf - q * (c2 - q * (c3 - q * c4)));
    }
    let stay = match i32::try_from(g) {
        Ok(gi) => (1.0 - q).powi(gi),
        Err(_) => (1.0 - q).powf(gf),
    };
    1.0 - stay
}

/// Partition of the `n` epochs after the current one into at most `max_blocks` blocks.
#[derive(Debug, Clone, Copy)]
struct Blocks {
    n: u64,
    count: usize,
    small: u64,
    larger: usize,
}

impl Blocks {
    fn new(n: u64, max_blocks: usize) -> Self {
        let count = (n.min(max_blocks as u64)) as usize;
        if count == 0 {
            return Self {
                n,
                count,
                small: 0,
                larger: 0,
            };
        }
        let small = n / count as u64;
        let larger = (n % count as u64) as usize;
        Self {
            n,
            count,
            small,
            larger,
        }
    }

    /// Size of block `b` and the epochs-left value of its transitions' middle.
    fn block(&self, b: usize) -> (u64, f64) {
        let size = if b < self.larger {
            self.small + 1
        } else {
            self.small
        };
        let before = b as u64 * self.small + b.min(self.larger) as u64;
        let k_start = self.n - before;
        (size, k_start as f64 - (size as f64 + 1.0) / 2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(
        seconds: &'a [f64],
        must_visit: &'a [bool],
        visited: &'a [bool],
        transitions: &'a [f64],
        current: usize,
        epochs_after: u64,
        total_epochs: u64,
    ) -> ChainInput<'a> {
        ChainInput {
            seconds,
            must_visit,
            visited,
            transitions,
            current,
            fraction: 0.0,
            epochs_after,
            total_epochs,
        }
    }

    #[test]
    fn leave_within_matches_the_power() {
        for &(q, g) in &[(1e-6_f64, 7_u64), (0.3, 5), (1e-4, 3), (1.0, 4), (0.5, 1)] {
            let reference = -((g as f64) * (-q).ln_1p()).exp_m1();
            let got = leave_within(q, g);
            assert!(
                (got - reference).abs() <= 1e-12 * reference,
                "{q} {g}: {got} vs {reference}"
            );
        }
    }

    #[test]
    fn blocks_cover_the_epochs() {
        for &(n, m) in &[(10_u64, 64_usize), (1000, 64), (65, 64), (7, 3)] {
            let blocks = Blocks::new(n, m);
            let total: u64 = (0..blocks.count).map(|b| blocks.block(b).0).sum();
            assert_eq!(total, n);
            if n <= m as u64 {
                assert!((0..blocks.count).all(|b| blocks.block(b).0 == 1));
            }
        }
    }

    #[test]
    fn rows_are_distributions() {
        let seconds = [3.0, 2.0, 1.0];
        let counts = [5.0, 1.0, 0.0, 0.0, 4.0, 1.0, 1.0, 0.0, 9.0];
        let data = input(
            &seconds,
            &[true, true, true],
            &[true, true, true],
            &counts,
            2,
            10,
            40,
        );
        let mut rows = Vec::new();
        posterior_rows(&data, &MarkovPrior::default(), &mut rows);
        for row in rows.chunks(3) {
            let sum: f64 = row.iter().sum();
            assert!((sum - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn deadline_forces_the_last_regime_in_time() {
        // Two regimes, never left regime 0, one epoch after the current: it must be regime 1.
        let seconds = [10.0, 1.0];
        let counts = [20.0, 0.0, 0.0, 0.0];
        let data = input(&seconds, &[true, true], &[true, false], &counts, 0, 1, 22);
        let prior = MarkovPrior::default();
        let (mean, std) = solve(&data, &prior, &mut Scratch::default(), None);
        assert!((mean - 11.0).abs() < 1e-12, "{mean}");
        assert!(std.abs() < 1e-9);
    }
}
