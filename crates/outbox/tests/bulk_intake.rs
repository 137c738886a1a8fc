//! Bulk intake (`Outbox::record_sales_json`, `Store::record_sales`): many sales per durable
//! transaction, each still whole or absent and answered on its own — a bad line, a conflict, a
//! replay or a sale that loses its reservation inside a batch writes nothing of itself and
//! stops nothing else; two processes importing the same sales at once record each one once.

mod common;

use std::sync::Arc;

use common::*;
use outbox::store::RecordOutcome;
use outbox::OutboxError;

/// The ingreso fixture with its own sale_id and folio (not a look-alike of the others).
fn sale(sale_id: &str, folio: usize) -> String {
    ingreso(sale_id).replace("\"serie\":\"F\",", &format!("\"serie\":\"F\",\"folio\":\"{folio}\","))
}

fn lines(items: &[String]) -> Vec<Vec<u8>> {
    items.iter().map(|s| s.as_bytes().to_vec()).collect()
}

/// Every row of one sale exists exactly once, or none does.
async fn whole_sales(e: &Env) {
    let broken: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM sales s WHERE \
           (SELECT COUNT(*) FROM invoices i WHERE i.sale_id = s.sale_id) != 1 \
           OR (SELECT COUNT(*) FROM attempts a JOIN invoices i ON a.invoice_id = i.id WHERE i.sale_id = s.sale_id) != 1 \
           OR (SELECT COUNT(*) FROM timeline_events t JOIN invoices i ON t.invoice_id = i.id WHERE i.sale_id = s.sale_id) != 1",
    )
    .fetch_one(e.pool())
    .await
    .unwrap();
    assert_eq!(broken, 0, "every recorded sale has its invoice, attempt and event once");
}

async fn each_sale_of_a_batch_is_answered_on_its_own(backend: Backend) {
    let e = env(backend).await;
    // Recorded before: replayed in the batch.
    e.outbox
        .record_sale_json(sale("pedido-0", 0).as_bytes(), None, &staff())
        .await
        .unwrap();
    let conflicting = sale("pedido-0", 0).replace("UNIVERSIDAD ROBOTICA ESPAÑOLA", "OTRA EMPRESA");
    let invalid = sale("pedido-bad", 99).replace("\"URE180429TM6\"", "\"NO-ES-RFC\"");
    let batch = vec![
        sale("pedido-1", 1),
        sale("pedido-0", 0),
        invalid,
        "{ esto no es json".to_string(),
        conflicting,
        sale("pedido-2", 2),
        // The same sale twice in one batch: the second replays the first.
        sale("pedido-1", 1),
        sale("pedido-3", 3),
    ];
    let got = e.outbox.record_sales_json(&lines(&batch), &staff(), |_| false).await;
    assert_eq!(got.len(), batch.len());
    let new = |i: usize| matches!(&got[i], Ok(r) if !r.replayed);
    let replay = |i: usize| matches!(&got[i], Ok(r) if r.replayed);
    assert!(new(0) && new(5) && new(7), "{got:?}");
    assert!(replay(1) && replay(6), "{got:?}");
    assert!(
        matches!(&got[2], Err(OutboxError::Invalid(v)) if v.0.iter().any(|f| f.field.contains("rfc"))),
        "{:?}",
        got[2]
    );
    assert!(matches!(&got[3], Err(OutboxError::Invalid(_))), "{:?}", got[3]);
    assert!(matches!(&got[4], Err(OutboxError::IdempotencyConflict { .. })), "{:?}", got[4]);
    if let (Ok(a), Ok(b)) = (&got[0], &got[6]) {
        assert_eq!(a.invoice_id, b.invoice_id);
    }
    // pedido-0..3: four sales, four invoices, four attempts, four events, four keys.
    assert_eq!(e.counts().await, [4, 4, 4, 4, 4]);
    whole_sales(&e).await;
    // The same batch again writes nothing.
    let again = e.outbox.record_sales_json(&lines(&batch), &staff(), |_| false).await;
    assert!(again.iter().all(|r| !matches!(r, Ok(r) if !r.replayed)), "{again:?}");
    assert_eq!(e.counts().await, [4, 4, 4, 4, 4]);
}

