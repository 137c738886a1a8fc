//! The `timbra-app` binary: starts the desktop console (see the library for what it owns).

// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    timbra_app::run();
}
