//! The server process's CPU time from `/proc` (`--watch-pid`): the process and every live
//! descendant (Varnish's worker process is a child of the one started).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context as _;
use vload_schema::ProcessRecord;

/// CPU time of a process and its descendants, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ProcessCpu {
    pub(crate) user: u64,
    pub(crate) system: u64,
    pub(crate) processes: u32,
}

/// Seconds per clock tick of `/proc/PID/stat`.
pub(crate) fn tick_s() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1.0 / if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// One `/proc/PID/stat` line: (parent pid, user ticks, system ticks).
fn parse_stat(text: &str) -> Option<(u32, u64, u64)> {
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is the state (field 3 of proc(5)); ppid is field 4, utime 14, stime 15.
    Some((
        fields.get(1)?.parse().ok()?,
        fields.get(11)?.parse().ok()?,
        fields.get(12)?.parse().ok()?,
    ))
}

/// CPU used so far by `pid` and every live descendant (a process's threads are in its
/// own line; Varnish's worker is a child of the process started).
pub(crate) fn process_cpu(pid: u32) -> anyhow::Result<ProcessCpu> {
    let root = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|text| parse_stat(&text))
        .with_context(|| format!("--watch-pid {pid}: no such process"))?;
    let mut children: BTreeMap<u32, Vec<(u32, u64, u64)>> = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let path: PathBuf = entry.path().join("stat");
            if let Some((parent, user, system)) = std::fs::read_to_string(path)
                .ok()
                .and_then(|text| parse_stat(&text))
            {
                children
                    .entry(parent)
                    .or_default()
                    .push((child, user, system));
            }
        }
    }
    let mut total = ProcessCpu {
        user: root.1,
        system: root.2,
        processes: 1,
    };
    let mut stack = vec![pid];
    while let Some(parent) = stack.pop() {
        for &(child, user, system) in children.get(&parent).map_or(&[][..], Vec::as_slice) {
            total.user += user;
            total.system += system;
            total.processes += 1;
            stack.push(child);
        }
    }
    Ok(total)
}

/// The process's command name.
pub(crate) fn process_name(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// The window between two CPU samples.
pub(crate) fn process_window(pid: u32, start: ProcessCpu, end: ProcessCpu) -> ProcessRecord {
    let tick = tick_s();
    ProcessRecord {
        pid,
        name: process_name(pid),
        processes: end.processes,
        user_s: end.user.saturating_sub(start.user) as f64 * tick,
        system_s: end.system.saturating_sub(start.system) as f64 * tick,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names() {
        let line = "42 (a (b) c) S 7 42 42 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 4 0 1 0";
        assert_eq!(parse_stat(line), Some((7, 250, 31)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn own_process_cpu_counts_and_grows() {
        let me = std::process::id();
        let before = process_cpu(me).unwrap();
        // Spin until /proc says 100 ms of CPU went by: on a loaded machine that takes longer
        // than 100 ms of wall time (bounded at 30 s).
        let start = std::time::Instant::now();
        let mut x = 0u64;
        let record = loop {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            let record = process_window(me, before, process_cpu(me).unwrap());
            if record.cpu_s() >= 0.1 || start.elapsed() > std::time::Duration::from_secs(30) {
                break record;
            }
        };
        assert!(record.cpu_s() >= 0.1, "{record:?}");
        assert!(process_cpu(u32::MAX).is_err());
    }
}
