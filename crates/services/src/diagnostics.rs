//! *Acerca de Timbra* and *Exportar diagnóstico*: what a support person asks a shop over the
//! phone, the same from the app (Ajustes) and the CLI (`timbra diagnostico`).
//!
//! [`about`] gathers the facts (Timbra's and the catalogs' versions, the database's kind, place
//! and schema version, the data and log folders). [`write_zip`] writes one ZIP with them
//! (`acerca.txt`), every shared setting (`ajustes.json`) and the newest log files
//! (`registros/…`, the last [`MAX_LOG_BYTES`] of each), every text passed through a
//! [`Redactor`] first: the secret values the shell knows (and their Base64), URL passwords,
//! `Bearer`/`Basic` credentials, `tbr_` API tokens and the value of every field whose name says
//! password, secret, token or PIN become `[oculto]`. Settings keep no secret by design
//! (ARCHITECTURE.md); the redaction is the second line, and the logs' first. The ZIP is written
//! under a temporary name and renamed when complete.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use cfdi::secret::Secret;
use outbox::Outbox;
use regex::{Captures, Regex};
use serde::Serialize;

use crate::files::temporary_beside;
use crate::ServiceError;

/// The log folder's name inside the data folder (beside `respaldos/`).
pub const LOG_FOLDER: &str = "registros";

/// The log file the desktop app writes in [`LOG_FOLDER`] (the previous one is `timbra.log.1`).
pub const LOG_FILE: &str = "timbra.log";

/// How much of each log file the ZIP keeps (its end: the newest lines).
pub const MAX_LOG_BYTES: u64 = 2 * 1024 * 1024;

/// How many log files the ZIP takes at most (the newest).
pub const MAX_LOG_FILES: usize = 8;

/// What replaces a secret.
pub const HIDDEN: &str = "[oculto]";

/// The facts *Acerca de Timbra* shows and the ZIP's `acerca.txt` lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct About {
    /// Timbra's version (the shell's, one workspace version).
    pub version: String,
    /// The embedded SAT catalogs: source and date.
    pub catalog_source: String,
    pub catalog_date: String,
    /// `SQLite` or `PostgreSQL`.
    pub database_kind: String,
    /// The SQLite file or `postgres://USER@HOST:PORT/DATABASE` (never a password).
    pub database_place: String,
    /// The newest migration the database applied.
    pub schema_version: i64,
    /// Where Timbra keeps its data on this computer (None: the OS named no folder).
    pub data_folder: Option<String>,
    /// Where the desktop app writes its logs.
    pub log_folder: Option<String>,
    /// `linux x86_64`, `windows x86_64`, …
    pub system: String,
}

/// The data folder and the log folder a shell uses (None when the OS names none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folders {
    pub data: Option<PathBuf>,
    pub logs: Option<PathBuf>,
}

impl Folders {
    /// The app-data folder and its [`LOG_FOLDER`].
    pub fn standard() -> Folders {
        let data = outbox::location::app_data_dir().ok();
        let logs = data.as_ref().map(|d| d.join(LOG_FOLDER));
        Folders { data, logs }
    }
}

