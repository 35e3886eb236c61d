//! Stochastic model of dynamic batch-size adaptation (to be written: issue 4).
