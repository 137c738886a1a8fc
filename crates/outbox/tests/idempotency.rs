//! The intake idempotency table of docs/intake.md, one case per row: a request history, what each request must return, and what
//! the database must hold afterwards.

mod common;

use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::Duration;
use common::*;
use outbox::intake::sha256_hex;
use outbox::OutboxError;

/// One step of a history.
enum Step {
    /// `record_sale_json(sale, key)`.
    Record { key: Option<&'static str>, sale: String },
    /// Another process reserves `key` (and then, say, dies).
    ReservedElsewhere { key: &'static str },
    /// Time passes.
    Wait(Duration),
}

/// What a step must return.
#[derive(Debug)]
enum Expect {
    /// A new invoice.
    Recorded,
    /// The invoice of the first `Recorded` step, nothing new.
    Original,
    Conflict,
    /// In progress, retry after between these many seconds.
    InProgress(u64, u64),
    /// A validation error naming this field.
    Invalid(&'static str),
    /// Steps without a result (reservations elsewhere, waiting).
    Nothing,
}

fn record(key: Option<&'static str>, sale: String) -> Step {
    Step::Record { key, sale }
}

/// The fixture sale with another receptor name: same sale_id, different body.
fn changed() -> String {
    sale_json("ingreso-pedido-4471").replace("UNIVERSIDAD ROBOTICA ESPAÑOLA", "OTRA EMPRESA")
}

fn original() -> String {
    sale_json("ingreso-pedido-4471")
}

/// Runs a history and checks each result, then the rows intake wrote
/// (sales, invoices, attempts, timeline events, intake keys).
async fn check(backend: Backend, case: &str, steps: Vec<(Step, Expect)>, rows: [i64; 5]) {
    let e = env(backend).await;
    let mut first: Option<i64> = None;
    for (i, (step, expect)) in steps.into_iter().enumerate() {
        let at = format!("{case}, step {i} ({expect:?})");
        match step {
            Step::Wait(d) => e.clock.advance(d),
            Step::ReservedElsewhere { key } => {
                let now = e.outbox.now().timestamp_millis();
                let granted = e
                    .outbox
                    .store()
                    .reserve_key(key, "pedido-4471", &sha256_hex(b"x"), "dead-process", now + 120_000, now)
                    .await;
                assert_eq!(granted.unwrap(), outbox::store::Reservation::Granted, "{at}");
            }
            Step::Record { key, sale } => {
                let got = e.outbox.record_sale_json(sale.as_bytes(), key, &staff()).await;
                match (&expect, got) {
                    (Expect::Recorded, Ok(r)) if !r.replayed => {
                        assert!(first.is_none() || first != Some(r.invoice_id), "{at}");
                        first.get_or_insert(r.invoice_id);
                    }
                    (Expect::Original, Ok(r)) if r.replayed => assert_eq!(Some(r.invoice_id), first, "{at}"),
                    (Expect::Conflict, Err(OutboxError::IdempotencyConflict { invoice_id, .. })) => {
                        assert_eq!(Some(invoice_id), first, "{at}")
                    }
                    (Expect::InProgress(lo, hi), Err(OutboxError::InProgress { retry_after, .. })) => {
                        let s = retry_after.as_secs_f64();
                        assert!(s >= *lo as f64 && s <= *hi as f64, "{at}: retry after {s} s");
                    }
                    (Expect::Invalid(field), Err(OutboxError::Invalid(v))) => {
                        assert!(v.0.iter().any(|f| f.field == *field), "{at}: {v}");
                    }
                    (_, got) => panic!("{at}: got {got:?}"),
                }
            }
        }
    }
    assert_eq!(
        e.counts().await,
        rows,
        "{case}: rows in sales, invoices, attempts, timeline_events, intake_keys"
    );
}

async fn same_key_same_body_returns_the_original_and_writes_nothing(backend: Backend) {
    check(
        backend,
        "same key, same body",
        vec![
            (record(None, original()), Expect::Recorded),
            (record(None, original()), Expect::Original),
            (record(None, original().replace(",\"", ", \"")), Expect::Original),
        ],
        [1, 1, 1, 1, 1],
    )
    .await;
}

async fn same_key_different_body_is_a_conflict_and_writes_nothing(backend: Backend) {
    check(
        backend,
        "same key, different body",
        vec![
            (record(Some("click-1"), original()), Expect::Recorded),
            (record(Some("click-1"), changed()), Expect::Conflict),
            (record(Some("click-1"), ingreso("pedido-9")), Expect::Conflict),
        ],
        [1, 1, 1, 1, 1],
    )
    .await;
}

async fn same_key_while_the_first_is_being_recorded_is_in_progress(backend: Backend) {
    check(
        backend,
        "same key while in progress",
        vec![
            (Step::ReservedElsewhere { key: "pedido-4471" }, Expect::Nothing),
            (record(None, original()), Expect::InProgress(119, 120)),
            (record(None, changed()), Expect::InProgress(119, 120)),
        ],
        [0, 0, 0, 0, 1],
    )
    .await;
}

async fn a_validation_error_names_the_field_and_leaves_the_key_free(backend: Backend) {
    check(
        backend,
        "validation error",
        vec![
            (
                record(Some("click-7"), original().replace("URE180429TM6", "URE18")),
                Expect::Invalid("receptor.rfc"),
            ),
            (record(Some("click-7"), original()), Expect::Recorded),
        ],
        [1, 1, 1, 1, 1],
    )
    .await;
}

async fn a_reservation_abandoned_by_a_crash_expires_after_two_minutes(backend: Backend) {
    check(
        backend,
        "process died mid-request",
        vec![
            (Step::ReservedElsewhere { key: "pedido-4471" }, Expect::Nothing),
            (Step::Wait(Duration::seconds(119)), Expect::Nothing),
            (record(None, original()), Expect::InProgress(1, 1)),
            (Step::Wait(Duration::seconds(1)), Expect::Nothing),
            (record(None, original()), Expect::Recorded),
            (record(None, original()), Expect::Original),
        ],
        [1, 1, 1, 1, 1],
    )
    .await;
}

async fn the_sale_id_is_the_identity_whatever_the_key(backend: Backend) {
    check(
        backend,
        "another key, same sale",
        vec![
            (record(None, original()), Expect::Recorded),
            (record(Some("click-2"), original()), Expect::Original),
            (record(Some("click-3"), changed()), Expect::Conflict),
        ],
        [1, 1, 1, 1, 1],
    )
    .await;
}

async fn concurrent_requests_with_one_key_record_one_invoice(backend: Backend) {
    let e = env(backend).await;
    let outbox = Arc::new(e.outbox);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let o = outbox.clone();
        tasks.push(tokio::spawn(async move {
            o.record_sale_json(original().as_bytes(), Some("click-1"), &staff()).await
        }));
    }
    let (mut recorded, mut replayed, mut in_progress) = (0, 0, 0);
    for t in tasks {
        match t.await.expect("task") {
            Ok(r) if !r.replayed => recorded += 1,
            Ok(_) => replayed += 1,
            Err(OutboxError::InProgress { retry_after, .. }) => {
                assert!(retry_after <= StdDuration::from_secs(120));
                in_progress += 1;
            }
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(recorded, 1, "replayed {replayed}, in progress {in_progress}");
    assert_eq!(recorded + replayed + in_progress, 8);
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM sales").fetch_one(&e.raw).await.unwrap();
    assert_eq!(rows, 1);
    let again = outbox
        .record_sale_json(original().as_bytes(), Some("click-1"), &staff())
        .await
        .unwrap();
    assert!(again.replayed);
}

async fn two_processes_on_one_database_record_a_sale_once(backend: Backend) {
    let e = env(backend).await;
    let other = Arc::new(e.reopen().await);
    other.provide_csd_password(password());
    let here = Arc::new(e.outbox);
    let mut tasks = Vec::new();
    for i in 0..20 {
        let o = if i % 2 == 0 { here.clone() } else { other.clone() };
        // Ten sales, each sent twice, once through each "process".
        let json = ingreso(&format!("pedido-{}", i / 2));
        tasks.push(tokio::spawn(
            async move { o.record_sale_json(json.as_bytes(), None, &staff()).await },
        ));
    }
    let mut new = 0;
    for t in tasks {
        match t.await.expect("task") {
            Ok(r) if !r.replayed => new += 1,
            Ok(_) | Err(OutboxError::InProgress { .. }) => {}
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(new, 10);
    let rows: Vec<i64> =
        sqlx::query_scalar("SELECT COUNT(*) FROM sales UNION ALL SELECT COUNT(*) FROM invoices UNION ALL SELECT COUNT(*) FROM attempts")
            .fetch_all(&e.raw)
            .await
            .unwrap();
    assert_eq!(rows, vec![10, 10, 10]);
}

crate::conformance!(
    same_key_same_body_returns_the_original_and_writes_nothing,
    same_key_different_body_is_a_conflict_and_writes_nothing,
    same_key_while_the_first_is_being_recorded_is_in_progress,
    a_validation_error_names_the_field_and_leaves_the_key_free,
    a_reservation_abandoned_by_a_crash_expires_after_two_minutes,
    the_sale_id_is_the_identity_whatever_the_key,
    concurrent_requests_with_one_key_record_one_invoice,
    two_processes_on_one_database_record_a_sale_once,
);
