//! The documents of a stamped invoice: its PDF representación impresa (`pdf::render`), with
//! the emisor's logo when one is set (Ajustes › Emisor): every channel renders with it
//! ([`render_pdf_with`]), so the same CFDI gets the same PDF everywhere.
//!
//! **The one sandbox rule**: a PDF carries the mark "SIN VALIDEZ FISCAL" exactly when the
//! emisor RFC its XML names is SAT's test RFC [`SANDBOX_RFC`]. The document decides, not the
//! shell: the same CFDI gets the same PDF from `timbra invoice pdf`, the export, the month's
//! ZIP, the app, the API and the e-mail worker, whatever mode the app is in when it is asked
//! (a flag or a mode could mark a real invoice or leave a test one unmarked).

use outbox::model::InvoiceRef;
use outbox::Outbox;

use crate::ServiceError;

/// SAT's test emisor (its CSD ships with the tests and Modo sandbox): nothing it stamps is fiscal.
pub const SANDBOX_RFC: &str = "EKU9003173C9";

/// The emisor RFC a CFDI's XML names, if it can be read.
pub fn emisor_rfc(xml: &[u8]) -> Option<String> {
    let doc = cfdi::xml::Document::parse(xml).ok()?;
    cfdi::read::summary(&doc).ok().map(|s| s.rfc_emisor)
}

/// Whether the PDF of this CFDI carries the sandbox mark (the rule above).
pub fn is_sandbox(xml: &[u8]) -> bool {
    emisor_rfc(xml).is_some_and(|r| r.trim().eq_ignore_ascii_case(SANDBOX_RFC))
}

/// The options every PDF of this CFDI is rendered with (no logo).
pub fn render_options(xml: &[u8]) -> pdf::RenderOptions {
    pdf::RenderOptions {
        sandbox: is_sandbox(xml),
        logo: None,
    }
}

/// The emisor's logo as the PDF takes it (Ajustes › Emisor), if one is set and reads.
pub async fn emisor_logo(outbox: &Outbox) -> Result<Option<pdf::Logo>, ServiceError> {
    Ok(outbox.emisor_logo().await?.and_then(|l| pdf::Logo::new(l.bytes)))
}

/// The PDF of a stamped CFDI (with the sandbox mark for [`SANDBOX_RFC`]).
pub fn render_pdf(xml: &[u8]) -> Result<Vec<u8>, pdf::PdfError> {
    pdf::render(xml, &render_options(xml))
}

/// [`render_pdf`] with the emisor's logo file (when one is set) and the error as text (the
/// e-mail worker's renderer).
pub fn render_pdf_text(xml: &[u8], logo: Option<&[u8]>) -> Result<Vec<u8>, String> {
    render_pdf_with(xml, logo.and_then(|l| pdf::Logo::new(l.to_vec()))).map_err(|e| e.to_string())
}

/// [`render_pdf`] with the emisor's logo.
pub fn render_pdf_with(xml: &[u8], logo: Option<pdf::Logo>) -> Result<Vec<u8>, pdf::PdfError> {
    pdf::render(
        xml,
        &pdf::RenderOptions {
            logo,
            ..render_options(xml)
        },
    )
}

/// [`render_pdf`] with the failure naming the CFDI.
pub fn pdf_of(uuid: &str, xml: &[u8]) -> Result<Vec<u8>, ServiceError> {
    render_pdf(xml).map_err(|e| ServiceError::Pdf {
        uuid: uuid.to_string(),
        message: e.to_string(),
    })
}

/// The stamped XML of an invoice: `(UUID, XML)` (refused until it is stamped).
pub async fn invoice_xml(outbox: &Outbox, invoice: &InvoiceRef) -> Result<(String, Vec<u8>), ServiceError> {
    Ok(outbox.stamped_xml(invoice).await?)
}

/// The PDF of an invoice's stamped CFDI, with the emisor's logo: `(UUID, PDF)`.
pub async fn invoice_pdf(outbox: &Outbox, invoice: &InvoiceRef) -> Result<(String, Vec<u8>), ServiceError> {
    let (uuid, xml) = outbox.stamped_xml(invoice).await?;
    let pdf = render_pdf_with(&xml, emisor_logo(outbox).await?).map_err(|e| ServiceError::Pdf {
        uuid: uuid.clone(),
        message: e.to_string(),
    })?;
    Ok((uuid, pdf))
}

/// The size a logo file would print at, or None when the PDF renderer cannot read it.
pub fn logo_size(bytes: &[u8]) -> Option<(f32, f32)> {
    pdf::Logo::new(bytes.to_vec())?.size()
}
