//! Checks of sizes that drive allocations, made before allocating, and the fallible allocation
//! of the buffers whose size an input chooses.
//!
//! A Rust allocation that fails aborts the process (the Python interpreter with it), and one the
//! operating system grants beyond the memory it can back is killed later. So every buffer whose
//! size an input chooses (the market's `jobs x rounds` entries and its `T x T` price system, the
//! adaptation model's `jobs x rounds` valuations) is sized first, and refused with an error naming
//! the argument when it cannot fit: when its byte count overflows, or exceeds the memory this
//! process can still get ([`available_memory`]: the least of the machine's `MemAvailable`, the
//! room left under the address-space limit `RLIMIT_AS`, and the room left under the cgroup's
//! memory limit; where none can be read, only the overflow check applies). The largest of those
//! buffers are then allocated fallibly ([`try_filled`]): an allocation that fails all the same
//! is an error naming the argument ([`InputError::out_of_memory`], `MemoryError` in Python), not
//! an abort.

use std::fs;

use crate::error::InputError;

/// Longest window of rounds any entry point accepts (`2^32`): beyond it an array of zero jobs
/// and that many rounds would already have strides past what a 64-bit count holds.
pub const MAX_ROUNDS: usize = 1 << 32;

/// What bounds the memory this process can still allocate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryBound {
    /// `MemAvailable` of `/proc/meminfo`: what the machine can give without swapping.
    Machine,
    /// The address-space limit (`RLIMIT_AS`, `ulimit -v`) less the address space in use.
    AddressSpace,
    /// The cgroup's memory limit less its usage (cgroup v2 `memory.max`, v1
    /// `memory.limit_in_bytes`).
    Cgroup,
}

impl MemoryBound {
    fn describe(self) -> &'static str {
        match self {
            Self::Machine => "of memory available",
            Self::AddressSpace => {
                "of memory available under the address-space limit (RLIMIT_AS, ulimit -v)"
            }
            Self::Cgroup => "of memory available under the cgroup's memory limit",
        }
    }
}

/// A `/proc` or `/sys` file as text (`None` where it cannot be read).
fn read(path: &str) -> Option<String> {
    fs::read_to_string(path).ok()
}

/// The number after `key` on the line of `text` that starts with it, times `unit`.
fn field(text: &str, key: &str, unit: u64) -> Option<u64> {
    let line = text.lines().find(|line| line.starts_with(key))?;
    let value: u64 = line
        .get(key.len()..)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    value.checked_mul(unit)
}

/// `MemAvailable` of `/proc/meminfo`, bytes.
fn machine_available() -> Option<u64> {
    field(&read("/proc/meminfo")?, "MemAvailable:", 1024)
}

