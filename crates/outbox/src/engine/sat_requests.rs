//! SAT's *Descarga Masiva* requests as durable jobs: each request (direction, tipo, period) is
//! a row of `sat_requests` (migration 0015) that a drain step claims (lease and fencing token,
//! like an invoice), moves by SAT's answers and releases. The HTTP is behind
//! [`pac::descarga::SatDescarga`]; this module only decides and records.
//!
//! **The rules** (what SAT counts, and what Timbra therefore never does):
//! - *The try before the query leaves.* A query is sent only after the row says `enviando`
//!   (its `query_tries` and `query_sent_at_ms` committed). A crash or a lost answer leaves
//!   `enviando`: SAT may hold a request Timbra has no IdSolicitud for, and every identical
//!   query counts toward SAT's lifetime limit (5002) or is answered 5005 while SAT's is live.
//!   So an `enviando` request is **not** sent again right away: Timbra waits
//!   [`LOST_QUERY_WAIT_MS`] (1 h) and then sends the same query once more. If SAT answers 5005
//!   then (its copy is live), it waits [`DUPLICATE_WAIT_MS`] (6 h) and tries again; an answer
//!   known `NotSent` (nothing reached SAT: connection refused, a failed authenticate, a refused
//!   token) goes back to `nueva` with backoff.
//! - *Evidence before state.* An accepted query's IdSolicitud is recorded (`aceptada`) before
//!   anything else; verification then resumes **with the same IdSolicitud** after any restart
//!   (the database refuses a change of a recorded IdSolicitud). An IdSolicitud learned by a
//!   worker that lost its lease is still kept (`adopt`), never hidden. Downloaded packages
//!   are facts: kept in `sat_packages` (by IdPaquete) whoever holds the row.
//! - *Fenced state.* Every state change is `WHERE fencing_token = claimed`.
//! - *SAT's answers settle the request:* 5000 → `aceptada`, verified with backoff
//!   ([`verify_delay_ms`]) while *en proceso*; *terminada* → each package downloaded and kept,
//!   then `terminada`; 5004 → `sin_informacion` (settled empty); 5003 → `dividida`: two child
//!   requests, the period's halves (same transaction); 5002 → `limite` and 5005 (not after a
//!   lost answer) → `duplicada`: never a new request with the same parameters (a trigger and
//!   the partial unique index `sat_requests_one_live` refuse one in the database); *vencida*
//!   → `vencida`; *rechazada*/*error* otherwise → `rechazada`, with SAT's words. Codes that
//!   mean "not taken" (300–305, 404, 5006) go back to `nueva` with backoff.
//! - *Absence at SAT is no proof.* Nothing here opens, settles or changes an invoice: the
//!   packages are read by the reconciliation (`Outbox::unprocessed_sat_packages`).
//!
//! Progress is said in Spanish at read time ([`SatRequest::progress`]: "Solicitud al SAT en
//! proceso desde hace 3 h"). `timbra sat reconcile` enqueues a period (metadata of emitidos and
//! recibidos, one request per day) and `timbra drain` / the app's drain host call
//! [`Outbox::step_sat_requests`] when an e.firma is set.

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, Utc};
use serde::Serialize;

use pac::descarga::{QueryDirection, SatCallError, SatDescarga};
use sat_ws::request::{QueryParams, TipoSolicitud};
use sat_ws::response::{CodEstatus, EstadoSolicitud, QueryAnswer, VerifyAnswer};

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::sat_service::SatDirection;
use crate::store::sat::{NewSatRequest, SatPackageRow, SatRequestRow};
use crate::Outbox;

/// Crash points of the crash tests (feature `failpoints`, `TIMBRA_FAILPOINT=name`).
pub mod failpoint {
    /// The try is committed (`enviando`), the query not sent yet.
    pub const AFTER_TRY: &str = "sat_after_try";
    /// SAT's answer to the query was read, not recorded.
    pub const AFTER_ANSWER: &str = "sat_after_answer";
    /// The IdSolicitud is committed (`aceptada`), not verified yet.
    pub const AFTER_ACCEPTED: &str = "sat_after_accepted";
}

/// How long a claim holds a request.
pub const LEASE_MS: i64 = 2 * 60 * 1000;
/// How many requests one step moves (claimed one at a time).
pub const CLAIM_LIMIT: i64 = 8;
/// After a query whose answer was lost: wait this long before sending it once more.
pub const LOST_QUERY_WAIT_MS: i64 = 60 * 60 * 1000;
/// After 5005 to a query resent after a lost answer: wait this long before the next try.
pub const DUPLICATE_WAIT_MS: i64 = 6 * 60 * 60 * 1000;
/// The longest wait between retries and verifications.
pub const MAX_WAIT_MS: i64 = 30 * 60 * 1000;

/// Wait before the next try after `failures` failures in a row: 30 s doubling, at most 30 min.
pub fn backoff_ms(failures: i64) -> i64 {
    let n = failures.clamp(1, 12) as u32 - 1;
    (30_000i64 << n).min(MAX_WAIT_MS)
}

