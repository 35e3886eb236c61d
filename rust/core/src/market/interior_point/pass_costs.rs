//! Cost of each one-type pass per entry (job x round) and the memory-bandwidth bound of the
//! same bytes, measured on this machine (`benches/README.md`, issue 24):
//!
//! ```text
//! cargo test --release -p shockwave-core --lib pass_costs -- --ignored --nocapture
//! ```
//!
//! (With three GPU types too, per entry of the `N x T x K` layout; the array counts of the bound
//! are the one-type passes'.)
//!
//! Each pass runs on the state of a real solve after a few iterations, with a zero step pending
//! where the pass applies one (the same work, the state unchanged), compiled with AVX2 as the
//! solver runs it. The bound: the pass's per-entry arrays (read and written) at the rate of a
//! plain streaming sum over all of the method's per-entry arrays (the same working set).
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Instant;

use super::super::certificate::Incumbent;
use super::super::instance::Instance;
use super::super::synthetic::SyntheticMarket;
use super::state::{Pass, Pending};
use super::{InteriorPoint, Start};

/// Median seconds of `repeats` runs of `work`.
fn median(repeats: usize, mut work: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..repeats)
        .map(|_| {
            let start = Instant::now();
            work();
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[repeats / 2]
}

/// Nanoseconds per entry of each pass, and of a streaming sum per 8-byte value.
#[allow(unsafe_code)]
#[target_feature(enable = "avx2")]
unsafe fn measure<const K: usize>(
    ipm: &mut InteriorPoint,
    inst: &Instance,
    repeats: usize,
) -> Vec<(&'static str, f64, usize)> {
    let entries = inst.entries() as f64;
    let zero = Pending {
        primal: 0.0,
        dual: 0.0,
        target: 1e-6,
    };
    let mut rows = Vec::new();
    let per_entry = |seconds: f64| seconds * 1e9 / entries;
    let t = median(repeats, || {
        ipm.pending = Some(zero);
        black_box(ipm.prepare::<20, K>(inst));
    });
    // reads a x y z v ix iy cxi cvi dx, writes x y z v ix iy isig
    rows.push(("prepare (with the step's update)", per_entry(t), 17));
    let t = median(repeats, || {
        black_box(ipm.back_substitute::<20, K>(inst, Pass::Predictor).check);
    });
    // reads a z v ix iy isig, writes cxi cvi
    rows.push(("back_substitute (predictor)", per_entry(t), 8));
    let t = median(repeats, || {
        black_box(
            ipm.back_substitute::<20, K>(inst, Pass::Corrector { target: 1e-6 })
                .check,
        );
    });
    // reads a z v ix iy isig cxi cvi, writes dx
    rows.push(("back_substitute (corrector)", per_entry(t), 9));
    let t = median(repeats, || {
        black_box(ipm.complementarity::<20, K>(inst));
    });
    // reads x y z v
    rows.push(("complementarity", per_entry(t), 4));
    let t = median(repeats, || {
        ipm.pending = Some(zero);
        ipm.apply_pending::<20, K>(inst);
    });
    // reads x y z v ix iy cxi cvi dx, writes x y z v
    rows.push(("apply_pending", per_entry(t), 13));
    // The working set: the valuations and the ten per-entry arrays.
    let bytes: Vec<f64> = vec![1.0; 11 * inst.entries()];
    let t = median(repeats, || {
        black_box(super::super::linalg::lanes::lane_sum(black_box(&bytes)));
    });
    rows.push((
        "streaming sum, per 8-byte value",
        t * 1e9 / bytes.len() as f64,
        1,
    ));
    rows
}

#[test]
#[ignore = "a measurement: run with --release --ignored --nocapture"]
fn pass_costs() {
    if !std::arch::is_x86_feature_detected!("avx2") {
        return;
    }
    for (jobs, types) in [(1_000, 1), (10_000, 1), (1_000, 3)] {
        let m = if types == 1 {
            SyntheticMarket::random(jobs, 20, 7)
        } else {
            SyntheticMarket::random_typed(jobs, 20, types, 7)
        };
        let inst = Instance::new(&m.problem()).unwrap();
        for threads in [1, 2] {
            let mut ipm = InteriorPoint::new(&inst, threads);
            let mut best = Incumbent::new(&inst, 1);
            let prices = vec![1.0; inst.goods()];
            let utilities: Vec<f64> = inst.c.iter().map(|c| c + 0.1).collect();
            let start = Start {
                prices: &prices,
                utilities: &utilities,
                gap: 1.0,
            };
            ipm.run(&inst, &start, 1e-9, 6, &mut best, true);
            let repeats = (2_000_000 / inst.entries()).max(11);
            #[allow(unsafe_code)]
            // SAFETY: the CPU has AVX2 (checked above).
            let rows = unsafe {
                if types == 1 {
                    measure::<1>(&mut ipm, &inst, repeats)
                } else {
                    measure::<3>(&mut ipm, &inst, repeats)
                }
            };
            let stream = rows[rows.len() - 1].1;
            println!(
                "N = {jobs}, T = 20, K = {types}, {threads} thread(s): ns per entry (job x round x \
                 type; bound: arrays x stream)"
            );
            for (name, ns, arrays) in rows {
                println!(
                    "  {name:<34} {ns:7.2}  bound {:6.2}  ratio {:5.1}",
                    arrays as f64 * stream,
                    ns / (arrays as f64 * stream)
                );
            }
        }
    }
}
