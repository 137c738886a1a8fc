//! The factura global (público en general): counter sales (tickets) of a period collected into
//! one ingreso CFDI, per SAT's rules for operations with the público en general.
//!
//! What the global invoice says:
//! - Receptor: Rfc `XAXX010101000`, Nombre `PUBLICO EN GENERAL`, DomicilioFiscalReceptor = the
//!   emisor's LugarExpedicion, RegimenFiscalReceptor `616`, UsoCFDI `S01`;
//! - `InformacionGlobal`: Periodicidad (c_Periodicidad 01 diario, 02 semanal, 03 quincenal,
//!   04 mensual, 05 bimestral), Meses (c_Meses: the month 01–12, or 13–18 for the bimestres
//!   enero-febrero … noviembre-diciembre when the periodicidad is bimestral) and Año;
//! - one Concepto per ticket: ClaveProdServ `01010101`, ClaveUnidad `ACT`, Cantidad 1,
//!   Descripcion `Venta`, NoIdentificacion = the ticket's sale_id, ValorUnitario = the ticket's
//!   importe, its Descuento, its ObjetoImp and its taxes (each tax line's rate as on the ticket;
//!   the amounts are recomputed by [`crate::mapping`] on the ticket's base). A ticket whose
//!   conceptos carry different tax sets gives one Concepto per set, all with its sale_id;
//! - MetodoPago PUE; FormaPago the one with the largest amount among the tickets (ties: the
//!   lowest code); Moneda MXN.
//!
//! A group of a ticket's taxed conceptos discounted 100 % (Importe − Descuento = 0) is left out
//! of the global: its taxes would be written with Base 0, which SAT's XSD refuses (CFDI40174),
//! and it adds nothing to any amount. Intake already refuses such a ticket (see
//! [`crate::mapping`]); this keeps tickets recorded before that rule from breaking a whole
//! period's global. A period whose tickets are all discounted 100 % is refused (`tickets`).
//!
//! A period never spans two months (two bimestre months for 05): SAT's Meses names one.

use std::collections::BTreeMap;

use chrono::{Datelike, NaiveDate, NaiveDateTime};
use rust_decimal::Decimal;

use crate::catalog::RFC_PUBLICO_EN_GENERAL;
use crate::sale::{Amount, EmisorProfile, LocalDateTime, Sale, SaleConcepto, SaleImpuesto, SaleInformacionGlobal, SaleKind, SaleReceptor};
use crate::validation::{FieldError, ValidationErrors};

/// The receptor of every factura global.
pub fn publico_en_general(emisor: &EmisorProfile) -> SaleReceptor {
    SaleReceptor {
        rfc: RFC_PUBLICO_EN_GENERAL.into(),
        nombre: "PUBLICO EN GENERAL".into(),
        domicilio_fiscal: emisor.lugar_expedicion.clone(),
        regimen_fiscal: "616".into(),
        uso_cfdi: "S01".into(),
        residencia_fiscal: None,
        num_reg_id_trib: None,
    }
}

/// The daily period of a ticket (used to validate a ticket as its own one-ticket global).
pub fn ticket_period(ticket: &Sale) -> SaleInformacionGlobal {
    let day = ticket.occurred_at.0.date();
    SaleInformacionGlobal {
        periodicidad: "01".into(),
        meses: format!("{:02}", day.month()),
        anio: format!("{:04}", day.year()),
    }
}

/// A period of a factura global: its periodicidad and its days (inclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalPeriod {
    pub periodicidad: String,
    pub desde: NaiveDate,
    pub hasta: NaiveDate,
}

