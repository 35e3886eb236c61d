//! The split of the passes over threads, deterministically (with one GPU type: `passes.rs`;
//! with several: `typed.rs`).
//!
//! A pass visits the jobs in chunks of consecutive jobs. Each chunk is handled in two phases:
//! 1. *per job* (split into runs of consecutive jobs, one per thread): everything that reads and
//!    writes only the job's own rows and scalars, leaving each job's contributions to the sums
//!    over jobs in the chunk's output rows ([`Outputs`]);
//! 2. *over jobs* (split by rounds, one run of rounds per thread): the sums over jobs, each
//!    element accumulated job after job in the jobs' order, and the sums of per-job scalars, in
//!    the jobs' order on one thread.
//!
//! Every floating-point operation is the one the fused single-threaded loop performed, in the
//! same order: the results are the same bits for any number of threads and any chunk length.
//! With one thread the chunks are short (their output rows stay in the first-level cache); with
//! several, long (each phase wakes the pool's threads once per chunk).

use std::ops::Range;

use super::state::{Buyers, Entries, Typed};

/// Jobs per thread below which a solve does not spread its passes (measured: see
/// `benches/README.md`, issue 24).
pub(crate) const JOBS_PER_THREAD: usize = 128;
/// Jobs per chunk with one thread (output rows of `3 x 32 x T` values with one type: 15 KiB at
/// `T = 20`; with three types 75 KiB, and fewer jobs per chunk were measured slower).
const SERIAL_CHUNK: usize = 32;
/// Jobs per thread in a chunk with several threads (output rows of 480 KiB at `T = 20` with two
/// threads and one type, within the second-level caches).
const PARALLEL_CHUNK: usize = 1024;
/// Per-job scalars a pass leaves for the sums over jobs.
pub(super) const SCALARS: usize = 8;

/// Where a pass leaves each job's contributions to the sums over jobs, for the jobs of one
/// chunk: two values per entry (`o1`, `o2`), its contributions to the price system's
/// within-round blocks (`o3`, [`Widths::blocks`] per job) and [`SCALARS`] per job.
#[derive(Default)]
pub(super) struct Outputs<V = Vec<f64>> {
    pub(super) o1: V,
    pub(super) o2: V,
    pub(super) o3: V,
    pub(super) scalars: V,
}

/// How the passes are split: the threads and the chunk length, and whether the CPU has
/// AVX2 and the solve uses it.
pub(super) struct Split {
    pub(super) threads: usize,
    pub(super) chunk: usize,
    pub(super) avx2: bool,
}

impl Split {
    /// `threads` resolved threads (at least 1) for a market of `jobs` jobs.
    pub(super) fn new(threads: usize, jobs: usize) -> Self {
        let threads = threads.max(1);
        let chunk = if threads == 1 {
            SERIAL_CHUNK
        } else {
            threads * PARALLEL_CHUNK
        };
        Self {
            threads,
            chunk: chunk.min(jobs.max(1)),
            avx2: false,
        }
    }

    /// The chunks of `jobs` jobs, in order (each a multiple of four jobs long but the last).
    pub(super) fn chunks(&self, jobs: usize) -> impl Iterator<Item = Range<usize>> {
        let chunk = self.chunk.next_multiple_of(4);
        (0..jobs)
            .step_by(chunk)
            .map(move |first| first..(first + chunk).min(jobs))
    }
}

/// Chunk output rows for `split`, of the lengths `widths`.
pub(super) fn outputs(split: &Split, widths: Widths) -> Outputs {
    let chunk = split.chunk.next_multiple_of(4);
    let e = || vec![0.0; chunk * widths.entry];
    Outputs {
        o1: e(),
        o2: e(),
        o3: vec![0.0; chunk * widths.blocks],
        scalars: vec![0.0; chunk * SCALARS],
    }
}

/// Split a slice at `at`, or at its end if shorter (the unused arrays are empty).
fn cut<T>(values: &mut [T], at: usize) -> (&mut [T], &mut [T]) {
    values.split_at_mut(at.min(values.len()))
}

