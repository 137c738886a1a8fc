//! Payments against PPD invoices (complemento de pago): the balance of an invoice and the
//! paid-document entry (`DoctoRelacionado`) of a new payment, both computed from stamped CFDIs
//! only — the invoice's XML and the XMLs of its payment CFDIs — never from a typed balance.
//!
//! **Balance.** Total is the invoice's `Total`. Every `pago20:DoctoRelacionado` whose
//! `IdDocumento` is the invoice's UUID, in a payment CFDI that is not cancelled, counts with its
//! `ImpPagado`; paid = their sum. Every credit note (an egreso CFDI, not cancelled, whose
//! `CfdiRelacionados` with TipoRelacion 01 names this invoice and no other, in the invoice's
//! currency) counts with its `Total`; credited = their sum. Balance = Total − credited − paid,
//! never below zero: the saldo a customer still owes, which the next payment writes as
//! ImpSaldoAnt (a credit note applied before a payment lowers that payment's ImpSaldoAnt; one
//! applied after it lowers the next one's). A credit note naming several invoices says nothing
//! about how much belongs to each, so it is listed ([`Balance::credit_notes`], `applied: false`)
//! and not subtracted. The next `NumParcialidad` is one more than the highest parcialidad among
//! the payments (a cancelled payment's number is used again by the payment that replaces it).
//!
//! **Taxes prorated per paid document** (the rule Timbra applies; see ARCHITECTURE.md):
//! the invoice's concepto taxes are grouped by (Impuesto, TipoFactor, TasaOCuota) with their
//! Base (and Importe) summed. With `before` = Total − ImpSaldoAnt (paid by earlier parcialidades)
//! and `after` = `before` + ImpPagado, each group's
//! `BaseDR = round(Base × after / Total) − round(Base × before / Total)`,
//! rounded half away from zero to the decimals of the invoice's currency (c_Moneda). So the
//! bases of all parcialidades add up exactly to the invoice's bases, and the last parcialidad
//! absorbs the rounding. `ImporteDR = round(BaseDR × TasaOCuotaDR)` (computed by
//! [`crate::mapping`] from the BaseDR written in the sale), so every ImporteDR is its BaseDR
//! times its rate, as the Pagos 2.0 standard relates them. Exento lines carry BaseDR only.
//! TipoFactor Cuota is not prorated (refused).
//!
//! **EquivalenciaDR.** Units of the document's currency per unit of the payment's currency
//! (Pagos 2.0: `ImpPagado / EquivalenciaDR` is the amount in the payment's currency). When the
//! currencies match it is 1. Otherwise it is given, or derived from the amounts as
//! `ImpPagado / Monto` rounded *up* at 10 decimals (the XSD's fractionDigits), so that
//! `ImpPagado / EquivalenciaDR` never exceeds `Monto`.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use rust_decimal::{Decimal, RoundingStrategy};

use crate::fiscal::{FiscalDocument, TaxLine};
use crate::sale::{Amount, SaleDocumento, SaleImpuesto};

/// Why a payment cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PaymentError {
    #[error("la factura no está timbrada (no tiene UUID)")]
    NotStamped,
    #[error("la factura es de tipo {0}; solo una factura de ingreso (I) recibe pagos")]
    NotIngreso(String),
    #[error("la factura tiene método de pago {0}; solo una factura PPD recibe complementos de pago")]
    NotPpd(String),
    #[error("la factura tiene un total de {0}; no hay saldo que pagar")]
    ZeroTotal(Decimal),
    #[error("la factura lleva impuestos por cuota ({impuesto}); Timbra no los prorratea en un pago")]
    Cuota { impuesto: String },
    #[error("el importe pagado {0} debe ser mayor que cero")]
    NotPositive(Decimal),
    #[error("el pago de {pagado} excede el saldo de {saldo} ({})", saldo_parts(*total, *credited, *paid))]
    ExceedsBalance {
        pagado: Decimal,
        saldo: Decimal,
        total: Decimal,
        credited: Decimal,
        paid: Decimal,
    },
    #[error("el pago es tan pequeño que la base del impuesto {impuesto} redondea a cero")]
    BaseRoundsToZero { impuesto: String },
}

