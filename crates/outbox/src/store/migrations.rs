//! The migrations as applied databases know them. sqlx records the SHA-384 of a migration's
//! text when it applies it and refuses to open a database whose recorded checksum differs
//! from the embedded one, so an applied migration is immutable. Its *comments* may still need
//! a correction (a wrong reference, a clearer word): every released migration is pinned here
//! by the checksum databases recorded and by the SHA-256 of its statements (the text without
//! its comment lines). The embedded migration carries the recorded checksum, and a test per
//! dialect proves that only comment lines changed — any change to a statement fails it.

use std::borrow::Cow;

use sqlx::migrate::{Migration, MigrationType};

/// The migrations of one dialect's folder, `migrations/<dialect>/` at the top of the repository,
/// in order: `(version, description, SQL)`. One list for both dialects, so each has the same
/// versions and names; a new migration is one more line here (and its two files).
macro_rules! dialect_migrations {
    ($dialect:literal) => {
        $crate::store::migrations::dialect_migrations!(@ $dialect;
            1 "0001" "outbox",
            2 "0002" "exactly_once",
            3 "0003" "fiscal_workflows",
            4 "0004" "cancellations",
            5 "0005" "intake_channels",
            6 "0006" "customers_products",
            7 "0007" "workers",
            8 "0008" "one_live_document",
            9 "0009" "vocabulary_checks",
            10 "0010" "credit_notes",
            11 "0011" "folios",
            12 "0012" "bandeja_search",
            13 "0013" "emisores",
            14 "0014" "csd_history",
            15 "0015" "sat_requests",
            16 "0016" "sat_reconciliation",
            17 "0017" "api_token_limits",
            18 "0018" "sat_unknown_decisions",
            19 "0019" "deferred_notify",
            20 "0020" "tries_counted_by_trigger"
        )
    };
    (@ $dialect:literal; $($version:literal $file:literal $name:literal),*) => {
        &[$((
            $version,
            $name,
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations/", $dialect, "/", $file, "_", $name, ".sql")),
        )),*]
    };
}
pub(crate) use dialect_migrations;

/// The folder of one dialect's migration files.
#[cfg(test)]
pub(crate) fn folder(dialect: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../migrations")
        .join(dialect)
}

/// A released migration of one dialect.
#[derive(Debug, Clone, Copy)]
pub struct Released {
    pub version: i64,
    /// What databases recorded when they applied it: SHA-384 of its text as released (hex).
    pub checksum: &'static str,
    /// SHA-256 (hex) of [`statements`] of its text: what must never change.
    pub statements: &'static str,
}

/// The migrations of `list` as sqlx runs them: a released one with the checksum databases
/// recorded for it, a new one (not yet in `released`) with the checksum of its text.
pub fn embedded(list: &[(i64, &'static str, &'static str)], released: &[Released]) -> Vec<Migration> {
    list.iter()
        .map(|(version, description, sql)| {
            let mut m = Migration::new(
                *version,
                Cow::Borrowed(*description),
                MigrationType::Simple,
                Cow::Borrowed(*sql),
                false,
            );
            if let Some(checksum) = released.iter().find(|r| r.version == *version).and_then(|r| from_hex(r.checksum)) {
                m.checksum = Cow::Owned(checksum);
            }
            m
        })
        .collect()
}

/// A migration's text without its comment lines (lines whose first non-blank characters are
/// `--`): what a database executes.
pub fn statements(sql: &str) -> String {
    sql.lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The check both dialects' tests run: every migration of `list` is pinned in `released`
/// with the checksum of its text (unless only comments changed since) and the hash of its
/// statements. The message names what to pin.
#[cfg(test)]
pub fn check_pinned(dialect: &str, list: &[(i64, &'static str, &'static str)], released: &[Released]) {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let mut problems = Vec::new();
    for (version, description, sql) in list {
        let statements = cfdi::digest::sha256_hex(statements(sql).as_bytes());
        let text = Migration::new(
            *version,
            Cow::Borrowed(*description),
            MigrationType::Simple,
            Cow::Borrowed(*sql),
            false,
        );
        match released.iter().find(|r| r.version == *version) {
            None => problems.push(format!(
                "{dialect} {version:04}_{description}: no está fijada; agregue Released {{ version: {version}, checksum: \"{}\", statements: \"{statements}\" }}",
                hex(&text.checksum)
            )),
            Some(r) if r.statements != statements => problems.push(format!(
                "{dialect} {version:04}_{description}: sus sentencias cambiaron después de publicarse (una migración aplicada es inmutable: agregue una nueva)"
            )),
            Some(_) => {}
        }
    }
    for r in released {
        if !list.iter().any(|(v, _, _)| *v == r.version) {
            problems.push(format!("{dialect}: la migración fijada {} ya no existe", r.version));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_drop_only_comment_lines() {
        let sql = "-- a comment\nCREATE TABLE t (a TEXT); -- trailing stays\n    -- indented comment\nSELECT '--';\n";
        assert_eq!(statements(sql), "CREATE TABLE t (a TEXT); -- trailing stays\nSELECT '--';");
    }

    #[test]
    fn a_released_migration_keeps_its_recorded_checksum() {
        let list = [(1, "one", "-- edited comment\nSELECT 1;\n")];
        let recorded = "00ff".repeat(24);
        let released = [Released {
            version: 1,
            checksum: Box::leak(recorded.clone().into_boxed_str()),
            statements: "unused here",
        }];
        let m = embedded(&list, &released);
        assert_eq!(m[0].checksum.as_ref(), from_hex(&recorded).unwrap().as_slice());
        // A migration not yet released carries its own text's checksum.
        let fresh = embedded(&list, &[]);
        assert_ne!(fresh[0].checksum.as_ref(), m[0].checksum.as_ref());
        assert_eq!(fresh[0].checksum.len(), 48);
    }

    #[test]
    #[should_panic(expected = "sus sentencias cambiaron")]
    fn a_changed_statement_is_refused() {
        let list = [(1, "one", "SELECT 2;\n")];
        let released = [Released {
            version: 1,
            checksum: "",
            statements: "0000",
        }];
        check_pinned("sqlite", &list, &released);
    }
}
