//! A crate's files as modules, and every path between them whatever its spelling: `crate::`
//! paths, `super::` and `self::` paths, a `mod.rs`'s own children named bare, groups in `use`
//! trees, globs, and names re-exported by a `use` (followed to the file that defines them),
//! in `use` declarations and in code alike.
//!
//! rustfmt's layout and Rust's own rules make a reading without a parser exact enough: an
//! item's name follows its keyword, a `use` ends at its semicolon, and a path's segments are
//! identifiers joined by `::`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One file of a crate.
#[derive(Debug, Default)]
pub(crate) struct Module {
    /// Its path from the crate's root: `[]` for lib.rs or main.rs, `["worker", "epoll"]`
    /// for `worker/epoll/mod.rs` or `worker/epoll.rs`.
    pub(crate) path: Vec<String>,
    /// Child modules it declares (`mod x;`).
    pub(crate) children: BTreeSet<String>,
    /// Names of the items it defines.
    pub(crate) items: BTreeSet<String>,
    /// Its `use` declarations, one leaf each: the path, and the name it brings in (`*` for a
    /// glob).
    pub(crate) uses: Vec<(Vec<String>, String)>,
    /// The names its `pub` (or `pub(...)`) `use` declarations re-export.
    pub(crate) exports: BTreeSet<String>,
    /// Paths written in its code outside `use` declarations.
    pub(crate) paths: Vec<Vec<String>>,
}

/// A crate: its modules by file.
pub(crate) struct Crate {
    pub(crate) modules: BTreeMap<PathBuf, Module>,
}

impl Crate {
    /// Reads `files` (under `src`) with `code` giving each file's lines without test code.
    pub(crate) fn read(src: &Path, files: &[(PathBuf, String)]) -> Crate {
        let mut modules = BTreeMap::new();
        for (file, code) in files {
            let mut module = parse(code);
            module.path = module_path(src, file);
            modules.insert(file.clone(), module);
        }
        Crate { modules }
    }

    /// The file of module `path`, if the crate has one.
    fn file_of(&self, path: &[String]) -> Option<&PathBuf> {
        self.modules
            .iter()
            .find(|(_, m)| m.path == path)
            .map(|(f, _)| f)
    }

    /// Every file each file's paths name, itself left out.
    pub(crate) fn graph(&self) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
        let mut graph = BTreeMap::new();
        for (file, module) in &self.modules {
            let mut named = BTreeSet::new();
            let leaves = module.uses.iter().map(|(path, name)| {
                let mut p = path.clone();
                if name == "*" {
                    p.push("*".into());
                }
                p
            });
            for path in leaves.chain(module.paths.iter().cloned()) {
                if let Some(target) = self.resolve(file, &path, 0) {
                    named.insert(target);
                }
            }
            named.remove(file);
            graph.insert(file.clone(), named);
        }
        graph
    }

    /// The file a path written in `from` names; `None` for a path outside the crate.
    pub(crate) fn resolve(&self, from: &PathBuf, path: &[String], depth: u32) -> Option<PathBuf> {
        let module = &self.modules[from];
        let (mut at, rest) = start(module, path)?;
        if rest.is_empty() || depth > 8 {
            return self.file_of(&at).cloned();
        }
        let mut i = 0;
        while i < rest.len() {
            let mut deeper = at.clone();
            deeper.push(rest[i].clone());
            if self.file_of(&deeper).is_some() {
                at = deeper;
                i += 1;
            } else {
                break;
            }
        }
        let file = self.file_of(&at)?.clone();
        match rest.get(i) {
            None => Some(file),
            Some(name) if name == "*" || name == "self" => Some(file),
            Some(name) => Some(self.defining(&file, name, depth).unwrap_or(file)),
        }
    }

    /// The file that defines `name` as `file` sees it: the file itself, or where a `use` of
    /// it leads.
    fn defining(&self, file: &PathBuf, name: &str, depth: u32) -> Option<PathBuf> {
        self.found(file, name, depth, false)
    }

    /// [`Crate::defining`]; `exported`: only what the file defines or re-exports counts (a
    /// glob brings a module's public names, not what it imported for itself).
    fn found(&self, file: &PathBuf, name: &str, depth: u32, exported: bool) -> Option<PathBuf> {
        let module = &self.modules[file];
        if module.items.contains(name) {
            return Some(file.clone());
        }
        let by_name = module
            .uses
            .iter()
            .find(|(_, n)| n == name && (!exported || module.exports.contains(name)));
        if let Some((path, _)) = by_name {
            return self.resolve(file, path, depth + 1);
        }
        if depth > 8 {
            return None;
        }
        // A glob (`pub use a::*`) brings the name if the module it names has it.
        module
            .uses
            .iter()
            .filter(|(_, n)| n == "*")
            .filter_map(|(path, _)| self.resolve(file, path, depth + 1))
            .filter(|glob| glob != file)
            .find_map(|glob| self.found(&glob, name, depth + 1, true))
    }
}

