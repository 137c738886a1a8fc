//! SAT's *Matriz de errores* of Anexo 20 (CFDI 4.0, and Pagos 2.0 revisión B) as one table.
//!
//! Every row is one rule: SAT's code (`CFDI40xxx`, `CRP20xxx`; `GUIA` for a rule of SAT's *Guía
//! de llenado* that the matrix does not number), the fields it names, the documents it applies
//! to, the stable [`FieldError`] code it is refused with, the Spanish message that says the rule
//! and what to do, and how it is checked:
//! - [`Verificacion::Local`]: a function over the sale, written here once. The mapping
//!   ([`crate::mapping::map_sale_with`]) applies the whole table before it builds anything, so
//!   intake (`Outbox::record_sale`, imports, the API), `timbra cfdi validate` and the console's
//!   live preview (`preview_sale`) all refuse with the same rows;
//! - [`Verificacion::AlLeer`]: a shape, catalog or range rule checked where the mapping reads the
//!   value (one helper for every catalog, every amount), named here so the table is complete;
//! - [`Verificacion::Calculado`]: an amount SAT recomputes (SubTotal, Total, tax summaries, the
//!   Pagos totals, the fixed concepto of a payment): Timbra computes it and never takes it from
//!   the sale, so it cannot break;
//! - [`Verificacion::NoLocal`]: a rule over data Timbra cannot know (SAT's list of registered
//!   RFCs, a Confirmacion's validity, SAT's Total limit), with why; the PAC checks it.
//!
//! Traslado (T) and Nómina (N) are not emitted by Timbra (a sale is ingreso, egreso or pago), so
//! their rules are not in the table. Codes follow public transcriptions of SAT's matrices
//! (CFDI 4.0 and `MatrizDeErrores_CRP_V20_RevB`); see `docs/cfdi-matrix.md`.

use chrono::{Datelike, NaiveDateTime};
use rust_decimal::{Decimal, RoundingStrategy};

use crate::catalog::{self, Persona, RFC_EXTRANJERO, RFC_PUBLICO_EN_GENERAL};
use crate::sale::{EmisorProfile, Sale, SaleConcepto, SaleKind};
use crate::tipo_cambio::ReferenciaTipoCambio;
use crate::validation::FieldError;

/// The document a rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Documento {
    /// Ingreso (I): an invoice, PUE or PPD, in any currency.
    Ingreso,
    /// Egreso (E): a credit note.
    Egreso,
    /// Pago (P) with the Pagos 2.0 complement.
    Pago,
    /// A factura global: ingreso to PUBLICO EN GENERAL with InformacionGlobal (or a ticket).
    Global,
}

/// How a rule is checked.
#[derive(Clone, Copy)]
pub enum Verificacion {
    /// Checked here, over the sale.
    Local(fn(&Contexto, &mut Vec<Hallazgo>)),
    /// Checked by the mapping where it reads the value (shape, catalog, range).
    AlLeer,
    /// An amount Timbra computes; the sale cannot set it.
    Calculado,
    /// Needs data Timbra cannot know: not checked locally; the text says why.
    NoLocal(&'static str),
}

/// One rule of SAT's matrix.
#[derive(Clone, Copy)]
pub struct Regla {
    /// Unique short name of the row (tests name their cases by it).
    pub id: &'static str,
    /// SAT's code, e.g. `CFDI40105`; `GUIA` for a rule of the Guía de llenado.
    pub codigo: &'static str,
    /// The fields the rule names (paths in the sale; `[]` stands for every index).
    pub campos: &'static [&'static str],
    /// The documents it applies to.
    pub aplica: &'static [Documento],
    /// The stable [`FieldError`] code of the refusal (the UI and tests branch on it).
    pub error: &'static str,
    /// The rule in words and what to do, in Spanish.
    pub mensaje: &'static str,
    pub verificacion: Verificacion,
}

/// What a rule is checked against.
pub struct Contexto<'a> {
    pub venta: &'a Sale,
    pub emisor: &'a EmisorProfile,
    /// The comprobante's Fecha (local time at LugarExpedicion).
    pub fecha: NaiveDateTime,
    /// SAT's reference exchange rates with their band (none: no band is checked).
    pub referencias: &'a [ReferenciaTipoCambio],
    /// The PAC's Confirmacion code, when the sale carries one.
    pub confirmacion: Option<&'a str>,
}

/// One breach of a rule: the field and what was found there (empty when the message says it all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hallazgo {
    pub campo: String,
    pub detalle: String,
    /// The FieldError code when it differs from the rule's (e.g. a format breach of the same field).
    pub error: Option<&'static str>,
}

fn hallazgo(out: &mut Vec<Hallazgo>, campo: impl Into<String>, detalle: impl Into<String>) {
    out.push(Hallazgo {
        campo: campo.into(),
        detalle: detalle.into(),
        error: None,
    });
}

impl Regla {
    /// The field error of a breach: the rule's message, then what was found.
    pub fn error_de(&self, h: &Hallazgo) -> FieldError {
        let message = if h.detalle.is_empty() {
            self.mensaje.to_string()
        } else {
            format!("{} ({})", self.mensaje, h.detalle)
        };
        FieldError::new(h.campo.clone(), h.error.unwrap_or(self.error), message)
    }
}

/// The documents a sale is: its kind, and Global when it is a factura global.
pub fn documentos(venta: &Sale) -> Vec<Documento> {
    let mut d = vec![match venta.kind {
        SaleKind::Ingreso => Documento::Ingreso,
        SaleKind::Egreso => Documento::Egreso,
        SaleKind::Pago => Documento::Pago,
    }];
    if venta.ticket || venta.informacion_global.is_some() || venta.receptor.rfc == RFC_PUBLICO_EN_GENERAL {
        d.push(Documento::Global);
    }
    d
}

/// Applies every locally checked rule that fits the sale; returns the refusals in table order.
pub fn verificar(ctx: &Contexto) -> Vec<FieldError> {
    let docs = documentos(ctx.venta);
    let mut out = Vec::new();
    for regla in REGLAS {
        if let Verificacion::Local(check) = regla.verificacion {
            if regla.aplica.iter().any(|d| docs.contains(d)) {
                let mut hs = Vec::new();
                check(ctx, &mut hs);
                out.extend(hs.iter().map(|h| regla.error_de(h)));
            }
        }
    }
    out
}

/// The row of `id`.
pub fn regla(id: &str) -> Option<&'static Regla> {
    REGLAS.iter().find(|r| r.id == id)
}

use Documento::*;
const IE: &[Documento] = &[Ingreso, Egreso];
const IEG: &[Documento] = &[Ingreso, Egreso, Global];
const TODOS: &[Documento] = &[Ingreso, Egreso, Pago, Global];
const P: &[Documento] = &[Pago];
const G: &[Documento] = &[Global];

const LISTA_RFC: &str = "SAT coteja el RFC, nombre, código postal y régimen con su lista de RFC inscritos no cancelados; Timbra no tiene esa lista (la revisa el PAC al timbrar)";

