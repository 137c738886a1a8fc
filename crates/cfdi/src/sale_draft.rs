//! A sale as loose text, the way a form or a spreadsheet holds it, and the one place that turns
//! such text into the sale's JSON: values are trimmed, blank optional fields are left out, the
//! receptor's RFC is upper-cased. Nothing here decides validity — [`crate::sale::Sale::from_json`]
//! does, and names every bad field (`conceptos[0].cantidad`), so a draft with `"dos"` as a
//! quantity still becomes JSON and is refused there.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::sale::{Amount, Sale, SaleImpuesto, SaleKind};
use crate::validation::ValidationErrors;

/// A sale as text fields. Optional fields may be absent, `null` or blank: all three mean "not
/// given".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(optional_fields = nullable)]
pub struct SaleDraft {
    /// The sale's id (also its idempotency key). The desktop fills it with the click's id.
    #[serde(default)]
    pub sale_id: String,
    /// `ingreso`, `egreso`, `traslado`, `pago`.
    pub kind: String,
    /// Local time at LugarExpedicion, `AAAA-MM-DDThh:mm:ss`.
    pub occurred_at: String,
    #[serde(default)]
    pub serie: Option<String>,
    #[serde(default)]
    pub folio: Option<String>,
    #[serde(default)]
    pub forma_pago: Option<String>,
    #[serde(default)]
    pub metodo_pago: Option<String>,
    #[serde(default)]
    pub moneda: Option<String>,
    #[serde(default)]
    pub tipo_cambio: Option<String>,
    #[serde(default)]
    pub exportacion: Option<String>,
    #[serde(default)]
    pub condiciones_de_pago: Option<String>,
    /// The PAC's Confirmacion code for a TipoCambio outside SAT's band.
    #[serde(default)]
    pub confirmacion: Option<String>,
    pub receptor: ReceptorDraft,
    pub conceptos: Vec<ConceptoDraft>,
    #[serde(default)]
    pub relacionados: Vec<RelacionadosDraft>,
}

/// The receptor of a [`SaleDraft`]. Every field is required by the sale; blank ones stay in
/// the JSON so the parser names them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ReceptorDraft {
    pub rfc: String,
    pub nombre: String,
    pub domicilio_fiscal: String,
    pub regimen_fiscal: String,
    pub uso_cfdi: String,
}

/// A line of a [`SaleDraft`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(optional_fields = nullable)]
pub struct ConceptoDraft {
    pub clave_prod_serv: String,
    #[serde(default)]
    pub no_identificacion: Option<String>,
    /// Decimal text (`2`, `1.5`).
    pub cantidad: String,
    pub clave_unidad: String,
    #[serde(default)]
    pub unidad: Option<String>,
    pub descripcion: String,
    /// Decimal text.
    pub valor_unitario: String,
    #[serde(default)]
    pub descuento: Option<String>,
    /// c_ObjetoImp (`01` not subject, `02` subject).
    pub objeto_imp: String,
    #[serde(default)]
    pub traslados: Vec<TaxDraft>,
    #[serde(default)]
    pub retenciones: Vec<TaxDraft>,
}

/// A tax line of a [`ConceptoDraft`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(optional_fields = nullable)]
pub struct TaxDraft {
    /// c_Impuesto: `002` IVA, `003` IEPS, `001` ISR.
    pub impuesto: String,
    /// `Tasa`, `Cuota`, `Exento`.
    pub tipo_factor: String,
    /// Decimal text (`0.160000`); absent for `Exento`.
    #[serde(default)]
    pub tasa_o_cuota: Option<String>,
}

/// CFDIs a [`SaleDraft`] relates to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct RelacionadosDraft {
    /// c_TipoRelacion.
    pub tipo_relacion: String,
    pub uuids: Vec<String>,
}

/// A trimmed value, or None when blank.
fn given(v: &Option<String>) -> Option<String> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

fn tax(t: &TaxDraft) -> TaxDraft {
    TaxDraft {
        impuesto: t.impuesto.trim().to_string(),
        tipo_factor: t.tipo_factor.trim().to_string(),
        tasa_o_cuota: given(&t.tasa_o_cuota),
    }
}

/// The JSON shape of a draft once cleaned: blank optionals omitted.
#[derive(Serialize)]
struct Wire<'a> {
    sale_id: &'a str,
    kind: &'a str,
    occurred_at: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    serie: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    folio: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    forma_pago: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metodo_pago: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    moneda: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tipo_cambio: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exportacion: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    condiciones_de_pago: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    confirmacion: Option<String>,
    receptor: ReceptorDraft,
    conceptos: Vec<WireConcepto>,
    relacionados: Vec<RelacionadosDraft>,
}

#[derive(Serialize)]
struct WireConcepto {
    clave_prod_serv: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    no_identificacion: Option<String>,
    cantidad: String,
    clave_unidad: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    unidad: Option<String>,
    descripcion: String,
    valor_unitario: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    descuento: Option<String>,
    objeto_imp: String,
    traslados: Vec<WireTax>,
    retenciones: Vec<WireTax>,
}