/// How a saldo was reached, in words: "total 1160.00, pagado 500.00", with the credit notes
/// between them when there are any.
pub fn saldo_parts(total: Decimal, credited: Decimal, paid: Decimal) -> String {
    if credited.is_zero() {
        format!("total {total}, pagado {paid}")
    } else {
        format!("total {total}, notas de crédito {credited}, pagado {paid}")
    }
}

/// One payment CFDI's entry for the invoice.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PaymentEntry {
    /// The payment CFDI's UUID.
    pub uuid: String,
    pub fecha_pago: NaiveDateTime,
    pub num_parcialidad: u32,
    pub imp_saldo_ant: Decimal,
    pub imp_pagado: Decimal,
    pub imp_saldo_insoluto: Decimal,
    pub cancelled: bool,
}

/// One credit note (egreso, TipoRelacion 01) that names the invoice.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CreditEntry {
    /// The credit note's UUID.
    pub uuid: String,
    pub fecha: NaiveDateTime,
    pub total: Decimal,
    pub moneda: String,
    /// Whether its total is subtracted from the balance: it names this invoice alone, in the
    /// invoice's currency.
    pub applied: bool,
}

/// The balance of a PPD invoice.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Balance {
    pub uuid: String,
    pub moneda: String,
    pub total: Decimal,
    /// Sum of the totals of the credit notes applied (see the module docs).
    pub credited: Decimal,
    /// Sum of ImpPagado of the payments that are not cancelled.
    pub paid: Decimal,
    pub balance: Decimal,
    pub next_parcialidad: u32,
    /// Every payment entry found, cancelled ones included, by parcialidad.
    pub payments: Vec<PaymentEntry>,
    /// Every live credit note naming the invoice, by date.
    pub credit_notes: Vec<CreditEntry>,
}

/// Decimals of a currency (c_Moneda), 2 when unknown.
pub fn currency_decimals(moneda: &str) -> u32 {
    crate::catalog::moneda(moneda).map(|m| m.decimales).unwrap_or(2)
}

/// Rounds half away from zero to `d` decimals and writes exactly `d` decimals.
pub fn round_money(v: Decimal, d: u32) -> Decimal {
    let mut r = v.round_dp_with_strategy(d, RoundingStrategy::MidpointAwayFromZero);
    r.rescale(d);
    r
}

/// Checks that `invoice` can receive payments (a stamped ingreso PPD with a positive total).
pub fn check_payable(invoice: &FiscalDocument) -> Result<&str, PaymentError> {
    let uuid = invoice.uuid.as_deref().ok_or(PaymentError::NotStamped)?;
    if invoice.tipo_de_comprobante != "I" {
        return Err(PaymentError::NotIngreso(invoice.tipo_de_comprobante.clone()));
    }
    match invoice.metodo_pago.as_deref() {
        Some("PPD") => {}
        other => return Err(PaymentError::NotPpd(other.unwrap_or("(ninguno)").to_string())),
    }
    if invoice.total <= Decimal::ZERO {
        return Err(PaymentError::ZeroTotal(invoice.total));
    }
    Ok(uuid)
}

/// The credit note entry of `note` for the invoice `uuid`, when `note` is an egreso whose
/// TipoRelacion 01 names it; `applied` when it names that invoice alone in `moneda`.
pub fn credit_entry(note: &FiscalDocument, uuid: &str, moneda: &str) -> Option<CreditEntry> {
    let note_uuid = note.uuid.as_ref()?;
    if note.tipo_de_comprobante != "E" {
        return None;
    }
    let named: Vec<&String> = note
        .relacionados
        .iter()
        .filter(|(tipo, _)| tipo == "01")
        .flat_map(|(_, uuids)| uuids)
        .collect();
    if !named.iter().any(|u| u.eq_ignore_ascii_case(uuid)) {
        return None;
    }
    Some(CreditEntry {
        uuid: note_uuid.clone(),
        fecha: note.fecha,
        total: note.total,
        moneda: note.moneda.clone(),
        applied: named.len() == 1 && note.moneda == moneda,
    })
}

