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

/// Limits glibc malloc to one arena. The watch reader allocates objects on one thread and the
/// cache frees replaced ones on another; with per-thread arenas that pattern grows the heap by
/// ~50% over a long update stream. Both benchmark binaries call this, so the comparison is fair.
pub fn single_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tuning; called before other threads start.
    unsafe {
        let n = std::env::var("INFORMER_MALLOC_ARENAS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
        if n > 0 {
            libc::mallopt(libc::M_ARENA_MAX, n);
        }
    }
}
