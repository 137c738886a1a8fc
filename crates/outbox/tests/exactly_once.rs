//! Two writers racing on the contador's paths, as real concurrent transactions on both
//! backends (two outboxes on one database: two seats, or two processes): the database, not a
//! check before the write, keeps the forbidden second state out.
//!
//! - two duplicate decisions of one sale keeping different CFDIs: at most one is recorded, so
//!   at most one of the two CFDIs is ever ordered cancelled;
//! - a ticket put into the day's factura global while another seat invoices it to a named
//!   customer: it ends in at most one live document;
//! - a document whose every CFDI SAT cancelled releases its tickets.

mod common;

use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use common::{env, Backend};
use outbox::model::InvoiceRef;
use outbox::store::{NewCancellation, NewCfdi, NewDecision};
use outbox::{Actor, Clock, Outbox, OutboxError, Role};
use serde_json::json;

/// Rounds of each race (the issue's floor).
const ROUNDS: usize = 200;

fn contador() -> Actor {
    Actor::new("carlos", Role::Contador, "test")
}

fn staff() -> Actor {
    Actor::new("ana", Role::Personal, "test")
}

/// An ingreso recorded at the test clock's day, with two CFDIs (a duplicate) written as the
/// drain would; returns (invoice id, [(cfdi id, uuid); 2]).
async fn sale_with_two_cfdis(o: &Outbox, raw: &sqlx::AnyPool, sale_id: &str, at: DateTime<Utc>) -> (i64, Vec<(i64, String)>) {
    let json = common::with_folio(&common::ingreso(sale_id), sale_id);
    let id = o.record_sale_json(json.as_bytes(), None, &staff()).await.unwrap().invoice_id;
    for n in 1..=2 {
        o.store()
            .record_cfdi(&NewCfdi {
                invoice_id: id,
                attempt_id: None,
                evidence_id: None,
                uuid: format!("{:08X}-0000-4000-8000-{:012X}", id, n),
                pac: "sw".into(),
                fecha_timbrado: None,
                xml: Some(b"<cfdi/>".to_vec()),
                at_ms: at.timestamp_millis(),
            })
            .await
            .unwrap();
    }
    let cfdis: Vec<(i64, String)> = sqlx::query_as("SELECT id, uuid FROM cfdis WHERE invoice_id = $1 ORDER BY id")
        .bind(id)
        .fetch_all(raw)
        .await
        .unwrap();
    (id, cfdis)
}

/// The decision "keep `keep`, cancel `lose`" of invoice `id`, as `Outbox::decide_duplicate`
/// hands it to the store.
fn keep_one(id: i64, keep: &(i64, String), lose: &(i64, String), at_ms: i64) -> (NewDecision, Vec<NewCancellation>) {
    (
        NewDecision {
            invoice_id: id,
            kind: "duplicate",
            group_key: format!("invoice-{id}"),
            survivor_uuid: Some(keep.1.clone()),
            motivo: Some("02".into()),
            folio_sustitucion: None,
            note: format!("se conserva {}", keep.1),
            detail: json!({ "losers": [lose.1] }),
            events: vec![],
            at_ms,
            actor: contador(),
        },
        vec![NewCancellation {
            invoice_id: id,
            cfdi_id: lose.0,
            uuid: lose.1.clone(),
            pac: "sw".into(),
            motivo: "02".into(),
            folio_sustitucion: None,
            needs_acceptance: false,
            prediction: json!({ "needs_acceptance": false, "rule": "egreso" }),
            next_try_at_ms: at_ms,
        }],
    )
}

