//! Series and folios numbered at intake (crates/outbox/src/outbox/numbering.rs): a sale with no
//! folio takes the next number of its serie, one that brings a folio keeps it unless another
//! sale has it, a number whose intake failed or died goes to the next sale, and two desktops on
//! one database sharing a serie get distinct consecutive numbers — on both databases.

mod common;

use std::collections::BTreeSet;

use chrono::Duration;
use common::*;
use outbox::intake::RESERVATION_LEASE;
use outbox::{Clock, OutboxError};

/// The serie-folio of every invoice, in recording order.
async fn folios(e: &Env) -> Vec<(Option<String>, Option<String>)> {
    sqlx::query_as::<_, (Option<String>, Option<String>)>("SELECT serie, folio FROM invoices ORDER BY id")
        .fetch_all(e.pool())
        .await
        .expect("folios")
}

fn f(n: u32) -> (Option<String>, Option<String>) {
    (Some("F".into()), Some(n.to_string()))
}

async fn record(e: &Env, json: &str) -> outbox::error::Result<outbox::model::Recorded> {
    e.outbox.record_sale_json(json.as_bytes(), None, &staff()).await
}

fn with_folio(sale_id: &str, folio: &str) -> String {
    ingreso(sale_id).replace("\"serie\":\"F\",", &format!("\"serie\":\"F\",\"folio\":{folio:?},"))
}

