//! The crates' files form no circle: for every crate, the files under
//! `src/` (one module each) and the references between them (`use
//! crate::...`, `super::...`, `self::...` and paths through a child
//! module) make a graph with no cycle. A circle of files is a concern
//! split over several files that cannot be read, tested or moved one
//! without the others; this test keeps them from coming back and prints
//! every cycle it finds.
//!
//! The check reads the source text only (comments, string literals and
//! inline `#[cfg(test)]` modules removed); it needs no build of the
//! crates it reads.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Crates left out of the check (none: every crate is free of circles).
const EXCLUDED: &[&str] = &[];

/// One module: its path in the crate (`["e2e", "pass"]`) and its source.
struct Module {
    path: Vec<String>,
    file: PathBuf,
    text: String,
}

/// The workspace's `crates/` directory.
fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/cli has a parent")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, recursively, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file relative to `src/`: `lib.rs` and `main.rs`
/// are the root, `a/mod.rs` and `a.rs` are `a`, `a/b.rs` is `a::b`.
/// Files under `src/bin/` are crates of their own and give `None`.
fn module_path(rel: &Path) -> Option<Vec<String>> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?.to_string();
    if parts.is_empty() && (stem == "lib" || stem == "main") {
        return Some(Vec::new());
    }
    if stem != "mod" {
        parts.push(stem);
    }
    Some(parts)
}

/// `text` without its `#[cfg(test)] mod name { ... }` blocks: a unit
/// test may build its fixtures with any module of the crate (the parser,
/// the planner) without that making the file depend on them.
fn without_tests(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let head = after.trim_start();
        let Some(body) = head.strip_prefix("mod ").and_then(|h| {
            h.find('{')
                .filter(|&b| !h[..b].contains(';'))
                .map(|b| &h[b..])
        }) else {
            out.push_str("#[cfg(test)]");
            rest = after;
            continue;
        };
        let mut depth = 0usize;
        let mut end = body.len();
        for (i, ch) in body.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &body[end..];
    }
    out.push_str(rest);
    out
}

/// Source text with comments, string and char literals blanked, so
/// that paths in docs or messages are not taken for references.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == b'r'
            && matches!(b.get(i + 1), Some(b'"') | Some(b'#'))
            && !ident_before(b, i)
        {
            // Raw string r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c as char);
                i += 1;
                continue;
            }
            j += 1;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            while j < b.len() && !b[j..].starts_with(&close) {
                j += 1;
            }
            i = j + close.len();
            out.push_str("\"\"");
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&x| x == b'\'')
                    .map(|p| i + 2 + p)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    i = e + 1;
                    out.push_str("' '");
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            // Copy one UTF-8 character whole.
            let len = utf8_len(c);
            out.push_str(&src[i..i + len]);
            i += len;
        }
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path in `text` with at least one `::`, as its segments. A
/// `use a::{b::c, d}` tree gives `a::b::c` and `a::d`.
fn paths(text: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if is_ident(chars[i]) && (i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':')) {
            let (found, next) = path_at(&chars, i, Vec::new());
            out.extend(found);
            i = next.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Reads the path starting at `i` (after `prefix`), expanding `{...}`
/// groups; returns the paths found and where reading stopped.
fn path_at(chars: &[char], mut i: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut segs = prefix;
    loop {
        let start = i;
        while i < chars.len() && is_ident(chars[i]) {
            i += 1;
        }
        if i > start {
            segs.push(chars[start..i].iter().collect());
        }
        let mut j = i;
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        if chars.get(j) == Some(&':') && chars.get(j + 1) == Some(&':') {
            i = j + 2;
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            if chars.get(i) == Some(&'{') {
                return group(chars, i + 1, segs);
            }
            continue;
        }
        let found = if segs.len() > 1 {
            vec![segs]
        } else {
            Vec::new()
        };
        return (found, i);
    }
}

/// Reads a `{a, b::c, ...}` group after `prefix`, up to its `}`.
fn group(chars: &[char], mut i: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut out = vec![prefix.clone()];
    while i < chars.len() {
        match chars[i] {
            '}' => return (out, i + 1),
            c if is_ident(c) => {
                let (found, next) = path_at(chars, i, prefix.clone());
                if found.is_empty() {
                    // A single name: prefix::name.
                    let start = i;
                    let mut k = i;
                    while k < chars.len() && is_ident(chars[k]) {
                        k += 1;
                    }
                    let mut p = prefix.clone();
                    p.push(chars[start..k].iter().collect());
                    out.push(p);
                }
                out.extend(found);
                i = next.max(i + 1);
            }
            '{' => {
                let (found, next) = group(chars, i + 1, prefix.clone());
                out.extend(found);
                i = next;
            }
            _ => i += 1,
        }
    }
    (out, i)
}

/// The names of the modules `text` declares with `mod name;` (files).
fn child_modules(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(k) = words.iter().position(|w| *w == "mod") {
            if let Some(name) = words.get(k + 1).and_then(|w| w.strip_suffix(';')) {
                out.insert(name.to_string());
            }
        }
    }
    out
}