/// The table. Order is the order of refusals.
pub static REGLAS: &[Regla] = &[
    // ── Comprobante ─────────────────────────────────────────────────────────────────────────
    Regla { id: "fecha-patron", codigo: "CFDI40101", campos: &["occurred_at"], aplica: TODOS, error: "formato",
        mensaje: "La fecha es AAAA-MM-DDThh:mm:ss, hora local del lugar de expedición",
        verificacion: Verificacion::AlLeer },
    Regla { id: "sello", codigo: "CFDI40102", campos: &[], aplica: TODOS, error: "invalido",
        mensaje: "El sello se calcula sobre la cadena original con el CSD del emisor",
        verificacion: Verificacion::Calculado },
    Regla { id: "pago-sin-forma", codigo: "CFDI40103", campos: &["forma_pago"], aplica: P, error: "combinacion",
        mensaje: "Un comprobante de pago no lleva forma de pago: la forma de cada pago va en pagos[].forma_pago; quite este campo",
        verificacion: Verificacion::Local(pago_sin_forma) },
    Regla { id: "forma-catalogo", codigo: "CFDI40104", campos: &["forma_pago"], aplica: IE, error: "catalogo",
        mensaje: "La forma de pago es una clave de c_FormaPago (01 efectivo, 03 transferencia, 04 tarjeta de crédito, 99 por definir…)",
        verificacion: Verificacion::AlLeer },
    Regla { id: "ppd-forma-99", codigo: "CFDI40105", campos: &["forma_pago", "metodo_pago"], aplica: IE, error: "combinacion",
        mensaje: "Con método de pago PPD la forma de pago es 99 Por definir: cambie la forma de pago a 99, o el método a PUE si el cliente ya pagó",
        verificacion: Verificacion::Local(ppd_forma_99) },
    Regla { id: "pue-forma-real", codigo: "GUIA", campos: &["forma_pago", "metodo_pago"], aplica: IE, error: "combinacion",
        mensaje: "Con método de pago PUE (pagado en una exhibición) la forma de pago es la que usó el cliente, no 99 Por definir: elija efectivo, transferencia, tarjeta…, o use el método PPD si todavía no paga",
        verificacion: Verificacion::Local(pue_forma_real) },
    Regla { id: "subtotal", codigo: "CFDI40108", campos: &[], aplica: TODOS, error: "invalido",
        mensaje: "El SubTotal es la suma de los importes de los conceptos", verificacion: Verificacion::Calculado },
    Regla { id: "descuento-total", codigo: "CFDI40110", campos: &[], aplica: IE, error: "invalido",
        mensaje: "El Descuento es la suma de los descuentos de los conceptos", verificacion: Verificacion::Calculado },
    Regla { id: "moneda-catalogo", codigo: "CFDI40113", campos: &["moneda"], aplica: IE, error: "catalogo",
        mensaje: "La moneda es una clave de c_Moneda (MXN, USD, EUR…)", verificacion: Verificacion::AlLeer },
    Regla { id: "moneda-xxx", codigo: "GUIA", campos: &["moneda"], aplica: IE, error: "combinacion",
        mensaje: "La moneda XXX (sin moneda) solo se usa en comprobantes de pago: indique la moneda de la venta, MXN u otra",
        verificacion: Verificacion::Local(moneda_xxx) },
    Regla { id: "mxn-tipo-cambio-1", codigo: "CFDI40114", campos: &["tipo_cambio"], aplica: IE, error: "combinacion",
        mensaje: "Con moneda MXN el tipo de cambio se omite o es 1: quítelo, o cambie la moneda si la venta fue en otra",
        verificacion: Verificacion::Local(mxn_tipo_cambio_1) },
    Regla { id: "tipo-cambio-requerido", codigo: "CFDI40115", campos: &["tipo_cambio"], aplica: IE, error: "requerido",
        mensaje: "En una moneda distinta de MXN se indica el tipo de cambio (pesos por unidad de la moneda, el del DOF del día anterior)",
        verificacion: Verificacion::Local(tipo_cambio_requerido) },
    Regla { id: "xxx-sin-tipo-cambio", codigo: "CFDI40116", campos: &["tipo_cambio"], aplica: IE, error: "combinacion",
        mensaje: "Con moneda XXX no se indica tipo de cambio: quítelo",
        verificacion: Verificacion::Local(xxx_sin_tipo_cambio) },
    Regla { id: "tipo-cambio-patron", codigo: "CFDI40117", campos: &["tipo_cambio"], aplica: IE, error: "decimales",
        mensaje: "El tipo de cambio es un número mayor que cero con hasta 6 decimales", verificacion: Verificacion::AlLeer },
    Regla { id: "tipo-cambio-banda", codigo: "CFDI40118", campos: &["tipo_cambio", "confirmacion"], aplica: IE, error: "fuera_de_banda",
        mensaje: "El tipo de cambio está fuera de la banda del SAT para la moneda: corrija el tipo de cambio o indique el código de confirmación que da el PAC",
        verificacion: Verificacion::Local(tipo_cambio_banda) },
    Regla { id: "total", codigo: "CFDI40119", campos: &[], aplica: TODOS, error: "invalido",
        mensaje: "El Total es SubTotal − Descuento + traslados − retenciones", verificacion: Verificacion::Calculado },
    Regla { id: "total-limite", codigo: "CFDI40120", campos: &["confirmacion"], aplica: IE, error: "requerido",
        mensaje: "Un Total por encima del límite del SAT lleva código de confirmación",
        verificacion: Verificacion::NoLocal("el límite del Total lo fija el SAT en la Resolución Miscelánea y no es un dato de Timbra; si el PAC lo pide, su código de confirmación se indica en la venta") },
    Regla { id: "exportacion-02", codigo: "CFDI40122", campos: &["exportacion"], aplica: IE, error: "no_soportado",
        mensaje: "La exportación 02 (definitiva con clave A1) requiere el complemento Comercio Exterior, que Timbra todavía no genera: use 01 (no aplica), 03 o 04 según corresponda, o emita esa factura desde otro sistema",
        verificacion: Verificacion::Local(exportacion_02) },
    Regla { id: "exportacion-catalogo", codigo: "CFDI40123", campos: &["exportacion"], aplica: TODOS, error: "catalogo",
        mensaje: "La exportación es una clave de c_Exportacion (01 no aplica)", verificacion: Verificacion::AlLeer },
    Regla { id: "metodo-catalogo", codigo: "CFDI40124", campos: &["metodo_pago"], aplica: IE, error: "catalogo",
        mensaje: "El método de pago es PUE (una exhibición) o PPD (parcialidades o diferido)", verificacion: Verificacion::AlLeer },
    Regla { id: "pago-sin-metodo", codigo: "CFDI40125", campos: &["metodo_pago"], aplica: P, error: "combinacion",
        mensaje: "Un comprobante de pago no lleva método de pago: quite este campo",
        verificacion: Verificacion::Local(pago_sin_metodo) },
    Regla { id: "lugar-expedicion", codigo: "CFDI40126", campos: &["emisor.lugar_expedicion"], aplica: TODOS, error: "catalogo",
        mensaje: "El lugar de expedición es un código postal del catálogo c_CodigoPostal", verificacion: Verificacion::AlLeer },
    Regla { id: "confirmacion-sin-motivo", codigo: "CFDI40127", campos: &["confirmacion"], aplica: IE, error: "combinacion",
        mensaje: "El código de confirmación solo va cuando el tipo de cambio o el total están fuera de los límites del SAT",
        verificacion: Verificacion::NoLocal("el límite del Total no es un dato de Timbra: un código con el tipo de cambio dentro de la banda puede deberse al Total") },
    Regla { id: "confirmacion-valida", codigo: "CFDI40128", campos: &["confirmacion"], aplica: IE, error: "invalido",
        mensaje: "El código de confirmación es uno que emitió el PAC y no se ha usado",
        verificacion: Verificacion::NoLocal("solo el PAC sabe qué códigos emitió y cuáles se usaron (también CFDI40129); Timbra revisa su forma: 5 letras o dígitos") },
    // ── InformacionGlobal ──────────────────────────────────────────────────────────────────
    Regla { id: "global-requiere-informacion", codigo: "CFDI40130", campos: &["informacion_global"], aplica: G, error: "requerido",
        mensaje: "Una factura a PUBLICO EN GENERAL (RFC XAXX010101000) es una factura global: indique informacion_global (periodicidad, meses y año), o facture con el RFC y nombre del cliente",
        verificacion: Verificacion::Local(global_requiere_informacion) },
    Regla { id: "global-nombre", codigo: "CFDI40130", campos: &["receptor.nombre"], aplica: G, error: "combinacion",
        mensaje: "En una factura global el nombre del receptor XAXX010101000 es exactamente PUBLICO EN GENERAL: corrija el nombre",
        verificacion: Verificacion::Local(global_nombre) },
    Regla { id: "global-solo-publico", codigo: "CFDI40130", campos: &["informacion_global"], aplica: TODOS, error: "combinacion",
        mensaje: "informacion_global solo va en la factura global, con el RFC genérico XAXX010101000 (público en general): quítela, o facture a PUBLICO EN GENERAL",
        verificacion: Verificacion::Local(global_solo_publico) },
    Regla { id: "global-periodicidad", codigo: "CFDI40131", campos: &["informacion_global.periodicidad"], aplica: G, error: "catalogo",
        mensaje: "La periodicidad es una clave de c_Periodicidad (01 diaria … 05 bimestral)", verificacion: Verificacion::AlLeer },
    Regla { id: "global-bimestral-621", codigo: "CFDI40132", campos: &["informacion_global.periodicidad"], aplica: G, error: "combinacion",
        mensaje: "La periodicidad 05 (bimestral) solo aplica a emisores del régimen 621 (Incorporación Fiscal): use 01 diaria, 02 semanal, 03 quincenal o 04 mensual",
        verificacion: Verificacion::Local(global_bimestral_621) },
    Regla { id: "global-meses", codigo: "CFDI40133", campos: &["informacion_global.meses"], aplica: G, error: "catalogo",
        mensaje: "Los meses son una clave de c_Meses (01 a 12 un mes, 13 a 18 un bimestre)", verificacion: Verificacion::AlLeer },
    Regla { id: "global-meses-mes", codigo: "CFDI40134", campos: &["informacion_global.meses"], aplica: G, error: "combinacion",
        mensaje: "Los meses 13 a 18 son bimestres, solo con periodicidad 05 (bimestral): con las demás periodicidades indique el mes, 01 a 12",
        verificacion: Verificacion::Local(global_meses_mes) },
    Regla { id: "global-meses-bimestre", codigo: "CFDI40135", campos: &["informacion_global.meses"], aplica: G, error: "combinacion",
        mensaje: "Con periodicidad 05 (bimestral) los meses son un bimestre, 13 (enero-febrero) a 18 (noviembre-diciembre)",
        verificacion: Verificacion::Local(global_meses_bimestre) },
    Regla { id: "global-anio", codigo: "CFDI40136", campos: &["informacion_global.anio"], aplica: G, error: "rango",
        mensaje: "El año de la factura global es el de la fecha del comprobante o el anterior (se emite a más tardar el año siguiente al periodo), con 4 dígitos",
        verificacion: Verificacion::Local(global_anio) },
    // ── CfdiRelacionados ───────────────────────────────────────────────────────────────────
    Regla { id: "relacion-4-0", codigo: "CFDI40137", campos: &["relacionados[].tipo_relacion"], aplica: TODOS, error: "catalogo",
        mensaje: "El tipo de relación es una clave de c_TipoRelacion vigente en CFDI 4.0, 01 a 07 (08 y 09 ya no son válidas)",
        verificacion: Verificacion::Local(relacion_4_0) },
    Regla { id: "egreso-relaciona", codigo: "GUIA", campos: &["relacionados"], aplica: &[Egreso], error: "requerido",
        mensaje: "Una nota de crédito (egreso) relaciona el CFDI que corrige: indique su UUID con el tipo de relación 01",
        verificacion: Verificacion::Local(egreso_relaciona) },
    Regla { id: "egreso-pue", codigo: "GUIA", campos: &["metodo_pago"], aplica: &[Egreso], error: "combinacion",
        mensaje: "Una nota de crédito (egreso) se aplica en una exhibición: use el método de pago PUE",
        verificacion: Verificacion::Local(egreso_pue) },
    // ── Emisor ─────────────────────────────────────────────────────────────────────────────
    Regla { id: "emisor-lista", codigo: "CFDI40138", campos: &["emisor.rfc", "emisor.nombre"], aplica: TODOS, error: "invalido",
        mensaje: "El RFC del emisor está inscrito y su nombre es el de su constancia (CFDI40139)",
        verificacion: Verificacion::NoLocal(LISTA_RFC) },
    Regla { id: "emisor-regimen", codigo: "CFDI40140", campos: &["emisor.regimen_fiscal"], aplica: TODOS, error: "catalogo",
        mensaje: "El régimen del emisor es una clave de c_RegimenFiscal", verificacion: Verificacion::AlLeer },
    Regla { id: "emisor-regimen-persona", codigo: "CFDI40141", campos: &["emisor.regimen_fiscal"], aplica: TODOS, error: "combinacion",
        mensaje: "El régimen del emisor corresponde a su tipo de persona (RFC de 13 caracteres: persona física; de 12: persona moral): corrija el régimen en Ajustes",
        verificacion: Verificacion::Local(emisor_regimen_persona) },
    // ── Receptor ───────────────────────────────────────────────────────────────────────────
    Regla { id: "receptor-lista", codigo: "CFDI40143", campos: &["receptor.rfc", "receptor.nombre", "receptor.domicilio_fiscal", "receptor.regimen_fiscal"], aplica: IE, error: "invalido",
        mensaje: "El RFC del receptor está inscrito y su nombre, código postal y régimen son los de su constancia (CFDI40144 a 40148, 40159)",
        verificacion: Verificacion::NoLocal(LISTA_RFC) },
    Regla { id: "receptor-generico-cp", codigo: "CFDI40149", campos: &["receptor.domicilio_fiscal"], aplica: TODOS, error: "combinacion",
        mensaje: "Con un RFC genérico (XAXX010101000 o XEXX010101000) el código postal del receptor es el lugar de expedición del emisor",
        verificacion: Verificacion::Local(receptor_generico_cp) },
    Regla { id: "residencia-catalogo", codigo: "CFDI40150", campos: &["receptor.residencia_fiscal"], aplica: TODOS, error: "catalogo",
        mensaje: "La residencia fiscal es un país del catálogo c_Pais (USA, CAN, ESP…) distinto de MEX",
        verificacion: Verificacion::Local(residencia_catalogo) },
    Regla { id: "residencia-extranjero", codigo: "CFDI40151", campos: &["receptor.residencia_fiscal"], aplica: TODOS, error: "combinacion",
        mensaje: "La residencia fiscal solo se indica con el RFC genérico extranjero XEXX010101000: quítela, o use ese RFC si el cliente es extranjero",
        verificacion: Verificacion::Local(residencia_extranjero) },
    Regla { id: "residencia-mex", codigo: "CFDI40152", campos: &["receptor.residencia_fiscal"], aplica: TODOS, error: "catalogo",
        mensaje: "La residencia fiscal de un receptor extranjero no puede ser MEX: indique su país",
        verificacion: Verificacion::Local(residencia_mex) },
    Regla { id: "num-reg-id-trib-residencia", codigo: "CFDI40153", campos: &["receptor.num_reg_id_trib"], aplica: TODOS, error: "combinacion",
        mensaje: "El número de registro tributario extranjero va con la residencia fiscal del receptor: indique su país",
        verificacion: Verificacion::Local(num_reg_id_trib_residencia) },
    Regla { id: "num-reg-id-trib-nacional", codigo: "CFDI40154", campos: &["receptor.num_reg_id_trib"], aplica: TODOS, error: "combinacion",
        mensaje: "Un receptor con RFC mexicano no lleva número de registro tributario extranjero: quítelo",
        verificacion: Verificacion::Local(num_reg_id_trib_nacional) },
    Regla { id: "receptor-regimen", codigo: "CFDI40157", campos: &["receptor.regimen_fiscal"], aplica: TODOS, error: "catalogo",
        mensaje: "El régimen del receptor es una clave de c_RegimenFiscal (el de su constancia)", verificacion: Verificacion::AlLeer },
    Regla { id: "receptor-regimen-persona", codigo: "CFDI40158", campos: &["receptor.regimen_fiscal"], aplica: TODOS, error: "combinacion",
        mensaje: "El régimen del receptor corresponde a su tipo de persona (RFC de 13 caracteres: persona física; de 12: persona moral): copie el régimen de su constancia",
        verificacion: Verificacion::Local(receptor_regimen_persona) },
    Regla { id: "receptor-generico-616", codigo: "GUIA", campos: &["receptor.regimen_fiscal"], aplica: TODOS, error: "combinacion",
        mensaje: "Con un RFC genérico (XAXX010101000 o XEXX010101000) el régimen del receptor es 616 Sin obligaciones fiscales",
        verificacion: Verificacion::Local(receptor_generico_616) },
    Regla { id: "uso-catalogo", codigo: "CFDI40160", campos: &["receptor.uso_cfdi"], aplica: TODOS, error: "catalogo",
        mensaje: "El uso del CFDI es una clave de c_UsoCFDI (G03 gastos en general, S01 sin efectos fiscales…)", verificacion: Verificacion::AlLeer },
    Regla { id: "uso-generico", codigo: "CFDI40161", campos: &["receptor.uso_cfdi"], aplica: IEG, error: "combinacion",
        mensaje: "Con un RFC genérico (XAXX010101000 o XEXX010101000) el uso del CFDI es S01 Sin efectos fiscales",
        verificacion: Verificacion::Local(uso_generico) },
    Regla { id: "uso-pago", codigo: "CFDI40161", campos: &["receptor.uso_cfdi"], aplica: P, error: "combinacion",
        mensaje: "Un comprobante de pago usa el uso del CFDI CP01 Pagos",
        verificacion: Verificacion::Local(uso_pago) },
    Regla { id: "uso-persona-regimen", codigo: "CFDI40161", campos: &["receptor.uso_cfdi"], aplica: TODOS, error: "combinacion",
        mensaje: "El uso del CFDI corresponde al tipo de persona y al régimen del receptor: elija un uso permitido (G03 gastos en general aplica a casi todos) o corrija el régimen",
        verificacion: Verificacion::Local(uso_persona_regimen) },
    // ── Conceptos ──────────────────────────────────────────────────────────────────────────
    Regla { id: "clave-prod-serv", codigo: "CFDI40162", campos: &["conceptos[].clave_prod_serv"], aplica: IE, error: "catalogo",
        mensaje: "La clave de producto o servicio es una clave vigente de c_ClaveProdServ", verificacion: Verificacion::AlLeer },
    Regla { id: "clave-prod-serv-complemento", codigo: "CFDI40163", campos: &["conceptos[].clave_prod_serv"], aplica: IE, error: "combinacion",
        mensaje: "Algunas claves de producto exigen un complemento",
        verificacion: Verificacion::NoLocal("Timbra no escribe complementos de concepto; la relación clave-complemento la revisa el PAC") },
    Regla { id: "clave-unidad", codigo: "CFDI40165", campos: &["conceptos[].clave_unidad"], aplica: IE, error: "catalogo",
        mensaje: "La clave de unidad es una clave de c_ClaveUnidad (H87 pieza, E48 servicio…)", verificacion: Verificacion::AlLeer },
    Regla { id: "valor-unitario", codigo: "CFDI40166", campos: &["conceptos[].valor_unitario"], aplica: IE, error: "rango",
        mensaje: "El valor unitario es mayor que cero", verificacion: Verificacion::AlLeer },
    Regla { id: "importe-concepto", codigo: "CFDI40167", campos: &[], aplica: IE, error: "invalido",
        mensaje: "El importe es cantidad × valor unitario", verificacion: Verificacion::Calculado },
    Regla { id: "descuento-concepto", codigo: "CFDI40169", campos: &["conceptos[].descuento"], aplica: IE, error: "rango",
        mensaje: "El descuento de un concepto no puede ser mayor que su importe (cantidad × valor unitario): corrija el descuento",
        verificacion: Verificacion::Local(descuento_concepto) },
    Regla { id: "objeto-catalogo", codigo: "CFDI40170", campos: &["conceptos[].objeto_imp"], aplica: IE, error: "catalogo",
        mensaje: "El objeto de impuesto es una clave de c_ObjetoImp (01 no objeto, 02 sí objeto…)", verificacion: Verificacion::AlLeer },
    Regla { id: "objeto-02-impuestos", codigo: "CFDI40171", campos: &["conceptos[].objeto_imp"], aplica: IE, error: "combinacion",
        mensaje: "Con ObjetoImp 02 (sí objeto de impuesto) el concepto lleva al menos un traslado o una retención: agregue el IVA, o use ObjetoImp 01 si no causa impuestos",
        verificacion: Verificacion::Local(objeto_02_impuestos) },
    Regla { id: "objeto-sin-impuestos", codigo: "CFDI40172", campos: &["conceptos[].objeto_imp"], aplica: IE, error: "combinacion",
        mensaje: "Con ObjetoImp 01, 03 o 04 el concepto no lleva impuestos: quítelos, o use ObjetoImp 02",
        verificacion: Verificacion::Local(objeto_sin_impuestos) },
    Regla { id: "base-cero", codigo: "CFDI40174", campos: &["conceptos[].descuento", "conceptos[].valor_unitario"], aplica: IE, error: "base_cero",
        mensaje: "SAT no acepta un impuesto con base 0 en un concepto (CFDI40174, CFDI40181): use ObjetoImp 01 (no objeto de impuesto) sin impuestos, o no descuente el 100 %",
        verificacion: Verificacion::Local(base_cero) },
    Regla { id: "impuesto-catalogo", codigo: "CFDI40175", campos: &["conceptos[].traslados[].impuesto"], aplica: IE, error: "catalogo",
        mensaje: "El impuesto es 002 IVA o 003 IEPS (001 ISR solo se retiene; también CFDI40182)", verificacion: Verificacion::AlLeer },
    Regla { id: "tipo-factor", codigo: "CFDI40176", campos: &["conceptos[].traslados[].tipo_factor"], aplica: IE, error: "catalogo",
        mensaje: "El tipo de factor es Tasa, Cuota o Exento (también CFDI40183)", verificacion: Verificacion::AlLeer },
    Regla { id: "exento-sin-tasa", codigo: "CFDI40177", campos: &["conceptos[].traslados[].tasa_o_cuota"], aplica: IE, error: "combinacion",
        mensaje: "Un traslado Exento no lleva tasa ni importe", verificacion: Verificacion::AlLeer },
    Regla { id: "tasa-catalogo", codigo: "CFDI40179", campos: &["conceptos[].traslados[].tasa_o_cuota"], aplica: IE, error: "catalogo",
        mensaje: "La tasa o cuota es una de c_TasaOCuota para el impuesto y el factor (IVA 0.160000, 0.080000 o 0; también CFDI40185)", verificacion: Verificacion::AlLeer },
    Regla { id: "importe-impuesto", codigo: "CFDI40180", campos: &[], aplica: IE, error: "invalido",
        mensaje: "El importe de un impuesto es base × tasa (también CFDI40186)", verificacion: Verificacion::Calculado },
    Regla { id: "retencion-no-exenta", codigo: "CFDI40184", campos: &["conceptos[].retenciones[].tipo_factor"], aplica: IE, error: "combinacion",
        mensaje: "Una retención no puede ser Exento: use Tasa", verificacion: Verificacion::AlLeer },
    Regla { id: "a-cuenta-terceros", codigo: "CFDI40187", campos: &[], aplica: IE, error: "invalido",
        mensaje: "El RFC a cuenta de terceros está en la lista de contribuyentes (CFDI40187 a 40193)",
        verificacion: Verificacion::NoLocal("Timbra no emite conceptos a cuenta de terceros; y la lista de contribuyentes es del SAT") },
    Regla { id: "pedimento", codigo: "CFDI40194", campos: &["conceptos[].informacion_aduanera[]"], aplica: IE, error: "formato",
        mensaje: "El número de pedimento tiene la forma AA  AA  AAAA  AAAAAAA", verificacion: Verificacion::AlLeer },
    Regla { id: "impuestos-resumen", codigo: "CFDI40201", campos: &[], aplica: TODOS, error: "invalido",
        mensaje: "El resumen de impuestos suma los de los conceptos (CFDI40201 a 40221)", verificacion: Verificacion::Calculado },
    // ── Pagos 2.0: the comprobante P ───────────────────────────────────────────────────────
    Regla { id: "pago-fijos", codigo: "CRP20101", campos: &[], aplica: P, error: "invalido",
        mensaje: "El comprobante de pago lleva valores fijos: SubTotal y Total 0, el concepto 84111506 ACT «Pago» (CRP20101 a 20123)",
        verificacion: Verificacion::Calculado },
    Regla { id: "pago-moneda-xxx", codigo: "CRP20104", campos: &["moneda"], aplica: P, error: "combinacion",
        mensaje: "Un comprobante de pago usa la moneda XXX: la moneda de cada pago va en pagos[].moneda; quite este campo",
        verificacion: Verificacion::Local(pago_moneda_xxx) },
    Regla { id: "pago-sin-condiciones", codigo: "CRP20107", campos: &["condiciones_de_pago"], aplica: P, error: "combinacion",
        mensaje: "Un comprobante de pago no lleva condiciones de pago: quite este campo",
        verificacion: Verificacion::Local(pago_sin_condiciones) },
    Regla { id: "pago-sin-tipo-cambio", codigo: "CRP20109", campos: &["tipo_cambio"], aplica: P, error: "combinacion",
        mensaje: "Un comprobante de pago no lleva tipo de cambio: el de cada pago va en pagos[].tipo_cambio; quite este campo",
        verificacion: Verificacion::Local(pago_sin_tipo_cambio) },
    Regla { id: "pago-sin-conceptos", codigo: "CRP20111", campos: &["conceptos"], aplica: P, error: "combinacion",
        mensaje: "Un comprobante de pago no lleva conceptos: Timbra escribe el concepto fijo del SAT; quítelos",
        verificacion: Verificacion::Local(pago_sin_conceptos) },
    Regla { id: "pago-totales", codigo: "CRP20201", campos: &[], aplica: P, error: "invalido",
        mensaje: "Los totales del complemento suman los impuestos y montos de los pagos (CRP20201 a 20211, 20265 a 20274)",
        verificacion: Verificacion::Calculado },
    // ── Pagos 2.0: Pago ────────────────────────────────────────────────────────────────────
    Regla { id: "pago-forma-real", codigo: "CRP20212", campos: &["pagos[].forma_pago"], aplica: P, error: "combinacion",
        mensaje: "Un pago recibido tiene su forma real (01 efectivo, 03 transferencia, 04 tarjeta…), no 99 Por definir",
        verificacion: Verificacion::Local(pago_forma_real) },
    Regla { id: "pago-moneda", codigo: "CRP20213", campos: &["pagos[].moneda"], aplica: P, error: "combinacion",
        mensaje: "Un pago se recibe en una moneda real (MXN, USD…), no XXX",
        verificacion: Verificacion::Local(pago_moneda) },
    Regla { id: "pago-tipo-cambio-requerido", codigo: "CRP20214", campos: &["pagos[].tipo_cambio"], aplica: P, error: "requerido",
        mensaje: "Un pago en moneda distinta de MXN lleva el tipo de cambio del día en que se recibió",
        verificacion: Verificacion::Local(pago_tipo_cambio_requerido) },
    Regla { id: "pago-mxn-tipo-cambio-1", codigo: "CRP20215", campos: &["pagos[].tipo_cambio"], aplica: P, error: "combinacion",
        mensaje: "Un pago en MXN lleva tipo de cambio 1: quítelo o póngalo en 1",
        verificacion: Verificacion::Local(pago_mxn_tipo_cambio_1) },
    Regla { id: "pago-confirmacion", codigo: "CRP20216", campos: &["pagos[].tipo_cambio"], aplica: P, error: "fuera_de_banda",
        mensaje: "Un TipoCambioP fuera de los límites del SAT lleva código de confirmación (también CRP20220 por el Monto)",
        verificacion: Verificacion::NoLocal("el límite del Monto no es un dato de Timbra, y la banda del tipo de cambio de un pago no se le pasa al mapeo; el PAC lo revisa") },
    Regla { id: "pago-monto", codigo: "CRP20217", campos: &["pagos[].monto"], aplica: P, error: "rango",
        mensaje: "El monto del pago cubre lo pagado a todos sus documentos", verificacion: Verificacion::AlLeer },
    Regla { id: "pago-cuentas", codigo: "CRP20221", campos: &[], aplica: P, error: "invalido",
        mensaje: "Las cuentas ordenante y beneficiaria solo van con formas bancarizadas (CRP20221 a 20235)",
        verificacion: Verificacion::NoLocal("Timbra no escribe cuentas bancarias ni cadena de pago SPEI en el pago; el RFC del banco se coteja con la lista del SAT") },
    // ── Pagos 2.0: DoctoRelacionado ────────────────────────────────────────────────────────
    Regla { id: "docto-equivalencia-requerida", codigo: "CRP20237", campos: &["pagos[].documentos[].equivalencia"], aplica: P, error: "requerido",
        mensaje: "Si la factura pagada está en otra moneda que el pago, indique la equivalencia (unidades de la moneda de la factura por unidad de la del pago)",
        verificacion: Verificacion::Local(docto_equivalencia_requerida) },
    Regla { id: "docto-equivalencia-1", codigo: "CRP20238", campos: &["pagos[].documentos[].equivalencia"], aplica: P, error: "combinacion",
        mensaje: "Si la factura pagada está en la moneda del pago la equivalencia es 1: quítela o póngala en 1",
        verificacion: Verificacion::Local(docto_equivalencia_1) },
    Regla { id: "docto-parcialidad", codigo: "CRP20239", campos: &["pagos[].documentos[].num_parcialidad"], aplica: P, error: "rango",
        mensaje: "El número de parcialidad empieza en 1", verificacion: Verificacion::AlLeer },
    Regla { id: "docto-saldo-insoluto", codigo: "CRP20244", campos: &["pagos[].documentos[].importe_pagado"], aplica: P, error: "rango",
        mensaje: "Lo pagado a una factura no puede exceder su saldo anterior (el saldo insoluto no es negativo): corrija el importe o el saldo",
        verificacion: Verificacion::Local(docto_saldo_insoluto) },
    Regla { id: "docto-objeto-02", codigo: "CRP20246", campos: &["pagos[].documentos[].objeto_imp"], aplica: P, error: "combinacion",
        mensaje: "Con ObjetoImpDR 02 el documento pagado lleva sus impuestos (los de la factura, en proporción a lo pagado)",
        verificacion: Verificacion::Local(docto_objeto_02) },
    Regla { id: "docto-objeto-sin-impuestos", codigo: "CRP20247", campos: &["pagos[].documentos[].objeto_imp"], aplica: P, error: "combinacion",
        mensaje: "Con ObjetoImpDR 01, 03 o 04 el documento pagado no lleva impuestos: quítelos, o use 02",
        verificacion: Verificacion::Local(docto_objeto_sin_impuestos) },
    Regla { id: "docto-impuestos", codigo: "CRP20248", campos: &["pagos[].documentos[].traslados[]"], aplica: P, error: "catalogo",
        mensaje: "Los impuestos del documento pagado siguen los catálogos de impuesto, factor y tasa (CRP20248 a 20261)", verificacion: Verificacion::AlLeer },
];

