//! The thread-count convention shared by the parallel parts of the crate: a requested count of 0
//! means one thread per available core, and work too small to pay for a thread runs on fewer.

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