async fn numbered_in_order(backend: Backend) {
    let e = env(backend).await;
    for id in ["a", "b", "c"] {
        record(&e, &ingreso(id)).await.expect("record");
    }
    assert_eq!(folios(&e).await, vec![f(1), f(2), f(3)]);
    // The number is in the sealed XML of attempt #1.
    let xml: Vec<u8> = sqlx::query_scalar("SELECT body FROM attempts ORDER BY id LIMIT 1 OFFSET 2")
        .fetch_one(e.pool())
        .await
        .expect("body");
    let xml = String::from_utf8(xml).expect("utf-8");
    assert!(xml.contains(r#"Serie="F""#) && xml.contains(r#"Folio="3""#), "{xml}");
    // A replay is the same sale: no new number.
    let again = record(&e, &ingreso("b")).await.expect("replay");
    assert!(again.replayed);
    // A sale that brings its own folio keeps it; the numbering skips it.
    record(&e, &with_folio("d", "4")).await.expect("brought");
    record(&e, &ingreso("e")).await.expect("record");
    // A sale that names another serie is numbered in it, from 1.
    record(&e, &ingreso("g").replace("\"serie\":\"F\"", "\"serie\":\"NC\""))
        .await
        .expect("serie NC");
    let mut want = vec![f(1), f(2), f(3), f(4), f(5)];
    want.push((Some("NC".into()), Some("1".into())));
    assert_eq!(folios(&e).await, want);
    // The invoice read back is named by its folio; a retry builds from the numbered sale.
    let detail = e
        .outbox
        .invoice(&outbox::model::InvoiceRef::SaleId("e".into()))
        .await
        .expect("detail");
    assert_eq!(detail.invoice.folio.as_deref(), Some("5"));
    assert_eq!(outbox::outbox::numbering::sale_of(&detail).folio.as_deref(), Some("5"));
    assert_eq!(detail.sale.body.folio, None, "the sale as received stays as received");
}

async fn brought_folio_of_another_sale_is_refused(backend: Backend) {
    let e = env(backend).await;
    record(&e, &sale_json("ingreso-pedido-4471")).await.expect("first");
    let before = e.counts().await;
    let other = sale_json("ingreso-pedido-4471").replace("\"pedido-4471\"", "\"pedido-otra\"");
    match record(&e, &other).await {
        Err(OutboxError::Invalid(v)) => {
            let fe = &v.0[0];
            assert_eq!((fe.field.as_str(), fe.code), ("folio", "folio_usado"));
            assert!(
                fe.message.contains("F-4471") && fe.message.contains("pedido-4471"),
                "{}",
                fe.message
            );
        }
        other => panic!("expected folio_usado, got {other:?}"),
    }
    assert_eq!(e.counts().await[..3], before[..3], "nothing of the refused sale is written");
    assert_eq!(e.count("folios").await, 1);
    // The same sale again is still a replay.
    assert!(record(&e, &sale_json("ingreso-pedido-4471")).await.expect("replay").replayed);
    // Bulk import: the same refusal per sale, the rest recorded.
    let lines = vec![ingreso("x").into_bytes(), other.into_bytes(), ingreso("y").into_bytes()];
    let out = e.outbox.record_sales_json(&lines, &staff(), |_| false).await;
    assert!(out[0].is_ok() && out[2].is_ok(), "{out:?}");
    assert!(
        matches!(&out[1], Err(OutboxError::Invalid(v)) if v.0[0].code == "folio_usado"),
        "{out:?}"
    );
}

/// The recording transaction is the fence: even past the early check (two sales bringing one
/// folio at once), the `folios` key refuses the second.
async fn one_folio_two_sales_at_once(backend: Backend) {
    let e = env(backend).await;
    let other = e.reopen().await;
    other.provide_csd_password(password());
    let a = with_folio("uno", "77");
    let b = with_folio("dos", "77");
    let actor = staff();
    let (ra, rb) = tokio::join!(
        e.outbox.record_sale_json(a.as_bytes(), None, &actor),
        other.record_sale_json(b.as_bytes(), None, &actor)
    );
    let ok = [ra.is_ok(), rb.is_ok()];
    assert_eq!(ok.iter().filter(|x| **x).count(), 1, "{ra:?} {rb:?}");
    let refused = if ra.is_ok() { rb } else { ra };
    assert!(
        matches!(&refused, Err(OutboxError::Invalid(v)) if v.0[0].code == "folio_usado"),
        "{refused:?}"
    );
    assert_eq!(folios(&e).await, vec![f(77)]);
}

async fn a_number_whose_intake_died_goes_to_the_next_sale(backend: Backend) {
    let e = env(backend).await;
    let now = e.clock.now().timestamp_millis();
    let until = now + RESERVATION_LEASE.num_milliseconds();
    // A process held number 1 and died before recording.
    let held = e.outbox.store().hold_folios(None, 1, "muerto:1", until, now).await.expect("hold");
    assert_eq!(held, Some(("F".to_string(), vec!["1".to_string()])));
    record(&e, &ingreso("a")).await.expect("a");
    assert_eq!(folios(&e).await, vec![f(2)], "a live hold is never handed out");
    // An intake that failed gives its number back at once.
    let held = e.outbox.store().hold_folios(None, 1, "fallo:1", until, now).await.expect("hold");
    assert_eq!(held, Some(("F".to_string(), vec!["3".to_string()])));
    e.outbox.store().release_folio_holds("fallo:1").await.expect("release");
    record(&e, &ingreso("b")).await.expect("b");
    assert_eq!(folios(&e).await, vec![f(2), f(3)]);
    // After the dead process's lease, its number is the next sale's: no gap stays.
    e.clock.advance(RESERVATION_LEASE + Duration::seconds(1));
    record(&e, &ingreso("c")).await.expect("c");
    record(&e, &ingreso("d")).await.expect("d");
    assert_eq!(folios(&e).await, vec![f(2), f(3), f(1), f(4)]);
    // The dead process's hold is no longer its own: its recording would be lost.
    let owner: Option<String> = sqlx::query_scalar("SELECT hold_owner FROM folios WHERE serie = 'F' AND folio = '1'")
        .fetch_one(e.pool())
        .await
        .expect("row");
    assert_eq!(owner, None);
    // A recorded sale's folio can never be given back or handed over.
    let changed = sqlx::query("UPDATE folios SET sale_ref = NULL, hold_owner = 'x', hold_until_ms = 0 WHERE folio = '2'")
        .execute(e.pool())
        .await;
    assert!(changed.is_err(), "a recorded sale's folio changed");
}

/// Issue 29's acceptance: two desktops on one database emitting 200 sales at once get 200
/// distinct consecutive folios.
async fn two_desktops_two_hundred_sales(backend: Backend) {
    let e = env(backend).await;
    let (other, mine) = (e.reopen().await, e.reopen().await);
    other.provide_csd_password(password());
    mine.provide_csd_password(password());
    let (other, mine) = (std::sync::Arc::new(other), std::sync::Arc::new(mine));
    let mut tasks = Vec::new();
    for i in 0..200 {
        let desk = if i % 2 == 0 { mine.clone() } else { other.clone() };
        tasks.push(tokio::spawn(async move {
            let json = ingreso(&format!("v-{i}"));
            loop {
                match desk.record_sale_json(json.as_bytes(), None, &staff()).await {
                    Err(OutboxError::InProgress { .. }) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
                    other => return other,
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("task").expect("recorded");
    }
    let got = folios(&e).await;
    assert_eq!(got.len(), 200);
    let numbers: BTreeSet<u32> = got
        .iter()
        .map(|(s, f)| {
            assert_eq!(s.as_deref(), Some("F"));
            f.as_deref().and_then(|f| f.parse().ok()).expect("numeric folio")
        })
        .collect();
    assert_eq!(numbers, (1..=200).collect::<BTreeSet<u32>>(), "200 distinct consecutive folios");
    // The bulk import continues the serie.
    let lines: Vec<Vec<u8>> = (0..10).map(|i| ingreso(&format!("lote-{i}")).into_bytes()).collect();
    let out = e.outbox.record_sales_json(&lines, &staff(), |_| false).await;
    assert!(out.iter().all(|r| r.is_ok()), "{out:?}");
    let got = folios(&e).await;
    assert_eq!(got[200..].to_vec(), (201..=210).map(f).collect::<Vec<_>>());
    assert_eq!(e.count("folios WHERE sale_ref IS NULL").await, 0, "no hold left behind");
}

/// A restore brings the numbering back to the backup's day, but the folios given after it may
/// be stamped at SAT: they are never handed out again (SQLite restores files; the database
/// moved aside says what was given).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_never_gives_a_folio_again() {
    let e = env(Backend::Sqlite).await;
    record(&e, &ingreso("a")).await.expect("a");
    let backup = e.dir().join("respaldo.db");
    outbox::backup::backup(e.outbox.store().sqlite().expect("SQLite"), &backup)
        .await
        .expect("backup");
    // After the backup: F-2, F-3 and a folio brought by the sale.
    record(&e, &ingreso("b")).await.expect("b");
    record(&e, &ingreso("c")).await.expect("c");
    record(&e, &with_folio("d", "4471")).await.expect("d");
    let outbox::DatabaseLocation::Sqlite(path) = e.db.location.clone() else {
        panic!("SQLite")
    };
    e.outbox.store().close().await;
    outbox::backup::restore(&backup, &path, e.clock.now()).await.expect("restore");
    let restored = outbox::Outbox::open_sqlite(&outbox::SqliteOptions::new(&path), e.clock.clone())
        .await
        .expect("open");
    restored.provide_csd_password(password());
    restored.record_sale_json(ingreso("e").as_bytes(), None, &staff()).await.expect("e");
    let d = restored
        .invoice(&outbox::model::InvoiceRef::SaleId("e".into()))
        .await
        .expect("detail");
    assert_eq!(d.invoice.folio.as_deref(), Some("4"), "F-2 and F-3 may exist at SAT");
    match restored.record_sale_json(with_folio("f", "4471").as_bytes(), None, &staff()).await {
        Err(OutboxError::Invalid(v)) => assert_eq!(v.0[0].code, "folio_usado"),
        other => panic!("a folio given before the restore was given again: {other:?}"),
    }
    let series = restored.folio_series().await.expect("series");
    assert_eq!(series.iter().find(|s| s.serie == "F").map(|s| s.next_folio), Some(5));
}

crate::conformance!(
    numbered_in_order,
    brought_folio_of_another_sale_is_refused,
    one_folio_two_sales_at_once,
    a_number_whose_intake_died_goes_to_the_next_sale,
    two_desktops_two_hundred_sales,
);
