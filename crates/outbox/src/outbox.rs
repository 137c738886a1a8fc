//! [`Outbox`]: the one API both shells (CLI, desktop app) call. It owns the intake flow —
//! validate → map with the current emisor profile → seal with the CSD → one transaction —
//! with the intake idempotency of `docs/intake.md`, and the reads, notes and settings around it. Storage is
//! behind [`AnyStore`]; time behind [`Clock`].
//!
//! Intake, step by step (`record_sale`):
//! 1. the key (the client's idempotency key, else the sale_id) and the sale_id are looked up:
//!    recorded with the same body → the original result, nothing written; with another body →
//!    `IdempotencyConflict`; reserved by a live request → `InProgress{retry_after}`;
//! 2. the sale is validated and mapped, and the CSD checked, before anything is written, so a
//!    validation error leaves no trace;
//! 3. the key is reserved for [`RESERVATION_LEASE`] (a crash leaves a reservation that
//!    expires; then the key is free);
//! 4. the comprobante is built and sealed;
//! 5. one durable transaction writes sale + invoice + attempt #1 (frozen bytes, sha256, Fecha,
//!    PAC, PAC idempotency key, mapping version, reason) + timeline event and settles the key.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration as StdDuration;

use cfdi::csd::Csd;
use cfdi::sale::{Sale, SaleKind};
use cfdi::secret::Secret;
use cfdi::validation::{FieldError, ValidationErrors};
use chrono::{DateTime, Utc};
use serde_json::json;

use crate::actor::Actor;
use crate::clock::Clock;
use crate::error::{OutboxError, Result};
use crate::intake::{self, choose_fecha, pac_idempotency_key, sha256_hex, FECHA_WINDOW, RESERVATION_LEASE};
use crate::location::DatabaseLocation;
use crate::model::PacDirectory;
use crate::model::{
    AttemptReason, Badge, BodyFormat, Counts, InvoiceDetail, InvoicePage, InvoiceRef, InvoiceState, ListFilter, Note, Recorded,
    TimelineEntry, TimelineSource,
};
use crate::settings::{self, DrainSettings, EmisorSettings, EmisorSetup, DEFAULT_PAC, SETTING_PRIMARY_PAC};
use crate::store::any::AnyStore;
use crate::store::sqlite::{SqliteOptions, SqliteStore};
use crate::store::{
    ExistingSale, KeyState, NewAttempt, NewEvent, NewInvoice, NewRecord, NewSale, RecordOutcome, Reservation, StoredEmisorSettings,
};
use crate::store::{IntakeLinks, IntakeLookups, NewIntake};
use crate::strategy::{self, Policy, Verdict};

pub mod bulk;
pub mod numbering;

/// Largest sale JSON accepted by [`Outbox::record_sale_json`].
pub const MAX_SALE_JSON_BYTES: usize = 16 * 1024 * 1024;

/// Longest note, in characters.
pub const MAX_NOTE_CHARS: usize = 10_000;

/// The outbox.
pub struct Outbox {
    store: AnyStore,
    clock: Arc<dyn Clock>,
    password: Mutex<Option<Secret>>,
    /// The CSD loaded for an emisor settings version.
    csd: Mutex<Option<(i64, Arc<Csd>)>>,
    /// Prefix of this instance's reservation owners.
    instance: String,
    reservations: AtomicU64,
    /// The PACs this process reaches instead of the stored PAC list, when its shell declared
    /// them ([`Outbox::use_process_pacs`]: Modo sandbox's in-process simulators).
    process_pacs: RwLock<Option<PacDirectory>>,
    /// Roles unlocked in this process with their credential, and until when
    /// (the `role_credentials` module).
    pub(crate) unlocked: Mutex<Vec<(crate::actor::Role, chrono::DateTime<chrono::Utc>)>>,
}

impl Outbox {
    /// Opens a SQLite outbox.
    pub async fn open_sqlite(opts: &SqliteOptions, clock: Arc<dyn Clock>) -> Result<Outbox> {
        Ok(Outbox::new(AnyStore::Sqlite(SqliteStore::open(opts).await?), clock))
    }

