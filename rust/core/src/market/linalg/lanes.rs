//! Row access and sums in four interleaved lanes: a fixed order (deterministic, the same bits on
//! every run and with or without AVX2) that vectorises, unlike a running sum.

/// Row `k` of a dense `rows x len` matrix (its length known to the optimiser: no bounds checks in
/// the row loops).
#[inline(always)]
pub(crate) fn row(values: &[f64], k: usize, len: usize) -> &[f64] {
    &values[k * len..][..len]
}

#[inline(always)]
pub(crate) fn row_mut(values: &mut [f64], k: usize, len: usize) -> &mut [f64] {
    &mut values[k * len..][..len]
}

/// Sum in four interleaved lanes: a fixed order (deterministic) that vectorises, unlike a
/// running sum.
#[inline(always)]
pub(crate) fn lane_sum(values: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 4];
    let mut chunks = values.chunks_exact(4);
    for c in &mut chunks {
        lanes[0] += c[0];
        lanes[1] += c[1];
        lanes[2] += c[2];
        lanes[3] += c[3];
    }
    let mut tail = 0.0;
    for &value in chunks.remainder() {
        tail += value;
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
}

/// `sum a_j b_j` in four interleaved lanes (see [`lane_sum`]).
#[inline(always)]
pub(crate) fn lane_dot(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 4];
    let (mut ca, mut cb) = (a.chunks_exact(4), b.chunks_exact(4));
    for (p, q) in (&mut ca).zip(&mut cb) {
        lanes[0] += p[0] * q[0];
        lanes[1] += p[1] * q[1];
        lanes[2] += p[2] * q[2];
        lanes[3] += p[3] * q[3];
    }
    let mut tail = 0.0;
    for (&p, &q) in ca.remainder().iter().zip(cb.remainder()) {
        tail += p * q;
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
}
