//! The source rules of docs/ARCHITECTURE.md ("Rules the code keeps"), checked on every test
//! run so they hold by themselves:
//!
//! - no source file over 600 lines, not counting a trailing `#[cfg(test)] mod tests`;
//! - no function over 80 lines outside `#[cfg(test)]` code;
//! - no circle of paths between the files of a crate, in any spelling ([`modules`]: `crate::`,
//!   `super::`, `self::`, a child named bare, groups, globs, re-exported names);
//! - no I/O in the crates that must have none (schema, cache, analyze: pure computation over
//!   what they are given).
//!
//! An exception is named in ARCHITECTURE.md's list under "Exceptions to the rules", one line
//! each: `` - `path` `` for a file, `` - `path` `name` `` for a function, `` - circle `a.rs` ``
//! for the circles through a file, each with its reason after a colon. The check also fails
//! when a listed exception no longer breaks the rule, so the list stays true.
//!
//! rustfmt's layout is what makes a line-based reading exact enough: an item's closing
//! brace sits alone on a line at the item's own indentation.

mod modules;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use modules::Crate;

const MAX_FILE: usize = 600;
const MAX_FN: usize = 80;
/// The crates that do no I/O, and what I/O looks like in source.
const PURE: [&str; 3] = ["crates/schema", "crates/cache", "crates/analyze"];
const IO: [&str; 16] = [
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
    "File::open",
    "File::create",
    "OpenOptions",
    "stdin()",
    "stdout()",
    "stderr()",
    "println!",
    "print!(",
    "eprintln!",
    "eprint!(",
    "TcpStream",
    "UdpSocket",
];

fn top() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("benches/ is inside the workspace")
        .to_path_buf()
}

/// Every crate's `src/` directory: (crate directory relative to the top, its files).
fn crates() -> Vec<(PathBuf, Vec<PathBuf>)> {
    let top = top();
    let mut dirs = vec![top.join("origin"), top.join("benches")];
    for entry in std::fs::read_dir(top.join("crates")).expect("crates/") {
        dirs.push(entry.expect("a directory entry").path());
    }
    dirs.sort();
    dirs.into_iter()
        .filter(|d| d.join("src").is_dir())
        .map(|d| {
            let mut files = Vec::new();
            walk(&d.join("src"), &mut files);
            files.sort();
            (
                d.strip_prefix(&top).expect("under the top").to_path_buf(),
                files,
            )
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(top())
        .expect("under the top")
        .to_string_lossy()
        .replace('\\', "/")
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The lines of a file that are not test code: `#[cfg(test)]` items (a module, a function,
/// an impl) are left out, from the attribute to their closing brace.
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim() == "#[cfg(test)]" {
            let at = indent(line);
            // The item's first line, then its closing brace at the same indentation (or the
            // line itself, for a one-line item).
            let mut j = i + 1;
            while j < lines.len() && lines[j].trim_start().starts_with("#[") {
                j += 1;
            }
            if j < lines.len() && !lines[j].trim_end().ends_with('{') {
                i = j + 1;
                continue;
            }
            j += 1;
            while j < lines.len() && !(indent(lines[j]) == at && lines[j].trim() == "}") {
                j += 1;
            }
            i = j + 1;
            continue;
        }
        out.push((i + 1, line));
        i += 1;
    }
    out
}

/// Functions longer than `MAX_FN` lines: (name, first line, length).
fn long_functions(code: &[(usize, &str)]) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for (k, &(number, line)) in code.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        // A declaration without a body (a trait's) ends with `;` before any `{`.
        let Some(open) = code[k..]
            .iter()
            .position(|(_, l)| l.trim_end().ends_with('{') || l.trim_end().ends_with(';'))
        else {
            continue;
        };
        if code[k + open].1.trim_end().ends_with(';') {
            continue;
        }
        let at = indent(line);
        let end = code[k + open..]
            .iter()
            .find(|(_, l)| indent(l) == at && l.trim_start().starts_with('}'))
            .map(|&(n, _)| n);
        if let Some(end) = end {
            let length = end - number + 1;
            if length > MAX_FN {
                out.push((name, number, length));
            }
        }
    }
    out
}

/// The name of the function a line declares, if it does.
fn fn_name(line: &str) -> Option<String> {
    let t = line.trim_start();
    if t.starts_with("//") {
        return None;
    }
    let mut words = t.split_whitespace().peekable();
    while let Some(word) = words.next() {
        let qualifier = word.starts_with("pub")
            || matches!(
                word,
                "async" | "const" | "unsafe" | "extern" | "\"C\"" | "default"
            );
        if word == "fn" {
            let name = words.next()?;
            let end = name.find(['(', '<']).unwrap_or(name.len());
            return Some(name[..end].to_owned());
        }
        if !qualifier {
            return None;
        }
    }
    None
}

