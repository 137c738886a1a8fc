//! A price typed with IVA included, turned into the concepto's ValorUnitario (without IVA).
//!
//! The customer pays `cantidad × precio`; the comprobante computes the line as
//! `Importe = round(cantidad × ValorUnitario)` and `IVA = round(Importe × tasa)`, each rounded
//! to the currency's decimals (`crate::mapping`). Dividing the price by `1 + tasa` and rounding
//! is not enough: the rounded parts may add up to a cent more or less. [`sin_iva`] looks for the
//! Importe next to `precio / (1 + tasa)` whose Importe + IVA is exactly the typed total, then for
//! the ValorUnitario (the currency's decimals when they suffice, else six) that gives that
//! Importe. Some totals cannot be reached at all (the IVA of one more cent of Importe can jump
//! by two cents); then the nearest is taken and the answer says it is not exact.
//!
//! Only a percentage IVA is taken out (Tasa 16 %, 8 %, 0 %); exento or a line with no IVA keeps
//! the price as it is. Pure: rust_decimal, no floats.

use rust_decimal::{Decimal, RoundingStrategy};
use serde::Serialize;
use ts_rs::TS;

/// The line a price with IVA included becomes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct PrecioSinIva {
    /// The concepto's ValorUnitario, without IVA.
    #[ts(as = "String")]
    pub valor_unitario: Decimal,
    /// cantidad × ValorUnitario, rounded.
    #[ts(as = "String")]
    pub importe: Decimal,
    /// The line's IVA, rounded.
    #[ts(as = "String")]
    pub iva: Decimal,
    /// Importe + IVA: what the line will total.
    #[ts(as = "String")]
    pub total: Decimal,
    /// The total the price asked for: `cantidad × precio`, rounded.
    #[ts(as = "String")]
    pub objetivo: Decimal,
    /// `total == objetivo`.
    pub exacto: bool,
}

fn money(v: Decimal, d: u32) -> Decimal {
    let mut r = v.round_dp_with_strategy(d, RoundingStrategy::MidpointAwayFromZero);
    r.rescale(d);
    r
}

/// The Importe and IVA of a line, as the mapping computes them.
fn linea(cantidad: Decimal, valor_unitario: Decimal, tasa: Decimal, d: u32) -> (Decimal, Decimal) {
    let importe = money(cantidad * valor_unitario, d);
    (importe, money(importe * tasa, d))
}

/// The ValorUnitario for a price `precio` per unit with IVA at `tasa` (0.16) included, for
/// `cantidad` units in a currency of `decimales` decimals. `None` when the price or the quantity
/// is not positive or the rate is negative.
pub fn sin_iva(precio: Decimal, cantidad: Decimal, tasa: Decimal, decimales: u32) -> Option<PrecioSinIva> {
    if precio <= Decimal::ZERO || cantidad <= Decimal::ZERO || tasa < Decimal::ZERO {
        return None;
    }
    let d = decimales;
    let objetivo = money(cantidad * precio, d);
    let paso = Decimal::new(1, d);
    let centro = money(objetivo / (Decimal::ONE + tasa), d);
    // The Importe whose Importe + IVA is the total, nearest to the exact division first.
    let importe = [0i64, -1, 1, -2, 2, -3, 3]
        .iter()
        .map(|&k| centro + paso * Decimal::from(k))
        .filter(|i| *i > Decimal::ZERO)
        .find(|i| *i + money(*i * tasa, d) == objetivo)
        .unwrap_or(centro);
    // The ValorUnitario giving that Importe: with the currency's decimals when they do, else six.
    let valor_unitario = [d, 6]
        .iter()
        .map(|&dp| money(importe / cantidad, dp))
        .find(|vu| linea(cantidad, *vu, tasa, d).0 == importe)
        .unwrap_or_else(|| money(importe / cantidad, 6));
    let (importe, iva) = linea(cantidad, valor_unitario, tasa, d);
    let total = importe + iva;
    Some(PrecioSinIva {
        valor_unitario,
        importe,
        iva,
        total,
        objetivo,
        exacto: total == objetivo,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal::prelude::ToPrimitive;

    fn dec(s: &str) -> Decimal {
        s.parse().expect("decimal")
    }

    #[test]
    fn a_price_with_iva_becomes_the_valor_unitario_that_totals_it() {
        let r = sin_iva(dec("100"), dec("1"), dec("0.16"), 2).expect("price");
        assert_eq!(
            (r.valor_unitario, r.importe, r.iva, r.total),
            (dec("86.21"), dec("86.21"), dec("13.79"), dec("100.00"))
        );
        assert!(r.exacto);
        let r = sin_iva(dec("100"), dec("3"), dec("0.16"), 2).expect("price");
        assert_eq!(r.total, dec("300.00"));
        assert_eq!(r.valor_unitario.scale(), 6, "three units need six decimals: {r:?}");
        let r = sin_iva(dec("116"), dec("1"), dec("0.16"), 2).expect("price");
        assert_eq!(r.valor_unitario, dec("100.00"));
        assert_eq!(sin_iva(dec("0"), dec("1"), dec("0.16"), 2), None);
        assert_eq!(sin_iva(dec("10"), dec("0"), dec("0.16"), 2), None);
    }

    #[test]
    fn every_total_reachable_is_reached_and_the_others_miss_by_a_cent() {
        for tasa in ["0.16", "0.08", "0"] {
            let tasa = dec(tasa);
            for cents in 1..=3_000i64 {
                let precio = Decimal::new(cents, 2);
                for cantidad in ["1", "2", "3", "0.5", "7"] {
                    let r = sin_iva(precio, dec(cantidad), tasa, 2).expect("price");
                    // Importe + IVA grows by one or two cents per cent of Importe: a reachable
                    // total is reached by an Importe within a few cents of the division.
                    let near = (r.objetivo * dec("100") / (Decimal::ONE + tasa)).round().to_i64().expect("cents");
                    let reachable = (near - 50..=near + 50)
                        .filter(|c| *c > 0)
                        .map(|c| Decimal::new(c, 2))
                        .any(|i| i + money(i * tasa, 2) == r.objetivo);
                    assert_eq!(r.exacto, reachable, "{precio} × {cantidad} at {tasa}: {r:?}");
                    assert!((r.total - r.objetivo).abs() <= dec("0.01"), "{precio} × {cantidad}: {r:?}");
                }
            }
        }
    }
}
