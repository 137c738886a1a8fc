//! The amount in words ("importe con letra") in Mexican Spanish, as invoices print it.
//!
//! Owns [`importe_con_letra`]: the integer part in words (upper case, with accents), the
//! currency's name, the cents as `NN/100` and the currency's suffix, e.g.
//! `UN MIL CIENTO SESENTA PESOS 00/100 M.N.` or `CINCUENTA DÓLARES 50/100 USD`.
//!
//! Conventions (those of Mexican commercial practice):
//!
//! * the cents are always two digits over 100, rounded half away from zero, whatever the
//!   currency's decimals;
//! * `1000` is `UN MIL` (not just `MIL`), `21` before a noun is `VEINTIÚN`, `100` is `CIEN`;
//! * long scale: `MILLÓN` (10⁶), `MIL MILLONES` (10⁹), `BILLÓN` (10¹²), `TRILLÓN` (10¹⁸),
//!   `CUATRILLÓN` (10²⁴); an amount that ends in one of them takes `DE` before the noun
//!   (`UN MILLÓN DE PESOS`);
//! * a currency without a Spanish name here is written with its code and no noun
//!   (`VEINTIUNO 00/100 GBP`), so no agreement can come out wrong;
//! * a negative amount (never valid in a CFDI) is prefixed with `MENOS`.

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};

/// A currency's name in Spanish and the suffix printed after the cents.
struct CurrencyName {
    code: &'static str,
    singular: &'static str,
    plural: &'static str,
    suffix: &'static str,
}

/// Masculine names only: the numbers before them agree in the masculine (`UN`, `VEINTIÚN`,
/// `DOSCIENTOS`). Feminine currencies (libra, rupia, corona) are written by code instead.
static CURRENCY_NAMES: &[CurrencyName] = &[
    CurrencyName {
        code: "MXN",
        singular: "PESO",
        plural: "PESOS",
        suffix: "M.N.",
    },
    CurrencyName {
        code: "USD",
        singular: "DÓLAR",
        plural: "DÓLARES",
        suffix: "USD",
    },
    CurrencyName {
        code: "EUR",
        singular: "EURO",
        plural: "EUROS",
        suffix: "EUR",
    },
    CurrencyName {
        code: "CAD",
        singular: "DÓLAR CANADIENSE",
        plural: "DÓLARES CANADIENSES",
        suffix: "CAD",
    },
    CurrencyName {
        code: "JPY",
        singular: "YEN",
        plural: "YENES",
        suffix: "JPY",
    },
    CurrencyName {
        code: "CHF",
        singular: "FRANCO SUIZO",
        plural: "FRANCOS SUIZOS",
        suffix: "CHF",
    },
    CurrencyName {
        code: "CNY",
        singular: "YUAN",
        plural: "YUANES",
        suffix: "CNY",
    },
];

/// The amount in words for a currency code of c_Moneda.
///
/// ```
/// use rust_decimal::Decimal;
/// let total: Decimal = "1160.00".parse().unwrap();
/// assert_eq!(pdf::importe_con_letra(total, "MXN"), "UN MIL CIENTO SESENTA PESOS 00/100 M.N.");
/// ```
pub fn importe_con_letra(importe: Decimal, moneda: &str) -> String {
    let rounded = importe.abs().round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero);
    let whole = rounded.trunc();
    let cents = (rounded - whole)
        .checked_mul(Decimal::ONE_HUNDRED)
        .and_then(|c| c.to_u32())
        .unwrap_or(0);
    // Decimal holds at most 96 bits, so its integer part always fits in a u128.
    let n = whole.to_u128().unwrap_or(0);
    let name = CURRENCY_NAMES.iter().find(|c| c.code == moneda);
    let mut out = String::new();
    if importe.is_sign_negative() && !rounded.is_zero() {
        out.push_str("MENOS ");
    }
    match name {
        Some(c) => {
            out.push_str(&number_in_words(n, true));
            out.push(' ');
            if n >= MILLION && n.is_multiple_of(MILLION) {
                out.push_str("DE ");
            }
            out.push_str(if n == 1 { c.singular } else { c.plural });
            out.push_str(&format!(" {cents:02}/100 {}", c.suffix));
        }
        None => {
            out.push_str(&number_in_words(n, false));
            out.push_str(&format!(" {cents:02}/100 {moneda}"));
        }
    }
    out
}

const MILLION: u128 = 1_000_000;