// ── Checks ─────────────────────────────────────────────────────────────────────────────────

fn es_generico(rfc: &str) -> bool {
    rfc == RFC_PUBLICO_EN_GENERAL || rfc == RFC_EXTRANJERO
}

fn es_pago(c: &Contexto) -> bool {
    c.venta.kind == SaleKind::Pago
}

fn pago_sin_forma(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if c.venta.forma_pago.is_some() {
        hallazgo(out, "forma_pago", "");
    }
}

fn ppd_forma_99(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if let (Some(f), Some("PPD")) = (c.venta.forma_pago.as_deref(), c.venta.metodo_pago.as_deref()) {
        if f != "99" {
            hallazgo(out, "forma_pago", format!("la forma de pago es {f}"));
        }
    }
}

fn pue_forma_real(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if let (Some("99"), Some("PUE")) = (c.venta.forma_pago.as_deref(), c.venta.metodo_pago.as_deref()) {
        hallazgo(out, "forma_pago", "");
    }
}

fn moneda_xxx(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if c.venta.moneda.as_deref() == Some("XXX") {
        hallazgo(out, "moneda", "");
    }
}

fn moneda<'a>(c: &Contexto<'a>) -> &'a str {
    c.venta.moneda.as_deref().unwrap_or("MXN")
}