async fn a_batch_rows_match_one_sale_at_a_time(backend: Backend) {
    let one = env(backend).await;
    let many = env(backend).await;
    let sales: Vec<String> = (0..23).map(|i| sale(&format!("p-{i}"), i)).collect();
    for s in &sales {
        one.outbox.record_sale_json(s.as_bytes(), None, &staff()).await.unwrap();
    }
    let got = many.outbox.record_sales_json(&lines(&sales), &staff(), |_| false).await;
    assert!(got.iter().all(|r| matches!(r, Ok(r) if !r.replayed)), "{got:?}");
    assert_eq!(one.counts().await, many.counts().await);
    // The frozen bytes are the same document (same Fecha, same seal: RSA PKCS#1 v1.5 is deterministic).
    let q = "SELECT a.body_sha256 FROM attempts a JOIN invoices i ON a.invoice_id = i.id ORDER BY i.sale_id";
    let a: Vec<String> = sqlx::query_scalar(q).fetch_all(one.pool()).await.unwrap();
    let b: Vec<String> = sqlx::query_scalar(q).fetch_all(many.pool()).await.unwrap();
    assert_eq!(a, b);
    whole_sales(&many).await;
}

async fn a_record_that_fails_inside_the_shared_transaction_leaves_nothing_of_itself(backend: Backend) {
    let e = env(backend).await;
    // Three sales reserved and sealed through the one-sale path's building blocks: record them
    // once to get their records, then replay the shapes under new sale_ids.
    let first = e.outbox.record_sale_json(sale("seed", 7).as_bytes(), None, &staff()).await.unwrap();
    let detail = e.outbox.invoice(&outbox::model::InvoiceRef::Id(first.invoice_id)).await.unwrap();
    let (_, body) = e.outbox.attempt_body(detail.attempts[0].id).await.unwrap();
    let record = |sale_id: &str, owner: &str| {
        let mut r = template(&detail, &body);
        r.sale.sale_id = sale_id.into();
        r.idempotency_key = sale_id.into();
        r.reservation_owner = owner.into();
        r.attempt.pac_idempotency_key = outbox::intake::pac_idempotency_key("EKU9003173C9", sale_id, 1);
        r
    };
    let now = e.outbox.now().timestamp_millis();
    for (key, owner) in [("ok-1", "me"), ("lost", "someone-else"), ("ok-2", "me")] {
        e.outbox
            .store()
            .reserve_key(key, key, "x", owner, now + 120_000, now)
            .await
            .unwrap();
    }
    let before = e.counts().await;
    let out = e
        .outbox
        .store()
        .record_sales(&[
            record("ok-1", "me"),
            // Not our reservation: ReservationLost, nothing of it written.
            record("lost", "me"),
            // sale_id recorded already: SaleIdTaken, nothing of it written.
            record("seed", "me"),
            record("ok-2", "me"),
        ])
        .await
        .unwrap();
    assert!(matches!(out[0], Ok(RecordOutcome::Recorded { .. })), "{out:?}");
    assert!(matches!(out[1], Ok(RecordOutcome::ReservationLost)), "{out:?}");
    assert!(matches!(out[2], Ok(RecordOutcome::SaleIdTaken)), "{out:?}");
    assert!(matches!(out[3], Ok(RecordOutcome::Recorded { .. })), "{out:?}");
    let after = e.counts().await;
    // Two new sales with their invoice, attempt and event; intake_keys: the two settle.
    assert_eq!(
        [
            after[0] - before[0],
            after[1] - before[1],
            after[2] - before[2],
            after[3] - before[3]
        ],
        [2, 2, 2, 2]
    );
    let lost: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM sales WHERE sale_id = 'lost'")
        .fetch_one(e.pool())
        .await
        .unwrap();
    assert_eq!(lost, 0);
    let settled: Vec<String> =
        sqlx::query_scalar("SELECT state FROM intake_keys WHERE idempotency_key IN ('ok-1', 'ok-2', 'lost') ORDER BY idempotency_key")
            .fetch_all(e.pool())
            .await
            .unwrap();
    // lost, ok-1, ok-2: the lost one keeps its other owner's reservation.
    assert_eq!(settled, vec!["reserved", "recorded", "recorded"]);
    whole_sales(&e).await;
}

