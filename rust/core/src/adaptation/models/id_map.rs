//! The map from job id to slot of [`super::JobModels`].

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Hasher for job ids: one multiplication (ids are not adversarial; lookups are the hot path
/// of [`JobModels::observe`]).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_i64(&mut self, n: i64) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(super) type IdMap = HashMap<i64, usize, BuildHasherDefault<IdHasher>>;