fn mxn_tipo_cambio_1(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if let (Some(t), "MXN") = (c.venta.tipo_cambio, moneda(c)) {
        if t.0 != Decimal::ONE {
            hallazgo(out, "tipo_cambio", format!("se indicó {}", t.0));
        }
    }
}

fn tipo_cambio_requerido(c: &Contexto, out: &mut Vec<Hallazgo>) {
    let m = moneda(c);
    if c.venta.tipo_cambio.is_none() && m != "MXN" && m != "XXX" && catalog::moneda(m).is_some() {
        hallazgo(out, "tipo_cambio", format!("la moneda es {m}"));
    }
}

fn xxx_sin_tipo_cambio(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if c.venta.tipo_cambio.is_some() && moneda(c) == "XXX" {
        hallazgo(out, "tipo_cambio", "");
    }
}

fn tipo_cambio_banda(c: &Contexto, out: &mut Vec<Hallazgo>) {
    let m = moneda(c);
    let Some(tc) = c.venta.tipo_cambio.map(|t| t.0) else { return };
    if m == "MXN" || m == "XXX" || tc <= Decimal::ZERO || c.confirmacion.is_some() {
        return;
    }
    if let Some(r) = c.referencias.iter().find(|r| r.moneda == m).filter(|r| !r.en_banda(tc)) {
        let (min, max) = r.banda();
        hallazgo(
            out,
            "tipo_cambio",
            format!(
                "{tc} de {m}; la banda es {min} a {max}: referencia {} ± {} %",
                r.tipo_cambio, r.variacion_pct
            ),
        );
    }
}

