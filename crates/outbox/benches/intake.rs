//! Outbox benchmarks (`make bench`), on a database in the target folder (a real disk, real
//! fsync):
//! - `intake/*`: durable intake of one sale — sale + invoice + attempt + timeline event in one
//!   `synchronous=FULL` transaction — with sealing (`record_sale`), without sealing (the
//!   store's reservation + transaction with a pre-sealed body), and the physical reference: a
//!   plain one-row insert per transaction with the same pragmas and a body of the same size;
//! - `bulk_import/1000-sales`: sales recorded one after another (`record_sale_json`, one
//!   durable transaction each); `bulk_import/1000-sales-batched`: as `timbra sale import` does
//!   (`record_sales_json`: several sales per transaction, sealed on every core); ten samples
//!   make a 10,000-sale import (wall time = 10 × the mean);
//! - `query/*`: list and detail latency with 100,000 invoices in the outbox.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cfdi::sale::{EmisorProfile, Sale};
use cfdi::secret::Secret;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use outbox::intake::{pac_idempotency_key, sha256_hex};
use outbox::model::{Badge, InvoiceRef, InvoiceState, ListFilter};
use outbox::store::{RecordOutcome, Reservation};
use outbox::{Actor, AnyStore, EmisorSetup, Outbox, Role, SqliteOptions, SqliteStore, SystemClock};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(rel)).unwrap()
}

fn actor() -> Actor {
    Actor::new("bench", Role::Soporte, "bench")
}

fn statements(sql: &str) -> Vec<&str> {
    sql.split("\n-- next\n").map(str::trim).filter(|s| !s.is_empty()).collect()
}

/// A configured outbox on a new database under the target folder.
async fn outbox_in(dir: &Path) -> Outbox {
    let opts = SqliteOptions::new(dir.join("bench.db")).create(true);
    let o = Outbox::new(AnyStore::Sqlite(SqliteStore::open(&opts).await.unwrap()), Arc::new(SystemClock));
    let profile: EmisorProfile = toml::from_str(&String::from_utf8(read("sales/emisor-eku.toml")).unwrap()).unwrap();
    let setup = EmisorSetup {
        profile,
        cer: read("cfdi/certs/EKU9003173C9.cer"),
        key: read("cfdi/certs/EKU9003173C9.key"),
        password_env: "TIMBRA_CSD_PASSWORD".into(),
    };
    o.configure_emisor(&setup, &Secret::new("12345678a"), &actor()).await.unwrap();
    o
}

fn sale(id: u64) -> Sale {
    let mut s = Sale::from_json(&read("sales/ingreso-pedido-4471.json")).unwrap();
    s.sale_id = format!("b-{id}");
    // Its own folio: the fixture's would be another sale's (`folio_usado`).
    s.folio = Some(format!("{id}"));
    s
}

fn intake(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let o = rt.block_on(outbox_in(dir.path()));
    let n = AtomicU64::new(0);
    let next = || n.fetch_add(1, Ordering::Relaxed);

    // One recorded sale gives the pre-sealed body and the shape of a record.
    let first = rt.block_on(o.record_sale(&sale(next()), None, &actor())).unwrap();
    let detail = rt.block_on(o.invoice(&InvoiceRef::Id(first.invoice_id))).unwrap();
    let (_, body) = rt.block_on(o.attempt_body(detail.attempts[0].id)).unwrap();

    let mut g = c.benchmark_group("intake");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .sample_size(20);
    g.throughput(Throughput::Elements(1));
    g.bench_function("record_sale/sealed", |b| {
        b.iter(|| rt.block_on(o.record_sale(&sale(next()), None, &actor())).unwrap());
    });
    let template = template_record(&detail, &body);
    g.bench_function("record_sale/without-sealing", |b| {
        b.iter(|| {
            let id = next();
            let mut r = template.clone();
            r.sale.sale_id = format!("b-{id}");
            r.idempotency_key = r.sale.sale_id.clone();
            r.attempt.pac_idempotency_key = pac_idempotency_key("EKU9003173C9", &r.sale.sale_id, 1);
            let now = o.now().timestamp_millis();
            rt.block_on(async {
                let granted = o
                    .store()
                    .reserve_key(&r.idempotency_key, &r.sale.sale_id, "x", &r.reservation_owner, now + 120_000, now)
                    .await
                    .unwrap();
                assert_eq!(granted, Reservation::Granted);
                let done = o.store().record_sale(&r).await.unwrap();
                assert!(matches!(done, RecordOutcome::Recorded { .. }));
            })
        });
    });

    // The physical reference.
    let base = rt.block_on(async {
        let opts = SqliteConnectOptions::new()
            .filename(dir.path().join("baseline.db"))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(5))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new().max_connections(1).connect_with(opts).await.unwrap();
        sqlx::query(statements(include_str!("baseline_insert.sql"))[0])
            .execute(&pool)
            .await
            .unwrap();
        pool
    });
    let insert = statements(include_str!("baseline_insert.sql"))[1];
    g.bench_function(
        BenchmarkId::new("sqlite-single-row-insert", format!("{}-byte-body", body.len())),
        |b| {
            b.iter(|| rt.block_on(sqlx::query(insert).bind(&body).execute(&base)).unwrap());
        },
    );
    g.finish();
}