/// Where a path written in `module` starts, and the rest of it; `None` when it leaves the
/// crate (another crate's, or the standard library's).
fn start(module: &Module, path: &[String]) -> Option<(Vec<String>, Vec<String>)> {
    let first = path.first()?;
    let mut at = module.path.clone();
    let mut rest = path;
    match first.as_str() {
        "crate" => {
            at.clear();
            rest = &path[1..];
        }
        "self" => rest = &path[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                at.pop()?;
                rest = &rest[1..];
            }
        }
        name if module.children.contains(name) => {}
        name => {
            // A name this file imported: the path continues from where the import leads.
            let (imported, _) = module
                .uses
                .iter()
                .find(|(p, n)| n == name && !p.is_empty() && local_root(module, p))?;
            let mut joined = imported.clone();
            joined.extend(path[1..].iter().cloned());
            if joined == path {
                return None;
            }
            return start(module, &joined);
        }
    }
    Some((at, rest.to_vec()))
}

/// True when a `use` path begins inside the crate.
fn local_root(module: &Module, path: &[String]) -> bool {
    matches!(path[0].as_str(), "crate" | "self" | "super") || module.children.contains(&path[0])
}

/// A file's module path from the crate's `src` directory.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file
        .strip_prefix(src)
        .expect("a crate's file is under its src");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    let root = parts.is_empty() && matches!(stem, "lib" | "main");
    if stem != "mod" && !root {
        parts.push(stem.to_owned());
    }
    parts
}

/// Reads one file's code (test code already left out).
pub(crate) fn parse(code: &str) -> Module {
    let text = strip(code);
    let mut module = Module::default();
    let words: Vec<&str> = tokens(&text);
    let mut i = 0;
    while i < words.len() {
        match words[i] {
            "mod" if words.get(i + 2) == Some(&";") => {
                module.children.insert(words[i + 1].to_owned());
                module.items.insert(words[i + 1].to_owned());
            }
            "struct" | "enum" | "trait" | "type" | "fn" | "const" | "static" | "union" | "mod" => {
                if let Some(name) = words.get(i + 1).filter(|w| is_ident(w)) {
                    module.items.insert((*name).to_owned());
                }
            }
            "macro_rules" => {
                if let Some(name) = words.get(i + 2).filter(|w| is_ident(w)) {
                    module.items.insert((*name).to_owned());
                }
            }
            "use" => {
                let end = words[i..]
                    .iter()
                    .position(|w| *w == ";")
                    .map_or(words.len(), |e| i + e);
                let before = module.uses.len();
                use_tree(&words[i + 1..end], &[], &mut module.uses);
                // `pub use` or `pub(crate) use`: the names are re-exported.
                if i > 0 && matches!(words[i - 1], "pub" | ")") {
                    let names = module.uses[before..].iter().map(|(_, n)| n.clone());
                    module.exports.extend(names);
                }
                i = end;
            }
            _ => {
                if let Some(path) = path_at(&words, i) {
                    i += path.len() * 2 - 1;
                    module.paths.push(path);
                    continue;
                }
            }
        }
        i += 1;
    }
    module
}

