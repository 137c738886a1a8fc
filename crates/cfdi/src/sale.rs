//! The sale: the business event Timbra invoices, as it arrives (JSON), and the emisor profile.
//!
//! Owns the wire shape of a sale and its strict parsing: unknown fields are refused, amounts
//! are decimal strings (never JSON numbers, never floats), and every error names the field
//! path (`conceptos[0].valor_unitario`). Business validation happens in [`crate::mapping`].

use std::str::FromStr;

use chrono::NaiveDateTime;
use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::validation::{FieldError, ValidationErrors};

/// A decimal amount written as a JSON string (`"50.00"`), keeping the scale it was written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Amount(pub Decimal);

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Amount, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Amount;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("un importe decimal escrito como texto, p. ej. \"50.00\"")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Amount, E> {
                parse_amount(s).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

impl Serialize for Amount {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.to_string())
    }
}

/// `-?digits(.digits)?`, at most 28 significant digits.
pub fn parse_amount(s: &str) -> Result<Amount, String> {
    let body = s.strip_prefix('-').unwrap_or(s);
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let digits_ok = !int.is_empty() && int.bytes().all(|b| b.is_ascii_digit()) && frac.bytes().all(|b| b.is_ascii_digit());
    if !digits_ok || (body.contains('.') && frac.is_empty()) {
        return Err(format!("{s:?} no es un importe decimal (use dígitos y punto, p. ej. \"50.00\")"));
    }
    Decimal::from_str_exact(s)
        .map(Amount)
        .map_err(|_| format!("{s:?} tiene demasiados dígitos"))
}

/// A local date-time `AAAA-MM-DDThh:mm:ss` (no offset), as CFDI writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalDateTime(pub NaiveDateTime);

impl<'de> Deserialize<'de> for LocalDateTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<LocalDateTime, D::Error> {
        let s = String::deserialize(d)?;
        NaiveDateTime::parse_from_str(&s, "%Y-%m-%dT%H:%M:%S")
            .map(LocalDateTime)
            .map_err(|_| serde::de::Error::custom(format!("{s:?} no es una fecha y hora local AAAA-MM-DDThh:mm:ss")))
    }
}

impl Serialize for LocalDateTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.format("%Y-%m-%dT%H:%M:%S").to_string())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SaleKind {
    Ingreso,
    Egreso,
    Pago,
}

/// The business event to invoice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sale {
    pub sale_id: String,
    pub kind: SaleKind,
    /// Local time at LugarExpedicion.
    pub occurred_at: LocalDateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serie: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folio: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forma_pago: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metodo_pago: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condiciones_de_pago: Option<String>,
    /// c_Moneda; `MXN` when absent (a pago always uses `XXX`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moneda: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tipo_cambio: Option<Amount>,
    /// c_Exportacion; `01` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exportacion: Option<String>,
    /// The Confirmacion code (5 letters or digits) the PAC issued for a TipoCambio outside
    /// SAT's band (CFDI40118) or a Total over SAT's limit; written on the Comprobante.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmacion: Option<String>,
    /// The buyer. Absent only on a ticket (see [`Sale::ticket`]).
    #[serde(default, skip_serializing_if = "SaleReceptor::is_absent")]
    pub receptor: SaleReceptor,
    #[serde(default)]
    pub conceptos: Vec<SaleConcepto>,
    #[serde(default)]
    pub relacionados: Vec<SaleRelacionados>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub informacion_global: Option<SaleInformacionGlobal>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pagos: Vec<SalePago>,
    /// A counter sale (ticket) to the público en general: an `ingreso` without receptor that
    /// is never stamped by itself; it goes into a factura global (see [`crate::global`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ticket: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaleReceptor {
    pub rfc: String,
    pub nombre: String,
    pub domicilio_fiscal: String,
    pub regimen_fiscal: String,
    pub uso_cfdi: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residencia_fiscal: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_reg_id_trib: Option<String>,
}

