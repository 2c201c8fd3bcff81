//! Measurements shared by the W1 benchmark clients (`informer bench` and `kube-runtime-bench`), so
//! both measure with the same clock, the same /proc readings and the same allocator setting; and
//! the readings of a server run as a child process (`watchers-bench`): its RSS, peak and CPU time.
//!
//! Invariant: every reading that is unavailable (no /proc, an unknown field) is 0, never an error.

/// Wall-clock microseconds since the Unix epoch: the clock of paced events' `generation`
/// stamps, and the one clients read to compute event-to-handler latency.
pub fn micros_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// Reads a field (kB) of /proc/self/status, e.g. `VmRSS:` or `VmHWM:`; 0 if unavailable.
pub fn proc_status_kb(field: &str) -> u64 {
    status_field_kb("/proc/self/status", field)
}

/// Reads a field (kB) of another process's /proc/<pid>/status (a server run as a child process);
/// 0 if unavailable.
pub fn pid_status_kb(pid: u32, field: &str) -> u64 {
    status_field_kb(&format!("/proc/{pid}/status"), field)
}

/// Resets the peak RSS (`VmHWM`) of process `pid` to its current RSS (writes 5 to
/// `/proc/<pid>/clear_refs`); false if the kernel refused.
pub fn reset_peak_rss(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// The CPU time (user and system) process `pid` has used, in seconds; 0 if unavailable.
pub fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // The fields after the command name (which may hold spaces) start with the state, field 3;
    // utime and stime are fields 14 and 15.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<u64>().ok()).sum();
    ticks as f64 / clock_ticks_per_second()
}

#[allow(unsafe_code)]
fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a system setting.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as f64 } else { 100.0 }
}

/// Raises this process's soft limit of open files to its hard limit (thousands of connections
/// need more than the usual 1,024); returns the soft limit in force afterwards.
#[allow(unsafe_code)]
pub fn raise_fd_limit() -> std::io::Result<libc::rlim_t> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the limits into `lim`, a valid rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: setrlimit reads `lim`, a valid rlimit whose soft limit does not exceed the hard one.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(lim.rlim_cur)
}

fn status_field_kb(path: &str, field: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// The peak RSS (kB): the kernel's high-water mark, or the highest RSS the caller read
/// (`seen`) if that is higher. VmHWM can lag VmRSS: the kernel counts RSS per CPU and folds
/// the counts into the high-water mark only now and then, so an RSS read earlier may exceed
/// the mark read later.
pub fn peak_rss_kb(seen: &[u64]) -> u64 {
    seen.iter().copied().fold(proc_status_kb("VmHWM:"), u64::max)
}

/// The value at percentile `p` (0.0–1.0) of sorted samples; 0 when there are none.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() { 0 } else { sorted[((sorted.len() - 1) as f64 * p) as usize] }
}

/// Sets glibc malloc as both benchmark clients run it (see docs/benchmarks.md):
/// - one arena (`INFORMER_MALLOC_ARENAS=N` sets N, 0 = glibc's default): a watch cache allocates
///   objects on one thread and frees replaced ones on another, which per-thread arenas turn into
///   heap growth over a long update stream;
/// - a fixed mmap threshold of 128 KiB, glibc's initial one (`INFORMER_MALLOC_MMAP_THRESHOLD=N`
///   sets N bytes, 0 = glibc's dynamic threshold): by default, freeing one large buffer (a grown
///   hash table, a connection's read buffer) raises the threshold up to 32 MiB, after which
///   transient buffers of that size come from the heap, between cached objects, and leave holes
///   the heap never returns (W1 under a million updates: RSS at the end 2–6% above the peak at a
///   tenth of them with the dynamic threshold, within 1.5% with the fixed one).
///
/// Operators get the same with glibc's own variables, `MALLOC_ARENA_MAX=1` and
/// `MALLOC_MMAP_THRESHOLD_=131072`. Does nothing outside Linux with glibc.
///
/// # Safety
///
/// Call it first thing in `main`, while no other thread runs: it reads the environment and
/// changes the allocator's settings, neither of which may race with another thread.
#[allow(unsafe_code)]
pub unsafe fn configure_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let setting =
            |name: &str, default: i32| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
        let arenas = setting("INFORMER_MALLOC_ARENAS", 1);
        let threshold = setting("INFORMER_MALLOC_MMAP_THRESHOLD", 128 << 10);
        // SAFETY: no other thread runs (the caller's contract), so nothing allocates meanwhile.
        unsafe {
            if arenas > 0 {
                libc::mallopt(libc::M_ARENA_MAX, arenas);
            }
            if threshold > 0 {
                libc::mallopt(libc::M_MMAP_THRESHOLD, threshold);
            }
        }
    }
}