/// The balance of `invoice` given its payment CFDIs (`(document, cancelled)`) and its live
/// (not cancelled) credit notes; payment CFDIs and credit notes that do not name the invoice are
/// ignored.
pub fn balance(
    invoice: &FiscalDocument,
    payments: &[(FiscalDocument, bool)],
    credit_notes: &[FiscalDocument],
) -> Result<Balance, PaymentError> {
    let uuid = check_payable(invoice)?;
    let mut credits: Vec<CreditEntry> = credit_notes.iter().filter_map(|n| credit_entry(n, uuid, &invoice.moneda)).collect();
    credits.sort_by(|a, b| (a.fecha, &a.uuid).cmp(&(b.fecha, &b.uuid)));
    credits.dedup_by(|a, b| a.uuid.eq_ignore_ascii_case(&b.uuid));
    let credited: Decimal = credits.iter().filter(|c| c.applied).map(|c| c.total).sum();
    let mut entries = Vec::new();
    for (p, cancelled) in payments {
        let (Some(pagos), Some(puuid)) = (&p.pagos, &p.uuid) else {
            continue;
        };
        for pago in &pagos.pagos {
            for d in pago.documentos.iter().filter(|d| d.id_documento.eq_ignore_ascii_case(uuid)) {
                entries.push(PaymentEntry {
                    uuid: puuid.clone(),
                    fecha_pago: pago.fecha_pago,
                    num_parcialidad: d.num_parcialidad,
                    imp_saldo_ant: d.imp_saldo_ant,
                    imp_pagado: d.imp_pagado,
                    imp_saldo_insoluto: d.imp_saldo_insoluto,
                    cancelled: *cancelled,
                });
            }
        }
    }
    entries.sort_by(|a, b| (a.num_parcialidad, a.cancelled, &a.uuid).cmp(&(b.num_parcialidad, b.cancelled, &b.uuid)));
    let live = entries.iter().filter(|e| !e.cancelled);
    let paid: Decimal = live.clone().map(|e| e.imp_pagado).sum();
    let next = live.map(|e| e.num_parcialidad).max().unwrap_or(0) + 1;
    let d = currency_decimals(&invoice.moneda);
    Ok(Balance {
        uuid: uuid.to_string(),
        moneda: invoice.moneda.clone(),
        total: invoice.total,
        credited: round_money(credited, d),
        paid: round_money(paid, d),
        balance: round_money((invoice.total - credited - paid).max(Decimal::ZERO), d),
        next_parcialidad: next,
        payments: entries,
        credit_notes: credits,
    })
}

/// (Impuesto, TipoFactor, TasaOCuota) → (Base, Importe) summed over the conceptos.
type Groups = BTreeMap<(String, String, Option<Decimal>), Decimal>;

fn group(lines: &mut dyn Iterator<Item = &TaxLine>) -> Result<Groups, PaymentError> {
    let mut g = Groups::new();
    for t in lines {
        if t.tipo_factor == "Cuota" {
            return Err(PaymentError::Cuota {
                impuesto: t.impuesto.clone(),
            });
        }
        *g.entry((t.impuesto.clone(), t.tipo_factor.clone(), t.tasa_o_cuota.map(|r| r.normalize())))
            .or_insert(Decimal::ZERO) += t.base.unwrap_or(Decimal::ZERO);
    }
    Ok(g)
}