    /// Opens the outbox `location` names (SQLite file or PostgreSQL URL); `create` makes a new
    /// SQLite file or a new PostgreSQL database. `busy_timeout`: how long to wait for another
    /// process.
    pub async fn open_location(
        location: &DatabaseLocation,
        create: bool,
        busy_timeout: StdDuration,
        clock: Arc<dyn Clock>,
    ) -> Result<Outbox> {
        Ok(Outbox::new(AnyStore::open(location, create, busy_timeout).await?, clock))
    }

    /// Opens a PostgreSQL outbox with options a URL cannot carry (a password kept apart, as the
    /// desktop app keeps it in the OS credential store).
    pub async fn open_postgres(opts: &crate::store::postgres::PgOptions, clock: Arc<dyn Clock>) -> Result<Outbox> {
        Ok(Outbox::new(
            AnyStore::Postgres(crate::store::postgres::PgStore::open(opts).await?),
            clock,
        ))
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Poisoning only means a panic elsewhere; the data (a cache, a password) is still whole.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn kind_str(k: SaleKind) -> &'static str {
    match k {
        SaleKind::Ingreso => "ingreso",
        SaleKind::Egreso => "egreso",
        SaleKind::Pago => "pago",
    }
}

fn replay_or_conflict(key: &str, existing: ExistingSale, body_sha256: &str) -> Result<Recorded> {
    if existing.body_sha256 == body_sha256 {
        Ok(Recorded {
            invoice_id: existing.invoice_id,
            sale_id: existing.sale_id,
            state: existing.state,
            replayed: true,
            warnings: vec![],
        })
    } else {
        Err(OutboxError::IdempotencyConflict {
            key: key.to_string(),
            sale_id: existing.sale_id,
            invoice_id: existing.invoice_id,
        })
    }
}

/// Builds and seals a sale's attempt #1 and everything its intake transaction writes (no I/O:
/// the one-sale path and the bulk import's sealing threads share it).
#[allow(clippy::too_many_arguments)]
pub(crate) fn sealed_record(
    sale: &Sale,
    key: &str,
    owner: &str,
    emisor: &StoredEmisorSettings,
    csd: Option<&Csd>,
    (pac, pac_identity): (&str, Option<crate::model::PacIdentity>),
    fecha: intake::FechaChoice,
    body: String,
    body_sha256: &str,
    now: DateTime<Utc>,
    actor: &Actor,
) -> Result<NewRecord> {
    let built = cfdi::build(sale, &emisor.profile, fecha.fecha, csd).map_err(|e| match e {
        cfdi::BuildError::Invalid(v) => OutboxError::Invalid(v),
        cfdi::BuildError::Seal(s) => OutboxError::Seal(s),
    })?;
    let fecha_text = fecha.fecha.format(cfdi::write::FECHA_FORMAT).to_string();
    let occurred_at = sale.occurred_at.0.format(cfdi::write::FECHA_FORMAT).to_string();
    let pac_key = pac_idempotency_key(&emisor.profile.rfc, &sale.sale_id, 1);
    // Sealed XML, or (no CSD: a Facturapi primary) the JSON document Facturapi issues from.
    let (body_format, xml, mapping_version, sealing) = match csd {
        Some(_) => (BodyFormat::Xml, built.to_xml().into_bytes(), cfdi::mapping::MAPPING_VERSION, None),
        None => (
            BodyFormat::Json,
            crate::facturapi_lane::json_body(sale, &emisor.profile, &pac_key)?,
            crate::facturapi_lane::JSON_MAPPING_VERSION,
            Some(crate::facturapi_lane::NO_LOCAL_SEAL),
        ),
    };
    let xml_sha256 = sha256_hex(&xml);
    let c = &built.comprobante;
    let event = NewEvent {
        kind: "sale_recorded".into(),
        detail: json!({
            "body_format": body_format.as_str(),
            "message": sealing,
            "attempt_no": 1,
            "fecha": fecha_text,
            "fecha_source": fecha.source,
            "fecha_reason": fecha.reason,
            "occurred_at": occurred_at,
            "pac": pac,
            "pac_idempotency_key": pac_key,
            "idempotency_key": key,
            "source": actor.channel,
            "sale_sha256": body_sha256,
            "body_sha256": xml_sha256,
            "mapping_version": mapping_version,
            "no_certificado": csd.map(|c| c.certificate().no_certificado()),
        }),
    };
    Ok(NewRecord {
        sale: NewSale {
            sale_id: sale.sale_id.clone(),
            kind: kind_str(sale.kind).into(),
            occurred_at,
            body,
            body_sha256: body_sha256.to_string(),
            source: actor.channel.clone(),
        },
        invoice: NewInvoice {
            serie: sale.serie.clone(),
            folio: sale.folio.clone(),
            receptor_rfc: sale.receptor.rfc.clone(),
            receptor_nombre: sale.receptor.nombre.clone(),
            total: c.total.to_string(),
            moneda: c.moneda.clone(),
            state: InvoiceState::Pending,
            badge: Badge::Pendiente,
            next_try_at_ms: now.timestamp_millis(),
            fecha: fecha_text.clone(),
            fecha_deadline_ms: (fecha.utc + FECHA_WINDOW).timestamp_millis(),
        },
        attempt: NewAttempt {
            attempt_no: 1,
            reason: AttemptReason::Initial,
            previous_attempt_id: None,
            pac: pac.to_string(),
            body_format,
            body: xml,
            body_sha256: xml_sha256,
            fecha: fecha_text,
            fecha_utc_ms: fecha.utc.timestamp_millis(),
            fecha_source: fecha.source,
            pac_idempotency_key: pac_key,
            mapping_version: i64::from(mapping_version),
            emisor_settings_id: Some(emisor.id),
            no_certificado: csd.map(|c| c.certificate().no_certificado().to_string()),
            pac_identity,
        },
        event,
        idempotency_key: key.to_string(),
        reservation_owner: owner.to_string(),
        claim: None,
        folio: crate::store::FolioUse::None,
        at_ms: now.timestamp_millis(),
        actor: actor.clone(),
    })
}

fn in_progress(key: &str, until_ms: i64, now: DateTime<Utc>) -> OutboxError {
    let left = (until_ms - now.timestamp_millis()).max(1000);
    OutboxError::InProgress {
        key: key.to_string(),
        retry_after: StdDuration::from_millis(left as u64),
    }
}

impl Outbox {
    pub fn new(store: AnyStore, clock: Arc<dyn Clock>) -> Outbox {
        use std::hash::{BuildHasher, Hasher};
        let nonce = std::collections::hash_map::RandomState::new().build_hasher().finish();
        Outbox {
            store,
            clock,
            password: Mutex::new(None),
            csd: Mutex::new(None),
            instance: format!("{:x}-{nonce:016x}", std::process::id()),
            reservations: AtomicU64::new(0),
            process_pacs: RwLock::new(None),
            unlocked: Mutex::new(Vec::new()),
        }
    }