/// Split every field of a struct of slices at the same point.
macro_rules! split_fields {
    ($value:expr, $at:expr, $ty:ident { $($field:ident),* }) => {{
        let value = $value;
        let at = $at;
        $(let $field = cut(value.$field, at);)*
        ($ty { $($field: $field.0),* }, $ty { $($field: $field.1),* })
    }};
}

/// Borrow every field of a struct of vectors as a slice.
macro_rules! slice_fields {
    ($value:expr, $ty:ident { $($field:ident),* }) => {
        $ty { $($field: &mut $value.$field[..]),* }
    };
}

pub(super) type EntryRows<'a> = Entries<&'a mut [f64]>;
pub(super) type BuyerRows<'a> = Buyers<&'a mut [f64], &'a mut [usize]>;

/// A job's rows of the per-job arrays of the method with GPU types (empty with one type).
pub(super) struct TypedRows<'a> {
    pub(super) hata: &'a mut [f64],
    pub(super) r: &'a mut [f64],
    pub(super) n: &'a mut [f64],
    pub(super) q: &'a mut [f64],
}

/// The lengths of a job's rows: per entry (its goods, `T K`), per slot (its rounds, `T`), of its
/// contributions to the price system's within-round blocks (chunk output `o3`: `T K^2`; with
/// one type the diagonal, `T`; with GPU types also the length of its rounds' `K x K` inverses).
#[derive(Clone, Copy)]
pub(super) struct Widths {
    pub(super) entry: usize,
    pub(super) slot: usize,
    pub(super) blocks: usize,
}

impl Widths {
    /// The rows of a market of `rounds` rounds and `types` GPU types.
    pub(super) fn new(rounds: usize, types: usize) -> Self {
        Self {
            entry: rounds * types,
            slot: rounds,
            blocks: rounds * types * types,
        }
    }

    /// [`Self::new`] for `K` types known when compiled.
    #[inline(always)]
    pub(super) fn of<const K: usize>(rounds: usize) -> Self {
        Self::new(rounds, K)
    }
}

/// A run of consecutive jobs, `first..first + jobs`: their rows of the per-entry and per-slot
/// state (and, with GPU types, of the per-job inverses), their per-buyer state and their chunk
/// output rows, indexed from 0.
pub(super) struct Part<'a> {
    pub(super) first: usize,
    pub(super) jobs: usize,
    pub(super) e: EntryRows<'a>,
    pub(super) b: BuyerRows<'a>,
    pub(super) k: TypedRows<'a>,
    pub(super) out: Outputs<&'a mut [f64]>,
}

