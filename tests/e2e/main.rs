//! End-to-end tests of the real desktop app in its real webview: WebDriver (tauri-driver +
//! WebKitWebDriver) under a private Xvfb display, driving the `timbra-app` binary cargo just
//! built. Flows run one at a time (tauri-driver's ports are fixed), each on a fresh temporary
//! database in Modo sandbox. Screenshots go to `artifacts/screenshots/` (see README).
//!
//! Run: `cargo test -p timbra-app --test e2e` (needs the UI built into ui/dist, Xvfb,
//! WebKitWebDriver and tauri-driver: `scripts/install-deps test` installs them).

mod flows;
mod harness;
mod installed;
mod review;

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::time::Instant;

use harness::{App, Display, Env, Res};

type Flow = for<'a> fn(&'a App) -> Pin<Box<dyn Future<Output = Res> + 'a>>;
type Prepare = fn(&std::path::Path) -> Res<Env>;

fn nothing(_: &std::path::Path) -> Res<Env> {
    Ok(Env::new())
}

const FLOWS: &[(&str, Prepare, Flow)] = &[
    ("emitir_y_notas", nothing, |app| Box::pin(flows::emitir_y_notas(app))),
    ("demo_ajustes_idioma", flows::soporte_seat, |app| {
        Box::pin(flows::demo_ajustes_idioma(app))
    }),
    ("timeout_tras_certificar", flows::soporte_seat, |app| {
        Box::pin(flows::timeout_tras_certificar(app))
    }),
    ("caida_y_respaldo", flows::soporte_seat, |app| {
        Box::pin(flows::caida_y_respaldo(app))
    }),
    ("rechazo_y_reproceso", flows::soporte_seat, |app| {
        Box::pin(flows::rechazo_y_reproceso(app))
    }),
    ("base_danada", flows::damaged_database, |app| Box::pin(flows::base_danada(app))),
    ("finkok_finalizar", flows::finkok_primary, |app| {
        Box::pin(flows::finkok_finalizar(app))
    }),
    ("finkok_duplicado", flows::finkok_primary, |app| {
        Box::pin(flows::finkok_duplicado(app))
    }),
    ("facturapi_pendiente", flows::facturapi_primary, |app| {
        Box::pin(flows::facturapi_pendiente(app))
    }),
    ("caida_hasta_atencion", flows::soporte_seat, |app| {
        Box::pin(flows::caida_hasta_atencion(app))
    }),
    ("rechazo_tras_desconocido", flows::soporte_seat, |app| {
        Box::pin(flows::rechazo_tras_desconocido(app))
    }),
    ("documentos_y_api", flows::soporte_seat, |app| {
        Box::pin(flows::documentos_y_api(app))
    }),
    ("pago_parcial", flows::soporte_seat, |app| Box::pin(flows::pago_parcial(app))),
    ("pagos_y_bandeja", flows::soporte_seat, |app| Box::pin(flows::pagos_y_bandeja(app))),
    ("lista_69b_y_global", flows::soporte_seat, |app| {
        Box::pin(flows::lista_69b_y_global(app))
    }),
    ("factura_global", flows::soporte_seat, |app| Box::pin(flows::factura_global(app))),
    ("mostrador_y_emitir", flows::soporte_seat, |app| {
        Box::pin(flows::mostrador_y_emitir(app))
    }),
    ("linea_de_tiempo_en_palabras", flows::soporte_seat, |app| {
        Box::pin(flows::linea_de_tiempo_en_palabras(app))
    }),
    ("emitir_con_catalogos", flows::soporte_seat, |app| {
        Box::pin(flows::emitir_con_catalogos(app))
    }),
    ("ventana_y_archivos", flows::soporte_seat, |app| {
        Box::pin(flows::ventana_y_archivos(app))
    }),
    ("revision_de_pantallas", flows::soporte_seat, |app| {
        Box::pin(review::revision_de_pantallas(app))
    }),
    ("acerca_y_diagnostico", flows::soporte_seat, |app| {
        Box::pin(flows::acerca_y_diagnostico(app))
    }),
    ("dos_emisores", flows::soporte_seat, |app| Box::pin(flows::dos_emisores(app))),
    ("sat_conciliacion", flows::soporte_seat, |app| {
        Box::pin(flows::sat_conciliacion(app))
    }),
    ("equipo_postgres", flows::team_database, |app| Box::pin(flows::equipo_postgres(app))),
    ("sin_almacen_de_contrasenas", installed::no_secret_service, |app| {
        Box::pin(installed::sin_almacen_de_contrasenas(app))
    }),
    // Only against an installed Timbra (TIMBRA_E2E_APP; `make test` sets it): see installed.rs.
    ("instalada_emitir", installed::default_folders, |app| {
        Box::pin(installed::instalada_emitir(app))
    }),
];

fn main() -> ExitCode {
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("e2e: tokio: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Screenshots of this run only (the folder is git-ignored and ours).
    if let Ok(entries) = std::fs::read_dir(harness::screenshot_dir()) {
        for e in entries.flatten() {
            if e.path().extension().is_some_and(|x| x == "png") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let display = match Display::start() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("e2e: {e}");
            return ExitCode::FAILURE;
        }
    };
    if std::env::var_os(harness::APP_ENV).is_some() {
        println!("e2e: la app instalada {}", harness::app_binary().display());
    }
    let run_started = Instant::now();
    let mut failed = 0;
    let mut ran = 0;
    for (name, prepare, flow) in FLOWS {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        if name.starts_with("instalada") && std::env::var_os(harness::APP_ENV).is_none() {
            continue;
        }
        ran += 1;
        let started = Instant::now();
        let result = runtime.block_on(async {
            let app = App::start(&display, prepare).await?;
            let mut r = flow(&app).await;
            // No uncaught error and no CSP violation may happen in any flow.
            let errors = app.page_errors().await.unwrap_or_else(|e| vec![e]);
            if !errors.is_empty() {
                r = Err(format!(
                    "{}errores en la página: {errors:?}",
                    r.err().map(|e| format!("{e}; ")).unwrap_or_default()
                ));
            }
            if r.is_err() {
                let _ = app.screenshot(&format!("fallo-{name}")).await;
            }
            app.stop().await;
            r
        });
        match result {
            Ok(()) => println!("test e2e::{name} ... ok ({:.1} s)", started.elapsed().as_secs_f64()),
            Err(e) => {
                failed += 1;
                println!("test e2e::{name} ... FAILED ({:.1} s)\n    {e}", started.elapsed().as_secs_f64());
            }
        }
    }
    drop(display);
    let shots = harness::screenshot_dir();
    let shots = shots.canonicalize().unwrap_or(shots);
    println!("\nscreenshots: {}", shots.display());
    println!(
        "test result: {}. {} passed; {failed} failed; 0 ignored; 0 measured; {} filtered out; finished in {:.2}s",
        if failed == 0 { "ok" } else { "FAILED" },
        ran - failed,
        FLOWS.len() - ran,
        run_started.elapsed().as_secs_f64()
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
