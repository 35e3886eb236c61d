//! Sums over jobs of terms shared by classes of identical jobs, added one job after another.
//!
//! The ECOS-method interior point of the heterogeneous policies (Python,
//! `shockwave.heterogeneous.interior_point`) holds each class of identical jobs once, but the
//! sums over jobs must keep the bits of a sum over every job: numpy's `einsum("nik,ni->k")` (and
//! `"nij,nik->jk"`) adds the products `n` after `n`, row `i` after row `i`, into an accumulator
//! that starts at zero, each addition rounded. [`class_sum`] does those additions in that order
//! from the classes' products, without a row per job in memory.

/// `out[f] = sum over jobs j in order, then rows i in order, of terms[members[j]][i][f]`, from
/// `out[f] = 0.0`, each addition rounded (never reassociated).
///
/// `terms` holds `classes x rows x width` values, row-major; `members[j]` is job `j`'s class.
/// Returns `None` when `terms` does not hold `rows x width` values per class or a member is not
/// a class (the binding checks both first and names the argument).
pub fn class_sum(terms: &[f64], rows: usize, width: usize, members: &[usize]) -> Option<Vec<f64>> {
    let block = rows.checked_mul(width)?;
    if block == 0 {
        return Some(vec![0.0; width]);
    }
    if terms.len() % block != 0 {
        return None;
    }
    // The widths the policies' programs use (the shared unknowns, and their squares) get an
    // accumulator of fixed size, held in registers; the additions are the same either way.
    macro_rules! fixed {
        ($($w:literal)*) => {
            match width {
                $($w => {
                    let mut out = [0.0; $w];
                    add_classes(&mut out, terms, block, members).map(|()| out.to_vec())
                })*
                _ => {
                    let mut out = vec![0.0; width];
                    add_classes(&mut out, terms, block, members).map(|()| out)
                }
            }
        };
    }
    fixed!(1 2 3 4 5 6 8 9 16 25)
}

/// Add every member's block of `terms`, row after row, into `out` (a row is `out.len()` wide).
#[inline(always)]
fn add_classes(out: &mut [f64], terms: &[f64], block: usize, members: &[usize]) -> Option<()> {
    for &class in members {
        let start = class.checked_mul(block)?;
        let values = terms.get(start..start.checked_add(block)?)?;
        for row in values.chunks_exact(out.len()) {
            for (total, value) in out.iter_mut().zip(row) {
                *total += *value;
            }
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::class_sum;

    #[test]
    fn adds_job_after_job_and_row_after_row_from_zero() {
        // two classes of 2 rows x 2 columns
        let terms = [1.0, 10.0, 2.0, 20.0, 0.5, 1e16, -0.25, -1e16];
        let out = class_sum(&terms, 2, 2, &[1, 0, 1]).unwrap_or_default();
        let mut expected = [0.0f64; 2];
        for class in [1usize, 0, 1] {
            for row in 0..2 {
                for (f, total) in expected.iter_mut().enumerate() {
                    *total += terms[class * 4 + row * 2 + f];
                }
            }
        }
        assert_eq!(out.len(), 2);
        for (a, b) in out.iter().zip(expected) {
            assert_eq!(a.to_bits(), b.to_bits());
        }
    }

    #[test]
    fn the_order_is_kept_where_reassociating_would_change_the_bits() {
        // 1e16 + 1 rounds the 1 away, so the order of the additions shows in the result
        let terms = [1e16, 1.0, -1e16];
        assert_eq!(class_sum(&terms, 1, 1, &[0, 1, 2]), Some(vec![0.0]));
        assert_eq!(class_sum(&terms, 1, 1, &[0, 2, 1]), Some(vec![1.0]));
    }

    #[test]
    fn refuses_a_member_that_is_not_a_class_and_ragged_terms() {
        assert_eq!(class_sum(&[1.0, 2.0], 1, 2, &[1]), None);
        assert_eq!(class_sum(&[1.0, 2.0, 3.0], 1, 2, &[0]), None);
        assert_eq!(class_sum(&[], 0, 3, &[4]), Some(vec![0.0; 3]));
        assert_eq!(class_sum(&[1.0, 2.0], 1, 2, &[]), Some(vec![0.0; 2]));
        assert_eq!(class_sum(&[1.0; 7], 1, 7, &[1]), None);
    }

    #[test]
    fn fixed_and_any_widths_add_alike() {
        // width 7 takes the general loop, 8 a fixed accumulator: the same values, the same sums
        let terms: Vec<f64> = (0..3 * 2 * 56)
            .map(|i| (i as f64 * 0.37).sin() * 1e8f64.powf((i % 5) as f64 - 2.0))
            .collect();
        let members = [2usize, 0, 1, 1, 2, 0, 2];
        for (rows, width) in [(2 * 8, 7), (2 * 7, 8)] {
            let out = class_sum(&terms, rows, width, &members).unwrap_or_default();
            let mut expected = vec![0.0f64; width];
            for &class in &members {
                for row in 0..rows {
                    for (f, total) in expected.iter_mut().enumerate() {
                        *total += terms[(class * rows + row) * width + f];
                    }
                }
            }
            assert_eq!(out, expected);
        }
    }
}
