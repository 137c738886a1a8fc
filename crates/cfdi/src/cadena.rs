//! The cadena original: of a CFDI 4.0 comprobante (with every complement SAT publishes an XSLT
//! for) and of the TimbreFiscalDigital 1.1.
//!
//! Both are computed by running SAT's own stylesheets, embedded in the binary and compiled once
//! by [`crate::xslt`], over the parsed document. The result is byte-identical to `xsltproc`
//! with the same files (the oracle tests check it), without an XSLT engine at run time.

use std::sync::OnceLock;

use crate::xml::{Document, Element};
use crate::xslt::{Sources, Stylesheet, XsltError};
use crate::{NS_CFDI, NS_TFD};

/// Why a cadena could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CadenaError {
    #[error("el elemento raíz no es cfdi:Comprobante de CFDI 4.0 (es {0})")]
    NotCfdi40(String),
    #[error("el comprobante no tiene TimbreFiscalDigital")]
    NoTfd,
    #[error("el comprobante trae {0} TimbreFiscalDigital; se esperaba uno")]
    ManyTfd(usize),
    #[error("no se pudo compilar la hoja de SAT: {0}")]
    Stylesheet(#[from] XsltError),
}

/// SAT's stylesheets, by their path below `http://www.sat.gob.mx/`.
pub static SAT_XSLT: &[(&str, &str)] = &[
    ("sitio_internet/cfd/2/cadenaoriginal_2_0/utilerias.xslt", include_str!("../sat/sitio_internet/cfd/2/cadenaoriginal_2_0/utilerias.xslt")),
    ("sitio_internet/cfd/4/cadenaoriginal_4_0/cadenaoriginal_4_0.xslt", include_str!("../sat/sitio_internet/cfd/4/cadenaoriginal_4_0/cadenaoriginal_4_0.xslt")),
    ("sitio_internet/cfd/CartaPorte/CartaPorte20.xslt", include_str!("../sat/sitio_internet/cfd/CartaPorte/CartaPorte20.xslt")),
    ("sitio_internet/cfd/CartaPorte/CartaPorte30.xslt", include_str!("../sat/sitio_internet/cfd/CartaPorte/CartaPorte30.xslt")),
    ("sitio_internet/cfd/CartaPorte/CartaPorte31.xslt", include_str!("../sat/sitio_internet/cfd/CartaPorte/CartaPorte31.xslt")),
    ("sitio_internet/cfd/ComercioExterior11/ComercioExterior11.xslt", include_str!("../sat/sitio_internet/cfd/ComercioExterior11/ComercioExterior11.xslt")),
    ("sitio_internet/cfd/ComercioExterior20/ComercioExterior20.xslt", include_str!("../sat/sitio_internet/cfd/ComercioExterior20/ComercioExterior20.xslt")),
    ("sitio_internet/cfd/EstadoDeCuentaCombustible/ecc12.xslt", include_str!("../sat/sitio_internet/cfd/EstadoDeCuentaCombustible/ecc12.xslt")),
    ("sitio_internet/cfd/GastosHidrocarburos10/GastosHidrocarburos10.xslt", include_str!("../sat/sitio_internet/cfd/GastosHidrocarburos10/GastosHidrocarburos10.xslt")),
    ("sitio_internet/cfd/HidrocarburosPetro/hidrocarburospetroliferos.xslt", include_str!("../sat/sitio_internet/cfd/HidrocarburosPetro/hidrocarburospetroliferos.xslt")),
    ("sitio_internet/cfd/IngresosHidrocarburos10/IngresosHidrocarburos.xslt", include_str!("../sat/sitio_internet/cfd/IngresosHidrocarburos10/IngresosHidrocarburos.xslt")),
    ("sitio_internet/cfd/Pagos/Pagos20.xslt", include_str!("../sat/sitio_internet/cfd/Pagos/Pagos20.xslt")),
    ("sitio_internet/cfd/TimbreFiscalDigital/cadenaoriginal_TFD_1_1.xslt", include_str!("../sat/sitio_internet/cfd/TimbreFiscalDigital/cadenaoriginal_TFD_1_1.xslt")),
    ("sitio_internet/cfd/TuristaPasajeroExtranjero/TuristaPasajeroExtranjero.xslt", include_str!("../sat/sitio_internet/cfd/TuristaPasajeroExtranjero/TuristaPasajeroExtranjero.xslt")),
    ("sitio_internet/cfd/aerolineas/aerolineas.xslt", include_str!("../sat/sitio_internet/cfd/aerolineas/aerolineas.xslt")),
    ("sitio_internet/cfd/arteantiguedades/obrasarteantiguedades.xslt", include_str!("../sat/sitio_internet/cfd/arteantiguedades/obrasarteantiguedades.xslt")),
    ("sitio_internet/cfd/certificadodestruccion/certificadodedestruccion.xslt", include_str!("../sat/sitio_internet/cfd/certificadodestruccion/certificadodedestruccion.xslt")),
    ("sitio_internet/cfd/cfdiregistrofiscal/cfdiregistrofiscal.xslt", include_str!("../sat/sitio_internet/cfd/cfdiregistrofiscal/cfdiregistrofiscal.xslt")),
    ("sitio_internet/cfd/consumodecombustibles/consumodeCombustibles11.xslt", include_str!("../sat/sitio_internet/cfd/consumodecombustibles/consumodeCombustibles11.xslt")),
    ("sitio_internet/cfd/detallista/detallista.xslt", include_str!("../sat/sitio_internet/cfd/detallista/detallista.xslt")),
    ("sitio_internet/cfd/divisas/divisas.xslt", include_str!("../sat/sitio_internet/cfd/divisas/divisas.xslt")),
    ("sitio_internet/cfd/donat/donat11.xslt", include_str!("../sat/sitio_internet/cfd/donat/donat11.xslt")),
    ("sitio_internet/cfd/iedu/iedu.xslt", include_str!("../sat/sitio_internet/cfd/iedu/iedu.xslt")),
    ("sitio_internet/cfd/implocal/implocal.xslt", include_str!("../sat/sitio_internet/cfd/implocal/implocal.xslt")),
    ("sitio_internet/cfd/ine/ine11.xslt", include_str!("../sat/sitio_internet/cfd/ine/ine11.xslt")),
    ("sitio_internet/cfd/leyendasFiscales/leyendasFisc.xslt", include_str!("../sat/sitio_internet/cfd/leyendasFiscales/leyendasFisc.xslt")),
    ("sitio_internet/cfd/nomina/nomina12.xslt", include_str!("../sat/sitio_internet/cfd/nomina/nomina12.xslt")),
    ("sitio_internet/cfd/notariospublicos/notariospublicos.xslt", include_str!("../sat/sitio_internet/cfd/notariospublicos/notariospublicos.xslt")),
    ("sitio_internet/cfd/pagoenespecie/pagoenespecie.xslt", include_str!("../sat/sitio_internet/cfd/pagoenespecie/pagoenespecie.xslt")),
    ("sitio_internet/cfd/pfic/pfic.xslt", include_str!("../sat/sitio_internet/cfd/pfic/pfic.xslt")),
    ("sitio_internet/cfd/renovacionysustitucionvehiculos/renovacionysustitucionvehiculos.xslt", include_str!("../sat/sitio_internet/cfd/renovacionysustitucionvehiculos/renovacionysustitucionvehiculos.xslt")),
    ("sitio_internet/cfd/servicioparcialconstruccion/servicioparcialconstruccion.xslt", include_str!("../sat/sitio_internet/cfd/servicioparcialconstruccion/servicioparcialconstruccion.xslt")),
    ("sitio_internet/cfd/valesdedespensa/valesdedespensa.xslt", include_str!("../sat/sitio_internet/cfd/valesdedespensa/valesdedespensa.xslt")),
    ("sitio_internet/cfd/vehiculousado/vehiculousado.xslt", include_str!("../sat/sitio_internet/cfd/vehiculousado/vehiculousado.xslt")),
    ("sitio_internet/cfd/ventavehiculos/ventavehiculos11.xslt", include_str!("../sat/sitio_internet/cfd/ventavehiculos/ventavehiculos11.xslt")),
];

