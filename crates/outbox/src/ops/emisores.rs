//! Several emisores in one Timbra: **one database per emisor** (a SQLite file each; on a team's
//! PostgreSQL, a schema each).
//!
//! Every sale, attempt, CFDI, payment, report, export, API token and setting of an emisor lives
//! in that emisor's own database, so no read or action can cross emisores by accident: an
//! [`crate::Outbox`] *is* one emisor, and every query the outbox already has stays correct with
//! no emisor column to forget. The database Timbra opens first (`--db`, `TIMBRA_DATABASE_URL`,
//! the app's default) is the *home*: it is an emisor's database itself and holds the directory
//! of the others (table `emisores`, keyed by RFC). Another emisor's database is derived from its
//! *place* (its RFC in lower case, [`place_for`]): `emisores/<place>/timbra.db` beside the home
//! file, or the schema `emisor_<place>` of the home's PostgreSQL database ([`location_of`]).
//!
//! Fences:
//! - the directory's primary key is the RFC (one emisor, one database), and an RFC is never
//!   registered while the home is that RFC ([`Outbox::prepare_emisor`]), nor is the home set up
//!   as an RFC the directory has (`configure_emisor` asks [`Outbox::check_home_rfc`]);
//! - an added emisor's database keeps the RFC it was added for ([`SETTING_DIRECTORY_RFC`]):
//!   setting it up as another RFC is refused, and opening it through the directory checks that
//!   its emisor is the entry's ([`Outbox::check_directory_rfc`]);
//! - a sale is sealed with its database's CSD, whose RFC must be the sale's emisor (intake).
//!
//! Which emisor a shell acts for: the one named (`--emisor RFC`, the app's switcher), else the
//! only one, else the one chosen last ([`SETTING_CHOSEN`], kept in the home), else the home.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::location::DatabaseLocation;
use crate::store::EmisorRow;
use crate::Outbox;

/// The home's place (never a row of the directory).
pub const HOME_PLACE: &str = "principal";

/// Setting (JSON string) in the home: the place of the emisor chosen last.
pub const SETTING_CHOSEN: &str = "emisores.elegido";

/// Setting (JSON string) in an added emisor's database: the RFC its directory entry has.
pub const SETTING_DIRECTORY_RFC: &str = "emisor.rfc_del_directorio";

/// The folder, beside the home SQLite file, of the other emisores' databases.
pub const FOLDER: &str = "emisores";

/// One emisor of this Timbra.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Emisor {
    /// Its RFC ("" for a home that has no emisor set up yet).
    pub rfc: String,
    pub nombre: String,
    /// The home database (the one Timbra opened first) or an added one.
    pub home: bool,
    /// [`HOME_PLACE`] or the name its database is derived from.
    pub place: String,
    /// Archived: hidden from the switcher, never chosen by default; still drained.
    pub archived: bool,
    /// The one shells act for when none is named.
    pub chosen: bool,
    #[ts(type = "string | null")]
    pub archived_at: Option<DateTime<Utc>>,
}

/// The place of an RFC: its letters and digits in lower case, `&` as `amp` and `Ñ` as `enie`
/// (a file name and a PostgreSQL schema name on every system).
pub fn place_for(rfc: &str) -> String {
    let mut place = String::with_capacity(rfc.len() + 4);
    for c in rfc.trim().chars() {
        match c {
            c if c.is_ascii_alphanumeric() => place.push(c.to_ascii_lowercase()),
            '&' => place.push_str("amp"),
            'Ñ' | 'ñ' => place.push_str("enie"),
            _ => place.push('_'),
        }
    }
    place
}

/// The PostgreSQL schema of a place.
pub fn schema_for(place: &str) -> String {
    format!("emisor_{place}")
}

/// The database of the emisor at `place`, for a home at `home`.
pub fn location_of(home: &DatabaseLocation, place: &str) -> DatabaseLocation {
    if place == HOME_PLACE {
        return home.clone();
    }
    match home {
        DatabaseLocation::Sqlite(path) => {
            let dir = path.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
            DatabaseLocation::Sqlite(dir.join(FOLDER).join(place).join(crate::location::DEFAULT_FILE_NAME))
        }
        DatabaseLocation::Postgres(url) => {
            // libpq's `options`: the schema is the connection's whole search path, so the other
            // emisores' tables (and the home's) are not even visible from it.
            let sep = if url.contains('?') { '&' } else { '?' };
            DatabaseLocation::Postgres(format!("{url}{sep}options=-c%20search_path%3D{}", schema_for(place)))
        }
    }
}