impl SaleReceptor {
    /// No receptor was given (the JSON had no `receptor`): every field empty.
    pub fn is_absent(&self) -> bool {
        *self == SaleReceptor::default()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaleConcepto {
    pub clave_prod_serv: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_identificacion: Option<String>,
    pub cantidad: Amount,
    pub clave_unidad: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unidad: Option<String>,
    pub descripcion: String,
    pub valor_unitario: Amount,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub descuento: Option<Amount>,
    pub objeto_imp: String,
    #[serde(default)]
    pub traslados: Vec<SaleImpuesto>,
    #[serde(default)]
    pub retenciones: Vec<SaleImpuesto>,
    /// NumeroPedimento values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub informacion_aduanera: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaleImpuesto {
    pub impuesto: String,
    pub tipo_factor: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasa_o_cuota: Option<Amount>,
    /// Only on a paid document's taxes: the BaseDR this payment covers, prorated from the
    /// invoice (see [`crate::payment`]); ImporteDR is then BaseDR × TasaOCuota. Concepto taxes
    /// never carry it (their base is computed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<Amount>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaleRelacionados {
    pub tipo_relacion: String,
    pub uuids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaleInformacionGlobal {
    pub periodicidad: String,
    pub meses: String,
    pub anio: String,
}

/// One payment received (complemento Pagos 2.0, `pago20:Pago`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SalePago {
    pub fecha_pago: LocalDateTime,
    pub forma_pago: String,
    pub moneda: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tipo_cambio: Option<Amount>,
    /// Amount received; computed from the documents when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monto: Option<Amount>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_operacion: Option<String>,
    pub documentos: Vec<SaleDocumento>,
}

/// A paid invoice (`pago20:DoctoRelacionado`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaleDocumento {
    pub id_documento: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serie: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folio: Option<String>,
    pub moneda: String,
    /// Units of the document's currency per unit of the payment's currency; 1 when they match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalencia: Option<Amount>,
    pub num_parcialidad: u32,
    pub saldo_anterior: Amount,
    pub importe_pagado: Amount,
    pub objeto_imp: String,
    #[serde(default)]
    pub traslados: Vec<SaleImpuesto>,
    #[serde(default)]
    pub retenciones: Vec<SaleImpuesto>,
}

/// The emisor profile (TOML in the CLI, settings in the app).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmisorProfile {
    pub rfc: String,
    pub nombre: String,
    pub regimen_fiscal: String,
    pub lugar_expedicion: String,
}

/// Largest sale JSON accepted, in bytes (a sale with ten thousand conceptos is a few megabytes;
/// above the 10 MB text the mapping refuses field by field, so that one still names its field).
pub const MAX_SALE_JSON_BYTES: usize = 16 * 1024 * 1024;

impl Sale {
    /// Parses a sale from JSON; errors name the field path. Bounded: at most
    /// [`MAX_SALE_JSON_BYTES`], and serde_json's nesting limit (128) stops deep input before
    /// it costs stack.
    pub fn from_json(bytes: &[u8]) -> Result<Sale, ValidationErrors> {
        if bytes.len() > MAX_SALE_JSON_BYTES {
            let message = format!("la venta pesa {} bytes; el máximo es {MAX_SALE_JSON_BYTES} bytes", bytes.len());
            return Err(ValidationErrors::one(FieldError::new("(json)", "json", message)));
        }
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let sale: Sale = serde_path_to_error::deserialize(&mut de).map_err(|e| json_error(&e))?;
        de.end()
            .map_err(|e| ValidationErrors::one(FieldError::new("(json)", "json", format!("contenido después del objeto: {e}"))))?;
        Ok(sale)
    }

