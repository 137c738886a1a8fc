//! `timbra pac-sim`: runs the PAC simulator (SW Sapién, Finkok or Facturapi flavor) until
//! SIGTERM or Ctrl-C, then shuts it down gracefully.
//!
//! The first stdout line is `listening on http://HOST:PORT` (flushed at once), so a script or
//! a test can read the port; the second is the control URL that stays up during outages; the
//! third, `SAT en http://HOST:PORT`, the base URL of the simulated SAT *Descarga Masiva*.
//!
//! The credentials it accepts are test values, unless `TIMBRA_SIM_USER`, `TIMBRA_SIM_PASSWORD`,
//! `TIMBRA_SIM_SW_TOKEN` or `TIMBRA_SIM_FACTURAPI_KEY` say otherwise (the secret-leak test runs a
//! scenario with values it then looks for); those are never printed.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use crate::{exit, Failure};

#[derive(Args)]
pub struct PacSimArgs {
    /// Dirección donde escuchar; el puerto 0 elige uno libre.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Qué PAC simular: sw, finkok o facturapi.
    #[arg(long, value_parser = ["sw", "finkok", "facturapi"])]
    flavor: String,
    /// Fallas y comportamiento, p. ej. `latency_ms=20..80,timeout_after_certify=0.1,reset=0.05,http500=0.05,refuse=0`
    /// (`down=1` simula una caída). Se cambian en marcha con `POST /_sim/faults`.
    #[arg(long)]
    faults: Option<String>,
    /// Carpeta donde guardar el ledger para que un simulador reiniciado lo recuerde.
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Sabor facturapi: la organización para la que emite: `simulador` (el propio simulador,
    /// TSP260101AA1) o `sat-prueba` (el CSD de prueba del SAT, EKU9003173C9, el emisor del
    /// modo sandbox y de las pruebas).
    #[arg(long, value_parser = ["simulador", "sat-prueba"], default_value = "simulador")]
    organizacion: String,
}

pub fn run(args: PacSimArgs) -> Result<u8, Failure> {
    let flavor: pac_sim::Flavor = args
        .flavor
        .parse()
        .map_err(|e: String| Failure::invalid(format!("--flavor: {e}")))?;
    let faults = pac_sim::Faults::parse(args.faults.as_deref().unwrap_or("")).map_err(|e| Failure::invalid(format!("--faults: {e}")))?;
    let organization = match args.organizacion.as_str() {
        "sat-prueba" => Some(pac_sim::Organization::sat_test().map_err(|e| Failure::invalid(format!("--organizacion: {e}")))?),
        _ => None,
    };
    let mut config = pac_sim::SimConfig {
        listen: args.listen,
        faults,
        state_dir: args.state_dir,
        organization,
        ..pac_sim::SimConfig::new(flavor)
    };
    let mut from_env = false;
    for (var, field) in [
        ("TIMBRA_SIM_USER", &mut config.credentials.user),
        ("TIMBRA_SIM_PASSWORD", &mut config.credentials.password),
        ("TIMBRA_SIM_SW_TOKEN", &mut config.credentials.sw_token),
        ("TIMBRA_SIM_FACTURAPI_KEY", &mut config.credentials.facturapi_key),
    ] {
        if let Some(v) = std::env::var(var).ok().filter(|v| !v.is_empty()) {
            *field = v;
            from_env = true;
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::invalid(format!("no se pudo iniciar el runtime: {e}")))?;
    runtime.block_on(async move {
        let handle = pac_sim::start_with_clock(config, pac_sim::SimClock::with_base(crate::shell::process_clock()))
            .await
            .map_err(|e| Failure::invalid(e.to_string()))?;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on {}", handle.base_url);
        let _ = writeln!(out, "control on {}", handle.control_url);
        let _ = writeln!(out, "SAT en {}", handle.sat_url());
        let _ = out.flush();
        drop(out);
        let c = &handle.state.credentials;
        if from_env {
            eprintln!(
                "simulador {} listo, con las credenciales de TIMBRA_SIM_*. Ctrl-C o SIGTERM para detener.",
                flavor.as_str()
            );
        } else {
            eprintln!(
            "simulador {} listo. Credenciales de prueba: usuario {} / contraseña {}; token SW {}; llave Facturapi {}. Ctrl-C o SIGTERM para detener.",
            flavor.as_str(),
            c.user,
            c.password,
            c.sw_token,
            c.facturapi_key
            );
        }
        wait_for_stop().await;
        handle.shutdown().await;
        Ok(exit::OK)
    })
}

#[cfg(unix)]
async fn wait_for_stop() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(not(unix))]
async fn wait_for_stop() {
    let _ = tokio::signal::ctrl_c().await;
}