    // The strategy ----------------------------------------------------------------------------

    /// Declares the PACs this process reaches instead of the stored PAC list (Modo sandbox's
    /// in-process simulators, whose names and identities no setting holds), or `None` to go
    /// back to the stored list. Intake, actions and verdicts here then name these PACs. It is
    /// the shell's explicit choice: building a drain declares nothing (a drain passes its own
    /// PACs and policy to the verdicts it computes), so a verdict never depends on whether a
    /// drain was built in this process.
    pub fn use_process_pacs(&self, pacs: Option<PacDirectory>) {
        *self.process_pacs.write().unwrap_or_else(|p| p.into_inner()) = pacs;
    }

    pub(crate) fn process_pacs(&self) -> Option<PacDirectory> {
        self.process_pacs.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The policy verdicts outside a drain use: the stored drain settings (a drain uses its
    /// own, [`crate::drain::Drain::policy`]).
    pub async fn policy(&self) -> Result<Policy> {
        let settings = self.drain_settings().await?;
        Ok(Policy {
            max_tries: settings.max_tries,
            backups: self.pac_directory().await?.backups(),
            ..Policy::default()
        })
    }

    /// The verdict on an invoice now: its badge, the reasons and the evidence they rest on,
    /// the allowed and refused actions, the drain's next step. Needs no running drain.
    pub async fn verdict(&self, detail: &InvoiceDetail) -> Result<Verdict> {
        let pacs = self.pac_directory().await?;
        let policy = self.policy().await?;
        Ok(self.verdict_with(detail, &pacs, &policy))
    }

    /// The verdict with the PACs and policy given (a drain's: [`crate::drain::Drain`] passes
    /// its own).
    pub fn verdict_with(&self, detail: &InvoiceDetail, pacs: &PacDirectory, policy: &Policy) -> Verdict {
        let facts = crate::facts::from_detail(detail, &|p, id| pacs.can_lookup_at(p, id));
        strategy::derive(&facts, policy, self.now())
    }

    /// The drain's settings (concurrency, tries before Atención).
    pub async fn drain_settings(&self) -> Result<DrainSettings> {
        match self.store.setting(settings::SETTING_DRAIN).await? {
            None => Ok(DrainSettings::default()),
            Some(v) => serde_json::from_str(&v).map_err(|e| OutboxError::Database(format!("{}: {e}", settings::SETTING_DRAIN))),
        }
    }

    /// Changes the drain's settings (soporte or contador), after checking them.
    pub async fn set_drain_settings(&self, s: &DrainSettings, actor: &Actor) -> Result<DrainSettings> {
        settings::may_change_settings(actor, "cambiar los ajustes del drenado")?;
        s.validate()?;
        let value = serde_json::to_string(s).map_err(|e| OutboxError::Database(e.to_string()))?;
        self.store
            .put_setting(settings::SETTING_DRAIN, &value, actor, self.clock.now().timestamp_millis())
            .await?;
        Ok(s.clone())
    }

    pub fn store(&self) -> &AnyStore {
        &self.store
    }

    /// Now, by this outbox's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// This outbox's clock (another emisor's outbox opened from it keeps the same time).
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    /// Hands over the CSD key's password (from the OS credential store or the environment
    /// variable the settings name). Kept in memory only; the key is decrypted on first use.
    pub fn provide_csd_password(&self, password: Secret) {
        *lock(&self.password) = Some(password);
        *lock(&self.csd) = None;
    }

    // Settings -------------------------------------------------------------------------------

    /// Stores a new emisor profile and CSD after checking them (see [`settings`]); it applies
    /// to sales recorded from now on.
    pub async fn configure_emisor(&self, setup: &EmisorSetup, password: &Secret, actor: &Actor) -> Result<EmisorSettings> {
        settings::may_change_settings(actor, "configurar el emisor y el CSD")?;
        let now = self.clock.now();
        let (row, csd) = settings::check_setup(setup, password, now)?;
        self.check_home_rfc(&setup.profile.rfc).await?;
        let previous_rfc = self.store.current_emisor_settings().await?.map(|s| s.profile.rfc);
        let id = self.store.insert_emisor_settings(&row, actor, now.timestamp_millis()).await?;
        if previous_rfc.is_some_and(|rfc| rfc != setup.profile.rfc) {
            // The role credentials were set under another business's CSD (or SAT's public test
            // CSD of Modo sandbox): that authority no longer stands.
            self.forget_role_credentials(actor).await?;
        }
        *lock(&self.csd) = Some((id, Arc::new(csd)));
        *lock(&self.password) = Some(password.clone());
        tracing::info!(rfc = %setup.profile.rfc, settings_id = id, "emisor y CSD configurados");
        self.emisor_settings().await?.ok_or(OutboxError::NotConfigured)
    }

    /// Keeps a CSD just stored (settings row `id`) and its password for the next sales.
    pub(crate) fn cache_csd(&self, id: i64, csd: Csd, password: &Secret) {
        *lock(&self.csd) = Some((id, Arc::new(csd)));
        *lock(&self.password) = Some(password.clone());
    }

    /// The current emisor settings, if any.
    pub async fn emisor_settings(&self) -> Result<Option<EmisorSettings>> {
        match self.store.current_emisor_settings().await? {
            Some(s) => Ok(Some(EmisorSettings::from_stored(&s)?)),
            None => Ok(None),
        }
    }

    /// The PAC new attempts are frozen for.
    pub async fn primary_pac(&self) -> Result<String> {
        match self.store.setting(SETTING_PRIMARY_PAC).await? {
            Some(v) => serde_json::from_str::<String>(&v).map_err(|e| OutboxError::Database(format!("{SETTING_PRIMARY_PAC}: {e}"))),
            None => Ok(DEFAULT_PAC.to_string()),
        }
    }

    pub async fn set_primary_pac(&self, name: &str, actor: &Actor) -> Result<()> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
            return Err(OutboxError::invalid(
                "pac",
                "texto_invalido",
                "el nombre del PAC debe tener de 1 a 100 caracteres",
            ));
        }
        let value = serde_json::to_string(name).map_err(|e| OutboxError::Database(e.to_string()))?;
        self.store
            .put_setting(SETTING_PRIMARY_PAC, &value, actor, self.clock.now().timestamp_millis())
            .await
    }

