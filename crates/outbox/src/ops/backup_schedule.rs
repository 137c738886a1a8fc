//! Scheduled automatic backups: the app (or any long-running shell) asks [`run_if_due`] now
//! and then; when the newest backup in the folder is older than the policy's interval, it
//! takes one with [`crate::backup::backup`] (whole or absent, checked, 0600) named by its
//! instant — `timbra-20261201T150000Z.db` — and then keeps the newest `keep` of those,
//! deleting older ones. Only files whose whole name is one of ours are ever deleted (a backup
//! the user copied in as `timbra-antes-del-cierre.db` stays), and a leftover `.parcial` of an
//! interrupted backup is removed before the next one.
//!
//! When the last backup was taken is read from the folder itself, so there is nothing to
//! keep in sync: a deleted folder means "never", a restored machine resumes the schedule.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::backup::BackupReport;
use crate::error::{OutboxError, Result};
use crate::store::sqlite::SqliteStore;

const PREFIX: &str = "timbra-";
const SUFFIX: &str = ".db";
const STAMP: &str = "%Y%m%dT%H%M%SZ";

/// How often, and how many to keep (the app's Ajustes sends and shows it as it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct BackupPolicy {
    pub enabled: bool,
    /// 1–720.
    pub every_hours: u32,
    /// 1–365.
    pub keep: u32,
}

impl Default for BackupPolicy {
    /// Daily, a week of them: a fresh install is protected without anyone deciding to.
    fn default() -> BackupPolicy {
        BackupPolicy {
            enabled: true,
            every_hours: 24,
            keep: 7,
        }
    }
}

impl BackupPolicy {
    /// Every hour up to every 30 days; 1 to 365 copies.
    pub fn check(&self) -> Result<()> {
        if !(1..=720).contains(&self.every_hours) {
            return Err(OutboxError::invalid(
                "respaldos.cada_horas",
                "fuera_de_rango",
                "el intervalo de los respaldos va de 1 a 720 horas",
            ));
        }
        if !(1..=365).contains(&self.keep) {
            return Err(OutboxError::invalid(
                "respaldos.conservar",
                "fuera_de_rango",
                "se conservan de 1 a 365 respaldos",
            ));
        }
        Ok(())
    }
}

/// One scheduled backup, and the old ones it let go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScheduledBackup {
    pub report: BackupReport,
    pub at: DateTime<Utc>,
    pub removed: Vec<PathBuf>,
}

/// The file name of a backup taken at `at`.
pub fn file_name(at: DateTime<Utc>) -> String {
    format!("{PREFIX}{}{SUFFIX}", at.format(STAMP))
}

/// The instant a backup file name stands for, if it is one of ours.
pub fn instant_of(name: &str) -> Option<DateTime<Utc>> {
    let stamp = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    NaiveDateTime::parse_from_str(stamp, STAMP).ok().map(|n| n.and_utc())
}

/// The scheduled backups in `dir`, newest first (none when the folder does not exist).
pub fn existing(dir: &Path) -> Result<Vec<(DateTime<Utc>, PathBuf)>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(folder_error(dir, e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| folder_error(dir, e))?;
        let name = entry.file_name();
        if let Some(at) = name.to_str().and_then(instant_of) {
            if entry.file_type().map(|t| t.is_file()).unwrap_or(false) {
                found.push((at, entry.path()));
            }
        }
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    Ok(found)
}

/// Whether a backup is due at `now`, given the newest one's instant.
pub fn due(newest: Option<DateTime<Utc>>, now: DateTime<Utc>, policy: &BackupPolicy) -> bool {
    policy.enabled
        && match newest {
            None => true,
            // A clock set back keeps an old backup "in the future": take one anyway.
            Some(at) => at > now || now - at >= Duration::hours(i64::from(policy.every_hours)),
        }
}

/// Takes a backup into `dir` now (creating the folder, owner-only) and keeps the newest `keep`.
pub async fn backup_now(store: &SqliteStore, dir: &Path, now: DateTime<Utc>, keep: u32) -> Result<ScheduledBackup> {
    create_folder(dir)?;
    remove_partials(dir);
    let dest = dir.join(file_name(now));
    let report = crate::backup::backup(store, &dest).await?;
    let mut removed = Vec::new();
    for (_, old) in existing(dir)?.into_iter().skip(keep.max(1) as usize) {
        match std::fs::remove_file(&old) {
            Ok(()) => removed.push(old),
            Err(e) => tracing::warn!(path = %old.display(), error = %e, "no se pudo borrar un respaldo antiguo"),
        }
    }
    tracing::info!(path = %report.path.display(), bytes = report.bytes, removed = removed.len(), "respaldo automático");
    Ok(ScheduledBackup { report, at: now, removed })
}

/// [`backup_now`] when the policy says one is due; `None` otherwise.
pub async fn run_if_due(store: &SqliteStore, dir: &Path, now: DateTime<Utc>, policy: &BackupPolicy) -> Result<Option<ScheduledBackup>> {
    let newest = existing(dir)?.first().map(|(at, _)| *at);
    if !due(newest, now, policy) {
        return Ok(None);
    }
    backup_now(store, dir, now, policy.keep).await.map(Some)
}

fn create_folder(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    // Windows: no mode bits; the folder inherits the ACL of the folder it is made in.
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|e| folder_error(dir, e))
}

fn remove_partials(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let ours = name
            .to_str()
            .and_then(|n| n.strip_suffix(".parcial"))
            .is_some_and(|n| instant_of(n).is_some());
        if ours {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn folder_error(dir: &Path, e: std::io::Error) -> OutboxError {
    OutboxError::invalid(
        "respaldos.carpeta",
        "carpeta",
        format!("la carpeta de respaldos {} no se puede usar: {e}", dir.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .map(|d| d.with_timezone(&Utc))
            .unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn names_round_trip_and_only_ours_are_recognised() {
        let t = at("2026-12-01T15:04:05Z");
        assert_eq!(file_name(t), "timbra-20261201T150405Z.db");
        assert_eq!(instant_of(&file_name(t)), Some(t));
        for other in [
            "timbra-antes-del-cierre.db",
            "timbra-20261201T150405Z.db.parcial",
            "otro-20261201T150405Z.db",
            "timbra.db",
        ] {
            assert_eq!(instant_of(other), None, "{other}");
        }
    }

    #[test]
    fn due_after_the_interval_or_when_none_or_disabled_never() {
        let p = BackupPolicy::default();
        let now = at("2026-12-02T10:00:00Z");
        assert!(due(None, now, &p));
        assert!(!due(Some(at("2026-12-01T10:00:01Z")), now, &p));
        assert!(due(Some(at("2026-12-01T10:00:00Z")), now, &p));
        assert!(
            due(Some(at("2026-12-03T10:00:00Z")), now, &p),
            "a backup from the future (clock set back)"
        );
        let off = BackupPolicy { enabled: false, ..p };
        assert!(!due(None, now, &off));
    }

    #[test]
    fn a_policy_out_of_range_names_its_field() {
        let bad = BackupPolicy {
            every_hours: 0,
            ..BackupPolicy::default()
        };
        assert!(matches!(bad.check(), Err(OutboxError::Invalid(v)) if v.0[0].field == "respaldos.cada_horas"));
        let bad = BackupPolicy {
            keep: 0,
            ..BackupPolicy::default()
        };
        assert!(matches!(bad.check(), Err(OutboxError::Invalid(v)) if v.0[0].field == "respaldos.conservar"));
        assert!(BackupPolicy::default().check().is_ok());
    }
}