/// Gathers [`About`] from the open outbox (`version` is the shell's).
pub async fn about(outbox: &Outbox, version: &str, folders: &Folders) -> Result<About, ServiceError> {
    let store = outbox.store();
    let catalogs = cfdi::catalog::catalog_version();
    Ok(About {
        version: version.to_string(),
        catalog_source: catalogs.fuente.to_string(),
        catalog_date: catalogs.fecha.to_string(),
        database_kind: match store.backend() {
            outbox::Backend::Sqlite => "SQLite",
            outbox::Backend::Postgres => "PostgreSQL",
        }
        .to_string(),
        // A PostgreSQL store's path is its URL without the password; redacted once more.
        database_place: outbox::location::redact_url(&store.path().display().to_string()),
        schema_version: store.schema_version().await?,
        data_folder: folders.data.as_ref().map(|p| p.display().to_string()),
        log_folder: folders.logs.as_ref().map(|p| p.display().to_string()),
        system: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

/// Replaces secrets in text (see the module docs). Built once per export.
pub struct Redactor {
    /// Known secret values and their Base64 forms, longest first.
    known: Vec<String>,
    url_password: Regex,
    auth_scheme: Regex,
    api_token: Regex,
    field: Regex,
}

/// Words that make a field's value secret, as one part of its name (`SW_TOKEN`,
/// `smtp_password`, `"pin"`, `apiKey` is matched as `apikey`).
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "pass",
    "contraseña",
    "contrasena",
    "secret",
    "secreto",
    "token",
    "pin",
    "apikey",
    "authorization",
    "credential",
    "credentials",
];

impl Redactor {
    /// A redactor that also hides each of `known` (values shorter than 4 characters are too
    /// common to hide without hiding everything else).
    pub fn new<'a>(known: impl IntoIterator<Item = &'a Secret>) -> Redactor {
        let mut values: Vec<String> = Vec::new();
        for s in known {
            let v = s.expose();
            if v.chars().count() < 4 {
                continue;
            }
            values.push(v.to_string());
            for engine in [
                &base64::engine::general_purpose::STANDARD,
                &base64::engine::general_purpose::STANDARD_NO_PAD,
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            ] {
                values.push(engine.encode(v));
            }
        }
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        // The patterns are literals: they compile.
        let re = |p: &str| Regex::new(p).unwrap_or_else(|e| unreachable!("{p}: {e}"));
        Redactor {
            known: values,
            url_password: re(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s/:@]*):[^\s/@]*@"),
            auth_scheme: re(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{4,}"),
            api_token: re(r"\btbr_[A-Za-z0-9_-]+"),
            field: re(r#"([\p{L}\p{N}_.-]+)("?)(\s*[:=]\s*)(?:"([^"]*)"|'([^']*)'|([^\s",;&}\])]+))"#),
        }
    }

    /// `text` with every secret replaced by [`HIDDEN`].
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for v in &self.known {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), HIDDEN);
            }
        }
        let out = self.url_password.replace_all(&out, format!("$1:{HIDDEN}@").as_str());
        let out = self.auth_scheme.replace_all(&out, format!("$1$2{HIDDEN}").as_str());
        let out = self.api_token.replace_all(&out, format!("tbr_{HIDDEN}").as_str());
        let out = self.field.replace_all(&out, |c: &Captures| {
            let part = |i: usize| c.get(i).map_or("", |m| m.as_str());
            let (key, value) = (part(1), [4, 5, 6].into_iter().find_map(|i| c.get(i)).map_or("", |m| m.as_str()));
            let scheme = ["bearer", "basic", "token"].contains(&value.to_lowercase().as_str());
            if !secret_name(key) || value.is_empty() || value == HIDDEN || scheme {
                return part(0).to_string();
            }
            let quote = if c.get(4).is_some() {
                "\""
            } else if c.get(5).is_some() {
                "'"
            } else {
                ""
            };
            format!("{key}{}{}{quote}{HIDDEN}{quote}", part(2), part(3))
        });
        out.into_owned()
    }

    /// A JSON value with every secret-named field's value replaced and every string redacted.
    pub fn json(&self, value: serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match value {
            Value::String(s) => Value::String(self.text(&s)),
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.json(v)).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| {
                        let v = if secret_name(&k) && !matches!(v, Value::Null | Value::Bool(_)) {
                            Value::String(HIDDEN.into())
                        } else {
                            self.json(v)
                        };
                        (k, v)
                    })
                    .collect(),
            ),
            other => other,
        }
    }
}

/// Whether a field named `name` holds a secret: one of its parts (split at `_ - .`, spaces and
/// lower→upper case changes) is a [`SECRET_WORDS`] word. A name ending in `env` names where a
/// secret is (`password_env`), and a fencing token is a counter: neither is hidden.
fn secret_name(name: &str) -> bool {
    let lower = name.to_lowercase();
    if lower.ends_with("env") || lower.contains("fencing") {
        return false;
    }
    let mut parts: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for ch in name.chars() {
        if !ch.is_alphanumeric() {
            parts.push(std::mem::take(&mut cur));
            prev_lower = false;
            continue;
        }
        if ch.is_uppercase() && prev_lower {
            parts.push(std::mem::take(&mut cur));
        }
        prev_lower = ch.is_lowercase();
        cur.extend(ch.to_lowercase());
    }
    parts.push(cur);
    let joined: String = parts.concat();
    parts.iter().any(|p| SECRET_WORDS.contains(&p.as_str())) || joined.contains("apikey") || joined.contains("password")
}