    /// Where SAT's services are for this emisor (`sat.url`; SAT's own when unset).
    pub async fn sat_service(&self) -> Result<crate::sat_service::SatService> {
        use crate::sat_service::{SatService, SETTING_SAT_URL};
        match self.store.setting(SETTING_SAT_URL).await? {
            Some(v) => {
                let url =
                    serde_json::from_str::<Option<String>>(&v).map_err(|e| OutboxError::Database(format!("{SETTING_SAT_URL}: {e}")))?;
                Ok(SatService { url })
            }
            None => Ok(SatService::sat()),
        }
    }

    /// Sets the base URL of SAT's services (`None`: SAT's own); checked before it is written.
    pub async fn set_sat_url(&self, url: Option<&str>, actor: &Actor) -> Result<crate::sat_service::SatService> {
        use crate::sat_service::{check_url, SatService, SETTING_SAT_URL};
        settings::may_change_settings(actor, "cambiar la dirección del SAT")?;
        let url = url.map(check_url).transpose()?;
        let value = serde_json::to_string(&url).map_err(|e| OutboxError::Database(e.to_string()))?;
        self.store
            .put_setting(SETTING_SAT_URL, &value, actor, self.clock.now().timestamp_millis())
            .await?;
        Ok(SatService { url })
    }

