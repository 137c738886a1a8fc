//! The QR code of the expresión impresa (SAT's verification URL), as a module matrix.
//!
//! Owns the encoding only (the `qrcode` crate, error-correction level M); the matrix is drawn
//! as vector squares by [`crate::emit`], so it stays sharp at any zoom or print resolution.

use qrcode::{EcLevel, QrCode};

use crate::layout::QrMatrix;
use crate::PdfError;

/// Encodes `text`; fails when it is too long for the largest QR version.
pub fn matrix(text: &str) -> Result<QrMatrix, PdfError> {
    let code = QrCode::with_error_correction_level(text.as_bytes(), EcLevel::M).map_err(|_| PdfError::QrTooLong(text.len()))?;
    let width = code.width();
    let dark = code.to_colors().into_iter().map(|c| c == qrcode::Color::Dark).collect();
    Ok(QrMatrix { width, dark })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verification_url_fits_and_an_absurd_one_is_refused() {
        let url = "https://verificacfdi.facturaelectronica.sat.gob.mx/default.aspx?id=5803EB8D-81CD-4557-8719-26632D2FA434&re=EKU9003173C9&rr=URE180429TM6&tt=1160.0&fe=rH8%2Fbw%3D%3D";
        let m = matrix(url).expect("fits");
        assert_eq!(m.dark.len(), m.width * m.width);
        assert!(matches!(matrix(&"x".repeat(5000)), Err(PdfError::QrTooLong(5000))));
    }
}