const CFDI40_XSLT: &str = "sitio_internet/cfd/4/cadenaoriginal_4_0/cadenaoriginal_4_0.xslt";
const TFD11_XSLT: &str = "sitio_internet/cfd/TimbreFiscalDigital/cadenaoriginal_TFD_1_1.xslt";

struct Embedded;

impl Sources for Embedded {
    fn get(&self, path: &str) -> Option<&str> {
        SAT_XSLT.iter().find(|(p, _)| *p == path).map(|(_, t)| *t)
    }
}

fn compiled(cell: &'static OnceLock<Result<Stylesheet, XsltError>>, entry: &str) -> Result<&'static Stylesheet, CadenaError> {
    cell.get_or_init(|| Stylesheet::compile(&Embedded, entry)).as_ref().map_err(|e| CadenaError::Stylesheet(e.clone()))
}

/// The CFDI 4.0 stylesheet with all its complements, compiled on first use.
pub fn cfdi40_stylesheet() -> Result<&'static Stylesheet, CadenaError> {
    static CELL: OnceLock<Result<Stylesheet, XsltError>> = OnceLock::new();
    compiled(&CELL, CFDI40_XSLT)
}

fn tfd11_stylesheet() -> Result<&'static Stylesheet, CadenaError> {
    static CELL: OnceLock<Result<Stylesheet, XsltError>> = OnceLock::new();
    compiled(&CELL, TFD11_XSLT)
}

/// The cadena original of a CFDI 4.0 comprobante.
pub fn cadena_original(doc: &Document) -> Result<String, CadenaError> {
    let root = &doc.root;
    if !root.is(NS_CFDI, "Comprobante") {
        return Err(CadenaError::NotCfdi40(format!("{{{}}}{}", root.ns.as_deref().unwrap_or(""), root.local)));
    }
    Ok(cfdi40_stylesheet()?.transform(doc))
}

/// The TimbreFiscalDigital element of a stamped comprobante.
pub fn find_tfd(doc: &Document) -> Result<&Element, CadenaError> {
    let found: Vec<&Element> = doc
        .root
        .children_named(NS_CFDI, "Complemento")
        .flat_map(|c| c.children_named(NS_TFD, "TimbreFiscalDigital"))
        .collect();
    match found.as_slice() {
        [] => Err(CadenaError::NoTfd),
        [one] => Ok(one),
        many => Err(CadenaError::ManyTfd(many.len())),
    }
}

/// The cadena original of the TFD 1.1 inside a stamped comprobante.
///
/// SAT's stylesheet expects the TFD as the document element; the TFD template is applied to the
/// node in place, which is what `xsltproc` computes on the extracted node.
pub fn cadena_tfd(doc: &Document) -> Result<String, CadenaError> {
    let tfd = find_tfd(doc)?;
    let mut out = String::with_capacity(512);
    out.push('|');
    tfd11_stylesheet()?.apply_to(doc, tfd, &mut out);
    out.push_str("||");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sat_stylesheets_compile_within_the_subset() {
        let sheet = cfdi40_stylesheet().expect("SAT's CFDI 4.0 stylesheet compiles");
        // cfdi + 33 complements: well over a hundred element templates.
        assert!(sheet.template_count() > 150, "{}", sheet.template_count());
        tfd11_stylesheet().expect("SAT's TFD 1.1 stylesheet compiles");
    }
}
