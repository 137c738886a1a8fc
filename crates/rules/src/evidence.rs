//! The evidence vocabulary: what an evidence row may say. [`EvidenceKind`] and
//! [`EvidenceOutcome`] are closed vocabularies (the database refuses any other text, migration
//! 0009; a stored text outside them is read as an error, never mapped to a default); the codes
//! of [`evidence_kind`] name configuration facts and operator actions.

use pac::{LookupOutcome, StampOutcome};

code_enum! {
    /// What an evidence row records (`evidence.kind`).
    EvidenceKind {
        /// A PAC's answer to a stamp request (`outcome` = the outcome class).
        PacResponse = "pac_response",
        /// A non-creating lookup or a retrieval by UUID (`outcome` = found/not_found/pending/...).
        Lookup = "lookup",
        /// A person's decision (`code` = the action).
        OperatorAction = "operator_action",
        /// A CFDI found by a reconciliation import or recorded by the contador (`outcome` =
        /// found, `uuid`).
        Reconciliation = "reconciliation",
        /// The drain could not act as the attempt needs (`code` = why).
        Configuration = "configuration",
        /// A PAC's or SAT's answer about a cancellation request (`outcome` = its class).
        Cancellation = "cancellation",
    }
}

code_enum! {
    /// The class of the answer an evidence row records (`evidence.outcome`): a stamp
    /// ([`StampOutcome`]), a lookup ([`LookupOutcome`]), a cancellation or SAT's status.
    EvidenceOutcome {
        Stamped = "stamped",
        AlreadyStamped = "already_stamped",
        Rejected = "rejected",
        NotSent = "not_sent",
        Unavailable = "unavailable",
        Unknown = "unknown",
        Found = "found",
        NotFound = "not_found",
        Pending = "pending",
        NotSupported = "not_supported",
        /// The PAC took a cancellation request.
        Accepted = "accepted",
        /// The PAC or SAT refused a cancellation request.
        Refused = "refused",
        /// SAT answered a status query.
        Known = "known",
    }
}

impl EvidenceOutcome {
    /// The class of a stamp answer.
    pub fn of_stamp(o: &StampOutcome) -> EvidenceOutcome {
        match o {
            StampOutcome::Stamped { .. } => EvidenceOutcome::Stamped,
            StampOutcome::AlreadyStamped { .. } => EvidenceOutcome::AlreadyStamped,
            StampOutcome::Rejected { .. } => EvidenceOutcome::Rejected,
            StampOutcome::NotSent { .. } => EvidenceOutcome::NotSent,
            StampOutcome::Unavailable { .. } => EvidenceOutcome::Unavailable,
            StampOutcome::Unknown { .. } => EvidenceOutcome::Unknown,
        }
    }

    /// The class of a lookup answer.
    pub fn of_lookup(o: &LookupOutcome) -> EvidenceOutcome {
        match o {
            LookupOutcome::Found { .. } => EvidenceOutcome::Found,
            LookupOutcome::NotFound { .. } => EvidenceOutcome::NotFound,
            LookupOutcome::Pending { .. } => EvidenceOutcome::Pending,
            LookupOutcome::NotSupported { .. } => EvidenceOutcome::NotSupported,
            LookupOutcome::NotSent { .. } => EvidenceOutcome::NotSent,
            LookupOutcome::Unavailable { .. } => EvidenceOutcome::Unavailable,
            LookupOutcome::Unknown { .. } => EvidenceOutcome::Unknown,
        }
    }
}

/// Codes an evidence row carries (`evidence.code`): configuration facts and operator actions.
/// The column also holds PACs' own codes, so it is not a closed vocabulary.
pub mod evidence_kind {
    /// A PAC answered with a CFDI recorded for *another* invoice: this document is identical
    /// to that sale's (same cadena). Read as a document problem: reprocess with a new Fecha.
    pub const CFDI_OF_ANOTHER_INVOICE: &str = "cfdi_de_otra_factura";

    /// The PAC's CFDI is not this attempt's document (its TFD's `SelloCFD`, or the
    /// comprobante's Sello, is not the attempt's Sello): evidence of a contradiction, never
    /// attached to the sale.
    pub const CFDI_NOT_THE_ATTEMPTS: &str = "cfdi_no_corresponde";

    /// The PAC's answer names another sale or attempt as the one it issued its CFDI for
    /// (Facturapi's `external_id` / `idempotency_key`): that CFDI is not this sale's and is never
    /// attached to it. It says nothing about this attempt, whose outcome stays what it was
    /// (an unknown outcome stays unknown and is looked up by this sale's own `external_id`).
    pub const CFDI_OF_ANOTHER_SALE: &str = "cfdi_de_otra_venta";

    /// Configuration codes.
    pub const PAC_NOT_CONFIGURED: &str = "pac_no_configurado";
    pub const PAC_CHANGED: &str = "pac_cambio";
    /// A payment's REP was not sent: a document it pays is cancelled at SAT, or its
    /// cancellation is on its way (the REP would relate a cancelled CFDI).
    pub const PAID_DOCUMENT_CANCELLED: &str = "documento_pagado_cancelado";

    /// Operator action codes.
    pub const FORCE_FAILOVER: &str = "force_failover";
    pub const REPROCESS_ACCEPTING_RISK: &str = "reprocess_accepting_risk";
    pub const VERIFY_ABSENT: &str = "verify_absent";
    pub const RECORD_FOUND: &str = "record_found";
    pub const RETRY: &str = "retry";
    pub const FINALIZE: &str = "finalize";
    pub const FAILOVER: &str = "failover";
    pub const REPROCESS: &str = "reprocess";
    pub const SEND_TO_CONTADOR: &str = "send_to_contador";
    /// The operator accepted that the PAC behind a name changed for this attempt (the PAC was
    /// replaced with `--replace-open`): the new identity is in the evidence's detail.
    pub const PAC_IDENTITY_ACCEPTED: &str = "pac_identity_accepted";
    /// The PAC behind the attempt's name was replaced (another service or account) while the
    /// attempt held an open question: it is looked up only at its own (old) identity; the
    /// old and new identities are in the evidence's detail.
    pub const PAC_IDENTITY_REPLACED: &str = "pac_identity_replaced";

    /// SAT's record (the bulk download, the status service): SAT's `Estado` words. Presence at SAT
    /// is proof a CFDI exists; **absence is never proof it does not** (SAT publishes late), so
    /// evidence coded [`SAT_NOT_FOUND`] — or any [`SAT_CODES`] — is never read as an answer about
    /// a stamp, whatever its outcome class (`crate::facts`).
    pub const SAT_NOT_FOUND: &str = "No Encontrado";
    pub const SAT_VIGENTE: &str = "Vigente";
    pub const SAT_CANCELADO: &str = "Cancelado";
    /// SAT holds a CFDI of the emisor that Timbra did not know, resembling this sale.
    pub const SAT_UNKNOWN_CFDI: &str = "cfdi_desconocido";
    /// Every code SAT's record writes on a reconciliation evidence.
    pub const SAT_CODES: [&str; 4] = [SAT_NOT_FOUND, SAT_VIGENTE, SAT_CANCELADO, SAT_UNKNOWN_CFDI];

    /// Codes after which an attempt is abandoned: never sent again, only looked up.
    pub const ABANDONING: [&str; 2] = [FORCE_FAILOVER, REPROCESS_ACCEPTING_RISK];
}