pub use crate::location::schema_in_url;

fn invalid(code: &'static str, message: String) -> OutboxError {
    OutboxError::invalid("emisor", code, message)
}

fn entry(row: &EmisorRow, chosen: &str) -> Emisor {
    Emisor {
        rfc: row.rfc.clone(),
        nombre: row.nombre.clone(),
        home: false,
        place: row.place.clone(),
        archived: row.archived_at_ms.is_some(),
        chosen: row.place == chosen,
        archived_at: row.archived_at_ms.and_then(DateTime::from_timestamp_millis),
    }
}

/// What [`Outbox::prepare_emisor`] found: where the new emisor's database goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEmisorPlace {
    pub rfc: String,
    pub place: String,
}

impl Outbox {
    async fn chosen_place(&self) -> Result<String> {
        Ok(match self.store().setting(SETTING_CHOSEN).await? {
            Some(v) => serde_json::from_str::<String>(&v).unwrap_or_else(|_| HOME_PLACE.into()),
            None => HOME_PLACE.into(),
        })
    }

    /// Every emisor of this Timbra, the home first, then by RFC (archived ones included).
    /// Read from the home.
    pub async fn emisores(&self) -> Result<Vec<Emisor>> {
        let rows = self.store().emisores().await?;
        let mut chosen = self.chosen_place().await?;
        if !rows.iter().any(|r| r.place == chosen && r.archived_at_ms.is_none()) {
            chosen = HOME_PLACE.into();
        }
        let home = self.emisor_settings().await?;
        let mut out = vec![Emisor {
            rfc: home.as_ref().map(|s| s.profile.rfc.clone()).unwrap_or_default(),
            nombre: home.as_ref().map(|s| s.profile.nombre.clone()).unwrap_or_default(),
            home: true,
            place: HOME_PLACE.into(),
            archived: false,
            chosen: chosen == HOME_PLACE,
            archived_at: None,
        }];
        out.extend(rows.iter().map(|r| entry(r, &chosen)));
        Ok(out)
    }

    /// The emisor to act for: `requested` (an RFC, any case), else the one chosen last, else
    /// the home. An RFC the directory lacks is refused naming the ones it has.
    pub async fn resolve_emisor(&self, requested: Option<&str>) -> Result<Emisor> {
        let all = self.emisores().await?;
        match requested.map(str::trim).filter(|r| !r.is_empty()) {
            Some(rfc) => {
                let rfc = rfc.to_uppercase();
                all.iter().find(|e| e.rfc == rfc).cloned().ok_or_else(|| {
                    let known: Vec<&str> = all.iter().map(|e| e.rfc.as_str()).filter(|r| !r.is_empty()).collect();
                    invalid(
                        "emisor_desconocido",
                        format!(
                            "{rfc} no es un emisor de este Timbra; los emisores son: {}",
                            if known.is_empty() {
                                "ninguno".to_string()
                            } else {
                                known.join(", ")
                            }
                        ),
                    )
                })
            }
            None => Ok(all.iter().find(|e| e.chosen).cloned().unwrap_or_else(|| all[0].clone())),
        }
    }

    /// Makes `rfc` the emisor shells act for when none is named (anyone may switch: it changes
    /// what a console shows, not what anyone may do).
    pub async fn choose_emisor(&self, rfc: &str, actor: &Actor) -> Result<Emisor> {
        let e = self.resolve_emisor(Some(rfc)).await?;
        if e.archived {
            return Err(invalid(
                "emisor_archivado",
                format!("{} está archivado; desarchívelo antes de elegirlo", e.rfc),
            ));
        }
        self.store()
            .put_setting(
                SETTING_CHOSEN,
                &serde_json::json!(e.place).to_string(),
                actor,
                self.now().timestamp_millis(),
            )
            .await?;
        Ok(Emisor { chosen: true, ..e })
    }

