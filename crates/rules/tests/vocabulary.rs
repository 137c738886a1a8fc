//! The closed vocabularies, checked: every value round-trips through its text, a text outside
//! a vocabulary is refused (never mapped to a default), and each list the database enforces
//! (`migrations/<dialect>/0009_vocabulary_checks.sql`) is exactly the enum's list.

use rules::cancellation::CancellationStatus;
use rules::evidence::{EvidenceKind, EvidenceOutcome};
use rules::model::Badge;
use rules::{Role, UnknownCode};

/// Every value's text parses back to it, serializes to it, and the text list has no repeats.
fn round_trips<T>(all: &[T], as_str: fn(&T) -> &'static str, parse: fn(&str) -> Option<T>)
where
    T: PartialEq + std::fmt::Debug + serde::Serialize,
{
    let mut seen = std::collections::BTreeSet::new();
    for v in all {
        let text = as_str(v);
        assert!(seen.insert(text), "{text} twice");
        assert_eq!(parse(text).as_ref(), Some(v), "{text}");
        assert_eq!(serde_json::to_value(v).unwrap(), serde_json::Value::from(text), "{text}");
    }
    assert_eq!(seen.len(), all.len());
}

#[test]
fn every_value_round_trips_through_its_text() {
    round_trips(EvidenceKind::ALL, |v| v.as_str(), EvidenceKind::parse);
    round_trips(EvidenceOutcome::ALL, |v| v.as_str(), EvidenceOutcome::parse);
    round_trips(Badge::ALL, |v| v.as_str(), Badge::parse);
    round_trips(Role::ALL, |v| v.as_str(), Role::parse);
}

#[test]
fn a_text_outside_a_vocabulary_is_an_error_that_names_it() {
    for bad in ["", "Lookup", "lookup ", "sat_status", "otro"] {
        assert_eq!(EvidenceKind::parse(bad), None, "{bad:?}");
        assert_eq!(
            EvidenceKind::try_from(bad),
            Err(UnknownCode {
                vocabulary: "EvidenceKind",
                text: bad.to_string()
            })
        );
    }
    let e = EvidenceOutcome::try_from("timeout").unwrap_err();
    assert_eq!(e.text, "timeout");
    assert!(
        e.to_string().contains("EvidenceOutcome") && e.to_string().contains("timeout"),
        "{e}"
    );
    assert!(serde_json::from_str::<EvidenceKind>("\"otro\"").is_err());
}

/// The parenthesized list after `marker` in `sql` (whitespace between items normalized).
fn list_after(sql: &str, marker: &str) -> String {
    let at = sql.find(marker).unwrap_or_else(|| panic!("{marker} not in the migration"));
    let rest = &sql[at + marker.len()..];
    let open = rest.find(" IN (").unwrap_or_else(|| panic!("no IN list after {marker}")) + 5;
    let close = open + rest[open..].find(')').unwrap();
    rest[open..close].split(',').map(str::trim).collect::<Vec<_>>().join(", ")
}

#[test]
fn the_database_accepts_exactly_each_vocabulary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    for (dialect, checks) in [
        (
            "sqlite",
            [
                ("TRIGGER evidence_kind_known", EvidenceKind::sql_list()),
                ("TRIGGER evidence_outcome_known", EvidenceOutcome::sql_list()),
                ("TRIGGER evidence_actor_role_known", Role::sql_list()),
                ("TRIGGER invoices_badge_known ", Badge::sql_list()),
                ("TRIGGER invoices_badge_known_on_update", Badge::sql_list()),
                ("TRIGGER cfdis_cancellation_status_known ", CancellationStatus::sql_list()),
                ("TRIGGER cfdis_cancellation_status_known_on_update", CancellationStatus::sql_list()),
            ]
            .to_vec(),
        ),
        (
            "postgres",
            [
                ("CONSTRAINT evidence_kind_known", EvidenceKind::sql_list()),
                ("CONSTRAINT evidence_outcome_known", EvidenceOutcome::sql_list()),
                ("CONSTRAINT evidence_actor_role_known", Role::sql_list()),
                ("CONSTRAINT invoices_badge_known", Badge::sql_list()),
                ("CONSTRAINT cfdis_cancellation_status_known", CancellationStatus::sql_list()),
            ]
            .to_vec(),
        ),
    ] {
        let path = dir.join(dialect).join("0009_vocabulary_checks.sql");
        let sql = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (marker, list) in checks {
            assert_eq!(list_after(&sql, marker), list, "{dialect}: {marker}");
        }
    }
}

/// The read models keep the TypeScript the app was generated from: a converted field is still
/// declared as the text it serializes to (`ts(as = "String")`).
#[test]
fn converted_fields_keep_their_typescript() {
    use ts_rs::TS;
    let cfg = ts_rs::Config::default();
    let evidence = rules::model::EvidenceInfo::decl(&cfg);
    assert!(evidence.contains("kind: string,"), "{evidence}");
    assert!(evidence.contains("outcome: string | null,"), "{evidence}");
    let attempt = rules::model::AttemptInfo::decl(&cfg);
    assert!(attempt.contains("resolution: string,"), "{attempt}");
    let try_info = rules::model::TryInfo::decl(&cfg);
    assert!(try_info.contains("operation: string,"), "{try_info}");
}