/// The words of `n`. `before_noun` shortens a final `UNO` to `UN` (`VEINTIÚN PESOS`).
pub fn number_in_words(n: u128, before_noun: bool) -> String {
    if n == 0 {
        return "CERO".to_string();
    }
    // Long scale: groups of six digits, from the units up.
    const SCALES: [(&str, &str); 4] = [
        ("MILLÓN", "MILLONES"),
        ("BILLÓN", "BILLONES"),
        ("TRILLÓN", "TRILLONES"),
        ("CUATRILLÓN", "CUATRILLONES"),
    ];
    let mut groups = Vec::new();
    let mut rest = n;
    while rest > 0 {
        groups.push((rest % MILLION) as u32);
        rest /= MILLION;
    }
    let mut parts: Vec<String> = Vec::new();
    for (i, &g) in groups.iter().enumerate().rev() {
        if g == 0 {
            continue;
        }
        if i == 0 {
            parts.push(below_million(g, before_noun));
        } else {
            let (singular, plural) = SCALES.get(i - 1).copied().unwrap_or(("", ""));
            if g == 1 {
                parts.push(format!("UN {singular}"));
            } else {
                parts.push(format!("{} {plural}", below_million(g, true)));
            }
        }
    }
    parts.join(" ")
}

/// 1..=999_999. Thousands always read `UN MIL`, `VEINTIÚN MIL`, `CIENTO UN MIL`.
fn below_million(n: u32, before_noun: bool) -> String {
    let thousands = n / 1000;
    let units = n % 1000;
    let mut parts = Vec::new();
    match thousands {
        0 => {}
        1 => parts.push("UN MIL".to_string()),
        t => parts.push(format!("{} MIL", below_thousand(t, true))),
    }
    if units > 0 {
        parts.push(below_thousand(units, before_noun));
    }
    parts.join(" ")
}

/// 1..=999.
fn below_thousand(n: u32, before_noun: bool) -> String {
    const HUNDREDS: [&str; 10] = [
        "",
        "CIENTO",
        "DOSCIENTOS",
        "TRESCIENTOS",
        "CUATROCIENTOS",
        "QUINIENTOS",
        "SEISCIENTOS",
        "SETECIENTOS",
        "OCHOCIENTOS",
        "NOVECIENTOS",
    ];
    if n == 100 {
        return "CIEN".to_string();
    }
    let h = (n / 100) as usize;
    let rest = n % 100;
    let mut parts = Vec::new();
    if h > 0 {
        parts.push(HUNDREDS.get(h).copied().unwrap_or_default().to_string());
    }
    if rest > 0 {
        parts.push(below_hundred(rest, before_noun));
    }
    parts.join(" ")
}