    /// Archives an added emisor (or brings it back): soporte or the contador.
    pub async fn archive_emisor(&self, rfc: &str, archived: bool, actor: &Actor) -> Result<Emisor> {
        crate::settings::may_change_settings(actor, "archivar un emisor")?;
        let e = self.resolve_emisor(Some(rfc)).await?;
        if e.home {
            return Err(invalid(
                "emisor_principal",
                format!(
                    "{} es el emisor de la base principal, que guarda la lista de emisores; no se archiva",
                    e.rfc
                ),
            ));
        }
        let at = archived.then(|| self.now().timestamp_millis());
        self.store().archive_emisor(&e.rfc, at).await?;
        self.resolve_emisor(Some(&e.rfc)).await
    }

    /// Before adding an emisor: the actor may, its RFC is neither the home's nor registered.
    /// Returns where its database goes; nothing is written.
    pub async fn prepare_emisor(&self, rfc: &str, actor: &Actor) -> Result<NewEmisorPlace> {
        crate::settings::may_change_settings(actor, "agregar un emisor")?;
        let rfc = rfc.trim().to_uppercase();
        if cfdi::catalog::rfc_persona(&rfc).is_none() {
            return Err(invalid("rfc_invalido", format!("{rfc:?} no es un RFC válido")));
        }
        let all = self.emisores().await?;
        if all[0].rfc.is_empty() {
            return Err(invalid(
                "emisor_principal_sin_configurar",
                "la base principal aún no tiene emisor: configúrelo primero (timbra init); el primer emisor es el de la base principal"
                    .into(),
            ));
        }
        if let Some(e) = all.iter().find(|e| e.rfc == rfc) {
            return Err(invalid(
                "emisor_existente",
                format!(
                    "{rfc} ya es un emisor de este Timbra ({})",
                    if e.home { "el de la base principal" } else { "agregado" }
                ),
            ));
        }
        Ok(NewEmisorPlace {
            place: place_for(&rfc),
            rfc,
        })
    }

    /// Registers an emisor whose database was set up (see [`add_emisor`]); `emisor_existente`
    /// when another process registered the RFC (or its place) first.
    pub async fn register_emisor(&self, place: &NewEmisorPlace, nombre: &str, actor: &Actor) -> Result<Emisor> {
        crate::settings::may_change_settings(actor, "agregar un emisor")?;
        let added = self
            .store()
            .insert_emisor(&place.rfc, nombre, &place.place, actor, self.now().timestamp_millis())
            .await?;
        if !added {
            let rows = self.store().emisores().await?;
            let same = rows.iter().any(|r| r.rfc == place.rfc && r.place == place.place);
            if !same {
                return Err(invalid("emisor_existente", format!("{} ya es un emisor de este Timbra", place.rfc)));
            }
        }
        self.resolve_emisor(Some(&place.rfc)).await
    }

    /// In an added emisor's database: records the RFC it was added for (once).
    pub async fn pin_directory_rfc(&self, rfc: &str, actor: &Actor) -> Result<()> {
        if let Some(existing) = self.directory_rfc().await? {
            if existing != rfc {
                return Err(invalid(
                    "emisor_no_coincide",
                    format!("esta base de datos es del emisor {existing}, no de {rfc}"),
                ));
            }
            return Ok(());
        }
        self.store()
            .put_setting(
                SETTING_DIRECTORY_RFC,
                &serde_json::json!(rfc).to_string(),
                actor,
                self.now().timestamp_millis(),
            )
            .await
    }

    /// The RFC an added emisor's database was added for (None in a home).
    pub async fn directory_rfc(&self) -> Result<Option<String>> {
        match self.store().setting(SETTING_DIRECTORY_RFC).await? {
            Some(v) => serde_json::from_str::<String>(&v)
                .map(Some)
                .map_err(|e| OutboxError::Database(format!("{SETTING_DIRECTORY_RFC}: {e}"))),
            None => Ok(None),
        }
    }

    /// Opened through the directory as `entry`: its database must be that emisor's.
    pub async fn check_directory_rfc(&self, entry: &Emisor) -> Result<()> {
        if entry.home {
            return Ok(());
        }
        let own = self.emisor_settings().await?.map(|s| s.profile.rfc);
        match own {
            Some(rfc) if rfc != entry.rfc => Err(invalid(
                "emisor_no_coincide",
                format!("la base de datos de {} tiene el emisor {rfc}: no se usa", entry.rfc),
            )),
            _ => Ok(()),
        }
    }

