//! What the flavors' wire formats share: XML escaping, SOAP parameters and faults, XML
//! responses, and the `timeout_after_certify` hold.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use cfdi::xml::Document;

use crate::state::{AppState, ConnCtl};

/// Escapes text for XML (the one implementation, shared with `pac`).
pub use cfdi::escape::xml as esc;

/// The text of the first element named `local` in a SOAP request.
pub fn soap_param(doc: &Document, local: &str) -> Option<String> {
    fn find<'a>(e: &'a cfdi::xml::Element, local: &str) -> Option<&'a cfdi::xml::Element> {
        if e.local == local {
            return Some(e);
        }
        e.elements().find_map(|c| find(c, local))
    }
    find(&doc.root, local).map(|e| e.string_value().trim().to_string())
}

pub const NS_SOAP_ENV: &str = "http://schemas.xmlsoap.org/soap/envelope/";

/// A SOAP fault response.
pub fn soap_fault(code: &str, message: &str) -> Response {
    let body = format!(
        "<?xml version='1.0' encoding='UTF-8'?><soap11env:Envelope xmlns:soap11env=\"{NS_SOAP_ENV}\"><soap11env:Body><soap11env:Fault><faultcode>soap11env:{}</faultcode><faultstring>{}</faultstring><faultactor></faultactor></soap11env:Fault></soap11env:Body></soap11env:Envelope>",
        esc(code),
        esc(message)
    );
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        [(header::CONTENT_TYPE, "text/xml; charset=utf-8")],
        body,
    )
        .into_response()
}

pub fn xml_response(body: String) -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, "text/xml; charset=utf-8")], body).into_response()
}

/// `timeout_after_certify`: the CFDI exists, the answer never comes; the connection is reset
/// after the hold (or at shutdown).
pub async fn hold_then_abort(s: &AppState, ctl: Option<ConnCtl>) -> Response {
    tokio::select! {
        _ = tokio::time::sleep(s.hold) => {}
        _ = s.shutting_down() => {}
    }
    if let Some(c) = ctl {
        c.abort();
        std::future::pending::<()>().await;
    }
    (StatusCode::GATEWAY_TIMEOUT, "").into_response()
}
