//! The outbox store: what intake writes, the reads of the console, notes, settings, the
//! immutability triggers and the query plans of the list.

mod common;

use chrono::{DateTime, Duration, Utc};
use common::*;
use outbox::intake::{pac_idempotency_key, sha256_hex};
use outbox::model::{AttemptReason, Badge, BodyFormat, FechaSource, InvoiceRef, InvoiceState, ListFilter, TimelineSource};
use outbox::OutboxError;

async fn recording_a_sale_writes_sale_invoice_attempt_and_event_together(backend: Backend) {
    let e = env(backend).await;
    let r = e
        .outbox
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .expect("record");
    assert_eq!(
        (r.sale_id.as_str(), r.state, r.replayed),
        ("pedido-4471", InvoiceState::Pending, false)
    );
    assert_eq!(e.counts().await, [1, 1, 1, 1, 1]);

    let d = e.outbox.invoice(&InvoiceRef::Id(r.invoice_id)).await.expect("detail");
    assert_eq!(d.invoice.sale_id, "pedido-4471");
    assert_eq!((d.invoice.state, d.invoice.badge), (InvoiceState::Pending, Badge::Pendiente));
    assert_eq!((d.invoice.serie.as_deref(), d.invoice.folio.as_deref()), (Some("F"), Some("4471")));
    assert_eq!((d.invoice.total.as_str(), d.invoice.moneda.as_str()), ("116.00", "MXN"));
    assert_eq!(d.invoice.receptor_rfc, "URE180429TM6");
    assert_eq!(d.invoice.next_try_at, Some(e.outbox.now()));
    assert_eq!(
        d.invoice.fecha_deadline.to_rfc3339(),
        "2026-12-02T18:00:00+00:00",
        "Fecha 12:00 at UTC-6 + 72 h"
    );
    assert_eq!(d.fencing_token, 0);
    assert_eq!(d.lease, None);

    assert_eq!(d.sale.body_sha256, sha256_hex(d.sale.body.to_canonical_json().as_bytes()));
    assert_eq!(
        d.sale.body,
        cfdi::sale::Sale::from_json(sale_json("ingreso-pedido-4471").as_bytes()).unwrap()
    );
    assert_eq!((d.sale.source.as_str(), d.sale.recorded_by.name.as_str()), ("test", "ana"));

    assert_eq!(d.attempts.len(), 1);
    let a = &d.attempts[0];
    assert_eq!(
        (a.attempt_no, a.reason, a.body_format),
        (1, AttemptReason::Initial, BodyFormat::Xml)
    );
    assert_eq!((a.fecha.as_str(), a.fecha_source), ("2026-11-29T12:00:00", FechaSource::OccurredAt));
    assert_eq!(a.pac, "sandbox");
    assert_eq!(a.pac_idempotency_key, pac_idempotency_key("EKU9003173C9", "pedido-4471", 1));
    assert_eq!(a.mapping_version, i64::from(cfdi::mapping::MAPPING_VERSION));
    assert_eq!(a.resolution, "open");

    // The frozen body is the sealed comprobante, its hash is right and its Sello verifies.
    let (format, body) = e.outbox.attempt_body(a.id).await.expect("body");
    assert_eq!(format, BodyFormat::Xml);
    assert_eq!(sha256_hex(&body), a.body_sha256);
    assert_eq!(body.len() as i64, a.body_len);
    let doc = cfdi::xml::Document::parse(&body).expect("frozen body parses");
    assert_eq!(doc.root.attr("Fecha"), Some("2026-11-29T12:00:00"));
    assert_eq!(doc.root.attr("NoCertificado"), a.no_certificado.as_deref());
    let v = cfdi::seal::verify(&doc, None);
    assert!(
        v.is_valid() && matches!(v.checks[0].status, cfdi::seal::CheckStatus::Valid(_)),
        "{v:?}"
    );

    assert_eq!(d.timeline.len(), 1);
    let t = &d.timeline[0];
    assert_eq!((t.kind.as_str(), t.source), ("sale_recorded", TimelineSource::Event));
    assert_eq!(t.detail["fecha_source"], "occurred_at");
    assert_eq!(t.detail["fecha_reason"], serde_json::Value::Null);
    assert_eq!(t.detail["pac_idempotency_key"], a.pac_idempotency_key.as_str());
    assert_eq!(t.detail["idempotency_key"], "pedido-4471");

    // Found by sale_id too.
    assert_eq!(
        e.outbox.find_invoice(&InvoiceRef::SaleId("pedido-4471".into())).await.unwrap(),
        r.invoice_id
    );
}

async fn every_document_kind_is_recorded(backend: Backend) {
    let e = env(backend).await;
    for name in ["ingreso-pedido-4471", "egreso-nc-4471", "pago-4471"] {
        let r = e
            .outbox
            .record_sale_json(sale_json(name).as_bytes(), None, &staff())
            .await
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        let d = e.outbox.invoice(&InvoiceRef::Id(r.invoice_id)).await.unwrap();
        assert_eq!(d.invoice.kind, d.sale.kind);
    }
    assert_eq!(e.counts().await, [3, 3, 3, 3, 3]);
    let kinds: Vec<String> = sqlx::query_scalar("SELECT kind FROM invoices ORDER BY id")
        .fetch_all(e.pool())
        .await
        .unwrap();
    assert_eq!(kinds, ["ingreso", "egreso", "pago"]);
}

async fn fecha_is_the_recording_time_when_occurred_at_is_outside_the_window(backend: Backend) {
    let e = env(backend).await;
    e.clock.set(
        DateTime::parse_from_rfc3339("2026-12-05T16:45:30.700Z")
            .unwrap()
            .with_timezone(&Utc),
    );
    let r = e
        .outbox
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .expect("record");
    let d = e.outbox.invoice(&InvoiceRef::Id(r.invoice_id)).await.unwrap();
    let a = &d.attempts[0];
    assert_eq!((a.fecha.as_str(), a.fecha_source), ("2026-12-05T10:45:30", FechaSource::RecordedAt));
    assert_eq!(d.timeline[0].detail["fecha_reason"], "outside_window");
    assert_eq!(d.timeline[0].detail["occurred_at"], "2026-11-29T12:00:00");
    let (_, body) = e.outbox.attempt_body(a.id).await.unwrap();
    assert!(String::from_utf8(body).unwrap().contains("Fecha=\"2026-12-05T10:45:30\""));
}

/// Records `n` ingreso sales one second apart; returns their invoice ids in recording order.
async fn record_many(e: &Env, n: usize) -> Vec<i64> {
    let mut ids = Vec::new();
    for i in 0..n {
        e.clock.advance(Duration::seconds(1));
        let json = with_folio(&ingreso(&format!("pedido-{i:03}")), &(9000 + i).to_string());
        ids.push(
            e.outbox
                .record_sale_json(json.as_bytes(), None, &staff())
                .await
                .expect("record")
                .invoice_id,
        );
    }
    ids
}