impl<'a> Part<'a> {
    /// The jobs `range` of the state, with the first rows of the chunk outputs.
    pub(super) fn new(
        (e, b, k): (&'a mut Entries, &'a mut Buyers, &'a mut Typed),
        out: &'a mut Outputs,
        range: Range<usize>,
        widths: Widths,
    ) -> Self {
        let e = slice_fields!(
            e,
            Entries {
                x,
                y,
                z,
                v,
                ix,
                iy,
                isig,
                dx,
                cxi,
                cvi
            }
        );
        let b = slice_fields!(
            b,
            Buyers {
                u,
                r,
                beta,
                br,
                rc,
                gamma,
                kappa,
                coef,
                dominant,
                dominant_loo,
                cr,
                dr,
                dbeta
            }
        );
        let k = slice_fields!(k, TypedRows { hata, r, n, q });
        let out = slice_fields!(
            out,
            Outputs {
                o1,
                o2,
                o3,
                scalars
            }
        );
        let whole = Self {
            first: 0,
            jobs: usize::MAX,
            e,
            b,
            k,
            out,
        };
        let (_, rest) = whole.split_at(range.start, widths, false);
        let (part, _) = rest.split_at(range.len(), widths, true);
        part
    }

    /// The first `jobs` jobs and the rest; `outputs`: whether the chunk outputs are split too
    /// (else they stay with the second part).
    fn split_at(self, jobs: usize, widths: Widths, outputs: bool) -> (Self, Self) {
        let (entries, blocks, scalars) = if outputs {
            (jobs * widths.entry, jobs * widths.blocks, jobs * SCALARS)
        } else {
            (0, 0, 0)
        };
        let (at_entry, at_slot) = (jobs * widths.entry, jobs * widths.slot);
        let e = self.e;
        let (x, z, ix, isig) = (
            cut(e.x, at_entry),
            cut(e.z, at_entry),
            cut(e.ix, at_entry),
            cut(e.isig, at_entry),
        );
        let (dx, cxi) = (cut(e.dx, at_entry), cut(e.cxi, at_entry));
        let (y, v, iy, cvi) = (
            cut(e.y, at_slot),
            cut(e.v, at_slot),
            cut(e.iy, at_slot),
            cut(e.cvi, at_slot),
        );
        let e0 = Entries {
            x: x.0,
            y: y.0,
            z: z.0,
            v: v.0,
            ix: ix.0,
            iy: iy.0,
            isig: isig.0,
            dx: dx.0,
            cxi: cxi.0,
            cvi: cvi.0,
        };
        let e1 = Entries {
            x: x.1,
            y: y.1,
            z: z.1,
            v: v.1,
            ix: ix.1,
            iy: iy.1,
            isig: isig.1,
            dx: dx.1,
            cxi: cxi.1,
            cvi: cvi.1,
        };
        let (b0, b1) = split_fields!(
            self.b,
            jobs,
            Buyers {
                u,
                r,
                beta,
                br,
                rc,
                gamma,
                kappa,
                coef,
                dominant,
                dominant_loo,
                cr,
                dr,
                dbeta
            }
        );
        let k = self.k;
        let (hata, r) = (cut(k.hata, at_entry), cut(k.r, at_entry));
        // (the inverses are empty with one type)
        let (n, q) = (cut(k.n, jobs * widths.blocks), cut(k.q, at_slot));
        let (k0, k1) = (
            TypedRows {
                hata: hata.0,
                r: r.0,
                n: n.0,
                q: q.0,
            },
            TypedRows {
                hata: hata.1,
                r: r.1,
                n: n.1,
                q: q.1,
            },
        );
        let (o1, o2) = {
            let out = self.out;
            let (a, b) = cut(out.o1, entries);
            let (c, d) = cut(out.o2, entries);
            let (f, g) = cut(out.o3, blocks);
            let (h, i) = cut(out.scalars, scalars);
            (
                Outputs {
                    o1: a,
                    o2: c,
                    o3: f,
                    scalars: h,
                },
                Outputs {
                    o1: b,
                    o2: d,
                    o3: g,
                    scalars: i,
                },
            )
        };
        (
            Self {
                first: self.first,
                jobs,
                e: e0,
                b: b0,
                k: k0,
                out: o1,
            },
            Self {
                first: self.first + jobs,
                jobs: self.jobs.saturating_sub(jobs),
                e: e1,
                b: b1,
                k: k1,
                out: o2,
            },
        )
    }

    /// Split into `threads` runs of consecutive jobs of (nearly) equal length
    /// ([`crate::threads::runs`]).
    pub(super) fn divide(self, threads: usize, widths: Widths) -> Vec<Self> {
        let runs = crate::threads::runs(self.jobs, threads);
        let mut parts = Vec::with_capacity(runs.len());
        let mut rest = self;
        for run in runs {
            let (part, tail) = rest.split_at(run.len(), widths, true);
            parts.push(part);
            rest = tail;
        }
        parts
    }
}

/// Run `work` on every item, the first on the calling thread and the others on the crate's
/// worker pool ([`crate::threads::run_all`]); with `avx2`, compiled with AVX2 (see
/// [`with_avx2`]: `work` must be an `#[inline(always)]` closure).
pub(super) fn on_threads<T: Send>(items: Vec<T>, avx2: bool, work: impl Fn(T) + Sync) {
    crate::threads::run_all(items, |item| with_avx2(avx2, &work, item));
}

/// `work(item)`, with `avx2` (set only where the CPU has AVX2) compiled with AVX2 as
/// [`super::InteriorPoint::run`] compiles the method: wider vectors, the same operations in the
/// same order, no fused multiply-add, so the same bits. The passes' closures are
/// `#[inline(always)]`, so that their bodies are compiled into this copy.
#[inline(always)]
fn with_avx2<T, F: Fn(T)>(avx2: bool, work: &F, item: T) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        /// `work` is called through `Fn::call` on the closure itself, whose body (always
        /// inlined) is compiled into this function; called as an `FnOnce` of a reference, it
        /// would go through a shim of the standard library, compiled without AVX2, that the
        /// optimiser need not inline (measured: the passes then ran on 128-bit SSE2).
        ///
        /// # Safety
        /// Only on a CPU that supports AVX2.
        #[allow(unsafe_code)]
        #[target_feature(enable = "avx2")]
        unsafe fn copy<T, F: Fn(T)>(work: &F, item: T) {
            work(item);
        }
        // SAFETY: `avx2` is set only after run-time detection (`InteriorPoint::run`).
        #[allow(unsafe_code)]
        unsafe {
            copy(work, item);
        }
        return;
    }
    let _ = avx2;
    work(item);
}