    /// The canonical JSON of the sale (stable field order), used for hashing and storage.
    pub fn to_canonical_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

fn json_error(e: &serde_path_to_error::Error<serde_json::Error>) -> ValidationErrors {
    let path = e.path().to_string();
    let field = if path == "." || path == "?" || path.is_empty() {
        "(json)".to_string()
    } else {
        path
    };
    let inner = e.inner();
    let message = inner.to_string();
    // serde's "at line L column C" suffix is noise next to a field path.
    let message = match message.rfind(" at line ") {
        Some(i) if inner.line() > 0 => message[..i].to_string(),
        _ => message,
    };
    let message = translate_serde(&message);
    ValidationErrors::one(FieldError::new(field, "json", message))
}

/// Spanish wording for serde's most common messages.
fn translate_serde(m: &str) -> String {
    if let Some(rest) = m.strip_prefix("unknown field `") {
        let name = rest.split('`').next().unwrap_or(rest);
        return format!("campo desconocido {name:?}");
    }
    if let Some(rest) = m.strip_prefix("missing field `") {
        let name = rest.split('`').next().unwrap_or(rest);
        return format!("falta el campo obligatorio {name:?}");
    }
    if let Some(rest) = m.strip_prefix("unknown variant `") {
        let name = rest.split('`').next().unwrap_or(rest);
        return format!("valor {name:?} no permitido (use ingreso, egreso o pago)");
    }
    if m.starts_with("invalid type") {
        return format!("tipo de dato incorrecto: {}", m.trim_start_matches("invalid type: "));
    }
    if m.contains("invalid unicode") || m.contains("utf-8") || m.contains("UTF-8") {
        return "texto que no es UTF-8 válido".to_string();
    }
    if m.starts_with("EOF") {
        return "el JSON está incompleto".to_string();
    }
    if m.starts_with("recursion limit exceeded") {
        return "el JSON anida más de 128 niveles (límite de profundidad)".to_string();
    }
    m.to_string()
}

impl FromStr for Amount {
    type Err = String;
    fn from_str(s: &str) -> Result<Amount, String> {
        parse_amount(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SALE: &str = r#"{"sale_id":"pedido-4471","kind":"ingreso","occurred_at":"2026-11-29T12:00:00",
 "serie":"F","folio":"4471","forma_pago":"01","metodo_pago":"PUE","moneda":"MXN",
 "receptor":{"rfc":"URE180429TM6","nombre":"UNIVERSIDAD ROBOTICA ESPAÑOLA",
             "domicilio_fiscal":"86991","regimen_fiscal":"601","uso_cfdi":"G01"},
 "conceptos":[{"clave_prod_serv":"01010101","cantidad":"2","clave_unidad":"H87","unidad":"Pieza",
   "descripcion":"Café de olla","valor_unitario":"50.00","descuento":"0","objeto_imp":"02",
   "traslados":[{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}],
   "retenciones":[]}],
 "relacionados":[]}"#;

    #[test]
    fn parses_the_documented_example() {
        let sale = Sale::from_json(SALE.as_bytes()).expect("the issue's example parses");
        assert_eq!(sale.conceptos[0].valor_unitario.0.to_string(), "50.00");
        assert_eq!(sale.kind, SaleKind::Ingreso);
        let again = Sale::from_json(sale.to_canonical_json().as_bytes()).unwrap();
        assert_eq!(again, sale);
    }

    fn check_err(json: &str, field: &str, needle: &str) {
        let err = Sale::from_json(json.as_bytes()).expect_err(json);
        let e = &err.0[0];
        assert_eq!(e.field, field, "{json}: {err}");
        assert!(e.message.contains(needle), "{json}: {}", e.message);
    }

    #[test]
    fn hostile_json_is_refused_without_crashing() {
        let deep = |open: &str, n: usize| open.repeat(n);
        // Deep nesting where the schema expects a value, and where a value may be anything.
        for json in [
            deep("[", 200_000),
            format!("{{\"sale_id\":{}", deep("[", 200_000)),
            format!("{{\"conceptos\":[{{\"traslados\":{}", deep("[", 200_000)),
            format!("{}1{}", deep("{\"a\":", 200_000), deep("}", 200_000)),
        ] {
            let err = Sale::from_json(json.as_bytes()).expect_err("refused");
            assert_eq!(err.0.len(), 1, "{err}");
        }
        // serde_json's nesting limit is on (no `unbounded_depth`): it is what stops a deep value
        // wherever the schema would consume one.
        let nested = deep("[", 1000);
        let mut de = serde_json::Deserializer::from_str(&nested);
        let e = <serde_json::Value as serde::Deserialize>::deserialize(&mut de).unwrap_err();
        assert!(translate_serde(&e.to_string()).contains("128 niveles"), "{e}");

        let big = format!("{{\"sale_id\":\"{}\"}}", "x".repeat(MAX_SALE_JSON_BYTES));
        let err = Sale::from_json(big.as_bytes()).unwrap_err();
        assert_eq!(err.0[0].field, "(json)");
        assert!(err.0[0].message.contains(&MAX_SALE_JSON_BYTES.to_string()), "{err}");
    }

    #[test]
    fn errors_name_the_field() {
        check_err(
            &SALE.replace(r#""valor_unitario":"50.00""#, r#""valor_unitario":50.0"#),
            "conceptos[0].valor_unitario",
            "tipo de dato",
        );
        check_err(
            &SALE.replace(r#""valor_unitario":"50.00""#, r#""valor_unitario":"5e1""#),
            "conceptos[0].valor_unitario",
            "no es un importe",
        );
        check_err(
            &SALE.replace(r#""serie":"F","#, r#""serie":"F","color":"rojo","#),
            "color",
            "campo desconocido \"color\"",
        );
        check_err(
            &SALE.replace(r#""uso_cfdi":"G01""#, r#""uso_cfdi":"G01","extra":1"#),
            "receptor.extra",
            "campo desconocido",
        );
        check_err(&SALE.replace(r#""kind":"ingreso""#, r#""kind":"traslado""#), "kind", "no permitido");
        check_err(
            &SALE.replace(r#""occurred_at":"2026-11-29T12:00:00""#, r#""occurred_at":"2026-11-29 12:00""#),
            "occurred_at",
            "AAAA-MM-DD",
        );
        check_err(
            &SALE.replace(r#""sale_id":"pedido-4471","#, ""),
            "(json)",
            "falta el campo obligatorio \"sale_id\"",
        );
        check_err(&SALE[..SALE.len() - 5], "(json)", "incompleto");
        check_err(&format!("{SALE} {{}}"), "(json)", "después");
    }

    #[test]
    fn amounts_are_plain_decimals() {
        for ok in ["0", "50.00", "-3.5", "0.160000"] {
            assert!(parse_amount(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            ".5",
            "5.",
            "1e3",
            "+1",
            "1,000.00",
            " 1",
            "NaN",
            "12345678901234567890123456789012",
        ] {
            assert!(parse_amount(bad).is_err(), "{bad}");
        }
    }
}
