//! Bulk intake (`Outbox::record_sales_json`, `Store::record_sales`): many sales per durable
//! transaction, each still whole or absent and answered on its own — a bad line, a conflict, a
//! replay or a sale that loses its reservation inside a batch writes nothing of itself and
//! stops nothing else; two processes importing the same sales at once record each one once.

mod common;

use std::sync::Arc;

use common::*;
use outbox::outbox::bulk::Pace;
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

/// Two items of one keyed batch (the API's `POST /v1/sales/batch`) under one Idempotency-Key:
/// answered as one at a time would — the first recorded, then the other sale under that key a
/// conflict, and the first sale again a replay of it.
async fn one_key_twice_in_a_batch_answers_as_one_at_a_time(backend: Backend) {
    let e = env(backend).await;
    let a = sale("clave-a", 1);
    let b = sale("clave-b", 2);
    let items: Vec<(&[u8], Option<&str>)> = vec![
        (a.as_bytes(), Some("clave-compartida")),
        (b.as_bytes(), Some("clave-compartida")),
        (a.as_bytes(), Some("clave-compartida")),
        (b.as_bytes(), None),
    ];
    let got = e.outbox.record_sales_json_keyed(&items, &staff(), |_| false).await;
    assert_eq!(got.len(), 4, "{got:?}");
    let first = match &got[0] {
        Ok(r) if !r.replayed && r.sale_id == "clave-a" => r.invoice_id,
        other => panic!("{other:?}"),
    };
    assert!(
        matches!(&got[1], Err(OutboxError::IdempotencyConflict { sale_id, .. }) if sale_id == "clave-a"),
        "{:?}",
        got[1]
    );
    assert!(matches!(&got[2], Ok(r) if r.replayed && r.invoice_id == first), "{:?}", got[2]);
    // Under its own sale_id as the key, the other sale is new.
    assert!(matches!(&got[3], Ok(r) if !r.replayed && r.sale_id == "clave-b"), "{:?}", got[3]);
    // clave-a and clave-b: two sales; keys clave-compartida and clave-b.
    assert_eq!(e.counts().await, [2, 2, 2, 2, 2]);
    whole_sales(&e).await;
}

/// Two different sales of one batch bringing one folio (not look-alikes, so both reach the
/// recording transaction): the first has it, the second is refused `folio_usado` naming the
/// first, and writes nothing.
async fn one_brought_folio_twice_in_a_batch_goes_to_the_first(backend: Backend) {
    let e = env(backend).await;
    let a = sale("folio-a", 31);
    let b = sale("folio-b", 31).replace("Café de olla", "Té de limón");
    let c = sale("folio-c", 32);
    let got = e.outbox.record_sales_json(&lines(&[a, b, c]), &staff(), |_| false).await;
    assert!(matches!(&got[0], Ok(r) if !r.replayed), "{got:?}");
    assert!(
        matches!(&got[1], Err(OutboxError::Invalid(v)) if v.0[0].code == "folio_usado" && v.0[0].message.contains("folio-a")),
        "{:?}",
        got[1]
    );
    assert!(matches!(&got[2], Ok(r) if !r.replayed), "{got:?}");
    assert_eq!(e.counts().await, [2, 2, 2, 2, 2]);
    let owners: Vec<(String, String)> =
        sqlx::query_as("SELECT f.folio, s.sale_id FROM folios f JOIN sales s ON s.id = f.sale_ref ORDER BY f.folio")
            .fetch_all(e.pool())
            .await
            .unwrap();
    assert_eq!(
        owners,
        vec![("31".to_string(), "folio-a".to_string()), ("32".to_string(), "folio-c".to_string())]
    );
    whole_sales(&e).await;
}