/// What [`write_zip`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiagnosticReport {
    pub path: PathBuf,
    /// The ZIP's entries, in order.
    pub entries: Vec<String>,
}

/// Writes the diagnostic ZIP at `dest` (which must not exist): `acerca.txt`, `ajustes.json`
/// and `registros/NAME` for each of the newest log files in `about.log_folder`, all redacted.
/// `generated_at` is the shell's clock, in words.
pub async fn write_zip(
    outbox: &Outbox,
    about: &About,
    redactor: &Redactor,
    generated_at: &str,
    dest: &Path,
) -> Result<DiagnosticReport, ServiceError> {
    if dest.exists() {
        return Err(ServiceError::file(dest, "ya existe; elija otro nombre"));
    }
    let settings = outbox.store().all_settings().await?;
    let mut entries: Vec<(String, Vec<u8>)> = vec![
        ("acerca.txt".into(), redactor.text(&about_text(about, generated_at)).into_bytes()),
        ("ajustes.json".into(), settings_json(&settings, redactor)),
    ];
    if let Some(folder) = about.log_folder.as_deref() {
        for (name, text) in newest_logs(Path::new(folder))? {
            entries.push((format!("{LOG_FOLDER}/{name}"), redactor.text(&text).into_bytes()));
        }
    }
    write_entries(dest, &entries)?;
    Ok(DiagnosticReport {
        path: dest.to_path_buf(),
        entries: entries.into_iter().map(|(n, _)| n).collect(),
    })
}

fn about_text(a: &About, generated_at: &str) -> String {
    let none = "(ninguna)";
    format!(
        "Diagnóstico de Timbra\n\
         Generado: {generated_at}\n\
         Timbra: {}\n\
         Catálogos del SAT: {} ({})\n\
         Base de datos: {}, {}\n\
         Versión del esquema: {}\n\
         Carpeta de datos: {}\n\
         Carpeta de registros: {}\n\
         Sistema: {}\n",
        a.version,
        a.catalog_date,
        a.catalog_source,
        a.database_kind,
        a.database_place,
        a.schema_version,
        a.data_folder.as_deref().unwrap_or(none),
        a.log_folder.as_deref().unwrap_or(none),
        a.system,
    )
}

/// The settings as one JSON object, key → value (a value that is not JSON stays a string).
fn settings_json(settings: &[(String, String)], redactor: &Redactor) -> Vec<u8> {
    let mut map = serde_json::Map::new();
    for (key, raw) in settings {
        let value = serde_json::from_str(raw).unwrap_or_else(|_| serde_json::Value::String(raw.clone()));
        let value = if secret_name(key) {
            serde_json::Value::String(HIDDEN.into())
        } else {
            redactor.json(value)
        };
        map.insert(key.clone(), value);
    }
    let mut bytes = serde_json::to_vec_pretty(&serde_json::Value::Object(map)).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// The newest log files of `folder` (`*.log`, `*.log.N`; regular files only), newest first,
/// each as (name, its last [`MAX_LOG_BYTES`] as text). A missing folder has none.
fn newest_logs(folder: &Path) -> Result<Vec<(String, String)>, ServiceError> {
    let listing = match std::fs::read_dir(folder) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ServiceError::file(folder, e)),
    };
    let mut logs: Vec<(std::time::SystemTime, String, PathBuf)> = Vec::new();
    for entry in listing.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_log = name.ends_with(".log")
            || name
                .rsplit_once(".log.")
                .is_some_and(|(_, n)| n.chars().all(|c| c.is_ascii_digit()));
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !is_log || !meta.is_file() {
            continue;
        }
        let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
        logs.push((modified, name, entry.path()));
    }
    logs.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    logs.truncate(MAX_LOG_FILES);
    logs.into_iter().map(|(_, name, path)| Ok((name, tail(&path)?))).collect()
}

