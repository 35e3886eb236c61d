//! The remaining-runtime estimators and the settings shared by all jobs of a [`super::JobModels`],
//! with their defaults (the one place they are defined; the Python binding and wrappers read
//! them from here).

use std::fmt;
use std::str::FromStr;

use super::super::error::AdaptationError;
use super::super::markov::MarkovPrior;

/// Which remaining-runtime estimator to use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Estimator {
    /// Markov chain over regimes with a Bellman recursion ([`crate::adaptation::markov`]).
    #[default]
    Markov,
    /// The original Shockwave's Dirichlet posterior mean ([`crate::adaptation::dirichlet`]).
    Dirichlet,
    /// The true remaining schedule of the profile (ablations).
    Oracle,
}

impl Estimator {
    /// Every estimator, in the order of their names in the API.
    pub const ALL: [Self; 3] = [Self::Markov, Self::Dirichlet, Self::Oracle];

    /// The estimator's name in the API (`"markov"`, `"dirichlet"`, `"oracle"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Markov => "markov",
            Self::Dirichlet => "dirichlet",
            Self::Oracle => "oracle",
        }
    }

    /// Parse `"markov"`, `"dirichlet"` or `"oracle"`; the error names the argument `estimator`.
    pub fn parse(name: &str) -> Result<Self, AdaptationError> {
        name.parse()
    }
}

impl fmt::Display for Estimator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Estimator {
    type Err = AdaptationError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|estimator| estimator.name() == name)
            .ok_or_else(|| {
                AdaptationError::new(
                    "estimator",
                    format!("must be 'markov', 'dirichlet' or 'oracle', got {name:?}"),
                )
            })
    }
}

/// Settings shared by all jobs of a [`super::JobModels`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelSettings {
    /// `dirichlet` only: round profiled durations to whole seconds (min 1 s) as the original's
    /// planner does. With `false` it uses the profile's durations.
    pub round_durations: bool,
    /// Round length of the original's calibration window, seconds (its `time_per_iteration`).
    pub calibration_round_seconds: f64,
    /// Pseudo-samples of the `markov`/`oracle` rate calibration at each level (> 0).
    pub calibration_strength: f64,
    /// Prior and numerics of the `markov` estimator.
    pub prior: MarkovPrior,
    /// Worker threads for [`super::JobModels::predict`]; 0 = one per available core (results do not
    /// depend on it).
    pub threads: usize,
}

impl Default for ModelSettings {
    fn default() -> Self {
        Self {
            round_durations: true,
            calibration_round_seconds: 120.0,
            calibration_strength: 1.0,
            prior: MarkovPrior::default(),
            threads: 0,
        }
    }
}

impl ModelSettings {
    /// Check the settings; errors name the field.
    pub fn validate(&self) -> Result<(), AdaptationError> {
        if !(self.calibration_round_seconds.is_finite() && self.calibration_round_seconds > 0.0) {
            return Err(AdaptationError::new(
                "calibration_round_seconds",
                format!(
                    "must be finite and > 0, got {}",
                    self.calibration_round_seconds
                ),
            ));
        }
        if !(self.calibration_strength.is_finite() && self.calibration_strength > 0.0) {
            return Err(AdaptationError::new(
                "calibration_strength",
                format!("must be finite and > 0, got {}", self.calibration_strength),
            ));
        }
        self.prior.validate()
    }
}