/// Records that each claim their key inside the shared transaction (as the bulk import's do),
/// mixed with every way one can fail there — a folio another sale has, a held number that is not
/// this intake's, a key another owner holds, a row the database refuses — each answered on its
/// own with nothing of it written, the others recorded whole.
async fn claimed_records_that_fail_in_the_shared_transaction_leave_nothing_of_themselves(backend: Backend) {
    use outbox::store::{FolioUse, KeyClaim};
    let e = env(backend).await;
    let first = e.outbox.record_sale_json(sale("seed", 7).as_bytes(), None, &staff()).await.unwrap();
    let detail = e.outbox.invoice(&outbox::model::InvoiceRef::Id(first.invoice_id)).await.unwrap();
    let (_, body) = e.outbox.attempt_body(detail.attempts[0].id).await.unwrap();
    let now = e.outbox.now().timestamp_millis();
    let record = |sale_id: &str, folio: FolioUse| {
        let mut r = template(&detail, &body);
        r.sale.sale_id = sale_id.into();
        r.idempotency_key = sale_id.into();
        r.reservation_owner = format!("owner-{sale_id}");
        r.attempt.pac_idempotency_key = outbox::intake::pac_idempotency_key("EKU9003173C9", sale_id, 1);
        r.claim = Some(KeyClaim {
            until_ms: now + 120_000,
            now_ms: now,
        });
        r.folio = folio;
        r.at_ms = now;
        r
    };
    let brought = |folio: &str| FolioUse::Brought {
        serie: "F".into(),
        folio: folio.into(),
    };
    e.outbox
        .store()
        .reserve_key("live", "live", "x", "someone-else", now + 120_000, now)
        .await
        .unwrap();
    let mut refused = record("bad-kind", FolioUse::None);
    refused.sale.kind = "no-es-un-tipo".into();
    let before = e.counts().await;
    let out = e
        .outbox
        .store()
        .record_sales(&[
            record("ok-1", FolioUse::None),
            // F-7 is seed's.
            record("taken-folio", brought("7")),
            // Nobody held F-999 for this owner.
            record(
                "held-elsewhere",
                FolioUse::Held {
                    serie: "F".into(),
                    folio: "999".into(),
                    owner: "owner-held-elsewhere".into(),
                },
            ),
            // Another owner's live reservation.
            record("live", FolioUse::None),
            refused,
            record("ok-2", brought("8")),
        ])
        .await
        .unwrap();
    assert!(matches!(out[0], Ok(RecordOutcome::Recorded { .. })), "{out:?}");
    assert!(
        matches!(&out[1], Err(OutboxError::Invalid(v)) if v.0[0].code == "folio_usado" && v.0[0].message.contains("seed")),
        "{out:?}"
    );
    assert!(matches!(out[2], Ok(RecordOutcome::ReservationLost)), "{out:?}");
    assert!(matches!(out[3], Ok(RecordOutcome::ReservationLost)), "{out:?}");
    assert!(matches!(&out[4], Err(e) if !e.is_storage_fault()), "{out:?}");
    assert!(matches!(out[5], Ok(RecordOutcome::Recorded { .. })), "{out:?}");
    let after = e.counts().await;
    assert_eq!(
        [
            after[0] - before[0],
            after[1] - before[1],
            after[2] - before[2],
            after[3] - before[3],
            after[4] - before[4]
        ],
        [2, 2, 2, 2, 2]
    );
    let keys: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT idempotency_key, state, lease_owner FROM intake_keys WHERE idempotency_key <> 'seed' ORDER BY idempotency_key",
    )
    .fetch_all(e.pool())
    .await
    .unwrap();
    assert_eq!(
        keys,
        vec![
            ("live".to_string(), "reserved".to_string(), Some("someone-else".to_string())),
            ("ok-1".to_string(), "recorded".to_string(), None),
            ("ok-2".to_string(), "recorded".to_string(), None),
        ]
    );
    let folios: Vec<(String, String)> =
        sqlx::query_as("SELECT f.folio, s.sale_id FROM folios f JOIN sales s ON s.id = f.sale_ref ORDER BY f.folio")
            .fetch_all(e.pool())
            .await
            .unwrap();
    assert_eq!(
        folios,
        vec![("7".to_string(), "seed".to_string()), ("8".to_string(), "ok-2".to_string())]
    );
    assert_eq!(e.count("folios WHERE sale_ref IS NULL").await, 0);
    whole_sales(&e).await;
}

