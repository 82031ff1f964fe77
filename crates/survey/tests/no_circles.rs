//! No circle of files in this crate: a module that uses another is never
//! used back by it, directly or through others, so each file can be read
//! (and moved) after the ones it uses. Read from the sources' `crate::`
//! paths, which is how a module of this crate names another.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name -> the modules of this crate it names.
fn uses(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(src).expect("read src") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let name = path
            .file_stem()
            .expect("a file name")
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&path).expect("read file");
        let mut named = BTreeSet::new();
        for (i, _) in text.match_indices("crate::") {
            let rest = &text[i + "crate::".len()..];
            // `crate::{a, b::C}` names several.
            let list = match rest.strip_prefix('{') {
                Some(r) => r.split('}').next().unwrap_or("").to_string(),
                None => rest.to_string(),
            };
            for part in list.split(',') {
                let m: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !m.is_empty() && m != name && m.chars().next().is_some_and(|c| c.is_lowercase())
                {
                    named.insert(m);
                }
                if rest.starts_with('{') {
                    continue;
                }
                break;
            }
        }
        graph.insert(name, named);
    }
    graph
}

/// A circle in `graph`, as the modules on it, if there is one.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            return Some(path[at..].to_vec());
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for next in graph.get(m).into_iter().flatten() {
            if graph.contains_key(next) {
                if let Some(c) = visit(next, graph, path, done) {
                    return Some(c);
                }
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_survey_crate_has_no_circle_of_files() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = uses(&src);
    assert!(
        graph["obdfilter"].contains("remote"),
        "the reader sees uses: {graph:?}"
    );
    assert_eq!(circle(&graph), None, "{graph:?}");
}

#[test]
fn a_circle_is_found() {
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    g.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(circle(&g).map(|c| c.len()), Some(3));
}
