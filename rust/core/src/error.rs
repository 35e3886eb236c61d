//! The shape every error of the core shares: the argument (or field) a rejected input concerns,
//! and why.
//!
//! Each module family has its own error type ([`crate::market::MarketError`],
//! [`crate::adaptation::AdaptationError`]), so that a signature says which family can fail, but
//! both are this one generic struct: the binding converts either with one `From` impl, and raises
//! the same Python exception (`shockwave.InputError`, with `.argument` and `.reason`).

use std::fmt;
use std::marker::PhantomData;

/// Markers of the module families (type parameters of [`InputError`]; never constructed).
pub mod family {
    /// [`crate::market`]: the market solve, bid shifting and rounding.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Market {}
    /// [`crate::adaptation`]: the adaptation model.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Adaptation {}
}

/// A rejected input of module family `Family`: the argument it concerns and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError<Family> {
    /// Name of the offending argument or field, as in the Python API (e.g. `"valuations"`,
    /// `"epochs_done"`).
    pub argument: String,
    /// What is wrong with it (naming the job or the entry where there is one).
    pub reason: String,
    /// Whether the input was refused because memory for it could not be allocated (a fallible
    /// allocation failed), rather than for breaking a rule: the binding raises `MemoryError`.
    out_of_memory: bool,
    family: PhantomData<fn() -> Family>,
}

impl<Family> InputError<Family> {
    /// An error about `argument`.
    pub fn new(argument: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            argument: argument.into(),
            reason: reason.into(),
            out_of_memory: false,
            family: PhantomData,
        }
    }

    /// An allocation of the size `argument` chose failed (see [`crate::limits::try_filled`]).
    pub fn out_of_memory(argument: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            out_of_memory: true,
            ..Self::new(argument, reason)
        }
    }

    /// Whether this is an allocation failure ([`InputError::out_of_memory`]).
    pub fn is_out_of_memory(&self) -> bool {
        self.out_of_memory
    }
}

impl<Family> fmt::Display for InputError<Family> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.argument, self.reason)
    }
}

impl<Family: fmt::Debug> std::error::Error for InputError<Family> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_argument() {
        let error = InputError::<family::Market>::new("tol", "must be positive");
        assert_eq!(error.to_string(), "tol: must be positive");
        assert_eq!(error.argument, "tol");
        assert_eq!(error.reason, "must be positive");
        assert!(!error.is_out_of_memory());
        let error = InputError::<family::Market>::out_of_memory("valuations", "no memory");
        assert!(error.is_out_of_memory());
        assert_eq!(error.to_string(), "valuations: no memory");
    }
}