impl GlobalPeriod {
    /// Checks the period against its periodicidad; errors name `periodicidad`, `desde`, `hasta`.
    pub fn new(periodicidad: &str, desde: NaiveDate, hasta: NaiveDate) -> Result<GlobalPeriod, ValidationErrors> {
        let err = |field: &str, message: String| ValidationErrors::one(FieldError::new(field, "periodo", message));
        if crate::catalog::periodicidad(periodicidad).is_none() {
            return Err(ValidationErrors::one(FieldError::new(
                "periodicidad",
                "catalogo",
                format!(
                    "{periodicidad:?} no es una clave de c_Periodicidad (01 diario, 02 semanal, 03 quincenal, 04 mensual, 05 bimestral)"
                ),
            )));
        }
        if hasta < desde {
            return Err(err("hasta", format!("el periodo termina ({hasta}) antes de empezar ({desde})")));
        }
        let days = (hasta - desde).num_days() + 1;
        let same_month = desde.year() == hasta.year() && desde.month() == hasta.month();
        let same_bimestre = desde.year() == hasta.year() && (desde.month() - 1) / 2 == (hasta.month() - 1) / 2;
        match periodicidad {
            "01" if days != 1 => {
                return Err(err(
                    "hasta",
                    format!("una factura global diaria cubre un día; {desde} a {hasta} son {days}"),
                ))
            }
            "02" if days > 7 => {
                return Err(err(
                    "hasta",
                    format!("una factura global semanal cubre hasta 7 días; {desde} a {hasta} son {days}"),
                ))
            }
            "03" if days > 16 => {
                return Err(err(
                    "hasta",
                    format!("una factura global quincenal cubre hasta 16 días; {desde} a {hasta} son {days}"),
                ))
            }
            "05" if !same_bimestre => {
                return Err(err(
                    "hasta",
                    format!("una factura global bimestral cubre un bimestre (enero-febrero, marzo-abril…); {desde} a {hasta} no"),
                ))
            }
            "05" => {}
            _ if !same_month => {
                return Err(err(
                    "hasta",
                    format!("el periodo {desde} a {hasta} cruza de mes; SAT pide un mes por factura global"),
                ))
            }
            _ => {}
        }
        Ok(GlobalPeriod {
            periodicidad: periodicidad.to_string(),
            desde,
            hasta,
        })
    }

    /// InformacionGlobal of the period.
    pub fn informacion_global(&self) -> SaleInformacionGlobal {
        let meses = if self.periodicidad == "05" {
            13 + (self.desde.month() - 1) / 2
        } else {
            self.desde.month()
        };
        SaleInformacionGlobal {
            periodicidad: self.periodicidad.clone(),
            meses: format!("{meses:02}"),
            anio: format!("{:04}", self.desde.year()),
        }
    }

    /// The sale_id of the period's global invoice: one per period, so a second run finds it.
    pub fn sale_id(&self) -> String {
        format!(
            "global-{}-{}-{}",
            self.periodicidad,
            self.desde.format("%Y%m%d"),
            self.hasta.format("%Y%m%d")
        )
    }

    /// Whether a ticket that occurred at `at` (local time) belongs to the period.
    pub fn contains(&self, at: NaiveDateTime) -> bool {
        let d = at.date();
        d >= self.desde && d <= self.hasta
    }
}

/// The signature that decides which conceptos of one ticket share a global Concepto.
fn tax_set(k: &SaleConcepto) -> String {
    let line = |t: &SaleImpuesto| {
        format!(
            "{}/{}/{}",
            t.impuesto,
            t.tipo_factor,
            t.tasa_o_cuota.map(|a| a.0.normalize().to_string()).unwrap_or_default()
        )
    };
    let tr: Vec<String> = k.traslados.iter().map(line).collect();
    let re: Vec<String> = k.retenciones.iter().map(line).collect();
    format!("{}|{}|{}", k.objeto_imp, tr.join(","), re.join(","))
}

/// Decimals written for the amounts of a ticket concepto (its importe rounded as the mapping does).
fn importe(k: &SaleConcepto) -> Decimal {
    crate::payment::round_money(k.cantidad.0 * k.valor_unitario.0, 2)
}