async fn a_stop_error_ends_the_list_and_writes_nothing_after_it(backend: Backend) {
    let e = bare(backend).await;
    // Not configured: every sale would fail the same way; the caller stops at the first.
    let sales: Vec<String> = (0..5).map(|i| sale(&format!("s-{i}"), i)).collect();
    let got = e
        .outbox
        .record_sales_json(&lines(&sales), &staff(), |e| matches!(e, OutboxError::NotConfigured))
        .await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(matches!(got[0], Err(OutboxError::NotConfigured)));
    assert_eq!(e.counts().await, [0, 0, 0, 0, 0]);
}

async fn two_processes_importing_the_same_sales_record_each_once(backend: Backend) {
    let e = env(backend).await;
    let other = Arc::new(e.reopen().await);
    other.provide_csd_password(password());
    let here = Arc::new(e.outbox);
    let sales = lines(&(0..40).map(|i| sale(&format!("twice-{i}"), i)).collect::<Vec<_>>());
    let (a, b) = {
        let (h, o) = (here.clone(), other.clone());
        let (s1, s2) = (sales.clone(), sales.clone());
        let t1 = tokio::spawn(async move { h.record_sales_json(&s1, &staff(), |_| false).await });
        let t2 = tokio::spawn(async move { o.record_sales_json(&s2, &staff(), |_| false).await });
        (t1.await.unwrap(), t2.await.unwrap())
    };
    let mut new = 0;
    for r in a.iter().chain(b.iter()) {
        match r {
            Ok(r) if !r.replayed => new += 1,
            Ok(_) | Err(OutboxError::InProgress { .. }) => {}
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(new, 40);
    let rows: Vec<i64> =
        sqlx::query_scalar("SELECT COUNT(*) FROM sales UNION ALL SELECT COUNT(*) FROM invoices UNION ALL SELECT COUNT(*) FROM attempts")
            .fetch_all(&e.raw)
            .await
            .unwrap();
    assert_eq!(rows, vec![40, 40, 40]);
}

fn template(detail: &outbox::model::InvoiceDetail, body: &[u8]) -> outbox::store::NewRecord {
    use outbox::model::{Badge, InvoiceState};
    use outbox::store::*;
    let a = &detail.attempts[0];
    NewRecord {
        sale: NewSale {
            sale_id: String::new(),
            kind: "ingreso".into(),
            occurred_at: detail.sale.occurred_at.clone(),
            body: detail.sale.body.to_canonical_json(),
            body_sha256: detail.sale.body_sha256.clone(),
            source: "test".into(),
        },
        invoice: NewInvoice {
            serie: detail.invoice.serie.clone(),
            folio: detail.invoice.folio.clone(),
            receptor_rfc: detail.invoice.receptor_rfc.clone(),
            receptor_nombre: detail.invoice.receptor_nombre.clone(),
            total: detail.invoice.total.clone(),
            moneda: detail.invoice.moneda.clone(),
            state: InvoiceState::Pending,
            badge: Badge::Pendiente,
            next_try_at_ms: 0,
            fecha: a.fecha.clone(),
            fecha_deadline_ms: detail.invoice.fecha_deadline.timestamp_millis(),
        },
        attempt: NewAttempt {
            attempt_no: 1,
            reason: a.reason,
            previous_attempt_id: None,
            pac: a.pac.clone(),
            body_format: a.body_format,
            body: body.to_vec(),
            body_sha256: outbox::intake::sha256_hex(body),
            fecha: a.fecha.clone(),
            fecha_utc_ms: 0,
            fecha_source: a.fecha_source,
            pac_idempotency_key: String::new(),
            mapping_version: a.mapping_version,
            emisor_settings_id: None,
            no_certificado: a.no_certificado.clone(),
            pac_identity: None,
        },
        event: NewEvent {
            kind: "sale_recorded".into(),
            detail: serde_json::json!({"test": true}),
        },
        idempotency_key: String::new(),
        reservation_owner: String::new(),
        folio: FolioUse::None,
        claim: None,
        at_ms: 0,
        actor: staff(),
    }
}

crate::conformance!(
    each_sale_of_a_batch_is_answered_on_its_own,
    a_batch_rows_match_one_sale_at_a_time,
    a_record_that_fails_inside_the_shared_transaction_leaves_nothing_of_itself,
    a_stop_error_ends_the_list_and_writes_nothing_after_it,
    two_processes_importing_the_same_sales_record_each_once,
);
