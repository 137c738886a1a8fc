//! How values read from the XML are written on paper: amounts with thousands separators,
//! rates as percentages, catalog codes with SAT's description.
//!
//! Owns only presentation. An amount keeps the decimals it was stamped with (`1160.00` →
//! `1,160.00`, `0.123456` stays); anything that is not a plain decimal is printed as written.

use rust_decimal::Decimal;

use cfdi::catalog;

/// `1160.00` → `1,160.00`; `-1234567` → `-1,234,567`; anything else unchanged.
pub fn amount(value: &str) -> String {
    let (sign, body) = match value.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", value),
    };
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    let plain = !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()));
    if !plain {
        return value.to_string();
    }
    let mut grouped = String::with_capacity(int.len() + int.len() / 3);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

/// The symbol printed before an amount in a currency.
pub fn currency_symbol(moneda: &str) -> String {
    match moneda {
        "MXN" => "$".to_string(),
        "USD" => "US$".to_string(),
        "EUR" => "€".to_string(),
        "CAD" => "C$".to_string(),
        "XXX" => String::new(),
        other => format!("{other} "),
    }
}

/// `$1,160.00` in MXN, `US$50.50` in USD.
pub fn money(value: &str, moneda: &str) -> String {
    format!("{}{}", currency_symbol(moneda), amount(value))
}

/// A parsed amount, for the amount in words.
pub fn decimal(value: &str) -> Option<Decimal> {
    value.parse().ok()
}

/// `0.160000` → `16%`, `0.106667` → `10.6667%`; a Cuota is printed as written; Exento.
pub fn tasa(tipo_factor: Option<&str>, tasa_o_cuota: Option<&str>) -> String {
    match (tipo_factor, tasa_o_cuota) {
        (Some("Exento"), _) => "Exento".to_string(),
        (Some("Cuota"), Some(c)) => format!("cuota {c}"),
        (_, Some(t)) => match decimal(t).and_then(|d| d.checked_mul(Decimal::ONE_HUNDRED)) {
            Some(p) => format!("{}%", p.normalize()),
            None => t.to_string(),
        },
        (Some(f), None) => f.to_string(),
        (None, None) => String::new(),
    }
}

/// `ISR`, `IVA`, `IEPS`, or the code as written.
pub fn impuesto(code: &str) -> String {
    catalog::impuesto(code)
        .map(|i| i.nombre.to_string())
        .unwrap_or_else(|| code.to_string())
}

/// `601 - General de Ley Personas Morales`, or the code alone when the catalog lacks it.
fn with_description(code: &str, description: Option<&str>) -> String {
    match description {
        Some(d) => format!("{code} - {d}"),
        None => code.to_string(),
    }
}

pub fn regimen_fiscal(code: &str) -> String {
    with_description(code, catalog::regimen_fiscal(code).map(|r| r.descripcion))
}

pub fn uso_cfdi(code: &str) -> String {
    with_description(code, catalog::uso_cfdi(code).map(|u| u.descripcion))
}

pub fn forma_pago(code: &str) -> String {
    with_description(code, catalog::forma_pago(code).map(|c| c.descripcion))
}

pub fn metodo_pago(code: &str) -> String {
    with_description(code, catalog::metodo_pago(code).map(|c| c.descripcion))
}

pub fn tipo_relacion(code: &str) -> String {
    with_description(code, catalog::tipo_relacion(code).map(|c| c.descripcion))
}

pub fn exportacion(code: &str) -> String {
    with_description(code, catalog::exportacion(code).map(|c| c.descripcion))
}

pub fn objeto_imp(code: &str) -> String {
    with_description(code, catalog::objeto_imp(code).map(|c| c.descripcion))
}

pub fn periodicidad(code: &str) -> String {
    with_description(code, catalog::periodicidad(code).map(|c| c.descripcion))
}

pub fn meses(code: &str) -> String {
    with_description(code, catalog::meses(code).map(|c| c.descripcion))
}

/// c_TipoDeComprobante with its description.
pub fn tipo_de_comprobante(code: &str) -> String {
    let d = match code {
        "I" => Some("Ingreso"),
        "E" => Some("Egreso"),
        "T" => Some("Traslado"),
        "N" => Some("Nómina"),
        "P" => Some("Pago"),
        _ => None,
    };
    with_description(code, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_group_thousands_and_keep_their_scale() {
        for (input, expected) in [
            ("0", "0"),
            ("1160.00", "1,160.00"),
            ("999.99", "999.99"),
            ("1000", "1,000"),
            ("-1234567.891", "-1,234,567.891"),
            ("12345678901234567890.5", "12,345,678,901,234,567,890.5"),
            ("1.5e3", "1.5e3"),
            ("", ""),
            ("12.", "12."),
            ("-", "-"),
            ("١٢٣", "١٢٣"),
        ] {
            assert_eq!(amount(input), expected, "{input:?}");
        }
    }

    #[test]
    fn rates_read_as_percentages() {
        assert_eq!(tasa(Some("Tasa"), Some("0.160000")), "16%");
        assert_eq!(tasa(Some("Tasa"), Some("0.106667")), "10.6667%");
        assert_eq!(tasa(Some("Tasa"), Some("0.000000")), "0%");
        assert_eq!(tasa(Some("Exento"), None), "Exento");
        assert_eq!(tasa(Some("Cuota"), Some("0.5000")), "cuota 0.5000");
        assert_eq!(
            tasa(Some("Tasa"), Some("79228162514264337593543950335")),
            "79228162514264337593543950335"
        );
    }

    #[test]
    fn codes_carry_sat_descriptions() {
        assert_eq!(regimen_fiscal("601"), "601 - General de Ley Personas Morales");
        assert_eq!(regimen_fiscal("999"), "999");
        assert!(uso_cfdi("G03").starts_with("G03 - Gastos en general"));
        assert!(forma_pago("03").starts_with("03 - Transferencia"));
    }
}
