//! Series and folios: a sale that arrives with no folio takes the next number of its serie (or
//! of the default serie when it names none); one that brings its own folio keeps it, refused
//! when another sale has it. Never two sales with one folio, never a folio reused, gaps only
//! where no recorded sale will ever need the number.
//!
//! The number is in the sealed XML, and sealing happens before the recording transaction, so a
//! number is first *held* ([`crate::AnyStore::hold_folios`], one short write: the lowest number
//! no sale has and no live intake holds, else the serie's next), sealed, and becomes the sale's
//! inside the recording transaction, fenced by the holder ([`FolioUse::Held`]): a hold that
//! went to another intake after its lease makes the record lost, never two sales with one
//! folio. A hold whose intake failed is given back at once; one whose process died comes back
//! when its lease ends, to the next intake, lowest first. The `folios` table's primary key
//! (serie, folio) is the rule itself, on both databases; on PostgreSQL the serie's row lock
//! makes desktops sharing a database number one after another.
//!
//! The sale as received stays the sale's body (its idempotency hash too); the serie-folio it
//! was given is on its invoice row and in its XML, and [`numbered`] puts it back on the sale
//! wherever a later attempt is built from it.

use cfdi::sale::{Sale, SaleKind};

use super::Outbox;
use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::settings;
pub use crate::store::FolioSerie;
use crate::store::{folio_taken, FolioUse, IntakeLookups};

/// SAT's Serie: 1 to 25 characters, no `|` (Anexo 20); Timbra also keeps it printable.
fn check_serie(serie: &str) -> Result<()> {
    let n = serie.chars().count();
    let bad = if n == 0 || n > 25 {
        Some(format!("la serie {serie:?} tiene {n} caracteres; el SAT acepta de 1 a 25"))
    } else {
        serie
            .chars()
            .find(|c| *c == '|' || c.is_control() || c.is_whitespace())
            .map(|c| format!("la serie {serie:?} lleva {c:?}; use letras, números o guiones"))
    };
    match bad {
        Some(message) => Err(OutboxError::invalid("serie", "serie_invalida", message)),
        None => Ok(()),
    }
}

/// What intake does about a sale's folio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Numbering {
    /// Claim this (nothing, or a folio the sale brought) in the recording transaction.
    Keep(FolioUse),
    /// Take the next number of this serie (the default serie when None).
    Take(Option<String>),
}

/// A ticket's folio is the point of sale's ticket number (not an invoice's); a REP (pago)
/// without a folio stays without one; an ingreso or egreso without one is numbered.
pub(crate) fn numbering_of(sale: &Sale) -> Numbering {
    if sale.ticket {
        return Numbering::Keep(FolioUse::None);
    }
    // A blank folio (an empty form field) is no folio.
    let folio = sale.folio.as_ref().filter(|f| !f.trim().is_empty());
    match (folio, sale.kind) {
        (Some(folio), _) => Numbering::Keep(FolioUse::Brought {
            serie: sale.serie.clone().unwrap_or_default(),
            folio: folio.clone(),
        }),
        (None, SaleKind::Pago) => Numbering::Keep(FolioUse::None),
        (None, SaleKind::Ingreso | SaleKind::Egreso) => Numbering::Take(sale.serie.clone().filter(|s| !s.trim().is_empty())),
    }
}

/// `sale` with the serie-folio it was given ('' is no serie).
pub fn numbered(sale: &Sale, serie: &str, folio: &str) -> Sale {
    let mut s = sale.clone();
    s.serie = (!serie.is_empty()).then(|| serie.to_string());
    s.folio = Some(folio.to_string());
    s
}

/// The sale of a recorded invoice as it was sealed: the body received, with the serie-folio
/// intake gave it (every later attempt is built from this, so it keeps the invoice's name).
pub fn sale_of(detail: &crate::model::InvoiceDetail) -> Sale {
    let sale = &detail.sale.body;
    let blank = sale.folio.as_ref().is_none_or(|f| f.trim().is_empty());
    match (blank, &detail.invoice.folio, sale.ticket) {
        (true, Some(folio), false) => numbered(sale, detail.invoice.serie.as_deref().unwrap_or(""), folio),
        _ => sale.clone(),
    }
}

impl Outbox {
    /// Every serie with where its numbering stands.
    pub async fn folio_series(&self) -> Result<Vec<FolioSerie>> {
        self.store().folio_series().await
    }