/// `work` on `values`, or with `private` on private copies of them written back after: threads
/// whose pieces of a row meet inside a cache line would otherwise contend for that line on
/// every job.
#[inline(always)]
pub(super) fn privately<const P: usize>(
    private: bool,
    values: [&mut [f64]; P],
    work: impl FnOnce([&mut [f64]; P]),
) {
    if !private {
        work(values);
        return;
    }
    let mut copies: [Vec<f64>; P] = values.each_ref().map(|v| v.to_vec());
    work(copies.each_mut().map(Vec::as_mut_slice));
    for (value, copy) in values.into_iter().zip(&copies) {
        value.copy_from_slice(copy);
    }
}

/// `threads` runs of consecutive rounds of `0..rounds` (fewer if there are fewer rounds), of
/// about equal work where round `t` costs `rounds - t` (its row of the price system's upper
/// triangle) plus a few sums.
pub(super) fn round_runs(rounds: usize, threads: usize) -> Vec<Range<usize>> {
    let threads = threads.clamp(1, rounds.max(1));
    let cost = |t: usize| rounds - t + 4;
    let total: usize = (0..rounds).map(cost).sum();
    let mut runs = Vec::with_capacity(threads);
    let (mut start, mut done) = (0, 0);
    for t in 0..rounds {
        done += cost(t);
        // runs still to start after the current one, and rounds left for them
        let later = threads - runs.len() - 1;
        let left = rounds - t - 1;
        let boundary = (runs.len() + 1) * total / threads;
        if later > 0 && ((done >= boundary && left >= later) || left == later) {
            runs.push(start..t + 1);
            start = t + 1;
        }
    }
    runs.push(start..rounds);
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_runs_cover_the_rounds_in_order() {
        for rounds in [1, 2, 3, 20, 60] {
            for threads in [1, 2, 3, 7, 64] {
                let runs = round_runs(rounds, threads);
                assert_eq!(runs.len(), threads.min(rounds));
                assert_eq!(runs[0].start, 0);
                assert_eq!(runs[runs.len() - 1].end, rounds);
                for pair in runs.windows(2) {
                    assert_eq!(pair[0].end, pair[1].start);
                    assert!(!pair[0].is_empty());
                }
            }
        }
    }

    #[test]
    fn chunks_are_whole_blocks_of_four() {
        for (threads, jobs) in [(1, 1), (1, 33), (1, 1000), (2, 9000), (7, 10)] {
            let split = Split::new(threads, jobs);
            let chunks: Vec<_> = split.chunks(jobs).collect();
            assert_eq!(chunks[0].start, 0);
            assert_eq!(chunks[chunks.len() - 1].end, jobs);
            for pair in chunks.windows(2) {
                assert_eq!(pair[0].end, pair[1].start);
                assert_eq!(pair[0].start % 4, 0);
                assert_eq!(pair[0].len() % 4, 0);
            }
        }
    }
}