    pub(crate) fn csd_for(&self, s: &StoredEmisorSettings) -> Result<Arc<Csd>> {
        let mut cache = lock(&self.csd);
        if let Some((id, csd)) = cache.as_ref() {
            if *id == s.id {
                return Ok(csd.clone());
            }
        }
        // Modo sandbox's emisor (its certificates, stored with the sandbox's variable name)
        // opens with the public test password.
        let sandbox = s.password_env == crate::sandbox::PASSWORD_ENV && crate::sandbox::is_sandbox_certificate(&s.no_certificado);
        let password = lock(&self.password)
            .clone()
            .or_else(|| sandbox.then(crate::sandbox::password))
            .ok_or_else(|| OutboxError::CsdLocked {
                password_env: s.password_env.clone(),
            })?;
        let csd = Arc::new(Csd::load(&s.cer_der, &s.key_encrypted, &password)?);
        *cache = Some((s.id, csd.clone()));
        Ok(csd)
    }

    // Intake ---------------------------------------------------------------------------------

    /// Parses a sale from JSON bytes (strict; errors name the field) and records it.
    pub async fn record_sale_json(&self, bytes: &[u8], idempotency_key: Option<&str>, actor: &Actor) -> Result<Recorded> {
        if bytes.len() > MAX_SALE_JSON_BYTES {
            return Err(OutboxError::invalid(
                "(json)",
                "tamano",
                format!("la venta pesa {} bytes; el máximo es {MAX_SALE_JSON_BYTES}", bytes.len()),
            ));
        }
        let sale = Sale::from_json(bytes)?;
        self.record_sale(&sale, idempotency_key, actor).await
    }

    /// Records a sale durably, exactly once per key (see the module docs).
    pub async fn record_sale(&self, sale: &Sale, idempotency_key: Option<&str>, actor: &Actor) -> Result<Recorded> {
        self.record_sale_with(sale, idempotency_key, actor, IntakeLinks::default()).await
    }

