//! Where the CSD key password, PAC credentials, the SMTP and webhook secrets and the password
//! of a team's PostgreSQL database are kept: never in the database, the settings files or the
//! logs.
//!
//! First choice, the OS credential store (Secret Service on Linux, Keychain on macOS,
//! Credential Manager on Windows). When it is missing or refuses (a Linux machine without a
//! Secret Service: "Platform secure storage failure: DBus error"; a secret over the Credential
//! Manager's size limit), the secret goes to Timbra's local encrypted store instead
//! ([`LocalStore`]): one file, `credenciales.cifradas`, in the app-data folder, each secret
//! sealed with AES-256-GCM (bound to its slot's name) under a key that lives in the OS
//! credential store when there is one, else in an owner-only file, `clave-local`, in the
//! config folder (a copy of the data folder or of a backup carries no key). SECURITY.md says
//! what that protects against.

use std::path::{Path, PathBuf};

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use cfdi::secret::Secret;

use crate::error::AppError;

const SERVICE: &str = "mx.timbra.app";
/// The OS-store entry holding the local store's key.
const LOCAL_KEY_USER: &str = "clave-almacen-local";
/// The local store's file (in the app-data folder) and its key file (in the config folder).
pub const LOCAL_STORE_FILE: &str = "credenciales.cifradas";
pub const LOCAL_KEY_FILE: &str = "clave-local";

/// Where one secret is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSlot {
    /// The password of the CSD key with this NoCertificado.
    CsdPassword { no_certificado: String },
    /// A PAC account's password or API key.
    Pac { pac: String, environment: String },
    /// A secret named in the outbox's PAC settings (`token_env` / `password_env`).
    Named { name: String },
    /// The password of a PostgreSQL database, by `postgres://USER@HOST:PORT/DATABASE` (the
    /// URL Ajustes saved, without a password).
    DatabasePassword { location: String },
}

/// Where [`CredentialSlot::store`] put the secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// The OS credential store.
    OsStore,
    /// Timbra's local encrypted store (the OS store is missing or refused).
    LocalStore,
}

impl Kept {
    /// What the person who saved it is told, in Spanish.
    pub fn message(self) -> &'static str {
        match self {
            Kept::OsStore => "guardada en el almacén de contraseñas del sistema",
            Kept::LocalStore => "guardada cifrada en este equipo: el sistema no tiene almacén de contraseñas disponible",
        }
    }
}

impl CredentialSlot {
    fn user(&self) -> String {
        match self {
            CredentialSlot::CsdPassword { no_certificado } => format!("csd:{no_certificado}"),
            CredentialSlot::Pac { pac, environment } => format!("pac:{pac}:{environment}"),
            CredentialSlot::Named { name } => format!("secret:{name}"),
            CredentialSlot::DatabasePassword { location } => format!("db:{location}"),
        }
    }

    /// Stores the secret: in the OS credential store, else in the local encrypted store.
    pub fn store(&self, secret: &Secret) -> Result<Kept, AppError> {
        self.store_in(secret, &LocalStore::in_app_folders()?, &OsStore)
    }

    /// The stored secret; `None` when there is none.
    pub fn load(&self) -> Result<Option<Secret>, AppError> {
        self.load_from(&LocalStore::in_app_folders()?, &OsStore)
    }

    /// Removes the stored secret from both stores (none stored is not an error).
    pub fn delete(&self) -> Result<(), AppError> {
        self.delete_from(&LocalStore::in_app_folders()?, &OsStore)
    }

    pub fn exists(&self) -> bool {
        matches!(self.load(), Ok(Some(_)))
    }

    fn store_in(&self, secret: &Secret, local: &LocalStore, os: &dyn Os) -> Result<Kept, AppError> {
        let user = self.user();
        match os.set(&user, secret.expose()) {
            Ok(()) => {
                // One copy only: an older one in the local store goes.
                local.remove(&user, os)?;
                Ok(Kept::OsStore)
            }
            Err(e) => {
                tracing::warn!(error = %e, "almacén de contraseñas del sistema no disponible: el secreto se guarda cifrado en el almacén local de Timbra");
                local.put(&user, secret, os)?;
                Ok(Kept::LocalStore)
            }
        }
    }

    fn load_from(&self, local: &LocalStore, os: &dyn Os) -> Result<Option<Secret>, AppError> {
        let user = self.user();
        match os.get(&user) {
            Ok(Some(p)) => Ok(Some(Secret::new(p))),
            Ok(None) => local.get(&user, os),
            Err(e) => match local.get(&user, os)? {
                Some(s) => Ok(Some(s)),
                None => {
                    tracing::debug!(error = %e, "almacén de contraseñas del sistema no disponible; nada en el almacén local");
                    Ok(None)
                }
            },
        }
    }

