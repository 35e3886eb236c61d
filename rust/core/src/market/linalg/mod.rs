//! Dense linear algebra of the interior-point method: the Cholesky factorisation of its `T x T`
//! price system, and deterministic lane reductions over rows.

pub(crate) mod cholesky;
pub(crate) mod lanes;
