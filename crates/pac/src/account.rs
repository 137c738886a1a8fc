//! *Probar conexión*: what a PAC says about the account Timbra is configured with, before the
//! first real sale is sent — the credentials are accepted, the account is the emisor's RFC, and
//! the CSD is where that PAC keeps it. The adapters (`timbra-pac-clients`) ask; this module is
//! the vocabulary of the answer: one [`AccountCheck`] per step, each a code the shells put in
//! words ([`CheckCode::words`] for the CLI, `ui/src/lib/pacCheck.ts` for the app).
//!
//! Where a PAC offers no way to check a step, the answer says so ([`CheckCode::RfcSinConsulta`],
//! [`CheckCode::CsdNoRequerido`]) rather than pretending it passed.

use serde::{Deserialize, Serialize};

/// The three steps of a connection test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum CheckStep {
    /// The PAC accepts the user and password, or the key.
    Credenciales,
    /// The account is the emisor's RFC.
    Rfc,
    /// The CSD is registered where the PAC keeps it.
    Csd,
}

/// What one step found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum CheckCode {
    /// The PAC accepted the credentials.
    CredencialesAceptadas,
    /// The PAC refused the user, password or key.
    CredencialesRechazadas,
    /// No connection to the PAC (address, network, TLS).
    SinConexion,
    /// The PAC answered something Timbra cannot read, or nothing in time.
    RespuestaInesperada,
    /// The account is the emisor's RFC (or the emisor's RFC is registered in it).
    RfcCoincide,
    /// The account belongs to another RFC (`found` names it).
    RfcDistinto,
    /// The emisor's RFC is not registered in the account.
    RfcNoRegistrado,
    /// The emisor's RFC is registered but suspended in the account.
    RfcSuspendido,
    /// This PAC offers no query of the account's RFC.
    RfcSinConsulta,
    /// The PAC holds the emisor's CSD (the same certificate number).
    CsdRegistrado,
    /// The PAC holds no CSD for the account.
    CsdFaltante,
    /// The PAC holds another certificate than the one in Ajustes (`found` names it).
    CsdDistinto,
    /// The PAC receives the XML already sealed by Timbra: it needs no CSD of its own to stamp.
    CsdNoRequerido,
    /// Not checked: an earlier step failed.
    NoComprobado,
}

impl CheckCode {
    /// Whether the step failed (the account is not ready to stamp).
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            CheckCode::CredencialesRechazadas
                | CheckCode::SinConexion
                | CheckCode::RespuestaInesperada
                | CheckCode::RfcDistinto
                | CheckCode::RfcNoRegistrado
                | CheckCode::RfcSuspendido
                | CheckCode::CsdFaltante
                | CheckCode::CsdDistinto
        )
    }

    /// The finding and, for a failure, the fix, in Spanish (the CLI prints these; the app has
    /// its own words from the code).
    pub fn words(self) -> &'static str {
        match self {
            CheckCode::CredencialesAceptadas => "el PAC aceptó las credenciales",
            CheckCode::CredencialesRechazadas => {
                "el PAC rechazó el usuario, la contraseña o la llave: cópielos de nuevo del portal del PAC (del ambiente elegido: pruebas o producción) y guárdelos"
            }
            CheckCode::SinConexion => {
                "no hubo conexión con el PAC: revise la conexión a internet y la URL del PAC (déjela vacía para usar la del ambiente)"
            }
            CheckCode::RespuestaInesperada => {
                "el PAC contestó algo que Timbra no entiende o no contestó a tiempo: intente de nuevo en unos minutos; si sigue, revise la URL del PAC"
            }
            CheckCode::RfcCoincide => "la cuenta del PAC es del RFC del emisor",
            CheckCode::RfcDistinto => {
                "la cuenta del PAC es de otro RFC: use la llave o el usuario de la cuenta del emisor, o corrija el RFC del emisor en Ajustes"
            }
            CheckCode::RfcNoRegistrado => {
                "el RFC del emisor no está dado de alta en la cuenta del PAC: agréguelo como cliente en el portal del PAC"
            }
            CheckCode::RfcSuspendido => "el RFC del emisor está suspendido en la cuenta del PAC: actívelo en el portal del PAC",
            CheckCode::RfcSinConsulta => {
                "este PAC no permite consultar el RFC de la cuenta: el primer timbrado lo confirmará"
            }
            CheckCode::CsdRegistrado => "el PAC tiene el CSD del emisor",
            CheckCode::CsdFaltante => {
                "el PAC no tiene el CSD del emisor: súbalo (.cer, .key y contraseña) en el portal del PAC"
            }
            CheckCode::CsdDistinto => {
                "el PAC tiene otro certificado que el de Ajustes: suba al portal del PAC el mismo CSD que usa Timbra"
            }
            CheckCode::CsdNoRequerido => "Timbra sella el XML con el CSD de Ajustes: este PAC no necesita tenerlo",
            CheckCode::NoComprobado => "no se comprobó: falló un paso anterior",
        }
    }
}

/// One step's finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct AccountCheck {
    pub step: CheckStep,
    pub code: CheckCode,
    /// What the PAC holds where it differs (the account's RFC, the certificate number).
    pub found: Option<String>,
}

impl AccountCheck {
    pub fn new(step: CheckStep, code: CheckCode) -> AccountCheck {
        AccountCheck { step, code, found: None }
    }

    pub fn found(step: CheckStep, code: CheckCode, found: impl Into<String>) -> AccountCheck {
        AccountCheck {
            step,
            code,
            found: Some(found.into()),
        }
    }
}

/// What the account should be: the emisor configured in Timbra.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub rfc: String,
    /// The NoCertificado of the CSD in Ajustes.
    pub no_certificado: String,
}

/// A connection test's answer: the three steps, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ConnectionReport {
    /// The configured PAC's name (`sw-pruebas`, `sandbox`, …).
    pub name: String,
    pub pac: crate::PacKind,
    pub checks: Vec<AccountCheck>,
}

impl ConnectionReport {
    /// Whether every step passed or could not be checked by this PAC.
    pub fn ready(&self) -> bool {
        !self.checks.iter().any(|c| c.code.is_failure())
    }

    /// The report when the credentials step failed: the others are not checked.
    pub fn stopped(name: &str, pac: crate::PacKind, credentials: CheckCode) -> ConnectionReport {
        ConnectionReport {
            name: name.to_string(),
            pac,
            checks: vec![
                AccountCheck::new(CheckStep::Credenciales, credentials),
                AccountCheck::new(CheckStep::Rfc, CheckCode::NoComprobado),
                AccountCheck::new(CheckStep::Csd, CheckCode::NoComprobado),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failure_says_what_to_do() {
        use CheckCode::*;
        let all = [
            CredencialesAceptadas,
            CredencialesRechazadas,
            SinConexion,
            RespuestaInesperada,
            RfcCoincide,
            RfcDistinto,
            RfcNoRegistrado,
            RfcSuspendido,
            RfcSinConsulta,
            CsdRegistrado,
            CsdFaltante,
            CsdDistinto,
            CsdNoRequerido,
            NoComprobado,
        ];
        for c in all {
            if c.is_failure() {
                assert!(c.words().contains(':'), "{c:?}: the fix follows a colon: {}", c.words());
            }
        }
        let r = ConnectionReport::stopped("sw-pruebas", crate::PacKind::Sw, CredencialesRechazadas);
        assert!(!r.ready());
        assert_eq!(
            serde_json::to_value(&r.checks[0]).unwrap(),
            serde_json::json!({"step": "credenciales", "code": "credenciales_rechazadas", "found": null})
        );
    }
}
