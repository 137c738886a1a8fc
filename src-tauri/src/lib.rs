//! `timbra-app`: Timbra's desktop shell (Tauri 2). It owns the window, the IPC commands and
//! events, and the start-up sequence; every command calls the `Outbox` API and converts its
//! answer (no business logic here — see ARCHITECTURE.md).
//!
//! Map:
//! - [`state`]: start-up (database from `TIMBRA_DATABASE_URL`, else the one saved in Ajustes,
//!   else the app-data folder; Modo sandbox when nothing is configured) and who acts at this
//!   desktop, every emisor of the home's directory opened, one current; [`seat`]: this machine's
//!   own settings (the operator's name and role, the database, the emisores it may see);
//! - [`ipc_list`]: the one list of commands and events; [`ipc`] renders from it the capability
//!   file, the UI's typed `api`/`events` module and the TypeScript of every type, and emits events;
//! - [`commands`]: the command functions; [`dto`]: the shapes that exist only in the app (the
//!   outbox's read models cross as they are); [`convert`]: the verdict drawn as buttons, the
//!   Bandeja query; [`error`]: the coded IPC error;
//! - [`drain_host`]: the outbox's drain engine running in the app's runtime, its PAC clients
//!   and its events; [`pac_settings`]: the PAC form over the outbox's PAC list;
//! - [`sandbox`]: SAT's test CSD and the in-process PAC simulators; [`demo`]: the demo sales;
//!   [`credentials`]: the OS credential store; [`app_settings`]: the shared JSON settings;
//! - [`file_chooser`]: the native file chooser (Tauri's dialog plugin; its E2E stand-in) and
//!   the checks a chosen path passes before Rust reads the file;
//! - [`channels`]: the local HTTP API (`crates/api`) started from Ajustes, the notification
//!   worker, tokens, webhook and SMTP settings, the PDF and the bulk export;
//! - [`support`]: the log file, *Acerca de Timbra* and the diagnostic ZIP's secrets;
//!   [`updates`]: Tauri's updater plugin behind Timbra's own commands (signature verified with
//!   the release key built in; off until Ajustes has an update URL);
//! - [`heap`]: the heap start-up freed given back to the system (glibc's `malloc_trim`).
//!
//! **Architecture invariant:** only this crate knows Tauri.
//!
//! `tauri.conf.json` lives at the repository root: `build.rs` passes it to `tauri_build` and
//! `generate_context!` reads it, so its paths (`frontendDist`, icons) are relative to the root;
//! `tauri` is built with `custom-protocol`, so a plain `cargo build -p timbra-app` embeds the
//! built UI (and `build.rs` fails with a clear message when it is missing). Strict CSP
//! (`default-src 'self'`, no inline script or style), `freezePrototype`, no remote content. The
//! window opens at 1280×680 (it fits a 1366×768 screen) and may shrink to 1024×600.

#[macro_use]
pub mod ipc_list;

pub mod app_settings;
pub mod backups;
pub mod channels;
pub mod commands;
pub mod convert;
pub mod credentials;
pub mod demo;
pub mod drain_host;
pub mod dto;
pub mod error;
pub mod file_chooser;
pub mod heap;
pub mod ipc;
pub mod pac_settings;
pub mod sandbox;
pub mod seat;
pub mod state;
pub mod support;
pub mod updates;

use tauri::Manager;

/// The handler of every command in [`ipc_list`].
macro_rules! handlers {
    (commands { $($name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty ;)* } events { $($events:tt)* }) => {
        tauri::generate_handler![$(commands::$name),*]
    };
}

/// Starts the desktop console; returns when its window is closed.
pub fn run() {
    // Logs go to stderr and to the log file support asks for (`support`; no secret is ever
    // logged, and the diagnostic ZIP redacts once more).
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let log_file = support::open_log_file();
    let _ = tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::try_from_env("TIMBRA_LOG").unwrap_or_else(|_| "info".into()))
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())),
        )
        .with(log_file.map(|(_, f)| {
            tracing_subscriber::fmt::layer()
                .with_writer(std::sync::Mutex::new(f))
                .with_ansi(false)
        }))
        .try_init();

    let app = tauri::Builder::default()
        .plugin(file_chooser::plugin())
        .plugin(updates::plugin())
        .setup(|app| {
            let state = tauri::async_runtime::block_on(state::AppState::start());
            // Every emisor's drain runs, whichever the window shows (`state`).
            let readies = state.readies();
            for ready in &readies {
                tauri::async_runtime::block_on(ready.start_all(app.handle().clone()));
            }
            if let Ok(home) = state.home() {
                tracing::info!(database = %state.database_path, operator = %home.operator().name, emisores = readies.len(), "Timbra iniciado");
                backups::start(app.handle().clone());
            }
            app.manage(state);
            // The database's checks, the migrations and the simulators' set-up are done: what
            // they freed goes back now, what the first screens free a few seconds later.
            heap::release_freed();
            heap::start(std::time::Duration::from_secs(5));
            Ok(())
        })
        .invoke_handler(ipc_surface!(handlers))
        .build(tauri::generate_context!("../tauri.conf.json"));
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            eprintln!("error: Timbra no pudo abrir su ventana: {e}");
            std::process::exit(1);
        }
    };
    app.run(|handle, event| {
        if let tauri::RunEvent::Exit = event {
            // In-flight tries get the drain's grace period; unanswered ones stay unknown and
            // are resumed on the next start (the same bytes and key).
            if let Some(state) = handle.try_state::<state::AppState>() {
                for ready in state.readies() {
                    if let Ok(host) = ready.drain() {
                        host.stop();
                    }
                    ready.channels.stop_all();
                }
            }
        }
    });
}