/// The soft address-space limit of `/proc/self/limits` ("Max address space", bytes; `None`
/// when unlimited or unreadable).
pub fn address_space_limit() -> Option<u64> {
    let text = read("/proc/self/limits")?;
    let line = text
        .lines()
        .find(|line| line.starts_with("Max address space"))?;
    // "Max address space   <soft>   <hard>   bytes": "unlimited" does not parse.
    line.get("Max address space".len()..)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Room left under the address-space limit: the limit less `VmSize` of `/proc/self/status`.
fn address_space_available() -> Option<u64> {
    let limit = address_space_limit()?;
    let used = read("/proc/self/status")
        .and_then(|status| field(&status, "VmSize:", 1024))
        .unwrap_or(0);
    Some(limit.saturating_sub(used))
}

/// A cgroup limit file's value (`None` for "max" or an unreadable file).
fn cgroup_value(path: &str) -> Option<u64> {
    read(path)?.trim().parse().ok()
}

/// Room left under the cgroup's memory limit: the limit less the usage, not counting the
/// inactive page cache the kernel reclaims before it fails an allocation. Cgroup v2 first (the
/// process's own cgroup from `/proc/self/cgroup`, then the root of the mount, which is the
/// process's cgroup in a container), then v1.
fn cgroup_available() -> Option<u64> {
    let mut directories = Vec::new();
    if let Some(own) = read("/proc/self/cgroup").and_then(|text| {
        text.lines()
            .find_map(|line| line.strip_prefix("0::").map(str::to_string))
    }) {
        if own != "/" {
            directories.push(format!("/sys/fs/cgroup{}", own.trim_end()));
        }
    }
    directories.push("/sys/fs/cgroup".to_string());
    for directory in &directories {
        if let Some(limit) = cgroup_value(&format!("{directory}/memory.max")) {
            let used = cgroup_value(&format!("{directory}/memory.current")).unwrap_or(0);
            let reclaimable = read(&format!("{directory}/memory.stat"))
                .and_then(|stat| field(&stat, "inactive_file ", 1))
                .unwrap_or(0);
            return Some(limit.saturating_sub(used.saturating_sub(reclaimable)));
        }
    }
    let v1 = "/sys/fs/cgroup/memory";
    let limit = cgroup_value(&format!("{v1}/memory.limit_in_bytes"))?;
    let used = cgroup_value(&format!("{v1}/memory.usage_in_bytes")).unwrap_or(0);
    let reclaimable = read(&format!("{v1}/memory.stat"))
        .and_then(|stat| field(&stat, "total_inactive_file ", 1))
        .unwrap_or(0);
    Some(limit.saturating_sub(used.saturating_sub(reclaimable)))
}

/// Memory this process can still allocate, bytes, and what bounds it: the least of
/// [`MemoryBound`]'s three (`None` where none can be read).
pub fn memory_budget() -> Option<(u64, MemoryBound)> {
    [
        machine_available().map(|bytes| (bytes, MemoryBound::Machine)),
        address_space_available().map(|bytes| (bytes, MemoryBound::AddressSpace)),
        cgroup_available().map(|bytes| (bytes, MemoryBound::Cgroup)),
    ]
    .into_iter()
    .flatten()
    .min_by_key(|&(bytes, _)| bytes)
}

/// Memory this process can still allocate, bytes ([`memory_budget`]).
pub fn available_memory() -> Option<u64> {
    memory_budget().map(|(bytes, _)| bytes)
}

/// Bytes of `count` values of `width` bytes each, or a message when the product overflows.
pub fn bytes_of(count: usize, width: usize) -> Option<u64> {
    u64::try_from(count)
        .ok()
        .and_then(|count| count.checked_mul(width as u64))
}

/// Why a size was refused: a message for the argument that chose it.
pub fn check_memory(bytes: Option<u64>, what: &str) -> Result<(), String> {
    check_memory_within(bytes, what, memory_budget())
}

/// [`check_memory`] against a given budget.
fn check_memory_within(
    bytes: Option<u64>,
    what: &str,
    budget: Option<(u64, MemoryBound)>,
) -> Result<(), String> {
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
    if let Some((available, bound)) = budget {
        if bytes > available {
            return Err(format!(
                "{what} would need {:.3} GB, more than the {:.3} GB {}",
                bytes as f64 / 1e9,
                available as f64 / 1e9,
                bound.describe()
            ));
        }
    }
    Ok(())
}

/// `len` copies of `value`, allocated fallibly: an allocation that fails is an error naming
/// `argument` ([`InputError::out_of_memory`]; Python's `MemoryError`), not an abort.
pub fn try_filled<T: Clone, Family>(
    len: usize,
    value: T,
    argument: &str,
    what: &str,
) -> Result<Vec<T>, InputError<Family>> {
    let mut buffer = Vec::new();
    buffer.try_reserve_exact(len).map_err(|_| {
        let bytes = (len as f64) * std::mem::size_of::<T>() as f64;
        InputError::out_of_memory(
            argument,
            format!("could not allocate {:.3} GB for {what}", bytes / 1e9),
        )
    })?;
    buffer.resize(len, value);
    Ok(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::family;

    #[test]
    fn overflowing_and_huge_sizes_are_refused() {
        assert!(check_memory(None, "x").is_err());
        assert!(check_memory(bytes_of(usize::MAX, 8), "x").is_err());
        assert!(check_memory(Some(u64::MAX / 2), "x").is_err());
        assert!(check_memory(Some(1024), "x").is_ok());
    }

    #[test]
    fn the_least_bound_is_named() {
        let budget = Some((1_000_000_000, MemoryBound::AddressSpace));
        let refused = check_memory_within(Some(2_000_000_000), "x", budget);
        assert!(refused.is_err_and(|m| m.contains("RLIMIT_AS") && m.contains("1.000 GB")));
        let cgroup = Some((10, MemoryBound::Cgroup));
        assert!(check_memory_within(Some(11), "x", cgroup).is_err_and(|m| m.contains("cgroup")));
        assert!(check_memory_within(Some(10), "x", cgroup).is_ok());
        if let Some((bytes, _)) = memory_budget() {
            assert!(bytes > 0);
        }
    }

    #[test]
    fn limit_files_are_parsed() {
        assert_eq!(
            field("MemAvailable:   24 kB\n", "MemAvailable:", 1024),
            Some(24 * 1024)
        );
        assert_eq!(
            field("a 1\ninactive_file 7\n", "inactive_file ", 1),
            Some(7)
        );
        assert_eq!(field("VmSize:\n", "VmSize:", 1024), None);
    }

    #[test]
    fn failed_allocations_are_errors_not_aborts() {
        // Past isize::MAX bytes: the allocator is not even asked.
        let huge = try_filled::<f64, family::Adaptation>(usize::MAX / 4, 0.0, "num_rounds", "x");
        assert!(huge.is_err_and(|e| e.is_out_of_memory() && e.argument == "num_rounds"));
        let small = try_filled::<f64, family::Market>(3, 1.5, "valuations", "x");
        assert_eq!(small.ok(), Some(vec![1.5; 3]));
    }
}