/// The module a path reaches, as the longest prefix that is a file
/// module, for paths starting at `crate`, `super`, `self` or a child.
fn target(
    from: &[String],
    path: &[String],
    children: &BTreeSet<String>,
    known: &BTreeSet<Vec<String>>,
    aliases: &BTreeMap<String, Vec<String>>,
) -> Option<Vec<String>> {
    let mut base: Vec<String> = from.to_vec();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &path[1..];
            if let Some(real) = rest.first().and_then(|n| aliases.get(n)) {
                base = real.clone();
                rest = &rest[1..];
            }
        }
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        Some("self") => rest = &path[1..],
        Some(name) if children.contains(name) => {}
        _ => return None,
    }
    let mut best = base.clone();
    let mut cur = base;
    for seg in rest {
        cur.push(seg.clone());
        if known.contains(&cur) {
            best = cur.clone();
        } else {
            break;
        }
    }
    Some(best)
}

/// Modules the crate root re-exports under a name of its own (`pub use
/// run::qthread;` makes `crate::qthread` the file `run/qthread.rs`), so
/// that a path through the old name is an edge to the real file.
fn root_aliases(root: &str, known: &BTreeSet<Vec<String>>) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut rest = root;
    while let Some(at) = rest.find("use ") {
        let before_ok = at == 0 || !rest[..at].ends_with(|c: char| is_ident(c));
        let stmt_end = rest[at..].find(';').map_or(rest.len(), |e| at + e);
        if before_ok {
            for p in paths(&rest[at + 4..stmt_end]) {
                let p: Vec<String> = p.into_iter().filter(|s| s != "crate").collect();
                if p.len() > 1 && known.contains(&p) {
                    out.insert(p[p.len() - 1].clone(), p);
                }
            }
        }
        rest = &rest[(stmt_end + 1).min(rest.len())..];
    }
    out
}

/// The module graph of one crate: module -> modules it refers to.
///
/// The crate root (`lib.rs`, `main.rs`) is left out: it declares every
/// module and re-exports their items, and every module may name those
/// items through it (`crate::Error`), so it would close a circle with
/// any file. The circles that matter are between the other files; a
/// folder's `mod.rs` is one of them like any other.
fn graph(modules: &[Module]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let known: BTreeSet<Vec<String>> = modules.iter().map(|m| m.path.clone()).collect();
    let aliases = modules
        .iter()
        .find(|m| m.path.is_empty())
        .map(|root| root_aliases(&without_tests(&strip(&root.text)), &known))
        .unwrap_or_default();
    let mut g = BTreeMap::new();
    for m in modules {
        let text = without_tests(&strip(&m.text));
        let children = child_modules(&text);
        let mut to = BTreeSet::new();
        for p in paths(&text) {
            if let Some(t) = target(&m.path, &p, &children, &known, &aliases) {
                if t != m.path && !t.is_empty() && !m.path.is_empty() {
                    to.insert(t);
                }
            }
        }
        g.insert(m.path.clone(), to);
    }
    g
}

/// Every strongly connected component with more than one module
/// (Tarjan's algorithm), each sorted.
fn cycles(g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct St<'a> {
        g: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on: BTreeSet<&'a Vec<String>>,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(s: &mut St<'a>, v: &'a Vec<String>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        let g = s.g;
        for w in g.get(v).into_iter().flatten() {
            let Some((w, _)) = g.get_key_value(w) else {
                continue;
            };
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = St {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

/// The modules of the crate at `dir` (its `src/`).
fn crate_modules(dir: &Path) -> Vec<Module> {
    let src = dir.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(&src).expect("under src").to_path_buf();
            let path = module_path(&rel)?;
            let text =
                std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("read {}: {e}", f.display()));
            Some(Module {
                path,
                file: f,
                text,
            })
        })
        .collect()
}

