//! The threads of the crate's parallel parts: the thread-count convention (a requested count of
//! 0 means one thread per available core, and work too small to pay for a thread runs on fewer)
//! and one pool of worker threads, started once and reused by every parallel pass.
//!
//! The work is always split the same way for a given thread count, whatever the pool's size:
//! which thread runs an item never changes what the item computes.

use std::ops::Range;
use std::sync::OnceLock;

/// Threads to use for `items` units of work when `requested` were asked for (0: one per
/// available core), with at least `per_thread` units per thread (and at least one thread).
pub(crate) fn thread_count(requested: usize, items: usize, per_thread: usize) -> usize {
    let available = if requested == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        requested
    };
    available.min(items / per_thread.max(1)).max(1)
}

/// `threads` runs of consecutive items of `0..items` of (nearly) equal length, in order (fewer
/// when there are fewer items; one empty run when there are none).
pub(crate) fn runs(items: usize, threads: usize) -> Vec<Range<usize>> {
    let threads = threads.clamp(1, items.max(1));
    let mut runs = Vec::with_capacity(threads);
    let mut start = 0;
    for left in (1..=threads).rev() {
        let take = (items - start).div_ceil(left);
        runs.push(start..start + take);
        start += take;
    }
    runs
}

/// Split `values` (`per_item` values per item) into the pieces of the runs `runs` (consecutive,
/// from 0); a piece past the end of `values` is cut short (empty).
pub(crate) fn split_runs<'a, T>(
    values: &'a mut [T],
    runs: &[Range<usize>],
    per_item: usize,
) -> Vec<&'a mut [T]> {
    let mut pieces = Vec::with_capacity(runs.len());
    let mut rest = values;
    for run in runs {
        let at = (run.len() * per_item).min(rest.len());
        let (piece, tail) = std::mem::take(&mut rest).split_at_mut(at);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// The worker pool (one thread per available core, or `RAYON_NUM_THREADS`), started on first
/// use; `None` where threads cannot be started, and then every item runs on the caller.
fn pool() -> Option<&'static rayon_core::ThreadPool> {
    static POOL: OnceLock<Option<rayon_core::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon_core::ThreadPoolBuilder::new()
            .thread_name(|index| format!("shockwave-{index}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Run `work` on every item: the first on the calling thread, the others on the pool's
/// threads; returns when all are done. Starting a pass costs a wake-up of threads already
/// running, not a thread's start.
pub(crate) fn run_all<T: Send>(items: Vec<T>, work: impl Fn(T) + Sync) {
    let mut items = items.into_iter();
    let Some(first) = items.next() else {
        return;
    };
    match pool() {
        Some(pool) if items.len() > 0 => pool.in_place_scope(|scope| {
            let work = &work;
            for item in items {
                scope.spawn(move |_| work(item));
            }
            work(first);
        }),
        _ => {
            work(first);
            items.for_each(work);
        }
    }
}

/// [`run_all`] returning each item's result, in the items' order.
pub(crate) fn map_all<T: Send, R: Send>(items: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    let mut results: Vec<Option<R>> = items.iter().map(|_| None).collect();
    let tasks: Vec<(T, &mut Option<R>)> = items.into_iter().zip(results.iter_mut()).collect();
    run_all(tasks, |(item, slot)| *slot = Some(work(item)));
    results.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_cover_the_items_in_order() {
        for items in [0, 1, 2, 7, 1000] {
            for threads in [1, 2, 3, 7] {
                let runs = runs(items, threads);
                assert_eq!(runs.len(), threads.min(items.max(1)));
                assert_eq!(runs[0].start, 0);
                assert_eq!(runs[runs.len() - 1].end, items);
                for pair in runs.windows(2) {
                    assert_eq!(pair[0].end, pair[1].start);
                    assert!(pair[0].len() >= pair[1].len() && pair[0].len() <= pair[1].len() + 1);
                }
            }
        }
    }

    #[test]
    fn every_item_runs_once_and_results_keep_their_order() {
        for items in [0, 1, 2, 7, 64] {
            let out = map_all((0..items).collect(), |i: usize| i * i);
            assert_eq!(out, (0..items).map(|i| i * i).collect::<Vec<_>>());
        }
    }
}
