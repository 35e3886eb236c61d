//! The interior-point method's state: dense per-entry, per-buyer and per-round arrays, and the
//! bookkeeping of a step (its lengths, limits and the pass that computes it).

use crate::buffers::Buffer;

/// Per-entry state, dense `buyers x goods`, and per-slot state, dense `buyers x rounds` (a slot
/// is a job's round: its one gang, over the types). With one GPU type a slot is an entry and the
/// two layouts are the same. Entries that are not purchasable hold `x = 0, z = 0` and zero
/// reciprocals, slots without a purchasable entry `y = 1, v = 0`, which removes them from every
/// sum.
#[derive(Default)]
pub(super) struct Entries<V = Buffer> {
    pub(super) x: V,
    /// Slack of the slot's cap, `y = 1 - sum_k x` (per slot).
    pub(super) y: V,
    pub(super) z: V,
    /// Multiplier of the slot's cap (per slot).
    pub(super) v: V,
    /// Reciprocals of x, y (per slot) and, with one type, sigma of the current point (0 where
    /// not purchasable).
    pub(super) ix: V,
    pub(super) iy: V,
    pub(super) isig: V,
    /// The current (corrector) share direction.
    pub(super) dx: V,
    /// Second-order terms of the predictor over the bounds: `dx dz / x` (per entry) and
    /// `dy dv / y` (per slot).
    pub(super) cxi: V,
    pub(super) cvi: V,
}

/// With GPU types (the price system's blocks with one type too): each job's Newton block, `M = diag(zeta) + (per slot) eta 1 1^T + gamma a a^T`
/// (see `typed.rs`), as the passes use it.
#[derive(Default)]
pub(super) struct Typed {
    /// `B^{-1} a` per entry, `B` the block without the utility term: the rank-one part of the
    /// price system and of every solve.
    pub(super) hata: Buffer,
    /// `E^{-1} a / L` per entry (`E` a slot's block given the rest of its job, see `typed.rs`).
    pub(super) r: Buffer,
    /// `E^{-1}` per slot, per job `types x types x rounds` (entry `(k, j)` of round `t` at
    /// `(k types + j) rounds + t`).
    pub(super) n: Buffer,
    /// A slot's share of `kappa`, `Q = a^T B^{-1} a`, per slot.
    pub(super) q: Buffer,
    /// The price system's within-round blocks (with one type: its diagonal), accumulated apart:
    /// `types` values per good (round `t` of type `j`: `(j rounds + t) types + f` holds entry
    /// `(j, f)`, those with `f >= j` read).
    pub(super) block: Vec<f64>,
}

/// Per-buyer state.
#[derive(Default)]
pub(super) struct Buyers<V = Vec<f64>, I = Vec<usize>> {
    pub(super) u: V,
    /// Ceiling slack and multiplier (unused without a ceiling).
    pub(super) r: V,
    pub(super) beta: V,
    /// `beta / r` and the ceiling residual `u + r - ubar` (0 without a ceiling).
    pub(super) br: V,
    pub(super) rc: V,
    /// `gamma = w / u^2 + beta / r` and `kappa = 1 / gamma + sum a^2 / sigma`.
    pub(super) gamma: V,
    pub(super) kappa: V,
    /// Coefficient of `a` in `h0`: `w / u - (beta / r) rc`.
    pub(super) coef: V,
    /// The row's dominant entry ([`NONE`] if none) and its leave-one-out sum `L`.
    pub(super) dominant: I,
    pub(super) dominant_loo: V,
    /// Predictor's `dr dbeta`, and the corrector's ceiling steps.
    pub(super) cr: V,
    pub(super) dr: V,
    pub(super) dbeta: V,
}

/// Per-round state.
#[derive(Default)]
pub(super) struct Rounds {
    pub(super) p: Vec<f64>,
    pub(super) s: Vec<f64>,
    pub(super) dp: Vec<f64>,
    pub(super) ds: Vec<f64>,
    pub(super) cs: Vec<f64>,
    /// Supply residual `sum n x + s - G` of the current point.
    pub(super) rp: Vec<f64>,
    /// `sum_i n_i M_i^{-1} h` for `h0`, `h_tau` and `hc`.
    pub(super) r0: Vec<f64>,
    pub(super) rtau: Vec<f64>,
    pub(super) rcorr: Vec<f64>,
    /// Round part of the current right-hand side, and `sum n dx` of the current direction.
    pub(super) base: Vec<f64>,
    pub(super) flow: Vec<f64>,
    pub(super) rhs: Vec<f64>,
}

/// A step computed but not yet applied (applied by the next [`InteriorPoint::prepare`], fused
/// with its pass, or by [`InteriorPoint::apply_pending`]).
#[derive(Clone, Copy)]
pub(super) struct Pending {
    pub(super) primal: f64,
    pub(super) dual: f64,
    pub(super) target: f64,
}

/// Step limits: the largest `alpha` keeping `value + alpha delta >= 0` is `1 / max(-delta /
/// value)`; tracking the maximum of `-delta * (1 / value)` avoids divisions.
#[derive(Clone, Copy)]
pub(super) struct Limits {
    pub(super) primal: f64,
    pub(super) dual: f64,
}

impl Limits {
    pub(super) fn new() -> Self {
        Self {
            primal: 0.0,
            dual: 0.0,
        }
    }

    /// Steps in (0, 1].
    pub(super) fn steps(self) -> (f64, f64) {
        (1.0 / self.primal.max(1.0), 1.0 / self.dual.max(1.0))
    }
}

/// What a back-substitution pass found: step limits, the complementarity of the step as the
/// coefficients of `alpha_p`, `alpha_d` and `alpha_p alpha_d` (predictor only), and a sum that
/// is not finite when the direction is not.
pub(super) struct PassResult {
    pub(super) limits: Limits,
    pub(super) poly: [f64; 3],
    pub(super) check: f64,
}

/// Which direction a back-substitution pass computes.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Pass {
    Predictor,
    Corrector { target: f64 },
}