/// Each edge inside `comp`, as "a -> b (file)", for the failure text.
fn describe(
    comp: &[Vec<String>],
    g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
    modules: &[Module],
) -> String {
    let mut lines = Vec::new();
    for a in comp {
        let file = modules
            .iter()
            .find(|m| &m.path == a)
            .map(|m| m.file.display().to_string())
            .unwrap_or_default();
        for b in g.get(a).into_iter().flatten().filter(|b| comp.contains(b)) {
            lines.push(format!("    {} -> {}   ({file})", show(a), show(b)));
        }
    }
    lines.join("\n")
}

#[test]
fn no_crate_has_a_circle_of_files() {
    let root = crates_dir();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("read crates/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    dirs.sort();
    let mut report = Vec::new();
    let mut checked = 0;
    for dir in dirs {
        let name = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        if EXCLUDED.contains(&name.as_str()) {
            continue;
        }
        checked += 1;
        let modules = crate_modules(&dir);
        let g = graph(&modules);
        for comp in cycles(&g) {
            let names: Vec<String> = comp.iter().map(|m| show(m)).collect();
            report.push(format!(
                "crate {name}: circle of {}\n{}",
                names.join(", "),
                describe(&comp, &g, &modules)
            ));
        }
    }
    assert!(
        checked > 10,
        "only {checked} crates found under {}",
        root.display()
    );
    assert!(
        report.is_empty(),
        "circles of files:\n{}",
        report.join("\n")
    );
}

#[test]
fn the_check_sees_a_circle_and_ignores_comments() {
    let m = |path: &[&str], text: &str| Module {
        path: path.iter().map(|s| s.to_string()).collect(),
        file: PathBuf::from(path.join("/")),
        text: text.to_string(),
    };
    let modules = vec![
        m(&[], "mod a;\nmod b;\nmod c;\n"),
        m(&["a"], "use crate::b::{x, y::Z};\n"),
        m(&["b"], "fn f() { super::c::g(); }\n"),
        m(&["c"], "// crate::a::T\nconst S: &str = \"crate::a::T\";\n"),
    ];
    assert!(cycles(&graph(&modules)).is_empty());
    let mut modules = modules;
    modules[3] = m(&["c"], "fn g() -> crate::a::T { todo!() }\n");
    let found = cycles(&graph(&modules));
    assert_eq!(found.len(), 1, "{:?}", found);
    assert_eq!(found[0].len(), 3);
    // A parent and the child module it names form a circle too.
    let modules = vec![
        m(&[], "mod p;\n"),
        m(&["p"], "mod q;\npub struct S;\nfn f() { q::g(); }\n"),
        m(&["p", "q"], "use super::S;\npub fn g() {}\n"),
    ];
    assert_eq!(cycles(&graph(&modules)).len(), 1);
    // A module re-exported by the root under its old name is still the
    // file it lives in.
    let modules = vec![
        m(&[], "mod st;\npub use st::{a, b};\n"),
        m(&["st"], "pub mod a;\npub mod b;\n"),
        m(&["st", "a"], "use crate::b::X;\n"),
        m(&["st", "b"], "pub fn g() -> crate::a::T { todo!() }\n"),
    ];
    assert_eq!(cycles(&graph(&modules)).len(), 1);
    // A unit test may use any module to build its fixtures.
    let modules = vec![
        m(&[], "mod a;\nmod b;\n"),
        m(&["a"], "pub fn f() { crate::b::g() }\n"),
        m(&["b"], "pub fn g() {}\n#[cfg(test)]\nmod tests {\n    use crate::a::f;\n    #[test]\n    fn t() { f(); }\n}\n"),
    ];
    assert!(cycles(&graph(&modules)).is_empty());
}

/// The dependency list of docs/architecture.md (its `crate -> deps`
/// lines) is what the crates' `Cargo.toml` files declare: every crate
/// has one line, naming exactly the iolab crates of its `[dependencies]`.
/// The map a newcomer reads first is then never an old one.
#[test]
fn the_architecture_pages_dependency_list_is_cargos() {
    let root = crates_dir();
    let doc_path = root.join("../docs/architecture.md");
    let doc = std::fs::read_to_string(&doc_path)
        .unwrap_or_else(|e| panic!("read {}: {e}", doc_path.display()));
    let (documented, mut wrong) = documented_deps(&doc);
    let mut declared = BTreeMap::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("read crates/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let toml = std::fs::read_to_string(dir.join("Cargo.toml")).expect("read Cargo.toml");
        declared.insert(name, cargo_deps(&toml));
    }
    assert!(declared.len() > 10, "only {} crates found", declared.len());
    for (name, deps) in &declared {
        match documented.get(name) {
            None => wrong.push(format!("{name}: no line (`{name} -> ...`)")),
            Some(d) if d != deps => wrong.push(format!(
                "{name}: the page says -> {}; Cargo.toml says -> {}",
                join(d),
                join(deps)
            )),
            Some(_) => {}
        }
    }
    for name in documented.keys().filter(|n| !declared.contains_key(*n)) {
        wrong.push(format!("{name}: listed, but there is no crates/{name}"));
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md's dependency list is not the Cargo.toml files':\n{}",
        wrong.join("\n")
    );
}

#[test]
fn dependency_lists_are_read_from_the_page_and_cargo() {
    let (d, wrong) =
        documented_deps("a -> b\n```text\ncli  -> core net\ncore -> (none)\ncore -> net\n```\n");
    assert_eq!(d.len(), 2);
    assert_eq!(join(&d["cli"]), "core net");
    assert_eq!(wrong.len(), 1, "{wrong:?}");
    let toml = "[package]\nname = \"iolab-x\"\n[dependencies]\niolab-core.workspace = true\n\
                # iolab-gone = 1\niolab-net = { workspace = true }\nlibc = \"0.2\"\n\
                [dev-dependencies]\niolab-testkit.workspace = true\n";
    assert_eq!(join(&cargo_deps(toml)), "core net");
}

fn join(s: &BTreeSet<String>) -> String {
    match s.is_empty() {
        true => "(none)".into(),
        false => s.iter().cloned().collect::<Vec<_>>().join(" "),
    }
}

/// The `name -> deps` lines of the page's fenced blocks (words in
/// parentheses are not crates), and a complaint for each crate listed twice.
fn documented_deps(doc: &str) -> (BTreeMap<String, BTreeSet<String>>, Vec<String>) {
    let mut out = BTreeMap::new();
    let mut wrong = Vec::new();
    let mut fenced = false;
    for line in doc.lines() {
        // A fence line, not a code span that starts a line (```` ```x ````).
        let t = line.trim_start();
        if t.starts_with("```") && !t[3..].contains('`') {
            fenced = !fenced;
            continue;
        }
        let Some((name, deps)) = line.split_once(" -> ").filter(|_| fenced) else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(is_ident) {
            continue;
        }
        let deps: BTreeSet<String> = deps
            .split_whitespace()
            .filter(|w| !w.starts_with('('))
            .map(String::from)
            .collect();
        if out.insert(name.to_string(), deps).is_some() {
            wrong.push(format!("{name}: listed twice"));
        }
    }
    (out, wrong)
}

/// The iolab crates a Cargo.toml names under `[dependencies]`, without
/// the `iolab-` prefix (dev-dependencies and comments left out).
fn cargo_deps(toml: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut section = "";
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        if section != "[dependencies]" {
            continue;
        }
        if let Some(rest) = line.strip_prefix("iolab-") {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(rest.len());
            out.insert(rest[..end].to_string());
        }
    }
    out
}

