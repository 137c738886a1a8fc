//! Modo sandbox: what the app runs on when nothing is configured — the sandbox emisor of
//! `outbox::sandbox` (EKU9003173C9 with SAT's public test CSD while it is valid, then Timbra's own
//! test certificate, which only the simulator accepts; shared with `timbra init --sandbox`) and
//! the in-process PAC simulator as the PAC. Nothing stamped in this mode is fiscal; the UI labels
//! it everywhere.

use std::path::Path;

use cfdi::sale::EmisorProfile;
use cfdi::secret::Secret;
use pac_sim::{Faults, Flavor, SimConfig, SimHandle};

use crate::dto::SandboxFaultDto;

/// SAT's test certificate (persona moral EKU9003173C9, régimen 601); the sandbox's emisor and
/// its certificates are `outbox::sandbox`'s, shared with `timbra init --sandbox`.
pub const TEST_CER: &[u8] = outbox::sandbox::SAT_TEST_CER;
/// Its encrypted private key, exactly as SAT publishes it.
pub const TEST_KEY: &[u8] = outbox::sandbox::SAT_TEST_KEY;

/// The backup simulator's PAC name in Modo sandbox (the primary is the outbox's default PAC
/// name, `sandbox`).
pub const SANDBOX_BACKUP: &str = "sandbox-respaldo";

/// The test keys' public password.
pub fn test_password() -> Secret {
    outbox::sandbox::password()
}

/// The sandbox emisor; LugarExpedicion 42501 (Pachuca, as in SAT's samples).
pub fn test_profile() -> EmisorProfile {
    outbox::sandbox::profile()
}

/// NoCertificado of SAT's test CSD (the sandbox's first certificate).
pub fn test_no_certificado() -> Result<String, cfdi::csd::CsdError> {
    Ok(cfdi::csd::Certificate::from_der(TEST_CER)?.no_certificado().to_string())
}

/// Whether the emisor's certificate `no_certificado` is one of the sandbox's (SAT's test CSD,
/// or Timbra's once SAT's has ended).
pub fn is_test_certificate(no_certificado: &str) -> bool {
    outbox::sandbox::is_sandbox_certificate(no_certificado)
}

/// Which simulator is the primary: `TIMBRA_SANDBOX_PRIMARY=finkok` makes the primary
/// Finkok-flavoured and the backup SW-flavoured (to see what a PAC with a non-creating lookup
/// does: *Finalizar*, a duplicate revealed after a forced failover); `facturapi` makes it
/// Facturapi-flavoured (JSON attempts issued for the sandbox emisor, `202 pending` looked up
/// by `external_id`) with an SW-flavoured backup; anything else, or unset, keeps SW primary
/// and Finkok backup.
pub const PRIMARY_FLAVOR_ENV: &str = "TIMBRA_SANDBOX_PRIMARY";

/// The primary simulator's flavour for the value of [`PRIMARY_FLAVOR_ENV`].
pub fn primary_flavor(value: Option<&str>) -> Flavor {
    match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        Some("finkok") => Flavor::Finkok,
        Some("facturapi") => Flavor::Facturapi,
        _ => Flavor::Sw,
    }
}

/// The in-process PAC simulators of Modo sandbox: an SW-flavoured primary and a
/// Finkok-flavoured backup (or the reverse, see [`PRIMARY_FLAVOR_ENV`]), each on 127.0.0.1
/// with a free port, their ledgers kept next to the database (so a CFDI stamped before a
/// restart is still "already stamped" after it).
///
/// They run on a runtime of their own, on their own threads, as a real PAC runs on another
/// machine: a busy app (a burst of screens to refresh, a debug build's CPU) does not delay the
/// PAC's answers, so what the drain sees as "the PAC did not answer in time" is the simulator's
/// doing (its faults), not the app's.
pub struct SandboxPacs {
    pub primary: SimHandle,
    pub backup: SimHandle,
    pub primary_flavor: Flavor,
    pub backup_flavor: Flavor,
    /// Dropping it stops the simulators' runtime.
    _runtime: SimRuntime,
}