fn template_record(detail: &outbox::model::InvoiceDetail, body: &[u8]) -> outbox::store::NewRecord {
    use outbox::store::*;
    let a = &detail.attempts[0];
    NewRecord {
        sale: NewSale {
            sale_id: String::new(),
            kind: "ingreso".into(),
            occurred_at: detail.sale.occurred_at.clone(),
            body: detail.sale.body.to_canonical_json(),
            body_sha256: detail.sale.body_sha256.clone(),
            source: "bench".into(),
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
            body_sha256: sha256_hex(body),
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
            detail: serde_json::json!({"bench": true}),
        },
        idempotency_key: String::new(),
        reservation_owner: "bench".into(),
        folio: FolioUse::None,
        claim: None,
        at_ms: 0,
        actor: actor(),
    }
}

/// The fixture sale with its own sale_id and folio: an import of different sales (the same
/// folio would make every sale a *posible duplicado* of the others, screened one by one).
fn distinct(json: &str, i: u64) -> String {
    json.replace("\"pedido-4471\"", &format!("\"imp-{i}\""))
        .replace("\"folio\":\"4471\"", &format!("\"folio\":\"{i}\""))
}

fn bulk_import(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let o = rt.block_on(outbox_in(dir.path()));
    let json = String::from_utf8(read("sales/ingreso-pedido-4471.json"))
        .unwrap()
        .replace('\n', " ");
    let n = AtomicU64::new(0);
    let mut g = c.benchmark_group("bulk_import");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(1));
    g.throughput(Throughput::Elements(1000));
    g.bench_function("1000-sales", |b| {
        b.iter(|| {
            rt.block_on(async {
                for _ in 0..1000 {
                    let line = distinct(&json, n.fetch_add(1, Ordering::Relaxed));
                    let r = o.record_sale_json(line.as_bytes(), None, &actor()).await.unwrap();
                    assert!(!r.replayed);
                }
            })
        });
    });
    g.bench_function("1000-sales-batched", |b| {
        b.iter(|| {
            rt.block_on(async {
                let lines: Vec<Vec<u8>> = (0..1000)
                    .map(|_| distinct(&json, n.fetch_add(1, Ordering::Relaxed)).into_bytes())
                    .collect();
                let got = o.record_sales_json(&lines, &actor(), |_| false).await;
                assert!(got.iter().all(|r| matches!(r, Ok(r) if !r.replayed)));
            })
        });
    });
    g.finish();
}

