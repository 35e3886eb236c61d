//! A small, versioned, little-endian byte encoding for persisting the adaptation state.
//!
//! Values are written in a fixed order with fixed widths (`u8` flags, `u64` counts and integers,
//! `f64` by their bits, so every float comes back bit for bit). The reader checks every length
//! against the bytes left before allocating, so a truncated or corrupted buffer is an error,
//! never a huge allocation or a panic.

use super::error::AdaptationError;

/// Appends values to a buffer.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    pub bytes: Vec<u8>,
}

impl Writer {
    pub fn u8(&mut self, value: u8) {
        self.bytes.push(value);
    }

    pub fn bool(&mut self, value: bool) {
        self.u8(u8::from(value));
    }

    pub fn u64(&mut self, value: u64) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    pub fn usize(&mut self, value: usize) {
        self.u64(value as u64);
    }

    pub fn i64(&mut self, value: i64) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    pub fn f64(&mut self, value: f64) {
        self.u64(value.to_bits());
    }
}

/// Reads values back, refusing anything malformed with an error naming `field`.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    field: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8], field: &'static str) -> Self {
        Self { bytes, field }
    }

    pub fn error(&self, reason: impl Into<String>) -> AdaptationError {
        AdaptationError::new(self.field, reason)
    }

    fn take(&mut self, count: usize) -> Result<&'a [u8], AdaptationError> {
        if self.bytes.len() < count {
            return Err(self.error("truncated: the data ends early"));
        }
        let (head, rest) = self.bytes.split_at(count);
        self.bytes = rest;
        Ok(head)
    }

    pub fn tag(&mut self, expected: &[u8]) -> Result<(), AdaptationError> {
        if self.take(expected.len())? == expected {
            Ok(())
        } else {
            Err(self.error("not a shockwave adaptation state (wrong magic bytes)"))
        }
    }

    pub fn u8(&mut self) -> Result<u8, AdaptationError> {
        Ok(self.take(1)?[0])
    }

    pub fn bool(&mut self) -> Result<bool, AdaptationError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(self.error(format!("corrupted: flag byte {other}"))),
        }
    }

    pub fn u64(&mut self) -> Result<u64, AdaptationError> {
        let mut raw = [0_u8; 8];
        raw.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(raw))
    }

    pub fn i64(&mut self) -> Result<i64, AdaptationError> {
        let mut raw = [0_u8; 8];
        raw.copy_from_slice(self.take(8)?);
        Ok(i64::from_le_bytes(raw))
    }

    pub fn f64(&mut self) -> Result<f64, AdaptationError> {
        Ok(f64::from_bits(self.u64()?))
    }

    /// A finite float (`>= 0` when `nonnegative`).
    pub fn finite(&mut self, nonnegative: bool) -> Result<f64, AdaptationError> {
        let value = self.f64()?;
        if !value.is_finite() || (nonnegative && value < 0.0) {
            return Err(self.error(format!("corrupted: value {value}")));
        }
        Ok(value)
    }

    /// An epoch duration: finite and at least the model's shortest
    /// ([`super::profile::epoch_seconds_problem`]).
    pub fn duration(&mut self) -> Result<f64, AdaptationError> {
        let value = self.f64()?;
        match super::profile::epoch_seconds_problem(value) {
            None => Ok(value),
            Some(problem) => Err(self.error(format!("corrupted: an epoch {problem}"))),
        }
    }

    /// An index or count below `limit`.
    pub fn below(&mut self, limit: u64) -> Result<usize, AdaptationError> {
        let value = self.u64()?;
        if value >= limit {
            return Err(self.error(format!("corrupted: {value} is not below {limit}")));
        }
        usize::try_from(value).map_err(|_| self.error("corrupted: count too large"))
    }

    /// A count of items of at least `item_bytes` bytes each that the data left can hold.
    pub fn count(&mut self, item_bytes: usize) -> Result<usize, AdaptationError> {
        let value = self.u64()?;
        let fits = value
            .checked_mul(item_bytes.max(1) as u64)
            .is_some_and(|bytes| bytes <= self.bytes.len() as u64);
        if !fits {
            return Err(self.error(format!(
                "corrupted: {value} items do not fit in the data left"
            )));
        }
        usize::try_from(value).map_err(|_| self.error("corrupted: count too large"))
    }

    pub fn finish(&self) -> Result<(), AdaptationError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(self.error(format!("corrupted: {} bytes left over", self.bytes.len())))
        }
    }
}