/// The table of outside crates on docs/architecture.md (first cells of
/// the rows under `## Crates from crates.io`) names exactly the root
/// Cargo.toml's `[workspace.dependencies]` that are not iolab's own.
#[test]
fn the_architecture_pages_outside_crates_are_the_workspaces() {
    let root = crates_dir().join("..");
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).expect("read the page");
    let toml = std::fs::read_to_string(root.join("Cargo.toml")).expect("read Cargo.toml");
    let listed = outside_crates_table(&doc);
    let declared = workspace_dependencies(&toml);
    assert!(declared.len() > 10, "{declared:?}");
    let missing: Vec<&String> = declared.difference(&listed).collect();
    let extra: Vec<&String> = listed.difference(&declared).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/architecture.md's table of crates from crates.io differs from [workspace.dependencies]:\n\
         not in the table (add a row saying what it is for): {missing:?}\n\
         in the table but not a dependency: {extra:?}"
    );
}

#[test]
fn outside_crates_are_read_from_the_table_and_cargo() {
    let doc = "## Crates from crates.io\n\n| crate | for |\n| --- | --- |\n\
               | `a`, `b-c` | x `not_me` |\n| `d` | y |\n\n## Next\n| `e` | z |\n";
    assert_eq!(join(&outside_crates_table(doc)), "a b-c d");
    let toml = "[workspace]\n[workspace.dependencies]\niolab-core = { path = \"crates/core\" }\n\
                # comment = 1\nlibc = \"0.2\"\nserde = { version = \"1\" }\n\n[profile.release]\ndebug = 1\n";
    assert_eq!(join(&workspace_dependencies(toml)), "libc serde");
}

