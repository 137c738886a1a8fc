//! The Bandeja for real volumes, on both databases: the search (customer name or RFC, serie-folio,
//! RFC, UUID, recording dates, state) with every filter combined, the date range's edges and
//! paging, all in SQL; and the bulk actions on a selection, each row through the single-row
//! action's gates (the real drain against the PAC simulator makes the rows' evidence).

mod common;

use std::sync::Arc;
use std::time::Duration as StdDuration;

use cfdi::secret::Secret;
use chrono::{DateTime, Duration, Utc};
use common::*;
use outbox::actions::RetryKind;
use outbox::bulk::{BulkAction, BulkOutcome};
use outbox::drain::{Backoff, Drain, DrainConfig, NoSink, RunMode};
use outbox::model::{Badge, InvoiceRef, InvoiceState, ListFilter};
use outbox::pacs::{build_pac_set, PacConfig, PacRole, SecretSource};
use outbox::strategy::Policy;
use outbox::{Actor, Outbox, OutboxError, Role};
use pac::PacKind;
use pac_sim::{Faults, Flavor, SimConfig};

/// The customers of the search test, by sale: (name, folio).
const SALES: [(&str, &str); 8] = [
    ("COMERCIAL DEL NORTE", "1040"),
    ("FERRETERIA LA PAZ", "1041"),
    ("COMERCIAL DEL NORTE", "1042"),
    ("100% MAYOREO", "1043"),
    ("COMERCIAL DEL NORTE", "1044"),
    ("FERRETERIA LA PAZ", "10420"),
    ("COMERCIAL DEL NORTE", "1046"),
    ("ABARROTES DEL NORTE", "1047"),
];

/// Records [`SALES`] one second apart; returns their ids and recording times.
async fn record_customers(e: &Env) -> Vec<(i64, DateTime<Utc>)> {
    let mut out = Vec::new();
    for (i, (name, folio)) in SALES.iter().enumerate() {
        e.clock.advance(Duration::seconds(1));
        let mut sale: serde_json::Value = serde_json::from_str(&ingreso(&format!("venta-{i}"))).expect("JSON");
        sale["receptor"]["nombre"] = (*name).into();
        sale["serie"] = "F".into();
        sale["folio"] = (*folio).into();
        let json = sale.to_string();
        let r = e.outbox.record_sale_json(json.as_bytes(), None, &staff()).await.expect("record");
        out.push((r.invoice_id, e.outbox.now()));
    }
    out
}

async fn ids(o: &Outbox, f: ListFilter) -> Vec<i64> {
    o.list_invoices(&f).await.expect("list").items.into_iter().map(|i| i.id).collect()
}