/// The simulators' runtime thread; it shuts the runtime down when this is dropped.
struct SimRuntime {
    _stop: std::sync::mpsc::Sender<()>,
}

impl SimRuntime {
    /// Runs `start` on a new two-worker runtime on its own thread and hands back its answer.
    async fn run<T, F>(start: impl FnOnce() -> F + Send + 'static) -> Result<(SimRuntime, T), pac_sim::SimError>
    where
        F: std::future::Future<Output = Result<T, pac_sim::SimError>> + Send + 'static,
        T: Send + 'static,
    {
        let (answer_tx, answer_rx) = tokio::sync::oneshot::channel();
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("sandbox-pac".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("sandbox-pac")
                    .enable_all()
                    .build()
                {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = answer_tx.send(Err(pac_sim::SimError::Runtime(e.to_string())));
                        return;
                    }
                };
                let started = runtime.block_on(start());
                if answer_tx.send(started).is_err() {
                    return;
                }
                // Until the simulators are dropped (the sender goes with them).
                let _ = stopped.recv();
                runtime.shutdown_timeout(std::time::Duration::from_secs(3));
            })
            .map_err(|e| pac_sim::SimError::Runtime(e.to_string()))?;
        let value = answer_rx
            .await
            .map_err(|_| pac_sim::SimError::Runtime("el hilo terminó sin contestar".into()))??;
        Ok((SimRuntime { _stop: stop }, value))
    }
}

impl SandboxPacs {
    /// Starts both simulators on a runtime of their own.
    pub async fn start(database_dir: &Path) -> Result<SandboxPacs, pac_sim::SimError> {
        let primary_flavor = primary_flavor(std::env::var(PRIMARY_FLAVOR_ENV).ok().as_deref());
        let backup_flavor = if primary_flavor == Flavor::Sw { Flavor::Finkok } else { Flavor::Sw };
        let organization = pac_sim::Organization::sandbox_at(chrono::Utc::now())
            .map_err(|e| pac_sim::SimError::Engine(pac_sim::engine::EngineError::Certificate(e)))?;
        let config = |flavor: Flavor| {
            let name = flavor.as_str();
            let mut c = SimConfig::new(flavor);
            // Facturapi issues for the sandbox emisor (SAT's test CSD), as an organization would.
            c.organization = (flavor == Flavor::Facturapi).then(|| organization.clone());
            c.state_dir = Some(database_dir.join("timbra-sandbox-pac").join(name));
            c.faults = faults_for(SandboxFaultDto::None);
            // A held "timeout after certify" outlasts the sandbox clients' 4 s timeout.
            c.hold = std::time::Duration::from_secs(8);
            c
        };
        let (primary_config, backup_config) = (config(primary_flavor), config(backup_flavor));
        let (runtime, (primary, backup)) = SimRuntime::run(move || async move {
            let primary = pac_sim::start(primary_config).await?;
            let backup = pac_sim::start(backup_config).await?;
            Ok((primary, backup))
        })
        .await?;
        tracing::info!(primary = %primary.base_url, backup = %backup.base_url, ?primary_flavor, "modo sandbox: simuladores de PAC en marcha");
        Ok(SandboxPacs {
            primary,
            backup,
            primary_flavor,
            backup_flavor,
            _runtime: runtime,
        })
    }
}

/// How far ahead of real time the simulator's clock runs for a fault.
pub fn clock_offset_for(fault: SandboxFaultDto) -> chrono::Duration {
    match fault {
        SandboxFaultDto::FechaExpired | SandboxFaultDto::ValidatesFirstExpired => chrono::Duration::hours(73),
        _ => chrono::Duration::zero(),
    }
}

