//! The PAC adapters that speak HTTP: SW Sapién ([`sw`], REST), Finkok ([`finkok`], SOAP),
//! Facturapi ([`facturapi`], JSON) and SAT's ConsultaCFDIService ([`sat`]), over one reqwest
//! client ([`http`]), and [`HttpConnector`], the [`pac::connect::PacConnector`] the shells hand
//! to the outbox. [`account`] answers *Probar conexión* (the account's credentials, RFC and CSD).
//! [`descarga`] speaks SAT's *Descarga Masiva* (the CFDI SAT holds, with the e.firma).
//!
//! **Architecture invariant:** this crate (with `pac-sim`, and the intake API) is the only one
//! that speaks HTTP. Base URLs, credentials and timeouts are configuration; the only real host
//! names are in `pac`'s presets data file.
//!
//! **The rule this crate exists for:** every answer — and every non-answer — becomes exactly
//! one outcome. A failure *before the request was written* (connect refused, DNS, TLS, connect
//! timeout) is `NotSent`; anything after the first byte may have left is `Unknown`, never "not
//! created". See [`http`] for where that line is drawn.

pub mod account;
pub mod descarga;
pub mod facturapi;
pub mod finkok;
pub mod http;
pub mod sat;
pub mod soap;
pub mod sw;

use std::sync::Arc;

use pac::connect::{ConnectError, Credential, PacConnector, PacSpec};
use pac::presets::Preset;
use pac::{Clock, PacClient, PacKind};

/// Builds the HTTP adapters from specs.
#[derive(Debug, Clone, Copy, Default)]
pub struct HttpConnector;

fn setup(e: http::HttpSetupError) -> ConnectError {
    ConnectError(e.to_string())
}

impl pac::connect::SatStatusConnector for HttpConnector {
    fn consulta<'a>(
        &'a self,
        url: &'a str,
        timeouts: pac::connect::Timeouts,
        query: &'a pac::StatusQuery,
    ) -> pac::BoxFuture<'a, pac::Reply<pac::StatusOutcome>> {
        Box::pin(async move {
            let config = sat::SatConfig {
                url: url.to_string(),
                timeouts,
            };
            match sat::SatClient::new(config) {
                Ok(client) => client.consulta(query).await,
                Err(e) => pac::Reply {
                    outcome: pac::StatusOutcome::NotSent { cause: e.to_string() },
                    evidence: pac::Evidence::default(),
                },
            }
        })
    }
}

impl PacConnector for HttpConnector {
    fn connect(&self, spec: &PacSpec, clock: Arc<dyn Clock>) -> Result<Arc<dyn PacClient>, ConnectError> {
        match spec.flavor {
            PacKind::Sw => {
                let auth = match &spec.credential {
                    Credential::Token(t) => sw::SwAuth::Token(t.clone()),
                    Credential::UserPassword { user, password } => sw::SwAuth::UserPassword {
                        user: user.clone(),
                        password: password.clone(),
                    },
                };
                let mut cfg = sw::SwConfig::new(&spec.services_url, &spec.storage_url, &spec.sat_status_url, auth);
                if let Some(p) = &spec.stamp_path {
                    cfg.stamp_path = p.clone();
                }
                cfg.timeouts = spec.timeouts;
                Ok(Arc::new(sw::SwClient::with_clock(cfg, clock).map_err(setup)?))
            }
            PacKind::Finkok => {
                let Credential::UserPassword { user, password } = &spec.credential else {
                    return Err(ConnectError("Finkok necesita usuario y contraseña".into()));
                };
                let mut cfg = finkok::FinkokConfig::new(
                    &spec.services_url,
                    user,
                    password.clone(),
                    spec.taxpayer_id.clone().unwrap_or_default(),
                );
                if let Some(p) = &spec.stamp_path {
                    cfg.stamp_path = p.clone();
                }
                if let Some(p) = &spec.cancel_path {
                    cfg.cancel_path = p.clone();
                }
                if let Some(p) = &spec.utilities_path {
                    cfg.utilities_path = p.clone();
                }
                cfg.timeouts = spec.timeouts;
                Ok(Arc::new(finkok::FinkokClient::with_clock(cfg, clock).map_err(setup)?))
            }
            PacKind::Facturapi => {
                let key = match &spec.credential {
                    Credential::Token(t) => t.clone(),
                    Credential::UserPassword { password, .. } => password.clone(),
                };
                let cfg = facturapi::FacturapiConfig {
                    url: spec.services_url.clone(),
                    key,
                    sat_url: spec.sat_status_url.clone(),
                    timeouts: spec.timeouts,
                };
                Ok(Arc::new(facturapi::FacturapiClient::with_clock(cfg, clock).map_err(setup)?))
            }
        }
    }
}

/// A spec for a preset with a credential (defaults for everything the preset does not say).
pub fn spec_from_preset(p: &Preset, credential: Credential, taxpayer_id: Option<String>) -> PacSpec {
    PacSpec {
        flavor: p.flavor,
        services_url: p.services_url.clone(),
        storage_url: p.api_url.clone().unwrap_or_else(|| p.services_url.clone()),
        sat_status_url: p.sat_status_url.clone(),
        stamp_path: Some(p.stamp_path.clone()),
        cancel_path: p.cancel_path.clone(),
        utilities_path: p.utilities_path.clone(),
        credential,
        taxpayer_id,
        timeouts: http::Timeouts::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pac::{Attempt, StampOutcome};

    #[test]
    fn adapters_are_usable_as_dyn_pac_client() {
        let sw = sw::SwClient::new(sw::SwConfig::new(
            "http://127.0.0.1:1",
            "http://127.0.0.1:1",
            "http://127.0.0.1:1/s",
            sw::SwAuth::Token(cfdi::secret::Secret::new("t")),
        ))
        .unwrap();
        let fk = finkok::FinkokClient::new(finkok::FinkokConfig::new(
            "http://127.0.0.1:1",
            "u",
            cfdi::secret::Secret::new("p"),
            "EKU9003173C9",
        ))
        .unwrap();
        let fa = facturapi::FacturapiClient::new(facturapi::FacturapiConfig {
            url: "http://127.0.0.1:1".into(),
            key: cfdi::secret::Secret::new("sk"),
            sat_url: "http://127.0.0.1:1/s".into(),
            timeouts: http::Timeouts::default(),
        })
        .unwrap();
        let all: Vec<Box<dyn PacClient>> = vec![Box::new(sw), Box::new(fk), Box::new(fa)];
        assert_eq!(
            all.iter().map(|c| c.kind().as_str()).collect::<Vec<_>>(),
            ["sw", "finkok", "facturapi"]
        );
    }

    #[tokio::test]
    async fn facturapi_refuses_to_send_a_body_whose_key_is_not_the_attempts() {
        let fa = facturapi::FacturapiClient::new(facturapi::FacturapiConfig {
            url: "http://127.0.0.1:1".into(),
            key: cfdi::secret::Secret::new("sk"),
            sat_url: "http://127.0.0.1:1/s".into(),
            timeouts: http::Timeouts::default(),
        })
        .unwrap();
        let a = Attempt {
            body: br#"{"idempotency_key":"a"}"#.to_vec(),
            idempotency_key: "b".into(),
            external_id: None,
        };
        let r = fa.stamp(&a).await;
        assert!(matches!(r.outcome, StampOutcome::NotSent { .. }), "{:?}", r.outcome);
        assert!(r.evidence.exchanges.is_empty(), "nothing was sent");
    }
}
