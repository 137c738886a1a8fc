//! The architecture of ARCHITECTURE.md, checked: no module cycle in any crate; the direction of
//! the crate dependencies (only `outbox` knows SQL, only the PAC clients, the simulator and the
//! intake API know HTTP, only `src-tauri` knows Tauri, `cfdi` knows none of them, `rules` and
//! `sat-ws` are pure); every module says what it owns; nothing in the repository points at documents
//! outside it.

use std::collections::BTreeSet;

use tidy::{dependencies, find_cycle, module_graph, root, rust_files};

/// Every crate with sources: (name, source dir, manifest).
fn crates() -> Vec<(String, std::path::PathBuf, std::path::PathBuf)> {
    let root = root();
    let mut out = Vec::new();
    for dir in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        let p = dir.path();
        if p.join("Cargo.toml").exists() {
            out.push((
                p.file_name().unwrap().to_string_lossy().to_string(),
                p.join("src"),
                p.join("Cargo.toml"),
            ));
        }
    }
    out.push(("src-tauri".into(), root.join("src-tauri/src"), root.join("src-tauri/Cargo.toml")));
    out.sort();
    out
}

#[test]
fn no_module_cycle_in_any_crate() {
    let mut cycles = Vec::new();
    for (name, src, _) in crates() {
        let graph = module_graph(&src);
        if let Some(c) = find_cycle(&graph) {
            cycles.push(format!("{name}: {}", c.join(" → ")));
        }
    }
    assert!(cycles.is_empty(), "module cycles:\n  {}", cycles.join("\n  "));
}