/// A path of two segments or more starting at `words[i]`, if one does (and does not continue
/// one that began earlier).
fn path_at(words: &[&str], i: usize) -> Option<Vec<String>> {
    // A path that continues one begun earlier, or names a visibility (`pub(in crate::a)`).
    if i > 0 && matches!(words[i - 1], "::" | "in") {
        return None;
    }
    let mut path = vec![words[i].to_owned()];
    let mut j = i;
    while words.get(j + 1) == Some(&"::") && words.get(j + 2).is_some_and(|w| is_ident(w)) {
        path.push(words[j + 2].to_owned());
        j += 2;
    }
    (path.len() > 1 && is_ident(&path[0])).then_some(path)
}

/// The leaves of a `use` tree's `words` under `prefix`, into `out`.
fn use_tree(words: &[&str], prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    let mut branches = Vec::new();
    let mut depth = 0;
    let mut from = 0;
    for (k, w) in words.iter().enumerate() {
        match *w {
            "{" => depth += 1,
            "}" => depth -= 1,
            "," if depth == 0 => {
                branches.push(&words[from..k]);
                from = k + 1;
            }
            _ => {}
        }
    }
    branches.push(&words[from..]);
    for branch in branches.into_iter().filter(|b| !b.is_empty()) {
        leaf(branch, prefix, out);
    }
}

fn leaf(words: &[&str], prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    let mut path = prefix.to_vec();
    let mut k = 0;
    while k < words.len() {
        match words[k] {
            "::" | "pub" | "(" | ")" => {}
            "{" => {
                let inner = &words[k + 1..words.len() - 1];
                use_tree(inner, &path, out);
                return;
            }
            "*" => {
                out.push((path, "*".into()));
                return;
            }
            "as" => {
                let alias = words.get(k + 1).copied().unwrap_or("_");
                out.push((path, alias.to_owned()));
                return;
            }
            w => path.push(w.to_owned()),
        }
        k += 1;
    }
    let name = match path.last().map(String::as_str) {
        Some("self") => {
            path.pop();
            path.last().cloned().unwrap_or_default()
        }
        Some(last) => last.to_owned(),
        None => return,
    };
    out.push((path, name));
}

fn is_ident(word: &str) -> bool {
    word.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && word.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// The code without comments and string literals.
fn strip(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => in_string = false,
                '\n' => out.push('\n'),
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push_str("\"\"");
            }
            // A char literal ('x', '\n'), not a lifetime: its quote mark is no string's.
            '\'' => {
                let mut ahead = chars.clone();
                match (ahead.next(), ahead.next()) {
                    (Some('\\'), _) => {
                        chars.next();
                        chars.next();
                        while chars.next().is_some_and(|c| c != '\'') {}
                    }
                    (Some(_), Some('\'')) => {
                        chars.next();
                        chars.next();
                    }
                    _ => out.push(c),
                }
            }
            // A raw string: r"..." or r#"..."#.
            'r' if matches!(chars.peek(), Some('"' | '#')) => {
                let mut hashes = 0;
                while chars.peek() == Some(&'#') {
                    chars.next();
                    hashes += 1;
                }
                if chars.peek() != Some(&'"') {
                    out.push('r');
                    out.extend(std::iter::repeat_n('#', hashes));
                    continue;
                }
                chars.next();
                let close: String = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let mut seen = String::new();
                for c in chars.by_ref() {
                    seen.push(c);
                    if seen.ends_with(&close) {
                        break;
                    }
                }
                out.push_str("\"\"");
            }
            '/' if chars.peek() == Some(&'/') => {
                while chars.peek().is_some_and(|c| *c != '\n') {
                    chars.next();
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Identifiers, `::`, and single punctuation marks.
fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(&text[start..i]);
            continue;
        }
        if c == b':' && bytes.get(i + 1) == Some(&b':') {
            out.push("::");
            i += 2;
            continue;
        }
        if !c.is_ascii_whitespace() && c.is_ascii() {
            out.push(&text[i..i + 1]);
        }
        i += 1;
    }
    out
}