fn queries(c: &mut Criterion) {
    const INVOICES: i64 = 100_000;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let o = rt.block_on(outbox_in(dir.path()));
    let seeded = std::time::Instant::now();
    rt.block_on(async {
        let body = Sale::from_json(&read("sales/ingreso-pedido-4471.json"))
            .unwrap()
            .to_canonical_json();
        let mut tx = o.store().sqlite().expect("SQLite").pool().begin().await.unwrap();
        for sql in statements(include_str!("seed_invoices.sql")) {
            let mut q = sqlx::query(sql);
            if sql.contains("?1") {
                q = q.bind(INVOICES).bind(1_764_000_000_000_i64).bind(body.clone());
            }
            q.execute(&mut *tx).await.unwrap();
        }
        tx.commit().await.unwrap();
        sqlx::query("ANALYZE")
            .execute(o.store().sqlite().expect("SQLite").pool())
            .await
            .unwrap();
    });
    eprintln!("seeded {INVOICES} invoices in {:?}", seeded.elapsed());
    let mid = rt
        .block_on(o.list_invoices(&ListFilter {
            limit: 1000,
            ..Default::default()
        }))
        .unwrap();
    let deep = rt.block_on(async {
        let mut f = ListFilter {
            limit: 1000,
            after: mid.next,
            ..Default::default()
        };
        for _ in 0..48 {
            f.after = o.list_invoices(&f).await.unwrap().next;
        }
        f.after
    });

    let mut g = c.benchmark_group("query");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    let cases: Vec<(&str, ListFilter)> = vec![
        ("list/first-page-50", ListFilter::default()),
        (
            "list/page-50-after-50000-rows",
            ListFilter {
                after: deep,
                ..Default::default()
            },
        ),
        (
            "list/state-held-badge-reprocesar",
            ListFilter {
                state: Some(InvoiceState::Held),
                badge: Some(Badge::Reprocesar),
                ..Default::default()
            },
        ),
        (
            "list/badge-reanudar",
            ListFilter {
                badge: Some(Badge::Reanudar),
                ..Default::default()
            },
        ),
        (
            "list/search-rfc-prefix",
            ListFilter {
                search: Some("r0000000123".into()),
                ..Default::default()
            },
        ),
        (
            "list/search-uuid-prefix",
            ListFilter {
                search: Some("0000C350".into()),
                ..Default::default()
            },
        ),
        (
            // A part of the customer's name (as typed, any case) within a date range: no index
            // finds a part of a name, so this walks the range — here every seeded invoice, the
            // worst case (issue 29: under 100 ms at 100,000 invoices).
            "list/customer-name-and-date-range",
            ListFilter {
                customer: Some("cliente 4321".into()),
                from: chrono::DateTime::from_timestamp_millis(1_764_000_000_000),
                to: chrono::DateTime::from_timestamp_millis(1_764_000_000_000 + (INVOICES + 1) * 1000),
                ..Default::default()
            },
        ),
        (
            "list/customer-name-state-and-date-range",
            ListFilter {
                customer: Some("cliente 4321".into()),
                state: Some(InvoiceState::Stamped),
                from: chrono::DateTime::from_timestamp_millis(1_764_000_000_000 + INVOICES / 2 * 1000),
                to: chrono::DateTime::from_timestamp_millis(1_764_000_000_000 + (INVOICES + 1) * 1000),
                ..Default::default()
            },
        ),
        (
            "list/search-serie-folio",
            ListFilter {
                search: Some("F-50000".into()),
                ..Default::default()
            },
        ),
    ];
    for (name, filter) in cases {
        let got = rt.block_on(o.list_invoices(&filter)).unwrap().items.len();
        assert!(got > 0, "{name} finds rows");
        g.bench_function(name, |b| b.iter(|| rt.block_on(o.list_invoices(&filter)).unwrap()));
    }
    g.bench_function("detail", |b| {
        b.iter(|| rt.block_on(o.invoice(&InvoiceRef::Id(INVOICES / 2))).unwrap())
    });
    g.bench_function("detail-by-sale-id", |b| {
        b.iter(|| rt.block_on(o.invoice(&InvoiceRef::SaleId("bench-0050000".into()))).unwrap())
    });
    g.bench_function("counts", |b| b.iter(|| rt.block_on(o.counts()).unwrap()));
    g.finish();
}

criterion_group!(benches, intake, bulk_import, queries);
criterion_main!(benches);