/// The bytes this process's allocator holds for live allocations (glibc's `mallinfo2`: in use
/// in its heaps plus mapped chunks), whether or not their pages were ever touched; `None` outside
/// Linux with glibc. Unlike an RSS difference, it does not depend on what earlier frees left
/// resident for later allocations to reuse.
pub fn heap_in_use_bytes() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads allocator statistics.
        #[allow(unsafe_code)]
        let mi = unsafe { libc::mallinfo2() };
        Some((mi.uordblks + mi.hblkhd) as u64)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}

/// With `INFORMER_BENCH_MALLINFO` (or `INFORMER_BENCH_RSS_TRACE`) set: prints glibc's heap
/// statistics (diagnostics for RSS).
pub fn print_mallinfo(when: &str) {
    if std::env::var_os("INFORMER_BENCH_MALLINFO").is_none() && std::env::var_os("INFORMER_BENCH_RSS_TRACE").is_none() {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads allocator statistics.
        #[allow(unsafe_code)]
        let mi = unsafe { libc::mallinfo2() };
        eprintln!(
            "mallinfo {when}: arena {} KB, in use {} KB, free {} KB, mmap {} KB, RssAnon {} KB, RssFile {} KB",
            mi.arena >> 10,
            mi.uordblks >> 10,
            mi.fordblks >> 10,
            mi.hblkhd >> 10,
            proc_status_kb("RssAnon:"),
            proc_status_kb("RssFile:")
        );
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = when;
}

/// With `INFORMER_BENCH_RSS_TRACE` set: a thread that reads this process's RSS every
/// millisecond and prints each new maximum with the time since the start, `progress()` (e.g. the
/// updates handled so far) and glibc's heap statistics (diagnostics: when a peak happens, and
/// whether live data or free space makes it). Stops when the returned guard is dropped.
pub fn trace_rss(progress: impl Fn() -> u64 + Send + 'static) -> Option<RssTrace> {
    std::env::var_os("INFORMER_BENCH_RSS_TRACE")?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let t0 = std::time::Instant::now();
    std::thread::Builder::new()
        .name("rss-trace".into())
        .spawn(move || {
            let mut max = 0;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let rss = proc_status_kb("VmRSS:");
                if rss > max {
                    max = rss;
                    let ms = t0.elapsed().as_millis();
                    print_mallinfo(&format!("rss max {rss} KB at {ms} ms, progress {}", progress()));
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
        .ok()?;
    Some(RssTrace(stop))
}

/// Stops the [`trace_rss`] thread when dropped.
pub struct RssTrace(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Drop for RssTrace {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The peak is never below an RSS the caller read, nor below the kernel's mark.
    #[test]
    fn peak_rss_is_at_least_every_reading() {
        let hwm = proc_status_kb("VmHWM:");
        assert!(hwm > 0, "/proc/self/status has VmHWM");
        assert!(peak_rss_kb(&[]) >= hwm);
        let above = hwm * 4;
        assert_eq!(peak_rss_kb(&[1, above, 2]), above);
    }

    #[test]
    fn percentiles_of_sorted_samples() {
        assert_eq!(percentile(&[], 0.99), 0);
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!((percentile(&v, 0.0), percentile(&v, 0.5), percentile(&v, 1.0)), (1, 50, 100));
    }
}