    /// [`Outbox::record_sale`] with the links of a fiscal workflow, written in the same
    /// transaction (a ticket, a payment's documents, a global invoice's tickets, warnings).
    pub(crate) async fn record_sale_with(
        &self,
        sale: &Sale,
        idempotency_key: Option<&str>,
        actor: &Actor,
        mut links: IntakeLinks,
    ) -> Result<Recorded> {
        let now = self.clock.now();
        let key = match idempotency_key {
            Some(k) => {
                intake::check_idempotency_key(k)?;
                k
            }
            None => sale.sale_id.as_str(),
        };
        let body = sale.to_canonical_json();
        let body_sha256 = sha256_hex(body.as_bytes());

        // 1. Already known?
        if let Some(done) = self.settled(key, &sale.sale_id, &body_sha256, now, None).await? {
            return Ok(done);
        }

        // 2. Validate, map and check the CSD: nothing written yet.
        let emisor = self.store.current_emisor_settings().await?.ok_or(OutboxError::NotConfigured)?;
        let fecha = choose_fecha(sale.occurred_at.0, &emisor.profile.lugar_expedicion, now);
        let options = self.intake_mapping_options(sale, fecha.fecha).await?;
        cfdi::mapping::map_sale_with(sale, &emisor.profile, fecha.fecha, &options)?;
        let pac = self.primary_pac().await?;
        let pac_identity = self.pac_identity_of(&pac).await?;
        // A Facturapi primary seals with the organization's CSD on its side: no local CSD.
        let csd = if crate::facturapi_lane::is_json_pac(pac_identity.as_ref()) {
            // What Facturapi cannot take (a non-numeric folio, …) is refused before anything
            // is written; this trial body is the one built below.
            crate::facturapi_lane::json_body(sale, &emisor.profile, &pac_idempotency_key(&emisor.profile.rfc, &sale.sale_id, 1))?;
            None
        } else {
            let csd = self.csd_for(&emisor)?;
            csd.check_for(&emisor.profile.rfc, fecha.utc)?;
            Some(csd)
        };
        // The fiscal workflows' checks and links (payments, tickets, 69-B screening).
        let warnings = self.intake_links(sale, &emisor.profile, &mut links, None).await?;
        self.check_brought_folio(sale, None).await?;

        // 3. Reserve the key.
        let owner = format!("{}:{}", self.instance, self.reservations.fetch_add(1, Ordering::Relaxed));
        let now_ms = now.timestamp_millis();
        let until_ms = (now + RESERVATION_LEASE).timestamp_millis();
        match self
            .store
            .reserve_key(key, &sale.sale_id, &body_sha256, &owner, until_ms, now_ms)
            .await?
        {
            Reservation::Granted => {}
            Reservation::Held { until_ms } => return Err(in_progress(key, until_ms, now)),
            Reservation::Recorded(existing) => return replay_or_conflict(key, existing, &body_sha256),
        }

        // 4. Number (a held folio), build and seal; 5. one transaction.
        let (numbered, folio) = match self.number_sale(sale, &owner, until_ms, now_ms).await {
            Ok(n) => n,
            Err(e) => {
                self.release(key, &owner).await;
                return Err(e);
            }
        };
        let result = self
            .build_and_record(
                &numbered,
                folio,
                key,
                &owner,
                &emisor,
                csd.as_deref(),
                (&pac, pac_identity),
                fecha,
                body,
                &body_sha256,
                now,
                actor,
                links,
            )
            .await;
        match result {
            Ok(RecordOutcome::Recorded { invoice_id, .. }) => {
                tracing::info!(sale_id = %sale.sale_id, invoice_id, "venta registrada");
                Ok(Recorded {
                    invoice_id,
                    sale_id: sale.sale_id.clone(),
                    state: if sale.ticket { InvoiceState::Held } else { InvoiceState::Pending },
                    replayed: false,
                    warnings,
                })
            }
            Ok(RecordOutcome::SaleIdTaken) => {
                self.release(key, &owner).await;
                match self.store.sale_by_sale_id(&sale.sale_id).await? {
                    Some(existing) => replay_or_conflict(key, existing, &body_sha256),
                    None => Err(OutboxError::Database(format!(
                        "la venta {:?} se reportó existente y no se encontró",
                        sale.sale_id
                    ))),
                }
            }
            Ok(RecordOutcome::ReservationLost) => match self.settled(key, &sale.sale_id, &body_sha256, self.clock.now(), None).await? {
                Some(done) => Ok(done),
                None => Err(OutboxError::InProgress {
                    key: key.to_string(),
                    retry_after: StdDuration::from_secs(1),
                }),
            },
            Err(e) => {
                self.release(key, &owner).await;
                Err(e)
            }
        }
    }

