//! Conversions between the outbox's domain types and the transport DTOs, in both directions.
//! Mechanical field copies only; nothing here decides anything.

use outbox::model::{
    ActedBy, AttemptInfo, Badge, CfdiInfo, Counts, EvidenceInfo, InvoiceDetail, InvoicePage, InvoiceState, InvoiceSummary, ListFilter,
    Note, TimelineEntry, TimelineSource,
};
use outbox::strategy::{ActionKind, Refusal, Verdict};
use outbox::{EmisorSettings, Role};

use crate::dto::*;
use crate::error::AppError;

pub fn state(s: InvoiceState) -> InvoiceStateDto {
    match s {
        InvoiceState::Pending => InvoiceStateDto::Pending,
        InvoiceState::Stamped => InvoiceStateDto::Stamped,
        InvoiceState::Held => InvoiceStateDto::Held,
    }
}

pub fn state_in(s: InvoiceStateDto) -> InvoiceState {
    match s {
        InvoiceStateDto::Pending => InvoiceState::Pending,
        InvoiceStateDto::Stamped => InvoiceState::Stamped,
        InvoiceStateDto::Held => InvoiceState::Held,
    }
}

pub fn badge(b: Badge) -> BadgeDto {
    match b {
        Badge::Pendiente => BadgeDto::Pendiente,
        Badge::Finalizar => BadgeDto::Finalizar,
        Badge::Timbrada => BadgeDto::Timbrada,
        Badge::Reanudar => BadgeDto::Reanudar,
        Badge::Respaldo => BadgeDto::Respaldo,
        Badge::Reprocesar => BadgeDto::Reprocesar,
        Badge::Duplicado => BadgeDto::Duplicado,
        Badge::Atencion => BadgeDto::Atencion,
    }
}

pub fn badge_in(b: BadgeDto) -> Badge {
    match b {
        BadgeDto::Pendiente => Badge::Pendiente,
        BadgeDto::Finalizar => Badge::Finalizar,
        BadgeDto::Timbrada => Badge::Timbrada,
        BadgeDto::Reanudar => Badge::Reanudar,
        BadgeDto::Respaldo => Badge::Respaldo,
        BadgeDto::Reprocesar => Badge::Reprocesar,
        BadgeDto::Duplicado => Badge::Duplicado,
        BadgeDto::Atencion => Badge::Atencion,
    }
}

pub fn role(r: Role) -> RoleDto {
    match r {
        Role::Personal => RoleDto::Personal,
        Role::Soporte => RoleDto::Soporte,
        Role::Contador => RoleDto::Contador,
        Role::Sistema => RoleDto::Sistema,
    }
}

pub fn role_in(r: RoleDto) -> Role {
    match r {
        RoleDto::Personal => Role::Personal,
        RoleDto::Soporte => Role::Soporte,
        RoleDto::Contador => Role::Contador,
        RoleDto::Sistema => Role::Sistema,
    }
}

pub fn acted_by(a: &ActedBy) -> ActedByDto {
    ActedByDto {
        name: a.name.clone(),
        role: role(a.role),
    }
}

/// The outbox filter for a Bandeja query; a malformed cursor is a validation error.
pub fn list_filter(q: &ListQueryDto) -> Result<ListFilter, AppError> {
    let after = match q.after.as_deref() {
        None | Some("") => None,
        Some(c) => Some(
            outbox::model::Cursor::decode(c)
                .ok_or_else(|| AppError::validation("after", "cursor_invalido", format!("{c:?} no es un cursor")))?,
        ),
    };
    let search = q.search.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
    Ok(ListFilter {
        state: q.state.map(state_in),
        badge: q.badge.map(badge_in),
        search,
        from: None,
        to: None,
        after,
        limit: q.limit,
    })
}