    /// Setting up this database's emisor as `rfc`: an added emisor's database keeps its RFC,
    /// and a home is never set up as an RFC its directory has.
    pub(crate) async fn check_home_rfc(&self, rfc: &str) -> Result<()> {
        if let Some(own) = self.directory_rfc().await? {
            if own != rfc {
                return Err(invalid(
                    "emisor_no_coincide",
                    format!("esta base de datos es del emisor {own}; para {rfc}, agregue otro emisor"),
                ));
            }
            return Ok(());
        }
        if self.store().emisores().await?.iter().any(|r| r.rfc == rfc) {
            return Err(invalid(
                "emisor_existente",
                format!("{rfc} ya es otro emisor de este Timbra: elíjalo en lugar de cambiar el de la base principal"),
            ));
        }
        Ok(())
    }
}

/// Adds an emisor to the Timbra whose home is `home` (at `home_location`): its database is
/// created at its place and set up with `setup` (the same inputs as `timbra init`), then it is
/// registered. A crash between the steps leaves a database no directory names; adding the
/// same RFC again sets that one up and registers it.
pub async fn add_emisor(
    home: &Outbox,
    home_location: &DatabaseLocation,
    setup: &crate::settings::EmisorSetup,
    password: &cfdi::secret::Secret,
    actor: &Actor,
    busy_timeout: std::time::Duration,
) -> Result<Emisor> {
    let place = home.prepare_emisor(&setup.profile.rfc, actor).await?;
    let location = location_of(home_location, &place.place);
    if let DatabaseLocation::Sqlite(path) = &location {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| OutboxError::Database(format!("{}: {e}", dir.display())))?;
        }
    }
    let new = Outbox::open_location(&location, true, busy_timeout, home.clock()).await?;
    let done = async {
        new.pin_directory_rfc(&place.rfc, actor).await?;
        new.configure_emisor(setup, password, actor).await
    }
    .await;
    new.store().close().await;
    let settings = done?;
    home.register_emisor(&place, &settings.profile.nombre, actor).await
}

/// Opens the database of `entry` (an emisor of the Timbra whose home is at `home_location`)
/// and checks that it is that emisor's.
pub async fn open_emisor(
    home_location: &DatabaseLocation,
    entry: &Emisor,
    busy_timeout: std::time::Duration,
    clock: std::sync::Arc<dyn crate::clock::Clock>,
) -> Result<Outbox> {
    let outbox = Outbox::open_location(&location_of(home_location, &entry.place), false, busy_timeout, clock).await?;
    if let Err(e) = outbox.check_directory_rfc(entry).await {
        outbox.store().close().await;
        return Err(e);
    }
    Ok(outbox)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_and_locations() {
        assert_eq!(place_for("EKU9003173C9"), "eku9003173c9");
        assert_eq!(place_for("A&B010101AB1"), "aampb010101ab1");
        assert_eq!(place_for("ÑAAA010101AB1"), "enieaaa010101ab1");
        let home = DatabaseLocation::Sqlite("/datos/timbra.db".into());
        assert_eq!(location_of(&home, HOME_PLACE), home);
        assert_eq!(
            location_of(&home, "cacx7605101p8"),
            DatabaseLocation::Sqlite("/datos/emisores/cacx7605101p8/timbra.db".into())
        );
        let pg = DatabaseLocation::Postgres("postgres://u@h/timbra".into());
        let DatabaseLocation::Postgres(url) = location_of(&pg, "cacx7605101p8") else {
            panic!("postgres")
        };
        assert_eq!(url, "postgres://u@h/timbra?options=-c%20search_path%3Demisor_cacx7605101p8");
        assert_eq!(schema_in_url(&url).as_deref(), Some("emisor_cacx7605101p8"));
        assert_eq!(schema_in_url("postgres://u@h/timbra"), None);
        let DatabaseLocation::Postgres(url) = location_of(&DatabaseLocation::Postgres("postgres://u@h/t?sslmode=disable".into()), "x1")
        else {
            panic!("postgres")
        };
        assert_eq!(url, "postgres://u@h/t?sslmode=disable&options=-c%20search_path%3Demisor_x1");
    }
}
