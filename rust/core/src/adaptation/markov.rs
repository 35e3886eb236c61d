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
            max_blocks: 32,
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
        if self.max_blocks == 0 {
            return Err(AdaptationError::new("max_blocks", "must be >= 1"));
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

/// The posterior-mean chain of one job.
#[derive(Debug, Clone)]
pub struct Chain {
    regimes: usize,
    rows: Vec<f64>,
    unvisited_above: Vec<f64>,
    deadline: bool,
}

impl Chain {
    /// Posterior-mean transition rows for `input` under `prior`.
    pub fn posterior(input: &ChainInput<'_>, prior: &MarkovPrior) -> Self {
        let r = input.seconds.len();
        let e = input.total_epochs.max(1) as f64;
        let profile_regimes = input.must_visit.iter().filter(|&&m| m).count().max(1);
        let lambda0 = (profile_regimes - 1) as f64 / e;
        let kappa = prior.strength * e / profile_regimes as f64;
        let mu0 = prior.backward_share * lambda0;
        let count = |i: usize, j: usize| input.transitions.get(i * r + j).copied().unwrap_or(0.0);
        let (mut fwd_moves, mut fwd_exposure, mut back_moves, mut back_exposure) =
            (0.0, 0.0, 0.0, 0.0);
        for i in 0..r {
            let out: f64 = (0..r).map(|j| count(i, j)).sum();
            if i + 1 < r {
                fwd_exposure += out;
                fwd_moves += (i + 1..r).map(|j| count(i, j)).sum::<f64>();
            }
            if i > 0 {
                back_exposure += out;
                back_moves += (0..i).map(|j| count(i, j)).sum::<f64>();
            }
        }
        let lambda = (kappa * lambda0 + fwd_moves) / (kappa + fwd_exposure);
        let mu = (kappa * mu0 + back_moves) / (kappa + back_exposure);
        let mut rows = vec![0.0; r * r];
        for i in 0..r {
            let mut fwd = if i + 1 < r { lambda } else { 0.0 };
            let mut back = if i > 0 { mu } else { 0.0 };
            if fwd + back > 1.0 {
                let scale = 1.0 / (fwd + back);
                fwd *= scale;
                back *= scale;
            }
            let decay_sum: f64 = (i + 1..r)
                .map(|j| prior.jump_decay.powi((j - i - 1) as i32))
                .sum();
            let out: f64 = (0..r).map(|j| count(i, j)).sum();
            for j in 0..r {
                let mean = if j > i {
                    fwd * prior.jump_decay.powi((j - i - 1) as i32) / decay_sum
                } else if j < i {
                    back / i as f64
                } else {
                    (1.0 - fwd - back).max(0.0)
                };
                if let Some(p) = rows.get_mut(i * r + j) {
                    *p = (kappa * mean + count(i, j)) / (kappa + out);
                }
            }
        }
        let unvisited_above = (0..r)
            .map(|i| {
                (i + 1..r)
                    .filter(|&j| {
                        input.must_visit.get(j).copied().unwrap_or(false)
                            && !input.visited.get(j).copied().unwrap_or(false)
                    })
                    .count() as f64
            })
            .collect();
        Self {
            regimes: r,
            rows,
            unvisited_above,
            deadline: prior.deadline,
        }
    }

    /// Posterior-mean transition matrix, row-major (without the deadline).
    pub fn rows(&self) -> &[f64] {
        &self.rows
    }

    /// Expected remaining runtime and its standard deviation, seconds; and, if `filler` is given,
    /// the expected progress curve under continuous service pushed into it.
    pub fn solve(
        &self,
        input: &ChainInput<'_>,
        prior: &MarkovPrior,
        filler: Option<&mut RoundFiller<'_>>,
    ) -> (f64, f64) {
        let r = self.regimes;
        let rows = RowSums::new(self, input.seconds);
        let d_cur = input.seconds.get(input.current).copied().unwrap_or(0.0);
        let head = (1.0 - input.fraction) * d_cur;
        let n = input.epochs_after;
        let blocks = Blocks::new(n, prior.max_blocks);
        let table = LawTable::new(self, &rows, blocks);
        let mut laws = vec![BlockLaw::default(); r];
        // Backward: V and W at the start of each block, from the last block to the first.
        let mut v = vec![0.0; r];
        let mut w = vec![0.0; r];
        let mut next_v = vec![0.0; r];
        let mut next_w = vec![0.0; r];
        for b in (0..blocks.count).rev() {
            table.fill(b, &mut laws);
            for (i, law) in laws.iter().enumerate() {
                let row = self.rows.get(i * r..(i + 1) * r).unwrap_or_default();
                let (mut fv, mut bv, mut fw, mut bw) = (0.0, 0.0, 0.0, 0.0);
                for (j, ((&p, &vj), &wj)) in row.iter().zip(&v).zip(&w).enumerate() {
                    if j > i {
                        fv += p * vj;
                        fw += p * wj;
                    } else if j < i {
                        bv += p * vj;
                        bw += p * wj;
                    }
                }
                let vi = v.get(i).copied().unwrap_or(0.0);
                let wi = w.get(i).copied().unwrap_or(0.0);
                let pv = law.stay * vi + law.forward * fv + law.backward * bv;
                let pw = law.stay * wi + law.forward * fw + law.backward * bw;
                if let (Some(nv), Some(nw)) = (next_v.get_mut(i), next_w.get_mut(i)) {
                    *nv = law.seconds + pv;
                    *nw = law.seconds * law.seconds + 2.0 * law.seconds * pv + pw;
                }
            }
            std::mem::swap(&mut v, &mut next_v);
            std::mem::swap(&mut w, &mut next_w);
        }
        // Entry: the regime of the first epoch after the current one.
        let mut entry = vec![0.0; r];
        if n > 0 {
            let (alpha, beta) = rows.deadline_scales(self, input.current, n as f64);
            let row = self
                .rows
                .get(input.current * r..(input.current + 1) * r)
                .unwrap_or_default();
            for (j, (x, &p)) in entry.iter_mut().zip(row).enumerate() {
                *x = p * if j > input.current { alpha } else { beta };
            }
        }
        let rest_mean: f64 = entry.iter().zip(&v).map(|(p, x)| p * x).sum();
        let rest_second: f64 = entry.iter().zip(&w).map(|(p, x)| p * x).sum();
        let variance = (rest_second - rest_mean * rest_mean).max(0.0);
        if let Some(filler) = filler {
            filler.push(Segment {
                seconds: head,
                epochs: 1.0 - input.fraction,
            });
            let mut pi = entry;
            let mut next = vec![0.0; r];
            for b in 0..blocks.count {
                if filler.is_full() {
                    break;
                }
                let g = table.fill(b, &mut laws);
                let mut time = 0.0;
                next.iter_mut().for_each(|x| *x = 0.0);
                for (i, (law, &mass)) in laws.iter().zip(&pi).enumerate() {
                    if mass <= 0.0 {
                        continue;
                    }
                    time += mass * law.seconds;
                    let row = self.rows.get(i * r..(i + 1) * r).unwrap_or_default();
                    for (j, (x, &p)) in next.iter_mut().zip(row).enumerate() {
                        *x += mass
                            * if j == i {
                                law.stay
                            } else if j > i {
                                law.forward * p
                            } else {
                                law.backward * p
                            };
                    }
                }
                filler.push(Segment {
                    seconds: time,
                    epochs: g as f64,
                });
                std::mem::swap(&mut pi, &mut next);
            }
        }
        (head + rest_mean, variance.sqrt())
    }
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

/// Per-row sums of the posterior rows that the block laws need (constant over blocks).
struct RowSums {
    /// `P_ii`.
    diagonal: Vec<f64>,
    /// `sum_{j > i} P_ij`.
    forward: Vec<f64>,
    /// `sum_{j > i} P_ij d_j`.
    forward_seconds: Vec<f64>,
    /// `sum_{j < i} P_ij d_j`.
    backward_seconds: Vec<f64>,
    /// `d_i`.
    seconds: Vec<f64>,
}

impl RowSums {
    fn new(chain: &Chain, seconds: &[f64]) -> Self {
        let r = chain.regimes;
        let mut sums = Self {
            diagonal: vec![0.0; r],
            forward: vec![0.0; r],
            forward_seconds: vec![0.0; r],
            backward_seconds: vec![0.0; r],
            seconds: seconds.to_vec(),
        };
        for (i, row) in chain.rows.chunks(r.max(1)).enumerate().take(r) {
            let (mut diag, mut fwd, mut fwd_s, mut back_s) = (0.0, 0.0, 0.0, 0.0);
            for (j, (&p, &d)) in row.iter().zip(seconds).enumerate() {
                if j > i {
                    fwd += p;
                    fwd_s += p * d;
                } else if j < i {
                    back_s += p * d;
                } else {
                    diag = p;
                }
            }
            if let (Some(a), Some(b), Some(c), Some(e)) = (
                sums.diagonal.get_mut(i),
                sums.forward.get_mut(i),
                sums.forward_seconds.get_mut(i),
                sums.backward_seconds.get_mut(i),
            ) {
                (*a, *b, *c, *e) = (diag, fwd, fwd_s, back_s);
            }
        }
        sums
    }

    /// Factors `(alpha, beta)` on row `i`'s forward and other entries for a move into an epoch
    /// with `k` epochs left: the deadline raises the forward mass to `min(1, u_i / k)`.
    fn deadline_scales(&self, chain: &Chain, i: usize, k: f64) -> (f64, f64) {
        let unvisited = chain.unvisited_above.get(i).copied().unwrap_or(0.0);
        let forward = self.forward.get(i).copied().unwrap_or(0.0);
        if !chain.deadline || unvisited <= 0.0 || k <= 0.0 || forward <= 0.0 {
            return (1.0, 1.0);
        }
        let target = (unvisited / k).min(1.0);
        if target <= forward {
            return (1.0, 1.0);
        }
        let rest = 1.0 - forward;
        let beta = if rest > 0.0 {
            (1.0 - target) / rest
        } else {
            0.0
        };
        (target / forward, beta)
    }

    /// The law of regime `i` over a block of `g` epochs with row factors `alpha`, `beta`.
    fn law(&self, i: usize, alpha: f64, beta: f64, g: u64) -> BlockLaw {
        let gf = g as f64;
        let d = self.seconds.get(i).copied().unwrap_or(0.0);
        let stay_epoch = beta * self.diagonal.get(i).copied().unwrap_or(1.0);
        let q = (1.0 - stay_epoch).clamp(0.0, 1.0);
        if q <= 0.0 {
            return BlockLaw {
                seconds: gf * d,
                stay: 1.0,
                forward: 0.0,
                backward: 0.0,
            };
        }
        let leave = leave_within(q, g);
        let scale = leave / q;
        let moved = (alpha * self.forward_seconds.get(i).copied().unwrap_or(0.0)
            + beta * self.backward_seconds.get(i).copied().unwrap_or(0.0))
            / q;
        BlockLaw {
            seconds: scale * d + (gf - scale) * moved,
            stay: 1.0 - leave,
            forward: scale * alpha,
            backward: scale * beta,
        }
    }
}

/// Block laws of every regime, with the laws free of the deadline cached per block size.
struct LawTable<'a> {
    chain: &'a Chain,
    sums: &'a RowSums,
    blocks: Blocks,
    /// Laws without the deadline for blocks of `small` and `small + 1` epochs.
    plain: [Vec<BlockLaw>; 2],
}

impl<'a> LawTable<'a> {
    fn new(chain: &'a Chain, sums: &'a RowSums, blocks: Blocks) -> Self {
        let r = chain.regimes;
        let plain = [blocks.small, blocks.small + 1].map(|g| {
            if g == 0 {
                Vec::new()
            } else {
                (0..r).map(|i| sums.law(i, 1.0, 1.0, g)).collect()
            }
        });
        Self {
            chain,
            sums,
            blocks,
            plain,
        }
    }

    /// The laws of block `b` into `out`; returns the block's size.
    fn fill(&self, b: usize, out: &mut [BlockLaw]) -> u64 {
        let (g, k_mid) = self.blocks.block(b);
        let cached = self.plain[usize::from(g != self.blocks.small)].as_slice();
        for (i, law) in out.iter_mut().enumerate() {
            let (alpha, beta) = self.sums.deadline_scales(self.chain, i, k_mid);
            *law = if alpha == 1.0 && beta == 1.0 {
                cached
                    .get(i)
                    .copied()
                    .unwrap_or_else(|| self.sums.law(i, 1.0, 1.0, g))
            } else {
                self.sums.law(i, alpha, beta, g)
            };
        }
        g
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
            assert!((got - reference).abs() <= 1e-12 * reference, "{q} {g}: {got} vs {reference}");
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
        let chain = Chain::posterior(&data, &MarkovPrior::default());
        for i in 0..3 {
            let sum: f64 = chain.rows()[i * 3..i * 3 + 3].iter().sum();
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
        let chain = Chain::posterior(&data, &prior);
        let (mean, std) = chain.solve(&data, &prior, None);
        assert!((mean - 11.0).abs() < 1e-12, "{mean}");
        assert!(std.abs() < 1e-9);
    }
}