pub fn row(i: &InvoiceSummary) -> InvoiceRowDto {
    InvoiceRowDto {
        id: i.id,
        sale_id: i.sale_id.clone(),
        kind: i.kind.clone(),
        serie: i.serie.clone(),
        folio: i.folio.clone(),
        receptor_rfc: i.receptor_rfc.clone(),
        receptor_nombre: i.receptor_nombre.clone(),
        total: i.total.clone(),
        moneda: i.moneda.clone(),
        state: state(i.state),
        badge: badge(i.badge),
        state_reason: i.state_reason.clone(),
        current_attempt_no: i.current_attempt_no,
        attempts_count: i.attempts_count,
        tries_count: i.tries_count,
        next_try_at: i.next_try_at,
        possible_duplicate: i.possible_duplicate,
        uuid: i.uuid.clone(),
        fecha: i.fecha.clone(),
        fecha_deadline: i.fecha_deadline,
        created_at: i.created_at,
        updated_at: i.updated_at,
        active_notes: i.active_notes,
    }
}

pub fn page(p: &InvoicePage) -> InvoicePageDto {
    InvoicePageDto {
        items: p.items.iter().map(row).collect(),
        next: p.next.map(|c| c.encode()),
    }
}

pub fn counts(c: &Counts) -> CountsDto {
    CountsDto {
        total: c.total,
        by_state: c.by_state.clone(),
        by_badge: c.by_badge.clone(),
    }
}

pub fn note(n: &Note) -> NoteDto {
    NoteDto {
        id: n.id,
        invoice_id: n.invoice_id,
        text: n.text.clone(),
        created_at: n.created_at,
        author: acted_by(&n.author),
        resolved_at: n.resolved_at,
        resolved_by: n.resolved_by.as_ref().map(acted_by),
    }
}

fn attempt(a: &AttemptInfo) -> AttemptDto {
    AttemptDto {
        id: a.id,
        attempt_no: a.attempt_no,
        reason: a.reason.as_str().to_string(),
        pac: a.pac.clone(),
        body_format: a.body_format.as_str().to_string(),
        body_len: a.body_len,
        body_sha256: a.body_sha256.clone(),
        fecha: a.fecha.clone(),
        pac_idempotency_key: a.pac_idempotency_key.clone(),
        mapping_version: a.mapping_version,
        no_certificado: a.no_certificado.clone(),
        resolution: a.resolution.clone(),
        created_at: a.created_at,
    }
}

fn evidence(e: &EvidenceInfo) -> EvidenceDto {
    EvidenceDto {
        id: e.id,
        attempt_id: e.attempt_id,
        kind: e.kind.clone(),
        outcome: e.outcome.clone(),
        code: e.code.clone(),
        message: e.message.clone(),
        uuid: e.uuid.clone(),
        recorded_at: e.recorded_at,
        actor: acted_by(&e.actor),
    }
}

fn cfdi(c: &CfdiInfo) -> CfdiDto {
    CfdiDto {
        id: c.id,
        attempt_id: c.attempt_id,
        uuid: c.uuid.clone(),
        pac: c.pac.clone(),
        fecha_timbrado: c.fecha_timbrado.clone(),
        has_xml: c.has_xml,
        sat_status: c.sat_status.clone(),
        cancellation_status: c.cancellation_status.clone(),
        created_at: c.created_at,
    }
}

fn source(s: TimelineSource) -> &'static str {
    match s {
        TimelineSource::Event => "event",
        TimelineSource::Try => "try",
        TimelineSource::Evidence => "evidence",
        TimelineSource::Note => "note",
        TimelineSource::NoteResolved => "note_resolved",
    }
}

fn timeline(t: &TimelineEntry) -> TimelineEntryDto {
    TimelineEntryDto {
        at: t.at,
        source: source(t.source).to_string(),
        ref_id: t.ref_id,
        kind: t.kind.clone(),
        actor: acted_by(&t.actor),
        detail: t.detail.clone(),
    }
}

