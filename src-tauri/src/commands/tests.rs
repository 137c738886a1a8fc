//! The role checks as the window meets them: a command called directly over IPC (the
//! button hidden or not) is refused for the wrong role and for a contador whose unlock
//! expired or was spent, and the refusal carries its own code.
use std::sync::Arc;

use cfdi::secret::Secret;
use chrono::Timelike;
use outbox::{Clock, Role, SqliteOptions, TestClock};

use super::*;

async fn desk() -> (tempfile::TempDir, Arc<TestClock>, Ready, i64) {
    let dir = tempfile::tempdir().expect("tempdir");
    // Whole seconds: a backup's file name carries its instant to the second.
    let clock = Arc::new(TestClock::new(chrono::Utc::now().with_nanosecond(0).expect("a valid instant")));
    let seat = crate::state::SeatIdentity {
        name: "Sofía".into(),
        role: Role::Soporte,
        confirmed: true,
    };
    let ready = Ready::open_with_clock(SqliteOptions::new(dir.path().join("timbra.db")).create(true), seat, clock.clone())
        .await
        .expect("open");
    let now_local = cfdi::tz::local_at(ready.outbox.now(), "42501");
    let rec = ready
        .outbox
        .record_sale_json(&crate::demo::sale_json(0, now_local), None, &ready.actor())
        .await
        .expect("record");
    (dir, clock, ready, rec.invoice_id)
}

/// A contador-only action that reaches the outbox's role check before anything else.
async fn accept_risk(ready: &Ready, invoice_id: i64) -> Res<()> {
    act_on_invoice(
        ready,
        invoice_id,
        ActionKindDto::ReprocessAcceptingRisk,
        Some("acepto el riesgo de duplicado".into()),
        None,
    )
    .await
}

#[tokio::test]
async fn a_contador_only_command_is_refused_for_soporte_without_a_pin_and_for_an_expired_or_spent_unlock() {
    let (_dir, clock, ready, invoice_id) = desk().await;
    // Soporte (the default seat) calling the contador's command directly.
    let r = accept_risk(&ready, invoice_id).await;
    assert!(
        matches!(&r, Err(AppError::Outbox(outbox::OutboxError::Forbidden { role, .. })) if *role == "soporte"),
        "{r:?}"
    );

    // No contador PIN yet: a desk that got itself into the contador's role anyway (the
    // command layer only lets a PIN do that) is refused with the code the UI turns into
    // "Configure el PIN del contador en Ajustes".
    ready.act_as(Role::Contador);
    assert_eq!(
        ready.operator(),
        OperatorDto {
            name: "Sofía".into(),
            role: Role::Contador
        }
    );
    let r = accept_risk(&ready, invoice_id).await;
    assert!(
        matches!(&r, Err(AppError::Outbox(outbox::OutboxError::ContadorPinMissing { .. }))),
        "no PIN: {r:?}"
    );
    assert_eq!(r.as_ref().map_err(AppError::code).err(), Some("contador_pin_missing"));

    // The first PIN takes the emisor's CSD password (sandbox: SAT's public test one).
    let pin = Secret::new("482913");
    let wrong = ready
        .outbox
        .set_role_credential(
            Role::Contador,
            &pin,
            outbox::role_credentials::RoleProof::CsdPassword(&Secret::new("no-es")),
            &ready.actor(),
        )
        .await;
    assert!(matches!(wrong, Err(outbox::OutboxError::Forbidden { .. })), "{wrong:?}");
    ready
        .outbox
        .set_role_credential(
            Role::Contador,
            &pin,
            outbox::role_credentials::RoleProof::CsdPassword(&crate::sandbox::test_password()),
            &ready.actor(),
        )
        .await
        .expect("pin");
    let r = accept_risk(&ready, invoice_id).await;
    assert!(
        matches!(&r, Err(AppError::Outbox(outbox::OutboxError::RoleLocked { role, .. })) if *role == "contador"),
        "never unlocked: {r:?}"
    );

    // Unlocked, then the unlock's 15 minutes pass.
    ready.outbox.unlock_role(Role::Contador, &pin).await.expect("unlock");
    clock.advance(outbox::role_credentials::UNLOCK_TTL + chrono::Duration::seconds(1));
    let r = accept_risk(&ready, invoice_id).await;
    assert!(
        matches!(&r, Err(AppError::Outbox(outbox::OutboxError::RoleLocked { .. }))),
        "expired: {r:?}"
    );

    // Live: the role check passes and the strategy answers (nothing is at risk yet).
    ready.outbox.unlock_role(Role::Contador, &pin).await.expect("unlock");
    let r = accept_risk(&ready, invoice_id).await;
    assert!(
        matches!(&r, Err(AppError::Outbox(outbox::OutboxError::ActionRefused { .. }))),
        "live: {r:?}"
    );

    // Spent by a risky action (the reconciliation import): the next one asks again.
    import_cfdis_as(&ready, vec![]).await.expect("import with a live unlock");
    let r = import_cfdis_as(&ready, vec![]).await;
    assert!(
        matches!(&r, Err(AppError::Outbox(outbox::OutboxError::RoleLocked { .. }))),
        "spent: {r:?}"
    );

    // Leaving the contador's role: back to the seat's own.
    ready.stop_acting_as(Role::Contador);
    assert_eq!(ready.operator().role, Role::Soporte);

    let detail = ready.outbox.invoice(&InvoiceRef::Id(invoice_id)).await.expect("detail");
    let refusals: Vec<_> = detail
        .timeline
        .iter()
        .filter(|t| t.kind == "action_forbidden")
        .map(|t| (t.detail["reason"].as_str().unwrap_or_default().to_string(), t.actor.name.clone()))
        .collect();
    let reasons: Vec<&str> = refusals.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        reasons,
        ["rol", "sin_pin", "bloqueado", "bloqueado"],
        "each refusal is on the timeline"
    );
    assert!(refusals.iter().all(|(_, who)| who == "Sofía"), "{refusals:?}");
}