#[test]
fn crate_dependencies_point_one_way() {
    // (crate, dependencies it must not declare)
    let sql = ["sqlx"];
    let http = ["reqwest", "hyper", "hyper-util", "axum", "tower"];
    let rules: &[(&str, &[&str])] = &[
        (
            "cfdi",
            &[
                "sqlx",
                "rusqlite",
                "reqwest",
                "hyper",
                "axum",
                "tauri",
                "tokio",
                "timbra-pac",
                "timbra-rules",
                "timbra-outbox",
            ],
        ),
        (
            "pac",
            &[
                "sqlx",
                "rusqlite",
                "reqwest",
                "hyper",
                "axum",
                "tauri",
                "timbra-rules",
                "timbra-outbox",
                "timbra-pac-clients",
            ],
        ),
        // cfdi ← pac ← rules ← outbox: the rules know no database, no runtime, no network.
        ("rules", RULES_FORBIDDEN),
        (
            "pac-clients",
            &["sqlx", "rusqlite", "tauri", "timbra-rules", "timbra-outbox", "axum"],
        ),
        (
            "pac-sim",
            &[
                "sqlx",
                "rusqlite",
                "tauri",
                "timbra-rules",
                "timbra-outbox",
                "timbra-pac-clients",
                "reqwest",
            ],
        ),
        (
            "outbox",
            &["reqwest", "hyper", "hyper-util", "axum", "tower", "tauri", "timbra-pac-clients"],
        ),
        (
            "pdf",
            &["sqlx", "rusqlite", "reqwest", "tauri", "tokio", "timbra-rules", "timbra-outbox"],
        ),
        // SAT's Descarga Masiva wire: pure like cfdi, below everything but cfdi.
        ("sat-ws", SAT_WS_FORBIDDEN),
        // The use cases the shells share: over the Outbox API, below the HTTP API.
        (
            "services",
            &[
                "sqlx",
                "rusqlite",
                "reqwest",
                "hyper",
                "hyper-util",
                "axum",
                "tower",
                "tauri",
                "timbra-api",
                "timbra-pac-clients",
            ],
        ),
    ];
    let _ = (sql, http);
    let mut problems = Vec::new();
    for (name, _, manifest) in crates() {
        let deps = dependencies(&manifest);
        for (krate, forbidden) in rules {
            if *krate == name {
                for f in *forbidden {
                    if deps.contains(*f) {
                        problems.push(format!("{name} depends on {f}"));
                    }
                }
            }
        }
        if name != "src-tauri" && deps.iter().any(|d| d == "tauri" || d.starts_with("tauri-")) {
            problems.push(format!("{name} knows Tauri"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// What the rules crate (`crates/rules`) must never depend on: a database, an async runtime,
/// the network, files, the desktop, or a crate after it in the dependency order.
const RULES_FORBIDDEN: &[&str] = &[
    "sqlx",
    "rusqlite",
    "tokio",
    "futures-util",
    "reqwest",
    "hyper",
    "hyper-util",
    "axum",
    "tower",
    "lettre",
    "socket2",
    "directories",
    "tempfile",
    "tauri",
    "tracing",
    "timbra-outbox",
    "timbra-pac-clients",
    "timbra-pac-sim",
    "timbra-pdf",
    "timbra-api",
];

/// The rules are pure: their manifest names no IO or async dependency (in any section, tests
/// included) and their sources reach for no file, socket, process or runtime.
#[test]
fn the_rules_crate_is_pure() {
    let dir = root().join("crates/rules");
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("crates/rules/Cargo.toml");
    let table: toml::Table = manifest.parse().expect("crates/rules/Cargo.toml is TOML");
    let mut declared = BTreeSet::new();
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        if let Some(t) = table.get(section).and_then(|d| d.as_table()) {
            declared.extend(t.keys().cloned());
        }
    }
    assert!(declared.contains("timbra-pac"), "the manifest was read: {declared:?}");
    let bad: Vec<&String> = declared.iter().filter(|d| RULES_FORBIDDEN.contains(&d.as_str())).collect();
    assert!(bad.is_empty(), "crates/rules must stay pure, but depends on {bad:?}");

    const IO: [&str; 9] = [
        "std::fs",
        "std::net",
        "std::process",
        "std::thread",
        "std::env",
        "tokio::",
        "sqlx::",
        "rusqlite::",
        "async fn",
    ];
    let mut hits = Vec::new();
    for f in rust_files(&dir.join("src")) {
        let text = std::fs::read_to_string(&f).unwrap();
        for pattern in IO {
            if text.contains(pattern) {
                hits.push(format!("{} ({pattern})", f.strip_prefix(&dir).unwrap_or(&f).display()));
            }
        }
    }
    assert!(hits.is_empty(), "IO or async in the rules crate:\n  {}", hits.join("\n  "));
}

/// What `crates/sat-ws` (SAT's *Descarga Masiva* wire, pure) must never depend on.
const SAT_WS_FORBIDDEN: &[&str] = &[
    "sqlx",
    "rusqlite",
    "tokio",
    "futures-util",
    "reqwest",
    "hyper",
    "hyper-util",
    "axum",
    "tower",
    "lettre",
    "socket2",
    "directories",
    "tauri",
    "timbra-pac",
    "timbra-rules",
    "timbra-outbox",
    "timbra-pac-clients",
    "timbra-pac-sim",
    "timbra-pdf",
    "timbra-api",
    "timbra-services",
];

/// `crates/sat-ws` is pure: bytes and time in, no file, socket, process, clock or runtime in
/// its sources (its tests shell out to xmlsec1, xmllint and openssl; the library never does).
#[test]
fn the_sat_ws_crate_is_pure() {
    let dir = root().join("crates/sat-ws");
    let deps = dependencies(&dir.join("Cargo.toml"));
    assert!(deps.contains("timbra-cfdi"), "the manifest was read: {deps:?}");
    let bad: Vec<&String> = deps.iter().filter(|d| SAT_WS_FORBIDDEN.contains(&d.as_str())).collect();
    assert!(bad.is_empty(), "crates/sat-ws must stay pure, but depends on {bad:?}");
    const IO: [&str; 10] = [
        "std::fs",
        "std::net",
        "std::process",
        "std::thread",
        "std::env",
        "tokio::",
        "async fn",
        "Utc::now",
        "Local::now",
        "SystemTime::now",
    ];
    let mut hits = Vec::new();
    for f in rust_files(&dir.join("src")) {
        let text = std::fs::read_to_string(&f).unwrap();
        for pattern in IO {
            if text.contains(pattern) {
                hits.push(format!("{} ({pattern})", f.strip_prefix(&dir).unwrap_or(&f).display()));
            }
        }
    }
    assert!(hits.is_empty(), "IO, a clock or async in crates/sat-ws:\n  {}", hits.join("\n  "));
}

#[test]
fn every_module_says_what_it_owns() {
    let mut missing = Vec::new();
    for (name, src, _) in crates() {
        for f in rust_files(&src) {
            let text = std::fs::read_to_string(&f).unwrap();
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            // A file compiled through `include!` cannot carry `//!`: it says who includes it,
            // and the includer must exist.
            let included = first.starts_with("// Included by `") && {
                let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
                rust_files(&src)
                    .iter()
                    .any(|g| std::fs::read_to_string(g).is_ok_and(|t| t.contains(&format!("include!(\"{name}\")"))))
            };
            if !first.starts_with("//!") && !included {
                missing.push(format!("{name}: {}", f.strip_prefix(&src).unwrap().display()));
            }
        }
    }
    assert!(missing.is_empty(), "modules without a //! doc:\n  {}", missing.join("\n  "));
}

/// Every text file of the repository that a reader or a build sees: sources, SQL, migrations,
/// tests and their fixtures' notes, scripts, the UI's sources, the documents.
fn repository_texts(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    const SKIP: [&str; 7] = ["target", "node_modules", "dist", ".git", "artifacts", "corpus", "fuzz-artifacts"];
    const TEXT: [&str; 12] = ["rs", "sql", "md", "toml", "ts", "svelte", "sh", "py", "json", "yml", "html", "css"];
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if !SKIP.contains(&name.as_str()) && !name.starts_with('.') || name == ".ci" {
                    stack.push(path);
                }
            } else if kind.is_file() {
                let ext = path.extension().map(|x| x.to_string_lossy().into_owned()).unwrap_or_default();
                let script = dir.file_name().is_some_and(|d| d == "scripts" || d == ".ci");
                if TEXT.contains(&ext.as_str()) || script || name == "Makefile" {
                    out.push(path);
                }
            }
        }
    }
    out
}

#[test]
fn nothing_points_at_documents_outside_the_repository() {
    let root = root();
    let files = repository_texts(&root);
    assert!(
        files.iter().any(|f| f.ends_with("migrations/sqlite/0001_outbox.sql"))
            && files.iter().any(|f| f.ends_with("tests/e2e/flows.rs"))
            && files.iter().any(|f| f.ends_with("ui/src/App.svelte"))
            && files.iter().any(|f| f.ends_with("Makefile")),
        "the walk must reach migrations, the E2E flows, the UI and the Makefile"
    );
    // The design notes and references that live beside the checkout, never in it. (A test may
    // read the real-world corpus beside the checkout when it is there; it is data, not a
    // document a reader needs.)
    const OUTSIDE: [&str; 7] = [
        "DESIGN §",
        "DESIGN.md",
        "reference/strategy-cases",
        "pac-sat-facts",
        "shared/fixtures",
        "shared/reference",
        "shared/hooks",
    ];
    let bad: BTreeSet<String> = files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n != "architecture.rs"))
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).ok()?;
            let hit = OUTSIDE.iter().find(|p| text.contains(*p))?;
            Some(format!("{} ({hit})", f.strip_prefix(&root).unwrap_or(f).display()))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "these cite documents outside the repository:\n  {}",
        bad.into_iter().collect::<Vec<_>>().join("\n  ")
    );
}