/// How one evidence row reads in a tooltip: `kind: outcome code uuid`.
fn evidence_words(d: &InvoiceDetail, id: i64) -> Option<String> {
    let e = d.evidence.iter().find(|e| e.id == id)?;
    let parts: Vec<&str> = [e.outcome.as_deref(), e.code.as_deref(), e.uuid.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    Some(if parts.is_empty() {
        e.kind.clone()
    } else {
        format!("{}: {}", e.kind, parts.join(" "))
    })
}

fn refusal(d: &InvoiceDetail, r: &Refusal) -> RefusalDto {
    let evidence_id = r.evidence.last().copied();
    RefusalDto {
        code: r.code,
        evidence_id,
        evidence: evidence_id.and_then(|id| evidence_words(d, id)),
    }
}

fn roles_of(a: ActionKind) -> Vec<RoleDto> {
    a.roles().iter().filter(|r| **r != Role::Sistema).map(|r| role(*r)).collect()
}

/// The verdict of the outbox's strategy as the Factura page shows it: badge, reasons (with
/// the facts of the evidence they rest on, for wording) and one entry per button. *Reintentar*
/// is Resume or Reprocess, whichever the verdict allows.
pub fn strategy(d: &InvoiceDetail, v: &Verdict) -> StrategyDto {
    let reasons = v
        .reasons
        .iter()
        .map(|r| {
            let evidence_id = r.evidence.last().copied();
            let ev = evidence_id.and_then(|id| d.evidence.iter().find(|e| e.id == id));
            let attempt = r.attempt_no.and_then(|n| d.attempts.iter().find(|a| a.attempt_no == n));
            let params = serde_json::json!({
                "attempt_no": r.attempt_no,
                "pac": attempt.map(|a| a.pac.clone()),
                "outcome": ev.and_then(|e| e.outcome.clone()),
                "code": ev.and_then(|e| e.code.clone()),
                "message": ev.and_then(|e| e.message.clone()),
                "uuid": d.invoice.uuid.clone().or_else(|| ev.and_then(|e| e.uuid.clone())),
            });
            ReasonDto {
                code: r.code,
                evidence_id,
                params,
            }
        })
        .collect();
    let plain = |dto_action: ActionKindDto, kind: ActionKind| ActionDto {
        action: dto_action,
        allowed: v.allows(kind),
        retry_mode: None,
        refusal: v.refusal(kind).map(|r| refusal(d, r)),
        alternative_refusal: None,
        roles: roles_of(kind),
    };
    let retry = if v.allows(ActionKind::Resume) {
        ActionDto {
            action: ActionKindDto::Retry,
            allowed: true,
            retry_mode: Some(RetryModeDto::Resume),
            refusal: None,
            alternative_refusal: v.refusal(ActionKind::Reprocess).map(|r| refusal(d, r)),
            roles: roles_of(ActionKind::Resume),
        }
    } else if v.allows(ActionKind::Reprocess) {
        ActionDto {
            action: ActionKindDto::Retry,
            allowed: true,
            retry_mode: Some(RetryModeDto::Reprocess),
            refusal: None,
            alternative_refusal: v.refusal(ActionKind::Resume).map(|r| refusal(d, r)),
            roles: roles_of(ActionKind::Reprocess),
        }
    } else {
        ActionDto {
            action: ActionKindDto::Retry,
            allowed: false,
            retry_mode: None,
            refusal: v
                .refusal(ActionKind::Resume)
                .or_else(|| v.refusal(ActionKind::Reprocess))
                .map(|r| refusal(d, r)),
            alternative_refusal: None,
            roles: roles_of(ActionKind::Resume),
        }
    };
    StrategyDto {
        badge: badge(v.badge),
        reasons,
        actions: vec![
            retry,
            plain(ActionKindDto::Finalize, ActionKind::Finalize),
            plain(ActionKindDto::Failover, ActionKind::Failover),
            plain(ActionKindDto::SendToContador, ActionKind::SendToContador),
            plain(ActionKindDto::ForceFailover, ActionKind::ForceFailover),
            plain(ActionKindDto::ReprocessAcceptingRisk, ActionKind::ReprocessAcceptingRisk),
            plain(ActionKindDto::VerifyAbsent, ActionKind::VerifyAbsent),
            plain(ActionKindDto::RecordFound, ActionKind::RecordFound),
            plain(ActionKindDto::DownloadXml, ActionKind::Download),
        ],
        fecha_at_risk: v.fecha_at_risk,
        open_questions: v.open_questions.clone(),
    }
}

/// The invoice detail, with the strategy's verdict when the drain runs.
pub fn detail_with(d: &InvoiceDetail, verdict: Option<&Verdict>) -> InvoiceDetailDto {
    let mut dto = detail(d);
    dto.strategy = verdict.map(|v| strategy(d, v));
    dto
}

pub fn detail(d: &InvoiceDetail) -> InvoiceDetailDto {
    InvoiceDetailDto {
        invoice: row(&d.invoice),
        sale: SaleDto {
            sale_id: d.sale.sale_id.clone(),
            kind: d.sale.kind.clone(),
            occurred_at: d.sale.occurred_at.clone(),
            // The sale serializes to its canonical wire JSON; a failure would be a bug there.
            body: serde_json::to_value(&d.sale.body).unwrap_or(serde_json::Value::Null),
            body_sha256: d.sale.body_sha256.clone(),
            source: d.sale.source.clone(),
            recorded_at: d.sale.recorded_at,
            recorded_by: acted_by(&d.sale.recorded_by),
        },
        attempts: d.attempts.iter().map(attempt).collect(),
        evidence: d.evidence.iter().map(evidence).collect(),
        cfdis: d.cfdis.iter().map(cfdi).collect(),
        notes: d.notes.iter().map(note).collect(),
        timeline: d.timeline.iter().map(timeline).collect(),
        // Set by `detail_with` from the drain's verdict.
        strategy: None,
    }
}

pub fn emisor(s: &EmisorSettings, test_csd: bool) -> EmisorDto {
    EmisorDto {
        rfc: s.profile.rfc.clone(),
        nombre: s.profile.nombre.clone(),
        regimen_fiscal: s.profile.regimen_fiscal.clone(),
        lugar_expedicion: s.profile.lugar_expedicion.clone(),
        no_certificado: s.no_certificado.clone(),
        certificate_valid_from: s.certificate_valid_from,
        certificate_valid_to: s.certificate_valid_to,
        test_csd,
    }
}

/// The sale JSON (the wire shape `cfdi::sale::Sale` parses strictly) for a form draft.
pub fn sale_json(sale_id: &str, d: &SaleDraftDto) -> Vec<u8> {
    let tax = |t: &TaxDraftDto| {
        let mut v = serde_json::json!({"impuesto": t.impuesto, "tipo_factor": t.tipo_factor});
        if let Some(tc) = t.tasa_o_cuota.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            v["tasa_o_cuota"] = tc.into();
        }
        v
    };
    let opt = |s: &Option<String>| s.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
    let conceptos: Vec<serde_json::Value> = d
        .conceptos
        .iter()
        .map(|c| {
            let mut v = serde_json::json!({
                "clave_prod_serv": c.clave_prod_serv.trim(),
                "cantidad": c.cantidad.trim(),
                "clave_unidad": c.clave_unidad.trim(),
                "descripcion": c.descripcion.trim(),
                "valor_unitario": c.valor_unitario.trim(),
                "objeto_imp": c.objeto_imp.trim(),
                "traslados": c.traslados.iter().map(tax).collect::<Vec<_>>(),
                "retenciones": c.retenciones.iter().map(tax).collect::<Vec<_>>(),
            });
            if let Some(u) = opt(&c.unidad) {
                v["unidad"] = u.into();
            }
            if let Some(x) = opt(&c.descuento) {
                v["descuento"] = x.into();
            }
            v
        })
        .collect();
    let mut sale = serde_json::json!({
        "sale_id": sale_id,
        "kind": "ingreso",
        "occurred_at": d.occurred_at.trim(),
        "forma_pago": d.forma_pago.trim(),
        "metodo_pago": d.metodo_pago.trim(),
        "moneda": d.moneda.trim(),
        "receptor": {
            "rfc": d.receptor.rfc.trim().to_uppercase(),
            "nombre": d.receptor.nombre.trim(),
            "domicilio_fiscal": d.receptor.domicilio_fiscal.trim(),
            "regimen_fiscal": d.receptor.regimen_fiscal.trim(),
            "uso_cfdi": d.receptor.uso_cfdi.trim(),
        },
        "conceptos": conceptos,
        "relacionados": [],
    });
    if let Some(s) = opt(&d.serie) {
        sale["serie"] = s.into();
    }
    if let Some(f) = opt(&d.folio) {
        sale["folio"] = f.into();
    }
    // Serializing a Value cannot fail.
    serde_json::to_vec(&sale).unwrap_or_default()
}