async fn list_pages_newest_first_without_gaps_or_repeats(backend: Backend) {
    let e = env(backend).await;
    let ids = record_many(&e, 23).await;
    let mut seen = Vec::new();
    let mut filter = ListFilter {
        limit: 10,
        ..Default::default()
    };
    let mut pages = 0;
    loop {
        let page = e.outbox.list_invoices(&filter).await.expect("list");
        pages += 1;
        seen.extend(page.items.iter().map(|i| i.id));
        match page.next {
            Some(c) => filter.after = Some(c),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let mut expected = ids.clone();
    expected.reverse();
    assert_eq!(seen, expected);
}

async fn list_filters_by_state_badge_search_and_date(backend: Backend) {
    let e = env(backend).await;
    let ids = record_many(&e, 12).await;
    // The drain would move these; here SQL stands in for it.
    sqlx::query("UPDATE invoices SET state = 'stamped', badge = 'timbrada', uuid = 'AB12CD34-0000-4000-8000-000000000001' WHERE id = $1")
        .bind(ids[3])
        .execute(e.pool())
        .await
        .unwrap();
    sqlx::query("UPDATE invoices SET state = 'held', badge = 'reprocesar' WHERE id IN ($1, $2)")
        .bind(ids[5])
        .bind(ids[6])
        .execute(e.pool())
        .await
        .unwrap();

    let list = |f: ListFilter| {
        let o = &e.outbox;
        async move {
            o.list_invoices(&f)
                .await
                .expect("list")
                .items
                .into_iter()
                .map(|i| i.id)
                .collect::<Vec<i64>>()
        }
    };
    assert_eq!(
        list(ListFilter {
            state: Some(InvoiceState::Stamped),
            ..Default::default()
        })
        .await,
        vec![ids[3]]
    );
    assert_eq!(
        list(ListFilter {
            state: Some(InvoiceState::Held),
            ..Default::default()
        })
        .await,
        vec![ids[6], ids[5]]
    );
    assert_eq!(
        list(ListFilter {
            state: Some(InvoiceState::Pending),
            ..Default::default()
        })
        .await
        .len(),
        9
    );
    assert_eq!(
        list(ListFilter {
            badge: Some(Badge::Reprocesar),
            ..Default::default()
        })
        .await,
        vec![ids[6], ids[5]]
    );
    assert_eq!(
        list(ListFilter {
            state: Some(InvoiceState::Held),
            badge: Some(Badge::Timbrada),
            ..Default::default()
        })
        .await,
        Vec::<i64>::new()
    );
    // Search: sale_id and folio by prefix as written; RFC and UUID in any case.
    assert_eq!(
        list(ListFilter {
            search: Some("pedido-01".into()),
            ..Default::default()
        })
        .await,
        vec![ids[11], ids[10]]
    );
    assert_eq!(
        list(ListFilter {
            search: Some("9004".into()),
            ..Default::default()
        })
        .await,
        vec![ids[4]]
    );
    assert_eq!(
        list(ListFilter {
            search: Some("ab12cd34".into()),
            ..Default::default()
        })
        .await,
        vec![ids[3]]
    );
    assert_eq!(
        list(ListFilter {
            search: Some("ure18".into()),
            ..Default::default()
        })
        .await
        .len(),
        12
    );
    assert_eq!(
        list(ListFilter {
            search: Some("ure18".into()),
            state: Some(InvoiceState::Held),
            ..Default::default()
        })
        .await
        .len(),
        2
    );
    assert_eq!(
        list(ListFilter {
            search: Some("nada".into()),
            ..Default::default()
        })
        .await,
        Vec::<i64>::new()
    );
    assert_eq!(
        list(ListFilter {
            search: Some("  ".into()),
            ..Default::default()
        })
        .await
        .len(),
        12,
        "blank search = no search"
    );
    // Search results page too.
    let page = e
        .outbox
        .list_invoices(&ListFilter {
            search: Some("pedido".into()),
            limit: 5,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.items.len(), 5);
    let rest = e
        .outbox
        .list_invoices(&ListFilter {
            search: Some("pedido".into()),
            limit: 50,
            after: page.next,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(rest.items.len(), 7);
    assert!(rest.next.is_none());
    // Date range on the recording time: [from, to).
    let all = e.outbox.list_invoices(&ListFilter::default()).await.unwrap().items;
    let created_of = |id: i64| all.iter().find(|i| i.id == id).unwrap().created_at;
    let from = created_of(ids[2]);
    let to = created_of(ids[5]);
    assert_eq!(
        list(ListFilter {
            from: Some(from),
            to: Some(to),
            ..Default::default()
        })
        .await,
        vec![ids[4], ids[3], ids[2]]
    );
    assert_eq!(
        list(ListFilter {
            from: Some(from),
            to: Some(to),
            state: Some(InvoiceState::Pending),
            ..Default::default()
        })
        .await,
        vec![ids[4], ids[2]]
    );
}

async fn counts_per_state_and_badge(backend: Backend) {
    let e = env(backend).await;
    let ids = record_many(&e, 5).await;
    sqlx::query("UPDATE invoices SET state = 'stamped', badge = 'timbrada' WHERE id = $1")
        .bind(ids[0])
        .execute(e.pool())
        .await
        .unwrap();
    sqlx::query("UPDATE invoices SET badge = 'reanudar' WHERE id = $1")
        .bind(ids[1])
        .execute(e.pool())
        .await
        .unwrap();
    let c = e.outbox.counts().await.unwrap();
    assert_eq!(c.total, 5);
    assert_eq!(c.by_state.get("pending"), Some(&4));
    assert_eq!(c.by_state.get("stamped"), Some(&1));
    assert_eq!(c.by_state.get("held"), None);
    assert_eq!(c.by_badge.get("pendiente"), Some(&3));
    assert_eq!(c.by_badge.get("reanudar"), Some(&1));
    assert_eq!(c.by_badge.get("timbrada"), Some(&1));
}

async fn notes_are_added_resolved_once_and_listed_active_first(backend: Backend) {
    let e = env(backend).await;
    let r = e
        .outbox
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .unwrap();
    let inv = InvoiceRef::SaleId("pedido-4471".into());
    let first = e.outbox.add_note(&inv, "  llamar al cliente  ", &staff()).await.unwrap();
    assert_eq!(first.text, "llamar al cliente");
    e.clock.advance(Duration::minutes(1));
    let soporte = outbox::Actor::new("beto", outbox::Role::Soporte, "test");
    let second = e
        .outbox
        .add_note(&InvoiceRef::Id(r.invoice_id), "revisar RFC", &soporte)
        .await
        .unwrap();
    e.clock.advance(Duration::minutes(1));
    let resolved = e.outbox.resolve_note(first.id, &soporte).await.unwrap();
    assert_eq!(resolved.resolved_at, Some(e.outbox.now()));
    assert_eq!(resolved.resolved_by.as_ref().map(|a| a.name.as_str()), Some("beto"));

    assert!(
        matches!(e.outbox.resolve_note(first.id, &soporte).await, Err(OutboxError::NoteAlreadyResolved { note_id }) if note_id == first.id)
    );
    assert!(matches!(
        e.outbox.resolve_note(9999, &soporte).await,
        Err(OutboxError::NotFound { .. })
    ));
    assert!(matches!(
        e.outbox.add_note(&InvoiceRef::Id(9999), "x", &staff()).await,
        Err(OutboxError::NotFound { .. })
    ));
    // The store itself answers NotFound too (the foreign key refuses the note).
    assert!(matches!(
        e.outbox.store().add_note(9999, "x", &staff(), 0).await,
        Err(OutboxError::NotFound { .. })
    ));
    assert!(matches!(
        e.outbox.add_note(&inv, " \n ", &staff()).await,
        Err(OutboxError::Invalid(_))
    ));

    let d = e.outbox.invoice(&inv).await.unwrap();
    let order: Vec<(i64, bool)> = d.notes.iter().map(|n| (n.id, n.is_active())).collect();
    assert_eq!(order, vec![(second.id, true), (first.id, false)], "active notes first");
    assert_eq!(d.invoice.active_notes, 1);
    let kinds: Vec<&str> = d.timeline.iter().map(|t| t.kind.as_str()).collect();
    assert_eq!(kinds, ["sale_recorded", "note_added", "note_added", "note_resolved"]);
    assert_eq!(d.timeline[3].actor.name, "beto");
}

async fn the_timeline_merges_events_tries_evidence_and_notes_by_time(backend: Backend) {
    let e = env(backend).await;
    let r = e
        .outbox
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .unwrap();
    let d = e.outbox.invoice(&InvoiceRef::Id(r.invoice_id)).await.unwrap();
    let t0 = e.outbox.now().timestamp_millis();
    // What the drain (issue 5) appends: a try, then its evidence; a note in between.
    sqlx::query(
        "INSERT INTO tries (invoice_id, attempt_id, try_no, operation, pac, worker, fencing_token, started_at_ms, actor, actor_role)
         VALUES ($1, $2, 1, 'stamp', 'sandbox', 'w1', 1, $3, 'w1', 'sistema')",
    )
    .bind(r.invoice_id)
    .bind(d.attempts[0].id)
    .bind(t0 + 1000)
    .execute(e.pool())
    .await
    .unwrap();
    e.clock.advance(Duration::seconds(2));
    e.outbox
        .add_note(&InvoiceRef::Id(r.invoice_id), "en espera del PAC", &staff())
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO evidence (invoice_id, attempt_id, try_id, kind, outcome, code, message, recorded_at_ms, actor, actor_role)
         VALUES ($1, $2, 1, 'pac_response', 'unknown', 'timeout', 'sin respuesta', $3, 'w1', 'sistema')",
    )
    .bind(r.invoice_id)
    .bind(d.attempts[0].id)
    .bind(t0 + 3000)
    .execute(e.pool())
    .await
    .unwrap();
    let d = e.outbox.invoice(&InvoiceRef::Id(r.invoice_id)).await.unwrap();
    let got: Vec<(TimelineSource, &str)> = d.timeline.iter().map(|t| (t.source, t.kind.as_str())).collect();
    assert_eq!(
        got,
        vec![
            (TimelineSource::Event, "sale_recorded"),
            (TimelineSource::Try, "stamp"),
            (TimelineSource::Note, "note_added"),
            (TimelineSource::Evidence, "pac_response"),
        ]
    );
    assert_eq!(d.timeline[3].detail["outcome"], "unknown");
    assert_eq!(d.tries.len(), 1);
    assert_eq!(d.evidence.len(), 1);
}

/// The closed vocabularies of the rules crate are the database's too (migration 0009): an
/// evidence row with a kind, outcome or role outside them, or an invoice with an unknown badge,
/// is refused by the database itself; the same rows with known words are accepted.
async fn the_database_refuses_a_word_outside_the_vocabulary(backend: Backend) {
    let e = env(backend).await;
    let r = e
        .outbox
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .unwrap();
    let id = r.invoice_id;
    let row = |kind: &str, outcome: &str, role: &str| {
        format!(
            "INSERT INTO evidence (invoice_id, kind, outcome, recorded_at_ms, actor, actor_role) \
             VALUES ({id}, {kind}, {outcome}, 0, 'w1', {role})"
        )
    };
    // (statement, the SQLite trigger's message, the PostgreSQL constraint's name)
    let cases = [
        (
            row("'sat_status'", "NULL", "'sistema'"),
            "unknown evidence kind",
            "evidence_kind_known",
        ),
        (row("'Lookup'", "NULL", "'sistema'"), "unknown evidence kind", "evidence_kind_known"),
        (
            row("'lookup'", "'timeout'", "'sistema'"),
            "unknown evidence outcome",
            "evidence_outcome_known",
        ),
        (
            row("'pac_response'", "'Stamped'", "'sistema'"),
            "unknown evidence outcome",
            "evidence_outcome_known",
        ),
        (
            row("'operator_action'", "NULL", "'jefe'"),
            "unknown actor role",
            "evidence_actor_role_known",
        ),
        (
            format!("UPDATE invoices SET badge = 'verde' WHERE id = {id}"),
            "unknown badge",
            "invoices_badge_known",
        ),
        (
            format!(
                "INSERT INTO cfdis (invoice_id, uuid, pac, cancellation_status, created_at_ms, updated_at_ms) \
                 VALUES ({id}, 'AAAAAAAA-0000-4000-8000-000000000001', 'sandbox', 'anulada', 0, 0)"
            ),
            "unknown cancellation status",
            "cfdis_cancellation_status_known",
        ),
    ];
    for (sql, trigger, constraint) in cases {
        let msg = refused(&e, &sql).await;
        assert!(msg.contains(trigger) || msg.contains(constraint), "{sql}: {msg}");
    }
    for sql in [
        row("'lookup'", "'not_found'", "'sistema'"),
        row("'cancellation'", "'known'", "'sistema'"),
        row("'operator_action'", "NULL", "'contador'"),
        format!("UPDATE invoices SET badge = 'atencion' WHERE id = {id}"),
        format!(
            "INSERT INTO cfdis (invoice_id, uuid, pac, created_at_ms, updated_at_ms) \
             VALUES ({id}, 'AAAAAAAA-0000-4000-8000-000000000002', 'sandbox', 0, 0)"
        ),
    ] {
        sqlx::query(&sql)
            .execute(e.pool())
            .await
            .unwrap_or_else(|err| panic!("{sql}: {err}"));
    }
    let update = |status: &str| format!("UPDATE cfdis SET cancellation_status = '{status}' WHERE invoice_id = {id}");
    let msg = refused(&e, &update("Cancelado")).await;
    assert!(
        msg.contains("unknown cancellation status") || msg.contains("cfdis_cancellation_status_known"),
        "{msg}"
    );
    sqlx::query(&update("rechazada")).execute(e.pool()).await.unwrap();
    let d = e.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert_eq!(d.evidence.len(), 3, "only the known words were stored");
    assert_eq!(d.cfdis.len(), 1, "only the known cancellation status was stored");
    assert_eq!(d.invoice.badge, Badge::Atencion);
}

/// Runs a statement that must be refused by a trigger; returns the database's message.
async fn refused(e: &Env, sql: &str) -> String {
    match sqlx::query(sql).execute(e.pool()).await {
        Ok(r) => panic!("{sql}: accepted ({} rows)", r.rows_affected()),
        Err(err) => err.to_string(),
    }
}

async fn the_database_refuses_to_change_sales_evidence_and_history(backend: Backend) {
    let e = env(backend).await;
    let r = e
        .outbox
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .unwrap();
    let id = r.invoice_id;
    sqlx::raw_sql(&format!(
        "INSERT INTO tries (invoice_id, attempt_id, try_no, operation, pac, worker, fencing_token, started_at_ms, actor, actor_role)
         VALUES ({id}, 1, 1, 'stamp', 'sandbox', 'w1', 1, 0, 'w1', 'sistema');
         INSERT INTO evidence (invoice_id, attempt_id, kind, outcome, recorded_at_ms, actor, actor_role)
         VALUES ({id}, 1, 'pac_response', 'stamped', 0, 'w1', 'sistema');
         INSERT INTO cfdis (invoice_id, attempt_id, uuid, pac, created_at_ms, updated_at_ms)
         VALUES ({id}, 1, 'AB12CD34-0000-4000-8000-000000000001', 'sandbox', 0, 0);
         INSERT INTO notes (invoice_id, text, created_at_ms, actor, actor_role) VALUES ({id}, 'hola', 0, 'ana', 'personal');"
    ))
    .execute(e.pool())
    .await
    .unwrap();

    let (b00, bxml) = (e.blob("00"), e.blob("3c782f3e"));
    for sql in [
        "UPDATE sales SET body = '{}'",
        "UPDATE sales SET source = 'x'",
        "DELETE FROM sales",
        "UPDATE evidence SET outcome = 'unknown'",
        "DELETE FROM evidence",
        "UPDATE timeline_events SET detail = '{}'",
        "DELETE FROM timeline_events",
        "UPDATE tries SET worker = 'w2'",
        "DELETE FROM tries",
        format!("UPDATE attempts SET body = {b00}").as_str(),
        "UPDATE attempts SET fecha = '2026-01-01T00:00:00'",
        "UPDATE attempts SET pac_idempotency_key = 'otra'",
        "DELETE FROM attempts",
        "UPDATE notes SET text = 'adiós'",
        "DELETE FROM notes",
        "UPDATE cfdis SET uuid = 'otro'",
        "DELETE FROM cfdis",
        "UPDATE invoices SET sale_id = 'otro'",
        "UPDATE invoices SET fencing_token = -1",
        "DELETE FROM invoices",
        "UPDATE intake_keys SET state = 'reserved', sale_ref = NULL",
        "DELETE FROM intake_keys",
    ] {
        let msg = refused(&e, sql).await;
        assert!(
            msg.contains("immutable") || msg.contains("append-only") || msg.contains("fencing"),
            "{sql}: {msg}"
        );
    }

    // What may change does: an attempt's resolution, a note's resolution (once), a CFDI's
    // status and its XML (once), an invoice's state and fencing token (upwards).
    for sql in [
        "UPDATE attempts SET resolution = 'created', resolved_at_ms = 5",
        "UPDATE notes SET resolved_at_ms = 5, resolved_by = 'ana', resolved_by_role = 'personal'",
        format!("UPDATE cfdis SET sat_status = 'Vigente', xml = {bxml}, xml_sha256 = 'h'").as_str(),
        "UPDATE invoices SET state = 'stamped', badge = 'timbrada', fencing_token = fencing_token + 1",
    ] {
        sqlx::query(sql)
            .execute(e.pool())
            .await
            .unwrap_or_else(|err| panic!("{sql}: {err}"));
    }
    for sql in [
        "UPDATE notes SET resolved_at_ms = 6",
        format!("UPDATE cfdis SET xml = {b00}").as_str(),
    ] {
        let msg = refused(&e, sql).await;
        assert!(msg.contains("immutable"), "{sql}: {msg}");
    }
    assert_eq!(e.counts().await, [1, 1, 1, 1, 1]);
}

async fn settings_keep_the_encrypted_key_and_never_the_password(backend: Backend) {
    let e = env(backend).await;
    let s = e.outbox.emisor_settings().await.unwrap().expect("configured");
    assert_eq!(s.profile, emisor());
    assert_eq!(s.password_env, "TIMBRA_CSD_PASSWORD");
    assert_eq!(s.no_certificado, "30001000000500003416");
    let key: Vec<u8> = sqlx::query_scalar("SELECT key_encrypted FROM emisor_settings")
        .fetch_one(e.pool())
        .await
        .unwrap();
    assert_eq!(key, fixture("cfdi/certs/EKU9003173C9.key"));
    e.outbox
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .unwrap();
    e.outbox.store().close().await;
    // What was written, searched for the password: on SQLite the database's files themselves
    // (free pages included), on PostgreSQL every text, JSON and bytea value of every table.
    let written: Vec<(String, Vec<u8>)> = match backend {
        Backend::Sqlite => {
            let files: Vec<(String, Vec<u8>)> = ["timbra.db", "timbra.db-wal"]
                .into_iter()
                .filter_map(|f| std::fs::read(e.dir().join(f)).ok().map(|b| (f.to_string(), b)))
                .collect();
            assert!(
                files.iter().any(|(f, _)| f == "timbra.db"),
                "the database file is where the test looks"
            );
            files
        }
        Backend::Postgres => every_stored_value(e.pool()).await,
    };
    let holding = |needle: &[u8]| -> Vec<String> {
        written
            .iter()
            .filter(|(_, b)| b.windows(needle.len()).any(|w| w == needle))
            .map(|(f, _)| f.clone())
            .collect()
    };
    // The scan sees what was written: the emisor's RFC and the sale are in it.
    assert!(!holding(b"EKU9003173C9").is_empty(), "the scan found no stored data");
    assert!(!holding(b"pedido-4471").is_empty(), "the scan found no stored sale");
    let leaks = holding(b"12345678a");
    assert!(leaks.is_empty(), "the CSD password is stored in {leaks:?}");
}

/// Every text, JSON and bytea value of every table and column of a PostgreSQL database, as
/// `(table.column, values)`; bytea as PostgreSQL's `escape` text (printable ASCII kept as is).
async fn every_stored_value(pool: &sqlx::AnyPool) -> Vec<(String, Vec<u8>)> {
    let columns: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT c.table_name::text, c.column_name::text, c.data_type::text \
         FROM information_schema.columns c \
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name \
         WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' \
         AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'bytea') \
         ORDER BY 1, 2",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    assert!(columns.len() > 20, "the schema's columns: {columns:?}");
    let mut out = Vec::new();
    for (table, column, kind) in columns {
        let value = if kind == "bytea" {
            format!("encode(\"{column}\", 'escape')")
        } else {
            format!("\"{column}\"::text")
        };
        let all: String = sqlx::query_scalar(&format!("SELECT COALESCE(string_agg({value}, E'\\n'), '') FROM \"{table}\""))
            .fetch_one(pool)
            .await
            .unwrap();
        out.push((format!("{table}.{column}"), all.into_bytes()));
    }
    out
}

async fn a_bad_csd_setup_is_refused_and_nothing_is_stored(backend: Backend) {
    let e = bare(backend).await;
    let wrong = e
        .outbox
        .configure_emisor(&setup(), &cfdi::secret::Secret::new("otra"), &admin())
        .await
        .unwrap_err();
    assert!(matches!(wrong, OutboxError::Csd(cfdi::csd::CsdError::WrongPassword)), "{wrong}");

    let mut other_rfc = setup();
    other_rfc.profile.rfc = "AAA010101AAA".into();
    let err = e.outbox.configure_emisor(&other_rfc, &password(), &admin()).await.unwrap_err();
    assert!(matches!(err, OutboxError::Csd(cfdi::csd::CsdError::RfcMismatch { .. })), "{err}");

    let mut swapped = setup();
    swapped.key = fixture("cfdi/certs/EKU9003173C9.cer");
    let err = e.outbox.configure_emisor(&swapped, &password(), &admin()).await.unwrap_err();
    assert!(matches!(&err, OutboxError::Invalid(v) if v.0[0].field == "key"), "{err}");

    let plain = pkcs8::EncryptedPrivateKeyInfo::try_from(fixture("cfdi/certs/EKU9003173C9.key").as_slice())
        .and_then(|k| k.decrypt("12345678a"))
        .expect("decrypt the fixture key");
    let mut unencrypted = setup();
    unencrypted.key = plain.as_bytes().to_vec();
    let err = e.outbox.configure_emisor(&unencrypted, &password(), &admin()).await.unwrap_err();
    assert!(
        matches!(&err, OutboxError::Invalid(v) if v.0[0].code == "llave_sin_cifrar"),
        "{err}"
    );

    let mut bad_env = setup();
    bad_env.password_env = "MI CLAVE".into();
    let err = e.outbox.configure_emisor(&bad_env, &password(), &admin()).await.unwrap_err();
    assert!(matches!(&err, OutboxError::Invalid(v) if v.0[0].field == "password_env"), "{err}");

    let mut bad_profile = setup();
    bad_profile.profile.lugar_expedicion = "4250".into();
    let err = e.outbox.configure_emisor(&bad_profile, &password(), &admin()).await.unwrap_err();
    assert!(
        matches!(&err, OutboxError::Invalid(v) if v.0.iter().any(|f| f.field.contains("lugar_expedicion"))),
        "{err}"
    );

    // The CSD expired before `now`.
    e.clock
        .set(DateTime::parse_from_rfc3339("2027-06-01T00:00:00Z").unwrap().with_timezone(&Utc));
    let err = e.outbox.configure_emisor(&setup(), &password(), &admin()).await.unwrap_err();
    assert!(
        matches!(err, OutboxError::Csd(cfdi::csd::CsdError::OutsideValidity { .. })),
        "{err}"
    );

    assert_eq!(e.count("emisor_settings").await, 0);
}

async fn recording_needs_an_emisor_and_the_csd_password(backend: Backend) {
    let e = bare(backend).await;
    let err = e
        .outbox
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .unwrap_err();
    assert!(matches!(err, OutboxError::NotConfigured), "{err}");

    e.outbox.configure_emisor(&setup(), &password(), &admin()).await.unwrap();
    // Another process on the same database, without the password.
    let other = e.reopen().await;
    let err = other
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, OutboxError::CsdLocked { password_env } if password_env == "TIMBRA_CSD_PASSWORD"),
        "{err}"
    );
    other.provide_csd_password(cfdi::secret::Secret::new("mala"));
    let err = other
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .unwrap_err();
    assert!(matches!(err, OutboxError::Csd(cfdi::csd::CsdError::WrongPassword)), "{err}");
    assert_eq!(e.counts().await, [0, 0, 0, 0, 0]);

    other.provide_csd_password(password());
    other
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .expect("with the password");
    assert_eq!(e.counts().await, [1, 1, 1, 1, 1]);
}

async fn new_attempts_are_frozen_for_the_primary_pac(backend: Backend) {
    let e = env(backend).await;
    assert_eq!(e.outbox.primary_pac().await.unwrap(), "sandbox");
    e.outbox.set_primary_pac("sw", &staff()).await.unwrap();
    let r = e
        .outbox
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .unwrap();
    let d = e.outbox.invoice(&InvoiceRef::Id(r.invoice_id)).await.unwrap();
    assert_eq!(d.attempts[0].pac, "sw");
    assert!(e.outbox.set_primary_pac("  ", &staff()).await.is_err());
}

/// The query plan of `sql` with parameters bound to NULL or typical values.
async fn plan(e: &Env, sql: &str, params: &[Option<&str>]) -> String {
    let text = format!("EXPLAIN QUERY PLAN {sql}");
    let mut q = sqlx::query(&text);
    for p in params {
        q = q.bind(*p);
    }
    let rows = q.fetch_all(e.pool()).await.unwrap_or_else(|err| panic!("{sql}: {err}"));
    use sqlx::Row;
    rows.iter().map(|r| r.get::<String, _>("detail")).collect::<Vec<_>>().join("\n")
}

/// SQLite only: the plans are SQLite's `EXPLAIN QUERY PLAN` (PostgreSQL's planner picks by
/// statistics, so a plan assertion there would test the sample size, not the query).
#[tokio::test]
async fn list_queries_use_their_indexes() {
    let e = env(Backend::Sqlite).await;
    let full = [
        None,
        None,
        Some("0"),
        Some("9999999999999"),
        Some("9999999999999"),
        Some("9999999999999"),
        Some("50"),
    ];
    let cases = [
        (include_str!("../sql/sqlite/list_all.sql"), "invoices_by_created"),
        (include_str!("../sql/sqlite/list_by_state.sql"), "invoices_by_state"),
        (include_str!("../sql/sqlite/list_by_badge.sql"), "invoices_by_badge"),
    ];
    for (sql, index) in cases {
        let p = plan(&e, sql, &full).await;
        assert!(p.contains(&format!("SEARCH invoices USING INDEX {index}")), "{index}:\n{p}");
        // The recording-time range (with the cursor folded in) bounds the index walk.
        assert!(
            p.contains("created_at_ms>? AND created_at_ms<?)"),
            "{index} does not seek to the cursor:\n{p}"
        );
        assert!(!p.contains("TEMP B-TREE"), "{index} sorts instead of walking the index:\n{p}");
        assert!(
            !p.contains("SCAN invoices\n") && !p.ends_with("SCAN invoices"),
            "{index} scans the table:\n{p}"
        );
    }
    let mut search = full.to_vec();
    search.extend([Some("ped"), Some("ped\u{10FFFF}"), Some("PED"), Some("PED\u{10FFFF}")]);
    // A serie-folio ("F-104") and a customer.
    search.extend([
        Some("F"),
        Some("104"),
        Some("104\u{10FFFF}"),
        Some("%norte%"),
        Some("NORTE"),
        Some("NORTE\u{10FFFF}"),
    ]);
    let p = plan(&e, include_str!("../sql/sqlite/list_search.sql"), &search).await;
    for index in [
        "sqlite_autoindex_invoices_2",
        "invoices_by_folio",
        "invoices_by_rfc",
        "invoices_by_uuid",
    ] {
        assert!(
            p.contains(&format!("USING INDEX {index} (")) || p.contains(&format!("USING COVERING INDEX {index} (")),
            "{index}:\n{p}"
        );
    }
    assert!(!p.lines().any(|l| l.trim() == "SCAN invoices"), "search scans the table:\n{p}");
    // A part of a customer's name: the recording-time index walked from the cursor, no sort.
    let mut customer = full.to_vec();
    customer.extend([Some("%norte%"), Some("NORTE"), Some("NORTE\u{10FFFF}")]);
    let p = plan(&e, include_str!("../sql/sqlite/list_customer.sql"), &customer).await;
    assert!(p.contains("SEARCH invoices USING INDEX invoices_by_created_customer"), "{p}");
    assert!(
        p.contains("created_at_ms>? AND created_at_ms<?)"),
        "does not seek to the cursor:\n{p}"
    );
    assert!(!p.contains("TEMP B-TREE"), "sorts instead of walking the index:\n{p}");
    let p = plan(&e, include_str!("../sql/sqlite/counts.sql"), &[]).await;
    assert!(p.contains("COVERING INDEX invoices_by_state_badge"), "{p}");
    let p = plan(&e, include_str!("../sql/sqlite/notes_by_invoice.sql"), &[Some("1")]).await;
    assert!(p.contains("notes_by_invoice"), "{p}");
}

async fn only_soporte_and_the_contador_change_settings(backend: Backend) {
    // Who may change which settings is the outbox's rule, for every shell alike.
    let e = bare(backend).await;
    match e.outbox.configure_emisor(&setup(), &password(), &staff()).await {
        Err(err @ OutboxError::Forbidden { .. }) => assert_eq!(err.code(), "forbidden"),
        other => panic!("personal may not configure the emisor: {other:?}"),
    }
    assert!(e.outbox.emisor_settings().await.unwrap().is_none(), "nothing written");
    let drain = outbox::settings::DrainSettings {
        concurrency: 4,
        max_tries: 5,
    };
    assert!(matches!(
        e.outbox.set_drain_settings(&drain, &staff()).await,
        Err(OutboxError::Forbidden { .. })
    ));
    assert_eq!(e.outbox.set_drain_settings(&drain, &admin()).await.unwrap(), drain);
    assert_eq!(e.outbox.drain_settings().await.unwrap(), drain);
    let bad = outbox::settings::DrainSettings {
        concurrency: 0,
        max_tries: 51,
    };
    match e.outbox.set_drain_settings(&bad, &admin()).await {
        Err(OutboxError::Invalid(v)) => {
            let fields: Vec<&str> = v.0.iter().map(|f| f.field.as_str()).collect();
            assert_eq!(fields, ["concurrency", "max_tries"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(e.outbox.drain_settings().await.unwrap(), drain, "a refused change writes nothing");
}

async fn a_console_sees_what_another_process_changed(backend: Backend) {
    let e = env(backend).await;
    let other = e.reopen().await;
    other.provide_csd_password(password());
    let mut feed = e.outbox.watch_changes().await.unwrap();
    let r = other
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .unwrap();
    // A hang guard, not a timing: the change arrives at the next poll or at the commit.
    let change = tokio::time::timeout(std::time::Duration::from_secs(30), feed.next())
        .await
        .expect("a change arrives")
        .unwrap();
    match (backend, change) {
        (Backend::Postgres, outbox::changes::Change::Invoice(id)) => assert_eq!(id, r.invoice_id),
        (Backend::Sqlite, outbox::changes::Change::Unspecified) => {}
        other => panic!("{other:?}"),
    }
    // A note by the other process is a change too.
    other.add_note(&InvoiceRef::Id(r.invoice_id), "llamar", &staff()).await.unwrap();
    let change = tokio::time::timeout(std::time::Duration::from_secs(30), feed.next())
        .await
        .expect("a change arrives")
        .unwrap();
    assert!(
        matches!(change, outbox::changes::Change::Invoice(id) if id == r.invoice_id) || backend == Backend::Sqlite,
        "{change:?}"
    );
}

/// Reads `feed` until it names `until`, returning every invoice it named on the way
/// (`Change::Unspecified`, the feed's quiet-time look, names none).
async fn changes_until(feed: &mut outbox::changes::ChangeFeed, until: i64) -> Vec<i64> {
    let mut seen = Vec::new();
    loop {
        // A hang guard, not a timing.
        let change = tokio::time::timeout(std::time::Duration::from_secs(30), feed.next())
            .await
            .expect("the change arrives")
            .expect("the feed reads");
        if let outbox::changes::Change::Invoice(id) = change {
            seen.push(id);
            if id == until {
                return seen;
            }
        }
    }
}

/// The evidence a drain step writes, on `invoice_id` (`try_id`: a try that may not exist).
fn drain_evidence(invoice_id: i64, try_id: Option<i64>, n: usize) -> outbox::store::NewEvidence {
    use outbox::evidence::{EvidenceKind, EvidenceOutcome};
    outbox::store::NewEvidence {
        invoice_id,
        attempt_id: None,
        try_id,
        kind: EvidenceKind::Reconciliation,
        outcome: Some(EvidenceOutcome::Found),
        code: Some(format!("aviso-{n}")),
        message: None,
        uuid: None,
        retry_after_ms: None,
        detail: serde_json::json!({}),
        fencing_token: None,
        at_ms: 1,
        actor: staff(),
    }
}

/// PostgreSQL: the drain's writes (its group commit, in another process) reach a console's
/// feed with their invoice id once committed; a write the database refuses, grouped with
/// accepted ones, announces nothing; a write outside the drain (a note) still notifies at its
/// commit. The changes of a group are announced before its writers are answered, so they reach
/// the feed before the note written after them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drains_writes_reach_the_feed_and_a_refused_one_does_not() {
    let e = env(Backend::Postgres).await;
    let mut ids = Vec::new();
    for sale in ["aviso-a", "aviso-b", "aviso-c"] {
        ids.push(
            e.outbox
                .record_sale_json(ingreso(sale).as_bytes(), None, &staff())
                .await
                .expect("record")
                .invoice_id,
        );
    }
    let (a, b, c) = (ids[0], ids[1], ids[2]);
    let mut feed = e.outbox.watch_changes().await.unwrap();
    let worker = e.reopen().await;
    let store = worker.store().clone();
    let mut tasks = Vec::new();
    for n in 0..16 {
        // Every fourth is on invoice b and names a try that does not exist: refused.
        let ev = if n % 4 == 1 {
            drain_evidence(b, Some(1_000_000), n)
        } else {
            drain_evidence(a, None, n)
        };
        let store = store.clone();
        tasks.push(tokio::spawn(async move { store.append_evidence(&ev).await }));
    }
    for (n, t) in tasks.into_iter().enumerate() {
        let answer = t.await.expect("task");
        assert_eq!(answer.is_ok(), n % 4 != 1, "write {n}: {answer:?}");
    }
    e.outbox.add_note(&InvoiceRef::Id(c), "llamar", &staff()).await.unwrap();
    let seen = changes_until(&mut feed, c).await;
    assert!(seen.contains(&a), "the drain's accepted writes are announced: {seen:?}");
    assert!(!seen.contains(&b), "a refused write announces nothing: {seen:?}");
    let written: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM evidence WHERE invoice_id = $1")
        .bind(b)
        .fetch_one(e.pool())
        .await
        .unwrap();
    assert_eq!(written, 0);
}

/// PostgreSQL, migration 0019: a transaction that defers its notifications (as the drain's
/// group commit does) notifies nothing at its commit and records each changed invoice once —
/// a savepoint rolled back takes its ids with it — and `timbra_send_changes()` sends them
/// afterwards; a transaction that does not defer notifies as before. A change whose
/// notification never left (its writer died between commit and send) still reaches the feed,
/// as `Unspecified`, at its quiet-time look.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferring_transaction_notifies_nothing_and_the_feed_still_notices() {
    let e = env(Backend::Postgres).await;
    let mut ids = Vec::new();
    for sale in ["diferido-a", "diferido-b", "diferido-c"] {
        ids.push(
            e.outbox
                .record_sale_json(ingreso(sale).as_bytes(), None, &staff())
                .await
                .expect("record")
                .invoice_id,
        );
    }
    let (a, b, c) = (ids[0], ids[1], ids[2]);
    let mut feed = e.outbox.watch_changes().await.unwrap();
    let mut conn = e.pool().acquire().await.unwrap();
    let mut tx = sqlx::Connection::begin(&mut *conn).await.unwrap();
    sqlx::query("SET LOCAL timbra.defer_notify = 'on'").execute(&mut *tx).await.unwrap();
    sqlx::query("SAVEPOINT refused").execute(&mut *tx).await.unwrap();
    sqlx::query("UPDATE invoices SET updated_at_ms = updated_at_ms + 1 WHERE id = $1")
        .bind(b)
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query("ROLLBACK TO SAVEPOINT refused").execute(&mut *tx).await.unwrap();
    for _ in 0..2 {
        sqlx::query("UPDATE invoices SET updated_at_ms = updated_at_ms + 1000 WHERE id = $1")
            .bind(a)
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    let changed: String = sqlx::query_scalar("SELECT COALESCE(current_setting('timbra.changed', true), '')")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(changed, a.to_string(), "each kept change once, none rolled back");
    tx.commit().await.unwrap();
    // A writer that does not defer (here a plain statement) notifies at its commit.
    sqlx::query("UPDATE invoices SET state_reason = state_reason WHERE id = $1")
        .bind(c)
        .execute(e.pool())
        .await
        .unwrap();
    assert_eq!(
        changes_until(&mut feed, c).await,
        vec![c],
        "the deferring transaction notified nothing"
    );
    // Invoice a moved and nobody said so (as if its writer died before sending): the feed's
    // quiet-time look notices.
    let change = tokio::time::timeout(std::time::Duration::from_secs(60), feed.next())
        .await
        .expect("the quiet-time look happens")
        .unwrap();
    assert_eq!(change, outbox::changes::Change::Unspecified);
    // Sent afterwards, on the connection that deferred them: once each, then the list is empty.
    let sent: i32 = sqlx::query_scalar("SELECT timbra_send_changes()")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(sent, 1);
    assert_eq!(changes_until(&mut feed, a).await, vec![a]);
    let again: i32 = sqlx::query_scalar("SELECT timbra_send_changes()")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(again, 0);
}

/// PostgreSQL: a drain write that changes no invoice row's `updated_at_ms` (a PAC answer's
/// evidence alone, as a group commit writes it) and whose notification never left (its worker
/// died between the commit and `timbra_send_changes`) still reaches the feed at its quiet-time
/// look: the feed also looks at the newest try and evidence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evidence_alone_whose_notification_never_left_still_reaches_the_feed() {
    let e = env(Backend::Postgres).await;
    let a = e
        .outbox
        .record_sale_json(ingreso("sin-aviso").as_bytes(), None, &staff())
        .await
        .expect("record")
        .invoice_id;
    let mut feed = e.outbox.watch_changes().await.unwrap();
    let mut conn = e.pool().acquire().await.unwrap();
    let mut tx = sqlx::Connection::begin(&mut *conn).await.unwrap();
    sqlx::query("SET LOCAL timbra.defer_notify = 'on'").execute(&mut *tx).await.unwrap();
    sqlx::query(
        "INSERT INTO evidence (invoice_id, kind, outcome, recorded_at_ms, actor, actor_role) \
         VALUES ($1, 'pac_response', 'unknown', 1, 'trabajador', 'sistema')",
    )
    .bind(a)
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    // Never sent: the worker "died". A hang guard, not a timing.
    let change = tokio::time::timeout(std::time::Duration::from_secs(60), feed.next())
        .await
        .expect("the quiet-time look notices the evidence")
        .unwrap();
    assert_eq!(change, outbox::changes::Change::Unspecified);
}

/// PostgreSQL: the drain's claim defers its notifications within its one statement (its SQL
/// turns `timbra.defer_notify` on before any row is leased), so the claiming commit notifies
/// nothing; `timbra_send_changes()` on its connection sends them. Through the store, a claim
/// still reaches the feed with the invoice it leased.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_claim_notifies_after_its_commit() {
    let e = env(Backend::Postgres).await;
    let mut ids = Vec::new();
    for sale in ["reclamo-a", "reclamo-b", "reclamo-c"] {
        ids.push(
            e.outbox
                .record_sale_json(ingreso(sale).as_bytes(), None, &staff())
                .await
                .expect("record")
                .invoice_id,
        );
    }
    let (a, b, c) = (ids[0], ids[1], ids[2]);
    let mut feed = e.outbox.watch_changes().await.unwrap();
    let now = e.outbox.now().timestamp_millis();
    // The claim's statement, alone on a connection: the first due invoice, a.
    let mut conn = e.pool().acquire().await.unwrap();
    let claimed: Vec<i64> = sqlx::query_scalar::<_, i64>(include_str!("../sql/postgres/claim_due.sql"))
        .bind("w-crudo")
        .bind(now)
        .bind(now + 60_000)
        .bind(1_i64)
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    assert_eq!(claimed, vec![a]);
    sqlx::query("UPDATE invoices SET state_reason = state_reason WHERE id = $1")
        .bind(c)
        .execute(e.pool())
        .await
        .unwrap();
    assert_eq!(changes_until(&mut feed, c).await, vec![c], "the claiming commit notified nothing");
    let sent: i32 = sqlx::query_scalar("SELECT timbra_send_changes()")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(sent, 1);
    assert_eq!(changes_until(&mut feed, a).await, vec![a]);
    // Through the store (another process): b, the next due one, is claimed and announced.
    let worker = e.reopen().await;
    let claims = worker.store().claim_due("w-tienda", now, now + 60_000, 1).await.unwrap();
    assert_eq!(claims.iter().map(|c| c.invoice_id).collect::<Vec<_>>(), vec![b]);
    assert_eq!(changes_until(&mut feed, b).await, vec![b]);
}

/// The Tablero's CSD standing follows the test clock, never the system's: 20 days before SAT's
/// test CSD ends it warns at 30 days and names the sale sealed with it still waiting; after the
/// end it says *vencido*.
async fn the_csd_warning_follows_the_clock_and_names_the_waiting_sales(backend: Backend) {
    use outbox::csd_validity::CsdWarning;
    use outbox::Clock;
    let e = env(backend).await;
    let end: DateTime<Utc> = "2027-05-18T11:43:51Z".parse().unwrap();
    e.clock.set(end - Duration::days(20));
    let before = e.outbox.csd_standing(e.clock.now()).await.unwrap().expect("an emisor");
    assert_eq!(
        (before.warning, before.days_left, before.waiting_attempts),
        (CsdWarning::Dias30, 20, 0)
    );
    assert_eq!(before.valid_to, end);
    e.outbox
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .unwrap();
    let waiting = e.outbox.csd_standing(e.clock.now()).await.unwrap().expect("an emisor");
    assert_eq!(waiting.waiting_attempts, 1, "the recorded sale waits for its CFDI");
    assert_eq!(waiting.no_certificado, "30001000000500003416");
    e.clock.set(end - Duration::days(7));
    assert_eq!(
        e.outbox.csd_standing(e.clock.now()).await.unwrap().unwrap().warning,
        CsdWarning::Dias7
    );
    e.clock.set(end + Duration::seconds(1));
    assert_eq!(
        e.outbox.csd_standing(e.clock.now()).await.unwrap().unwrap().warning,
        CsdWarning::Vencido
    );
}

/// The diagnostic's reads: every shared setting by key, and the schema version the database
/// applied (the newest migration this build embeds).
async fn every_setting_and_the_schema_version_are_read(backend: Backend) {
    let e = env(backend).await;
    let store = e.outbox.store();
    let actor = outbox::Actor::new("soporte", outbox::Role::Soporte, "test");
    store.put_setting("zeta", "{\"b\":2}", &actor, 1).await.unwrap();
    store.put_setting("alfa", "\"a\"", &actor, 1).await.unwrap();
    let all = store.all_settings().await.unwrap();
    let keys: Vec<&str> = all.iter().map(|(k, _)| k.as_str()).collect();
    let (a, z) = (
        keys.iter().position(|k| *k == "alfa").unwrap(),
        keys.iter().position(|k| *k == "zeta").unwrap(),
    );
    assert!(a < z, "by key: {keys:?}");
    assert!(all.contains(&("zeta".to_string(), "{\"b\":2}".to_string())));
    // 0009 is the newest migration when this test was written; a later one only raises it.
    assert!(store.schema_version().await.unwrap() >= 9);
}

/// The drain's writes of one process share commits (group commit on both databases): many at
/// once each get their own answer, and one that fails writes nothing of itself and takes
/// nothing of the others with it.
async fn concurrent_drain_writes_each_keep_their_own_answer(backend: Backend) {
    use outbox::evidence::{EvidenceKind, EvidenceOutcome};
    use outbox::store::NewEvidence;
    let e = env(backend).await;
    let r = e
        .outbox
        .record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .expect("record");
    let evidence = |invoice_id: i64, n: usize| NewEvidence {
        invoice_id,
        attempt_id: None,
        try_id: None,
        kind: EvidenceKind::Reconciliation,
        outcome: Some(EvidenceOutcome::Found),
        code: Some(format!("prueba-{n}")),
        message: None,
        uuid: None,
        retry_after_ms: None,
        detail: serde_json::json!({}),
        fencing_token: None,
        at_ms: 1,
        actor: staff(),
    };
    let store = e.outbox.store().clone();
    let mut tasks = Vec::new();
    for n in 0..24 {
        // Every seventh names an invoice that does not exist: the database refuses it.
        let invoice_id = if n % 7 == 3 { r.invoice_id + 1_000_000 } else { r.invoice_id };
        let (store, ev) = (store.clone(), evidence(invoice_id, n));
        tasks.push(tokio::spawn(async move { store.append_evidence(&ev).await }));
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.expect("task"));
    }
    let failed: Vec<usize> = answers.iter().enumerate().filter(|(_, a)| a.is_err()).map(|(n, _)| n).collect();
    assert_eq!(failed, vec![3, 10, 17], "only the refused writes fail: {answers:?}");
    let mut ids: Vec<i64> = answers.iter().filter_map(|a| a.as_ref().ok().copied()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 21, "each write got its own row");
    let d = e.outbox.invoice(&InvoiceRef::Id(r.invoice_id)).await.expect("detail");
    let mut codes: Vec<String> = d.evidence.iter().filter_map(|v| v.code.clone()).collect();
    codes.sort();
    let mut expected: Vec<String> = (0..24).filter(|n| n % 7 != 3).map(|n| format!("prueba-{n}")).collect();
    expected.sort();
    assert_eq!(codes, expected, "every accepted write is durable, no refused one is");
}

crate::conformance!(
    a_console_sees_what_another_process_changed,
    recording_a_sale_writes_sale_invoice_attempt_and_event_together,
    every_document_kind_is_recorded,
    fecha_is_the_recording_time_when_occurred_at_is_outside_the_window,
    list_pages_newest_first_without_gaps_or_repeats,
    list_filters_by_state_badge_search_and_date,
    counts_per_state_and_badge,
    notes_are_added_resolved_once_and_listed_active_first,
    the_timeline_merges_events_tries_evidence_and_notes_by_time,
    the_database_refuses_to_change_sales_evidence_and_history,
    the_database_refuses_a_word_outside_the_vocabulary,
    settings_keep_the_encrypted_key_and_never_the_password,
    a_bad_csd_setup_is_refused_and_nothing_is_stored,
    recording_needs_an_emisor_and_the_csd_password,
    new_attempts_are_frozen_for_the_primary_pac,
    only_soporte_and_the_contador_change_settings,
    the_csd_warning_follows_the_clock_and_names_the_waiting_sales,
    every_setting_and_the_schema_version_are_read,
    concurrent_drain_writes_each_keep_their_own_answer,
);
