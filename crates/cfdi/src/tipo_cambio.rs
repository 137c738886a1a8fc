//! SAT's sanity band for TipoCambio (CFDI40118).
//!
//! SAT's rule: when a comprobante's TipoCambio lies outside the limits SAT sets for its
//! currency, the comprobante must carry a `Confirmacion` code, which the PAC issues. The
//! limits are the reference rate SAT takes for the currency (the one Banco de México publishes
//! in the DOF the day before) plus and minus the *porcentaje de variación* SAT publishes with
//! c_Moneda.
//!
//! Both numbers are data from outside this crate, which does no IO and keeps no market data:
//! the caller passes them in as [`ReferenciaTipoCambio`] values through
//! [`crate::mapping::MappingOptions`]. What is configurable, and why:
//! - **the reference rate**, per currency: it changes every day and comes from outside;
//! - **the variation percent**, per currency: SAT publishes it and may change it, so it is a
//!   number the caller gives, not a constant here;
//! - **no reference means no check**: a currency without a reference is accepted at any
//!   positive rate (the default), because a band without SAT's reference would be a guess.
//!
//! With a reference, a rate outside the band is refused with the band in the message unless a
//! Confirmacion code is given (then it is written on the Comprobante). The band's ends are
//! inside the band.

use rust_decimal::Decimal;

/// SAT's reference for one currency: its rate and the variation percent allowed around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenciaTipoCambio {
    /// c_Moneda code, e.g. `USD`.
    pub moneda: String,
    /// The reference rate (MXN per unit of the currency), e.g. `18.00`.
    pub tipo_cambio: Decimal,
    /// SAT's variation percent for the currency, e.g. `35` for ±35 %.
    pub variacion_pct: Decimal,
}

impl ReferenciaTipoCambio {
    /// The band (lowest, highest), both included, rounded outwards to 6 decimals (TipoCambio's
    /// precision); the lowest is never below zero.
    pub fn banda(&self) -> (Decimal, Decimal) {
        let delta = self.tipo_cambio * self.variacion_pct / Decimal::ONE_HUNDRED;
        let min = (self.tipo_cambio - delta).max(Decimal::ZERO);
        let max = self.tipo_cambio + delta;
        (
            min.round_dp_with_strategy(6, rust_decimal::RoundingStrategy::ToZero).normalize(),
            max.round_dp_with_strategy(6, rust_decimal::RoundingStrategy::AwayFromZero)
                .normalize(),
        )
    }

    /// Whether `tipo_cambio` lies inside the band.
    pub fn en_banda(&self, tipo_cambio: Decimal) -> bool {
        let (min, max) = self.banda();
        tipo_cambio >= min && tipo_cambio <= max
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    #[test]
    fn band_includes_its_ends() {
        let r = ReferenciaTipoCambio {
            moneda: "USD".into(),
            tipo_cambio: Decimal::from_str("18.00").unwrap(),
            variacion_pct: Decimal::from_str("10").unwrap(),
        };
        assert_eq!(r.banda(), (Decimal::from_str("16.2").unwrap(), Decimal::from_str("19.8").unwrap()));
        assert!(r.en_banda(Decimal::from_str("16.2").unwrap()));
        assert!(r.en_banda(Decimal::from_str("19.8").unwrap()));
        assert!(!r.en_banda(Decimal::from_str("19.800001").unwrap()));
        assert!(!r.en_banda(Decimal::ONE));
    }
}