/// The backticked names in the first cell of each row of the page's
/// `## Crates from crates.io` table.
fn outside_crates_table(doc: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut inside = false;
    for line in doc.lines() {
        if line.starts_with("## ") {
            inside = line.trim() == "## Crates from crates.io";
            continue;
        }
        let Some(first) = line.strip_prefix('|').filter(|_| inside) else {
            continue;
        };
        let cell = first.split('|').next().unwrap_or("");
        out.extend(
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(String::from),
        );
    }
    out
}

/// The names under the root Cargo.toml's `[workspace.dependencies]`
/// that are not iolab crates.
fn workspace_dependencies(toml: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut inside = false;
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[workspace.dependencies]";
            continue;
        }
        let Some((name, _)) = line.split_once('=').filter(|_| inside) else {
            continue;
        };
        let name = name.trim();
        if !name.starts_with('#') && !name.starts_with("iolab-") {
            out.insert(name.to_string());
        }
    }
    out
}

/// Where each thing every run needs may be done (issue 31, "the
/// runner's shape"): a rule is a needle, the files (relative to
/// `crates/`) allowed to hold it, and which crates' sources are read.
struct OnePlace {
    needle: &'static str,
    allowed: &'static [&'static str],
    crates: &'static [&'static str],
    why: &'static str,
}

/// Every crate of the workspace (for the rules that read them all).
const ALL: &[&str] = &["*"];

const ONE_PLACE: &[OnePlace] = &[
    OnePlace {
        needle: "Envelope::new(",
        allowed: &["results/src/lib.rs", "cli/src/runner/envelope.rs"],
        crates: ALL,
        why: "a run's results envelope is made by the runner alone (cli/src/runner/envelope.rs)",
    },
    OnePlace {
        needle: "Envelope {",
        allowed: &[
            "results/src/lib.rs",
            // A stored run read back from the store's columns.
            "store/src/query.rs",
        ],
        crates: ALL,
        why: "a run's results envelope is made by the runner alone (cli/src/runner/envelope.rs); readers reassemble it",
    },
    OnePlace {
        needle: "StoreHook::open",
        allowed: &["cli/src/runner/run.rs", "cli/src/runner/store.rs"],
        crates: &["cli"],
        why: "--store is opened by the runner (Run::open)",
    },
    OnePlace {
        needle: "Hook::load",
        allowed: &["cli/src/runner/run.rs", "cli/src/runner/stats.rs"],
        crates: &["cli"],
        why: "--stats is loaded by the runner (Run::open)",
    },
    OnePlace {
        needle: "host_info()",
        allowed: &["cli/src/runner/envelope.rs", "cli/src/runner/mod.rs"],
        crates: &["cli", "report"],
        why: "the host the results state is read by the runner; formatters are pure",
    },
    OnePlace {
        needle: "wall_ns()",
        allowed: &[],
        crates: &["report"],
        why: "formatters are pure functions of their input and never read the clock",
    },
    OnePlace {
        needle: "eprintln!(",
        allowed: &[
            // The tests' fixtures and the MPI self-test program.
            "testkit/src/bin/iolab-delayfs.rs",
            "testkit/src/s3.rs",
            "comm/src/bin/mpi_selftest.rs",
        ],
        crates: ALL,
        why: "standard error goes through iolab_core::say! (eprintln! panics when stderr cannot be written: 2>/dev/full ended runs with 101)",
    },
    OnePlace {
        needle: "ExitCode",
        allowed: &["cli/src/exit.rs", "cli/src/main.rs"],
        crates: &["cli"],
        why: "a subcommand returns how it ended (exit::Ended); exit::end alone makes the status",
    },
];

