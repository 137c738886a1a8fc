//! The PDF **representación impresa** of a stamped CFDI 4.0.
//!
//! [`render`] takes the XML bytes of a CFDI 4.0 with its TimbreFiscalDigital 1.1 and returns
//! the bytes of a US Letter PDF in Spanish: emisor and receptor with their SAT descriptions,
//! the conceptos table (paginated, header repeated), totals and the amount in words, CFDI
//! relacionados, the Pagos 2.0 complement, and the stamp block (QR with the expresión
//! impresa, certificates, sellos and the cadena original del complemento de certificación
//! digital del SAT), "Página N de M" and SAT's legend on every page.
//!
//! **Architecture invariant:** pure. Bytes in, bytes out: no IO, no clock, no async, no
//! external programs; the fonts are compiled in. The same XML and options always give the
//! same PDF. Any input gives a PDF or a [`PdfError`] that names what is wrong, never a panic.
//!
//! Modules, in the order a document passes through them:
//!
//! * [`invoice`] — is the XML a stamped CFDI 4.0, and what does it say (values as written);
//! * [`format`] — amounts, rates and catalog codes as printed; [`words`] — the amount in words;
//! * [`sections`] — what goes where: every section of the invoice as flows of pieces;
//! * [`text`] — the embedded fonts, measuring and wrapping; [`qr`] — the QR code;
//! * [`layout`] — page geometry and the paginator (nothing overlaps, nothing is cut);
//! * [`emit`] — the pages as PDF.
//!
//! # Why krilla
//!
//! PDF writing uses [`krilla`] (MIT/Apache-2.0), the high-level layer the Typst project built
//! on its own `pdf-writer` and `subsetter` crates and maintains with them. It embeds TrueType
//! fonts **subsetted** (a 3-face document carries only the glyphs it uses, so a typical
//! invoice is tens of kilobytes, not the 1.8 MB of the three faces) as CID fonts with a
//! ToUnicode map, so `pdftotext`, search and copy-paste give back the Spanish text exactly;
//! it takes glyph ids with their text ranges, so our own measured layout is what is drawn; and
//! it does vector paths, opacity and transforms for the QR and the sandbox mark. `printpdf`
//! would also work but is a larger API surface in flux between major versions; raw
//! `pdf-writer` would leave font embedding, subsetting and ToUnicode maps to us. krilla is used
//! without default features (no image decoders, no text shaper: Spanish needs none).
//!
//! # Fonts
//!
//! DejaVu Sans, DejaVu Sans Bold and DejaVu Sans Mono (Bitstream Vera license), copied from
//! Debian's `fonts-dejavu-core`; see `fonts/README.md` for their source and checksums.

pub mod emit;
pub mod format;
pub mod invoice;
pub mod layout;
pub mod qr;
pub mod sections;
pub mod text;
pub mod words;

use std::sync::Arc;

pub use words::importe_con_letra;

/// How to render.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// A document from the sandbox (test CSD, simulated PAC): every page carries a large
    /// "SIN VALIDEZ FISCAL" mark.
    pub sandbox: bool,
    /// The emisor's logo, at the top left of the first page.
    pub logo: Option<Logo>,
}

/// The largest box the logo is fitted into (its proportions kept), in points.
pub const LOGO_BOX: (f32, f32) = (160.0, 56.0);

/// The emisor's logo: a PNG or a JPEG file as it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logo {
    bytes: Vec<u8>,
}

impl Logo {
    /// A logo from a file's bytes; None unless it is a PNG or a JPEG whose header reads (the
    /// picture itself is decoded when the PDF is written; a logo that does not decode is left
    /// off, see [`render`]).
    pub fn new(bytes: Vec<u8>) -> Option<Logo> {
        let logo = Logo { bytes };
        logo.image().map(|_| logo)
    }

    pub(crate) fn image(&self) -> Option<krilla::image::Image> {
        let data = krilla::Data::from(self.bytes.clone());
        if self.bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            krilla::image::Image::from_png(data, true).ok()
        } else if self.bytes.starts_with(&[0xFF, 0xD8]) {
            krilla::image::Image::from_jpeg(data, true).ok()
        } else {
            None
        }
    }

    /// Its size on the page: fitted into [`LOGO_BOX`], proportions kept.
    pub fn size(&self) -> Option<(f32, f32)> {
        let (w, h) = self.image()?.size();
        if w == 0 || h == 0 {
            return None;
        }
        let scale = (LOGO_BOX.0 / w as f32).min(LOGO_BOX.1 / h as f32);
        Some((w as f32 * scale, h as f32 * scale))
    }
}

/// Why a document could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PdfError {
    #[error("no se puede leer el XML: {0}")]
    Xml(#[from] cfdi::xml::XmlError),
    #[error("el documento no es un CFDI 4.0 que se pueda imprimir: {0}")]
    NotCfdi(#[source] cfdi::read::ReadError),
    #[error(
        "el CFDI no está timbrado: le falta el TimbreFiscalDigital (el folio fiscal que asigna el PAC); \
         solo se imprime un CFDI timbrado"
    )]
    NotStamped,
    #[error("el TimbreFiscalDigital es versión {0:?}; solo se imprime la versión 1.1")]
    TfdVersion(String),
    #[error("al CFDI le falta {0}")]
    Missing(&'static str),
    #[error("no se pudo calcular la cadena original del complemento de certificación digital del SAT: {0}")]
    CadenaTfd(#[source] cfdi::cadena::CadenaError),
    #[error("la expresión impresa ({0} bytes) no cabe en un código QR; revise los RFC y el UUID del CFDI")]
    QrTooLong(usize),
    #[error("no se pudo cargar la fuente incrustada {0}")]
    Font(&'static str),
    #[error("no se pudo escribir el PDF: {0}")]
    Pdf(String),
}

/// Renders a stamped CFDI 4.0 (UTF-8 XML) as its PDF representación impresa. A logo whose
/// picture does not decode is left off (the PDF is rendered again without it): a logo is never
/// the reason an invoice has no PDF.
pub fn render(xml: &[u8], opts: &RenderOptions) -> Result<Vec<u8>, PdfError> {
    match render_with(xml, opts.sandbox, opts.logo.as_ref()) {
        Err(PdfError::Pdf(_)) if opts.logo.is_some() => render_with(xml, opts.sandbox, None),
        r => r,
    }
}

fn render_with(xml: &[u8], sandbox: bool, logo: Option<&Logo>) -> Result<Vec<u8>, PdfError> {
    let doc = cfdi::xml::Document::parse(xml)?;
    let invoice = invoice::Invoice::read(&doc)?;
    let qr = Arc::new(qr::matrix(&invoice.expresion_impresa)?);
    let fonts = text::Fonts::load()?;
    let logo = logo.and_then(|l| l.size().map(|size| (Arc::new(l.clone()), size)));
    let (flows, running) = sections::build(&fonts, &invoice, qr, logo);
    let mut pages = layout::paginate(&flows, &running);
    sections::frame(&fonts, &mut pages, sandbox);
    let mut title = invoice.title().to_string();
    if let Some(sf) = invoice.serie_folio() {
        title.push(' ');
        title.push_str(&sf);
    }
    title.push_str(" — ");
    title.push_str(&invoice.tfd.uuid);
    emit::pdf(&pages, &fonts, &title)
}
