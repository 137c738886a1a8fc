//! Reading the workspace as text for the checks in `tests/architecture.rs`: each crate's source
//! modules and the `crate::…` paths between them (to find module cycles), and each crate's
//! declared dependencies (to check the direction of the architecture). Deliberately simple: it
//! reads `use crate::…`, `crate::…` and `super::…` paths, and `pub use` re-exports of the crate
//! root, which is how this workspace writes them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The top-level module a source file belongs to (`store/sqlite.rs` → `store`), or None for
/// the crate root (`lib.rs`, `main.rs`).
pub fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_string_lossy().to_string();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (name != "lib" && name != "main").then_some(name)
}

fn ident_at(s: &str) -> String {
    s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// Identifiers named right after `crate::` in `text`, including those inside `crate::{a, b::c}`.
pub fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            // A group: take the first identifier of each comma-separated item at depth 0.
            let mut depth = 0;
            let mut item_start = true;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_alphanumeric() || c == '_') => {
                        out.insert(ident_at(&group[k..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident_at(after));
        }
        rest = &rest[i + 1..];
    }
    out
}

/// The items the crate root re-exports (`pub use module::{A, B}` / `pub use module::A`), mapped
/// to the module they come from.
pub fn root_reexports(root_text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in root_text.lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let rest = rest.trim_end_matches(';');
        let Some((module, items)) = rest.split_once("::") else { continue };
        let items = items.trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let name = item.split("::").last().unwrap_or("").trim();
            let name = name.rsplit(" as ").next().unwrap_or(name).trim();
            if !name.is_empty() {
                out.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    out
}

/// Edges between the top-level modules of the crate whose sources are in `src`.
pub fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = rust_files(src);
    let root_text = ["lib.rs", "main.rs"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(src.join(f)).ok())
        .collect::<Vec<_>>()
        .join("\n");
    let reexports = root_reexports(&root_text);
    // A folder that groups modules by context (`engine/drain.rs`, re-exported at the root as
    // `drain`) is a grouping, not a module: each module in it is a node of its own.
    let grouped = |f: &Path| -> Option<String> {
        let rel = f.strip_prefix(src).ok()?;
        let mut parts = rel.components().map(|c| c.as_os_str().to_string_lossy().to_string());
        let folder = parts.next()?;
        let child = parts.next()?;
        let child = child.strip_suffix(".rs").unwrap_or(&child).to_string();
        (reexports.get(&child) == Some(&folder)).then_some(child)
    };
    let module_of = |f: &Path| grouped(f).or_else(|| top_module(src, f));
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for f in &files {
        let Some(from) = module_of(f) else { continue };
        let text = std::fs::read_to_string(f).unwrap_or_default();
        // Tests inside a module may reach anywhere, and comments (doc links) are not code:
        // neither is part of a module's dependencies.
        let text = text.split("#[cfg(test)]").next().unwrap_or("");
        let text: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let text = text.as_str();
        for name in crate_paths(text) {
            let to = if modules.contains(&name) {
                Some(name)
            } else {
                reexports.get(&name).cloned().filter(|m| modules.contains(m))
            };
            if let Some(to) = to.filter(|t| *t != from) {
                graph.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

/// A cycle in `graph`, if there is one (as the list of modules around it).
pub fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == m).unwrap_or(0);
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(m, graph, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The `[dependencies]` (not dev-dependencies) a crate's manifest declares.
pub fn dependencies(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).unwrap_or_default();
    let Ok(value) = text.parse::<toml::Table>() else {
        return BTreeSet::new();
    };
    value
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crate_paths_read_groups_and_plain_paths() {
        let t = "use crate::{a::X, b, c::{d, e}};\nlet x = crate::f::g();\nuse crate::h;";
        let got: Vec<String> = crate_paths(t).into_iter().collect();
        assert_eq!(got, ["a", "b", "c", "f", "h"]);
    }

    #[test]
    fn a_cycle_is_found_and_a_dag_has_none() {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        g.insert("a".into(), ["b".to_string()].into());
        g.insert("b".into(), ["c".to_string()].into());
        g.insert("c".into(), BTreeSet::new());
        assert_eq!(find_cycle(&g), None);
        g.get_mut("c").unwrap().insert("a".into());
        assert_eq!(find_cycle(&g).unwrap(), ["a", "b", "c", "a"]);
    }

    #[test]
    fn reexports_point_at_their_module() {
        let r = root_reexports("pub use outbox::Outbox;\npub use store::sqlite::{SqliteOptions, SqliteStore};\n");
        assert_eq!(r.get("Outbox").map(String::as_str), Some("outbox"));
        assert_eq!(r.get("SqliteStore").map(String::as_str), Some("store"));
    }
}