async fn two_contadores_keeping_different_cfdis_cancel_at_most_one(backend: Backend) {
    let e = env(backend).await;
    let seat_a = Arc::new(e.reopen().await);
    let seat_b = Arc::new(e.reopen().await);
    let now = e.clock.now();
    let mut both_recorded = 0;
    for round in 0..ROUNDS {
        let (id, cfdis) = sale_with_two_cfdis(&e.outbox, &e.raw, &format!("dup-{round}"), now).await;
        let (da, ca) = keep_one(id, &cfdis[0], &cfdis[1], now.timestamp_millis());
        let (db, cb) = keep_one(id, &cfdis[1], &cfdis[0], now.timestamp_millis());
        let (a, b) = (seat_a.clone(), seat_b.clone());
        let ta = tokio::spawn(async move { a.store().record_decision(&da, &ca).await });
        let tb = tokio::spawn(async move { b.store().record_decision(&db, &cb).await });
        let (ra, rb) = (ta.await.unwrap(), tb.await.unwrap());
        for r in [&ra, &rb] {
            if let Err(err) = r {
                assert!(matches!(err, OutboxError::Integrity(_)), "round {round}: {err}");
            }
        }
        if ra.is_ok() && rb.is_ok() {
            both_recorded += 1;
        }
        let ordered: i64 = sqlx::query_scalar("SELECT COUNT(DISTINCT cfdi_id) FROM cancellations WHERE invoice_id = $1")
            .bind(id)
            .fetch_one(&e.raw)
            .await
            .unwrap();
        assert!(ordered <= 1, "round {round}: both CFDIs of the sale ordered cancelled");
        assert!(ra.is_ok() || rb.is_ok(), "round {round}: one of the two decisions stands");
    }
    assert_eq!(both_recorded, 0);
    // The same survivor decided twice (a double submit) orders the loser's cancellation once.
    let (id, cfdis) = sale_with_two_cfdis(&e.outbox, &e.raw, "dup-twice", now).await;
    let (d1, c1) = keep_one(id, &cfdis[0], &cfdis[1], now.timestamp_millis());
    seat_a.store().record_decision(&d1, &c1).await.unwrap();
    let again = seat_b.store().record_decision(&d1, &c1).await;
    assert!(matches!(again, Err(OutboxError::Integrity(_))), "{again:?}");
    // The group keeps the first decision's verdict: its survivor.
    let verdict = sqlx::query_scalar::<_, String>("SELECT survivor_uuid FROM group_verdicts WHERE group_key = $1")
        .bind(format!("invoice-{id}"))
        .fetch_one(&e.raw)
        .await
        .unwrap();
    assert_eq!(verdict, cfdis[0].1);
}

/// A ticket of `day` (local time at 42501).
fn ticket(sale_id: &str, day: NaiveDate) -> String {
    format!(
        r#"{{"sale_id":"{sale_id}","kind":"ingreso","ticket":true,"occurred_at":"{day}T10:00:00","forma_pago":"01",
 "conceptos":[{{"clave_prod_serv":"01010101","cantidad":"2","clave_unidad":"H87","descripcion":"Taco","valor_unitario":"25.00","objeto_imp":"02","traslados":[{{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}}]}}]}}"#
    )
}

fn receptor() -> cfdi::sale::SaleReceptor {
    serde_json::from_str(
        r#"{"rfc":"URE180429TM6","nombre":"UNIVERSIDAD ROBOTICA ESPAÑOLA","domicilio_fiscal":"86991","regimen_fiscal":"601","uso_cfdi":"G03"}"#,
    )
    .unwrap()
}

async fn a_ticket_invoiced_while_the_global_is_made_lands_in_one_live_document(backend: Backend) {
    let e = env(backend).await;
    let seat_a = Arc::new(e.reopen().await);
    let seat_b = Arc::new(e.reopen().await);
    for seat in [&seat_a, &seat_b] {
        seat.provide_csd_password(common::password());
    }
    e.outbox.provide_csd_password(common::password());
    let start = e.clock.now() - Duration::days(100);
    let mut outcomes = [0usize; 3];
    for round in 0..ROUNDS {
        // Each round is its own day (its own factura global).
        let now = start + Duration::days(round as i64 + 1);
        e.clock.set(now);
        let day = (now - Duration::hours(6)).date_naive();
        let sale_id = format!("t-{round}");
        e.outbox
            .record_sale_json(ticket(&sale_id, day).as_bytes(), None, &staff())
            .await
            .unwrap_or_else(|err| panic!("round {round}: {err}"));
        let (a, b) = (seat_a.clone(), seat_b.clone());
        let named = sale_id.clone();
        let ta = tokio::spawn(async move { a.create_global_invoice("01", day, day, &staff()).await });
        let tb = tokio::spawn(async move { b.invoice_ticket(&InvoiceRef::SaleId(named), receptor(), None, &staff()).await });
        let (ra, rb) = (ta.await.unwrap(), tb.await.unwrap());
        let documents: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM invoices WHERE sale_id = $1 OR sale_id LIKE $2")
            .bind(format!("factura-{sale_id}"))
            .bind(format!("global-01-{0}-{0}%", day.format("%Y%m%d")))
            .fetch_one(&e.raw)
            .await
            .unwrap();
        assert_eq!(documents, 1, "round {round}: one document holds the ticket ({ra:?} / {rb:?})");
        let live: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM ticket_claims c JOIN tickets t ON t.invoice_id = c.ticket_invoice_id \
             WHERE t.sale_id = $1 AND c.released_at_ms IS NULL",
        )
        .bind(&sale_id)
        .fetch_one(&e.raw)
        .await
        .unwrap();
        assert_eq!(
            live, 1,
            "round {round}: the ticket is in exactly one live document ({ra:?} / {rb:?})"
        );
        // The loser of the race is refused in words (or finds nothing left to do), and wrote
        // no document of its own.
        for r in [ra.as_ref().map(|_| ()), rb.as_ref().map(|_| ())] {
            if let Err(err) = r {
                assert!(
                    matches!(err, OutboxError::Invalid(v) if ["ticket_en_otro_documento", "en_factura_global", "sin_tickets"].contains(&v.0[0].code)),
                    "round {round}: {err}"
                );
            }
        }
        match (ra.is_ok(), rb.is_ok()) {
            (true, false) => outcomes[0] += 1,
            (false, true) => outcomes[1] += 1,
            _ => outcomes[2] += 1,
        }
    }
    assert_eq!(outcomes[2], 0, "{outcomes:?}");
}

