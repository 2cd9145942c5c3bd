//! Writing what vload produces (run files, merged runs, plots) without losing it or
//! damaging what is already at the path.
//!
//! - A regular file (or a path not there yet) is written whole to a temporary file beside it,
//!   synced, then renamed over it: a reader never sees half a file, and a failed write
//!   leaves the old file and no temporary behind.
//! - A symbolic link is followed: its target is written (so `-o latest.json`, a link into an
//!   archive, keeps being a link).
//! - A FIFO or a character device (`-o /dev/stdout`, a named pipe) is written directly:
//!   renaming over it would replace a device node with a regular file (as root, `-o /dev/full`
//!   replaced the system's device).
//! - Anything else (a directory, a block device, a socket) is refused before the attack.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::FileTypeExt as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

/// Where an output goes, once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Destination {
    /// A regular file, written through a temporary file and a rename.
    File(PathBuf),
    /// A FIFO or character device, written in place.
    Stream(PathBuf),
    /// `-`: standard output (the report then goes to stderr).
    Stdout,
}

impl Destination {
    /// The path written in the end (a link's target).
    pub(crate) fn path(&self) -> &Path {
        match self {
            Destination::File(p) | Destination::Stream(p) => p,
            Destination::Stdout => Path::new("standard output"),
        }
    }
}

/// Words other tools take after -o / --output as a format (hey's `-o csv`, oha's
/// `--output-format json`, k6's `--out json`): refused as file names, named.
const FORMAT_WORDS: &[&str] = &[
    "csv", "json", "text", "txt", "html", "markdown", "md", "quiet",
];

/// Links followed before giving up (the kernel's own limit is 40).
const MAX_LINKS: usize = 40;

/// Checks that `path` can take `what` (e.g. "run file"), before an attack spends minutes on
/// something that cannot be saved. Nothing is created at a FIFO or device.
///
/// # Errors
/// The path is a directory or another kind of file vload must not replace, a link loop, or
/// its directory cannot be written.
pub(crate) fn check(path: &Path, what: &str) -> anyhow::Result<Destination> {
    if path == Path::new("-") {
        return Ok(Destination::Stdout);
    }
    // hey's `-o csv`, oha's and k6's `--output json`: a format, which vload's -o is not.
    if let Some(word) = path.to_str()
        && FORMAT_WORDS.contains(&word)
    {
        bail!(
            "-o {word}: vload's -o names the {what} (JSON), not a format; `vload report RUN.json --format ...` prints other forms; to write a file named '{word}', give ./{word}"
        );
    }
    let target =
        follow_links(path).with_context(|| format!("cannot write {what} '{}'", path.display()))?;
    let kind = match std::fs::metadata(&target) {
        Ok(meta) => Some(meta.file_type()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(e).with_context(|| format!("cannot write {what} '{}'", path.display()));
        }
    };
    let destination = match kind {
        None => Destination::File(target),
        Some(t) if t.is_file() => Destination::File(target),
        Some(t) if t.is_fifo() || t.is_char_device() => return Ok(Destination::Stream(target)),
        Some(t) => {
            let is = if t.is_dir() {
                "a directory"
            } else if t.is_block_device() {
                "a block device"
            } else if t.is_socket() {
                "a socket"
            } else {
                "not a regular file"
            };
            bail!(
                "cannot write {what} '{}': it is {is}; give the path of a file (it is replaced atomically), a FIFO or a character device",
                path.display()
            );
        }
    };
    // Fails now, not after a ten-minute attack, if the directory cannot take the file.
    let probe = temp_path(destination.path());
    File::create(&probe).with_context(|| format!("cannot write {what} '{}'", path.display()))?;
    let _ = std::fs::remove_file(probe);
    Ok(destination)
}

/// The path a chain of symbolic links ends at (which need not exist yet).
fn follow_links(path: &Path) -> anyhow::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            _ => return Ok(current),
        }
    }
    bail!("too many levels of symbolic links")
}

/// Writes `text` to a checked destination.
///
/// # Errors
/// Any failure to create, write, sync or rename; a temporary file is removed first.
pub(crate) fn write(destination: &Destination, text: &str, what: &str) -> anyhow::Result<()> {
    let fail = |path: &Path| format!("cannot write {what} '{}'", path.display());
    match destination {
        Destination::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .with_context(|| format!("cannot write {what} to standard output"))
        }
        Destination::Stream(path) => {
            let mut out = OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(|| fail(path))?;
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .with_context(|| fail(path))
        }
        Destination::File(path) => {
            let tmp = temp_path(path);
            let written = File::create(&tmp).and_then(|mut f| {
                f.write_all(text.as_bytes())?;
                // A full disk can surface only when the data is flushed.
                f.sync_all()
            });
            let renamed = written.and_then(|()| std::fs::rename(&tmp, path));
            if renamed.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            renamed.with_context(|| fail(path))
        }
    }
}