fn exportacion_02(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if c.venta.exportacion.as_deref() == Some("02") {
        hallazgo(out, "exportacion", "");
    }
}

fn pago_sin_metodo(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if c.venta.metodo_pago.is_some() {
        hallazgo(out, "metodo_pago", "");
    }
}

fn es_publico_en_general(c: &Contexto) -> bool {
    c.venta.receptor.rfc == RFC_PUBLICO_EN_GENERAL && c.venta.receptor.nombre.trim() == "PUBLICO EN GENERAL"
}

fn global_requiere_informacion(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if es_publico_en_general(c) && c.venta.informacion_global.is_none() && c.venta.kind == SaleKind::Ingreso {
        hallazgo(out, "informacion_global", "");
    }
}

fn global_nombre(c: &Contexto, out: &mut Vec<Hallazgo>) {
    let r = &c.venta.receptor;
    if c.venta.informacion_global.is_some() && r.rfc == RFC_PUBLICO_EN_GENERAL && r.nombre.trim() != "PUBLICO EN GENERAL" {
        hallazgo(out, "receptor.nombre", format!("el nombre es {:?}", r.nombre));
    }
}

fn global_solo_publico(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if c.venta.informacion_global.is_some() && c.venta.receptor.rfc != RFC_PUBLICO_EN_GENERAL {
        hallazgo(
            out,
            "informacion_global",
            format!("el RFC del receptor es {}", c.venta.receptor.rfc),
        );
    }
}