/// Wait before the `n`-th verification (1-based) of an accepted request.
pub fn verify_delay_ms(n: i64) -> i64 {
    const STEPS: [i64; 7] = [5_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000];
    let i = usize::try_from(n.max(1) - 1).unwrap_or(usize::MAX);
    STEPS.get(i).copied().unwrap_or(MAX_WAIT_MS)
}

/// Metadata or CFDI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SatTipo {
    Metadata,
    Cfdi,
}

impl SatTipo {
    pub fn as_str(self) -> &'static str {
        match self {
            SatTipo::Metadata => "metadata",
            SatTipo::Cfdi => "cfdi",
        }
    }

    pub fn parse(s: &str) -> Option<SatTipo> {
        match s {
            "metadata" => Some(SatTipo::Metadata),
            "cfdi" => Some(SatTipo::Cfdi),
            _ => None,
        }
    }

    fn wire(self) -> TipoSolicitud {
        match self {
            SatTipo::Metadata => TipoSolicitud::Metadata,
            SatTipo::Cfdi => TipoSolicitud::Cfdi,
        }
    }
}

/// A request's state (the words stored in `sat_requests.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SatRequestState {
    Nueva,
    Enviando,
    Aceptada,
    EnProceso,
    Descargando,
    Terminada,
    SinInformacion,
    Dividida,
    Limite,
    Duplicada,
    Vencida,
    Rechazada,
}

impl SatRequestState {
    pub const ALL: [SatRequestState; 12] = [
        SatRequestState::Nueva,
        SatRequestState::Enviando,
        SatRequestState::Aceptada,
        SatRequestState::EnProceso,
        SatRequestState::Descargando,
        SatRequestState::Terminada,
        SatRequestState::SinInformacion,
        SatRequestState::Dividida,
        SatRequestState::Limite,
        SatRequestState::Duplicada,
        SatRequestState::Vencida,
        SatRequestState::Rechazada,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SatRequestState::Nueva => "nueva",
            SatRequestState::Enviando => "enviando",
            SatRequestState::Aceptada => "aceptada",
            SatRequestState::EnProceso => "en_proceso",
            SatRequestState::Descargando => "descargando",
            SatRequestState::Terminada => "terminada",
            SatRequestState::SinInformacion => "sin_informacion",
            SatRequestState::Dividida => "dividida",
            SatRequestState::Limite => "limite",
            SatRequestState::Duplicada => "duplicada",
            SatRequestState::Vencida => "vencida",
            SatRequestState::Rechazada => "rechazada",
        }
    }

    pub fn parse(s: &str) -> Option<SatRequestState> {
        SatRequestState::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Not settled: a drain step still has work (or a wait) for it.
    pub fn is_live(self) -> bool {
        matches!(
            self,
            SatRequestState::Nueva
                | SatRequestState::Enviando
                | SatRequestState::Aceptada
                | SatRequestState::EnProceso
                | SatRequestState::Descargando
        )
    }

    /// The state in words (CLI, console).
    pub fn words(self) -> &'static str {
        match self {
            SatRequestState::Nueva => "por enviar",
            SatRequestState::Enviando => "enviada, sin respuesta",
            SatRequestState::Aceptada => "aceptada",
            SatRequestState::EnProceso => "en proceso",
            SatRequestState::Descargando => "descargando",
            SatRequestState::Terminada => "terminada",
            SatRequestState::SinInformacion => "sin CFDI en el periodo",
            SatRequestState::Dividida => "dividida",
            SatRequestState::Limite => "límite del SAT",
            SatRequestState::Duplicada => "duplicada en el SAT",
            SatRequestState::Vencida => "vencida",
            SatRequestState::Rechazada => "rechazada",
        }
    }
}

/// What a request asks for: one direction, metadata or CFDI, one period (SAT's local time,
/// seconds included, both ends inside).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SatPeriod {
    pub direction: SatDirection,
    pub tipo: SatTipo,
    pub desde: NaiveDateTime,
    pub hasta: NaiveDateTime,
}

const WIRE_TIME: &str = "%Y-%m-%dT%H:%M:%S";

impl SatPeriod {
    /// One whole day, 00:00:00 to 23:59:59.
    pub fn day(direction: SatDirection, tipo: SatTipo, day: NaiveDate) -> SatPeriod {
        let desde = day.and_time(chrono::NaiveTime::MIN);
        SatPeriod {
            direction,
            tipo,
            desde,
            hasta: desde + Duration::seconds(86_399),
        }
    }

    /// The canonical text of the parameters (`params_key`): identical parameters, same key.
    pub fn params_key(&self) -> String {
        format!(
            "{}|{}|{}|{}",
            self.direction.as_str(),
            self.tipo.as_str(),
            self.desde.format(WIRE_TIME),
            self.hasta.format(WIRE_TIME)
        )
    }