async fn search_combines_customer_folio_dates_and_state(backend: Backend) {
    let e = env(backend).await;
    let rows = record_customers(&e).await;
    let id = |i: usize| rows[i].0;
    let at = |i: usize| Some(rows[i].1);
    // The drain would stamp one; SQL stands in for it.
    sqlx::query("UPDATE invoices SET state = 'stamped', badge = 'timbrada', uuid = 'AB12CD34-0000-4000-8000-000000000001' WHERE id = $1")
        .bind(id(2))
        .execute(e.pool())
        .await
        .unwrap();
    let o = &e.outbox;
    let customer = |c: &str| ListFilter {
        customer: Some(c.into()),
        ..Default::default()
    };

    // A part of the name, in any case; newest first.
    assert_eq!(ids(o, customer("comercial del")).await, vec![id(6), id(4), id(2), id(0)]);
    assert_eq!(ids(o, customer("  del norte ")).await, vec![id(7), id(6), id(4), id(2), id(0)]);
    // The start of the RFC (every sale here is URE180429TM6); not a part of it.
    assert_eq!(ids(o, customer("ure18")).await.len(), SALES.len());
    assert_eq!(ids(o, customer("180429")).await, Vec::<i64>::new());
    // LIKE's wildcards are the customer's letters, not wildcards.
    assert_eq!(ids(o, customer("100%")).await, vec![id(3)]);
    assert_eq!(ids(o, customer("%")).await, vec![id(3)]);
    assert_eq!(ids(o, customer("LA_PAZ")).await, Vec::<i64>::new());

    // Customer and state combine.
    let mut f = customer("comercial");
    f.state = Some(InvoiceState::Pending);
    assert_eq!(ids(o, f.clone()).await, vec![id(6), id(4), id(0)]);
    f.state = Some(InvoiceState::Stamped);
    assert_eq!(ids(o, f).await, vec![id(2)]);

    // The date range: `from` included, `to` excluded, to the millisecond.
    let mut f = customer("norte");
    f.from = at(2);
    f.to = at(6);
    assert_eq!(ids(o, f.clone()).await, vec![id(4), id(2)]);
    f.from = at(2).map(|t| t + Duration::milliseconds(1));
    f.to = at(6).map(|t| t + Duration::milliseconds(1));
    assert_eq!(ids(o, f.clone()).await, vec![id(6), id(4)]);
    f.to = f.from;
    assert_eq!(ids(o, f).await, Vec::<i64>::new());

    // Paging: the customer's five invoices two at a time, no gaps, no repeats.
    let mut f = customer("norte");
    f.limit = 2;
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let page = o.list_invoices(&f).await.unwrap();
        pages += 1;
        seen.extend(page.items.iter().map(|i| i.id));
        match page.next {
            Some(next) => f.after = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, vec![id(7), id(6), id(4), id(2), id(0)]);
    assert_eq!(pages, 3);

    // Serie-folio, as the invoice is named: the folio's start within serie F, any case.
    let search = |s: &str| ListFilter {
        search: Some(s.into()),
        ..Default::default()
    };
    assert_eq!(ids(o, search("F-1042")).await, vec![id(5), id(2)]);
    assert_eq!(ids(o, search("f-1041")).await, vec![id(1)]);
    assert_eq!(ids(o, search("G-1042")).await, Vec::<i64>::new());
    // The folio as written, the UUID and the RFC still find theirs.
    assert_eq!(ids(o, search("1043")).await, vec![id(3)]);
    assert_eq!(ids(o, search("ab12cd34")).await, vec![id(2)]);
    // Search, customer, dates and state all at once.
    let f = ListFilter {
        search: Some("F-104".into()),
        customer: Some("ferreteria".into()),
        from: at(1),
        to: at(5),
        ..Default::default()
    };
    assert_eq!(ids(o, f).await, vec![id(1)], "10420 was recorded at the range's end, excluded");
    let f = ListFilter {
        search: Some("F-104".into()),
        customer: Some("norte".into()),
        state: Some(InvoiceState::Pending),
        from: at(1),
        ..Default::default()
    };
    assert_eq!(ids(o, f).await, vec![id(7), id(6), id(4)]);
    // Search and customer with paging.
    let mut f = ListFilter {
        search: Some("F-10".into()),
        customer: Some("comercial".into()),
        limit: 3,
        ..Default::default()
    };
    let first = o.list_invoices(&f).await.unwrap();
    assert_eq!(first.items.iter().map(|i| i.id).collect::<Vec<_>>(), vec![id(6), id(4), id(2)]);
    f.after = first.next;
    assert_eq!(ids(o, f).await, vec![id(0)]);
}

struct SimSecrets;

impl SecretSource for SimSecrets {
    fn get(&self, name: &str) -> Option<Secret> {
        (name == "SIM_TOKEN").then(|| Secret::new("sim-token-infinito"))
    }
}