fn global_bimestral_621(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if let Some(ig) = &c.venta.informacion_global {
        if ig.periodicidad == "05" && c.emisor.regimen_fiscal != "621" {
            hallazgo(
                out,
                "informacion_global.periodicidad",
                format!("el emisor está en el régimen {}", c.emisor.regimen_fiscal),
            );
        }
    }
}

fn bimestre(meses: &str) -> Option<bool> {
    catalog::meses(meses).map(|_| meses >= "13")
}

fn global_meses_mes(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if let Some(ig) = &c.venta.informacion_global {
        if catalog::periodicidad(&ig.periodicidad).is_some() && ig.periodicidad != "05" && bimestre(&ig.meses) == Some(true) {
            hallazgo(
                out,
                "informacion_global.meses",
                format!("periodicidad {}, meses {}", ig.periodicidad, ig.meses),
            );
        }
    }
}

fn global_meses_bimestre(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if let Some(ig) = &c.venta.informacion_global {
        if ig.periodicidad == "05" && bimestre(&ig.meses) == Some(false) {
            hallazgo(out, "informacion_global.meses", format!("meses {}", ig.meses));
        }
    }
}

fn global_anio(c: &Contexto, out: &mut Vec<Hallazgo>) {
    let Some(ig) = &c.venta.informacion_global else { return };
    if ig.anio.len() != 4 || !ig.anio.bytes().all(|b| b.is_ascii_digit()) {
        out.push(Hallazgo {
            campo: "informacion_global.anio".into(),
            detalle: format!("{:?} no es un año de 4 dígitos", ig.anio),
            error: Some("formato"),
        });
        return;
    }
    let year = c.fecha.year();
    let anio: i32 = ig.anio.parse().unwrap_or(0);
    if anio != year && anio != year - 1 {
        hallazgo(
            out,
            "informacion_global.anio",
            format!("el año es {anio}; la fecha es de {year}: use {year} o {}", year - 1),
        );
    }
}

fn relacion_4_0(c: &Contexto, out: &mut Vec<Hallazgo>) {
    for (i, r) in c.venta.relacionados.iter().enumerate() {
        if matches!(r.tipo_relacion.as_str(), "08" | "09") {
            hallazgo(
                out,
                format!("relacionados[{i}].tipo_relacion"),
                format!("se indicó {}", r.tipo_relacion),
            );
        }
    }
}

fn egreso_relaciona(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if c.venta.relacionados.is_empty() {
        hallazgo(out, "relacionados", "");
    }
}

fn egreso_pue(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if c.venta.metodo_pago.as_deref() == Some("PPD") {
        hallazgo(out, "metodo_pago", "");
    }
}