/// The sale's paid-document entry for paying `imp_pagado` (in the invoice's currency) of
/// `invoice`, whose balance is `balance`. `equivalencia` is EquivalenciaDR (None when the
/// payment is in the invoice's currency).
pub fn paid_document(
    invoice: &FiscalDocument,
    balance: &Balance,
    imp_pagado: Decimal,
    equivalencia: Option<Decimal>,
) -> Result<SaleDocumento, PaymentError> {
    check_payable(invoice)?;
    let d = currency_decimals(&invoice.moneda);
    let imp_pagado = round_money(imp_pagado, d);
    if imp_pagado <= Decimal::ZERO {
        return Err(PaymentError::NotPositive(imp_pagado));
    }
    if imp_pagado > balance.balance {
        return Err(PaymentError::ExceedsBalance {
            pagado: imp_pagado,
            saldo: balance.balance,
            total: balance.total,
            credited: balance.credited,
            paid: balance.paid,
        });
    }
    let total = invoice.total;
    let before = total - balance.balance;
    let after = before + imp_pagado;
    let share = |base: Decimal| round_money(base * after / total, d) - round_money(base * before / total, d);
    let to_sale = |groups: Groups| -> Result<Vec<SaleImpuesto>, PaymentError> {
        groups
            .into_iter()
            .map(|((impuesto, tipo_factor, tasa), base)| {
                let base_dr = share(base);
                if base_dr <= Decimal::ZERO {
                    return Err(PaymentError::BaseRoundsToZero {
                        impuesto: impuesto.clone(),
                    });
                }
                Ok(SaleImpuesto {
                    impuesto,
                    tipo_factor,
                    tasa_o_cuota: tasa.map(|t| {
                        let mut t = t;
                        t.rescale(6);
                        Amount(t)
                    }),
                    base: Some(Amount(base_dr)),
                })
            })
            .collect()
    };
    let traslados = to_sale(group(&mut invoice.conceptos.iter().flat_map(|k| &k.traslados))?)?;
    let retenciones = to_sale(group(&mut invoice.conceptos.iter().flat_map(|k| &k.retenciones))?)?;
    let objeto_imp = if !traslados.is_empty() || !retenciones.is_empty() {
        "02".to_string()
    } else {
        let mut objetos = invoice.conceptos.iter().map(|k| k.objeto_imp.as_str());
        match objetos.next() {
            Some(first) if objetos.all(|o| o == first) && first != "02" => first.to_string(),
            _ => "01".to_string(),
        }
    };
    Ok(SaleDocumento {
        id_documento: balance.uuid.clone(),
        serie: invoice.serie.clone(),
        folio: invoice.folio.clone(),
        moneda: invoice.moneda.clone(),
        equivalencia: equivalencia.map(Amount),
        num_parcialidad: balance.next_parcialidad,
        saldo_anterior: Amount(round_money(balance.balance, d)),
        importe_pagado: Amount(imp_pagado),
        objeto_imp,
        traslados,
        retenciones,
    })
}

/// EquivalenciaDR for paying `imp_pagado` (document currency) with `monto` (payment currency):
/// `imp_pagado / monto` rounded up at 10 decimals.
pub fn equivalencia(imp_pagado: Decimal, monto: Decimal) -> Option<Decimal> {
    if monto <= Decimal::ZERO {
        return None;
    }
    let mut e = (imp_pagado / monto).round_dp_with_strategy(10, RoundingStrategy::AwayFromZero);
    e = e.normalize();
    (e > Decimal::ZERO).then_some(e)
}

