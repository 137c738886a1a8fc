//! The Facturapi request body of a sale: `POST /v2/invoices` for an ingreso (`type` I), an
//! egreso (E, with `related_documents`) or a pago (P, with the `pago` complement), as
//! Facturapi's API reference documents them (`website/openapi_v2.en.yaml` of
//! FacturAPI/facturapi-docs; the fields used are pinned in
//! `crates/pac/schemas/facturapi-create-invoice.schema.json`).
//!
//! Pure. The sale is first mapped by [`cfdi::mapping::map_sale`], so a body only exists for a
//! sale that would make a valid CFDI, and every amount Facturapi needs that the sale does not
//! state (the bases of a payment's taxes) is the one the CFDI would carry. Facturapi computes
//! totals and seals on its side. Amounts are JSON numbers (the reference types them `number`);
//! an amount a JSON number cannot carry exactly is refused.
//!
//! The body has no `date`: Facturapi dates the CFDI when it issues it, so a frozen body stays
//! valid for retries beyond 72 hours; `idempotency_key` (the attempt's) keeps a retry from
//! issuing twice, `external_id` (the sale id) is what the lookup lists by.

use rust_decimal::Decimal;
use serde_json::{json, Map, Number, Value};

use cfdi::model::{Comprobante, DoctoRelacionado, ImpuestoDR, TipoDeComprobante};
use cfdi::sale::{EmisorProfile, Sale};
use cfdi::validation::{FieldError, ValidationErrors};

/// Version of this mapping, stored with a frozen body so a later mapping change is visible.
pub const MAPPING_VERSION: u32 = 1;

/// Collects the problems found while mapping.
#[derive(Default)]
struct Problems(Vec<FieldError>);

impl Problems {
    fn add(&mut self, field: impl Into<String>, code: &'static str, message: impl Into<String>) {
        self.0.push(FieldError::new(field, code, message));
    }

    /// `d` as a JSON number, exactly.
    fn number(&mut self, field: &str, d: Decimal) -> Value {
        let d = d.normalize();
        if d.fract().is_zero() {
            if let Ok(i) = i64::try_from(d.mantissa()) {
                if d.scale() == 0 {
                    return Value::Number(Number::from(i));
                }
            }
        }
        let text = d.to_string();
        match text.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) if n.to_string().parse::<Decimal>().ok().map(|x| x.normalize()) == Some(d) => Value::Number(n),
            _ => {
                self.add(
                    field,
                    "importe",
                    format!("{text} no se puede enviar exacto como número JSON a Facturapi"),
                );
                Value::Null
            }
        }
    }
}

fn tax_type(code: &str) -> Option<&'static str> {
    match code {
        "001" => Some("ISR"),
        "002" => Some("IVA"),
        "003" => Some("IEPS"),
        _ => None,
    }
}

/// One Facturapi tax object.
fn tax(
    p: &mut Problems,
    field: &str,
    impuesto: &str,
    tipo_factor: &str,
    tasa: Option<Decimal>,
    withholding: bool,
    base: Option<Decimal>,
) -> Value {
    let Some(kind) = tax_type(impuesto) else {
        p.add(
            format!("{field}.impuesto"),
            "catalogo",
            format!("impuesto {impuesto:?} desconocido para Facturapi"),
        );
        return Value::Null;
    };
    let mut t = Map::new();
    t.insert("type".into(), json!(kind));
    // Facturapi requires `rate`; an exento tax has none, and is sent with rate 0.
    t.insert("rate".into(), p.number(&format!("{field}.tasa_o_cuota"), tasa.unwrap_or_default()));
    t.insert("factor".into(), json!(tipo_factor));
    t.insert("withholding".into(), json!(withholding));
    if kind == "IEPS" && !withholding {
        // cfdi's mapping adds the IEPS to the base of the other taxes: Facturapi's default mode.
        t.insert("ieps_mode".into(), json!("sum_before_taxes"));
    }
    if let Some(b) = base {
        t.insert("base".into(), p.number(&format!("{field}.base"), b));
    }
    Value::Object(t)
}

fn customer(c: &Comprobante) -> Value {
    let r = &c.receptor;
    let mut address = Map::new();
    address.insert("zip".into(), json!(r.domicilio_fiscal));
    let mut v = Map::new();
    v.insert("legal_name".into(), json!(r.nombre));
    match (&r.residencia_fiscal, &r.num_reg_id_trib) {
        // A foreign receptor: Facturapi takes its own tax id and country; the CFDI's generic
        // RFC is Facturapi's to write.
        (Some(country), Some(tax_id)) => {
            v.insert("tax_id".into(), json!(tax_id));
            address.insert("country".into(), json!(country));
        }
        _ => {
            v.insert("tax_id".into(), json!(r.rfc));
        }
    }
    v.insert("tax_system".into(), json!(r.regimen_fiscal));
    v.insert("address".into(), Value::Object(address));
    Value::Object(v)
}

