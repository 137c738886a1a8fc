//! Drift check: every file generated from `src/ipc_list.rs` must be committed exactly as the
//! list generates it — the TypeScript of every type under `ui/src/lib/ipc/bindings/`, the UI's
//! `api`/`events` module `ui/src/lib/ipc/index.ts`, and `capabilities/main.json`. Set
//! `TIMBRA_BLESS=1` to rewrite them after changing the list or a type (then commit them with the
//! Rust change).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use timbra_app::ipc;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn bindings_dir() -> PathBuf {
    root().join("../ui/src/lib/ipc/bindings")
}

fn bless() -> bool {
    std::env::var_os("TIMBRA_BLESS").is_some() || std::env::var_os("TIMBRA_BLESS_BINDINGS").is_some()
}

const REGENERATE: &str = "regenerate with `TIMBRA_BLESS=1 cargo test -p timbra-app --test generated`";

/// Every `.ts` file under `dir`, as paths relative to it with `/` separators.
fn ts_files(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            ts_files(&entry.path(), &format!("{prefix}{name}/"), out);
        } else if name.ends_with(".ts") {
            out.push(format!("{prefix}{name}"));
        }
    }
}

/// Compares (or with bless, writes) one generated file.
fn check_file(path: &Path, expected: &str, problems: &mut Vec<String>) {
    if bless() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, expected).unwrap();
    }
    match std::fs::read_to_string(path) {
        Ok(on_disk) if on_disk == expected => {}
        Ok(_) => problems.push(format!("{}: differs from what the list generates", path.display())),
        Err(_) => problems.push(format!("{}: missing", path.display())),
    }
}

#[test]
fn checked_in_typescript_matches_the_rust_types() {
    let expected = ipc::bindings();
    let dir = bindings_dir();
    if bless() {
        let mut old = Vec::new();
        ts_files(&dir, "", &mut old);
        for f in old {
            std::fs::remove_file(dir.join(f)).unwrap();
        }
    }
    let mut problems = Vec::new();
    for (file, text) in &expected {
        check_file(&dir.join(file), text, &mut problems);
    }
    let wanted: BTreeSet<_> = expected.iter().map(|(f, _)| f.clone()).collect();
    let mut on_disk = Vec::new();
    ts_files(&dir, "", &mut on_disk);
    for name in on_disk {
        if !wanted.contains(&name) {
            problems.push(format!("{name}: no type of the IPC surface generates it (stale)"));
        }
    }
    assert!(
        problems.is_empty(),
        "TypeScript bindings drifted:\n  {}\n{REGENERATE}",
        problems.join("\n  ")
    );
}

#[test]
fn the_ui_api_module_and_the_capability_are_generated_from_the_list() {
    let surface = ipc::surface(&ipc::config());
    let mut problems = Vec::new();
    check_file(
        &root().join("../ui/src/lib/ipc/index.ts"),
        &ipc::typescript(&surface),
        &mut problems,
    );
    check_file(&root().join("capabilities/main.json"), &ipc::capability(&surface), &mut problems);
    assert!(
        problems.is_empty(),
        "generated IPC files drifted:\n  {}\n{REGENERATE}",
        problems.join("\n  ")
    );
}

#[test]
fn every_type_the_api_module_imports_has_a_binding() {
    let files: BTreeSet<_> = ipc::bindings().into_iter().map(|(f, _)| f).collect();
    let surface = ipc::surface(&ipc::config());
    for (name, file) in &surface.imports {
        assert!(
            files.contains(file),
            "the api module imports {name} from {file}, which is not generated"
        );
    }
}

#[test]
fn every_dependency_of_a_binding_has_its_own_file() {
    // An import of a file that is not generated would break the UI build.
    let all = ipc::bindings();
    let files: BTreeSet<_> = all.iter().map(|(f, _)| f.clone()).collect();
    for (file, text) in &all {
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