/// A key another intake reserves while the batch is recording (its row not yet committed when
/// the batch reaches it) is lost for that record alone: nothing of it written, the other
/// records recorded, the other intake's reservation kept.
async fn a_key_reserved_meanwhile_is_lost_whole(backend: Backend) {
    use outbox::store::KeyClaim;
    let e = env(backend).await;
    let first = e.outbox.record_sale_json(sale("seed", 7).as_bytes(), None, &staff()).await.unwrap();
    let detail = e.outbox.invoice(&outbox::model::InvoiceRef::Id(first.invoice_id)).await.unwrap();
    let (_, body) = e.outbox.attempt_body(detail.attempts[0].id).await.unwrap();
    let now = e.outbox.now().timestamp_millis();
    let record = |sale_id: &str| {
        let mut r = template(&detail, &body);
        r.sale.sale_id = sale_id.into();
        r.idempotency_key = sale_id.into();
        r.reservation_owner = format!("owner-{sale_id}");
        r.attempt.pac_idempotency_key = outbox::intake::pac_idempotency_key("EKU9003173C9", sale_id, 1);
        r.claim = Some(KeyClaim {
            until_ms: now + 120_000,
            now_ms: now,
        });
        r.at_ms = now;
        r
    };
    let mut other = e.pool().begin().await.unwrap();
    sqlx::query(&format!(
        "INSERT INTO intake_keys (idempotency_key, sale_id, request_sha256, state, lease_owner, lease_until_ms, created_at_ms) \
         VALUES ('taken', 'taken', 'x', 'reserved', 'someone-else', {}, {now})",
        now + 120_000
    ))
    .execute(&mut *other)
    .await
    .unwrap();
    let store = e.outbox.store().clone();
    let records = vec![record("ok-1"), record("taken"), record("ok-2")];
    let recording = tokio::spawn(async move { store.record_sales(&records).await });
    // Whether the batch reaches the key before or after this commit, the answer is the same.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    other.commit().await.unwrap();
    let out = recording.await.unwrap().unwrap();
    assert!(matches!(out[0], Ok(RecordOutcome::Recorded { .. })), "{out:?}");
    assert!(matches!(out[1], Ok(RecordOutcome::ReservationLost)), "{out:?}");
    assert!(matches!(out[2], Ok(RecordOutcome::Recorded { .. })), "{out:?}");
    let taken: Vec<(String, Option<String>)> = sqlx::query_as("SELECT state, lease_owner FROM intake_keys WHERE idempotency_key = 'taken'")
        .fetch_all(e.pool())
        .await
        .unwrap();
    assert_eq!(taken, vec![("reserved".to_string(), Some("someone-else".to_string()))]);
    assert_eq!(e.count("sales WHERE sale_id = 'taken'").await, 0);
    assert_eq!(e.counts().await, [3, 3, 3, 3, 4]);
    whole_sales(&e).await;
}

/// A batch warns as one sale at a time does: a look-alike of a sale recorded before is a
/// *posible duplicado*, a receptor on the 69-B list is named — both read for the whole batch.
async fn a_batch_warns_as_one_sale_at_a_time(backend: Backend) {
    let e = env(backend).await;
    let pan = |sale_id: &str| ingreso(sale_id).replace("\"Café de olla\"", "\"Pan dulce\"");
    e.outbox.record_sale_json(pan("antes").as_bytes(), None, &staff()).await.unwrap();
    let got = e
        .outbox
        .record_sales_json(&lines(&[pan("despues"), sale("distinta", 51)]), &staff(), |_| false)
        .await;
    let codes = |i: usize| match &got[i] {
        Ok(r) => r.warnings.iter().map(|w| w.code.clone()).collect::<Vec<_>>(),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(codes(0), vec!["posible_duplicado"]);
    assert!(codes(1).is_empty());
    let list = "Información actualizada al 15 de noviembre de 2026\n\
No,RFC,Nombre del Contribuyente,Situación del contribuyente,Publicación página SAT definitivos\n\
1,URE180429TM6,UNIVERSIDAD ROBOTICA ESPAÑOLA,Definitivo,15/01/2021\n";
    e.outbox
        .import_screening_list(list.as_bytes(), "69b.csv", None, false, &unlocked_contador(&e.outbox).await)
        .await
        .unwrap();
    let got = e
        .outbox
        .record_sales_json(&lines(&[sale("listada-1", 52), sale("listada-2", 53)]), &staff(), |_| false)
        .await;
    for r in &got {
        assert!(matches!(r, Ok(r) if r.warnings.iter().any(|w| w.code == "receptor_69b")), "{got:?}");
    }
    // Five sales, each with its invoice and attempt (the warnings add timeline events).
    assert_eq!(e.counts().await[..3], [5, 5, 5]);
}

/// Batches of `n` sales (the next one sealed while one commits).
fn by(n: usize) -> Pace<'static> {
    Pace {
        batch: Some(n),
        progress: None,
    }
}

