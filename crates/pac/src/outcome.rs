//! The outcome classes (`docs/strategy.md`) and the requests that produce them.
//!
//! Each PAC call ends in exactly one variant. The split that matters most is between
//! [`StampOutcome::NotSent`] / [`StampOutcome::Unavailable`] ("not created, the PAC never took
//! it; the same bytes may go elsewhere") and [`StampOutcome::Unknown`] ("may or may not exist;
//! resume only"). Outcomes are serializable so the outbox can append them as evidence.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::evidence::Evidence;
use crate::tfd::{normalize_uuid, tfd_uuid, StampIdentity, TfdError};

/// One frozen attempt, as the PAC layer needs it. The outbox owns the attempt; this is a view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The exact bytes to send: sealed CFDI XML (SW, Finkok) or the invoice JSON (Facturapi).
    pub body: Vec<u8>,
    /// The PAC idempotency key derived from the sale: SW `customid`; for Facturapi it must
    /// equal the body's `idempotency_key` (the body is sent as frozen, never rewritten).
    pub idempotency_key: String,
    /// Facturapi `external_id` for lookups (taken from the body when absent).
    pub external_id: Option<String>,
}

/// Whom a PAC says it issued a CFDI for, when its answer names it (Facturapi's invoice object
/// carries the `external_id` and `idempotency_key` it was created with). The outbox compares
/// them with the attempt's before anything is attached: a PAC can answer with another sale's
/// invoice, and a JSON attempt has no Sello to tell them apart.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedFor {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

impl IssuedFor {
    /// `None` when the answer named neither.
    pub fn named(external_id: Option<String>, idempotency_key: Option<String>) -> Option<IssuedFor> {
        (external_id.is_some() || idempotency_key.is_some()).then_some(IssuedFor {
            external_id,
            idempotency_key,
        })
    }
}

/// A CFDI that a PAC holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoundCfdi {
    /// Uppercase 8-4-4-4-12 ([`crate::tfd::normalize_uuid`]).
    pub uuid: String,
    /// The stamped XML, when the answer carried it.
    pub xml: Option<String>,
    /// The TimbreFiscalDigital alone, when the answer carried it apart from the XML (SW's
    /// `data.tfd`): enough to check its `SelloCFD` ([`crate::tfd::identity`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tfd_xml: Option<String>,
    /// The PAC's own id (Facturapi invoice id).
    pub pac_id: Option<String>,
    /// The PAC's status word for it (Facturapi `valid`/`canceled`…), when it has one.
    pub status: Option<String>,
    /// Whom the PAC says it issued it for, when its answer names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_for: Option<IssuedFor>,
}

/// What a stamp request came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "snake_case")]
pub enum StampOutcome {
    /// Created by this request. `uuid` is uppercase 8-4-4-4-12; `xml` is the stamped CFDI and
    /// `tfd_xml` the TFD alone, each when the PAC answered it.
    Stamped {
        uuid: String,
        xml: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tfd_xml: Option<String>,
        pac_id: Option<String>,
        /// Whom the PAC says it issued it for, when its answer names it (Facturapi).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        issued_for: Option<IssuedFor>,
    },
    /// Created earlier (SW 307 / CFDI3307, Finkok 307 / 707, Facturapi `invoice_already_stamped`):
    /// recover it, never re-create. UUID and XML are missing when the PAC did not send them.
    AlreadyStamped {
        code: String,
        uuid: Option<String>,
        xml: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tfd_xml: Option<String>,
        pac_id: Option<String>,
        /// Whom the PAC says it issued it for, when its answer names it (Facturapi).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        issued_for: Option<IssuedFor>,
    },
    /// Not created; the document must change (301–306, 308, 401–403, CFDI40xxx…).
    Rejected { code: String, message: String },
    /// Not created; the request never left (connect refused, DNS, TLS, connect timeout).
    NotSent { cause: String },
    /// Not created; the PAC refused to work on it (credentials, balance, 429, maintenance).
    Unavailable {
        code: String,
        message: String,
        retry_after_s: Option<u64>,
    },
    /// May or may not exist (timeout or reset after sending, 5xx, garbage, pending): resume only.
    Unknown { cause: String },
}

impl StampOutcome {
    /// The identity (`UUID`, `SelloCFD`) of the CFDI this outcome carries, read from its XML or,
    /// without one, from its bare TFD; `None` when it carries neither. The outbox compares
    /// `sello_cfd` with the attempt's Sello before attaching anything
    /// ([`crate::tfd::attempt_sello`]).
    pub fn stamp_identity(&self) -> Option<Result<StampIdentity, TfdError>> {
        let (xml, tfd_xml) = match self {
            StampOutcome::Stamped { xml, tfd_xml, .. } | StampOutcome::AlreadyStamped { xml, tfd_xml, .. } => (xml, tfd_xml),
            _ => return None,
        };
        xml.as_deref().or(tfd_xml.as_deref()).map(crate::tfd::identity)
    }