/// Files on a circle of references: each file that can reach itself.
fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    for start in graph.keys() {
        // Breadth-first from `start`, remembering the way back.
        let mut parent: BTreeMap<&PathBuf, &PathBuf> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut closed = None;
        while let Some(file) = queue.pop_front() {
            for next in graph.get(file).into_iter().flatten() {
                if next == start {
                    closed = Some(file);
                    break;
                }
                if !parent.contains_key(next) {
                    parent.insert(next, file);
                    queue.push_back(next);
                }
            }
            if closed.is_some() {
                break;
            }
        }
        let Some(mut at) = closed else { continue };
        let mut circle = vec![start.clone()];
        while at != start {
            circle.push(at.clone());
            at = parent[at];
        }
        circle.reverse();
        circle.rotate_right(1);
        let key: BTreeSet<PathBuf> = circle.iter().cloned().collect();
        if seen.insert(key) {
            found.push(circle);
        }
    }
    found
}

/// The exceptions ARCHITECTURE.md names.
fn exceptions() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(top().join("docs/ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let section = doc
        .split("\n### Exceptions to the rules\n")
        .nth(1)
        .map(|s| s.split("\n#").next().unwrap_or(s))
        .unwrap_or("");
    section
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter_map(|l| l.split(':').next())
        .map(|l| l.replace('`', "").trim().to_owned())
        .collect()
}

#[test]
fn files_functions_and_circles_keep_the_rules() {
    let allowed = exceptions();
    let mut broken = BTreeSet::new();
    let mut report = Vec::new();
    for (dir, files) in crates() {
        let src = top().join(&dir).join("src");
        let mut read = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).expect("a readable source file");
            let code = code_lines(&text);
            let name = relative(file);
            // The file's length without trailing test code.
            let length = code.last().map_or(0, |&(n, _)| n);
            if length > MAX_FILE {
                broken.insert(name.clone());
                if !allowed.contains(&name) {
                    report.push(format!("{name}: {length} lines, over {MAX_FILE}"));
                }
            }
            for (function, line, length) in long_functions(&code) {
                let key = format!("{name} {function}");
                broken.insert(key.clone());
                if !allowed.contains(&key) {
                    report.push(format!(
                        "{name}:{line}: fn {function} is {length} lines, over {MAX_FN}"
                    ));
                }
            }
            if PURE.iter().any(|p| dir == Path::new(p)) {
                report.extend(io_in(&name, &code));
            }
            let joined: Vec<&str> = code.iter().map(|(_, l)| *l).collect();
            read.push((file.clone(), joined.join("\n")));
        }
        let graph = Crate::read(&src, &read).graph();
        for circle in circles(&graph) {
            let names: Vec<String> = circle.iter().map(|f| relative(f)).collect();
            let excused = names
                .iter()
                .any(|n| allowed.contains(&format!("circle {n}")));
            for n in &names {
                broken.insert(format!("circle {n}"));
            }
            if !excused {
                let mut shown = names.clone();
                shown.push(names[0].clone());
                report.push(format!("a circle of paths: {}", shown.join(" -> ")));
            }
        }
    }
    for stale in allowed.difference(&broken) {
        report.push(format!(
            "ARCHITECTURE.md excuses `{stale}`, which keeps the rules now: strike it from the list"
        ));
    }
    assert!(
        report.is_empty(),
        "the source rules of docs/ARCHITECTURE.md are broken:\n  {}",
        report.join("\n  ")
    );
}

/// Where a file of a crate that does no I/O does some.
fn io_in(name: &str, code: &[(usize, &str)]) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in code {
        let line = line.split("//").next().unwrap_or("");
        for io in IO.iter().filter(|io| line.contains(*io)) {
            found.push(format!(
                "{name}:{n}: `{io}` in a crate that does no I/O (schema, cache, analyze): the cli reads and writes"
            ));
        }
    }
    found
}

#[test]
fn the_checker_sees_what_it_checks() {
    let code = "fn short() {\n    1\n}\n\n#[cfg(test)]\nmod tests {\n    fn long() {\n    }\n}\n";
    let lines = code_lines(code);
    assert_eq!(
        lines.last().map(|l| l.0),
        Some(4),
        "the test module is left out"
    );
    let long: String = std::iter::once("pub(crate) async fn big(x: u8) -> u8 {\n".to_owned())
        .chain((0..MAX_FN).map(|_| "    x;\n".to_owned()))
        .chain(std::iter::once("}\n".to_owned()))
        .collect();
    let found = long_functions(&code_lines(&long));
    assert_eq!(found, vec![("big".to_owned(), 1, MAX_FN + 2)]);
    assert_eq!(fn_name("    fn f<T>(t: T) {"), Some("f".into()));
    assert_eq!(fn_name("    // fn f() {"), None);
    let a = PathBuf::from("a.rs");
    let b = PathBuf::from("b.rs");
    let graph = BTreeMap::from([
        (a.clone(), BTreeSet::from([b.clone()])),
        (b.clone(), BTreeSet::from([a.clone()])),
    ]);
    assert_eq!(circles(&graph).len(), 1);
}