/// The simulator schedule for a fault (always on top of the defaults: one fault at a time).
/// Finkok's `stamped` lookup settles within 1 s in sandbox, so demos do not wait.
pub fn faults_for(fault: SandboxFaultDto) -> Faults {
    let text = match fault {
        SandboxFaultDto::None => "",
        SandboxFaultDto::TimeoutAfterCertify => "timeout_after_certify=1",
        SandboxFaultDto::Outage => "down=1",
        SandboxFaultDto::ServerError => "http500=1",
        SandboxFaultDto::Slow => "latency_ms=1000..3000",
        SandboxFaultDto::Mixed => "timeout_after_certify=0.1,http500=0.1,refuse=0.15,latency_ms=50..400",
        SandboxFaultDto::FechaExpired => "",
        SandboxFaultDto::StampedWithoutXml => "timeout_after_certify=1,no_xml_307=1,stamped_lag_ms=600000",
        SandboxFaultDto::ValidatesFirstExpired => "validate_before_dedup=1",
        SandboxFaultDto::Pending => "pending=1,pending_ms=8000",
    };
    // The texts above are constants known to parse; fall back to the defaults regardless.
    Faults::parse(&format!("stamped_lag_ms=1000,no_xml_307=0,{text}")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_test_csd_opens_and_matches_its_profile() {
        let csd = cfdi::csd::Csd::load(TEST_CER, TEST_KEY, &test_password()).expect("SAT's test CSD opens with its public password");
        assert_eq!(csd.certificate().rfc(), Some(test_profile().rfc.as_str()));
        assert_eq!(test_no_certificado().unwrap(), csd.certificate().no_certificado());
        cfdi::mapping::validate_emisor(&test_profile()).expect("the sandbox profile is valid");
    }

    #[test]
    fn every_fault_preset_is_a_valid_schedule() {
        use SandboxFaultDto::*;
        assert_eq!(faults_for(None).timeout_after_certify, 0.0);
        assert_eq!(faults_for(TimeoutAfterCertify).timeout_after_certify, 1.0);
        assert!(faults_for(Outage).down);
        assert_eq!(faults_for(ServerError).http500, 1.0);
        assert_eq!(faults_for(Slow).latency_ms, (1000, 3000));
        assert!(faults_for(Mixed).refuse > 0.0 && faults_for(Mixed).timeout_after_certify > 0.0);
        assert_eq!(clock_offset_for(FechaExpired), chrono::Duration::hours(73));
        assert_eq!(clock_offset_for(Outage), chrono::Duration::zero());
        for f in [None, TimeoutAfterCertify, Outage, ServerError, Slow, Mixed, FechaExpired] {
            assert_eq!(faults_for(f).stamped_lag_ms, 1000, "{f:?}");
        }
        let without_xml = faults_for(StampedWithoutXml);
        assert_eq!(without_xml.timeout_after_certify, 1.0);
        assert_eq!(without_xml.no_xml_307, 1.0);
        assert_eq!(without_xml.stamped_lag_ms, 600_000);
        assert!(faults_for(ValidatesFirstExpired).validate_before_dedup);
        assert_eq!((faults_for(Pending).pending, faults_for(Pending).pending_ms), (1.0, 8_000));
        assert_eq!(clock_offset_for(ValidatesFirstExpired), chrono::Duration::hours(73));
    }

    #[test]
    fn the_primary_flavor_is_sw_unless_finkok_is_asked_for() {
        assert_eq!(primary_flavor(Option::None), Flavor::Sw);
        assert_eq!(primary_flavor(Some("")), Flavor::Sw);
        assert_eq!(primary_flavor(Some("facturapi")), Flavor::Facturapi);
        assert_eq!(primary_flavor(Some("marte")), Flavor::Sw);
        assert_eq!(primary_flavor(Some(" Finkok ")), Flavor::Finkok);
    }

    #[tokio::test]
    async fn the_sandbox_simulators_listen_on_loopback_and_keep_their_ledger_by_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let pacs = SandboxPacs::start(dir.path()).await.expect("simulators start");
        for url in [&pacs.primary.base_url, &pacs.primary.control_url, &pacs.backup.base_url] {
            assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        }
        assert_ne!(pacs.primary.base_url, pacs.backup.base_url);
        assert!(dir.path().join("timbra-sandbox-pac/sw").is_dir());
        assert!(dir.path().join("timbra-sandbox-pac/finkok").is_dir());
        pacs.primary.shutdown().await;
        pacs.backup.shutdown().await;
    }
}