/// The seat's name is who every write from this desk is recorded as: the sale, a note, an
/// operator action and its evidence — whatever role it acts in.
#[tokio::test]
async fn the_seat_operator_is_recorded_on_every_write() {
    let (_dir, _clock, ready, invoice_id) = desk().await;
    let invoice = InvoiceRef::Id(invoice_id);
    ready
        .outbox
        .add_note(&invoice, "revisar el RFC", &ready.actor())
        .await
        .expect("note");
    ready.set_seat(crate::state::SeatIdentity {
        name: "Lucía Pérez".into(),
        role: Role::Personal,
        confirmed: true,
    });
    act_on_invoice(
        &ready,
        invoice_id,
        ActionKindDto::SendToContador,
        Some("¿se factura así?".into()),
        None,
    )
    .await
    .expect("send to contador");
    let detail = ready.outbox.invoice(&invoice).await.expect("detail");
    let by = |kind: &str| {
        detail
            .timeline
            .iter()
            .filter(|t| t.kind == kind)
            .map(|t| (t.actor.name.clone(), t.actor.role))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        by("sale_recorded"),
        [("Sofía".to_string(), Role::Soporte)],
        "{:#?}",
        detail.timeline
    );
    assert_eq!(detail.notes[0].author.name, "Sofía");
    assert!(
        detail
            .notes
            .iter()
            .any(|n| n.author.name == "Lucía Pérez" && n.author.role == Role::Personal),
        "{:?}",
        detail.notes
    );
    let actions: Vec<_> = detail
        .timeline
        .iter()
        .filter(|t| t.source == outbox::model::TimelineSource::Evidence)
        .map(|t| t.actor.name.clone())
        .collect();
    assert_eq!(actions, ["Lucía Pérez"], "{:#?}", detail.timeline);
}

#[tokio::test]
async fn the_app_backs_up_on_its_schedule_and_names_a_bad_policy() {
    let (_dir, clock, ready, _) = desk().await;
    let st = crate::backups::status(&ready).await.expect("status");
    assert_eq!(
        (st.policy.enabled, st.policy.every_hours, st.policy.keep),
        (true, 24, 7),
        "daily, a week kept"
    );
    assert_eq!((st.count, st.newest.as_deref()), (0, None));

    crate::backups::tick(&ready).await.expect("first tick");
    clock.advance(chrono::Duration::hours(1));
    crate::backups::tick(&ready).await.expect("an hour later");
    assert_eq!(crate::backups::status(&ready).await.expect("status").count, 1, "one per day");

    let bad = crate::backups::save(
        &ready,
        &outbox::backup_schedule::BackupPolicy {
            enabled: true,
            every_hours: 0,
            keep: 2,
        },
    )
    .await;
    assert!(
        bad.as_ref()
            .err()
            .and_then(AppError::field_errors)
            .is_some_and(|errors| errors[0].field == "respaldos.cada_horas"),
        "{bad:?}"
    );
    crate::backups::save(
        &ready,
        &outbox::backup_schedule::BackupPolicy {
            enabled: true,
            every_hours: 1,
            keep: 2,
        },
    )
    .await
    .expect("save");
    for _ in 0..3 {
        clock.advance(chrono::Duration::hours(2));
        crate::backups::tick(&ready).await.expect("tick");
    }
    let st = crate::backups::status(&ready).await.expect("status");
    assert_eq!(st.count, 2, "the newest two kept");
    assert_eq!(st.newest, Some(clock.now().to_rfc3339()));
    assert!(st.last_error.is_none());
}

