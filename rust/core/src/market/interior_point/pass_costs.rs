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
//!
//! `iteration_floor` measures the least memory traffic of one iteration whatever the passes'
//! layout (three sweeps, the state read in each and written in one), per entry, at the sizes of
//! the benchmarks and of the 100,000-job run's largest markets; `arithmetic_floor` the least
//! time of one iteration's floating-point operations (counted from the passes) on one core, in
//! cache: with the same bits the method must perform the same operations, so no order of them
//! takes less.
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

/// A plain sum in sixteen lanes: four vectors of additions in flight, so that it runs at the
/// rate the memory delivers the values, not at the adder's latency (the solver's four-lane
/// `lane_sum` waits on its additions when the values are in cache).
#[inline(always)]
fn stream_sum(values: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 16];
    for chunk in values.chunks_exact(16) {
        for l in 0..16 {
            lanes[l] += chunk[l];
        }
    }
    lanes.iter().sum()
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
        black_box(stream_sum(black_box(&bytes)));
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

/// One interior-point iteration's least memory traffic, whatever the passes' layout: three
/// sweeps over the entries (before the predictor's, the corrector's and the next iteration's
/// steps, each of which needs a price step solved over every job), each reading at least the
/// valuations and the four per-entry variables `x, y, z, v` the method keeps (their bits: `y` is
/// not `1 - x`), one of them writing the four back. Sixteen lanes, so that neither sweep waits
/// on its additions. Returns a value that depends on every entry.
#[allow(unsafe_code)]
#[target_feature(enable = "avx2")]
unsafe fn floor_sweeps(a: &[f64], state: [&mut [f64]; 4], step: f64) -> f64 {
    let [x, y, z, v] = state;
    let len = a.len();
    let (x, y, z, v) = (&mut x[..len], &mut y[..len], &mut z[..len], &mut v[..len]);
    let mut lanes = [0.0f64; 16];
    for _ in 0..2 {
        let chunks = a
            .chunks_exact(16)
            .zip(x.chunks_exact(16))
            .zip(y.chunks_exact(16))
            .zip(z.chunks_exact(16))
            .zip(v.chunks_exact(16));
        for ((((a, x), y), z), v) in chunks {
            for l in 0..16 {
                lanes[l] += (a[l] + x[l]) + (y[l] + z[l]) + v[l];
            }
        }
    }
    let (up, down) = (1.0 + step, 1.0 - step);
    for ((((&a, x), y), z), v) in a.iter().zip(x).zip(y).zip(z).zip(v) {
        let d = step * a;
        *x += d;
        *y -= d;
        *z *= up;
        *v *= down;
    }
    lanes.iter().sum()
}

#[test]
#[ignore = "a measurement: run with --release --ignored --nocapture"]
#[allow(unsafe_code)]
fn iteration_floor() {
    if !std::arch::is_x86_feature_detected!("avx2") {
        return;
    }
    for jobs in [500, 1_000, 10_000, 65_659] {
        let entries = jobs * 20;
        let a: Vec<f64> = (0..entries).map(|e| 1.0 + (e % 7) as f64).collect();
        let mut state: Vec<Vec<f64>> = (0..4).map(|_| vec![0.5; entries]).collect();
        let repeats = (40_000_000 / entries).max(11);
        for threads in [1, 2] {
            let runs = crate::threads::runs(entries, threads);
            let t = median(repeats, || {
                let [x, y, z, v] = &mut state[..] else {
                    unreachable!()
                };
                let pieces: Vec<_> = crate::threads::split_runs(x, &runs, 1)
                    .into_iter()
                    .zip(crate::threads::split_runs(y, &runs, 1))
                    .zip(crate::threads::split_runs(z, &runs, 1))
                    .zip(crate::threads::split_runs(v, &runs, 1))
                    .zip(runs.iter().cloned())
                    .collect();
                let sums = crate::threads::map_all(pieces, |((((x, y), z), v), run)| {
                    // SAFETY: the CPU has AVX2 (checked above).
                    unsafe { floor_sweeps(&a[run], [x, y, z, v], black_box(0.0)) }
                });
                black_box(sums);
            });
            println!(
                "N = {jobs}, T = 20, {threads} thread(s): one iteration's least traffic \
                 (3 sweeps x 5 arrays read, 4 written) {:6.2} ns per entry",
                t * 1e9 / entries as f64
            );
        }
    }
}

/// Floating-point additions, subtractions, multiplications and comparisons per entry of one
/// one-type iteration, counted by hand from the passes (`passes.rs`, `row_inverse.rs`):
/// prepare about 100 (the step's update 19, the reciprocals and `kappa` 20, the diagonal and
/// the right-hand sides 12, the two Sherman-Morrison applications 23, the sums over jobs 8, the
/// rank-one update of the price system 20), the predictor about 64, the corrector about 50, the
/// complementarity about 5.
const ITERATION_OPS: usize = 220;
/// Divisions per entry of one iteration: `1 / x`, `1 / y`, `1 / sigma` (prepare), `1 / z`,
/// `1 / v` (the corrector's dual step limits).
const ITERATION_DIVISIONS: usize = 5;

/// [`ITERATION_OPS`] (rounded down to sixteens) and [`ITERATION_DIVISIONS`] per value of `x`,
/// four values at a time in eight independent chains of multiply-adds (no fused multiply-add,
/// as the solver), compiled with AVX2 as the solver's passes: the least time the operations of
/// one iteration take on this core, whatever their order, without reading or writing anything
/// but `x` and `out`.
#[allow(unsafe_code)]
#[target_feature(enable = "avx2")]
unsafe fn arithmetic_sweep(x: &[f64], out: &mut [f64]) {
    for (x, out) in x.chunks_exact(4).zip(out.chunks_exact_mut(4)) {
        let mut chains = [[0.0f64; 4]; 8];
        for (k, chain) in chains.iter_mut().enumerate() {
            for l in 0..4 {
                chain[l] = x[l] + k as f64;
            }
        }
        for _ in 0..ITERATION_OPS / 16 {
            for chain in &mut chains {
                for l in 0..4 {
                    chain[l] = chain[l] * 0.999 + 0.001;
                }
            }
        }
        let mut quotients = [0.0f64; 4];
        for k in 0..ITERATION_DIVISIONS {
            for l in 0..4 {
                quotients[l] += 1.0 / (x[l] + (k + 1) as f64);
            }
        }
        for l in 0..4 {
            out[l] = chains.iter().map(|chain| chain[l]).sum::<f64>() + quotients[l];
        }
    }
}

#[test]
#[ignore = "a measurement: run with --release --ignored --nocapture"]
#[allow(unsafe_code)]
fn arithmetic_floor() {
    if !std::arch::is_x86_feature_detected!("avx2") {
        return;
    }
    for jobs in [500, 1_000] {
        let entries = jobs * 20;
        let x: Vec<f64> = (0..entries).map(|e| 1.0 + (e % 7) as f64).collect();
        let mut out = vec![0.0; entries];
        let t = median(101, || {
            // SAFETY: the CPU has AVX2 (checked above).
            unsafe { arithmetic_sweep(black_box(&x), &mut out) };
            black_box(&out);
        });
        println!(
            "N = {jobs}, T = 20, 1 thread: one iteration's arithmetic ({} operations and {} \
             divisions per entry, in cache) {:6.2} ns per entry",
            ITERATION_OPS / 16 * 16,
            ITERATION_DIVISIONS,
            t * 1e9 / entries as f64
        );
    }
}
