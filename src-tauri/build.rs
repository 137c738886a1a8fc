//! Tauri's build step, reading the canonical `tauri.conf.json` at the repository root, with the
//! app's own commands declared so that the capability in `capabilities/` must allow each one
//! explicitly (nothing the UI does not use is reachable).

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
        .app_manifest(tauri_build::AppManifest::new().commands(timbra_commands::ALL));
    if let Err(e) = tauri_build::try_build(attributes) {
        panic!("tauri-build: {e:#}");
    }
}

#[path = "src/commands_list.rs"]
mod timbra_commands;