fn periodicity(code: &str) -> Option<&'static str> {
    match code {
        "01" => Some("day"),
        "02" => Some("week"),
        "03" => Some("fortnight"),
        "04" => Some("month"),
        "05" => Some("two_months"),
        _ => None,
    }
}

fn items(p: &mut Problems, c: &Comprobante) -> Value {
    let mut out = Vec::new();
    for (i, k) in c.conceptos.iter().enumerate() {
        let f = format!("conceptos[{i}]");
        let mut taxes = Vec::new();
        for (j, t) in k.traslados.iter().enumerate() {
            taxes.push(tax(
                p,
                &format!("{f}.traslados[{j}]"),
                &t.impuesto,
                &t.tipo_factor,
                t.tasa_o_cuota,
                false,
                None,
            ));
        }
        for (j, t) in k.retenciones.iter().enumerate() {
            taxes.push(tax(
                p,
                &format!("{f}.retenciones[{j}]"),
                &t.impuesto,
                &t.tipo_factor,
                Some(t.tasa_o_cuota),
                true,
                None,
            ));
        }
        let mut product = Map::new();
        product.insert("description".into(), json!(k.descripcion));
        product.insert("product_key".into(), json!(k.clave_prod_serv));
        product.insert("unit_key".into(), json!(k.clave_unidad));
        if let Some(u) = &k.unidad {
            product.insert("unit_name".into(), json!(u));
        }
        if let Some(sku) = &k.no_identificacion {
            product.insert("sku".into(), json!(sku));
        }
        product.insert("price".into(), p.number(&format!("{f}.valor_unitario"), k.valor_unitario));
        product.insert("tax_included".into(), json!(false));
        product.insert("taxability".into(), json!(k.objeto_imp));
        product.insert("taxes".into(), Value::Array(taxes));
        let mut item = Map::new();
        item.insert("quantity".into(), p.number(&format!("{f}.cantidad"), k.cantidad));
        item.insert(
            "discount".into(),
            p.number(&format!("{f}.descuento"), k.descuento.unwrap_or_default()),
        );
        item.insert("product".into(), Value::Object(product));
        if !k.informacion_aduanera.is_empty() {
            item.insert("customs_keys".into(), json!(k.informacion_aduanera));
        }
        out.push(Value::Object(item));
    }
    Value::Array(out)
}

fn docto_taxes(p: &mut Problems, f: &str, d: &DoctoRelacionado) -> Value {
    let one = |p: &mut Problems, field: String, t: &ImpuestoDR, withholding: bool| {
        tax(p, &field, &t.impuesto, &t.tipo_factor, t.tasa_o_cuota, withholding, Some(t.base))
    };
    let mut out = Vec::new();
    for (j, t) in d.traslados.iter().enumerate() {
        out.push(one(p, format!("{f}.traslados[{j}]"), t, false));
    }
    for (j, t) in d.retenciones.iter().enumerate() {
        out.push(one(p, format!("{f}.retenciones[{j}]"), t, true));
    }
    // Facturapi's payment taxes carry no ieps_mode.
    for t in out.iter_mut() {
        if let Some(o) = t.as_object_mut() {
            o.remove("ieps_mode");
        }
    }
    Value::Array(out)
}

fn pago_complement(p: &mut Problems, c: &Comprobante, lugar_expedicion: &str) -> Value {
    let mut data = Vec::new();
    for (i, pago) in c.pagos.iter().flat_map(|x| x.pagos.iter()).enumerate() {
        let f = format!("pagos[{i}]");
        let mut docs = Vec::new();
        for (j, d) in pago.documentos.iter().enumerate() {
            let df = format!("{f}.documentos[{j}]");
            let mut doc = Map::new();
            doc.insert("uuid".into(), json!(d.id_documento));
            doc.insert("amount".into(), p.number(&format!("{df}.importe_pagado"), d.imp_pagado));
            doc.insert("installment".into(), json!(d.num_parcialidad));
            doc.insert("last_balance".into(), p.number(&format!("{df}.saldo_anterior"), d.imp_saldo_ant));
            doc.insert("currency".into(), json!(d.moneda));
            if let Some(e) = d.equivalencia {
                doc.insert("exchange".into(), p.number(&format!("{df}.equivalencia"), e));
            }
            doc.insert("taxability".into(), json!(d.objeto_imp));
            doc.insert("taxes".into(), docto_taxes(p, &df, d));
            if let Some(s) = &d.serie {
                doc.insert("series".into(), json!(s));
            }
            if let Some(folio) = &d.folio {
                match folio.parse::<u64>() {
                    Ok(n) => {
                        doc.insert("folio_number".into(), json!(n));
                    }
                    Err(_) => p.add(format!("{df}.folio"), "folio_no_numerico", "Facturapi solo acepta folios numéricos"),
                }
            }
            docs.push(Value::Object(doc));
        }
        let mut payment = Map::new();
        payment.insert("payment_form".into(), json!(pago.forma_de_pago));
        payment.insert("currency".into(), json!(pago.moneda));
        if let Some(tc) = pago.tipo_cambio {
            payment.insert("exchange".into(), p.number(&format!("{f}.tipo_cambio"), tc));
        }
        // FechaPago is local time at LugarExpedicion; Facturapi wants an ISO 8601 UTC instant.
        let utc = cfdi::tz::fecha_to_utc(pago.fecha_pago, lugar_expedicion);
        payment.insert("date".into(), json!(utc.format("%Y-%m-%dT%H:%M:%S.000Z").to_string()));
        if let Some(n) = &pago.num_operacion {
            payment.insert("numOperacion".into(), json!(n));
        }
        payment.insert("related_documents".into(), Value::Array(docs));
        data.push(Value::Object(payment));
    }
    json!([{"type": "pago", "data": data}])
}

