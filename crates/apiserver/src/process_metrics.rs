//! The server process's own metrics at `/metrics`, as kube-apiserver's Prometheus client
//! (client_golang's process collector) reports its process on Linux: CPU time, file
//! descriptors open and allowed, virtual and resident memory and the address space allowed,
//! start time, and the bytes received and sent over the network (of the process's network
//! namespace, as the collector reads them).
//!
//! Invariants: values are read from `/proc` when the metrics are read, as the collector reads
//! them (CPU ticks at 100 per second, as its procfs library counts them; pages at the system's
//! page size, from the auxiliary vector); a value that cannot be read is left out, never
//! written as 0; families are written in name order, after the server's `apiserver_*` ones, as
//! Go's registry sorts them; values are written as Go writes a float64. Elsewhere than Linux
//! nothing is written.

use std::fmt::Write;

use crate::go_fmt;

/// Clock ticks per second in `/proc/<pid>/stat` (procfs' `userHZ`).
const USER_HZ: f64 = 100.0;
/// `AT_PAGESZ` in the auxiliary vector.
const AT_PAGESZ: u64 = 6;

/// What is read of the process.
#[derive(Debug, Default, PartialEq)]
struct Sample {
    cpu_seconds: Option<f64>,
    max_fds: Option<f64>,
    receive_bytes: Option<f64>,
    transmit_bytes: Option<f64>,
    open_fds: Option<f64>,
    resident_bytes: Option<f64>,
    start_time_seconds: Option<f64>,
    virtual_bytes: Option<f64>,
    virtual_max_bytes: Option<f64>,
}

/// Appends the process's families to a text-format document.
pub(crate) fn encode(out: &mut String) {
    write_sample(out, &read());
}

fn read() -> Sample {
    let text = |path: &str| std::fs::read_to_string(path).ok();
    let mut sample = Sample::default();
    if let Some(stat) = text("/proc/self/stat").as_deref().and_then(Stat::parse) {
        let page_size = std::fs::read("/proc/self/auxv").ok().and_then(|a| page_size(&a));
        let boot_time = text("/proc/stat").as_deref().and_then(boot_time);
        sample.cpu_seconds = Some((stat.utime + stat.stime) as f64 / USER_HZ);
        sample.virtual_bytes = Some(stat.vsize as f64);
        sample.resident_bytes = page_size.map(|p| (stat.rss * p) as f64);
        sample.start_time_seconds = boot_time.map(|b| b as f64 + stat.starttime as f64 / USER_HZ);
    }
    if let Some(limits) = text("/proc/self/limits") {
        sample.max_fds = soft_limit(&limits, "Max open files");
        sample.virtual_max_bytes = soft_limit(&limits, "Max address space");
    }
    sample.open_fds = std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count() as f64);
    if let Some((received, sent)) = text("/proc/self/net/netstat").as_deref().and_then(octets) {
        sample.receive_bytes = Some(received as f64);
        sample.transmit_bytes = Some(sent as f64);
    }
    sample
}

fn write_sample(out: &mut String, s: &Sample) {
    let families = [
        ("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter", s.cpu_seconds),
        ("process_max_fds", "Maximum number of open file descriptors.", "gauge", s.max_fds),
        (
            "process_network_receive_bytes_total",
            "Number of bytes received by the process over the network.",
            "counter",
            s.receive_bytes,
        ),
        (
            "process_network_transmit_bytes_total",
            "Number of bytes sent by the process over the network.",
            "counter",
            s.transmit_bytes,
        ),
        ("process_open_fds", "Number of open file descriptors.", "gauge", s.open_fds),
        ("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", s.resident_bytes),
        (
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            "gauge",
            s.start_time_seconds,
        ),
        ("process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", s.virtual_bytes),
        (
            "process_virtual_memory_max_bytes",
            "Maximum amount of virtual memory available in bytes.",
            "gauge",
            s.virtual_max_bytes,
        ),
    ];
    for (name, help, kind, value) in families {
        if let Some(v) = value {
            // Writing to a String cannot fail.
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {}\n", go_fmt::float(v));
        }
    }
}

/// The fields of `/proc/<pid>/stat` the collector reads.
#[derive(Debug, PartialEq)]
struct Stat {
    utime: u64,
    stime: u64,
    starttime: u64,
    vsize: u64,
    rss: u64,
}

impl Stat {
    /// Parses the line; the command name (in parentheses, possibly with spaces and parentheses
    /// of its own) ends at the last `)`.
    fn parse(line: &str) -> Option<Stat> {
        let rest = &line[line.rfind(')')? + 1..];
        // Fields from the third (state) on: field n is at n - 3.
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
        Some(Stat { utime: field(14)?, stime: field(15)?, starttime: field(22)?, vsize: field(23)?, rss: field(24)? })
    }
}

