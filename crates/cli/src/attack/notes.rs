//! Notes on what an attack's command line may not mean what its author meant: another
//! tool's reading of a flag vload reads otherwise, and targets piped to a vload that was not
//! told to read them.

/// `-t N` (or `-tN`) on the command line `args`: vload's threads, as wrk's; ab's time limit.
pub(crate) fn threads_flag(args: &[String]) -> Option<String> {
    let args = &args[..args.iter().position(|a| a == "--").unwrap_or(args.len())];
    let value = args.iter().enumerate().find_map(|(i, a)| {
        if a == "-t" {
            args.get(i + 1).cloned()
        } else {
            a.strip_prefix("-t")
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .map(str::to_owned)
        }
    })?;
    let threads = if value == "1" { "thread" } else { "threads" };
    Some(format!(
        "-t {value} is {value} worker {threads}, as wrk's -t; ab's -t (a time limit) is vload's -d {value}s"
    ))
}

/// Bytes waiting on stdin, when it is a pipe or a file rather than a terminal: targets piped
/// to vload without `--targets -` (or `--urls -`, `--replay-log -`), which it does not read.
pub(crate) fn unread_stdin() -> Option<String> {
    // SAFETY: isatty and ioctl(FIONREAD) on descriptor 0 only read its state into `n`.
    let n = unsafe {
        if libc::isatty(0) == 1 {
            return None;
        }
        let mut n: libc::c_int = 0;
        if libc::ioctl(0, libc::FIONREAD, &mut n) != 0 {
            return None;
        }
        n
    };
    (n > 0).then(|| {
        format!(
            "stdin holds {n} bytes vload did not read: targets piped in are read with --targets - (vegeta's way), --urls - or --replay-log -"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn ab_s_time_limit_is_named_beside_wrk_s_threads() {
        let note = threads_flag(&args("attack -t 2 -c 10 http://h/")).unwrap();
        assert!(
            note.contains("-d 2s") && note.contains("2 worker threads"),
            "{note}"
        );
        assert!(
            threads_flag(&args("attack -t4 http://h/"))
                .unwrap()
                .contains("-d 4s")
        );
        assert_eq!(threads_flag(&args("attack --threads 2 http://h/")), None);
        assert_eq!(threads_flag(&args("attack -- -t 2")), None);
        assert_eq!(
            threads_flag(&args("attack --targets t.txt http://h/")),
            None
        );
    }
}