/// The Facturapi `POST /v2/invoices` body for `sale`, issued by `emisor` (Facturapi's
/// organization; its LugarExpedicion is sent as the issuing `address.zip`), with the attempt's
/// `idempotency_key` and the sale id as `external_id`.
pub fn map_sale(sale: &Sale, emisor: &EmisorProfile, idempotency_key: &str) -> Result<Value, ValidationErrors> {
    let c = cfdi::mapping::map_sale(sale, emisor, sale.occurred_at.0)?;
    let mut p = Problems::default();
    if idempotency_key.trim().is_empty() {
        p.add(
            "idempotency_key",
            "requerido",
            "el cuerpo de Facturapi necesita la llave de idempotencia del intento",
        );
    }
    let mut body = Map::new();
    body.insert("type".into(), json!(c.tipo_de_comprobante.code()));
    body.insert("customer".into(), customer(&c));
    match c.tipo_de_comprobante {
        TipoDeComprobante::Ingreso | TipoDeComprobante::Egreso => {
            body.insert("items".into(), items(&mut p, &c));
            if let Some(f) = &c.forma_pago {
                body.insert("payment_form".into(), json!(f));
            }
            if let Some(m) = &c.metodo_pago {
                body.insert("payment_method".into(), json!(m));
            }
            body.insert("use".into(), json!(c.receptor.uso_cfdi));
            body.insert("currency".into(), json!(c.moneda));
            if let Some(tc) = c.tipo_cambio {
                body.insert("exchange".into(), p.number("tipo_cambio", tc));
            }
            if c.tipo_de_comprobante == TipoDeComprobante::Ingreso {
                body.insert("export".into(), json!(c.exportacion));
                if let Some(cond) = &c.condiciones_de_pago {
                    body.insert("conditions".into(), json!(cond));
                }
                if let Some(g) = &c.informacion_global {
                    match (periodicity(&g.periodicidad), g.anio.parse::<u32>()) {
                        (Some(per), Ok(year)) => {
                            body.insert("global".into(), json!({"periodicity": per, "months": g.meses, "year": year}));
                        }
                        _ => p.add("informacion_global", "catalogo", "periodicidad o año que Facturapi no acepta"),
                    }
                }
            }
        }
        TipoDeComprobante::Pago => {
            body.insert("complements".into(), pago_complement(&mut p, &c, &emisor.lugar_expedicion));
        }
    }
    if !c.cfdi_relacionados.is_empty() {
        let related: Vec<Value> = c
            .cfdi_relacionados
            .iter()
            .map(|r| json!({"relationship": r.tipo_relacion, "documents": r.uuids}))
            .collect();
        body.insert("related_documents".into(), Value::Array(related));
    }
    body.insert("address".into(), json!({"zip": emisor.lugar_expedicion}));
    if let Some(s) = &c.serie {
        body.insert("series".into(), json!(s));
    }
    if let Some(folio) = &c.folio {
        match folio.parse::<u64>() {
            Ok(n) => {
                body.insert("folio_number".into(), json!(n));
            }
            Err(_) => p.add(
                "folio",
                "folio_no_numerico",
                "Facturapi solo acepta folios numéricos (folio_number)",
            ),
        }
    }
    body.insert("external_id".into(), json!(sale.sale_id));
    body.insert("idempotency_key".into(), json!(idempotency_key));
    if p.0.is_empty() {
        Ok(Value::Object(body))
    } else {
        Err(ValidationErrors(p.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_exact_json_numbers() {
        let mut p = Problems::default();
        for (d, text) in [
            ("2", "2"),
            ("50.00", "50"),
            ("0.160000", "0.16"),
            ("0.106667", "0.106667"),
            ("11600.50", "11600.5"),
        ] {
            assert_eq!(p.number("x", d.parse().unwrap()).to_string(), text, "{d}");
        }
        assert!(p.0.is_empty());
        assert_eq!(p.number("x", "12345678901234567890.123456".parse().unwrap()), Value::Null);
        assert_eq!(p.0.len(), 1);
    }
}