/// The régimen's persona does not match the RFC's: the detail, or None.
fn regimen_no_persona(rfc: &str, regimen: &str) -> Option<String> {
    let r = catalog::regimen_fiscal(regimen)?;
    match catalog::rfc_persona(rfc)? {
        Persona::Fisica if !r.fisica => Some(format!(
            "el régimen {regimen} es de personas morales y el RFC {rfc} es de persona física"
        )),
        Persona::Moral if !r.moral => Some(format!(
            "el régimen {regimen} es de personas físicas y el RFC {rfc} es de persona moral"
        )),
        _ => None,
    }
}

fn emisor_regimen_persona(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if let Some(d) = regimen_no_persona(&c.emisor.rfc, &c.emisor.regimen_fiscal) {
        hallazgo(out, "emisor.regimen_fiscal", d);
    }
}

fn receptor_presente(c: &Contexto) -> bool {
    !c.venta.receptor.is_absent()
}

fn receptor_generico_cp(c: &Contexto, out: &mut Vec<Hallazgo>) {
    let r = &c.venta.receptor;
    if receptor_presente(c) && es_generico(&r.rfc) && r.domicilio_fiscal != c.emisor.lugar_expedicion {
        hallazgo(
            out,
            "receptor.domicilio_fiscal",
            format!("use {} en lugar de {}", c.emisor.lugar_expedicion, r.domicilio_fiscal),
        );
    }
}

fn residencia_catalogo(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if let Some(res) = &c.venta.receptor.residencia_fiscal {
        if res != "MEX" && catalog::pais(res).is_none() {
            hallazgo(out, "receptor.residencia_fiscal", format!("{res:?} no está en c_Pais"));
        }
    }
}

fn residencia_extranjero(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if c.venta.receptor.residencia_fiscal.is_some() && c.venta.receptor.rfc != RFC_EXTRANJERO {
        hallazgo(out, "receptor.residencia_fiscal", "");
    }
}

fn residencia_mex(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if c.venta.receptor.residencia_fiscal.as_deref() == Some("MEX") {
        hallazgo(out, "receptor.residencia_fiscal", "");
    }
}

fn num_reg_id_trib_residencia(c: &Contexto, out: &mut Vec<Hallazgo>) {
    let r = &c.venta.receptor;
    if r.num_reg_id_trib.is_some() && r.residencia_fiscal.is_none() {
        hallazgo(out, "receptor.num_reg_id_trib", "");
    }
}

fn num_reg_id_trib_nacional(c: &Contexto, out: &mut Vec<Hallazgo>) {
    let r = &c.venta.receptor;
    if r.num_reg_id_trib.is_some() && r.rfc != RFC_EXTRANJERO {
        hallazgo(out, "receptor.num_reg_id_trib", format!("el RFC es {}", r.rfc));
    }
}

fn receptor_regimen_persona(c: &Contexto, out: &mut Vec<Hallazgo>) {
    let r = &c.venta.receptor;
    if receptor_presente(c) && !es_generico(&r.rfc) {
        if let Some(d) = regimen_no_persona(&r.rfc, &r.regimen_fiscal) {
            hallazgo(out, "receptor.regimen_fiscal", d);
        }
    }
}

fn receptor_generico_616(c: &Contexto, out: &mut Vec<Hallazgo>) {
    let r = &c.venta.receptor;
    if receptor_presente(c) && es_generico(&r.rfc) && r.regimen_fiscal != "616" {
        hallazgo(out, "receptor.regimen_fiscal", format!("se indicó {}", r.regimen_fiscal));
    }
}

fn uso_generico(c: &Contexto, out: &mut Vec<Hallazgo>) {
    let r = &c.venta.receptor;
    if receptor_presente(c) && es_generico(&r.rfc) && !es_pago(c) && r.uso_cfdi != "S01" {
        hallazgo(out, "receptor.uso_cfdi", format!("se indicó {}", r.uso_cfdi));
    }
}

fn uso_pago(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if c.venta.receptor.uso_cfdi != "CP01" {
        hallazgo(out, "receptor.uso_cfdi", format!("se indicó {}", c.venta.receptor.uso_cfdi));
    }
}

fn uso_persona_regimen(c: &Contexto, out: &mut Vec<Hallazgo>) {
    let r = &c.venta.receptor;
    if !receptor_presente(c) {
        return;
    }
    let Some(uso) = catalog::uso_cfdi(&r.uso_cfdi) else { return };
    match catalog::rfc_persona(&r.rfc) {
        Some(Persona::Fisica) if !uso.fisica => {
            hallazgo(
                out,
                "receptor.uso_cfdi",
                format!("el uso {} no aplica a personas físicas", uso.code),
            );
            return;
        }
        Some(Persona::Moral) if !uso.moral => {
            hallazgo(
                out,
                "receptor.uso_cfdi",
                format!("el uso {} no aplica a personas morales", uso.code),
            );
            return;
        }
        _ => {}
    }
    if catalog::regimen_fiscal(&r.regimen_fiscal).is_some() && !uso.regimenes_receptor.contains(&r.regimen_fiscal.as_str()) {
        hallazgo(
            out,
            "receptor.uso_cfdi",
            format!("el uso {} no se permite con el régimen del receptor {}", uso.code, r.regimen_fiscal),
        );
    }
}

/// Decimals of the sale's currency (2 when unknown).
fn decimales(c: &Contexto) -> u32 {
    catalog::moneda(moneda(c)).map(|m| m.decimales).unwrap_or(2)
}

fn money(v: Decimal, d: u32) -> Decimal {
    v.round_dp_with_strategy(d, RoundingStrategy::MidpointAwayFromZero)
}

/// A concepto's Importe (rounded to the currency) and its Descuento.
fn importe(k: &SaleConcepto, d: u32) -> (Decimal, Decimal) {
    (
        money(k.cantidad.0 * k.valor_unitario.0, d),
        money(k.descuento.map(|x| x.0).unwrap_or(Decimal::ZERO), d),
    )
}

fn descuento_concepto(c: &Contexto, out: &mut Vec<Hallazgo>) {
    let d = decimales(c);
    for (i, k) in c.venta.conceptos.iter().enumerate() {
        let (imp, desc) = importe(k, d);
        if desc > imp && k.valor_unitario.0 > Decimal::ZERO && k.cantidad.0 > Decimal::ZERO {
            hallazgo(
                out,
                format!("conceptos[{i}].descuento"),
                format!("el descuento {desc} excede el importe del concepto {imp}"),
            );
        }
    }
}

fn tiene_impuestos(k: &SaleConcepto) -> bool {
    !k.traslados.is_empty() || !k.retenciones.is_empty()
}

fn objeto_02_impuestos(c: &Contexto, out: &mut Vec<Hallazgo>) {
    for (i, k) in c.venta.conceptos.iter().enumerate() {
        if k.objeto_imp == "02" && !tiene_impuestos(k) {
            hallazgo(out, format!("conceptos[{i}].objeto_imp"), "");
        }
    }
}

fn objeto_sin_impuestos(c: &Contexto, out: &mut Vec<Hallazgo>) {
    for (i, k) in c.venta.conceptos.iter().enumerate() {
        if matches!(k.objeto_imp.as_str(), "01" | "03" | "04") && tiene_impuestos(k) {
            hallazgo(out, format!("conceptos[{i}].objeto_imp"), format!("ObjetoImp {}", k.objeto_imp));
        }
    }
}