/// The global invoice's sale for `tickets` (sale_id, sale), dated `occurred_at` (local time at
/// LugarExpedicion). Tickets are taken in the order given; each must be a ticket.
pub fn global_sale(
    sale_id: &str,
    period: &GlobalPeriod,
    tickets: &[Sale],
    emisor: &EmisorProfile,
    occurred_at: NaiveDateTime,
) -> Result<Sale, ValidationErrors> {
    let mut errors = Vec::new();
    if tickets.is_empty() {
        errors.push(FieldError::new("tickets", "requerido", "no hay tickets en el periodo"));
    }
    let mut conceptos = Vec::new();
    let mut by_forma: BTreeMap<String, Decimal> = BTreeMap::new();
    for (i, t) in tickets.iter().enumerate() {
        if !t.ticket || t.kind != SaleKind::Ingreso {
            errors.push(FieldError::new(
                format!("tickets[{i}]"),
                "combinacion",
                format!("la venta {} no es un ticket", t.sale_id),
            ));
            continue;
        }
        if !period.contains(t.occurred_at.0) {
            errors.push(FieldError::new(
                format!("tickets[{i}]"),
                "periodo",
                format!("el ticket {} ({}) no es del periodo", t.sale_id, t.occurred_at.0),
            ));
        }
        // Group the ticket's conceptos by tax set, in first-seen order.
        let mut groups: Vec<(String, Vec<&SaleConcepto>)> = Vec::new();
        for k in &t.conceptos {
            let key = tax_set(k);
            match groups.iter_mut().find(|(g, _)| *g == key) {
                Some((_, ks)) => ks.push(k),
                None => groups.push((key, vec![k])),
            }
        }
        let mut ticket_total = Decimal::ZERO;
        for (_, ks) in groups {
            let valor: Decimal = ks.iter().map(|k| importe(k)).sum();
            let descuento: Decimal = ks.iter().filter_map(|k| k.descuento.map(|d| d.0)).sum();
            ticket_total += valor - descuento;
            let first = ks[0];
            let taxed = !first.traslados.is_empty() || !first.retenciones.is_empty();
            if taxed && valor - descuento <= Decimal::ZERO {
                // Discounted 100 %: its taxes would have Base 0, which SAT's XSD refuses
                // (CFDI40174). It adds nothing to any amount, so it is left out.
                continue;
            }
            conceptos.push(SaleConcepto {
                clave_prod_serv: "01010101".into(),
                no_identificacion: Some(t.sale_id.clone()),
                cantidad: Amount(Decimal::ONE),
                clave_unidad: "ACT".into(),
                unidad: None,
                descripcion: "Venta".into(),
                valor_unitario: Amount(valor),
                descuento: (!descuento.is_zero()).then_some(Amount(descuento)),
                objeto_imp: first.objeto_imp.clone(),
                traslados: first.traslados.clone(),
                retenciones: first.retenciones.clone(),
                informacion_aduanera: vec![],
            });
        }
        *by_forma
            .entry(t.forma_pago.clone().unwrap_or_else(|| "01".into()))
            .or_insert(Decimal::ZERO) += ticket_total;
    }
    if conceptos.is_empty() && !tickets.is_empty() && errors.is_empty() {
        errors.push(FieldError::new(
            "tickets",
            "base_cero",
            "todos los tickets del periodo están descontados al 100 %: no hay importe que facturar en una factura global",
        ));
    }
    if !errors.is_empty() {
        return Err(ValidationErrors(errors));
    }
    // The largest amount wins; BTreeMap order makes the lowest code win a tie.
    let forma_pago = by_forma
        .iter()
        .fold(None::<(&String, Decimal)>, |best, (f, a)| match best {
            Some((_, b)) if b >= *a => best,
            _ => Some((f, *a)),
        })
        .map(|(f, _)| f.clone());
    Ok(Sale {
        sale_id: sale_id.to_string(),
        kind: SaleKind::Ingreso,
        occurred_at: LocalDateTime(occurred_at),
        serie: None,
        folio: None,
        forma_pago,
        metodo_pago: Some("PUE".into()),
        condiciones_de_pago: None,
        moneda: Some("MXN".into()),
        tipo_cambio: None,
        exportacion: None,
        confirmacion: None,
        receptor: publico_en_general(emisor),
        conceptos,
        relacionados: vec![],
        informacion_global: Some(period.informacion_global()),
        pagos: vec![],
        ticket: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn periods_follow_their_periodicidad() {
        let p = GlobalPeriod::new("01", day("2026-12-03"), day("2026-12-03")).unwrap();
        assert_eq!(
            p.informacion_global(),
            SaleInformacionGlobal {
                periodicidad: "01".into(),
                meses: "12".into(),
                anio: "2026".into()
            }
        );
        assert_eq!(p.sale_id(), "global-01-20261203-20261203");
        assert!(GlobalPeriod::new("01", day("2026-12-03"), day("2026-12-04")).is_err());
        assert!(GlobalPeriod::new("04", day("2026-11-20"), day("2026-12-04")).is_err());
        assert!(GlobalPeriod::new("02", day("2026-12-01"), day("2026-12-08")).is_err());
        let b = GlobalPeriod::new("05", day("2026-11-01"), day("2026-12-31")).unwrap();
        assert_eq!(b.informacion_global().meses, "18");
        assert!(GlobalPeriod::new("05", day("2026-10-01"), day("2026-11-30")).is_err());
        let e = GlobalPeriod::new("09", day("2026-12-01"), day("2026-12-01")).unwrap_err();
        assert_eq!(e.0[0].field, "periodicidad");
    }
}
