//! SAT's reference exchange rates, for the TipoCambio band (CFDI40118; the rule itself is
//! `cfdi::tipo_cambio`).
//!
//! SAT checks a comprobante's TipoCambio against the rate Banco de México published for the
//! currency (DOF, the day before) plus and minus the *porcentaje de variación* SAT publishes in
//! c_Moneda; outside it the comprobante needs a `Confirmacion` code from the PAC. Neither number
//! can be known offline, so the soporte or contador records them (`timbra tipo-cambio
//! registrar`): per currency a dated reference rate and the variation percent. Intake then checks
//! every sale in that currency dated on the reference's day or up to [`REFERENCE_DAYS`] days
//! after it (the most recent such reference); a sale with no reference that recent is not
//! band-checked (the PAC still is). A sale outside the band is refused with the band in the
//! message unless it brings its `confirmacion`, which is then written on the Comprobante.
//!
//! Stored as one setting (JSON, its history in the settings log like every setting), at most
//! [`KEPT_PER_CURRENCY`] references per currency.

use cfdi::mapping::MappingOptions;
use cfdi::sale::Sale;
use cfdi::tipo_cambio::ReferenciaTipoCambio;
use cfdi::validation::{FieldError, ValidationErrors};
use chrono::{NaiveDate, NaiveDateTime};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::outbox::Outbox;
use crate::settings;

/// The setting that holds the references.
pub const SETTING_EXCHANGE_REFERENCES: &str = "tipos_de_cambio";

/// How many days after its date a reference still applies to a sale.
pub const REFERENCE_DAYS: i64 = 7;

/// References kept per currency (the newest by date).
pub const KEPT_PER_CURRENCY: usize = 60;

/// One reference: a currency's rate on a day and SAT's variation percent for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ExchangeReference {
    /// c_Moneda, e.g. `USD`.
    pub moneda: String,
    /// The day the rate was published for (`AAAA-MM-DD`).
    #[ts(as = "String")]
    pub fecha: NaiveDate,
    /// MXN per unit of the currency.
    #[ts(as = "String")]
    pub tipo_cambio: Decimal,
    /// SAT's *porcentaje de variación* for the currency (c_Moneda), e.g. `35` for ±35 %.
    #[ts(as = "String")]
    pub variacion_pct: Decimal,
}

impl ExchangeReference {
    /// Field errors for a reference that cannot be one.
    fn check(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if self.moneda == "MXN" || self.moneda == "XXX" || cfdi::catalog::moneda(&self.moneda).is_none() {
            errors.push(FieldError::new(
                "moneda",
                "catalogo",
                format!(
                    "{:?} no es una moneda extranjera del catálogo c_Moneda (p. ej. USD, EUR)",
                    self.moneda
                ),
            ));
        }
        if self.tipo_cambio <= Decimal::ZERO || self.tipo_cambio.scale() > 6 {
            errors.push(FieldError::new(
                "tipo_cambio",
                "rango",
                format!(
                    "el tipo de cambio {} debe ser mayor que cero, con hasta 6 decimales",
                    self.tipo_cambio
                ),
            ));
        }
        if self.variacion_pct <= Decimal::ZERO || self.variacion_pct > Decimal::from(1000) {
            errors.push(FieldError::new(
                "variacion_pct",
                "rango",
                format!(
                    "el porcentaje de variación {} debe estar entre 0 y 1000 (el que publica el SAT para la moneda en c_Moneda)",
                    self.variacion_pct
                ),
            ));
        }
        errors
    }
}

/// The references that apply to a sale dated `fecha`: per currency, the newest dated that day
/// or up to [`REFERENCE_DAYS`] days before.
pub fn applicable(references: &[ExchangeReference], fecha: NaiveDateTime) -> Vec<ReferenciaTipoCambio> {
    let day = fecha.date();
    let mut out: Vec<(NaiveDate, ReferenciaTipoCambio)> = Vec::new();
    for r in references {
        let age = (day - r.fecha).num_days();
        if !(0..=REFERENCE_DAYS).contains(&age) {
            continue;
        }
        let candidate = ReferenciaTipoCambio {
            moneda: r.moneda.clone(),
            tipo_cambio: r.tipo_cambio,
            variacion_pct: r.variacion_pct,
        };
        match out.iter_mut().find(|(_, o)| o.moneda == r.moneda) {
            Some(slot) if slot.0 < r.fecha => *slot = (r.fecha, candidate),
            Some(_) => {}
            None => out.push((r.fecha, candidate)),
        }
    }
    out.into_iter().map(|(_, r)| r).collect()
}

