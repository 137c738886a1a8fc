//! Tauri's build step, reading the canonical `tauri.conf.json` at the repository root, with the
//! app's own commands (from `src/ipc_list.rs`) declared so that the capability in
//! `capabilities/` must allow each one explicitly (nothing the UI does not use is reachable).

use std::path::Path;

fn main() {
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/dist/index.html");
    println!("cargo:rerun-if-changed=../ui/dist");
    if !dist.exists() {
        // Tauri embeds the built UI; without it the app would have nothing to show.
        println!("cargo:warning=ui/dist no existe: construya la interfaz primero (`make run`, o `npm ci && npm run build` en ui/)");
        panic!("ui/dist/index.html is missing: build the UI first (`cd ui && npm ci && npm run build`, or `make run`)");
    }
    let attributes = tauri_build::Attributes::new()
        .config_path("../tauri.conf.json")
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(e) = tauri_build::try_build(attributes) {
        panic!("tauri-build: {e:#}");
    }
}

#[macro_use]
#[path = "src/ipc_list.rs"]
mod ipc_list;

/// The command names of the list (its types are never resolved here).
macro_rules! command_names {
    (commands { $($name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty ;)* } events { $($events:tt)* }) => {
        const COMMANDS: &[&str] = &[$(stringify!($name)),*];
    };
}

ipc_surface!(command_names);
