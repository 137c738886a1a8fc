//! The fault and behaviour schedule of the simulator, parsed from `key=value,…` text.
//!
//! The same text is accepted by `--faults` and by `POST /_sim/faults` (which applies the keys
//! on top of the current schedule; start the text with `clear` to start from the defaults).
//! Probabilities are in 0..1 and are drawn per request (per connection for `refuse`).
//!
//! | key | meaning | default |
//! | --- | --- | --- |
//! | `latency_ms=A..B` (or `=N`) | delay before handling each PAC request | `0` |
//! | `refuse=p` | drop a new connection with a TCP reset before reading anything | `0` |
//! | `reset=p` | read the request, then reset the connection without handling it | `0` |
//! | `http500=p` | answer 500 without handling the request | `0` |
//! | `timeout_after_certify=p` | stamp (the CFDI exists), then never answer | `0` |
//! | `slow_body=p`, `slow_body_ms=N` | dribble the response body over N ms | `0`, `2000` |
//! | `down=0/1`, `down_ms=N` | outage: the PAC port refuses connections (for N ms, or until `down=0`) | `0` |
//! | `pending=p`, `pending_ms=N` | Facturapi: answer `202 pending`; the invoice turns `valid` N ms later | `0`, `2000` |
//! | `no_xml_307=p` | Finkok: a 307 comes without XML/UUID | `0.5` |
//! | `stamped_lag_ms=N` | Finkok: `stamped` answers 603 for N ms after a stamp | `4000` |
//! | `sat_lag_ms=N` | SAT: N-602 and cancel 205 for N ms after a stamp | `0` |
//! | `sw_307_status=N` | SW: HTTP status of 307/CFDI3307 answers (UNVERIFIED) | `400` |
//! | `acceptance_hours=N` | receptor's window before tacit acceptance | `72` |
//! | `validate_before_dedup=0/1` | validate (Sello, Fecha pattern, the 72-hour window: 302/401…) *before* looking for a previous stamp of the same cadena or key, so resuming an attempt stamped more than 72 h ago answers 401 although the CFDI exists; `0` looks for the previous stamp first (307 / CFDI3307) | `0` |
//! | `lowercase_uuid=p` | a new CFDI gets its UUID in lowercase: in the TFD (signed as issued) and in every JSON/SOAP field that names it | `0` |
//! | `foreign_cfdi=p` | an "already stamped" answer (SW 307/CFDI3307, Finkok 307, Facturapi's answer to a used `idempotency_key`) carries *another* CFDI of the ledger, whose TFD `SelloCFD` is not the sent document's Sello (no-op while the ledger holds no other CFDI) | `0` |
//! | `sat_repeat_limit=N` | SAT *Descarga Masiva*: accepted requests with the same parameters before 5002 | `2` |
//! | `sat_max=N` | SAT: the most CFDI (or metadata rows) one request returns; above it 5003 | `200000` |
//! | `sat_stuck=0/1` | SAT: every request stays *en proceso* (EstadoSolicitud 2) | `0` |
//! | `sat_expired=0/1` | SAT: every finished request is *vencida* (EstadoSolicitud 6) | `0` |
//! | `sat_http=N` | SAT: every *Descarga Masiva* route answers HTTP N (404, 500, 503…); `0` off | `0` |
//! | `sat_token_s=N` | SAT: lifetime of a token in seconds | `300` |
//! | `sat_token_expired=0/1` | SAT: every token is refused as expired (HTTP 401) | `0` |
//! | `seed=N` | seed of the random draws | random |
//!
//! Lags and windows are measured on the simulator's clock, so advancing it skips them.

use std::fmt;

/// The schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Faults {
    pub latency_ms: (u64, u64),
    pub refuse: f64,
    pub reset: f64,
    pub http500: f64,
    pub timeout_after_certify: f64,
    pub slow_body: f64,
    pub slow_body_ms: u64,
    pub down: bool,
    pub down_ms: Option<u64>,
    pub pending: f64,
    pub pending_ms: u64,
    pub no_xml_307: f64,
    pub stamped_lag_ms: u64,
    pub sat_lag_ms: u64,
    pub sw_307_status: u16,
    pub acceptance_hours: u64,
    pub validate_before_dedup: bool,
    pub lowercase_uuid: f64,
    pub foreign_cfdi: f64,
    pub sat_repeat_limit: u64,
    pub sat_max: u64,
    pub sat_stuck: bool,
    pub sat_expired: bool,
    pub sat_http: u16,
    pub sat_token_s: u64,
    pub sat_token_expired: bool,
    pub seed: Option<u64>,
}

