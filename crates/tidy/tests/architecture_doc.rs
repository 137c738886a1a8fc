//! ARCHITECTURE.md stays a map, not an atlas: at most [`MAX_LINES`] lines, and every
//! repository path it names — in backticks or as a link — exists, so it cannot drift into
//! pointing at files that are gone.

use std::collections::BTreeSet;
use std::path::Path;

use tidy::root;

/// The most lines ARCHITECTURE.md may have; the detail of a module belongs in its `//!` docs.
const MAX_LINES: usize = 400;

/// The endings of a file name that make a backticked word a path even without a `/`.
const EXTENSIONS: [&str; 14] = [
    ".rs", ".sql", ".md", ".toml", ".json", ".ts", ".svelte", ".py", ".sh", ".yml", ".html", ".css", ".tsv", ".gz",
];

fn architecture() -> String {
    std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md at the repository root")
}

/// Every text in backticks and every link target of `text`.
fn mentions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // Code spans (single backticks; fenced blocks are drawings and skipped).
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(inside), Some(_)) = (parts.next(), parts.next()) {
            out.push(inside.to_string());
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

/// A mention that names a repository path: relative, only path characters, and with a `/` or a
/// file extension. URLs, HTTP routes (`/v1/…`), home paths, globs with `…`, Rust paths (`::`)
/// and code (`fn(x)`) are not.
fn as_path(mention: &str) -> Option<&str> {
    let m = mention.trim();
    let m = m.split('#').next().unwrap_or_default();
    let first = m.chars().next()?;
    if !(first.is_ascii_alphanumeric() || first == '.' || first == '_') {
        return None;
    }
    if !m.chars().all(|c| c.is_ascii_alphanumeric() || "._-/*".contains(c)) {
        return None;
    }
    let named_file = EXTENSIONS.iter().any(|e| m.ends_with(e));
    (m.contains('/') || named_file).then_some(m)
}

/// Whether `path` (relative to `root`, `*` allowed in its last part) names something there.
fn exists(root: &Path, path: &str) -> bool {
    let path = path.trim_end_matches('/');
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    if dir.contains('*') {
        return false;
    }
    if !name.contains('*') {
        return root.join(path).exists();
    }
    let (prefix, suffix) = name.split_once('*').unwrap_or((name, ""));
    std::fs::read_dir(root.join(dir)).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.len() >= prefix.len() + suffix.len() && n.starts_with(prefix) && n.ends_with(suffix)
        })
    })
}

#[test]
fn every_path_architecture_names_exists() {
    let root = root();
    let named: BTreeSet<String> = mentions(&architecture())
        .iter()
        .filter_map(|m| as_path(m).map(str::to_string))
        .collect();
    assert!(
        named.len() >= 10 && named.contains("docs/strategy.md"),
        "the scan must see ARCHITECTURE.md's paths in code spans and links: {named:?}"
    );
    let missing: Vec<&String> = named.iter().filter(|p| !exists(&root, p)).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist in the repository (use full paths from the root):\n  {}",
        missing.iter().map(|p| p.as_str()).collect::<Vec<_>>().join("\n  ")
    );
}

#[test]
fn architecture_is_at_most_400_lines() {
    let lines = architecture().lines().count();
    assert!(
        lines <= MAX_LINES,
        "ARCHITECTURE.md has {lines} lines (at most {MAX_LINES}): move the detail of one module into its //! docs"
    );
}

#[test]
fn the_path_scan_recognizes_paths_and_only_paths() {
    let found: Vec<&str> = [
        "crates/outbox/src/engine/drain.rs",
        "drain.rs",
        "docs/intake.md",
        "crates/outbox/sql/sqlite/",
        "ui/tests/*.test.ts",
        "postgres://postgres@127.0.0.1:5432/postgres",
        "/v1/sales",
        "~/.pgpass",
        "outbox::drain",
        "WHERE fencing_token = claimed",
        "Attributes::config_path(\"../tauri.conf.json\")",
        "drain",
    ]
    .into_iter()
    .filter_map(as_path)
    .collect();
    assert_eq!(
        found,
        [
            "crates/outbox/src/engine/drain.rs",
            "drain.rs",
            "docs/intake.md",
            "crates/outbox/sql/sqlite/",
            "ui/tests/*.test.ts"
        ]
    );
    let root = root();
    assert!(exists(&root, "crates/outbox/sql/sqlite/"));
    assert!(exists(&root, "crates/tidy/tests/*.rs"));
    assert!(!exists(&root, "drain.rs"), "a bare file name is not a repository path");
    assert!(!exists(&root, "crates/pac/tests/against_sim.rs"));
    assert_eq!(
        mentions("a `x/y.rs` and [t](docs/t.md)\n```\n`not/this.rs`\n```\n"),
        ["x/y.rs", "docs/t.md"]
    );
}