/// What `monto` (payment currency) pays of a document at `equivalencia`: `monto × equivalencia`
/// rounded *down* to the document currency's decimals (so ImpPagado / EquivalenciaDR ≤ Monto).
pub fn paid_in_document_currency(monto: Decimal, equivalencia: Decimal, moneda_dr: &str) -> Decimal {
    let d = currency_decimals(moneda_dr);
    let mut v = (monto * equivalencia).round_dp_with_strategy(d, RoundingStrategy::ToZero);
    v.rescale(d);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fiscal::{FiscalConcepto, FiscalDocument};

    fn dec(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    fn line(base: &str, tasa: Option<&str>, importe: Option<&str>, impuesto: &str) -> TaxLine {
        TaxLine {
            base: Some(dec(base)),
            impuesto: impuesto.into(),
            tipo_factor: if tasa.is_some() { "Tasa".into() } else { "Exento".into() },
            tasa_o_cuota: tasa.map(dec),
            importe: importe.map(dec),
        }
    }

    fn invoice(total: &str, traslados: Vec<TaxLine>, retenciones: Vec<TaxLine>) -> FiscalDocument {
        FiscalDocument {
            uuid: Some("AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE".into()),
            fecha_timbrado: None,
            serie: Some("F".into()),
            folio: Some("1".into()),
            fecha: NaiveDateTime::parse_from_str("2026-11-01T10:00:00", "%Y-%m-%dT%H:%M:%S").unwrap(),
            tipo_de_comprobante: "I".into(),
            moneda: "MXN".into(),
            tipo_cambio: None,
            sub_total: dec("1000.00"),
            descuento: None,
            total: dec(total),
            forma_pago: Some("99".into()),
            metodo_pago: Some("PPD".into()),
            lugar_expedicion: "42501".into(),
            emisor_rfc: "EKU9003173C9".into(),
            emisor_nombre: "E".into(),
            receptor_rfc: "URE180429TM6".into(),
            receptor_nombre: "R".into(),
            receptor_domicilio_fiscal: "86991".into(),
            receptor_regimen_fiscal: "601".into(),
            uso_cfdi: "G03".into(),
            informacion_global: None,
            relacionados: vec![],
            conceptos: vec![FiscalConcepto {
                clave_prod_serv: "01010101".into(),
                no_identificacion: None,
                cantidad: Decimal::ONE,
                clave_unidad: "H87".into(),
                descripcion: "x".into(),
                valor_unitario: dec("1000.00"),
                importe: dec("1000.00"),
                descuento: None,
                objeto_imp: "02".into(),
                traslados,
                retenciones,
            }],
            traslados: vec![],
            retenciones: vec![],
            pagos: None,
        }
    }

    fn base_of(d: &SaleDocumento) -> Vec<Decimal> {
        d.traslados.iter().chain(&d.retenciones).map(|t| t.base.unwrap().0).collect()
    }

    #[test]
    fn prorated_bases_add_up_to_the_invoice_and_rates_relate_importe() {
        let inv = invoice("1160.00", vec![line("1000.00", Some("0.160000"), Some("160.00"), "002")], vec![]);
        let b0 = balance(&inv, &[], &[]).unwrap();
        assert_eq!((b0.balance, b0.next_parcialidad), (dec("1160.00"), 1));
        let d1 = paid_document(&inv, &b0, dec("500"), None).unwrap();
        assert_eq!(base_of(&d1), vec![dec("431.03")]);
        assert_eq!(
            (d1.num_parcialidad, d1.saldo_anterior.0, d1.importe_pagado.0),
            (1, dec("1160.00"), dec("500.00"))
        );
        let b1 = Balance {
            balance: dec("660.00"),
            paid: dec("500.00"),
            next_parcialidad: 2,
            ..b0.clone()
        };
        let d2 = paid_document(&inv, &b1, dec("660"), None).unwrap();
        assert_eq!(base_of(&d2), vec![dec("568.97")]);
        assert_eq!(dec("431.03") + dec("568.97"), dec("1000.00"));
        let e = paid_document(&inv, &b1, dec("660.01"), None).unwrap_err();
        assert!(matches!(e, PaymentError::ExceedsBalance { .. }), "{e}");
    }

    #[test]
    fn mixed_rates_and_retentions_are_prorated_per_group() {
        let inv = invoice(
            "1000.00",
            vec![
                line("600.00", Some("0.160000"), Some("96.00"), "002"),
                line("400.00", None, None, "002"),
            ],
            vec![line("600.00", Some("0.100000"), Some("60.00"), "001")],
        );
        let b = balance(&inv, &[], &[]).unwrap();
        let d = paid_document(&inv, &b, dec("250"), None).unwrap();
        // 600 × 250/1000, 400 × 250/1000 (Exento first by key order), ISR 600 × 1/4.
        assert_eq!(d.traslados.len(), 2);
        let exento = d.traslados.iter().find(|t| t.tipo_factor == "Exento").unwrap();
        assert_eq!(exento.base.unwrap().0, dec("100.00"));
        assert!(exento.tasa_o_cuota.is_none());
        assert_eq!(d.retenciones[0].base.unwrap().0, dec("150.00"));
    }

    fn credit_note(uuid: &str, total: &str, moneda: &str, names: &[&str]) -> FiscalDocument {
        let mut n = invoice(total, vec![], vec![]);
        n.uuid = Some(uuid.into());
        n.tipo_de_comprobante = "E".into();
        n.metodo_pago = Some("PUE".into());
        n.moneda = moneda.into();
        n.relacionados = vec![("01".into(), names.iter().map(|u| u.to_string()).collect())];
        n
    }

    #[test]
    fn a_credit_note_lowers_the_saldo_the_next_payment_writes() {
        let inv = invoice("1160.00", vec![line("1000.00", Some("0.160000"), Some("160.00"), "002")], vec![]);
        let uuid = inv.uuid.clone().unwrap();
        let lower = uuid.to_lowercase();
        let notes = [
            credit_note("NC-1", "116.00", "MXN", &[&lower]),
            // Names two invoices: how much is this one's is not written anywhere.
            credit_note("NC-2", "50.00", "MXN", &[&uuid, "OTRA"]),
            // Another currency: not subtracted from an MXN saldo.
            credit_note("NC-3", "10.00", "USD", &[&uuid]),
            // Names another invoice only.
            credit_note("NC-4", "99.00", "MXN", &["OTRA"]),
        ];
        let b = balance(&inv, &[], &notes).unwrap();
        assert_eq!((b.credited, b.balance), (dec("116.00"), dec("1044.00")));
        let applied: Vec<(&str, bool)> = b.credit_notes.iter().map(|c| (c.uuid.as_str(), c.applied)).collect();
        assert_eq!(applied, vec![("NC-1", true), ("NC-2", false), ("NC-3", false)]);
        let d = paid_document(&inv, &b, dec("1044"), None).unwrap();
        assert_eq!(d.saldo_anterior.0, dec("1044.00"));
        let e = paid_document(&inv, &b, dec("1044.01"), None).unwrap_err();
        assert!(e.to_string().contains("notas de crédito 116.00"), "{e}");
        // Credit beyond the total (a refund after the invoice was paid) leaves no saldo, never a
        // negative one.
        let all = [credit_note("NC-5", "2000.00", "MXN", &[&uuid])];
        assert_eq!(balance(&inv, &[], &all).unwrap().balance, dec("0.00"));
    }

    #[test]
    fn only_stamped_ppd_ingresos_are_payable() {
        let mut inv = invoice("1160.00", vec![], vec![]);
        inv.metodo_pago = Some("PUE".into());
        assert!(matches!(balance(&inv, &[], &[]), Err(PaymentError::NotPpd(_))));
        inv.metodo_pago = Some("PPD".into());
        inv.uuid = None;
        assert!(matches!(balance(&inv, &[], &[]), Err(PaymentError::NotStamped)));
    }

    #[test]
    fn equivalencia_never_lets_the_paid_amount_exceed_monto() {
        let e = equivalencia(dec("1000.00"), dec("17250.00")).unwrap();
        assert!(dec("1000.00") / e <= dec("17250.00"));
        assert!(e.scale() <= 10);
        let paid = paid_in_document_currency(dec("17250.00"), e, "USD");
        assert_eq!(paid, dec("1000.00"));
    }
}
