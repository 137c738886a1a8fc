//! What the simulated SAT *Descarga Masiva* keeps (requests, tokens, injected CFDI, the
//! publish delay) and how it reads a CFDI; the routes that use it are [`crate::sat`].

use std::collections::HashMap;
use std::sync::Mutex;

use cfdi::xml::{Document, Element};
use chrono::{DateTime, Duration, NaiveDateTime, Utc};

/// What the simulated SAT keeps.
#[derive(Debug)]
pub struct SatSim {
    pub(crate) inner: Mutex<Inner>,
}

impl Default for SatSim {
    fn default() -> SatSim {
        SatSim {
            inner: Mutex::new(Inner {
                publish_delay: Duration::seconds(60),
                injected: Vec::new(),
                tokens: HashMap::new(),
                requests: Vec::new(),
                accepted: HashMap::new(),
            }),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) publish_delay: Duration,
    pub(crate) injected: Vec<SatCfdi>,
    /// token → (RFC, expires).
    pub(crate) tokens: HashMap<String, (String, DateTime<Utc>)>,
    pub(crate) requests: Vec<Solicitud>,
    /// Accepted requests per parameters.
    pub(crate) accepted: HashMap<String, u64>,
}

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Emitidos,
    Recibidos { emisor: Option<String> },
    Folio(String),
}

#[derive(Debug, Clone)]
pub(crate) struct Solicitud {
    pub(crate) id: String,
    pub(crate) rfc: String,
    pub(crate) params: String,
    pub(crate) created: DateTime<Utc>,
    pub(crate) kind: Kind,
    pub(crate) desde: NaiveDateTime,
    pub(crate) hasta: NaiveDateTime,
    pub(crate) metadata: bool,
    pub(crate) estado: String,
    pub(crate) tipo_comprobante: Option<String>,
    /// Fixed when the request finishes.
    pub(crate) found: Option<Vec<SatCfdi>>,
}

/// One CFDI as SAT knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SatCfdi {
    pub uuid: String,
    pub rfc_emisor: String,
    pub nombre_emisor: String,
    pub rfc_receptor: String,
    pub nombre_receptor: String,
    pub rfc_pac: String,
    pub fecha: NaiveDateTime,
    pub fecha_timbrado: NaiveDateTime,
    pub total: String,
    pub tipo: String,
    pub vigente: bool,
    pub xml: String,
    /// When it was stamped (or injected), on the simulator's clock.
    pub stamped_at: DateTime<Utc>,
}

pub(crate) fn lock(m: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn find<'a>(e: &'a Element, local: &str) -> Option<&'a Element> {
    if e.local == local {
        return Some(e);
    }
    e.elements().find_map(|c| find(c, local))
}

pub(crate) fn naive(s: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(s.trim(), "%Y-%m-%dT%H:%M:%S").ok()
}

impl SatCfdi {
    /// Reads a stamped CFDI (it needs its TimbreFiscalDigital).
    pub fn from_xml(xml: &str, vigente: bool, stamped_at: DateTime<Utc>) -> Result<SatCfdi, String> {
        let doc = Document::parse(xml.as_bytes()).map_err(|e| format!("el CFDI no es XML legible: {e}"))?;
        let root = &doc.root;
        if root.local != "Comprobante" {
            return Err("no es un cfdi:Comprobante".into());
        }
        let tfd = find(root, "TimbreFiscalDigital").ok_or("el CFDI no trae TimbreFiscalDigital (no está timbrado)")?;
        let emisor = find(root, "Emisor").ok_or("el CFDI no trae Emisor")?;
        let receptor = find(root, "Receptor").ok_or("el CFDI no trae Receptor")?;
        let attr = |e: &Element, name: &str| e.attr(name).unwrap_or("").trim().to_string();
        let uuid = attr(tfd, "UUID").to_uppercase();
        if uuid.len() != 36 {
            return Err("el TimbreFiscalDigital no trae un UUID".into());
        }
        Ok(SatCfdi {
            uuid,
            rfc_emisor: attr(emisor, "Rfc").to_uppercase(),
            nombre_emisor: attr(emisor, "Nombre"),
            rfc_receptor: attr(receptor, "Rfc").to_uppercase(),
            nombre_receptor: attr(receptor, "Nombre"),
            rfc_pac: attr(tfd, "RfcProvCertif"),
            fecha: naive(&attr(root, "Fecha")).ok_or("el CFDI no trae una Fecha legible")?,
            fecha_timbrado: naive(&attr(tfd, "FechaTimbrado")).ok_or("el TimbreFiscalDigital no trae FechaTimbrado")?,
            total: attr(root, "Total"),
            tipo: attr(root, "TipoDeComprobante"),
            vigente,
            xml: xml.to_string(),
            stamped_at,
        })
    }

    pub(crate) fn metadata_line(&self) -> String {
        let f = |t: NaiveDateTime| t.format("%Y-%m-%d %H:%M:%S").to_string();
        format!(
            "{}~{}~{}~{}~{}~{}~{}~{}~{}~{}~{}~",
            self.uuid,
            self.rfc_emisor,
            self.nombre_emisor,
            self.rfc_receptor,
            self.nombre_receptor,
            self.rfc_pac,
            f(self.fecha),
            f(self.fecha_timbrado),
            self.total,
            self.tipo,
            if self.vigente { 1 } else { 0 },
        )
    }
}

impl SatSim {
    /// Adds a CFDI "stamped elsewhere" (another PAC): SAT knows it from now on.
    pub fn inject(&self, xml: &str, now: DateTime<Utc>) -> Result<SatCfdi, String> {
        let c = SatCfdi::from_xml(xml, true, now)?;
        let mut g = lock(&self.inner);
        g.injected.retain(|o| o.uuid != c.uuid);
        g.injected.push(c.clone());
        Ok(c)
    }

    pub fn set_publish_delay(&self, d: Duration) {
        lock(&self.inner).publish_delay = d;
    }

    pub fn publish_delay(&self) -> Duration {
        lock(&self.inner).publish_delay
    }
}