async fn a_cancelled_factura_global_releases_its_tickets(backend: Backend) {
    let e = env(backend).await;
    e.outbox.provide_csd_password(common::password());
    let now = e.clock.now();
    let day = (now - Duration::hours(6)).date_naive();
    for n in 0..3 {
        e.outbox
            .record_sale_json(ticket(&format!("r-{n}"), day).as_bytes(), None, &staff())
            .await
            .unwrap();
    }
    let g = e.outbox.create_global_invoice("01", day, day, &staff()).await.unwrap();
    assert_eq!(g.added, 3);
    // A ticket in a live global is not invoiced to a named customer.
    let refused = e
        .outbox
        .invoice_ticket(&InvoiceRef::SaleId("r-0".into()), receptor(), None, &staff())
        .await;
    assert!(
        matches!(&refused, Err(OutboxError::Invalid(v)) if v.0[0].code == "en_factura_global"),
        "{refused:?}"
    );
    // The global's CFDI is stamped, then SAT cancels it (as the cancellation step records it).
    let gid = g.recorded.invoice_id;
    e.outbox
        .store()
        .record_cfdi(&NewCfdi {
            invoice_id: gid,
            attempt_id: None,
            evidence_id: None,
            uuid: "AAAAAAAA-0000-4000-8000-000000000001".into(),
            pac: "sw".into(),
            fecha_timbrado: None,
            xml: Some(b"<cfdi/>".to_vec()),
            at_ms: now.timestamp_millis(),
        })
        .await
        .unwrap();
    sqlx::query("UPDATE cfdis SET cancellation_status = 'cancelado' WHERE invoice_id = $1")
        .bind(gid)
        .execute(&e.raw)
        .await
        .unwrap();
    // Each ticket says it was released.
    for n in 0..3 {
        let t = e.outbox.invoice(&InvoiceRef::SaleId(format!("r-{n}"))).await.unwrap();
        assert!(t.timeline.iter().any(|x| x.kind == "ticket_liberado"), "r-{n}: {:?}", t.timeline);
    }
    // The period's preview no longer sees a live global; the tickets go into a new one.
    let p = e.outbox.global_invoice_preview("01", day, day).await.unwrap();
    assert_eq!(p.existing_invoice_id, None);
    assert!(p.tickets.iter().all(|t| t.excluded.is_none()), "{:?}", p.tickets);
    // One is invoiced to a named customer; the new global takes the other two.
    e.outbox
        .invoice_ticket(&InvoiceRef::SaleId("r-0".into()), receptor(), None, &staff())
        .await
        .unwrap();
    let again = e.outbox.create_global_invoice("01", day, day, &staff()).await.unwrap();
    assert!(!again.recorded.replayed, "a new global, not the cancelled one");
    assert_eq!(again.recorded.sale_id, format!("global-01-{0}-{0}-r2", day.format("%Y%m%d")));
    assert_eq!(again.added, 2);
    assert_eq!(again.excluded_named, vec!["r-0".to_string()]);
}

