//! Drift check: the TypeScript in `ui/src/lib/ipc/bindings/` must be exactly what the Rust
//! transport types generate. Set `TIMBRA_BLESS_BINDINGS=1` to rewrite the files after changing
//! a DTO (then commit them with the Rust change).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ui/src/lib/ipc/bindings")
}

/// Every `.ts` file under `dir`, as paths relative to it with `/` separators.
fn ts_files(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().to_string();
        if entry.file_type().unwrap().is_dir() {
            ts_files(&entry.path(), &format!("{prefix}{name}/"), out);
        } else if name.ends_with(".ts") {
            out.push(format!("{prefix}{name}"));
        }
    }
}

#[test]
fn checked_in_typescript_matches_the_rust_types() {
    let expected = timbra_app::bindings::all();
    let dir = dir();
    if std::env::var_os("TIMBRA_BLESS_BINDINGS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        let mut old = Vec::new();
        ts_files(&dir, "", &mut old);
        for f in old {
            std::fs::remove_file(dir.join(f)).unwrap();
        }
        for (file, text) in &expected {
            let path = dir.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }
    let mut problems = Vec::new();
    for (file, text) in &expected {
        match std::fs::read_to_string(dir.join(file)) {
            Ok(on_disk) if &on_disk == text => {}
            Ok(_) => problems.push(format!("{file}: differs from what the Rust type generates")),
            Err(_) => problems.push(format!("{file}: missing")),
        }
    }
    let wanted: BTreeSet<_> = expected.iter().map(|(f, _)| f.clone()).collect();
    let mut on_disk = Vec::new();
    ts_files(&dir, "", &mut on_disk);
    for name in on_disk {
        if !wanted.contains(&name) {
            problems.push(format!("{name}: no Rust type generates it (stale)"));
        }
    }
    assert!(
        problems.is_empty(),
        "TypeScript bindings drifted from the Rust DTOs:\n  {}\nregenerate with `TIMBRA_BLESS_BINDINGS=1 cargo test -p timbra-app --test bindings`",
        problems.join("\n  ")
    );
}

#[test]
fn every_dependency_of_a_binding_has_its_own_file() {
    // An import of a file that is not generated would break the UI build.
    let files: BTreeSet<_> = timbra_app::bindings::all().into_iter().map(|(f, _)| f).collect();
    for (file, text) in timbra_app::bindings::all() {
        for line in text.lines().filter(|l| l.starts_with("import ")) {
            let target = line.rsplit("from \"").next().and_then(|r| r.strip_suffix("\";")).unwrap_or("");
            // Resolve the import relative to the importing file's folder.
            let mut parts: Vec<&str> = file.split('/').collect();
            parts.pop();
            for seg in target.split('/') {
                match seg {
                    "." => {}
                    ".." => {
                        parts.pop();
                    }
                    s => parts.push(s),
                }
            }
            let resolved = format!("{}.ts", parts.join("/"));
            assert!(
                files.contains(&resolved),
                "{file} imports {target} ({resolved}), which is not generated"
            );
        }
    }
}

#[test]
fn the_registered_commands_are_the_ones_the_acl_declares() {
    let source = include_str!("../src/commands.rs");
    let registered: BTreeSet<&str> = source
        .lines()
        .filter_map(|l| l.trim().strip_prefix("$crate::commands::"))
        .map(|l| l.trim_end_matches(','))
        .collect();
    let declared: BTreeSet<&str> = timbra_app::commands_list::ALL.iter().copied().collect();
    assert_eq!(registered, declared);
    let capability = include_str!("../capabilities/main.json");
    for c in timbra_app::commands_list::ALL {
        let permission = format!("\"allow-{}\"", c.replace('_', "-"));
        assert!(capability.contains(&permission), "capabilities/main.json does not allow {c}");
    }
}