/// Nothing asks a PAC to cancel a CFDI but the drain's cancellation step, which sends only what
/// a `cancellations` row orders — a row the database accepts only with a contador's decision
/// about that invoice. Every caller of `PacClient::cancel` outside the PAC crates is listed here.
#[test]
fn only_the_cancellation_step_asks_a_pac_to_cancel() {
    // The PAC crates define and test the call; tidy names it.
    const PAC_CRATES: [&str; 4] = ["pac", "pac-clients", "pac-sim", "tidy"];
    let mut callers = BTreeSet::new();
    for (name, src, _) in crates() {
        if PAC_CRATES.contains(&name.as_str()) {
            continue;
        }
        let mut files = rust_files(&src);
        files.extend(rust_files(&src.with_file_name("tests")));
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            if text.contains(".cancel(&") || text.contains(".cancel(request") || text.contains("client.cancel(") {
                callers.insert(f.strip_prefix(root()).unwrap_or(&f).display().to_string());
            }
        }
    }
    assert_eq!(
        callers.into_iter().collect::<Vec<_>>(),
        vec!["crates/outbox/src/engine/cancel_step.rs".to_string()],
        "a new caller of PacClient::cancel must go through a recorded contador decision"
    );
}

/// The outbox's crate map (`lib.rs`'s `//!`) names every module of the crate — the top-level
/// ones and those its context folders hold — so a reader finds each from the map.
#[test]
fn the_outbox_crate_map_names_every_module() {
    let src = root().join("crates/outbox/src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let map: String = lib.lines().filter(|l| l.starts_with("//!")).collect::<Vec<_>>().join("\n");
    let mut modules = BTreeSet::new();
    for line in lib.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix("pub mod ").or_else(|| line.strip_prefix("mod ")) {
            let name = name.trim_end_matches(';').to_string();
            if let Ok(folder) = std::fs::read_to_string(src.join(&name).join("mod.rs")) {
                for l in folder.lines() {
                    let l = l.trim();
                    if let Some(child) = l.strip_prefix("pub mod ").or_else(|| l.strip_prefix("pub(crate) mod ")) {
                        modules.insert(child.trim_end_matches(';').to_string());
                    }
                }
            }
            modules.insert(name);
        }
    }
    assert!(modules.len() > 20, "the walk found the modules: {modules:?}");
    let missing: Vec<&String> = modules.iter().filter(|m| !map.contains(&format!("`{m}`"))).collect();
    assert!(missing.is_empty(), "crates/outbox/src/lib.rs's map does not name: {missing:?}");
}