    fn new_row(&self, parent_id: Option<i64>) -> NewSatRequest {
        NewSatRequest {
            parent_id,
            direction: self.direction.as_str().to_string(),
            tipo: self.tipo.as_str().to_string(),
            desde: self.desde.format(WIRE_TIME).to_string(),
            hasta: self.hasta.format(WIRE_TIME).to_string(),
            params_key: self.params_key(),
        }
    }

    /// The two halves of the period (5003), or `None` when it is one second already.
    pub fn halves(&self) -> Option<(SatPeriod, SatPeriod)> {
        let span = (self.hasta - self.desde).num_seconds();
        if span < 1 {
            return None;
        }
        let mid = self.desde + Duration::seconds(span / 2);
        let a = SatPeriod {
            hasta: mid,
            ..self.clone()
        };
        let b = SatPeriod {
            desde: mid + Duration::seconds(1),
            ..self.clone()
        };
        Some((a, b))
    }

    fn query_params(&self) -> QueryParams {
        QueryParams::period(self.desde, self.hasta, self.tipo.wire())
    }

    fn query_direction(&self) -> QueryDirection {
        match self.direction {
            SatDirection::Emitidos => QueryDirection::Emitidos,
            SatDirection::Recibidos => QueryDirection::Recibidos,
        }
    }
}

/// What enqueueing a period did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Enqueued {
    /// A new request.
    Created { id: i64 },
    /// A request with these parameters is live or already answered; nothing new.
    Existing { id: i64, state: SatRequestState },
    /// SAT answered 5002 or 5005 for these parameters: never asked again.
    Forbidden { id: i64, state: SatRequestState },
}

impl Enqueued {
    pub fn id(self) -> i64 {
        match self {
            Enqueued::Created { id } | Enqueued::Existing { id, .. } | Enqueued::Forbidden { id, .. } => id,
        }
    }
}

/// A request as the console and the CLI show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SatRequest {
    pub id: i64,
    pub parent_id: Option<i64>,
    pub period: SatPeriod,
    pub state: SatRequestState,
    pub state_words: String,
    pub id_solicitud: Option<String>,
    /// SAT's last code (query, or the verification's CodigoEstadoSolicitud).
    pub sat_code: Option<i64>,
    pub numero_cfdis: Option<i64>,
    pub paquetes: Vec<String>,
    /// The last thing that happened, in words.
    pub message: String,
    /// Where it stands now, in words ("Solicitud al SAT en proceso desde hace 3 h").
    pub progress: String,
    pub query_tries: i64,
    pub lost_queries: i64,
    pub created_at: DateTime<Utc>,
    pub accepted_at: Option<DateTime<Utc>>,
    pub settled_at: Option<DateTime<Utc>>,
    pub next_try_at: Option<DateTime<Utc>>,
}

/// What one step did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SatStepReport {
    pub claimed: usize,
    pub fenced_out: usize,
    /// Requests not settled after the step.
    pub live: i64,
    /// When the next one is due (None: nothing live).
    pub next_due: Option<DateTime<Utc>>,
}

fn instant(ms: i64) -> Result<DateTime<Utc>> {
    DateTime::from_timestamp_millis(ms).ok_or_else(|| OutboxError::Database(format!("instante fuera de rango: {ms}")))
}

/// "3 h", "12 min", "2 días", "40 s".
pub fn span_words(d: Duration) -> String {
    let s = d.num_seconds().max(0);
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min", s / 60)
    } else if s < 2 * 86_400 {
        format!("{} h", s / 3600)
    } else {
        format!("{} días", s / 86_400)
    }
}