    /// Adds a serie or moves its next number (soporte or contador), and makes it the default
    /// when asked. The next number must be above every number a folio of it carries: a
    /// number is never handed out twice. Nothing is written when it is refused.
    pub async fn set_folio_serie(&self, serie: &str, next: Option<i64>, make_default: bool, actor: &Actor) -> Result<Vec<FolioSerie>> {
        settings::may_change_settings(actor, "cambiar las series y folios")?;
        let serie = serie.trim();
        check_serie(serie)?;
        if let Some(n) = next {
            if !(1..=999_999_999_999_999).contains(&n) {
                return Err(OutboxError::invalid(
                    "siguiente",
                    "folio_invalido",
                    format!("el siguiente folio debe ser un número de 1 a 999999999999999; se recibió {n}"),
                ));
            }
        }
        let now_ms = self.now().timestamp_millis();
        if !self.store().set_folio_serie(serie, next, make_default, now_ms).await? {
            let highest = self
                .folio_series()
                .await?
                .into_iter()
                .find(|s| s.serie == serie)
                .and_then(|s| s.highest)
                .unwrap_or(0);
            return Err(OutboxError::invalid(
                "siguiente",
                "folio_usado",
                format!(
                    "la serie {serie} ya llegó al folio {highest}; el siguiente debe ser {} o mayor (un folio nunca se repite)",
                    highest + 1
                ),
            ));
        }
        self.folio_series().await
    }

    /// Refuses, before anything is written, a folio the sale brought that another sale has
    /// (the recording transaction checks it again, under the `folios` key). `known`: what a
    /// bulk batch read beforehand.
    pub(crate) async fn check_brought_folio(&self, sale: &Sale, known: Option<&IntakeLookups>) -> Result<()> {
        if let Numbering::Keep(FolioUse::Brought { serie, folio }) = numbering_of(sale) {
            let owner = match known.and_then(|k| k.folio_owners.get(&(serie.clone(), folio.clone()))) {
                Some(owner) => owner.clone(),
                None => self.store().folio_owner(&serie, &folio).await?,
            };
            if let Some(other) = owner {
                if other != sale.sale_id {
                    return Err(folio_taken(&serie, &folio, Some(&other)));
                }
            }
        }
        Ok(())
    }

    /// The sale as it will be sealed, and what its recording transaction claims: a number held
    /// for `owner` until `until_ms` when the sale needs one.
    pub(crate) async fn number_sale(&self, sale: &Sale, owner: &str, until_ms: i64, now_ms: i64) -> Result<(Sale, FolioUse)> {
        match numbering_of(sale) {
            Numbering::Keep(use_) => Ok((sale.clone(), use_)),
            Numbering::Take(serie) => match self.store().hold_folios(serie.as_deref(), 1, owner, until_ms, now_ms).await? {
                Some((serie, folios)) => match folios.into_iter().next() {
                    Some(folio) => Ok((
                        numbered(sale, &serie, &folio),
                        FolioUse::Held {
                            serie,
                            folio,
                            owner: owner.to_string(),
                        },
                    )),
                    None => Err(OutboxError::Database("no se pudo apartar un folio".into())),
                },
                // No default serie: the sale goes without a folio, as before numbering.
                None => Ok((sale.clone(), FolioUse::None)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sale(json: &str) -> Sale {
        Sale::from_json(json.as_bytes()).expect("sale")
    }

    const BASE: &str = r#""occurred_at":"2026-11-29T12:00:00","forma_pago":"01","metodo_pago":"PUE","moneda":"MXN",
        "receptor":{"rfc":"URE180429TM6","nombre":"U","domicilio_fiscal":"86991","regimen_fiscal":"601","uso_cfdi":"G01"},
        "conceptos":[],"relacionados":[]"#;

    #[test]
    fn who_is_numbered() {
        let with = |extra: &str| sale(&format!("{{\"sale_id\":\"a\",{extra},{BASE}}}"));
        assert_eq!(numbering_of(&with(r#""kind":"ingreso""#)), Numbering::Take(None));
        assert_eq!(
            numbering_of(&with(r#""kind":"egreso","serie":"NC""#)),
            Numbering::Take(Some("NC".into()))
        );
        assert_eq!(
            numbering_of(&with(r#""kind":"ingreso","serie":"F","folio":"7""#)),
            Numbering::Keep(FolioUse::Brought {
                serie: "F".into(),
                folio: "7".into()
            })
        );
        assert_eq!(
            numbering_of(&with(r#""kind":"ingreso","folio":"7""#)),
            Numbering::Keep(FolioUse::Brought {
                serie: "".into(),
                folio: "7".into()
            })
        );
        assert_eq!(numbering_of(&with(r#""kind":"pago""#)), Numbering::Keep(FolioUse::None));
        assert_eq!(
            numbering_of(&with(r#""kind":"ingreso","serie":"","folio":" ""#)),
            Numbering::Take(None)
        );
        let n = numbered(&with(r#""kind":"ingreso""#), "F", "12");
        assert_eq!((n.serie.as_deref(), n.folio.as_deref()), (Some("F"), Some("12")));
        assert_eq!(numbered(&with(r#""kind":"ingreso""#), "", "3").serie, None);
    }
}
