//! The documents of a stamped invoice: its XML as stored, and its PDF representación impresa
//! (`pdf::render`), marked "SIN VALIDEZ FISCAL" when the emisor is SAT's test RFC. Used by the
//! API, the CLI (`timbra invoice xml|pdf`, `timbra export`) and the e-mail worker.

/// SAT's test emisor (its CSD ships with the tests and Modo sandbox): nothing it stamps is fiscal.
pub const SANDBOX_RFC: &str = "EKU9003173C9";

/// The emisor RFC a CFDI's XML names, if it can be read.
pub fn emisor_rfc(xml: &[u8]) -> Option<String> {
    let doc = cfdi::xml::Document::parse(xml).ok()?;
    cfdi::read::summary(&doc).ok().map(|s| s.rfc_emisor)
}

/// Whether the PDF of this CFDI carries the sandbox mark.
pub fn is_sandbox(xml: &[u8]) -> bool {
    emisor_rfc(xml).is_some_and(|r| r.eq_ignore_ascii_case(SANDBOX_RFC))
}

/// The PDF of a stamped CFDI (with the sandbox mark for [`SANDBOX_RFC`]).
pub fn render_pdf(xml: &[u8]) -> Result<Vec<u8>, pdf::PdfError> {
    pdf::render(xml, &pdf::RenderOptions { sandbox: is_sandbox(xml) })
}

/// [`render_pdf`] with the error as text (the e-mail worker's renderer).
pub fn render_pdf_text(xml: &[u8]) -> Result<Vec<u8>, String> {
    render_pdf(xml).map_err(|e| e.to_string())
}