/// The outbox's drain settings as Ajustes shows them.
pub fn drain_settings(s: &outbox::settings::DrainSettings) -> DrainSettingsDto {
    DrainSettingsDto {
        concurrency: s.concurrency,
        max_tries: Some(s.max_tries),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft() -> SaleDraftDto {
        SaleDraftDto {
            occurred_at: "2026-11-29T12:00:00".into(),
            serie: Some("F".into()),
            folio: Some(" ".into()),
            forma_pago: "01".into(),
            metodo_pago: "PUE".into(),
            moneda: "MXN".into(),
            receptor: ReceptorDraftDto {
                rfc: "ure180429tm6".into(),
                nombre: "UNIVERSIDAD ROBOTICA ESPAÑOLA".into(),
                domicilio_fiscal: "86991".into(),
                regimen_fiscal: "601".into(),
                uso_cfdi: "G01".into(),
            },
            conceptos: vec![ConceptoDraftDto {
                clave_prod_serv: "01010101".into(),
                cantidad: "2".into(),
                clave_unidad: "H87".into(),
                unidad: Some("Pieza".into()),
                descripcion: "Café de olla".into(),
                valor_unitario: "50.00".into(),
                descuento: None,
                objeto_imp: "02".into(),
                traslados: vec![TaxDraftDto {
                    impuesto: "002".into(),
                    tipo_factor: "Tasa".into(),
                    tasa_o_cuota: Some("0.160000".into()),
                }],
                retenciones: vec![],
            }],
        }
    }

    #[test]
    fn a_form_draft_becomes_a_strict_sale() {
        let bytes = sale_json("emitir-1", &draft());
        let sale = cfdi::sale::Sale::from_json(&bytes).expect("the draft parses as a sale");
        assert_eq!(sale.sale_id, "emitir-1");
        assert_eq!(sale.receptor.rfc, "URE180429TM6");
        assert_eq!(sale.folio, None, "a blank folio is omitted, not sent as \" \"");
        assert_eq!(sale.conceptos[0].valor_unitario.0.to_string(), "50.00");
    }

    #[test]
    fn a_bad_amount_names_its_field() {
        let mut d = draft();
        d.conceptos[0].cantidad = "dos".into();
        let e = cfdi::sale::Sale::from_json(&sale_json("emitir-1", &d)).unwrap_err();
        assert!(e.0.iter().any(|f| f.field.starts_with("conceptos[0].cantidad")), "{e:?}");
    }

    #[test]
    fn bad_cursors_are_validation_errors() {
        let q = ListQueryDto {
            after: Some("nope".into()),
            ..Default::default()
        };
        assert!(matches!(list_filter(&q), Err(AppError::Validation { .. })));
        let q = ListQueryDto {
            after: Some("17.4".into()),
            search: Some("  ".into()),
            ..Default::default()
        };
        let f = list_filter(&q).unwrap();
        assert_eq!(f.search, None);
        assert_eq!(f.after.map(|c| c.id), Some(4));
    }
}
