//! Checks of sizes that drive allocations, made before allocating.
//!
//! A Rust allocation that fails aborts the process (the Python interpreter with it), and one the
//! operating system grants beyond the memory it can back is killed later. So every buffer whose
//! size an input chooses (the market's `jobs x rounds` entries and its `T x T` price system, the
//! adaptation model's `jobs x rounds` valuations) is sized first, and refused with an error naming
//! the argument when it cannot fit: when its byte count overflows, or exceeds the memory the
//! machine reports available (`MemAvailable` of `/proc/meminfo` on Linux; where that cannot be
//! read, only the overflow check applies).

use std::fs;

/// Longest window of rounds any entry point accepts (`2^32`): beyond it an array of zero jobs
/// and that many rounds would already have strides past what a 64-bit count holds.
pub const MAX_ROUNDS: usize = 1 << 32;

/// Memory the machine can give without swapping, bytes (`None` where it cannot be read).
pub fn available_memory() -> Option<u64> {
    let text = fs::read_to_string("/proc/meminfo").ok()?;
    let line = text
        .lines()
        .find(|line| line.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Bytes of `count` values of `width` bytes each, or a message when the product overflows.
pub fn bytes_of(count: usize, width: usize) -> Option<u64> {
    u64::try_from(count)
        .ok()
        .and_then(|count| count.checked_mul(width as u64))
}

/// Why a size was refused: a message for the argument that chose it.
pub fn check_memory(bytes: Option<u64>, what: &str) -> Result<(), String> {
    let Some(bytes) = bytes else {
        return Err(format!(
            "{what} would need more bytes than a 64-bit count holds"
        ));
    };
    // A Rust allocation may not exceed isize::MAX bytes.
    if bytes > isize::MAX as u64 {
        return Err(format!(
            "{what} would need {bytes} bytes, beyond any allocation"
        ));
    }
    if let Some(available) = available_memory() {
        if bytes > available {
            return Err(format!(
                "{what} would need {:.3} GB, more than the {:.3} GB of memory available",
                bytes as f64 / 1e9,
                available as f64 / 1e9
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflowing_and_huge_sizes_are_refused() {
        assert!(check_memory(None, "x").is_err());
        assert!(check_memory(bytes_of(usize::MAX, 8), "x").is_err());
        assert!(check_memory(Some(u64::MAX / 2), "x").is_err());
        assert!(check_memory(Some(1024), "x").is_ok());
    }
}