/// A database made before migration 0008 upgrades with nothing lost: its tickets' documents
/// become their live claims, its duplicate decisions their verdicts and fates. (The database is
/// taken back to 0007 by hand: the links written where 0007 kept them, 0008's objects dropped.)
async fn a_database_before_0008_upgrades_with_nothing_lost(backend: Backend) {
    let e = env(backend).await;
    e.outbox.provide_csd_password(common::password());
    let now = e.clock.now();
    let day = (now - Duration::hours(6)).date_naive();
    for n in 0..3 {
        e.outbox
            .record_sale_json(ticket(&format!("u-{n}"), day).as_bytes(), None, &staff())
            .await
            .unwrap();
    }
    e.outbox
        .invoice_ticket(&InvoiceRef::SaleId("u-0".into()), receptor(), None, &staff())
        .await
        .unwrap();
    let g = e.outbox.create_global_invoice("01", day, day, &staff()).await.unwrap();
    let (id, cfdis) = sale_with_two_cfdis(&e.outbox, &e.raw, "dup-old", now).await;
    let (d, c) = keep_one(id, &cfdis[1], &cfdis[0], now.timestamp_millis());
    e.outbox.store().record_decision(&d, &c).await.unwrap();

    // Back to 0007.
    let mut down = vec![
        "INSERT INTO global_invoice_tickets (ticket_invoice_id, global_invoice_id, created_at_ms) \
         SELECT ticket_invoice_id, document_invoice_id, created_at_ms FROM ticket_claims WHERE kind = 'global'"
            .to_string(),
        "INSERT INTO ticket_named_invoices (ticket_invoice_id, invoice_id, created_at_ms) \
         SELECT ticket_invoice_id, document_invoice_id, created_at_ms FROM ticket_claims WHERE kind = 'named'"
            .to_string(),
    ];
    match backend {
        Backend::Sqlite => {
            for t in [
                "decisions_one_verdict",
                "decisions_survivor_fate",
                "cancellations_loser_fate",
                "cfdis_cancelled_release_tickets",
            ] {
                down.push(format!("DROP TRIGGER {t}"));
            }
            for t in ["ticket_claims", "cfdi_fates", "group_verdicts", "history_gaps"] {
                down.push(format!("DROP TABLE {t}"));
            }
        }
        Backend::Postgres => {
            for (t, on) in [
                ("decisions_one_verdict", "decisions"),
                ("cancellations_loser_fate", "cancellations"),
                ("cfdis_cancelled_release_tickets", "cfdis"),
            ] {
                down.push(format!("DROP TRIGGER {t} ON {on}"));
            }
            for t in ["ticket_claims", "cfdi_fates", "group_verdicts", "history_gaps"] {
                down.push(format!("DROP TABLE {t} CASCADE"));
            }
            for f in [
                "timbra_decision_verdict",
                "timbra_cancellation_loser",
                "timbra_ticket_claim_fixed",
                "timbra_release_tickets",
                "timbra_history_gap_settle_only",
            ] {
                down.push(format!("DROP FUNCTION {f}()"));
            }
        }
    }
    down.push("DELETE FROM _sqlx_migrations WHERE version = 8".to_string());
    for sql in &down {
        sqlx::query(sql).execute(&e.raw).await.unwrap_or_else(|err| panic!("{sql}: {err}"));
    }

    // Opened by this build: 0008 runs on the old data.
    let upgraded = e.reopen().await;
    let claims: Vec<(String, String)> = sqlx::query_as(
        "SELECT t.sale_id, c.kind FROM ticket_claims c JOIN tickets t ON t.invoice_id = c.ticket_invoice_id \
         WHERE c.released_at_ms IS NULL ORDER BY t.sale_id",
    )
    .fetch_all(&e.raw)
    .await
    .unwrap();
    assert_eq!(
        claims,
        vec![
            ("u-0".to_string(), "named".to_string()),
            ("u-1".to_string(), "global".to_string()),
            ("u-2".to_string(), "global".to_string())
        ]
    );
    let p = upgraded.global_invoice_preview("01", day, day).await.unwrap();
    assert_eq!(p.existing_invoice_id, Some(g.recorded.invoice_id));
    let verdict: String = sqlx::query_scalar("SELECT survivor_uuid FROM group_verdicts WHERE group_key = $1")
        .bind(format!("invoice-{id}"))
        .fetch_one(&e.raw)
        .await
        .unwrap();
    assert_eq!(verdict, cfdis[1].1);
    let fates: Vec<(String, String)> = sqlx::query_as("SELECT uuid, fate FROM cfdi_fates ORDER BY fate")
        .fetch_all(&e.raw)
        .await
        .unwrap();
    assert_eq!(
        fates,
        vec![
            (cfdis[0].1.clone(), "loser".to_string()),
            (cfdis[1].1.clone(), "survivor".to_string())
        ]
    );
    // And the upgraded rules hold: the loser never becomes a survivor.
    let (d2, c2) = keep_one(id, &cfdis[0], &cfdis[1], now.timestamp_millis());
    assert!(upgraded.store().record_decision(&d2, &c2).await.is_err());
}

conformance!(
    two_contadores_keeping_different_cfdis_cancel_at_most_one,
    a_ticket_invoiced_while_the_global_is_made_lands_in_one_live_document,
    a_cancelled_factura_global_releases_its_tickets,
    a_database_before_0008_upgrades_with_nothing_lost,
);