/// (sale_id, folio) of every invoice, by sale_id.
async fn folios_by_sale(e: &Env) -> Vec<(String, Option<String>)> {
    sqlx::query_as::<_, (String, Option<String>)>("SELECT sale_id, folio FROM invoices ORDER BY sale_id")
        .fetch_all(e.pool())
        .await
        .unwrap()
}

/// From now on a transaction that records the sale `boom` fails at its commit (a deferred
/// foreign key), until a row goes into `boom_parent`.
async fn refuse_commits_of_boom(e: &Env, backend: Backend) {
    let setup: &[&str] = match backend {
        Backend::Sqlite => &[
            "CREATE TABLE boom_parent (id INTEGER PRIMARY KEY)",
            "CREATE TABLE boom_child (id INTEGER REFERENCES boom_parent (id) DEFERRABLE INITIALLY DEFERRED)",
            "CREATE TRIGGER boom AFTER INSERT ON sales WHEN NEW.sale_id = 'boom' BEGIN INSERT INTO boom_child VALUES (1); END",
        ],
        Backend::Postgres => &[
            "CREATE TABLE boom_parent (id INTEGER PRIMARY KEY)",
            "CREATE TABLE boom_child (id INTEGER REFERENCES boom_parent (id) DEFERRABLE INITIALLY DEFERRED)",
            "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.sale_id = 'boom' THEN \
               INSERT INTO boom_child VALUES (1); END IF; RETURN NEW; END $$",
            "CREATE TRIGGER boom AFTER INSERT ON sales FOR EACH ROW EXECUTE FUNCTION boom()",
        ],
    };
    for q in setup {
        sqlx::query(q).execute(e.pool()).await.unwrap();
    }
}

/// While a batch commits the next is sealed: a sale of the next one that repeats a sale of the
/// batch still committing (its sale_id or key), or looks like one (the duplicate screening),
/// is answered as one sale at a time answers it — it waits for that commit.
async fn a_sale_like_one_still_committing_waits_for_its_commit(backend: Backend) {
    let one = env(backend).await;
    let many = env(backend).await;
    let pan = |id: &str| ingreso(id).replace("\"Café de olla\"", "\"Pan dulce\"");
    let own = |id: &str| ingreso(id).replace("\"Café de olla\"", &format!("\"Producto {id}\""));
    let input = vec![
        pan("a"),
        own("x"),
        // A look-alike of a, then x again, while [a, x] commits.
        pan("b"),
        own("x"),
        own("y"),
        own("z"),
        own("y"),
        own("w"),
        own("v"),
        pan("c"),
    ];
    let mut want = Vec::new();
    for s in &input {
        want.push(one.outbox.record_sale_json(s.as_bytes(), None, &staff()).await);
    }
    let got = many
        .outbox
        .record_sales_json_paced(&lines(&input), &staff(), |_| false, by(2))
        .await;
    let shape = |r: &Result<outbox::model::Recorded, OutboxError>| match r {
        Ok(r) => Ok((
            r.sale_id.clone(),
            r.replayed,
            r.warnings.iter().map(|w| w.code.clone()).collect::<Vec<_>>(),
        )),
        Err(e) => Err(e.code()),
    };
    assert_eq!(
        got.iter().map(shape).collect::<Vec<_>>(),
        want.iter().map(shape).collect::<Vec<_>>()
    );
    assert!(
        matches!(&got[2], Ok(r) if r.warnings.iter().any(|w| w.code == "posible_duplicado")),
        "{got:?}"
    );
    assert_eq!(one.counts().await, many.counts().await);
    // Timbra's numbering in input order, as one at a time.
    // (The look-alikes' warnings add timeline events: the counts above compare them.)
    assert_eq!(folios_by_sale(&one).await, folios_by_sale(&many).await);
}

/// The same with a key per sale: a key of the batch still committing, used again in the next.
async fn a_key_still_committing_waits_for_its_commit(backend: Backend) {
    let e = env(backend).await;
    let (a, b, c, d) = (sale("k-a", 71), sale("k-b", 72), sale("k-c", 73), sale("k-d", 74));
    let items: Vec<(&[u8], Option<&str>)> = vec![
        (a.as_bytes(), Some("clave-1")),
        (b.as_bytes(), Some("clave-2")),
        // clave-1 again with another sale: a conflict; with the same sale: a replay.
        (c.as_bytes(), Some("clave-1")),
        (a.as_bytes(), Some("clave-1")),
        (d.as_bytes(), Some("clave-4")),
    ];
    let got = e.outbox.record_sales_json_keyed_paced(&items, &staff(), |_| false, by(2)).await;
    assert!(matches!(&got[0], Ok(r) if !r.replayed), "{got:?}");
    assert!(matches!(&got[1], Ok(r) if !r.replayed), "{got:?}");
    assert!(matches!(&got[2], Err(OutboxError::IdempotencyConflict { .. })), "{got:?}");
    assert!(matches!(&got[3], Ok(r) if r.replayed && r.sale_id == "k-a"), "{got:?}");
    assert!(matches!(&got[4], Ok(r) if !r.replayed), "{got:?}");
    assert_eq!(e.counts().await[..3], [3, 3, 3]);
}