#[derive(Serialize)]
struct WireTax {
    impuesto: String,
    tipo_factor: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    tasa_o_cuota: Option<String>,
}

impl From<TaxDraft> for WireTax {
    fn from(t: TaxDraft) -> WireTax {
        WireTax {
            impuesto: t.impuesto,
            tipo_factor: t.tipo_factor,
            tasa_o_cuota: t.tasa_o_cuota,
        }
    }
}

impl SaleDraft {
    /// The sale's JSON, as [`Sale::from_json`] reads it.
    pub fn to_json(&self) -> Vec<u8> {
        let wire = Wire {
            sale_id: self.sale_id.trim(),
            kind: self.kind.trim(),
            occurred_at: self.occurred_at.trim(),
            serie: given(&self.serie),
            folio: given(&self.folio),
            forma_pago: given(&self.forma_pago),
            metodo_pago: given(&self.metodo_pago),
            moneda: given(&self.moneda),
            tipo_cambio: given(&self.tipo_cambio),
            exportacion: given(&self.exportacion),
            condiciones_de_pago: given(&self.condiciones_de_pago),
            confirmacion: given(&self.confirmacion).map(|c| c.to_uppercase()),
            receptor: ReceptorDraft {
                rfc: self.receptor.rfc.trim().to_uppercase(),
                nombre: self.receptor.nombre.trim().to_string(),
                domicilio_fiscal: self.receptor.domicilio_fiscal.trim().to_string(),
                regimen_fiscal: self.receptor.regimen_fiscal.trim().to_string(),
                uso_cfdi: self.receptor.uso_cfdi.trim().to_string(),
            },
            conceptos: self
                .conceptos
                .iter()
                .map(|c| WireConcepto {
                    clave_prod_serv: c.clave_prod_serv.trim().to_string(),
                    no_identificacion: given(&c.no_identificacion),
                    cantidad: c.cantidad.trim().to_string(),
                    clave_unidad: c.clave_unidad.trim().to_string(),
                    unidad: given(&c.unidad),
                    descripcion: c.descripcion.trim().to_string(),
                    valor_unitario: c.valor_unitario.trim().to_string(),
                    descuento: given(&c.descuento),
                    objeto_imp: c.objeto_imp.trim().to_string(),
                    traslados: c.traslados.iter().map(|t| tax(t).into()).collect(),
                    retenciones: c.retenciones.iter().map(|t| tax(t).into()).collect(),
                })
                .collect(),
            relacionados: self
                .relacionados
                .iter()
                .map(|r| RelacionadosDraft {
                    tipo_relacion: r.tipo_relacion.trim().to_string(),
                    uuids: r.uuids.iter().map(|u| u.trim().to_string()).filter(|u| !u.is_empty()).collect(),
                })
                .collect(),
        };
        // Only strings and vectors of them: serializing cannot fail.
        serde_json::to_vec(&wire).unwrap_or_default()
    }

    /// The draft as a sale, or every field it gets wrong.
    pub fn to_sale(&self) -> Result<Sale, ValidationErrors> {
        Sale::from_json(&self.to_json())
    }