/// 1..=99.
fn below_hundred(n: u32, before_noun: bool) -> String {
    const UNITS: [&str; 30] = [
        "",
        "UNO",
        "DOS",
        "TRES",
        "CUATRO",
        "CINCO",
        "SEIS",
        "SIETE",
        "OCHO",
        "NUEVE",
        "DIEZ",
        "ONCE",
        "DOCE",
        "TRECE",
        "CATORCE",
        "QUINCE",
        "DIECISÉIS",
        "DIECISIETE",
        "DIECIOCHO",
        "DIECINUEVE",
        "VEINTE",
        "VEINTIUNO",
        "VEINTIDÓS",
        "VEINTITRÉS",
        "VEINTICUATRO",
        "VEINTICINCO",
        "VEINTISÉIS",
        "VEINTISIETE",
        "VEINTIOCHO",
        "VEINTINUEVE",
    ];
    const TENS: [&str; 10] = [
        "",
        "",
        "",
        "TREINTA",
        "CUARENTA",
        "CINCUENTA",
        "SESENTA",
        "SETENTA",
        "OCHENTA",
        "NOVENTA",
    ];
    let words = if n < 30 {
        UNITS.get(n as usize).copied().unwrap_or_default().to_string()
    } else {
        let tens = TENS.get((n / 10) as usize).copied().unwrap_or_default();
        match n % 10 {
            0 => tens.to_string(),
            u => format!("{tens} Y {}", UNITS.get(u as usize).copied().unwrap_or_default()),
        }
    };
    if !before_noun {
        return words;
    }
    if words == "VEINTIUNO" {
        "VEINTIÚN".to_string()
    } else if let Some(stem) = words.strip_suffix("UNO") {
        // "UNO" → "UN", "TREINTA Y UNO" → "TREINTA Y UN".
        format!("{stem}UN")
    } else {
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mxn(s: &str) -> String {
        importe_con_letra(s.parse().expect("decimal"), "MXN")
    }

    #[test]
    fn pesos_mexicanos() {
        let cases = [
            ("0", "CERO PESOS 00/100 M.N."),
            ("0.00", "CERO PESOS 00/100 M.N."),
            ("1", "UN PESO 00/100 M.N."),
            ("1.50", "UN PESO 50/100 M.N."),
            ("2", "DOS PESOS 00/100 M.N."),
            ("15", "QUINCE PESOS 00/100 M.N."),
            ("16", "DIECISÉIS PESOS 00/100 M.N."),
            ("20", "VEINTE PESOS 00/100 M.N."),
            ("21", "VEINTIÚN PESOS 00/100 M.N."),
            ("22", "VEINTIDÓS PESOS 00/100 M.N."),
            ("30", "TREINTA PESOS 00/100 M.N."),
            ("31", "TREINTA Y UN PESOS 00/100 M.N."),
            ("99", "NOVENTA Y NUEVE PESOS 00/100 M.N."),
            ("100", "CIEN PESOS 00/100 M.N."),
            ("101", "CIENTO UN PESOS 00/100 M.N."),
            ("115", "CIENTO QUINCE PESOS 00/100 M.N."),
            ("200", "DOSCIENTOS PESOS 00/100 M.N."),
            ("500", "QUINIENTOS PESOS 00/100 M.N."),
            ("999", "NOVECIENTOS NOVENTA Y NUEVE PESOS 00/100 M.N."),
            ("1000", "UN MIL PESOS 00/100 M.N."),
            ("1001", "UN MIL UN PESOS 00/100 M.N."),
            ("1160.00", "UN MIL CIENTO SESENTA PESOS 00/100 M.N."),
            ("2000", "DOS MIL PESOS 00/100 M.N."),
            ("21000", "VEINTIÚN MIL PESOS 00/100 M.N."),
            ("100000", "CIEN MIL PESOS 00/100 M.N."),
            ("101000", "CIENTO UN MIL PESOS 00/100 M.N."),
            (
                "999999",
                "NOVECIENTOS NOVENTA Y NUEVE MIL NOVECIENTOS NOVENTA Y NUEVE PESOS 00/100 M.N.",
            ),
            ("1000000", "UN MILLÓN DE PESOS 00/100 M.N."),
            ("1000001", "UN MILLÓN UN PESOS 00/100 M.N."),
            ("1001000", "UN MILLÓN UN MIL PESOS 00/100 M.N."),
            ("2000000.01", "DOS MILLONES DE PESOS 01/100 M.N."),
            ("21000000", "VEINTIÚN MILLONES DE PESOS 00/100 M.N."),
            ("1000000000", "UN MIL MILLONES DE PESOS 00/100 M.N."),
            (
                "999999999.99",
                "NOVECIENTOS NOVENTA Y NUEVE MILLONES NOVECIENTOS NOVENTA Y NUEVE MIL NOVECIENTOS NOVENTA Y NUEVE PESOS 99/100 M.N.",
            ),
            ("1000000000000", "UN BILLÓN DE PESOS 00/100 M.N."),
            ("2000000000001", "DOS BILLONES UN PESOS 00/100 M.N."),
        ];
        for (amount, words) in cases {
            assert_eq!(mxn(amount), words, "{amount}");
        }
    }

    #[test]
    fn cents_round_half_away_from_zero_and_carry() {
        assert_eq!(mxn("10.005"), "DIEZ PESOS 01/100 M.N.");
        assert_eq!(mxn("10.004"), "DIEZ PESOS 00/100 M.N.");
        assert_eq!(mxn("0.999"), "UN PESO 00/100 M.N.");
        assert_eq!(mxn("1160.123456"), "UN MIL CIENTO SESENTA PESOS 12/100 M.N.");
    }

    #[test]
    fn other_currencies_use_their_name_or_their_code() {
        let d = |s: &str| -> Decimal { s.parse().expect("decimal") };
        assert_eq!(importe_con_letra(d("50.50"), "USD"), "CINCUENTA DÓLARES 50/100 USD");
        assert_eq!(importe_con_letra(d("1"), "USD"), "UN DÓLAR 00/100 USD");
        assert_eq!(importe_con_letra(d("1000000"), "EUR"), "UN MILLÓN DE EUROS 00/100 EUR");
        assert_eq!(importe_con_letra(d("21"), "GBP"), "VEINTIUNO 00/100 GBP");
        assert_eq!(importe_con_letra(d("1000000"), "GBP"), "UN MILLÓN 00/100 GBP");
        assert_eq!(importe_con_letra(d("101.25"), "XXX"), "CIENTO UNO 25/100 XXX");
    }

    #[test]
    fn extremes_never_panic() {
        assert!(importe_con_letra(Decimal::MAX, "MXN").ends_with("PESOS 00/100 M.N."));
        assert!(importe_con_letra(Decimal::MIN, "MXN").starts_with("MENOS SETENTA Y NUEVE MIL"));
        assert_eq!(mxn("-1"), "MENOS UN PESO 00/100 M.N.");
        assert_eq!(mxn("-0.001"), "CERO PESOS 00/100 M.N.");
        let tiny: Decimal = "0.0000000000000000000000000001".parse().expect("decimal");
        assert_eq!(importe_con_letra(tiny, "MXN"), "CERO PESOS 00/100 M.N.");
    }

    #[test]
    fn every_number_below_a_million_reads_without_double_spaces() {
        for n in (0..1_000_000u128).step_by(7) {
            let w = number_in_words(n, true);
            assert!(!w.contains("  ") && !w.starts_with(' ') && !w.ends_with(' '), "{n}: {w:?}");
            assert!(!w.contains("UNO"), "{n}: before a noun UNO becomes UN: {w:?}");
        }
    }
}
