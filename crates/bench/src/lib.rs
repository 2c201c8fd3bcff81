//! Shared helpers of the side-by-side benchmarks: /proc/self/status readings and the JSON line
//! format both clients print.

/// Reads a field (kB) of /proc/self/status, e.g. `VmRSS:` or `VmHWM:`.
pub fn proc_status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