#[tokio::test]
async fn a_restore_from_ajustes_is_the_contadors_refused_while_another_drain_runs_and_reopens_the_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = AppState::start_with(None, Some(dir.path().join("timbra.db").display().to_string())).await;
    let ready = state.ready().expect("opened");
    let actor = ready.actor();
    let now_local = cfdi::tz::local_at(ready.outbox.now(), "42501");
    let record = |i: usize| {
        let outbox = ready.outbox.clone();
        let actor = actor.clone();
        async move {
            outbox
                .record_sale_json(&crate::demo::sale_json(i, now_local), None, &actor)
                .await
                .expect("record");
        }
    };
    record(0).await;
    let pin = Secret::new("482913");
    ready
        .outbox
        .set_role_credential(
            Role::Contador,
            &pin,
            outbox::role_credentials::RoleProof::CsdPassword(&crate::sandbox::test_password()),
            &actor,
        )
        .await
        .expect("pin");
    crate::backups::now(ready).await.expect("backup");
    let backup = std::fs::read_dir(&ready.backup_dir)
        .expect("backups")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "db"))
        .expect("a backup");
    record(1).await;
    let total = |r: &'static Ready| async move { r.outbox.counts().await.expect("counts").total };
    assert_eq!(total(ready).await, 2);

    // What will happen, nothing moved.
    let preview = crate::backups::restore_preview(ready, &backup).await.expect("preview");
    assert_eq!((preview.backup_invoices, preview.current_invoices), (1, 2), "{preview:?}");
    assert!(preview.backup_at.is_some() && preview.other_drains.is_empty(), "{preview:?}");
    // A file that is not a Timbra database is refused before anything happens.
    let notes = dir.path().join("notas.db");
    std::fs::write(&notes, "no es una base de datos").expect("write");
    assert!(crate::backups::restore_preview(ready, &notes).await.is_err());

    // The desk's own role (not the contador): refused.
    let r = crate::backups::restore_database(&state, &backup).await;
    assert!(
        matches!(&r, Err(AppError::Outbox(outbox::OutboxError::Forbidden { .. }))),
        "{:?}",
        r.map(|_| ())
    );

    // The contador, unlocked, while another process drains the file: refused in words, nothing
    // moved and nothing spent.
    ready.act_as(Role::Contador);
    ready.outbox.unlock_role(Role::Contador, &pin).await.expect("unlock");
    let drain = outbox::workers::WorkerIdentity {
        worker: "drain".into(),
        program: "timbra drain".into(),
        host: outbox::workers::host_name(),
        pid: std::process::id() + 1,
    };
    let id = drain.registration_id();
    ready.outbox.register_worker(&id, &drain).await.expect("register");
    let r = crate::backups::restore_database(&state, &backup).await.map(|_| ());
    assert!(
        r.as_ref()
            .err()
            .and_then(AppError::field_errors)
            .is_some_and(|e| e[0].code == "base_en_uso" && e[0].message.contains("timbra drain")),
        "{r:?}"
    );
    assert!(std::ptr::eq(state.ready().expect("ready"), ready), "nothing reopened");
    assert_eq!(total(ready).await, 2);
    ready.outbox.unregister_worker(&id).await.expect("unregister");

    // Restored: the database reopened in place shows the backup's invoices, the one it
    // replaced kept aside, the history gap open, no role entered any more.
    let (next, restored) = crate::backups::restore_database(&state, &backup).await.expect("reopened");
    let restored = restored.expect("restored");
    assert_eq!(restored.invoices, 1);
    assert!(std::ptr::eq(state.ready().expect("ready"), next) && !std::ptr::eq(next, ready));
    assert_eq!(total(next).await, 1);
    assert!(
        restored.previous.as_ref().is_some_and(|p| std::path::Path::new(p).exists()),
        "{restored:?}"
    );
    assert_eq!(next.outbox.history_gaps().await.expect("gaps").len(), 1);
    assert_eq!(next.operator().role, Role::Personal);
    // The unlock was spent: restoring again asks for the PIN again.
    next.act_as(Role::Contador);
    let again = crate::backups::restore_database(&state, &backup).await.map(|_| ());
    assert!(
        matches!(&again, Err(AppError::Outbox(outbox::OutboxError::RoleLocked { .. }))),
        "{again:?}"
    );
}