/// `btime` of `/proc/stat`: the boot time, in seconds since the epoch.
fn boot_time(stat: &str) -> Option<u64> {
    stat.lines().find_map(|l| l.strip_prefix("btime ")).and_then(|v| v.trim().parse().ok())
}

/// A limit's soft value in `/proc/<pid>/limits` (`unlimited` is the largest uint64, as procfs
/// reads it).
fn soft_limit(limits: &str, name: &str) -> Option<f64> {
    let line = limits.lines().find(|l| l.starts_with(name))?;
    let soft = line[name.len()..].split_whitespace().next()?;
    if soft == "unlimited" { Some(u64::MAX as f64) } else { soft.parse::<u64>().ok().map(|v| v as f64) }
}

/// `InOctets` and `OutOctets` of the `IpExt` lines of `/proc/<pid>/net/netstat`.
fn octets(netstat: &str) -> Option<(u64, u64)> {
    let mut ip_ext = netstat.lines().filter_map(|l| l.strip_prefix("IpExt:"));
    let names: Vec<&str> = ip_ext.next()?.split_whitespace().collect();
    let values: Vec<&str> = ip_ext.next()?.split_whitespace().collect();
    let value = |name: &str| values.get(names.iter().position(|n| *n == name)?)?.parse::<u64>().ok();
    Some((value("InOctets")?, value("OutOctets")?))
}

/// The page size from the auxiliary vector (pairs of native words: type, value).
fn page_size(auxv: &[u8]) -> Option<u64> {
    const WORD: usize = std::mem::size_of::<usize>();
    auxv.chunks_exact(2 * WORD).find_map(|pair| {
        let word = |b: &[u8]| -> u64 {
            let mut bytes = [0u8; WORD];
            bytes.copy_from_slice(b);
            usize::from_ne_bytes(bytes) as u64
        };
        (word(&pair[..WORD]) == AT_PAGESZ).then(|| word(&pair[WORD..]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_are_read_as_procfs_reads_them() {
        let stat = "14786 (a (odd) name) R 14782 14782 7302 0 -1 4194304 102 0 0 0 250 73 0 0 20 0 1 0 \
                    4811952 2998272 395 18446744073709551615 94054986305536";
        assert_eq!(
            Stat::parse(stat),
            Some(Stat { utime: 250, stime: 73, starttime: 4811952, vsize: 2998272, rss: 395 })
        );
        assert_eq!(Stat::parse("1 (x) R 2 3"), None);
        assert_eq!(boot_time("cpu  1 2 3\nintr 5\nbtime 1795824362\nprocesses 9\n"), Some(1795824362));
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max open files            20000                40000                files     \n\
                      Max address space         unlimited            unlimited            bytes     \n";
        assert_eq!(soft_limit(limits, "Max open files"), Some(20000.0));
        assert_eq!(soft_limit(limits, "Max address space"), Some(18446744073709551615.0));
        let netstat = "TcpExt: SyncookiesSent\nTcpExt: 0\nIpExt: InNoRoutes InOctets OutOctets\nIpExt: 0 12038 1190\n";
        assert_eq!(octets(netstat), Some((12038, 1190)));
        let mut auxv = Vec::new();
        for (k, v) in [(33usize, 7usize), (AT_PAGESZ as usize, 4096), (0, 0)] {
            auxv.extend_from_slice(&k.to_ne_bytes());
            auxv.extend_from_slice(&v.to_ne_bytes());
        }
        assert_eq!(page_size(&auxv), Some(4096));
    }

    #[test]
    fn families_are_written_in_name_order_with_go_floats_and_missing_values_left_out() {
        let sample = Sample {
            cpu_seconds: Some(3.23),
            max_fds: Some(1048576.0),
            open_fds: Some(13.0),
            resident_bytes: Some(50327552.0),
            start_time_seconds: Some(1795872484.52),
            virtual_max_bytes: Some(u64::MAX as f64),
            ..Default::default()
        };
        let mut out = String::new();
        write_sample(&mut out, &sample);
        assert_eq!(
            out,
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n\
             # TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3.23\n\
             # HELP process_max_fds Maximum number of open file descriptors.\n\
             # TYPE process_max_fds gauge\nprocess_max_fds 1.048576e+06\n\
             # HELP process_open_fds Number of open file descriptors.\n\
             # TYPE process_open_fds gauge\nprocess_open_fds 13\n\
             # HELP process_resident_memory_bytes Resident memory size in bytes.\n\
             # TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes 5.0327552e+07\n\
             # HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n\
             # TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1.79587248452e+09\n\
             # HELP process_virtual_memory_max_bytes Maximum amount of virtual memory available in bytes.\n\
             # TYPE process_virtual_memory_max_bytes gauge\nprocess_virtual_memory_max_bytes 1.8446744073709552e+19\n"
        );
    }
}
