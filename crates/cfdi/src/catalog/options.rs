//! What SAT allows together in the console's selects: the régimenes of a receptor's persona, the
//! usos del CFDI of its persona and régimen, the formas de pago of a método de pago and the
//! objetos de impuesto. Computed from the catalogs' compatibility columns (c_RegimenFiscal's
//! Física/Moral, c_UsoCFDI's Física/Moral and *Régimen Fiscal Receptor*) and from the generic
//! RFC rules of SAT's guide — the same columns and rules `crate::matrix` checks at intake, so
//! an option offered here is one intake accepts (`crates/cfdi/tests/catalog_options.rs`).
//!
//! A receptor RFC that is not yet complete (a form being typed) names no persona: the régimenes
//! and usos of either persona are offered, and intake decides once the RFC is whole.

use serde::Serialize;
use ts_rs::TS;

use super::{rfc_persona, Clave, Persona, RegimenFiscal, UsoCfdi, REGIMENES_FISCALES, USOS_CFDI};
use super::{FORMAS_PAGO, METODOS_PAGO, OBJETOS_IMP, RFC_EXTRANJERO, RFC_PUBLICO_EN_GENERAL};

/// One choice of a select: SAT's code and its description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct Opcion {
    pub code: String,
    pub descripcion: String,
}

/// Who the receptor is, as its RFC tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum TipoReceptor {
    /// RFC of 13 characters.
    Fisica,
    /// RFC of 12 characters.
    Moral,
    /// XAXX010101000 (público en general) or XEXX010101000 (extranjero).
    Generico,
    /// Not a whole RFC yet: either persona.
    Desconocido,
}

/// The choices of the receptor and payment selects for one receptor (RFC and régimen) and one
/// método de pago.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct OpcionesFiscales {
    pub receptor: TipoReceptor,
    /// c_RegimenFiscal codes the receptor may have.
    pub regimenes: Vec<Opcion>,
    /// c_UsoCFDI codes allowed with the receptor's persona and régimen (with no régimen: with
    /// some régimen of its persona).
    pub usos: Vec<Opcion>,
    /// c_FormaPago codes allowed with the método de pago (PPD: 99 only; PUE: all but 99).
    pub formas_pago: Vec<Opcion>,
    pub metodos_pago: Vec<Opcion>,
    /// c_ObjetoImp, complete (whether a line's taxes match its objeto is checked per line).
    pub objetos_imp: Vec<Opcion>,
}

/// The kind of receptor an RFC names.
pub fn tipo_receptor(rfc: &str) -> TipoReceptor {
    // As the draft sends it: trimmed and upper-cased (`crate::sale_draft`).
    let rfc = rfc.trim().to_uppercase();
    if rfc == RFC_PUBLICO_EN_GENERAL || rfc == RFC_EXTRANJERO {
        return TipoReceptor::Generico;
    }
    match rfc_persona(&rfc) {
        Some(Persona::Fisica) => TipoReceptor::Fisica,
        Some(Persona::Moral) => TipoReceptor::Moral,
        None => TipoReceptor::Desconocido,
    }
}

fn regimen_de(tipo: TipoReceptor, r: &RegimenFiscal) -> bool {
    match tipo {
        TipoReceptor::Fisica => r.fisica,
        TipoReceptor::Moral => r.moral,
        TipoReceptor::Generico => r.code == "616",
        TipoReceptor::Desconocido => r.fisica || r.moral,
    }
}

/// The régimenes a receptor of this kind may have, in catalog order.
pub fn regimenes_receptor(tipo: TipoReceptor) -> impl Iterator<Item = &'static RegimenFiscal> {
    REGIMENES_FISCALES.iter().filter(move |r| regimen_de(tipo, r))
}

fn uso_de(tipo: TipoReceptor, u: &UsoCfdi) -> bool {
    match tipo {
        TipoReceptor::Fisica => u.fisica,
        TipoReceptor::Moral => u.moral,
        TipoReceptor::Generico => u.code == "S01",
        TipoReceptor::Desconocido => u.fisica || u.moral,
    }
}

/// The usos del CFDI allowed for a receptor of this kind with `regimen` (a c_RegimenFiscal code;
/// `None`, or a code not of this kind, allows the usos of any régimen of the kind), in catalog
/// order.
pub fn usos_receptor(tipo: TipoReceptor, regimen: Option<&str>) -> impl Iterator<Item = &'static UsoCfdi> {
    let regimen = regimen.and_then(|code| regimenes_receptor(tipo).find(|r| r.code == code));
    USOS_CFDI.iter().filter(move |u| {
        uso_de(tipo, u)
            && match regimen {
                Some(r) => u.regimenes_receptor.contains(&r.code),
                None => regimenes_receptor(tipo).any(|r| u.regimenes_receptor.contains(&r.code)),
            }
    })
}

/// The formas de pago allowed with `metodo` (`PUE`, `PPD`, or none: every one).
pub fn formas_pago(metodo: Option<&str>) -> impl Iterator<Item = &'static Clave> {
    let (solo_99, sin_99) = (metodo == Some("PPD"), metodo == Some("PUE"));
    FORMAS_PAGO
        .iter()
        .filter(move |f| if solo_99 { f.code == "99" } else { !(sin_99 && f.code == "99") })
}

fn opcion(code: &str, descripcion: &str) -> Opcion {
    Opcion {
        code: code.to_string(),
        descripcion: descripcion.to_string(),
    }
}

/// Every select's choices for a receptor with `rfc` and `regimen`, paid by `metodo`.
pub fn opciones_fiscales(rfc: &str, regimen: Option<&str>, metodo: Option<&str>) -> OpcionesFiscales {
    let tipo = tipo_receptor(rfc);
    OpcionesFiscales {
        receptor: tipo,
        regimenes: regimenes_receptor(tipo).map(|r| opcion(r.code, r.descripcion)).collect(),
        usos: usos_receptor(tipo, regimen).map(|u| opcion(u.code, u.descripcion)).collect(),
        formas_pago: formas_pago(metodo).map(|f| opcion(f.code, f.descripcion)).collect(),
        metodos_pago: METODOS_PAGO.iter().map(|m| opcion(m.code, m.descripcion)).collect(),
        objetos_imp: OBJETOS_IMP.iter().map(|o| opcion(o.code, o.descripcion)).collect(),
    }
}