    /// The class name, as stored.
    pub fn class(&self) -> &'static str {
        match self {
            StampOutcome::Stamped { .. } => "stamped",
            StampOutcome::AlreadyStamped { .. } => "already_stamped",
            StampOutcome::Rejected { .. } => "rejected",
            StampOutcome::NotSent { .. } => "not_sent",
            StampOutcome::Unavailable { .. } => "unavailable",
            StampOutcome::Unknown { .. } => "unknown",
        }
    }

    /// True when this outcome proves that no CFDI was created by this request.
    pub fn proves_not_created(&self) -> bool {
        matches!(
            self,
            StampOutcome::Rejected { .. } | StampOutcome::NotSent { .. } | StampOutcome::Unavailable { .. }
        )
    }
}

/// Checks one CFDI an answer carries: the UUID normalized; the UUID of the XML's (or the bare
/// TFD's) TimbreFiscalDigital, when present, is the same one. `uuid` may be absent and is then
/// taken from the TFD. `Err` is the cause for an `Unknown`.
fn checked_uuid(uuid: Option<&str>, xml: Option<&str>, tfd_xml: Option<&str>) -> Result<Option<String>, String> {
    let declared = match uuid {
        Some(u) => Some(normalize_uuid(u).map_err(|e| format!("respuesta del PAC con {e}"))?),
        None => None,
    };
    let mut found = declared.clone();
    for (what, text) in [("XML", xml), ("TFD", tfd_xml)] {
        let Some(text) = text else { continue };
        let in_tfd = tfd_uuid(text).map_err(|e| format!("el {what} de la respuesta del PAC no es legible: {e}"))?;
        match &found {
            Some(u) if *u != in_tfd => {
                return Err(format!("la respuesta del PAC dice UUID {u} pero su {what} trae {in_tfd}"));
            }
            Some(_) => {}
            None => found = Some(in_tfd),
        }
    }
    Ok(found)
}

impl StampOutcome {
    /// The one form a stamp outcome leaves this crate in: every UUID uppercase and 8-4-4-4-12,
    /// consistent with the TFD the answer carries (a missing `AlreadyStamped` UUID is taken
    /// from it). A malformed or contradictory UUID is never a CFDI: it becomes `Unknown`.
    pub fn normalized(self) -> StampOutcome {
        match self {
            StampOutcome::Stamped {
                uuid,
                xml,
                tfd_xml,
                pac_id,
                issued_for,
            } => match checked_uuid(Some(&uuid), xml.as_deref(), tfd_xml.as_deref()) {
                Ok(Some(uuid)) => StampOutcome::Stamped {
                    uuid,
                    xml,
                    tfd_xml,
                    pac_id,
                    issued_for,
                },
                Ok(None) => StampOutcome::Unknown {
                    cause: "respuesta exitosa sin UUID".into(),
                },
                Err(cause) => StampOutcome::Unknown { cause },
            },
            StampOutcome::AlreadyStamped {
                code,
                uuid,
                xml,
                tfd_xml,
                pac_id,
                issued_for,
            } => match checked_uuid(uuid.as_deref(), xml.as_deref(), tfd_xml.as_deref()) {
                Ok(uuid) => StampOutcome::AlreadyStamped {
                    code,
                    uuid,
                    xml,
                    tfd_xml,
                    pac_id,
                    issued_for,
                },
                Err(cause) => StampOutcome::Unknown {
                    cause: format!("{code}: {cause}"),
                },
            },
            other => other,
        }
    }
}

impl FoundCfdi {
    /// Like [`StampOutcome::stamp_identity`].
    pub fn stamp_identity(&self) -> Option<Result<StampIdentity, TfdError>> {
        self.xml.as_deref().or(self.tfd_xml.as_deref()).map(crate::tfd::identity)
    }

    fn normalized(self) -> Result<FoundCfdi, String> {
        let uuid = checked_uuid(Some(&self.uuid), self.xml.as_deref(), self.tfd_xml.as_deref())?.unwrap_or_default();
        Ok(FoundCfdi { uuid, ..self })
    }
}

/// What a lookup or retrieval came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "snake_case")]
pub enum LookupOutcome {
    /// The PAC holds these CFDIs (more than one means duplicates).
    Found {
        cfdis: Vec<FoundCfdi>,
    },
    /// The PAC says it holds none *now* (Finkok 603 after bounded polling, an empty list).
    NotFound {
        detail: String,
    },
    /// The PAC knows of it but has not finished (Facturapi `pending`; SW storage without XML yet).
    Pending {
        detail: String,
        pac_id: Option<String>,
    },
    /// This PAC has no such query.
    NotSupported {
        detail: String,
    },
    NotSent {
        cause: String,
    },
    Unavailable {
        code: String,
        message: String,
        retry_after_s: Option<u64>,
    },
    Unknown {
        cause: String,
    },
}