/// The files of `crates` (all with `*`) as (path relative to `crates/`,
/// source without comments, strings and unit tests).
fn sources(crates: &[&str]) -> Vec<(String, String)> {
    let root = crates_dir();
    let mut names: Vec<String> = match crates {
        ["*"] => std::fs::read_dir(&root)
            .expect("crates/")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| root.join(n).join("src").is_dir())
            .collect(),
        some => some.iter().map(|s| s.to_string()).collect(),
    };
    names.sort();
    let mut out = Vec::new();
    for n in names {
        let mut files = Vec::new();
        rust_files(&root.join(&n).join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).expect("read source");
            let rel = f
                .strip_prefix(&root)
                .expect("under crates/")
                .display()
                .to_string();
            out.push((rel, strip(&without_tests(&text))));
        }
    }
    out
}

/// The places that break `rule`: "file: why".
fn misplaced(rule: &OnePlace, files: &[(String, String)]) -> Vec<String> {
    files
        .iter()
        .filter(|(rel, text)| !rule.allowed.contains(&rel.as_str()) && text.contains(rule.needle))
        .map(|(rel, _)| format!("{rel}: `{}`: {}", rule.needle, rule.why))
        .collect()
}

#[test]
fn what_every_run_needs_is_done_in_one_place() {
    let mut bad = Vec::new();
    for rule in ONE_PLACE {
        bad.extend(misplaced(rule, &sources(rule.crates)));
    }
    assert!(
        bad.is_empty(),
        "done outside its one place:\n  {}",
        bad.join("\n  ")
    );
}

#[test]
fn the_one_place_check_sees_a_stray_envelope_and_ignores_comments() {
    let rule = &ONE_PLACE[0];
    let files = vec![
        (
            "cli/src/x.rs".to_string(),
            strip("fn f() { Envelope::new(a) }"),
        ),
        (
            "cli/src/y.rs".to_string(),
            strip("// Envelope::new( in a comment\n"),
        ),
        (
            "cli/src/runner/envelope.rs".to_string(),
            strip("fn make() { Envelope::new(a) }"),
        ),
    ];
    assert_eq!(misplaced(rule, &files).len(), 1);
    assert!(misplaced(rule, &files)[0].starts_with("cli/src/x.rs"));
}

/// A tool is a registry row, its engine crate and a cli module that
/// parses and describes: every row's entry is a function of the tool's
/// own module (or of a module it names), and the row type's entry
/// returns how the tool ended, not an exit status.
#[test]
fn a_tool_is_a_row_and_its_module() {
    let main = std::fs::read_to_string(crates_dir().join("cli/src/main.rs")).expect("main.rs");
    let tools = std::fs::read_to_string(crates_dir().join("cli/src/tools.rs")).expect("tools.rs");
    assert!(
        tools.contains("-> crate::exit::Ended;"),
        "the registry's entry returns exit::Ended"
    );
    let rows = main.matches("    Tool {\n").count();
    assert!(rows >= 10, "{rows} rows in TOOLS");
    let entries = main.matches("        entry: ").count();
    assert_eq!(rows, entries, "every row names its entry");
}

/// Crates whose public functions may still return `Result<_, String>`:
/// the binary (its messages are its own) and `testkit`, the tests'
/// dev-only fixtures, whose errors a test only prints (`skip_or_fail`).
const STRING_ERRORS_ALLOWED: &[&str] = &["cli", "testkit"];

/// The end of the bracketed group that opens at byte `open` of `text`
/// (`(`/`)` or `<`/`>`, a `->` not counted), as the byte of its closer.
fn group_end(text: &str, open: usize) -> Option<usize> {
    let (o, c) = match text.as_bytes().get(open)? {
        b'(' => (b'(', b')'),
        b'<' => (b'<', b'>'),
        _ => return None,
    };
    let b = text.as_bytes();
    let mut depth = 0usize;
    for i in open..b.len() {
        if b[i] == c && !(c == b'>' && i > 0 && b[i - 1] == b'-') {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        } else if b[i] == o {
            depth += 1;
        }
    }
    None
}

