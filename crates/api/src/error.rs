//! The API's one error shape and its HTTP statuses: `{"error": code, "message": Spanish text,
//! "fields": [{field, code, message}], "retryAfterSeconds"?}`. Bad input is always 4xx; 5xx only
//! when the server itself cannot work (database, CSD, configuration).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use cfdi::validation::FieldError;
use outbox::{ErrorCode, OutboxError};
use serde_json::json;

/// An error answer.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub fields: Vec<FieldError>,
    pub retry_after_seconds: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            fields: vec![],
            retry_after_seconds: None,
        }
    }

    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }
}

impl From<OutboxError> for ApiError {
    fn from(e: OutboxError) -> ApiError {
        let code = e.code();
        let message = e.to_string();
        let status = status_for(e.error_code());
        let mut err = ApiError::new(status, code, message);
        match e {
            OutboxError::Invalid(v) => err.fields = v.0,
            OutboxError::InProgress { retry_after, .. } => err.retry_after_seconds = Some(retry_after.as_secs().max(1)),
            OutboxError::DatabaseLocked { .. } => err.retry_after_seconds = Some(1),
            _ => {}
        }
        err
    }
}

/// The HTTP status of every outbox error code, from the outbox's error table (listed with the
/// CLI's exit codes in `docs/errors.md`, which a test compares with it): bad input 4xx, 5xx only when the server
/// itself cannot work.
pub fn status_for(code: ErrorCode) -> StatusCode {
    StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

impl ApiError {
    /// The JSON body of this error (also each failed item of a batch).
    pub fn body(&self) -> serde_json::Value {
        let mut body = json!({"error": self.code, "message": self.message, "fields": self.fields});
        if let Some(s) = self.retry_after_seconds {
            body["retryAfterSeconds"] = json!(s);
        }
        body
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.body();
        let mut resp = (self.status, axum::Json(body)).into_response();
        if let Some(s) = self.retry_after_seconds {
            if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        if self.status == StatusCode::UNAUTHORIZED && self.code == "unauthorized" {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"timbra\""));
        }
        resp
    }
}
