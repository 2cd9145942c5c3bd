//! The environment of a run: machine facts, time stamps, ids and the workload hash.

use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use vload_schema::Environment;

use crate::AttackPlan;

/// Facts about the client machine.
pub(crate) fn environment() -> Environment {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_owned())
            .ok()
    };
    Environment {
        arch: std::env::consts::ARCH.to_owned(),
        os: std::env::consts::OS.to_owned(),
        cpu_model: cpu_model().unwrap_or_else(|| "unknown".to_owned()),
        cpus_available: cores(),
        kernel: read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".to_owned()),
        hostname: read("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".to_owned()),
        clock: clock(),
        governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
    }
}

/// The kernel's clock discipline state, by `adjtimex` (read only: modes 0).
fn clock() -> Option<vload_schema::ClockRecord> {
    // SAFETY: a zeroed timex is a valid argument; modes 0 only reads the state.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: tx is a valid, writable timex.
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state == -1 {
        return None;
    }
    // The offset is in ns when STA_NANO is set, in µs otherwise.
    let offset_us = if tx.status & libc::STA_NANO != 0 {
        tx.offset / 1000
    } else {
        tx.offset
    };
    Some(vload_schema::ClockRecord {
        synchronized: state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0,
        offset_us,
        max_error_us: tx.maxerror.max(0) as u64,
        est_error_us: tx.esterror.max(0) as u64,
    })
}

/// File descriptors a process needs beyond its connections: the runtime, timers, stdio, files.
pub(crate) const FD_MARGIN: u64 = 64;

/// Raises the soft limit on open files to the hard limit; returns the limit now in force.
pub(crate) fn raise_fd_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit for this process.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    #[allow(clippy::unnecessary_cast, reason = "rlim_t is not u64 on every target")]
    let limit = limit.rlim_cur as u64;
    limit
}

/// The local ports this machine gives outgoing connections (Linux), if it says.
pub(crate) fn local_port_range() -> Option<(u16, u16)> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut parts = text.split_whitespace().map(str::parse::<u16>);
    match (parts.next(), parts.next()) {
        (Some(Ok(low)), Some(Ok(high))) if low <= high => Some((low, high)),
        _ => None,
    }
}

/// CPUs this process may run on.
pub(crate) fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    // x86 names the model; many aarch64 kernels give only implementer and part numbers.
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned())
    };
    field("model name").or_else(|| {
        let (implementer, part) = (field("CPU implementer")?, field("CPU part")?);
        Some(format!("implementer {implementer} part {part}"))
    })
}

/// Hex SHA-256 of what is asked: method, scheme, path, headers (a Host given by hand
/// included), body, targets. Not where it is sent: the URL's host and port, and the Host
/// header taken from them, differ between two servers running the same workload (an x86_64
/// and an aarch64 box, or two `vcl/run.sh` runs on random ports); `plan.server_address`
/// records where.
pub(crate) fn workload_hash(plan: &AttackPlan, targets: Option<&[u8; 32]>) -> String {
    let request = &plan.request;
    let mut hash = Sha256::new();
    hash.update(request.method.as_str());
    hash.update(b"\n");
    hash.update(request.url.scheme_str().unwrap_or("http"));
    hash.update(b" ");
    hash.update(request.url.path_and_query().map_or("/", |pq| pq.as_str()));
    let url_host = request.url.authority().map(|a| a.as_str().as_bytes());
    for (name, value) in &request.headers {
        if name == http::header::HOST && Some(value.as_bytes()) == url_host {
            continue;
        }
        hash.update(b"\n");
        hash.update(name.as_str());
        hash.update(b": ");
        hash.update(value.as_bytes());
    }
    hash.update(b"\n\n");
    hash.update(&request.body);
    if let (Some(plan), Some(targets)) = (&plan.targets, targets) {
        hash.update(targets);
        for set in &plan.sets {
            hash.update(set.weight.to_le_bytes());
        }
        hash.update(format!("{:?}", plan.pick));
    }
    if let Some(c) = &plan.catalogue {
        // Everything that decides which objects are asked, and what each is (a table of
        // sizes is written out whole in its law).
        let r = c.record();
        hash.update(format!(
            "\ncatalogue {} {} {} {:?} {} {} {}",
            r.objects, r.popularity, r.object_size, r.ttl_s, r.one_hit_wonders, r.hosts, r.seed
        ));
    }
    hex(&hash.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `2026-11-22T01:36:12.345Z`.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// A run id: the start time and 8 hex digits that differ between runs started together.
pub(crate) fn run_id(time: SystemTime) -> String {
    let stamp: String = rfc3339(time)
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .take(15)
        .collect();
    let mut hash = Sha256::new();
    hash.update(
        time.duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
            .to_le_bytes(),
    );
    hash.update(std::process::id().to_le_bytes());
    format!("{stamp}Z-{}", &hex(&hash.finalize())[..8])
}

/// Howard Hinnant's days-to-civil: (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn formats_rfc3339_utc() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_312_572_345);
        assert_eq!(rfc3339(t), "2026-11-22T01:56:12.345Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(&rfc3339(leap)[..10], "2000-02-29");
    }

    #[test]
    fn run_ids_start_with_the_time() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_312_572_345);
        let id = run_id(t);
        assert!(id.starts_with("20261122T015612Z-"), "{id}");
        assert_eq!(id.len(), "20261122T015612Z-".len() + 8);
    }

    #[test]
    fn the_workload_hash_ignores_where_the_load_goes() {
        // See #17, case 22: every vcl/run.sh run had a different hash because of its port.
        let plan = |url: &str, host: Option<&str>| {
            let mut request = crate::RequestTemplate::get(url.parse().unwrap());
            if let Some(host) = host {
                request
                    .headers
                    .insert(http::header::HOST, host.parse().unwrap());
            }
            AttackPlan::new(
                request,
                "127.0.0.1:1".parse().unwrap(),
                crate::Load::Closed { connections: 1 },
                crate::Stop {
                    duration: None,
                    requests: Some(1),
                },
            )
        };
        let hash = |p: &AttackPlan| workload_hash(p, None);
        let a = hash(&plan("http://127.0.0.1:6081/x?y=1", None));
        assert_eq!(a, hash(&plan("http://10.0.0.2:40217/x?y=1", None)));
        assert_ne!(a, hash(&plan("http://127.0.0.1:6081/other", None)));
        assert_ne!(a, hash(&plan("https://127.0.0.1:6081/x?y=1", None)));
        // A Host given by hand is part of what is asked.
        let named = hash(&plan(
            "http://127.0.0.1:6081/x?y=1",
            Some("www.example.com"),
        ));
        assert_ne!(a, named);
        assert_eq!(
            named,
            hash(&plan("http://10.0.0.2:80/x?y=1", Some("www.example.com")))
        );
    }

    #[test]
    fn raising_the_fd_limit_never_lowers_it() {
        let before = raise_fd_limit();
        assert!(raise_fd_limit() >= before);
    }

    #[test]
    fn environment_is_filled_in() {
        let env = environment();
        assert_eq!(env.arch, std::env::consts::ARCH);
        assert!(env.cpus_available >= 1);
        assert!(!env.kernel.is_empty());
    }
}