/// The last [`MAX_LOG_BYTES`] of a file as text (from the first whole line).
fn tail(path: &Path) -> Result<String, ServiceError> {
    let mut f = std::fs::File::open(path).map_err(|e| ServiceError::file(path, e))?;
    let len = f.metadata().map_err(|e| ServiceError::file(path, e))?.len();
    let skipped = len.saturating_sub(MAX_LOG_BYTES);
    f.seek(SeekFrom::Start(skipped)).map_err(|e| ServiceError::file(path, e))?;
    let mut bytes = Vec::new();
    f.take(MAX_LOG_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| ServiceError::file(path, e))?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if skipped == 0 {
        return Ok(text);
    }
    let rest = text.split_once('\n').map_or("", |(_, r)| r);
    Ok(format!("[… se omitieron los primeros {skipped} bytes]\n{rest}"))
}

fn write_entries(dest: &Path, entries: &[(String, Vec<u8>)]) -> Result<(), ServiceError> {
    let tmp = temporary_beside(dest);
    let result = (|| -> Result<(), String> {
        let file = std::fs::File::create(&tmp).map_err(|e| e.to_string())?;
        let mut zip = zip::ZipWriter::new(file);
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (name, bytes) in entries {
            zip.start_file(name.as_str(), opts).map_err(|e| e.to_string())?;
            zip.write_all(bytes).map_err(|e| e.to_string())?;
        }
        let file = zip.finish().map_err(|e| e.to_string())?;
        file.sync_all().map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, dest).map_err(|e| e.to_string())
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        ServiceError::file(dest, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r() -> Redactor {
        Redactor::new(&[Secret::new("s3creto-conocido"), Secret::new("abc")])
    }

    #[test]
    fn known_values_and_their_base64_are_hidden() {
        let b64 = base64::engine::general_purpose::STANDARD.encode("s3creto-conocido");
        let out = r().text(&format!("a s3creto-conocido b {b64} c abc"));
        assert_eq!(out, "a [oculto] b [oculto] c abc");
    }

    #[test]
    fn secret_fields_urls_credentials_and_tokens_are_hidden() {
        for (given, want) in [
            ("SW_TOKEN=tok-1234 x", "SW_TOKEN=[oculto] x"),
            (r#"{"password":"p w","user":"ana"}"#, r#"{"password":"[oculto]","user":"ana"}"#),
            ("smtp_password: hunter22", "smtp_password: [oculto]"),
            ("TIMBRA_CONTADOR_PIN=4321", "TIMBRA_CONTADOR_PIN=[oculto]"),
            ("apiKey='k-123456'", "apiKey='[oculto]'"),
            ("postgres://timbra:clave@db:5432/t", "postgres://timbra:[oculto]@db:5432/t"),
            ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [oculto]"),
            ("header Bearer eyJhbGciOi.x.y", "header Bearer [oculto]"),
            ("token creado tbr_AbC123_xyz", "token creado tbr_[oculto]"),
            // Names of where a secret is, counters and ordinary words stay.
            ("password_env=TIMBRA_CSD_PASSWORD", "password_env=TIMBRA_CSD_PASSWORD"),
            ("fencing_token=7 shipping=3 mapping=x", "fencing_token=7 shipping=3 mapping=x"),
        ] {
            assert_eq!(r().text(given), want, "{given}");
        }
    }

    #[test]
    fn json_fields_named_secret_are_hidden_whatever_their_type() {
        let v = serde_json::json!({"smtp": {"host": "mail", "password": "x", "pin": 1234, "tls": true}, "pacs": [{"token": "t"}], "password_env": "X"});
        assert_eq!(
            r().json(v),
            serde_json::json!({"smtp": {"host": "mail", "password": "[oculto]", "pin": "[oculto]", "tls": true}, "pacs": [{"token": "[oculto]"}], "password_env": "X"})
        );
    }

    #[test]
    fn the_newest_logs_are_taken_by_their_end() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("timbra.log"), "uno\ndos\n").unwrap();
        std::fs::write(dir.path().join("timbra.log.1"), "viejo\n").unwrap();
        std::fs::write(dir.path().join("timbra.db"), "no es registro").unwrap();
        let mut got = newest_logs(dir.path()).unwrap();
        got.sort();
        assert_eq!(
            got,
            vec![
                ("timbra.log".into(), "uno\ndos\n".into()),
                ("timbra.log.1".into(), "viejo\n".into())
            ]
        );
        assert!(newest_logs(&dir.path().join("no-existe")).unwrap().is_empty());
    }
}