/// Checks and writes in one step (`vload report -o`, `vload plot -o`).
pub(crate) fn write_to(path: &Path, text: &str, what: &str) -> anyhow::Result<()> {
    write(&check(path, what)?, text, what)
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run.json".into());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Saves a run file that could not be written where asked: beside the current directory,
/// then in the temporary directory. Returns where it went, or every attempt's failure.
pub(crate) fn rescue(text: &str, run_id: &str) -> Result<PathBuf, Vec<String>> {
    let name = format!("vload-run-{}.json", run_id.replace(['/', '\\'], "_"));
    let mut failures = Vec::new();
    for dir in [PathBuf::from("."), std::env::temp_dir()] {
        let path = dir.join(&name);
        match write(&Destination::File(path.clone()), text, "run file") {
            Ok(()) => return Ok(path),
            Err(e) => failures.push(format!("{e:#}")),
        }
    }
    Err(failures)
}

/// Reads a whole input file of at most `max` bytes; `what` names it in errors ("run file",
/// "--body-file"). A larger file (a disk image given by mistake) is refused, not read.
pub(crate) fn read_bounded(path: &Path, max: u64, what: &str) -> anyhow::Result<Vec<u8>> {
    read_checked(path, max, what, |_, _| None)
}

/// [`read_bounded`] for a JSON text (a run file): refused at its first bytes when they
/// cannot begin one (not `{`, or a NUL), so `/dev/zero` or a binary is not read to the
/// limit before the refusal.
pub(crate) fn read_json_text(path: &Path, max: u64, what: &str) -> anyhow::Result<Vec<u8>> {
    read_checked(path, max, what, |all, new| {
        if let Some(first) = all.iter().find(|b| !b.is_ascii_whitespace())
            && *first != b'{'
        {
            return Some(format!("it starts with byte 0x{first:02x}, not '{{'"));
        }
        new.contains(&0)
            .then(|| "it holds NUL bytes (binary data)".to_owned())
    })
}

/// Reads `path` (`-`: standard input) a chunk at a time, at most `max` bytes; `wrong` looks
/// at all read so far and the chunk just read, and names why it is not a `what`.
fn read_checked(
    path: &Path,
    max: u64,
    what: &str,
    wrong: impl Fn(&[u8], &[u8]) -> Option<String>,
) -> anyhow::Result<Vec<u8>> {
    use std::io::Read as _;
    let stdin = path == Path::new("-");
    let named = || {
        if stdin {
            "standard input".to_owned()
        } else {
            format!("'{}'", path.display())
        }
    };
    let mut input: Box<dyn std::io::Read> = if stdin {
        Box::new(std::io::stdin().lock())
    } else {
        let file = File::open(path).with_context(|| format!("cannot read {what} {}", named()))?;
        let size = file
            .metadata()
            .with_context(|| format!("cannot read {what} {}", named()))?
            .len();
        if size > max {
            bail!(
                "{what} {} is {size} bytes, more than vload reads ({max}): is it the right file?",
                named()
            );
        }
        Box::new(file)
    };
    let mut bytes = Vec::new();
    let mut chunk = vec![0; 64 << 10];
    loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot read {what} {}", named())),
        };
        bytes.extend_from_slice(&chunk[..n]);
        if bytes.len() as u64 > max {
            bail!(
                "{what} {} is more than vload reads ({max} bytes): is it the right file?",
                named()
            );
        }
        if let Some(why) = wrong(&bytes, &chunk[..n]) {
            bail!("{} is not a {what}: {why}", named());
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("vload-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_symlink_is_followed_and_stays_a_link() {
        let dir = scratch("link");
        let target = dir.join("archive.json");
        std::fs::write(&target, "old").unwrap();
        let link = dir.join("latest.json");
        std::os::unix::fs::symlink("archive.json", &link).unwrap();
        let d = check(&link, "run file").unwrap();
        assert_eq!(d, Destination::File(target.clone()));
        write(&d, "new", "run file").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn devices_are_written_in_place_and_directories_refused() {
        let d = check(Path::new("/dev/null"), "run file").unwrap();
        assert_eq!(d, Destination::Stream(PathBuf::from("/dev/null")));
        write(&d, "x", "run file").unwrap();
        assert!(
            std::fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
        let dir = scratch("dir");
        let e = format!("{:#}", check(&dir, "run file").unwrap_err());
        assert!(e.contains("is a directory"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        // /dev/full fails every write with ENOSPC: a full disk.
        let d = Destination::Stream(PathBuf::from("/dev/full"));
        let e = format!("{:#}", write(&d, "x", "run file").unwrap_err());
        assert!(e.contains("cannot write run file '/dev/full'"), "{e}");
        let dir = scratch("gone");
        let missing = Destination::File(dir.join("no-such-dir").join("run.json"));
        assert!(write(&missing, "x", "run file").is_err());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