/// An outbox with SAT's test CSD, one SW-flavoured simulator with `faults` and a quick drain.
async fn drained(backend: Backend) -> (TestDb, Arc<Outbox>, pac_sim::SimHandle, Arc<Drain>) {
    let clock = running_clock();
    let db = TestDb::new(backend).await;
    let outbox = Arc::new(db.open(clock.clone()).await.unwrap());
    let sistema = Actor::system("test");
    outbox.configure_emisor(&setup(), &password(), &sistema).await.unwrap();
    outbox.provide_csd_password(password());
    let sim = pac_sim::start_with_clock(SimConfig::new(Flavor::Sw), sim_clock(&clock))
        .await
        .unwrap();
    let config = PacConfig {
        name: "sw".into(),
        preset: None,
        flavor: PacKind::Sw,
        url: sim.base_url.clone(),
        api_url: None,
        sat_url: None,
        token_env: Some("SIM_TOKEN".into()),
        user: None,
        password_env: None,
        taxpayer_id: Some("EKU9003173C9".into()),
        role: PacRole::Primary,
        timeout_ms: Some(3000),
        sandbox: false,
    };
    outbox.add_pac(config, false, &sistema).await.unwrap();
    let set = build_pac_set(
        &outbox.pacs().await.unwrap(),
        &SimSecrets,
        clock.clone(),
        &pac_clients::HttpConnector,
    )
    .unwrap();
    let drain = Arc::new(Drain::new(
        outbox.clone(),
        set,
        DrainConfig {
            worker_id: "w1".into(),
            program: "test".into(),
            heartbeat: outbox::workers::HEARTBEAT_EVERY,
            concurrency: 2,
            lease: chrono::Duration::seconds(30),
            poll: StdDuration::from_millis(20),
            grace: StdDuration::from_secs(2),
            backoff: Backoff {
                base: chrono::Duration::milliseconds(20),
                cap: chrono::Duration::milliseconds(100),
            },
            policy: Policy {
                max_tries: 2,
                ..Policy::default()
            },
        },
        Arc::new(NoSink),
    ));
    (db, outbox, sim, drain)
}

async fn until_idle(drain: &Arc<Drain>) {
    let run = drain.run(
        std::future::pending::<()>(),
        RunMode::UntilIdle {
            horizon: StdDuration::from_secs(1),
        },
    );
    tokio::time::timeout(StdDuration::from_secs(90), run)
        .await
        .expect("drain finishes")
        .unwrap();
}

async fn record(o: &Outbox, folio: &str) -> i64 {
    let json = ingreso(&format!("pedido-{folio}")).replace("\"folio\":\"4471\"", &format!("\"folio\":{folio:?}"));
    o.record_sale_json(json.as_bytes(), None, &Actor::new("ana", Role::Personal, "test"))
        .await
        .unwrap()
        .invoice_id
}

async fn badge(o: &Outbox, id: i64) -> Badge {
    o.invoice(&InvoiceRef::Id(id)).await.unwrap().invoice.badge
}