impl Default for Faults {
    fn default() -> Faults {
        Faults {
            latency_ms: (0, 0),
            refuse: 0.0,
            reset: 0.0,
            http500: 0.0,
            timeout_after_certify: 0.0,
            slow_body: 0.0,
            slow_body_ms: 2000,
            down: false,
            down_ms: None,
            pending: 0.0,
            pending_ms: 2000,
            no_xml_307: 0.5,
            stamped_lag_ms: 4000,
            sat_lag_ms: 0,
            sw_307_status: 400,
            acceptance_hours: 72,
            validate_before_dedup: false,
            lowercase_uuid: 0.0,
            foreign_cfdi: 0.0,
            sat_repeat_limit: 2,
            sat_max: 200_000,
            sat_stuck: false,
            sat_expired: false,
            sat_http: 0,
            sat_token_s: 300,
            sat_token_expired: false,
            seed: None,
        }
    }
}

/// Why a fault text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultsError {
    #[error("falla desconocida {0:?}")]
    UnknownKey(String),
    #[error("{key}: valor inválido {value:?} ({reason})")]
    BadValue { key: String, value: String, reason: &'static str },
}

fn prob(key: &str, v: &str) -> Result<f64, FaultsError> {
    let p: f64 = v.trim().parse().map_err(|_| FaultsError::BadValue {
        key: key.into(),
        value: v.into(),
        reason: "se esperaba un número",
    })?;
    if !(0.0..=1.0).contains(&p) {
        return Err(FaultsError::BadValue {
            key: key.into(),
            value: v.into(),
            reason: "la probabilidad va de 0 a 1",
        });
    }
    Ok(p)
}

fn flag(key: &str, v: &str) -> Result<bool, FaultsError> {
    match v.trim() {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        _ => Err(FaultsError::BadValue {
            key: key.into(),
            value: v.into(),
            reason: "se esperaba 0 o 1",
        }),
    }
}

fn int(key: &str, v: &str) -> Result<u64, FaultsError> {
    v.trim().parse().map_err(|_| FaultsError::BadValue {
        key: key.into(),
        value: v.into(),
        reason: "se esperaba un entero",
    })
}

impl Faults {
    /// Parses `text` on top of the defaults.
    pub fn parse(text: &str) -> Result<Faults, FaultsError> {
        Faults::default().apply(text)
    }

    /// Applies `text` on top of `self`; a leading `clear` starts from the defaults.
    pub fn apply(&self, text: &str) -> Result<Faults, FaultsError> {
        let mut f = self.clone();
        for item in text.split([',', '\n', '&']).map(str::trim).filter(|s| !s.is_empty()) {
            if item == "clear" {
                f = Faults::default();
                continue;
            }
            let (key, value) = item.split_once('=').ok_or_else(|| FaultsError::BadValue {
                key: item.into(),
                value: String::new(),
                reason: "se esperaba clave=valor",
            })?;
            let key = key.trim();
            match key {
                "latency_ms" => {
                    f.latency_ms = match value.split_once("..") {
                        Some((a, b)) => {
                            let (a, b) = (int(key, a)?, int(key, b)?);
                            if a > b {
                                return Err(FaultsError::BadValue {
                                    key: key.into(),
                                    value: value.into(),
                                    reason: "el rango va de menor a mayor",
                                });
                            }
                            (a, b)
                        }
                        None => {
                            let n = int(key, value)?;
                            (n, n)
                        }
                    }
                }
                "refuse" => f.refuse = prob(key, value)?,
                "reset" => f.reset = prob(key, value)?,
                "http500" => f.http500 = prob(key, value)?,
                "timeout_after_certify" => f.timeout_after_certify = prob(key, value)?,
                "slow_body" => f.slow_body = prob(key, value)?,
                "slow_body_ms" => f.slow_body_ms = int(key, value)?,
                "down" => f.down = flag(key, value)?,
                "down_ms" => f.down_ms = Some(int(key, value)?).filter(|n| *n > 0),
                "pending" => f.pending = prob(key, value)?,
                "pending_ms" => f.pending_ms = int(key, value)?,
                "no_xml_307" => f.no_xml_307 = prob(key, value)?,
                "stamped_lag_ms" => f.stamped_lag_ms = int(key, value)?,
                "sat_lag_ms" => f.sat_lag_ms = int(key, value)?,
                "sw_307_status" => {
                    let n = int(key, value)?;
                    if !(200..600).contains(&n) {
                        return Err(FaultsError::BadValue {
                            key: key.into(),
                            value: value.into(),
                            reason: "estado HTTP entre 200 y 599",
                        });
                    }
                    f.sw_307_status = n as u16
                }
                "acceptance_hours" => f.acceptance_hours = int(key, value)?,
                "validate_before_dedup" => f.validate_before_dedup = flag(key, value)?,
                "lowercase_uuid" => f.lowercase_uuid = prob(key, value)?,
                "foreign_cfdi" => f.foreign_cfdi = prob(key, value)?,
                "sat_repeat_limit" => f.sat_repeat_limit = int(key, value)?,
                "sat_max" => f.sat_max = int(key, value)?,
                "sat_stuck" => f.sat_stuck = flag(key, value)?,
                "sat_expired" => f.sat_expired = flag(key, value)?,
                "sat_http" => {
                    let n = int(key, value)?;
                    if n != 0 && !(300..600).contains(&n) {
                        return Err(FaultsError::BadValue {
                            key: key.into(),
                            value: value.into(),
                            reason: "0 o un estado HTTP entre 300 y 599",
                        });
                    }
                    f.sat_http = n as u16
                }
                "sat_token_s" => f.sat_token_s = int(key, value)?,
                "sat_token_expired" => f.sat_token_expired = flag(key, value)?,
                "seed" => f.seed = Some(int(key, value)?),
                other => return Err(FaultsError::UnknownKey(other.into())),
            }
        }
        Ok(f)
    }
}