    /// A recorded sale as the form shows it, to start a related one from (a credit note, a
    /// substitute). What the form has no field for is left out: the receptor's foreign
    /// residence, customs data, payments and the factura global's period — a sale that needs
    /// them is refused by [`SaleDraft::to_sale`] naming the field, never sent without them.
    pub fn from_sale(sale: &Sale) -> SaleDraft {
        let text = |a: &Amount| a.0.to_string();
        let tax = |t: &SaleImpuesto| TaxDraft {
            impuesto: t.impuesto.clone(),
            tipo_factor: t.tipo_factor.clone(),
            tasa_o_cuota: t.tasa_o_cuota.as_ref().map(text),
        };
        SaleDraft {
            sale_id: sale.sale_id.clone(),
            kind: match sale.kind {
                SaleKind::Ingreso => "ingreso",
                SaleKind::Egreso => "egreso",
                SaleKind::Pago => "pago",
            }
            .to_string(),
            occurred_at: sale.occurred_at.0.format("%Y-%m-%dT%H:%M:%S").to_string(),
            serie: sale.serie.clone(),
            folio: sale.folio.clone(),
            forma_pago: sale.forma_pago.clone(),
            metodo_pago: sale.metodo_pago.clone(),
            moneda: sale.moneda.clone(),
            tipo_cambio: sale.tipo_cambio.as_ref().map(text),
            exportacion: sale.exportacion.clone(),
            condiciones_de_pago: sale.condiciones_de_pago.clone(),
            confirmacion: sale.confirmacion.clone(),
            receptor: ReceptorDraft {
                rfc: sale.receptor.rfc.clone(),
                nombre: sale.receptor.nombre.clone(),
                domicilio_fiscal: sale.receptor.domicilio_fiscal.clone(),
                regimen_fiscal: sale.receptor.regimen_fiscal.clone(),
                uso_cfdi: sale.receptor.uso_cfdi.clone(),
            },
            conceptos: sale
                .conceptos
                .iter()
                .map(|c| ConceptoDraft {
                    clave_prod_serv: c.clave_prod_serv.clone(),
                    no_identificacion: c.no_identificacion.clone(),
                    cantidad: text(&c.cantidad),
                    clave_unidad: c.clave_unidad.clone(),
                    unidad: c.unidad.clone(),
                    descripcion: c.descripcion.clone(),
                    valor_unitario: text(&c.valor_unitario),
                    descuento: c.descuento.as_ref().map(text),
                    objeto_imp: c.objeto_imp.clone(),
                    traslados: c.traslados.iter().map(tax).collect(),
                    retenciones: c.retenciones.iter().map(tax).collect(),
                })
                .collect(),
            relacionados: sale
                .relacionados
                .iter()
                .map(|r| RelacionadosDraft {
                    tipo_relacion: r.tipo_relacion.clone(),
                    uuids: r.uuids.clone(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft() -> SaleDraft {
        SaleDraft {
            sale_id: "emitir-1".into(),
            kind: "ingreso".into(),
            occurred_at: " 2026-11-29T12:00:00 ".into(),
            serie: Some("F".into()),
            folio: Some(" ".into()),
            forma_pago: Some("01".into()),
            metodo_pago: Some("PUE".into()),
            moneda: Some("MXN".into()),
            receptor: ReceptorDraft {
                rfc: "ure180429tm6".into(),
                nombre: "UNIVERSIDAD ROBOTICA ESPAÑOLA".into(),
                domicilio_fiscal: "86991".into(),
                regimen_fiscal: "601".into(),
                uso_cfdi: "G01".into(),
            },
            conceptos: vec![ConceptoDraft {
                clave_prod_serv: "01010101".into(),
                cantidad: "2".into(),
                clave_unidad: "H87".into(),
                unidad: Some("Pieza".into()),
                descripcion: "Café de olla".into(),
                valor_unitario: "50.00".into(),
                objeto_imp: "02".into(),
                traslados: vec![TaxDraft {
                    impuesto: "002".into(),
                    tipo_factor: "Tasa".into(),
                    tasa_o_cuota: Some("0.160000".into()),
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_draft_becomes_a_strict_sale() {
        let sale = draft().to_sale().expect("the draft parses as a sale");
        assert_eq!(sale.sale_id, "emitir-1");
        assert_eq!(sale.receptor.rfc, "URE180429TM6");
        assert_eq!(sale.folio, None, "a blank folio is left out, not sent as \" \"");
        assert_eq!(sale.conceptos[0].valor_unitario.0.to_string(), "50.00");
        assert_eq!(sale.occurred_at.0.to_string(), "2026-11-29 12:00:00");
    }

    #[test]
    fn a_recorded_sale_comes_back_as_the_draft_that_records_it_again() {
        let mut d = draft();
        d.tipo_cambio = None;
        d.conceptos[0].descuento = Some("5.00".into());
        d.conceptos[0].retenciones = vec![TaxDraft {
            impuesto: "001".into(),
            tipo_factor: "Tasa".into(),
            tasa_o_cuota: Some("0.100000".into()),
        }];
        d.relacionados = vec![RelacionadosDraft {
            tipo_relacion: "07".into(),
            uuids: vec!["5E2D6AFF-2DD7-43D1-83D3-14C1ACA396D9".into()],
        }];
        let sale = d.to_sale().expect("the draft parses");
        let back = SaleDraft::from_sale(&sale);
        assert_eq!(back.occurred_at, "2026-11-29T12:00:00");
        assert_eq!(back.conceptos[0].valor_unitario, "50.00", "the scale is kept");
        assert_eq!(back.conceptos[0].traslados[0].tasa_o_cuota.as_deref(), Some("0.160000"));
        assert_eq!(back.to_sale().expect("the draft of a sale is a sale"), sale);
    }

    #[test]
    fn a_bad_amount_is_refused_naming_its_field() {
        let mut d = draft();
        d.conceptos[0].cantidad = "dos".into();
        let e = d.to_sale().unwrap_err();
        assert!(e.0.iter().any(|f| f.field.starts_with("conceptos[0].cantidad")), "{e:?}");
    }

    #[test]
    fn a_blank_required_field_is_kept_so_the_parser_names_it() {
        let mut d = draft();
        d.receptor.nombre = "  ".into();
        let json: serde_json::Value = serde_json::from_slice(&d.to_json()).unwrap();
        assert_eq!(json["receptor"]["nombre"], "");
    }

    #[test]
    fn an_exento_line_carries_no_rate() {
        let mut d = draft();
        d.conceptos[0].traslados = vec![TaxDraft {
            impuesto: "002".into(),
            tipo_factor: "Exento".into(),
            tasa_o_cuota: Some("".into()),
        }];
        let json: serde_json::Value = serde_json::from_slice(&d.to_json()).unwrap();
        assert!(json["conceptos"][0]["traslados"][0].get("tasa_o_cuota").is_none());
        d.to_sale().expect("an exento line is a valid sale");
    }
}