impl Outbox {
    /// Every reference recorded, by currency and date.
    pub async fn exchange_references(&self) -> Result<Vec<ExchangeReference>> {
        match self.store().setting(SETTING_EXCHANGE_REFERENCES).await? {
            None => Ok(vec![]),
            Some(v) => serde_json::from_str(&v).map_err(|e| OutboxError::Database(format!("{SETTING_EXCHANGE_REFERENCES}: {e}"))),
        }
    }

    /// Records a reference (soporte or contador); the same currency and date again replaces it.
    /// Nothing is written when it is refused.
    pub async fn set_exchange_reference(&self, r: &ExchangeReference, actor: &Actor) -> Result<Vec<ExchangeReference>> {
        settings::may_change_settings(actor, "registrar tipos de cambio de referencia")?;
        let errors = r.check();
        if !errors.is_empty() {
            return Err(OutboxError::Invalid(ValidationErrors(errors)));
        }
        let mut all = self.exchange_references().await?;
        all.retain(|o| !(o.moneda == r.moneda && o.fecha == r.fecha));
        all.push(r.clone());
        all.sort_by(|a, b| (&a.moneda, std::cmp::Reverse(a.fecha)).cmp(&(&b.moneda, std::cmp::Reverse(b.fecha))));
        let mut kept: Vec<ExchangeReference> = Vec::new();
        for o in all {
            if kept.iter().filter(|k| k.moneda == o.moneda).count() < KEPT_PER_CURRENCY {
                kept.push(o);
            }
        }
        let value = serde_json::to_string(&kept).map_err(|e| OutboxError::Database(e.to_string()))?;
        self.store()
            .put_setting(SETTING_EXCHANGE_REFERENCES, &value, actor, self.now().timestamp_millis())
            .await?;
        Ok(kept)
    }

    /// The mapping options intake checks `sale` with (dated `fecha`): the references that apply
    /// (the console's live check of Emitir uses the same).
    pub async fn intake_mapping_options(&self, sale: &Sale, fecha: NaiveDateTime) -> Result<MappingOptions> {
        let moneda = sale.moneda.as_deref().unwrap_or("MXN");
        if moneda == "MXN" || moneda == "XXX" {
            return Ok(MappingOptions::default());
        }
        Ok(MappingOptions {
            tipo_cambio: applicable(&self.exchange_references().await?, fecha),
            confirmacion: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(moneda: &str, fecha: &str, tc: &str) -> ExchangeReference {
        ExchangeReference {
            moneda: moneda.into(),
            fecha: fecha.parse().unwrap(),
            tipo_cambio: tc.parse().unwrap(),
            variacion_pct: "35".parse().unwrap(),
        }
    }

    #[test]
    fn the_newest_reference_of_the_last_days_applies() {
        let refs = [
            r("USD", "2026-12-01", "17.10"),
            r("USD", "2026-12-03", "17.30"),
            r("EUR", "2026-11-20", "20.00"),
        ];
        let at = |d: &str| applicable(&refs, format!("{d}T12:00:00").parse().unwrap());
        let usd = at("2026-12-04");
        assert_eq!(usd.len(), 1, "EUR's is older than {REFERENCE_DAYS} days");
        assert_eq!(usd[0].tipo_cambio, "17.30".parse::<Decimal>().unwrap());
        assert_eq!(
            at("2026-12-02")[0].tipo_cambio,
            "17.10".parse::<Decimal>().unwrap(),
            "never a later day's"
        );
        assert_eq!(
            at("2026-12-10")[0].tipo_cambio,
            "17.30".parse::<Decimal>().unwrap(),
            "the edge: 7 days"
        );
        assert!(at("2026-12-11").iter().all(|x| x.moneda != "USD"), "8 days: none");
        assert!(at("2026-11-30").iter().all(|x| x.moneda != "USD"), "before any");
    }

    #[test]
    fn a_reference_that_cannot_be_one_names_its_field() {
        let mut bad = r("MXN", "2026-12-01", "0");
        bad.variacion_pct = Decimal::ZERO;
        let fields: Vec<String> = bad.check().into_iter().map(|e| e.field).collect();
        assert_eq!(fields, vec!["moneda", "tipo_cambio", "variacion_pct"]);
        assert!(r("USD", "2026-12-01", "17.123456").check().is_empty());
    }
}