impl LookupOutcome {
    /// Like [`StampOutcome::normalized`]: every found UUID uppercase, 8-4-4-4-12 and
    /// consistent with its XML; one bad CFDI makes the whole answer `Unknown`.
    pub fn normalized(self) -> LookupOutcome {
        match self {
            LookupOutcome::Found { cfdis } => match cfdis.into_iter().map(FoundCfdi::normalized).collect::<Result<Vec<_>, _>>() {
                Ok(cfdis) => LookupOutcome::Found { cfdis },
                Err(cause) => LookupOutcome::Unknown { cause },
            },
            other => other,
        }
    }
}

/// SAT's cancellation reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Motivo {
    /// 01: errors with relation; needs the replacement's UUID.
    #[serde(rename = "01")]
    ConRelacion,
    /// 02: errors without relation.
    #[serde(rename = "02")]
    SinRelacion,
    /// 03: the operation did not take place.
    #[serde(rename = "03")]
    NoSeLlevoACabo,
    /// 04: nominative operation included in a global invoice.
    #[serde(rename = "04")]
    FacturaGlobal,
}

impl Motivo {
    pub fn code(self) -> &'static str {
        match self {
            Motivo::ConRelacion => "01",
            Motivo::SinRelacion => "02",
            Motivo::NoSeLlevoACabo => "03",
            Motivo::FacturaGlobal => "04",
        }
    }
}

/// A cancellation request for one CFDI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelRequest {
    pub uuid: String,
    pub motivo: Motivo,
    /// The replacement's UUID (motivo 01 only).
    pub folio_sustitucion: Option<String>,
    pub rfc_emisor: String,
    pub rfc_receptor: String,
    pub total: Decimal,
    /// The PAC's own id of the CFDI (Facturapi invoice id), when known.
    pub pac_id: Option<String>,
    /// The emisor's CSD for PACs whose cancel service signs with it (Finkok `cancel`): the
    /// certificate and the key as SAT issued them, each as base64 of its PEM.
    pub csd: Option<CancelCsd>,
}

/// The CSD a cancellation is signed with, never printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelCsd {
    pub cer_pem_b64: cfdi::secret::Secret,
    pub key_pem_b64: cfdi::secret::Secret,
}

/// What a cancellation request came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "snake_case")]
pub enum CancelOutcome {
    /// The request was taken (Finkok/SAT 201, or 202 "previously requested"). **Not** proof of
    /// cancellation: `estatus` is what the answer said, confirm with the status query.
    Accepted {
        code: String,
        estatus: Option<String>,
        acuse: Option<String>,
    },
    /// The PAC or SAT refused it (not cancelable, UUID not found, invalid motivo…).
    Refused {
        code: String,
        message: String,
    },
    NotSent {
        cause: String,
    },
    Unavailable {
        code: String,
        message: String,
        retry_after_s: Option<u64>,
    },
    Unknown {
        cause: String,
    },
}

/// Which CFDI to ask SAT about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusQuery {
    pub uuid: String,
    pub rfc_emisor: String,
    pub rfc_receptor: String,
    pub total: Decimal,
    /// The last 8 characters of the Sello (`fe` of the expresión impresa), when known.
    pub sello_tail: Option<String>,
}

/// SAT's status dimensions, as ConsultaCFDIService words them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SatStatus {
    /// `S - Comprobante obtenido satisfactoriamente.`, `N - 601 …`, `N - 602 Comprobante no encontrado.`
    pub codigo_estatus: String,
    /// `Vigente`, `Cancelado`, `No Encontrado`.
    pub estado: String,
    /// `Cancelable sin aceptación`, `Cancelable con aceptación`, `No cancelable`.
    pub es_cancelable: String,
    /// empty, `En proceso`, `Solicitud rechazada`, `Cancelado sin aceptación`, `Cancelado con aceptación`, `Plazo vencido`.
    pub estatus_cancelacion: String,
    /// `200`/`201`: not in SAT's EFOS list (phpcfdi's reading); empty when not reported.
    pub validacion_efos: String,
}

impl SatStatus {
    /// `S` found, `N` not found / invalid expression.
    pub fn found(&self) -> bool {
        self.codigo_estatus.trim_start().starts_with('S')
    }

    pub fn is_cancelled(&self) -> bool {
        self.estado == "Cancelado"
    }
}

/// What a status query came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "snake_case")]
pub enum StatusOutcome {
    Known {
        status: SatStatus,
    },
    NotSent {
        cause: String,
    },
    Unavailable {
        code: String,
        message: String,
        retry_after_s: Option<u64>,
    },
    Unknown {
        cause: String,
    },
}

/// An outcome with the evidence of how it was reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply<T> {
    pub outcome: T,
    pub evidence: Evidence,
}