/// The circles among `files` (a crate's `src/` paths and their code), by file name.
fn circles_in(files: &[(&str, &str)]) -> Vec<Vec<String>> {
    let src = PathBuf::from("/crate/src");
    let read: Vec<(PathBuf, String)> = files
        .iter()
        .map(|(path, code)| {
            let lines = code_lines(code);
            let code: Vec<&str> = lines.iter().map(|(_, l)| *l).collect();
            (src.join(path), code.join("\n"))
        })
        .collect();
    let graph = Crate::read(&src, &read).graph();
    circles(&graph)
        .into_iter()
        .map(|c| {
            let mut names: Vec<String> = c
                .iter()
                .map(|f| f.strip_prefix(&src).unwrap().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        })
        .collect()
}

/// Each spelling of a path between two files, injected into a crate of its own, closes a
/// circle the check sees; paths between siblings, to other crates and to the standard
/// library close none.
#[test]
fn every_spelling_of_a_circle_is_seen() {
    let lib = "mod a;\nmod b;\nmod m;\npub use a::A;\npub use b::B;\n";
    let cases: [(&str, [(&str, &str); 3]); 10] = [
        (
            "crate::",
            [
                ("a.rs", "use crate::b::B;\npub struct A;\n"),
                ("b.rs", "pub struct B(crate::a::A);\n"),
                ("m/mod.rs", ""),
            ],
        ),
        (
            "a name re-exported at the root",
            [
                ("a.rs", "pub struct A(crate::B);\n"),
                ("b.rs", "use crate::A;\npub struct B;\n"),
                ("m/mod.rs", ""),
            ],
        ),
        (
            "super:: to the parent's own item",
            [
                ("a.rs", ""),
                ("b.rs", ""),
                ("m/mod.rs", "mod c;\nuse c::C;\npub(crate) struct S;\n"),
            ],
        ),
        (
            "self:: from the parent",
            [
                ("a.rs", ""),
                ("b.rs", ""),
                (
                    "m/mod.rs",
                    "mod c;\npub(crate) struct S;\nfn f() -> self::c::C { todo() }\n",
                ),
            ],
        ),
        (
            "a group",
            [
                ("a.rs", "use crate::{b::{B}, m};\npub struct A;\n"),
                ("b.rs", "use crate::{a::A};\npub struct B;\n"),
                ("m/mod.rs", ""),
            ],
        ),
        (
            "super::super::",
            [
                ("a.rs", "use crate::m::d::D;\npub struct A;\n"),
                ("b.rs", ""),
                ("m/mod.rs", "mod c;\nmod d;\n"),
            ],
        ),
        (
            "a path in code",
            [
                ("a.rs", "pub fn f() { crate::b::g() }\n"),
                ("b.rs", "pub fn g() { crate::a::f() }\n"),
                ("m/mod.rs", ""),
            ],
        ),
        (
            "a glob",
            [
                ("a.rs", "use crate::b::*;\npub struct A;\n"),
                ("b.rs", "use crate::a::A;\npub struct B;\n"),
                ("m/mod.rs", ""),
            ],
        ),
        (
            "a name the parent re-exports, used by a sibling's child",
            [
                ("a.rs", "pub struct A(crate::m::C);\n"),
                ("b.rs", ""),
                ("m/mod.rs", "mod c;\npub(crate) use c::C;\n"),
            ],
        ),
        (
            "an imported module's path",
            [
                ("a.rs", "use crate::b;\npub struct A(b::B);\n"),
                ("b.rs", "pub struct B(crate::a::A);\n"),
                ("m/mod.rs", ""),
            ],
        ),
    ];
    let children = [
        ("m/c.rs", "use super::S;\npub(crate) struct C;\n"),
        ("m/d.rs", "use super::super::a::A;\npub(crate) struct D;\n"),
    ];
    for (spelling, files) in cases {
        let mut all = vec![("lib.rs", lib)];
        all.extend(files);
        all.extend(children);
        let found = circles_in(&all);
        assert!(!found.is_empty(), "{spelling}: no circle seen");
    }
    // The re-export case leads through m/mod.rs to m/c.rs, which names m/mod.rs's S.
    let quiet = [
        ("lib.rs", "mod a;\nmod b;\nmod m;\npub use a::A;\n"),
        (
            "a.rs",
            "use std::fmt;\nuse vload_schema::RunFile;\npub struct A(fmt::Error);\n",
        ),
        (
            "b.rs",
            "use crate::A;\nuse crate::m::c::C;\npub struct B;\n",
        ),
        (
            "m/mod.rs",
            "mod c;\nmod d;\npub(crate) use c::C;\npub(crate) use d::D;\n",
        ),
        ("m/c.rs", "use super::d::D;\npub(crate) struct C(D);\n"),
        (
            "m/d.rs",
            "pub(crate) struct D;\n#[cfg(test)]\nmod tests {\n    use super::super::c::C;\n}\n",
        ),
    ];
    assert_eq!(circles_in(&quiet), Vec::<Vec<String>>::new());
}

/// A crate that does no I/O is caught doing some.
#[test]
fn io_in_a_pure_crate_is_seen() {
    let code =
        code_lines("fn f() {\n    let _ = std::fs::read(\"x\");\n}\n// std::net in a comment\n");
    let found = io_in("crates/cache/src/x.rs", &code);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("crates/cache/src/x.rs:2: `std::fs`"),
        "{found:?}"
    );
}