/// A taxed concepto whose tax Base would be 0: Importe − Descuento is 0 (discounted 100 %, or an
/// Importe that rounds to 0) on a line taxed by Tasa or Exento. IVA's base also carries the
/// IEPS by cuota of the concepto (LIVA art. 12), so such an IVA line is not at zero.
fn base_cero(c: &Contexto, out: &mut Vec<Hallazgo>) {
    let d = decimales(c);
    for (i, k) in c.venta.conceptos.iter().enumerate() {
        if k.objeto_imp != "02" || !tiene_impuestos(k) {
            continue;
        }
        let (imp, desc) = importe(k, d);
        let base = imp - desc;
        if base > Decimal::ZERO || desc > imp {
            continue;
        }
        let ieps_cuota: Decimal = k
            .traslados
            .iter()
            .filter(|t| t.impuesto == "003" && t.tipo_factor == "Cuota")
            .filter_map(|t| t.tasa_o_cuota)
            .map(|q| money(k.cantidad.0 * q.0, d))
            .sum();
        let zero = k
            .traslados
            .iter()
            .filter(|t| t.tipo_factor != "Cuota")
            .any(|t| t.impuesto != "002" || base + ieps_cuota <= Decimal::ZERO)
            || k.retenciones.iter().any(|r| r.tipo_factor != "Cuota");
        if zero {
            let (campo, detalle) = if k.descuento.is_some_and(|x| !x.0.is_zero()) {
                (
                    format!("conceptos[{i}].descuento"),
                    format!("el descuento {desc} deja el concepto en 0 (importe {imp})"),
                )
            } else {
                (
                    format!("conceptos[{i}].valor_unitario"),
                    format!("el importe del concepto resulta {imp}"),
                )
            };
            hallazgo(out, campo, detalle);
        }
    }
}

fn pago_moneda_xxx(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if c.venta.moneda.as_deref().is_some_and(|m| m != "XXX") {
        hallazgo(out, "moneda", "");
    }
}

fn pago_sin_condiciones(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if c.venta.condiciones_de_pago.is_some() {
        hallazgo(out, "condiciones_de_pago", "");
    }
}

fn pago_sin_tipo_cambio(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if c.venta.tipo_cambio.is_some() {
        hallazgo(out, "tipo_cambio", "");
    }
}

fn pago_sin_conceptos(c: &Contexto, out: &mut Vec<Hallazgo>) {
    if !c.venta.conceptos.is_empty() {
        hallazgo(out, "conceptos", "");
    }
}

fn pago_forma_real(c: &Contexto, out: &mut Vec<Hallazgo>) {
    for (i, p) in c.venta.pagos.iter().enumerate() {
        if p.forma_pago == "99" {
            hallazgo(out, format!("pagos[{i}].forma_pago"), "");
        }
    }
}

fn pago_moneda(c: &Contexto, out: &mut Vec<Hallazgo>) {
    for (i, p) in c.venta.pagos.iter().enumerate() {
        if p.moneda == "XXX" {
            hallazgo(out, format!("pagos[{i}].moneda"), "");
        }
    }
}

fn pago_tipo_cambio_requerido(c: &Contexto, out: &mut Vec<Hallazgo>) {
    for (i, p) in c.venta.pagos.iter().enumerate() {
        if p.moneda != "MXN" && p.moneda != "XXX" && p.tipo_cambio.is_none() {
            hallazgo(out, format!("pagos[{i}].tipo_cambio"), format!("la moneda es {}", p.moneda));
        }
    }
}

fn pago_mxn_tipo_cambio_1(c: &Contexto, out: &mut Vec<Hallazgo>) {
    for (i, p) in c.venta.pagos.iter().enumerate() {
        if p.moneda == "MXN" && p.tipo_cambio.is_some_and(|t| t.0 != Decimal::ONE) {
            hallazgo(out, format!("pagos[{i}].tipo_cambio"), "");
        }
    }
}

fn documentos_pagados<'a>(c: &Contexto<'a>) -> impl Iterator<Item = (String, &'a crate::sale::SalePago, &'a crate::sale::SaleDocumento)> {
    c.venta.pagos.iter().enumerate().flat_map(|(i, p)| {
        p.documentos
            .iter()
            .enumerate()
            .map(move |(j, d)| (format!("pagos[{i}].documentos[{j}]"), p, d))
    })
}

fn docto_equivalencia_requerida(c: &Contexto, out: &mut Vec<Hallazgo>) {
    for (f, p, d) in documentos_pagados(c) {
        if d.moneda != p.moneda && d.equivalencia.is_none() {
            hallazgo(
                out,
                format!("{f}.equivalencia"),
                format!("la factura está en {} y el pago en {}", d.moneda, p.moneda),
            );
        }
    }
}

fn docto_equivalencia_1(c: &Contexto, out: &mut Vec<Hallazgo>) {
    for (f, p, d) in documentos_pagados(c) {
        if d.moneda == p.moneda && d.equivalencia.is_some_and(|e| e.0 != Decimal::ONE) {
            hallazgo(out, format!("{f}.equivalencia"), "");
        }
    }
}

fn docto_saldo_insoluto(c: &Contexto, out: &mut Vec<Hallazgo>) {
    for (f, _, d) in documentos_pagados(c) {
        if d.importe_pagado.0 > d.saldo_anterior.0 && d.saldo_anterior.0 > Decimal::ZERO {
            hallazgo(
                out,
                format!("{f}.importe_pagado"),
                format!(
                    "el importe pagado {} excede el saldo anterior {}",
                    d.importe_pagado.0, d.saldo_anterior.0
                ),
            );
        }
    }
}

fn docto_objeto_02(c: &Contexto, out: &mut Vec<Hallazgo>) {
    for (f, _, d) in documentos_pagados(c) {
        if d.objeto_imp == "02" && d.traslados.is_empty() && d.retenciones.is_empty() {
            hallazgo(out, format!("{f}.objeto_imp"), "");
        }
    }
}

fn docto_objeto_sin_impuestos(c: &Contexto, out: &mut Vec<Hallazgo>) {
    for (f, _, d) in documentos_pagados(c) {
        if matches!(d.objeto_imp.as_str(), "01" | "03" | "04") && (!d.traslados.is_empty() || !d.retenciones.is_empty()) {
            hallazgo(out, format!("{f}.objeto_imp"), format!("ObjetoImpDR {}", d.objeto_imp));
        }
    }
}

/// The rules of the emisor alone (its profile is checked when saved in Ajustes).
pub fn verificar_emisor(emisor: &EmisorProfile) -> Vec<FieldError> {
    let mut out = Vec::new();
    for id in ["emisor-regimen-persona"] {
        if let Some(r) = regla(id) {
            if let Verificacion::Local(check) = r.verificacion {
                let venta = Sale {
                    sale_id: String::new(),
                    kind: SaleKind::Ingreso,
                    occurred_at: crate::sale::LocalDateTime(NaiveDateTime::default()),
                    serie: None,
                    folio: None,
                    forma_pago: None,
                    metodo_pago: None,
                    condiciones_de_pago: None,
                    moneda: None,
                    tipo_cambio: None,
                    exportacion: None,
                    confirmacion: None,
                    receptor: Default::default(),
                    conceptos: vec![],
                    relacionados: vec![],
                    informacion_global: None,
                    pagos: vec![],
                    ticket: false,
                };
                let ctx = Contexto {
                    venta: &venta,
                    emisor,
                    fecha: NaiveDateTime::default(),
                    referencias: &[],
                    confirmacion: None,
                };
                let mut hs = Vec::new();
                check(&ctx, &mut hs);
                out.extend(hs.iter().map(|h| r.error_de(h)));
            }
        }
    }
    out
}

/// The row a field error came from (its code and words), when a rule of the table refused it.
pub fn regla_de(e: &FieldError) -> Option<&'static Regla> {
    REGLAS
        .iter()
        .find(|r| matches!(r.verificacion, Verificacion::Local(_)) && r.error == e.code && e.message.starts_with(r.mensaje))
}