impl fmt::Display for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "latency_ms={}..{},refuse={},reset={},http500={},timeout_after_certify={},slow_body={},slow_body_ms={},down={}",
            self.latency_ms.0,
            self.latency_ms.1,
            self.refuse,
            self.reset,
            self.http500,
            self.timeout_after_certify,
            self.slow_body,
            self.slow_body_ms,
            u8::from(self.down)
        )?;
        if let Some(ms) = self.down_ms {
            write!(f, ",down_ms={ms}")?;
        }
        write!(
            f,
            ",pending={},pending_ms={},no_xml_307={},stamped_lag_ms={},sat_lag_ms={},sw_307_status={},acceptance_hours={}",
            self.pending, self.pending_ms, self.no_xml_307, self.stamped_lag_ms, self.sat_lag_ms, self.sw_307_status, self.acceptance_hours
        )?;
        write!(
            f,
            ",validate_before_dedup={},lowercase_uuid={},foreign_cfdi={}",
            u8::from(self.validate_before_dedup),
            self.lowercase_uuid,
            self.foreign_cfdi
        )?;
        // The SAT keys only when changed, so the PAC's schedule reads as before.
        let d = Faults::default();
        if (
            self.sat_repeat_limit,
            self.sat_max,
            self.sat_stuck,
            self.sat_expired,
            self.sat_http,
            self.sat_token_s,
            self.sat_token_expired,
        ) != (
            d.sat_repeat_limit,
            d.sat_max,
            d.sat_stuck,
            d.sat_expired,
            d.sat_http,
            d.sat_token_s,
            d.sat_token_expired,
        ) {
            write!(
                f,
                ",sat_repeat_limit={},sat_max={},sat_stuck={},sat_expired={},sat_http={},sat_token_s={},sat_token_expired={}",
                self.sat_repeat_limit,
                self.sat_max,
                u8::from(self.sat_stuck),
                u8::from(self.sat_expired),
                self.sat_http,
                self.sat_token_s,
                u8::from(self.sat_token_expired)
            )?;
        }
        if let Some(s) = self.seed {
            write!(f, ",seed={s}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example_and_round_trips() {
        let f = Faults::parse("latency_ms=20..80,timeout_after_certify=0.1,reset=0.05,http500=0.05,refuse=0").unwrap();
        assert_eq!(f.latency_ms, (20, 80));
        assert_eq!(f.timeout_after_certify, 0.1);
        assert_eq!(f.reset, 0.05);
        assert_eq!(f.http500, 0.05);
        assert_eq!(Faults::parse(&f.to_string()).unwrap(), f);
        let h = Faults::parse("validate_before_dedup=1,lowercase_uuid=0.5,foreign_cfdi=1").unwrap();
        assert!(h.validate_before_dedup && h.lowercase_uuid == 0.5 && h.foreign_cfdi == 1.0);
        assert_eq!(Faults::parse(&h.to_string()).unwrap(), h);
        let s = Faults::parse("sat_repeat_limit=1,sat_max=3,sat_stuck=1,sat_http=503,sat_token_expired=1").unwrap();
        assert!(s.sat_stuck && s.sat_token_expired && s.sat_http == 503 && s.sat_max == 3 && s.sat_repeat_limit == 1);
        assert_eq!(Faults::parse(&s.to_string()).unwrap(), s);
        assert!(
            !Faults::default().to_string().contains("sat_repeat_limit"),
            "the PAC's text is unchanged"
        );
        assert!(!Faults::default().validate_before_dedup, "dedup first by default");
        let g = f.apply("down=1").unwrap();
        assert!(g.down && g.latency_ms == (20, 80));
        assert_eq!(
            g.apply("clear,down=1").unwrap(),
            Faults {
                down: true,
                ..Faults::default()
            }
        );
    }

    #[test]
    fn refuses_bad_text_naming_the_key() {
        for (text, key) in [
            ("reset=2", "reset"),
            ("latency_ms=9..1", "latency_ms"),
            ("down=yes", "down"),
            ("validate_before_dedup=2", "validate_before_dedup"),
            ("lowercase_uuid=1.5", "lowercase_uuid"),
            ("foreign_cfdi=x", "foreign_cfdi"),
            ("wat=1", "wat"),
            ("sat_http=200", "sat_http"),
            ("reset", "reset"),
        ] {
            let e = Faults::parse(text).unwrap_err().to_string();
            assert!(e.contains(key), "{text}: {e}");
        }
    }
}