fn hora(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

fn period_of(r: &SatRequestRow) -> Result<SatPeriod> {
    let bad = |what: &str| OutboxError::Database(format!("sat_requests {}: {what} ilegible", r.id));
    Ok(SatPeriod {
        direction: SatDirection::parse(&r.direction).ok_or_else(|| bad("direction"))?,
        tipo: SatTipo::parse(&r.tipo).ok_or_else(|| bad("tipo"))?,
        desde: NaiveDateTime::parse_from_str(&r.desde, WIRE_TIME).map_err(|_| bad("desde"))?,
        hasta: NaiveDateTime::parse_from_str(&r.hasta, WIRE_TIME).map_err(|_| bad("hasta"))?,
    })
}

fn state_of(r: &SatRequestRow) -> Result<SatRequestState> {
    SatRequestState::parse(&r.state).ok_or_else(|| OutboxError::Database(format!("sat_requests {}: estado {:?}", r.id, r.state)))
}

fn paquetes_of(r: &SatRequestRow) -> Vec<String> {
    serde_json::from_str(&r.paquetes).unwrap_or_default()
}

impl SatRequest {
    fn from_row(r: &SatRequestRow, now: DateTime<Utc>) -> Result<SatRequest> {
        let state = state_of(r)?;
        let accepted_at = r.accepted_at_ms.map(instant).transpose()?;
        let paquetes = paquetes_of(r);
        let progress = match state {
            SatRequestState::Nueva if r.failures > 0 => format!("Por enviar al SAT; {}", r.message),
            SatRequestState::Nueva => "Por enviar al SAT".to_string(),
            SatRequestState::Enviando => {
                let since = r.query_sent_at_ms.map(instant).transpose()?.unwrap_or(now);
                format!(
                    "Enviada al SAT hace {} sin respuesta; Timbra no la repite hasta {} (el SAT pudo haberla recibido)",
                    span_words(now - since),
                    hora(instant(r.next_try_at_ms)?)
                )
            }
            SatRequestState::Aceptada | SatRequestState::EnProceso => {
                format!(
                    "Solicitud al SAT en proceso desde hace {}",
                    span_words(now - accepted_at.unwrap_or(now))
                )
            }
            SatRequestState::Descargando => format!("Descargando {} paquete(s) del SAT", paquetes.len()),
            SatRequestState::Terminada => format!(
                "Terminada: {} CFDI en {} paquete(s) descargado(s)",
                r.numero_cfdis.unwrap_or(0),
                paquetes.len()
            ),
            SatRequestState::SinInformacion => "El SAT no tiene CFDI en el periodo (5004)".to_string(),
            SatRequestState::Dividida => "El periodo rebasa el máximo del SAT (5003): se dividió en dos solicitudes".to_string(),
            SatRequestState::Limite => "El SAT agotó las solicitudes con estos parámetros (5002); Timbra no la vuelve a pedir".to_string(),
            SatRequestState::Duplicada => "El SAT ya tiene una solicitud vigente igual (5005); Timbra no la vuelve a pedir".to_string(),
            SatRequestState::Vencida => "Vencida: el SAT ya no entrega sus paquetes".to_string(),
            SatRequestState::Rechazada => format!("Rechazada por el SAT: {}", r.message),
        };
        Ok(SatRequest {
            id: r.id,
            parent_id: r.parent_id,
            period: period_of(r)?,
            state,
            state_words: state.words().to_string(),
            id_solicitud: r.id_solicitud.clone(),
            sat_code: r.codigo_estado.or(r.cod_estatus),
            numero_cfdis: r.numero_cfdis,
            paquetes,
            message: r.message.clone(),
            progress,
            query_tries: r.query_tries,
            lost_queries: r.lost_queries,
            created_at: instant(r.created_at_ms)?,
            accepted_at,
            settled_at: r.settled_at_ms.map(instant).transpose()?,
            next_try_at: if state.is_live() { Some(instant(r.next_try_at_ms)?) } else { None },
        })
    }
}

/// SAT's query codes that mean "not taken, ask again later".
fn not_taken(c: CodEstatus) -> bool {
    matches!(
        c,
        CodEstatus::UsuarioNoValido
            | CodEstatus::XmlMalFormado
            | CodEstatus::SelloMalFormado
            | CodEstatus::SelloNoCorresponde
            | CodEstatus::CertificadoRevocado
            | CodEstatus::CertificadoInvalido
            | CodEstatus::ErrorNoControlado
            | CodEstatus::ErrorInterno
    )
}

fn code(c: CodEstatus) -> i64 {
    i64::from(c.code())
}

/// What a step decided for one row: save it (fenced) and stop, or go on at once.
enum Next {
    /// Save and release: the next move waits for `next_try_at_ms`, or it is settled.
    Wait,
    /// Save (keep the lease) and make the next move now.
    Continue,
    /// Save the parent settled as `dividida` with these children.
    Split(Vec<NewSatRequest>),
}

impl Outbox {
    /// Enqueues one request (see [`Enqueued`]): nothing new when a request with the same
    /// parameters is live or answered (SAT counts every identical request toward its lifetime
    /// limit), none ever after 5002/5005; a new one after `vencida` or `rechazada`.
    pub async fn enqueue_sat_request(&self, period: &SatPeriod, actor: &Actor) -> Result<Enqueued> {
        if period.hasta < period.desde {
            return Err(OutboxError::invalid(
                "hasta",
                "periodo_invalido",
                "la fecha final del periodo es anterior a la inicial; corrija --desde y --hasta",
            ));
        }
        let key = period.params_key();
        if let Some(found) = self.existing_sat_request(&key).await? {
            return Ok(found);
        }
        let now = self.now().timestamp_millis();
        match self.store().insert_sat_request(&period.new_row(None), actor, now).await {
            Ok(id) => Ok(Enqueued::Created { id }),
            // Another process enqueued the same parameters meanwhile (the unique index).
            Err(OutboxError::Integrity(why)) => match self.existing_sat_request(&key).await? {
                Some(found) => Ok(found),
                None => Err(OutboxError::Integrity(why)),
            },
            Err(e) => Err(e),
        }
    }

    async fn existing_sat_request(&self, key: &str) -> Result<Option<Enqueued>> {
        let Some((id, state)) = self.store().latest_sat_request(key).await? else {
            return Ok(None);
        };
        let state = SatRequestState::parse(&state).ok_or_else(|| OutboxError::Database(format!("sat_requests {id}: estado {state:?}")))?;
        Ok(match state {
            SatRequestState::Limite | SatRequestState::Duplicada => Some(Enqueued::Forbidden { id, state }),
            SatRequestState::Vencida | SatRequestState::Rechazada => None,
            _ => Some(Enqueued::Existing { id, state }),
        })
    }

    /// `timbra sat reconcile`'s requests: metadata of emitidos and of recibidos, one request per
    /// day from `desde` to `hasta` (both included; at most 366 days).
    pub async fn enqueue_sat_days(&self, desde: NaiveDate, hasta: NaiveDate, actor: &Actor) -> Result<Vec<(SatPeriod, Enqueued)>> {
        let days = (hasta - desde).num_days();
        if days < 0 {
            return Err(OutboxError::invalid(
                "hasta",
                "periodo_invalido",
                "la fecha final del periodo es anterior a la inicial; corrija --desde y --hasta",
            ));
        }
        if days > 365 {
            return Err(OutboxError::invalid(
                "hasta",
                "periodo_largo",
                "el periodo abarca más de un año; pida a lo más 366 días por vez",
            ));
        }
        let mut out = Vec::new();
        for d in desde.iter_days().take(usize::try_from(days + 1).unwrap_or(0)) {
            for direction in [SatDirection::Emitidos, SatDirection::Recibidos] {
                let p = SatPeriod::day(direction, SatTipo::Metadata, d);
                let e = self.enqueue_sat_request(&p, actor).await?;
                out.push((p, e));
            }
        }
        Ok(out)
    }

    /// Every SAT request, the oldest first.
    pub async fn sat_requests(&self) -> Result<Vec<SatRequest>> {
        let now = self.now();
        self.store()
            .list_sat_requests()
            .await?
            .iter()
            .map(|r| SatRequest::from_row(r, now))
            .collect()
    }

    /// One SAT request.
    pub async fn sat_request(&self, id: i64) -> Result<Option<SatRequest>> {
        let now = self.now();
        self.store()
            .sat_request(id)
            .await?
            .map(|r| SatRequest::from_row(&r, now))
            .transpose()
    }

    /// How many requests are not settled and when the next is due: cheap, for the drain.
    pub async fn sat_requests_pending(&self) -> Result<(i64, Option<DateTime<Utc>>)> {
        let (live, next) = self.store().live_sat_requests().await?;
        Ok((live, next.map(instant).transpose()?))
    }

    /// Downloaded packages nobody has read yet (`processed_at_ms` NULL), the oldest first.
    pub async fn unprocessed_sat_packages(&self) -> Result<Vec<SatPackageRow>> {
        self.store().unprocessed_sat_packages().await
    }

    /// One drain step over SAT's requests: claims the due ones and moves each as far as SAT's
    /// answers allow (see the module docs). Cheap when nothing is due (one indexed UPDATE).
    pub async fn step_sat_requests(&self, sat: &dyn SatDescarga, worker: &str) -> Result<SatStepReport> {
        let mut report = SatStepReport::default();
        // One at a time: a worker that dies holds only the request it was moving.
        for _ in 0..CLAIM_LIMIT {
            let now = self.now().timestamp_millis();
            let claimed = self.store().claim_sat_requests(worker, now, now + LEASE_MS, 1).await?;
            let Some((id, token)) = claimed.first().copied() else {
                break;
            };
            report.claimed += 1;
            if !self.move_sat_request(sat, id, token).await? {
                report.fenced_out += 1;
            }
        }
        let (live, next) = self.sat_requests_pending().await?;
        report.live = live;
        report.next_due = next;
        Ok(report)
    }

    /// Moves one claimed request; false when it was fenced out.
    async fn move_sat_request(&self, sat: &dyn SatDescarga, id: i64, token: i64) -> Result<bool> {
        let Some(mut r) = self.store().sat_request(id).await? else {
            return Ok(true);
        };
        loop {
            let state = state_of(&r)?;
            let next = match state {
                SatRequestState::Nueva => match self.send_query(sat, &mut r, token).await? {
                    Some(next) => next,
                    None => return Ok(false),
                },
                SatRequestState::Enviando => {
                    let now = self.now().timestamp_millis();
                    if now < r.next_try_at_ms {
                        // Not due yet (claimed as due: clock skew); wait.
                        Next::Wait
                    } else {
                        match self.send_query(sat, &mut r, token).await? {
                            Some(next) => next,
                            None => return Ok(false),
                        }
                    }
                }
                SatRequestState::Aceptada | SatRequestState::EnProceso => self.verify(sat, &mut r).await?,
                SatRequestState::Descargando => self.download(sat, &mut r).await?,
                _ => Next::Wait,
            };
            let now = self.now().timestamp_millis();
            if !state_of(&r)?.is_live() && r.settled_at_ms.is_none() {
                r.settled_at_ms = Some(now);
            }
            let (release, children) = match next {
                Next::Wait => (true, Vec::new()),
                Next::Continue => (false, Vec::new()),
                Next::Split(c) => (true, c),
            };
            if !self.store().save_sat_request(&r, token, release, &children, now).await? {
                tracing::warn!(id = r.id, "solicitud al SAT: otro proceso la tomó (fenced out)");
                return Ok(false);
            }
            if release {
                return Ok(true);
            }
        }
    }

    /// Records the try, sends the query and records SAT's answer. `None`: fenced out before
    /// sending (nothing sent).
    async fn send_query(&self, sat: &dyn SatDescarga, r: &mut SatRequestRow, token: i64) -> Result<Option<Next>> {
        let period = period_of(r)?;
        let resend = state_of(r)? == SatRequestState::Enviando;
        let now = self.now();
        let now_ms = now.timestamp_millis();
        // The try before the query leaves.
        if resend {
            r.lost_queries += 1;
        }
        r.state = SatRequestState::Enviando.as_str().to_string();
        r.query_tries += 1;
        r.query_sent_at_ms = Some(now_ms);
        r.next_try_at_ms = now_ms + LOST_QUERY_WAIT_MS;
        r.message = if resend {
            "La solicitud se envía de nuevo al SAT tras perderse su respuesta".to_string()
        } else {
            "Solicitud enviada al SAT; esperando su respuesta".to_string()
        };
        if !self.store().save_sat_request(r, token, false, &[], now_ms).await? {
            return Ok(None);
        }
        crate::drain::failpoint::hit(failpoint::AFTER_TRY);
        let answer = sat.query(period.query_direction(), &period.query_params(), now).await;
        crate::drain::failpoint::hit(failpoint::AFTER_ANSWER);
        let now_ms = self.now().timestamp_millis();
        Ok(Some(match answer {
            Err(SatCallError::NotSent(why)) => {
                // Nothing reached SAT: safe to send again, after a backoff.
                r.state = SatRequestState::Nueva.as_str().to_string();
                r.failures += 1;
                r.next_try_at_ms = now_ms + backoff_ms(r.failures);
                r.message = format!(
                    "No se pudo enviar la solicitud al SAT: {why}; se reintenta el {}",
                    hora(instant(r.next_try_at_ms)?)
                );
                Next::Wait
            }
            Err(SatCallError::Unknown(why)) => {
                r.failures += 1;
                r.next_try_at_ms = now_ms + LOST_QUERY_WAIT_MS;
                r.message = format!(
                    "Sin respuesta del SAT a la solicitud ({why}); el SAT pudo haberla recibido: Timbra no la repite hasta el {} para no gastar el límite del SAT",
                    hora(instant(r.next_try_at_ms)?)
                );
                Next::Wait
            }
            Ok(a) => self.query_answered(r, &a, r.lost_queries > 0, token).await?,
        }))
    }

    async fn query_answered(&self, r: &mut SatRequestRow, a: &QueryAnswer, after_lost: bool, token: i64) -> Result<Next> {
        let now_ms = self.now().timestamp_millis();
        r.cod_estatus = Some(code(a.cod_estatus));
        let sat_words = format!("{} {}", a.cod_estatus.code(), a.mensaje.trim());
        Ok(match a.cod_estatus {
            CodEstatus::Aceptada if !a.id_solicitud.trim().is_empty() => {
                r.state = SatRequestState::Aceptada.as_str().to_string();
                r.id_solicitud = Some(a.id_solicitud.trim().to_string());
                r.accepted_at_ms = Some(now_ms);
                r.failures = 0;
                r.next_try_at_ms = now_ms + verify_delay_ms(1);
                r.message = format!("El SAT aceptó la solicitud (IdSolicitud {})", a.id_solicitud.trim());
                // Evidence first: the IdSolicitud is committed now, even if the lease was lost.
                if !self.store().save_sat_request(r, token, true, &[], now_ms).await? {
                    self.store().adopt_sat_id_solicitud(r.id, a.id_solicitud.trim(), now_ms).await?;
                    tracing::warn!(id = r.id, "IdSolicitud guardado por un proceso sin la solicitud (fenced out)");
                }
                crate::drain::failpoint::hit(failpoint::AFTER_ACCEPTED);
                Next::Wait
            }
            CodEstatus::LimiteDeSolicitudes => {
                r.state = SatRequestState::Limite.as_str().to_string();
                r.message = format!("El SAT agotó las solicitudes de por vida con estos parámetros ({sat_words})");
                Next::Wait
            }
            CodEstatus::SolicitudDuplicada if after_lost => {
                // SAT holds a live copy: most likely the one whose answer was lost. Wait for it.
                r.state = SatRequestState::Enviando.as_str().to_string();
                r.next_try_at_ms = now_ms + DUPLICATE_WAIT_MS;
                r.message = format!(
                    "El SAT tiene una solicitud vigente con estos parámetros, probablemente la que Timbra envió sin recibir respuesta ({sat_words}); se vuelve a intentar el {}",
                    hora(instant(r.next_try_at_ms)?)
                );
                Next::Wait
            }
            CodEstatus::SolicitudDuplicada => {
                r.state = SatRequestState::Duplicada.as_str().to_string();
                r.message = format!("El SAT ya tiene una solicitud vigente con los mismos parámetros ({sat_words})");
                Next::Wait
            }
            CodEstatus::SinInformacion => {
                r.state = SatRequestState::SinInformacion.as_str().to_string();
                r.numero_cfdis = Some(0);
                r.message = format!("El SAT no encontró CFDI en el periodo ({sat_words})");
                Next::Wait
            }
            CodEstatus::TopeMaximo => self.split(r, &sat_words)?,
            c if not_taken(c) || c == CodEstatus::Aceptada => {
                r.state = SatRequestState::Nueva.as_str().to_string();
                r.failures += 1;
                r.next_try_at_ms = now_ms + backoff_ms(r.failures);
                r.message = format!(
                    "El SAT no tomó la solicitud ({sat_words}); se reintenta el {}",
                    hora(instant(r.next_try_at_ms)?)
                );
                Next::Wait
            }
            _ => {
                r.state = SatRequestState::Rechazada.as_str().to_string();
                r.message = format!("El SAT rechazó la solicitud ({sat_words})");
                Next::Wait
            }
        })
    }

    fn split(&self, r: &mut SatRequestRow, sat_words: &str) -> Result<Next> {
        let period = period_of(r)?;
        match period.halves() {
            Some((a, b)) => {
                r.state = SatRequestState::Dividida.as_str().to_string();
                r.message = format!(
                    "El periodo rebasa el máximo de CFDI de una solicitud ({sat_words}); se dividió en {} – {} y {} – {}",
                    a.desde, a.hasta, b.desde, b.hasta
                );
                Ok(Next::Split(vec![a.new_row(Some(r.id)), b.new_row(Some(r.id))]))
            }
            None => {
                r.state = SatRequestState::Rechazada.as_str().to_string();
                r.message = format!("El periodo de un segundo rebasa el máximo del SAT ({sat_words}); no se puede dividir más");
                Ok(Next::Wait)
            }
        }
    }

    async fn verify(&self, sat: &dyn SatDescarga, r: &mut SatRequestRow) -> Result<Next> {
        let Some(id_solicitud) = r.id_solicitud.clone() else {
            return Err(OutboxError::Database(format!("sat_requests {}: aceptada sin IdSolicitud", r.id)));
        };
        r.verifications += 1;
        let answer = sat.verify(&id_solicitud, self.now()).await;
        let now_ms = self.now().timestamp_millis();
        let v: VerifyAnswer = match answer {
            Ok(v) if v.cod_estatus == CodEstatus::Aceptada => v,
            Ok(v) => {
                r.failures += 1;
                r.next_try_at_ms = now_ms + backoff_ms(r.failures);
                r.message = format!(
                    "El SAT no contestó el estado de la solicitud ({} {}); se consulta de nuevo el {}",
                    v.cod_estatus.code(),
                    v.mensaje.trim(),
                    hora(instant(r.next_try_at_ms)?)
                );
                return Ok(Next::Wait);
            }
            Err(e) => {
                r.failures += 1;
                r.next_try_at_ms = now_ms + backoff_ms(r.failures);
                r.message = format!(
                    "No se pudo consultar el estado de la solicitud: {e}; se consulta de nuevo el {}",
                    hora(instant(r.next_try_at_ms)?)
                );
                return Ok(Next::Wait);
            }
        };
        r.failures = 0;
        r.estado_solicitud = Some(i64::from(v.estado.code()));
        r.codigo_estado = Some(code(v.codigo_estado));
        let sat_words = format!("{} {}", v.codigo_estado.code(), v.mensaje.trim());
        Ok(match v.estado {
            EstadoSolicitud::Aceptada | EstadoSolicitud::EnProceso => {
                r.state = SatRequestState::EnProceso.as_str().to_string();
                r.next_try_at_ms = now_ms + verify_delay_ms(r.verifications + 1);
                r.message = format!(
                    "El SAT sigue procesando la solicitud; se consulta de nuevo el {}",
                    hora(instant(r.next_try_at_ms)?)
                );
                Next::Wait
            }
            EstadoSolicitud::Terminada => {
                r.numero_cfdis = i64::try_from(v.numero_cfdis).ok();
                r.paquetes = serde_json::to_string(&v.paquetes).map_err(|e| OutboxError::Database(e.to_string()))?;
                if v.paquetes.is_empty() {
                    r.state = SatRequestState::Terminada.as_str().to_string();
                    r.message = "El SAT terminó la solicitud sin paquetes".to_string();
                    Next::Wait
                } else {
                    r.state = SatRequestState::Descargando.as_str().to_string();
                    r.next_try_at_ms = now_ms;
                    r.message = format!("El SAT terminó la solicitud: {} paquete(s) por descargar", v.paquetes.len());
                    Next::Continue
                }
            }
            EstadoSolicitud::Rechazada | EstadoSolicitud::Error => match v.codigo_estado {
                CodEstatus::SinInformacion => {
                    r.state = SatRequestState::SinInformacion.as_str().to_string();
                    r.numero_cfdis = Some(0);
                    r.message = format!("El SAT no encontró CFDI en el periodo ({sat_words})");
                    Next::Wait
                }
                CodEstatus::TopeMaximo => self.split(r, &sat_words)?,
                CodEstatus::LimiteDeSolicitudes => {
                    r.state = SatRequestState::Limite.as_str().to_string();
                    r.message = format!("El SAT agotó las solicitudes de por vida con estos parámetros ({sat_words})");
                    Next::Wait
                }
                _ => {
                    r.state = SatRequestState::Rechazada.as_str().to_string();
                    r.message = format!("El SAT rechazó la solicitud ({sat_words})");
                    Next::Wait
                }
            },
            EstadoSolicitud::Vencida => {
                r.state = SatRequestState::Vencida.as_str().to_string();
                r.message = format!("La solicitud venció en el SAT antes de descargar sus paquetes ({sat_words})");
                Next::Wait
            }
        })
    }

    async fn download(&self, sat: &dyn SatDescarga, r: &mut SatRequestRow) -> Result<Next> {
        let period = period_of(r)?;
        let kept = self.store().sat_package_ids(r.id).await?;
        let paquetes = paquetes_of(r);
        for p in paquetes.iter().filter(|p| !kept.contains(p)) {
            let answer = sat.download(p, self.now()).await;
            let now_ms = self.now().timestamp_millis();
            match answer {
                Ok(d) if d.cod_estatus == CodEstatus::Aceptada && !d.paquete.is_empty() => {
                    // A package is a fact: kept whoever holds the row.
                    self.store()
                        .insert_sat_package(&SatPackageRow {
                            id_paquete: p.clone(),
                            request_id: r.id,
                            direction: period.direction.as_str().to_string(),
                            tipo: period.tipo.as_str().to_string(),
                            bytes: d.paquete,
                            downloaded_at_ms: now_ms,
                            processed_at_ms: None,
                        })
                        .await?;
                }
                Ok(d) if matches!(d.cod_estatus, CodEstatus::PaqueteInexistente | CodEstatus::MaximoDeDescargas) => {
                    r.state = SatRequestState::Vencida.as_str().to_string();
                    r.message = format!(
                        "El SAT ya no entrega el paquete {p} ({} {})",
                        d.cod_estatus.code(),
                        d.mensaje.trim()
                    );
                    return Ok(Next::Wait);
                }
                Ok(d) => {
                    r.failures += 1;
                    r.next_try_at_ms = now_ms + backoff_ms(r.failures);
                    r.message = format!(
                        "El SAT no entregó el paquete {p} ({} {}); se intenta de nuevo el {}",
                        d.cod_estatus.code(),
                        d.mensaje.trim(),
                        hora(instant(r.next_try_at_ms)?)
                    );
                    return Ok(Next::Wait);
                }
                Err(e) => {
                    r.failures += 1;
                    r.next_try_at_ms = now_ms + backoff_ms(r.failures);
                    r.message = format!(
                        "No se pudo descargar el paquete {p}: {e}; se intenta de nuevo el {}",
                        hora(instant(r.next_try_at_ms)?)
                    );
                    return Ok(Next::Wait);
                }
            }
        }
        r.failures = 0;
        r.state = SatRequestState::Terminada.as_str().to_string();
        r.message = format!("{} paquete(s) descargado(s) y guardado(s)", paquetes.len());
        Ok(Next::Wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_split_in_halves_and_keys_are_canonical() {
        let d = NaiveDate::from_ymd_opt(2026, 12, 1).unwrap();
        let p = SatPeriod::day(SatDirection::Emitidos, SatTipo::Metadata, d);
        assert_eq!(p.params_key(), "emitidos|metadata|2026-12-01T00:00:00|2026-12-01T23:59:59");
        let (a, b) = p.halves().unwrap();
        assert_eq!(a.hasta.to_string(), "2026-12-01 11:59:59");
        assert_eq!(b.desde.to_string(), "2026-12-01 12:00:00");
        assert_eq!(b.hasta, p.hasta);
        let one = SatPeriod {
            hasta: p.desde,
            ..p.clone()
        };
        assert!(one.halves().is_none());
        for s in SatRequestState::ALL {
            assert_eq!(SatRequestState::parse(s.as_str()), Some(s));
        }
        assert_eq!(backoff_ms(1), 30_000);
        assert_eq!(backoff_ms(40), MAX_WAIT_MS);
        assert_eq!(verify_delay_ms(1), 5_000);
        assert_eq!(verify_delay_ms(99), MAX_WAIT_MS);
        assert_eq!(span_words(Duration::hours(3)), "3 h");
    }
}