/// A commit that fails (here a deferred constraint refusing the batch with the sale `boom`)
/// answers its sales with the error; the batch sealed meanwhile is recorded after it with the
/// folios it left (Timbra's numbering stays in input order), and the same file imported again
/// records exactly what is missing.
async fn a_failed_commit_leaves_the_batch_after_it_in_order(backend: Backend) {
    let e = env(backend).await;
    refuse_commits_of_boom(&e, backend).await;
    let own = |id: &str| ingreso(id).replace("\"Café de olla\"", &format!("\"Producto {id}\""));
    let input: Vec<String> = ["n-0", "boom", "n-2", "n-3", "n-4", "n-5"].iter().map(|id| own(id)).collect();
    let got = e.outbox.record_sales_json_paced(&lines(&input), &staff(), |_| false, by(2)).await;
    assert_eq!(got.len(), 6, "{got:?}");
    assert!(got[0].is_err() && got[1].is_err(), "{got:?}");
    assert!(got[2..].iter().all(|r| matches!(r, Ok(r) if !r.replayed)), "{got:?}");
    let f = |id: &str, n: u32| (id.to_string(), Some(n.to_string()));
    assert_eq!(folios_by_sale(&e).await, vec![f("n-2", 1), f("n-3", 2), f("n-4", 3), f("n-5", 4)]);
    assert_eq!(e.counts().await[..3], [4, 4, 4]);
    // The constraint satisfied: the file again records the two missing sales, replays the rest.
    sqlx::query("INSERT INTO boom_parent VALUES (1)").execute(e.pool()).await.unwrap();
    let again = e.outbox.record_sales_json_paced(&lines(&input), &staff(), |_| false, by(2)).await;
    assert!(again[..2].iter().all(|r| matches!(r, Ok(r) if !r.replayed)), "{again:?}");
    assert!(again[2..].iter().all(|r| matches!(r, Ok(r) if r.replayed)), "{again:?}");
    assert_eq!(e.counts().await[..3], [6, 6, 6]);
    whole_sales(&e).await;
}

/// A stopping error in the batch being committed ends the list there: the batch sealed
/// meanwhile is not recorded, and gives back the folios it held.
async fn a_stopping_commit_failure_records_nothing_after_it(backend: Backend) {
    let e = env(backend).await;
    refuse_commits_of_boom(&e, backend).await;
    let own = |id: &str| ingreso(id).replace("\"Café de olla\"", &format!("\"Producto {id}\""));
    let input: Vec<String> = ["n-0", "boom", "n-2", "n-3", "n-4"].iter().map(|id| own(id)).collect();
    let got = e.outbox.record_sales_json_paced(&lines(&input), &staff(), |_| true, by(2)).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].is_err(), "{got:?}");
    assert_eq!(e.counts().await[..3], [0, 0, 0]);
    // Nothing held is left behind: the next sale takes folio 1.
    let next = e.outbox.record_sale_json(own("despues").as_bytes(), None, &staff()).await.unwrap();
    assert!(!next.replayed);
    assert_eq!(folios_by_sale(&e).await, vec![("despues".to_string(), Some("1".to_string()))]);
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
    one_key_twice_in_a_batch_answers_as_one_at_a_time,
    one_brought_folio_twice_in_a_batch_goes_to_the_first,
    claimed_records_that_fail_in_the_shared_transaction_leave_nothing_of_themselves,
    a_key_reserved_meanwhile_is_lost_whole,
    a_batch_warns_as_one_sale_at_a_time,
    a_sale_like_one_still_committing_waits_for_its_commit,
    a_key_still_committing_waits_for_its_commit,
    a_failed_commit_leaves_the_batch_after_it_in_order,
    a_stopping_commit_failure_records_nothing_after_it,
);