    /// What the store already knows about this key and sale: a replay, a conflict, a live
    /// reservation by someone else, or nothing (`known`: what a bulk batch read beforehand).
    async fn settled(
        &self,
        key: &str,
        sale_id: &str,
        body_sha256: &str,
        now: DateTime<Utc>,
        known: Option<&IntakeLookups>,
    ) -> Result<Option<Recorded>> {
        let state = match known.and_then(|k| k.keys.get(key)) {
            Some(state) => state.clone(),
            None => self.store.key_state(key).await?,
        };
        match state {
            KeyState::Recorded(existing) => return replay_or_conflict(key, existing, body_sha256).map(Some),
            KeyState::Reserved { until_ms, .. } if until_ms > now.timestamp_millis() => return Err(in_progress(key, until_ms, now)),
            KeyState::Reserved { .. } | KeyState::Free => {}
        }
        let existing = match known.and_then(|k| k.sales.get(sale_id)) {
            Some(sale) => sale.clone(),
            None => self.store.sale_by_sale_id(sale_id).await?,
        };
        match existing {
            Some(existing) => replay_or_conflict(key, existing, body_sha256).map(Some),
            None => Ok(None),
        }
    }

    async fn release(&self, key: &str, owner: &str) {
        if let Err(e) = self.store.release_key(key, owner).await {
            // The reservation expires by itself after RESERVATION_LEASE.
            tracing::warn!(key, error = %e, "no se pudo liberar la reserva de la clave de idempotencia");
        }
        if let Err(e) = self.store.release_folio_holds(owner).await {
            // A held folio goes to the next intake when its lease ends.
            tracing::warn!(key, error = %e, "no se pudo devolver el folio apartado");
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn build_and_record(
        &self,
        sale: &Sale,
        folio: crate::store::FolioUse,
        key: &str,
        owner: &str,
        emisor: &StoredEmisorSettings,
        csd: Option<&Csd>,
        (pac, pac_identity): (&str, Option<crate::model::PacIdentity>),
        fecha: intake::FechaChoice,
        body: String,
        body_sha256: &str,
        now: DateTime<Utc>,
        actor: &Actor,
        links: IntakeLinks,
    ) -> Result<RecordOutcome> {
        if sale.ticket {
            return self
                .record_ticket(sale, key, owner, fecha, body, body_sha256, now, actor, links)
                .await;
        }
        let record = NewRecord {
            folio,
            ..sealed_record(
                sale,
                key,
                owner,
                emisor,
                csd,
                (pac, pac_identity),
                fecha,
                body,
                body_sha256,
                now,
                actor,
            )?
        };
        if links.is_empty() {
            self.store.record_sale(&record).await
        } else {
            self.store
                .record_intake(&NewIntake::from_record(record, links))
                .await?
                .into_record_outcome()
        }
    }

    // Reads ----------------------------------------------------------------------------------

    /// A page of invoices, newest first.
    pub async fn list_invoices(&self, filter: &ListFilter) -> Result<InvoicePage> {
        let limit = filter.effective_limit();
        let mut items = self.store.list_invoices(filter, limit + 1).await?;
        let next = if items.len() > limit as usize {
            items.truncate(limit as usize);
            items.last().map(|i| crate::model::Cursor {
                created_at_ms: i.created_at.timestamp_millis(),
                id: i.id,
            })
        } else {
            None
        };
        Ok(InvoicePage { items, next })
    }

    /// The id of an invoice named by id or sale_id.
    pub async fn find_invoice(&self, r: &InvoiceRef) -> Result<i64> {
        self.store.find_invoice(r).await?.ok_or_else(|| not_found(r))
    }

    /// Everything about one invoice, with the merged timeline.
    pub async fn invoice(&self, r: &InvoiceRef) -> Result<InvoiceDetail> {
        let id = self.find_invoice(r).await?;
        let mut detail = self.store.invoice_detail(id).await?.ok_or_else(|| not_found(r))?;
        merge_timeline(&mut detail);
        self.fill_sat_unreachable(&mut detail).await?;
        Ok(detail)
    }

    /// The frozen body of an attempt.
    pub async fn attempt_body(&self, attempt_id: i64) -> Result<(BodyFormat, Vec<u8>)> {
        self.store.attempt_body(attempt_id).await?.ok_or(OutboxError::NotFound {
            what: "el intento",
            id: attempt_id.to_string(),
        })
    }

    /// Invoices per state and per badge.
    /// The stamped XML of a CFDI by UUID (for download), once the drain persisted it.
    pub async fn cfdi_xml(&self, uuid: &str) -> Result<Option<Vec<u8>>> {
        self.store.cfdi_xml(uuid).await
    }

    pub async fn counts(&self) -> Result<Counts> {
        self.store.counts().await
    }

    // Notes ----------------------------------------------------------------------------------

    /// Adds a note to an invoice.
    pub async fn add_note(&self, invoice: &InvoiceRef, text: &str, actor: &Actor) -> Result<Note> {
        let text = check_note(text)?;
        let id = self.find_invoice(invoice).await?;
        self.store.add_note(id, text, actor, self.clock.now().timestamp_millis()).await
    }

    /// Resolves an active note.
    pub async fn resolve_note(&self, note_id: i64, actor: &Actor) -> Result<Note> {
        self.store.resolve_note(note_id, actor, self.clock.now().timestamp_millis()).await
    }
}

fn not_found(r: &InvoiceRef) -> OutboxError {
    match r {
        InvoiceRef::Id(id) => OutboxError::NotFound {
            what: "la factura",
            id: id.to_string(),
        },
        InvoiceRef::SaleId(s) => OutboxError::NotFound {
            what: "la factura de la venta",
            id: format!("{s:?}"),
        },
    }
}

pub(crate) fn check_note(text: &str) -> Result<&str> {
    let t = text.trim();
    let n = t.chars().count();
    let problem = if t.is_empty() {
        Some("la nota está vacía".to_string())
    } else if n > MAX_NOTE_CHARS {
        Some(format!("la nota tiene {n} caracteres; el máximo es {MAX_NOTE_CHARS}"))
    } else {
        t.chars()
            .find(|c| c.is_control() && *c != '\n' && *c != '\t')
            .map(|c| format!("contiene el carácter de control U+{:04X}", c as u32))
    };
    match problem {
        None => Ok(t),
        Some(message) => Err(OutboxError::Invalid(ValidationErrors::one(FieldError::new(
            "text",
            "texto_invalido",
            message,
        )))),
    }
}

/// Adds tries, evidence and notes to the timeline events already in `detail.timeline` and
/// orders everything by time (ties: events, tries, evidence, notes; then by id).
fn merge_timeline(detail: &mut InvoiceDetail) {
    for t in &detail.tries {
        detail.timeline.push(TimelineEntry {
            at: t.started_at,
            source: TimelineSource::Try,
            ref_id: t.id,
            kind: t.operation.to_string(),
            actor: t.actor.clone(),
            detail: json!({"attempt_id": t.attempt_id, "try_no": t.try_no, "pac": t.pac, "worker": t.worker, "fencing_token": t.fencing_token}),
            said: Vec::new(),
        });
    }
    for e in &detail.evidence {
        detail.timeline.push(TimelineEntry {
            at: e.recorded_at,
            source: TimelineSource::Evidence,
            ref_id: e.id,
            kind: e.kind.to_string(),
            actor: e.actor.clone(),
            detail: json!({"attempt_id": e.attempt_id, "try_id": e.try_id, "outcome": e.outcome, "code": e.code,
                           "message": e.message, "uuid": e.uuid, "detail": e.detail}),
            said: Vec::new(),
        });
    }
    for n in &detail.notes {
        detail.timeline.push(TimelineEntry {
            at: n.created_at,
            source: TimelineSource::Note,
            ref_id: n.id,
            kind: "note_added".into(),
            actor: n.author.clone(),
            detail: json!({"text": n.text}),
            said: Vec::new(),
        });
        if let (Some(at), Some(by)) = (n.resolved_at, &n.resolved_by) {
            detail.timeline.push(TimelineEntry {
                at,
                source: TimelineSource::NoteResolved,
                ref_id: n.id,
                kind: "note_resolved".into(),
                actor: by.clone(),
                detail: json!({"note_id": n.id}),
                said: Vec::new(),
            });
        }
    }
    detail.timeline.sort_by_key(|t| (t.at, t.source, t.ref_id));
    for e in detail.timeline.iter_mut() {
        e.said = crate::timeline_words::phrases(e, &detail.attempts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_checked() {
        assert_eq!(check_note("  revisar con el contador \n").unwrap(), "revisar con el contador");
        assert!(check_note("línea 1\nlínea 2\tcol").is_ok());
        for bad in [String::new(), "   ".into(), "a\u{0007}b".into(), "x".repeat(MAX_NOTE_CHARS + 1)] {
            let e = check_note(&bad).unwrap_err();
            assert!(matches!(&e, OutboxError::Invalid(v) if v.0[0].field == "text"), "{bad:?}");
        }
    }
}