async fn a_bulk_retry_acts_on_the_allowed_rows_and_says_why_for_the_rest(backend: Backend) {
    let (_db, o, sim, drain) = drained(backend).await;
    // Two stamp; then the PAC's port refuses connections and three stop, nothing sent.
    let stamped = [record(&o, "701").await, record(&o, "702").await];
    until_idle(&drain).await;
    sim.set_faults(Faults::parse("down=1").unwrap());
    let stopped = [record(&o, "703").await, record(&o, "704").await, record(&o, "705").await];
    until_idle(&drain).await;
    for id in stamped {
        assert_eq!(badge(&o, id).await, Badge::Timbrada);
    }
    let mut before = Vec::new();
    for id in stopped {
        let d = o.invoice(&InvoiceRef::Id(id)).await.unwrap();
        assert_ne!(d.invoice.badge, Badge::Timbrada);
        let v = o.verdict(&d).await.unwrap();
        assert!(
            v.allows(outbox::strategy::ActionKind::Resume) || v.allows(outbox::strategy::ActionKind::Reprocess),
            "{id}: {v:?}"
        );
        before.push(d.tries.len());
    }

    // The five selected (one twice): the three stopped are retried, the stamped two are refused
    // with the single row's refusal, in the order selected.
    sim.set_faults(Faults::parse("").unwrap());
    let selection = [stamped[0], stopped[0], stopped[1], stamped[1], stopped[2], stopped[0]];
    let soporte = Actor::new("sofia", Role::Soporte, "test");
    let rows = o.bulk_action(&selection, BulkAction::Retry, "", &soporte).await.unwrap();
    assert_eq!(
        rows.iter().map(|r| r.invoice_id).collect::<Vec<_>>(),
        vec![stamped[0], stopped[0], stopped[1], stamped[1], stopped[2]]
    );
    for r in &rows {
        if stamped.contains(&r.invoice_id) {
            let single = o.retry(&InvoiceRef::Id(r.invoice_id), &soporte).await.unwrap_err();
            match &r.outcome {
                BulkOutcome::Refused { error } => {
                    assert!(matches!(error, OutboxError::ActionRefused { .. }), "{error:?}");
                    assert_eq!(error, &single, "the single row's refusal");
                }
                other => panic!("a stamped row is refused: {other:?}"),
            }
        } else {
            assert!(
                matches!(
                    r.outcome,
                    BulkOutcome::Done {
                        retry: Some(RetryKind::Resume | RetryKind::Reprocess)
                    }
                ),
                "{r:?}"
            );
        }
    }
    until_idle(&drain).await;
    for id in stopped {
        assert_eq!(badge(&o, id).await, Badge::Timbrada, "retried and stamped");
    }

    // Enviar al contador: the same gates (a note is required; a stamped row is refused).
    let rows = o
        .bulk_action(
            &[stamped[0]],
            BulkAction::SendToContador,
            "revisar",
            &Actor::new("ana", Role::Personal, "test"),
        )
        .await
        .unwrap();
    assert!(matches!(&rows[0].outcome, BulkOutcome::Refused { .. }), "{rows:?}");
    // An empty selection is refused as a whole.
    assert!(matches!(
        o.bulk_action(&[], BulkAction::Retry, "", &soporte).await,
        Err(OutboxError::Invalid(_))
    ));
}

async fn send_to_contador_in_bulk_notes_every_allowed_row(backend: Backend) {
    let e = env(backend).await;
    let mut sel = Vec::new();
    for (sale, folio) in [("nota-1", "4471"), ("nota-2", "4472")] {
        e.clock.advance(Duration::seconds(1));
        let json = ingreso(sale).replace("\"folio\":\"4471\"", &format!("\"folio\":{folio:?}"));
        sel.push(e.outbox.record_sale_json(json.as_bytes(), None, &staff()).await.unwrap().invoice_id);
    }
    // Without a note nothing is sent, row by row, each saying why.
    let rows = e.outbox.bulk_action(&sel, BulkAction::SendToContador, " ", &staff()).await.unwrap();
    assert!(
        rows.iter().all(|r| matches!(
            &r.outcome,
            BulkOutcome::Refused {
                error: OutboxError::Invalid(_)
            }
        )),
        "{rows:?}"
    );
    // The contador does not send to himself: refused per row by role.
    let rows = e
        .outbox
        .bulk_action(
            &sel,
            BulkAction::SendToContador,
            "revisar",
            &Actor::new("carla", Role::Contador, "test"),
        )
        .await
        .unwrap();
    assert!(
        rows.iter().all(|r| matches!(
            &r.outcome,
            BulkOutcome::Refused {
                error: OutboxError::Forbidden { .. }
            }
        )),
        "{rows:?}"
    );
    let rows = e
        .outbox
        .bulk_action(&sel, BulkAction::SendToContador, "el cliente pide revisar", &staff())
        .await
        .unwrap();
    assert!(rows.iter().all(|r| r.done()), "{rows:?}");
    for id in sel {
        let d = e.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
        assert_eq!(
            d.notes.iter().filter(|n| n.text == "el cliente pide revisar").count(),
            1,
            "{:?}",
            d.notes
        );
    }
}

crate::conformance!(
    search_combines_customer_folio_dates_and_state,
    a_bulk_retry_acts_on_the_allowed_rows_and_says_why_for_the_rest,
    send_to_contador_in_bulk_notes_every_allowed_row,
);
