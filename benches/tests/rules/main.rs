//! The source rules of docs/ARCHITECTURE.md ("Rules the code keeps"), checked on every test
//! run so they hold by themselves:
//!
//! - no source file over 600 lines, not counting a trailing `#[cfg(test)] mod tests`;
//! - no function over 80 lines outside `#[cfg(test)]` code;
//! - no circle of `crate::` paths between the files of a crate.
//!
//! An exception is named in ARCHITECTURE.md's list under "Exceptions to the rules", one line
//! each: `` - `path` `` for a file, `` - `path` `name` `` for a function, `` - circle `a.rs` ``
//! for the circles through a file, each with its reason after a colon. The check also fails
//! when a listed exception no longer breaks the rule, so the list stays true.
//!
//! rustfmt's layout is what makes a line-based reading exact enough: an item's closing
//! brace sits alone on a line at the item's own indentation.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_FILE: usize = 600;
const MAX_FN: usize = 80;

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

/// The file a `crate::a::b` path names, among a crate's files.
fn target(src: &Path, segments: &[&str], files: &BTreeSet<PathBuf>) -> Option<PathBuf> {
    for n in (1..=segments.len()).rev() {
        let base: PathBuf = segments[..n].iter().collect();
        for candidate in [
            src.join(&base).with_extension("rs"),
            src.join(&base).join("mod.rs"),
        ] {
            if files.contains(&candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

/// Every `crate::` path in a file's code, as the files they name.
fn references(src: &Path, code: &[(usize, &str)], files: &BTreeSet<PathBuf>) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    for (_, line) in code {
        let line = line.split("//").next().unwrap_or("");
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + "crate::".len()..];
            if before.is_some_and(ident) {
                continue;
            }
            let path: String = rest.chars().take_while(|&c| ident(c) || c == ':').collect();
            let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            // `use crate::{a, b::c}`: each branch.
            if rest[path.len()..].starts_with('{') || segments.is_empty() {
                let group: String = rest[path.len()..]
                    .trim_start_matches('{')
                    .chars()
                    .take_while(|&c| c != '}')
                    .collect();
                for branch in group.split(',') {
                    let full: Vec<&str> = segments
                        .iter()
                        .copied()
                        .chain(branch.trim().split("::").map(str::trim))
                        .filter(|s| !s.is_empty() && s.chars().all(ident))
                        .collect();
                    out.extend(target(src, &full, files));
                }
            } else {
                out.extend(target(src, &segments, files));
            }
        }
    }
    out
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
        let set: BTreeSet<PathBuf> = files.iter().cloned().collect();
        let mut graph = BTreeMap::new();
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
            let mut refs = references(&src, &code, &set);
            refs.remove(file);
            graph.insert(file.clone(), refs);
        }
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
                report.push(format!("a circle of crate:: paths: {}", shown.join(" -> ")));
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
