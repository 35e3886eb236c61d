//! Dense Cholesky factorisation (with a diagonal lift when a pivot fails) and its solve, on
//! row-major `n x n` matrices.

/// In-place Cholesky factorisation (lower triangle) of the `n x n` matrix `a`; when a pivot is
/// not positive the diagonal is lifted by a small multiple of its largest entry and the
/// factorisation retried (`original` is scratch of the same size). False if it still fails.
#[inline(always)]
pub(crate) fn cholesky(a: &mut [f64], original: &mut [f64], n: usize) -> bool {
    let scale = (0..n).map(|i| a[i * n + i].abs()).fold(0.0, f64::max);
    if !scale.is_finite() {
        return false;
    }
    original.copy_from_slice(a);
    let mut lift = 0.0;
    for _ in 0..8 {
        if lift > 0.0 {
            a.copy_from_slice(original);
            for i in 0..n {
                a[i * n + i] += lift;
            }
        }
        if cholesky_in_place(a, n) {
            return true;
        }
        lift = if lift == 0.0 {
            1e-14 * scale
        } else {
            lift * 100.0
        };
    }
    false
}

#[inline(always)]
pub(crate) fn cholesky_in_place(a: &mut [f64], n: usize) -> bool {
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= a[j * n + k] * a[j * n + k];
        }
        if d.is_nan() || d <= 0.0 || d.is_infinite() {
            return false;
        }
        let d = d.sqrt();
        a[j * n + j] = d;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = s / d;
        }
    }
    true
}

/// Solve `L L^T x = b` in place with the factor from [`cholesky`].
#[inline(always)]
pub(crate) fn cholesky_solve(l: &[f64], n: usize, b: &mut [f64]) {
    for i in 0..n {
        let mut s = b[i];
        for k in 0..i {
            s -= l[i * n + k] * b[k];
        }
        b[i] = s / l[i * n + i];
    }
    for i in (0..n).rev() {
        let mut s = b[i];
        for k in i + 1..n {
            s -= l[k * n + i] * b[k];
        }
        b[i] = s / l[i * n + i];
    }
}
