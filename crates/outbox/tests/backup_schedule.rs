//! Scheduled automatic backups against a real database: one per interval, named by its
//! instant, the newest N kept, nothing else in the folder touched, and the newest one restores
//! to the outbox as it was. SQLite only: the backups are SQLite files (a PostgreSQL database is
//! backed up by the server, README "Teams").

mod common;

use chrono::Duration;
use common::*;
use outbox::backup_schedule::{self, BackupPolicy};
use outbox::{Clock, Outbox};

#[tokio::test]
async fn one_backup_per_interval_the_newest_kept_and_the_newest_restores() {
    let e = env(Backend::Sqlite).await;
    e.outbox
        .record_sale_json(ingreso("r-1").as_bytes(), None, &staff())
        .await
        .expect("record");
    let dir = e.dir().join("respaldos");
    let policy = BackupPolicy {
        enabled: true,
        every_hours: 24,
        keep: 3,
    };
    let run = || backup_schedule::run_if_due(e.outbox.store().sqlite().expect("sqlite"), &dir, e.clock.now(), &policy);

    let first = run().await.expect("first").expect("none yet: due");
    assert_eq!(first.report.invoices, 1);
    assert!(first.removed.is_empty());
    // What the user keeps there, and an interrupted backup's leftover.
    std::fs::write(dir.join("timbra-antes-del-cierre.db"), b"mine").unwrap();
    std::fs::write(dir.join("notas.txt"), b"mine").unwrap();
    let leftover = dir.join(format!(
        "{}.parcial",
        backup_schedule::file_name(e.clock.now() - Duration::days(30))
    ));
    std::fs::write(&leftover, b"half").unwrap();

    e.clock.advance(Duration::hours(23));
    assert!(run().await.expect("not due").is_none(), "23 hours later nothing is due");

    let mut taken = vec![first.at];
    for day in 0..5 {
        e.clock.advance(Duration::hours(25));
        e.outbox
            .record_sale_json(ingreso(&format!("r-d{day}")).as_bytes(), None, &staff())
            .await
            .expect("record");
        let b = run().await.expect("backup").expect("due after 25 hours");
        taken.push(b.at);
    }
    let kept = backup_schedule::existing(&dir).expect("list");
    let kept_at: Vec<_> = kept.iter().map(|(at, _)| *at).collect();
    let mut newest: Vec<_> = taken.iter().rev().take(3).copied().collect();
    newest.sort_by_key(|t| std::cmp::Reverse(*t));
    assert_eq!(kept_at, newest, "the newest three, newest first");
    assert!(
        dir.join("timbra-antes-del-cierre.db").exists() && dir.join("notas.txt").exists(),
        "not ours: untouched"
    );
    assert!(!leftover.exists(), "an interrupted backup's leftover is cleared");
    // Windows: no mode bits; the backup inherits its folder's ACL (nothing to assert).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kept[0].1).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "a backup is the company's fiscal history");
    }

    // The newest restores to the outbox with every sale recorded before it.
    let target = e.dir().join("restaurada.db");
    outbox::backup::restore(&kept[0].1, &target, e.clock.now()).await.expect("restore");
    let restored = Outbox::open_sqlite(&outbox::SqliteOptions::new(target), e.clock.clone())
        .await
        .expect("open");
    assert_eq!(restored.counts().await.expect("counts").total, 6);

    // Disabled: nothing more, however long it has been.
    e.clock.advance(Duration::days(10));
    let off = BackupPolicy { enabled: false, ..policy };
    assert!(
        backup_schedule::run_if_due(e.outbox.store().sqlite().expect("sqlite"), &dir, e.clock.now(), &off)
            .await
            .expect("off")
            .is_none()
    );
}

/// A restore while a drain works the database (the app's or `timbra drain`: a live row in
/// `workers`) is refused in words, nothing moved; once the drain stops, it goes ahead.
#[tokio::test]
async fn a_restore_refuses_while_a_drain_works_the_database() {
    let e = env(Backend::Sqlite).await;
    e.outbox
        .record_sale_json(ingreso("r-1").as_bytes(), None, &staff())
        .await
        .expect("record");
    let backup = backup_schedule::backup_now(
        e.outbox.store().sqlite().expect("sqlite"),
        &e.dir().join("respaldos"),
        e.clock.now(),
        3,
    )
    .await
    .expect("backup");
    let target = e.dir().join("caja.db");
    let caja = Outbox::open_sqlite(&outbox::SqliteOptions::new(&target).create(true), e.clock.clone())
        .await
        .expect("open");
    let drain = outbox::workers::WorkerIdentity {
        worker: "drain".into(),
        program: "timbra drain".into(),
        host: "caja-1".into(),
        pid: 4242,
    };
    let id = drain.registration_id();
    caja.register_worker(&id, &drain).await.expect("register");
    let refused = outbox::backup::restore(&backup.report.path, &target, e.clock.now())
        .await
        .expect_err("a drain works it");
    let text = refused.to_string();
    assert!(text.contains("está en uso") && text.contains("timbra drain en caja-1"), "{text}");
    let aside: Vec<_> = std::fs::read_dir(e.dir())
        .unwrap()
        .flatten()
        .map(|f| f.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("antes-de-restaurar") || n.contains("restaurando"))
        .collect();
    assert!(aside.is_empty(), "nothing moved: {aside:?}");
    caja.unregister_worker(&id).await.expect("unregister");
    caja.store().close().await;
    outbox::backup::restore(&backup.report.path, &target, e.clock.now())
        .await
        .expect("no drain: restored");
}