/// The top-level arguments of the generic list `text[open..=close]`.
fn generic_args(list: &str) -> Vec<String> {
    let inner = &list[1..list.len() - 1];
    let mut out = vec![String::new()];
    let mut depth = 0i32;
    let mut prev = ' ';
    for ch in inner.chars() {
        match ch {
            '<' | '(' | '[' => depth += 1,
            '>' if prev != '-' => depth -= 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(String::new());
                prev = ch;
                continue;
            }
            _ => {}
        }
        if let Some(last) = out.last_mut() {
            last.push(ch);
        }
        prev = ch;
    }
    out.into_iter().map(|a| a.trim().to_string()).collect()
}

/// True when a return type holds a `Result<_, String>`.
fn has_string_error(ret: &str) -> bool {
    ret.match_indices("Result<").any(|(i, m)| {
        let open = i + m.len() - 1;
        let before_ok = !ret[..i].ends_with(|c: char| is_ident(c));
        before_ok
            && group_end(ret, open).is_some_and(|close| {
                let args = generic_args(&ret[open..=close]);
                args.len() == 2 && args[1] == "String"
            })
    })
}

/// The public functions of one source text (comments, strings and unit
/// tests already removed) that return a `Result<_, String>`, by name.
/// `pub(crate)` and narrower are not public; a closure parameter's
/// `-> Result<(), String>` is not what the function returns.
fn string_error_fns(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("pub fn ") {
        if text[..at].ends_with(|c: char| is_ident(c)) {
            continue;
        }
        let rest = &text[at + "pub fn ".len()..];
        let name_len = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        let name = &rest[..name_len];
        let mut i = name_len;
        if rest[i..].starts_with('<') {
            match group_end(rest, i) {
                Some(g) => i = g + 1,
                None => continue,
            }
        }
        let Some(open) = rest[i..].find('(').map(|o| o + i) else {
            continue;
        };
        let Some(close) = group_end(rest, open) else {
            continue;
        };
        let tail = &rest[close + 1..];
        let sig = &tail[..tail.find(['{', ';']).unwrap_or(tail.len())];
        let Some(ret) = sig.trim_start().strip_prefix("->") else {
            continue;
        };
        let ret = ret.split(" where").next().unwrap_or(ret);
        let ret = ret.split("\nwhere").next().unwrap_or(ret);
        if has_string_error(ret) {
            out.push(name.to_string());
        }
    }
    out
}

/// Issue 31, the runner's shape: "the public functions of library
/// crates return no `Result<_, String>`". Libraries return typed errors
/// (thiserror) that carry what a caller needs (the option or path, the
/// underlying error as source); the binary maps them to its messages.
/// A `FromStr` whose `Err` is `String` breaks the same rule.
#[test]
fn library_crates_return_typed_errors() {
    let mut bad = Vec::new();
    for (rel, text) in sources(ALL) {
        let krate = rel.split('/').next().unwrap_or("");
        if STRING_ERRORS_ALLOWED.contains(&krate) {
            continue;
        }
        for name in string_error_fns(&text) {
            bad.push(format!("{rel}: pub fn {name} returns Result<_, String>"));
        }
        if text.contains("type Err = String") {
            bad.push(format!("{rel}: a FromStr with `type Err = String`"));
        }
    }
    assert!(
        bad.is_empty(),
        "library crates return typed errors (a thiserror enum naming the option or path), not String:\n  {}",
        bad.join("\n  ")
    );
}

#[test]
fn the_typed_error_check_reads_signatures_as_rust_does() {
    let src = strip(&without_tests(
        "pub fn a(x: u8)\n    -> Result<Vec<u8>, String> { x }\n\
         pub fn b<F: Fn(u8) -> Result<(), String>>(f: F) -> Result<u8, E> { f }\n\
         pub(crate) fn c() -> Result<(), String> {}\n\
         fn d() -> Result<(), String> {}\n\
         pub fn e(judge: impl FnOnce() -> Result<(), String>) -> Result<u8, NetError> {}\n\
         pub fn f() -> Result<Vec<String>, OptError> {}\n\
         pub fn g() -> std::io::Result<String> {}\n\
         pub fn h() -> Option<Result<u8, String>> {}\n\
         pub fn i<DB>(r: DB) -> Result<(), String>\nwhere\n    DB: Copy,\n{}\n\
         /// pub fn j() -> Result<(), String> in a comment\n\
         #[cfg(test)]\nmod tests {\n    pub fn k() -> Result<(), String> {}\n}\n",
    ));
    assert_eq!(string_error_fns(&src), ["a", "h", "i"]);
}
