//! Working arrays reused from one solve to the next.
//!
//! A market solve holds a few tens of arrays of one value per entry (job x good); a simulation
//! solves a market every round. Freed, such arrays go back to the operating system (the C
//! allocator maps and unmaps large blocks), and the next solve's arrays arrive as fresh pages,
//! each faulted in and zeroed by the kernel on first touch: measured at a quarter of the time of
//! a 19,000-job solve of the 100,000-job run (`benches/README.md`, issue 24). A [`Buffer`] is
//! a `Vec<f64>` that, when dropped, returns its memory to a pool instead, from which the next
//! request of the process takes the smallest block that fits (zeroed by a `memset`).
//!
//! The pool keeps at most [`POOL_BYTES`] in at most [`POOL_BUFFERS`] blocks (the smallest leave
//! first), and only blocks of at least [`MIN_BYTES`] (smaller ones are cheap to allocate). A
//! buffer's contents never depend on the block it got: same inputs, same bits.

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard};

/// Blocks smaller than this (bytes) are not pooled.
const MIN_BYTES: usize = 64 << 10;
/// Most bytes the pool holds between solves.
const POOL_BYTES: usize = 512 << 20;
/// Most blocks the pool holds.
const POOL_BUFFERS: usize = 64;

/// Freed blocks (capacity counted), kept for the next requests.
struct Pool {
    blocks: Vec<Vec<f64>>,
    bytes: usize,
}

impl Pool {
    /// A block of at least `capacity` values, empty: the smallest that fits, else the largest
    /// (which then grows); `None` if the pool is empty.
    fn take(&mut self, capacity: usize) -> Option<Vec<f64>> {
        let fitting = (0..self.blocks.len())
            .filter(|&i| self.blocks[i].capacity() >= capacity)
            .min_by_key(|&i| self.blocks[i].capacity());
        let index = fitting
            .or_else(|| (0..self.blocks.len()).max_by_key(|&i| self.blocks[i].capacity()))?;
        let mut block = self.blocks.swap_remove(index);
        self.bytes -= bytes(&block);
        block.clear();
        Some(block)
    }

    /// Keep `block`, then drop the smallest blocks while over `max_bytes` or `max_blocks`.
    fn keep(&mut self, block: Vec<f64>, max_bytes: usize, max_blocks: usize) {
        self.bytes += bytes(&block);
        self.blocks.push(block);
        while self.bytes > max_bytes || self.blocks.len() > max_blocks {
            let smallest = (0..self.blocks.len()).min_by_key(|&i| self.blocks[i].capacity());
            let Some(index) = smallest else { break };
            let freed = self.blocks.swap_remove(index);
            self.bytes -= bytes(&freed);
        }
    }
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    blocks: Vec::new(),
    bytes: 0,
});

/// The pool, also after a panic elsewhere while it was held (it holds only free memory).
fn pool() -> MutexGuard<'static, Pool> {
    POOL.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn bytes(block: &Vec<f64>) -> usize {
    block.capacity() * std::mem::size_of::<f64>()
}

/// A pooled block of room for at least `capacity` values, empty; `None` for a small request or
/// an empty pool.
fn take(capacity: usize) -> Option<Vec<f64>> {
    if capacity.saturating_mul(std::mem::size_of::<f64>()) < MIN_BYTES {
        return None;
    }
    pool().take(capacity)
}

/// Keep `block` for a later request (within the pool's limits), unless it is small.
fn give(block: Vec<f64>) {
    if bytes(&block) >= MIN_BYTES {
        pool().keep(block, POOL_BYTES, POOL_BUFFERS);
    }
}

/// A `Vec<f64>` whose memory returns to the pool when dropped (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Buffer(Vec<f64>);

impl Buffer {
    /// `len` zeros.
    pub(crate) fn zeroed(len: usize) -> Self {
        match take(len) {
            Some(mut block) => {
                block.resize(len, 0.0);
                Self(block)
            }
            None => Self(vec![0.0; len]),
        }
    }

    /// Empty, with room for `capacity` values.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        match take(capacity) {
            Some(mut block) => {
                block.reserve(capacity);
                Self(block)
            }
            None => Self(Vec::with_capacity(capacity)),
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        give(std::mem::take(&mut self.0));
    }
}

impl Clone for Buffer {
    fn clone(&self) -> Self {
        let mut copy = Self::with_capacity(self.len());
        copy.extend_from_slice(self);
        copy
    }
}

impl Deref for Buffer {
    type Target = Vec<f64>;
    fn deref(&self) -> &Vec<f64> {
        &self.0
    }
}

impl DerefMut for Buffer {
    fn deref_mut(&mut self) -> &mut Vec<f64> {
        &mut self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_zeroed_whatever_block_they_reuse() {
        let len = 3 * MIN_BYTES / 8;
        {
            let mut first = Buffer::zeroed(len);
            first.fill(7.0);
            let mut grown = Buffer::with_capacity(len / 2);
            grown.extend(std::iter::repeat(5.0).take(len / 2));
        }
        for len in [len, len / 2, 2 * len, 10] {
            let again = Buffer::zeroed(len);
            assert_eq!(again.len(), len);
            assert!(again.iter().all(|&v| v == 0.0));
        }
        let copy = Buffer::zeroed(len).clone();
        assert_eq!(copy.len(), len);
    }

    #[test]
    fn the_pool_keeps_the_largest_blocks_within_its_limits_and_takes_the_best_fit() {
        let mut pool = Pool {
            blocks: Vec::new(),
            bytes: 0,
        };
        for capacity in [100, 400, 200, 300] {
            pool.keep(Vec::with_capacity(capacity), 8 * 800, 3);
        }
        // 1,000 values in four blocks, over 800 and over 3 blocks: the 100 and the 200 dropped
        let mut kept: Vec<usize> = pool.blocks.iter().map(Vec::capacity).collect();
        kept.sort_unstable();
        assert_eq!(kept, [300, 400]);
        assert_eq!(pool.bytes, 8 * 700);
        assert_eq!(pool.take(250).map(|b| b.capacity()), Some(300));
        // none fits: the largest, to grow
        assert_eq!(pool.take(1000).map(|b| b.capacity()), Some(400));
        assert!(pool.take(1).is_none());
        assert_eq!(pool.bytes, 0);
    }
}
