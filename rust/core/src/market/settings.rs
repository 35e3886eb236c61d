//! Settings of the market solve: the method and the stopping rule, with their defaults (the one
//! place they are defined; the Python binding and wrappers read them from here).

use std::fmt;
use std::str::FromStr;

use super::MarketError;

/// Which algorithm runs the solve.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Method {
    /// Proportional-response price discovery, then the interior-point method.
    #[default]
    InteriorPoint,
    /// Proportional response only.
    ProportionalResponse,
}

impl Method {
    /// Every method, in the order of their names in the API.
    pub const ALL: [Self; 2] = [Self::InteriorPoint, Self::ProportionalResponse];

    /// The method's name in the API (`"interior_point"`, `"proportional_response"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::InteriorPoint => "interior_point",
            Self::ProportionalResponse => "proportional_response",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = MarketError;

    /// Parse a method's name; the error names the argument `method`.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|method| method.name() == name)
            .ok_or_else(|| {
                MarketError::new(
                    "method",
                    format!("expected 'interior_point' or 'proportional_response', got {name:?}"),
                )
            })
    }
}

/// Settings of [`super::solve`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolverSettings {
    /// Target relative duality gap (> 0).
    pub tol: f64,
    /// Largest number of iterations, all methods together (>= 1).
    pub max_iter: usize,
    /// The algorithm.
    pub method: Method,
    /// Proportional-response iterations that find the interior-point method's starting prices;
    /// `None`: 5 from a cold start, 1 from a warm start (whose bids already carry prices, which
    /// further proportional-response iterations were measured to worsen for the interior-point
    /// start).
    pub warmup_iterations: Option<usize>,
    /// Run the interior-point passes with AVX2 when the CPU has it (x86-64, detected at run
    /// time; default `true`). The results are the same bits either way: `false` is for checking
    /// that and for measuring the gain.
    pub simd: bool,
    /// Threads for the passes over the jobs (the interior-point method's, proportional
    /// response's and the certificate's; one GPU type or several); 0: one per available core;
    /// default 1 (on a two-core machine shared with other work, two threads were measured up to
    /// 3x slower than one: `benches/README.md`, issue 24). Markets with fewer than 128 jobs per
    /// thread use fewer threads. The results are the same bits for any number (at most
    /// [`MAX_THREADS`]).
    pub threads: usize,
}

/// The most threads a solve accepts.
pub const MAX_THREADS: usize = 1024;

impl SolverSettings {
    /// Check the settings; errors name the field (`tol` positive and finite, `max_iter` at
    /// least 1, `threads` at most [`MAX_THREADS`]).
    ///
    /// # Errors
    /// A [`MarketError`] naming `tol`, `max_iter` or `threads`.
    pub fn validate(&self) -> Result<(), MarketError> {
        if !(self.tol.is_finite() && self.tol > 0.0) {
            return Err(MarketError::new(
                "tol",
                format!("must be positive and finite, got {}", self.tol),
            ));
        }
        if self.max_iter == 0 {
            return Err(MarketError::new("max_iter", "must be at least 1"));
        }
        if self.threads > MAX_THREADS {
            return Err(MarketError::new(
                "threads",
                format!(
                    "must be at most {MAX_THREADS} (0: one per core), got {}",
                    self.threads
                ),
            ));
        }
        Ok(())
    }
}

impl Default for SolverSettings {
    fn default() -> Self {
        Self {
            tol: 1e-6,
            max_iter: 20_000,
            method: Method::default(),
            warmup_iterations: None,
            simd: true,
            threads: 1,
        }
    }
}

/// Longest window (rounds `T`) the interior-point method accepts. Its price system is a dense
/// `T x T` matrix held twice (16 `T^2` bytes: 64 MiB at this limit) and factored every iteration
/// (`T^3 / 3` operations, about a second at this limit), on top of `O(N T^2)` per iteration for
/// assembling it. Proportional response has no limit on `T` (`O(N T)` memory and time per
/// iteration). The Shockwave policy plans 20 rounds by default.
pub const MAX_INTERIOR_POINT_ROUNDS: usize = 2048;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_round_trip() {
        for method in Method::ALL {
            assert_eq!(method.name().parse::<Method>(), Ok(method));
        }
        let error = "newton".parse::<Method>().err();
        assert_eq!(error.map(|e| e.argument), Some("method".to_string()));
    }
}