    fn delete_from(&self, local: &LocalStore, os: &dyn Os) -> Result<(), AppError> {
        let user = self.user();
        let os_result = os.delete(&user);
        local.remove(&user, os)?;
        // A missing OS store holds nothing to delete.
        if let Err(e) = os_result {
            tracing::debug!(error = %e, "almacén de contraseñas del sistema no disponible al borrar");
        }
        Ok(())
    }
}

/// Whether the OS credential store answers a read (a missing entry is an answer).
pub fn os_store_answers() -> bool {
    OsStore.get(LOCAL_KEY_USER).is_ok()
}

/// The OS credential store (a trait so the tests can make it refuse).
trait Os {
    fn set(&self, user: &str, value: &str) -> Result<(), keyring::Error>;
    /// `Ok(None)`: no entry.
    fn get(&self, user: &str) -> Result<Option<String>, keyring::Error>;
    fn delete(&self, user: &str) -> Result<(), keyring::Error>;
}

struct OsStore;

impl Os for OsStore {
    fn set(&self, user: &str, value: &str) -> Result<(), keyring::Error> {
        keyring::Entry::new(SERVICE, user)?.set_password(value)
    }
    fn get(&self, user: &str) -> Result<Option<String>, keyring::Error> {
        match keyring::Entry::new(SERVICE, user)?.get_password() {
            Ok(p) => Ok(Some(p)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn delete(&self, user: &str) -> Result<(), keyring::Error> {
        match keyring::Entry::new(SERVICE, user)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Timbra's local encrypted store: `{slot: hex(nonce ‖ AES-256-GCM(secret, aad = slot))}` as
/// JSON in one file, written whole (temporary file, owner-only, rename).
#[derive(Debug, Clone)]
pub struct LocalStore {
    file: PathBuf,
    key_file: PathBuf,
}

type Entries = std::collections::BTreeMap<String, String>;

impl LocalStore {
    /// `credenciales.cifradas` in the app-data folder, its key file in the config folder (both
    /// named by the app's identifier).
    pub fn in_app_folders() -> Result<LocalStore, AppError> {
        let data = outbox::location::app_data_dir()?;
        let config = directories::BaseDirs::new()
            .map(|d| d.config_local_dir().join(outbox::location::APP_IDENTIFIER))
            .ok_or_else(|| AppError::File {
                path: LOCAL_KEY_FILE.into(),
                message: "no se encontró la carpeta de configuración del usuario".into(),
            })?;
        Ok(LocalStore::at(data.join(LOCAL_STORE_FILE), config.join(LOCAL_KEY_FILE)))
    }

    pub fn at(file: PathBuf, key_file: PathBuf) -> LocalStore {
        LocalStore { file, key_file }
    }

    fn entries(&self) -> Result<Entries, AppError> {
        match std::fs::read(&self.file) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|_| self.damaged()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Entries::new()),
            Err(e) => Err(file_error(&self.file, &e)),
        }
    }

    fn damaged(&self) -> AppError {
        AppError::File {
            path: self.file.display().to_string(),
            message: "el almacén local de contraseñas está dañado; vuelva a capturar las contraseñas en Ajustes".into(),
        }
    }

    fn get(&self, user: &str, os: &dyn Os) -> Result<Option<Secret>, AppError> {
        let entries = self.entries()?;
        let Some(sealed) = entries.get(user) else {
            return Ok(None);
        };
        let key = self.key(os, false)?.ok_or_else(|| self.damaged())?;
        let mut bytes = hex_decode(sealed).ok_or_else(|| self.damaged())?;
        if bytes.len() < NONCE_LEN {
            return Err(self.damaged());
        }
        let mut sealed_part = bytes.split_off(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(&bytes).map_err(|_| self.damaged())?;
        let plain = key
            .open_in_place(nonce, Aad::from(user.as_bytes()), &mut sealed_part)
            .map_err(|_| self.damaged())?;
        let text = String::from_utf8(plain.to_vec()).map_err(|_| self.damaged())?;
        sealed_part.iter_mut().for_each(|b| *b = 0);
        Ok(Some(Secret::new(text)))
    }

    fn put(&self, user: &str, secret: &Secret, os: &dyn Os) -> Result<(), AppError> {
        let mut entries = self.entries()?;
        let key = self.key(os, true)?.ok_or_else(|| self.damaged())?;
        let mut nonce = [0u8; NONCE_LEN];
        random(&mut nonce)?;
        let mut buffer = secret.expose().as_bytes().to_vec();
        key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(user.as_bytes()), &mut buffer)
            .map_err(|_| self.damaged())?;
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&buffer);
        entries.insert(user.to_string(), hex_encode(&sealed));
        self.write(&entries)
    }

    fn remove(&self, user: &str, _os: &dyn Os) -> Result<(), AppError> {
        let mut entries = self.entries()?;
        if entries.remove(user).is_some() {
            self.write(&entries)?;
        }
        Ok(())
    }

    fn write(&self, entries: &Entries) -> Result<(), AppError> {
        let json = serde_json::to_vec_pretty(entries).map_err(|_| self.damaged())?;
        write_owner_only(&self.file, &json)
    }

    /// The store's key: the key file when it exists (it was made when the OS store refused),
    /// else the OS store's entry; made when `create` and there is none (kept in the OS store
    /// when it accepts, else in the owner-only key file).
    fn key(&self, os: &dyn Os, create: bool) -> Result<Option<LessSafeKey>, AppError> {
        let from_hex = |h: &str| -> Result<LessSafeKey, AppError> {
            let bytes = hex_decode(h.trim()).ok_or_else(|| self.damaged())?;
            let unbound = UnboundKey::new(&AES_256_GCM, &bytes).map_err(|_| self.damaged())?;
            Ok(LessSafeKey::new(unbound))
        };
        match std::fs::read_to_string(&self.key_file) {
            Ok(h) => return from_hex(&h).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(file_error(&self.key_file, &e)),
        }
        let os_key = os.get(LOCAL_KEY_USER);
        if let Ok(Some(h)) = &os_key {
            return from_hex(h).map(Some);
        }
        if !create {
            return Ok(None);
        }
        let mut raw = [0u8; 32];
        random(&mut raw)?;
        let h = hex_encode(&raw);
        raw.iter_mut().for_each(|b| *b = 0);
        if os_key.is_err() || os.set(LOCAL_KEY_USER, &h).is_err() {
            write_owner_only(&self.key_file, h.as_bytes())?;
        }
        from_hex(&h).map(Some)
    }
}

fn random(buf: &mut [u8]) -> Result<(), AppError> {
    getrandom::fill(buf).map_err(|e| AppError::CredentialStore {
        message: format!("no hay fuente de números aleatorios del sistema: {e}"),
    })
}

fn file_error(path: &Path, e: &std::io::Error) -> AppError {
    AppError::File {
        path: path.display().to_string(),
        message: format!("no se pudo usar el almacén local de contraseñas: {e}"),
    }
}

/// Writes `bytes` to `path` whole: a temporary file beside it, readable and writable by its
/// owner only, synced, then renamed over `path`.
fn write_owner_only(path: &Path, bytes: &[u8]) -> Result<(), AppError> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| file_error(dir, &e))?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let _ = std::fs::remove_file(&tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    // Unix: mode 0600 from the start. Windows has no mode bits: the file inherits the ACL of the
    // user's own %LOCALAPPDATA% folder (the user, SYSTEM and Administrators), see SECURITY.md.
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options.open(&tmp).map_err(|e| file_error(&tmp, &e))?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(|e| file_error(&tmp, &e))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|e| file_error(path, &e))
}

fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// An OS store that refuses everything, as Secret Service does on a machine without one.
    struct Refusing;
    impl Os for Refusing {
        fn set(&self, _: &str, _: &str) -> Result<(), keyring::Error> {
            Err(keyring::Error::PlatformFailure("DBus error".into()))
        }
        fn get(&self, _: &str) -> Result<Option<String>, keyring::Error> {
            Err(keyring::Error::PlatformFailure("DBus error".into()))
        }
        fn delete(&self, _: &str) -> Result<(), keyring::Error> {
            Err(keyring::Error::PlatformFailure("DBus error".into()))
        }
    }

    /// A working OS store in memory.
    #[derive(Default)]
    struct Memory(RefCell<HashMap<String, String>>);
    impl Os for Memory {
        fn set(&self, user: &str, value: &str) -> Result<(), keyring::Error> {
            self.0.borrow_mut().insert(user.into(), value.into());
            Ok(())
        }
        fn get(&self, user: &str) -> Result<Option<String>, keyring::Error> {
            Ok(self.0.borrow().get(user).cloned())
        }
        fn delete(&self, user: &str) -> Result<(), keyring::Error> {
            self.0.borrow_mut().remove(user);
            Ok(())
        }
    }

    const CSD: &str = "csd-Secreto-5f1c9a0e";
    const PAC: &str = "tok-Secreto-7f3a91c2e4b8";
    const SMTP: &str = "smtp-Secreto-88d1e0b7c3";

    fn slots() -> [(CredentialSlot, &'static str); 3] {
        [
            (
                CredentialSlot::CsdPassword {
                    no_certificado: "30001000000500003416".into(),
                },
                CSD,
            ),
            (
                CredentialSlot::Named {
                    name: "TIMBRA_PAC_SW_TOKEN".into(),
                },
                PAC,
            ),
            (
                CredentialSlot::Named {
                    name: "TIMBRA_SMTP_PASSWORD".into(),
                },
                SMTP,
            ),
        ]
    }

    fn files_under(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
        out
    }

    /// The leak scenario on the fallback: with no OS store, the CSD, PAC and SMTP secrets are
    /// kept, read back and deleted; no file Timbra wrote holds any of them, in plain text, hex
    /// or Base64; the key file is owner-only.
    #[test]
    fn without_an_os_store_secrets_are_kept_encrypted_and_no_file_holds_them() {
        let dir = tempfile::tempdir().unwrap();
        let local = LocalStore::at(
            dir.path().join("data").join(LOCAL_STORE_FILE),
            dir.path().join("config").join(LOCAL_KEY_FILE),
        );
        for (slot, secret) in slots() {
            assert_eq!(slot.store_in(&Secret::new(secret), &local, &Refusing).unwrap(), Kept::LocalStore);
        }
        for (slot, secret) in slots() {
            assert_eq!(
                slot.load_from(&local, &Refusing)
                    .unwrap()
                    .map(|s| s.expose().to_string())
                    .as_deref(),
                Some(secret)
            );
        }
        let files = files_under(dir.path());
        assert_eq!(files.len(), 2, "{files:?}");
        for f in &files {
            let bytes = std::fs::read(f).unwrap();
            for secret in [CSD, PAC, SMTP] {
                use base64::Engine as _;
                for needle in [
                    secret.to_string(),
                    hex_encode(secret.as_bytes()),
                    base64::engine::general_purpose::STANDARD.encode(secret),
                ] {
                    assert!(
                        !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
                        "{needle} en {}",
                        f.display()
                    );
                }
            }
            // Windows: no mode bits; the files inherit %LOCALAPPDATA%'s ACL (SECURITY.md).
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                assert_eq!(std::fs::metadata(f).unwrap().permissions().mode() & 0o777, 0o600, "{}", f.display());
            }
        }
        // Deleted: nothing is said to be saved any more.
        let (csd, _) = &slots()[0];
        csd.delete_from(&local, &Refusing).unwrap();
        assert!(csd.load_from(&local, &Refusing).unwrap().is_none());
    }

    /// Nothing saved: nothing is found (the PAC field never says *guardada*).
    #[test]
    fn nothing_saved_is_nothing_found_even_without_an_os_store() {
        let dir = tempfile::tempdir().unwrap();
        let local = LocalStore::at(dir.path().join(LOCAL_STORE_FILE), dir.path().join(LOCAL_KEY_FILE));
        for (slot, _) in slots() {
            assert!(slot.load_from(&local, &Refusing).unwrap().is_none());
        }
        assert!(!dir.path().join(LOCAL_KEY_FILE).exists());
    }

    /// With a working OS store, secrets go there (no local file), the local store's key too
    /// when the fallback was used; a secret kept locally moves to the OS store when saved again.
    #[test]
    fn a_working_os_store_is_the_first_choice() {
        let dir = tempfile::tempdir().unwrap();
        let local = LocalStore::at(dir.path().join(LOCAL_STORE_FILE), dir.path().join(LOCAL_KEY_FILE));
        let os = Memory::default();
        let (slot, secret) = &slots()[1];
        assert_eq!(slot.store_in(&Secret::new(secret.to_string()), &local, &os).unwrap(), Kept::OsStore);
        assert!(!dir.path().join(LOCAL_STORE_FILE).exists());
        assert_eq!(slot.load_from(&local, &os).unwrap().unwrap().expose(), *secret);

        // Kept locally while the OS store refused (key in the key file); read back once it works.
        let (csd, csd_secret) = &slots()[0];
        csd.store_in(&Secret::new(csd_secret.to_string()), &local, &Refusing).unwrap();
        assert_eq!(csd.load_from(&local, &os).unwrap().unwrap().expose(), *csd_secret);
        csd.store_in(&Secret::new(csd_secret.to_string()), &local, &os).unwrap();
        assert_eq!(local.entries().unwrap().len(), 0);
    }

    /// A sealed entry cannot be moved to another slot, nor altered.
    #[test]
    fn a_sealed_secret_is_bound_to_its_slot() {
        let dir = tempfile::tempdir().unwrap();
        let local = LocalStore::at(dir.path().join(LOCAL_STORE_FILE), dir.path().join(LOCAL_KEY_FILE));
        let (csd, _) = &slots()[0];
        let (pac, _) = &slots()[1];
        csd.store_in(&Secret::new(CSD), &local, &Refusing).unwrap();
        let mut entries = local.entries().unwrap();
        let sealed = entries.get(&csd.user()).unwrap().clone();
        entries.insert(pac.user(), sealed);
        local.write(&entries).unwrap();
        assert!(pac.load_from(&local, &Refusing).is_err());
    }
}
