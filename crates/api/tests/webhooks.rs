//! Webhooks both ways. In: Timbra's and Stripe's signatures (valid, tampered body, stale
//! timestamp), a replayed event id (one sale), an unmappable event kept with its reason, an
//! ignored type. Out: a local receiver that fails the first deliveries gets every event, with
//! duplicates only under the same delivery id — also after a worker dies mid-delivery.

mod common;

use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode};
use common::{contador, json, Backend, World};
use outbox::model::InvoiceRef;
use outbox::webhooks::{
    deliver_due, signature_header, verify_signature, CancellationChange, DeliveryStatus, EventStatus, OutgoingRequest, RetryPolicy,
    SendOutcome, WebhookEndpoint, WebhookSender, WebhookSource,
};
use outbox::Clock;
use serde_json::{json, Value};

fn generic_source() -> WebhookSource {
    serde_json::from_value(json!({
        "name": "pos",
        "format": "generic",
        "secret_env": "POS_SECRET",
        "event_types": ["payment.succeeded"],
        "mapping": {
            "fields": {
                "/sale_id": "/data/sale_id",
                "/occurred_at": "/data/occurred_at",
                "/forma_pago": "/data/forma_pago",
                "/receptor": "/data/receptor",
                "/conceptos": "/data/conceptos"
            },
            "constants": {"/kind": "ingreso", "/metodo_pago": "PUE", "/moneda": "MXN"}
        }
    }))
    .unwrap()
}

fn payment_event(event_id: &str, sale_id: &str) -> Vec<u8> {
    typed_event(event_id, "payment.succeeded", sale_id)
}

/// An event of `kind` carrying everything a sale needs (a refund of a POS carries the order).
fn typed_event(event_id: &str, kind: &str, sale_id: &str) -> Vec<u8> {
    let sale: Value = serde_json::from_str(&common::sale(sale_id)).unwrap();
    serde_json::to_vec(&json!({
        "id": event_id,
        "type": kind,
        "data": {
            "sale_id": sale["sale_id"], "occurred_at": sale["occurred_at"], "forma_pago": "04",
            "receptor": sale["receptor"], "conceptos": sale["conceptos"]
        }
    }))
    .unwrap()
}

async fn post_hook(s: &common::Server, source: &str, header: &str, signature: &str, body: Vec<u8>) -> (u16, Value) {
    json(
        s.client
            .post(format!("{}/v1/webhooks/{source}", s.url))
            .header(header, signature)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn signed_generic_webhooks_record_once_and_refuse_bad_signatures(backend: Backend) {
    let w = World::new(backend).await;
    w.secrets.set("POS_SECRET", "s3cr3t");
    w.outbox.set_webhook_source(generic_source(), &contador()).await.unwrap();
    let s = w.serve().await;
    let now = w.clock.now().timestamp();
    let body = payment_event("evt_1", "pago-1");
    let sig = signature_header(b"s3cr3t", now, &body);

    let (st, first) = post_hook(&s, "pos", "X-Timbra-Signature", &sig, body.clone()).await;
    assert_eq!(st, 200, "{first}");
    assert_eq!(
        (first["status"].as_str(), first["saleId"].as_str()),
        (Some("recorded"), Some("pago-1"))
    );
    assert_eq!(first["replayed"], false);

    // The same event again (the sender retried): the original outcome, nothing new.
    let (st, again) = post_hook(&s, "pos", "X-Timbra-Signature", &sig, body.clone()).await;
    assert_eq!(st, 200);
    assert_eq!(again["replayed"], true);
    assert_eq!(again["invoiceId"], first["invoiceId"]);
    assert_eq!(w.outbox.counts().await.unwrap().total, 1, "one sale");

    // A tampered body, a stale timestamp, another secret, no signature: refused, nothing kept.
    let mut tampered = body.clone();
    let at = tampered.iter().position(|b| *b == b'1').unwrap();
    tampered[at] = b'2';
    let (st, e) = post_hook(&s, "pos", "X-Timbra-Signature", &sig, tampered).await;
    assert_eq!((st, e["error"].as_str()), (401, Some("signature_mismatch")));
    let stale = signature_header(b"s3cr3t", now - 301, &body);
    let (st, e) = post_hook(&s, "pos", "X-Timbra-Signature", &stale, body.clone()).await;
    assert_eq!((st, e["error"].as_str()), (401, Some("signature_stale")));
    let other = signature_header(b"otro", now, &body);
    let (st, e) = post_hook(&s, "pos", "X-Timbra-Signature", &other, body.clone()).await;
    assert_eq!((st, e["error"].as_str()), (401, Some("signature_mismatch")));
    let (st, e) = post_hook(&s, "pos", "X-Otra", "x", body.clone()).await;
    assert_eq!((st, e["error"].as_str()), (401, Some("signature_missing")));
    let (st, e) = post_hook(&s, "nadie", "X-Timbra-Signature", &sig, body.clone()).await;
    assert_eq!((st, e["error"].as_str()), (404, Some("unknown_source")));
    assert_eq!(w.outbox.webhook_events(None, 100).await.unwrap().len(), 1);

    // Without the secret in the environment the server cannot check anything: 503, said plainly.
    w.secrets.0.lock().unwrap().clear();
    let (st, e) = post_hook(&s, "pos", "X-Timbra-Signature", &sig, body).await;
    assert_eq!((st, e["error"].as_str()), (503, Some("webhook_secret_missing")));
    s.stop().await;
}

async fn an_event_that_cannot_be_mapped_is_kept_with_its_reason(backend: Backend) {
    let w = World::new(backend).await;
    w.secrets.set("POS_SECRET", "s3cr3t");
    w.outbox.set_webhook_source(generic_source(), &contador()).await.unwrap();
    let s = w.serve().await;
    let body = serde_json::to_vec(&json!({"id": "evt_sin_receptor", "type": "payment.succeeded", "data": {"sale_id": "pago-x"}})).unwrap();
    let sig = signature_header(b"s3cr3t", w.clock.now().timestamp(), &body);
    let (st, r) = post_hook(&s, "pos", "X-Timbra-Signature", &sig, body).await;
    assert_eq!((st, r["status"].as_str()), (200, Some("unmapped")), "{r}");
    let kept = w.outbox.webhook_events(Some(EventStatus::Unmapped), 10).await.unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].event_id, "evt_sin_receptor");
    let fields: Vec<&str> = kept[0].reason.as_ref().unwrap()["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert!(fields.contains(&"/receptor") && fields.contains(&"/conceptos"), "{fields:?}");
    assert_eq!(w.outbox.counts().await.unwrap().total, 0);

    // Mapped, but the sale it gives is invalid: kept as invalid with every field.
    let mut bad: Value = serde_json::from_slice(&payment_event("evt_malo", "pago-malo")).unwrap();
    bad["data"]["receptor"]["rfc"] = json!("XXXX");
    let bad = serde_json::to_vec(&bad).unwrap();
    let sig = signature_header(b"s3cr3t", w.clock.now().timestamp(), &bad);
    let (st, r) = post_hook(&s, "pos", "X-Timbra-Signature", &sig, bad).await;
    assert_eq!((st, r["status"].as_str()), (200, Some("invalid")), "{r}");
    assert_eq!(w.outbox.webhook_events(Some(EventStatus::Invalid), 10).await.unwrap().len(), 1);
    s.stop().await;
}

async fn stripe_events_use_their_metadata_and_stripe_signatures(backend: Backend) {
    let w = World::new(backend).await;
    w.secrets.set("STRIPE_WHSEC", "whsec_prueba");
    w.outbox
        .set_webhook_source(WebhookSource::stripe_preset("stripe", "STRIPE_WHSEC"), &contador())
        .await
        .unwrap();
    let s = w.serve().await;
    let sale: Value = serde_json::from_str(&common::sale("orden-77")).unwrap();
    let now = w.clock.now().timestamp();
    let event = |id: &str, kind: &str| {
        serde_json::to_vec(&json!({
            "id": id, "type": kind, "object": "event",
            "data": {"object": {
                "id": "pi_123", "object": "payment_intent", "amount_received": 11600, "currency": "mxn", "created": now - 60,
                "metadata": {
                    "sale_id": "orden-77", "receptor_rfc": sale["receptor"]["rfc"], "receptor_nombre": sale["receptor"]["nombre"],
                    "receptor_cp": sale["receptor"]["domicilio_fiscal"], "receptor_regimen": sale["receptor"]["regimen_fiscal"],
                    "uso_cfdi": sale["receptor"]["uso_cfdi"], "conceptos": sale["conceptos"].to_string()
                }
            }}
        }))
        .unwrap()
    };
    let body = event("evt_stripe_1", "payment_intent.succeeded");
    let sig = signature_header(b"whsec_prueba", now, &body);
    let (st, r) = post_hook(&s, "stripe", "Stripe-Signature", &sig, body.clone()).await;
    assert_eq!(
        (st, r["status"].as_str(), r["saleId"].as_str()),
        (200, Some("recorded"), Some("orden-77")),
        "{r}"
    );
    // Timbra's header is not Stripe's.
    let (st, _) = post_hook(&s, "stripe", "X-Timbra-Signature", &sig, body).await;
    assert_eq!(st, 401);
    // Other event types are kept as ignored.
    let other = event("evt_stripe_2", "customer.created");
    let sig = signature_header(b"whsec_prueba", now, &other);
    let (st, r) = post_hook(&s, "stripe", "Stripe-Signature", &sig, other).await;
    assert_eq!((st, r["status"].as_str()), (200, Some("ignored")));
    let detail = w.outbox.invoice(&InvoiceRef::SaleId("orden-77".into())).await.unwrap();
    assert_eq!(detail.sale.source, "webhook");
    s.stop().await;
}

fn reason_code(r: &Value) -> Option<&str> {
    r["reason"]["code"].as_str()
}

async fn only_configured_event_types_become_sales_and_a_refund_never_does(backend: Backend) {
    let w = World::new(backend).await;
    w.secrets.set("POS_SECRET", "s3cr3t");
    // A source must name the event types that become sales; a refund is never one of them.
    let mut open = generic_source();
    open.event_types.clear();
    match w.outbox.set_webhook_source(open, &contador()).await {
        Err(outbox::OutboxError::Invalid(v)) => {
            assert_eq!(v.0[0].field, "event_types", "{v:?}");
            assert!(v.0[0].message.contains("tipos de evento"), "{}", v.0[0].message);
        }
        other => panic!("a source without event types is refused: {other:?}"),
    }
    let mut refunds = generic_source();
    refunds.event_types = vec!["payment.succeeded".into(), "charge.refunded".into()];
    match w.outbox.set_webhook_source(refunds, &contador()).await {
        Err(outbox::OutboxError::Invalid(v)) => {
            assert_eq!(v.0[0].field, "event_types", "{v:?}");
            assert!(v.0[0].message.contains("charge.refunded"), "{}", v.0[0].message);
        }
        other => panic!("a refund type is refused: {other:?}"),
    }
    assert!(w.outbox.webhook_sources().await.unwrap().is_empty(), "nothing stored");

    // Sources stored by an older version, as they were: one with no types, one with a refund.
    let mut legacy = generic_source();
    legacy.name = "legado".into();
    legacy.event_types.clear();
    let mut pos = generic_source();
    pos.event_types = vec!["payment.succeeded".into(), "charge.refunded".into(), "refund.created".into()];
    let text = serde_json::to_string(&[legacy, pos]).unwrap();
    w.outbox
        .store()
        .put_setting(
            outbox::webhooks::SETTING_SOURCES,
            &text,
            &contador(),
            w.clock.now().timestamp_millis(),
        )
        .await
        .unwrap();
    let s = w.serve().await;
    let now = w.clock.now().timestamp();
    let post = |source: &'static str, body: Vec<u8>| {
        let sig = signature_header(b"s3cr3t", now, &body);
        let s = &s;
        async move { post_hook(s, source, "X-Timbra-Signature", &sig, body).await }
    };

    // The refund arrives before its payment: kept, never the sale.
    let (st, r) = post("pos", typed_event("evt_reembolso", "charge.refunded", "orden-9")).await;
    assert_eq!(
        (st, r["status"].as_str(), reason_code(&r)),
        (200, Some("ignored"), Some("refund_not_a_sale")),
        "{r}"
    );
    let (_, r) = post("pos", typed_event("evt_reembolso_2", "refund.created", "orden-9")).await;
    assert_eq!(reason_code(&r), Some("refund_not_a_sale"), "{r}");
    assert_eq!(w.outbox.counts().await.unwrap().total, 0, "a refund is never a sale");
    // Then the payment: the sale, not a conflict.
    let (_, r) = post("pos", payment_event("evt_pago", "orden-9")).await;
    assert_eq!(
        (r["status"].as_str(), r["saleId"].as_str()),
        (Some("recorded"), Some("orden-9")),
        "{r}"
    );
    assert!(w.outbox.webhook_events(Some(EventStatus::Conflict), 10).await.unwrap().is_empty());
    // A type nobody configured, and a source that configured none: kept, no sale.
    let (_, r) = post("pos", typed_event("evt_otro", "payment.created", "orden-10")).await;
    assert_eq!(
        (r["status"].as_str(), reason_code(&r)),
        (Some("ignored"), Some("event_type_not_configured")),
        "{r}"
    );
    let (_, r) = post("legado", payment_event("evt_legado", "orden-11")).await;
    assert_eq!(
        (r["status"].as_str(), reason_code(&r)),
        (Some("ignored"), Some("event_type_not_configured")),
        "{r}"
    );
    assert_eq!(w.outbox.counts().await.unwrap().total, 1, "only the payment became a sale");

    // Kept with their reason, and counted where support looks.
    let kept = w.outbox.webhook_events(Some(EventStatus::Ignored), 10).await.unwrap();
    assert_eq!(kept.len(), 4);
    assert!(kept.iter().all(|e| e
        .reason
        .as_ref()
        .is_some_and(|r| r["message"].as_str().is_some_and(|m| !m.is_empty()))));
    let review = w.outbox.webhook_review().await.unwrap();
    let count = |source: &str| review.iter().filter(|r| r.source == source).map(|r| r.count).sum::<i64>();
    assert_eq!((count("pos"), count("legado")), (3, 1), "{review:?}");
    assert!(review
        .iter()
        .any(|r| r.source == "pos" && r.reason_code.as_deref() == Some("refund_not_a_sale") && r.count == 2));
    s.stop().await;
}

/// One request the receiver got: delivery id, signature header, body.
type Seen = (String, String, Vec<u8>);

/// A receiver that answers 500 to the first `fail` requests, then 200; it records every one.
#[derive(Clone, Default)]
struct Receiver {
    seen: Arc<Mutex<Vec<Seen>>>,
    fail: usize,
}

async fn start_receiver(fail: usize) -> (String, Receiver) {
    let r = Receiver {
        fail,
        ..Default::default()
    };
    let state = r.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let state = state.clone();
            async move {
                let h = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
                let mut seen = state.seen.lock().unwrap();
                seen.push((h("x-timbra-delivery-id"), h("x-timbra-signature"), body.to_vec()));
                if seen.len() <= state.fail {
                    StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    StatusCode::OK
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, r)
}

async fn stamped_world_notifying(backend: Backend, url: &str) -> (World, i64) {
    let w = World::new(backend).await;
    w.secrets.set("HOOK_SECRET", "h00k");
    w.outbox
        .set_webhook_endpoint(
            WebhookEndpoint {
                name: "erp".into(),
                url: url.into(),
                secret_env: "HOOK_SECRET".into(),
                events: vec![],
            },
            &contador(),
        )
        .await
        .unwrap();
    let id = w.record("notifica-1").await;
    w.stamp_pending().await;
    (w, id)
}

async fn every_event_arrives_through_failures_with_one_delivery_id(backend: Backend) {
    let (url, receiver) = start_receiver(3).await;
    let (w, invoice_id) = stamped_world_notifying(backend, &url).await;
    let deliveries = w
        .outbox
        .webhook_deliveries(Some(&InvoiceRef::Id(invoice_id)), None, 10)
        .await
        .unwrap();
    assert_eq!(deliveries.len(), 1, "the stamping verdict enqueued invoice.stamped");
    assert_eq!(deliveries[0].event_type, "invoice.stamped");
    let sender = api::sender::ReqwestSender::new(std::time::Duration::from_secs(5)).unwrap();
    let policy = RetryPolicy::default();
    for _ in 0..10 {
        deliver_due(&w.outbox, &sender, &w.secrets, &policy, "w1", 10).await.unwrap();
        if w.outbox
            .webhook_deliveries(None, Some(DeliveryStatus::Delivered), 10)
            .await
            .unwrap()
            .len()
            == 1
        {
            break;
        }
        w.clock.advance(chrono::Duration::hours(2));
    }
    let seen = receiver.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "three failures, then delivered");
    let id = &deliveries[0].delivery_id;
    for (delivery_id, signature, body) in &seen {
        assert_eq!(delivery_id, id, "duplicates only with the same delivery id");
        assert_eq!(verify_signature(Some(signature), b"h00k", body, w.clock.now(), 86_400 * 3), Ok(()));
        let v: Value = serde_json::from_slice(body).unwrap();
        assert_eq!((v["id"].as_str(), v["type"].as_str()), (Some(id.as_str()), Some("invoice.stamped")));
        assert_eq!(v["data"]["invoiceId"], invoice_id);
    }
    let attempts = w.outbox.webhook_delivery_attempts(id).await.unwrap();
    let outcomes: Vec<Option<&str>> = attempts.iter().map(|a| a.outcome.as_deref()).collect();
    assert_eq!(outcomes, [Some("failed"), Some("failed"), Some("failed"), Some("delivered")]);
    // The history is on the invoice's timeline.
    let detail = w.outbox.invoice(&InvoiceRef::Id(invoice_id)).await.unwrap();
    let kinds: Vec<&str> = detail.timeline.iter().map(|t| t.kind.as_str()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "webhook_attempt").count(), 4);
    assert!(kinds.contains(&"webhook_enqueued"));
    // Delivered is final: another pass sends nothing.
    deliver_due(&w.outbox, &sender, &w.secrets, &policy, "w1", 10).await.unwrap();
    assert_eq!(receiver.seen.lock().unwrap().len(), 4);
}

async fn a_cancellation_update_reaches_the_receiver_under_its_delivery_id(backend: Backend) {
    let (url, receiver) = start_receiver(1).await;
    let (w, invoice_id) = stamped_world_notifying(backend, &url).await;
    let uuid = w.outbox.invoice(&InvoiceRef::Id(invoice_id)).await.unwrap().cfdis[0].uuid.clone();
    // What the drain's cancellation step writes with a final state (tested end to end in
    // crates/outbox/tests/cancellation.rs against the PAC simulator).
    let change = CancellationChange {
        invoice_id,
        sale_id: "notifica-1",
        uuid: &uuid,
        cancellation_id: 1,
        motivo: "02",
        state: "final",
        outcome: Some("cancelado_sin_aceptacion"),
        outcome_detail: Some("Cancelado · Cancelado sin aceptación"),
        cfdi_status: outbox::cancellation::CancellationStatus::Cancelado,
        sat_status: Some("Cancelado · Cancelable sin aceptación · Cancelado sin aceptación"),
    };
    let queued = w.outbox.cancellation_notifications(&change).await.unwrap();
    assert_eq!(queued.len(), 1, "one per endpoint that wants it");
    w.outbox.enqueue_deliveries(&queued).await.unwrap();
    let sender = api::sender::ReqwestSender::new(std::time::Duration::from_secs(5)).unwrap();
    for _ in 0..10 {
        deliver_due(&w.outbox, &sender, &w.secrets, &RetryPolicy::default(), "w1", 10)
            .await
            .unwrap();
        if w.outbox
            .webhook_deliveries(None, Some(DeliveryStatus::Delivered), 10)
            .await
            .unwrap()
            .len()
            == 2
        {
            break;
        }
        w.clock.advance(chrono::Duration::hours(2));
    }
    let seen = receiver.seen.lock().unwrap().clone();
    let got: Vec<&Seen> = seen
        .iter()
        .filter(|(_, _, body)| serde_json::from_slice::<Value>(body).unwrap()["type"] == "cancellation.updated")
        .collect();
    assert!(!got.is_empty(), "the receiver got cancellation.updated");
    for (delivery_id, signature, body) in &got {
        assert_eq!(delivery_id, &queued[0].delivery_id, "one delivery id, also when retried");
        assert_eq!(verify_signature(Some(signature), b"h00k", body, w.clock.now(), 86_400 * 3), Ok(()));
        let v: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(v["id"].as_str(), Some(delivery_id.as_str()));
        let d = &v["data"];
        assert_eq!(
            (
                d["saleId"].as_str(),
                d["uuid"].as_str(),
                d["state"].as_str(),
                d["outcome"].as_str(),
                d["motivo"].as_str()
            ),
            (
                Some("notifica-1"),
                Some(uuid.as_str()),
                Some("final"),
                Some("cancelado_sin_aceptacion"),
                Some("02")
            )
        );
        assert_eq!(d["cancellationId"], 1);
        assert!(d["satStatus"].as_str().unwrap().starts_with("Cancelado"));
    }
    let delivered = w
        .outbox
        .webhook_deliveries(None, Some(DeliveryStatus::Delivered), 10)
        .await
        .unwrap();
    assert!(delivered.iter().any(|d| d.event_type == "cancellation.updated"));
}

/// Sends, then never comes back (the process died before recording the answer).
struct DiesAfterSending {
    inner: api::sender::ReqwestSender,
    sent: tokio::sync::mpsc::UnboundedSender<()>,
}

impl WebhookSender for DiesAfterSending {
    fn send<'a>(&'a self, request: &'a OutgoingRequest) -> std::pin::Pin<Box<dyn std::future::Future<Output = SendOutcome> + Send + 'a>> {
        Box::pin(async move {
            let _ = self.inner.send(request).await;
            let _ = self.sent.send(());
            std::future::pending().await
        })
    }
}

async fn a_worker_that_dies_after_sending_causes_a_duplicate_with_the_same_delivery_id(backend: Backend) {
    let (url, receiver) = start_receiver(0).await;
    let (w, _) = stamped_world_notifying(backend, &url).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let dying = DiesAfterSending {
        inner: api::sender::ReqwestSender::new(std::time::Duration::from_secs(5)).unwrap(),
        sent: tx,
    };
    let (outbox, secrets) = (w.outbox.clone(), w.secrets.clone());
    let task = tokio::spawn(async move { deliver_due(&outbox, &dying, &secrets, &RetryPolicy::default(), "muere", 10).await });
    rx.recv().await.unwrap();
    task.abort();
    assert_eq!(receiver.seen.lock().unwrap().len(), 1);
    // Its lease expires; another worker sends the same delivery again.
    w.clock.advance(RetryPolicy::default().lease + chrono::Duration::seconds(1));
    let sender = api::sender::ReqwestSender::new(std::time::Duration::from_secs(5)).unwrap();
    deliver_due(&w.outbox, &sender, &w.secrets, &RetryPolicy::default(), "w2", 10)
        .await
        .unwrap();
    let seen = receiver.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].0, seen[1].0, "the same X-Timbra-Delivery-Id");
    let d = &w.outbox.webhook_deliveries(None, None, 10).await.unwrap()[0];
    assert_eq!(d.status, DeliveryStatus::Delivered);
    let attempts = w.outbox.webhook_delivery_attempts(&d.delivery_id).await.unwrap();
    assert_eq!(attempts.len(), 2);
    assert!(attempts[0].finished_at.is_none(), "the first attempt's answer was never recorded");
    assert_eq!(attempts[1].outcome.as_deref(), Some("delivered"));
}

crate::conformance!(
    a_cancellation_update_reaches_the_receiver_under_its_delivery_id,
    only_configured_event_types_become_sales_and_a_refund_never_does,
    a_worker_that_dies_after_sending_causes_a_duplicate_with_the_same_delivery_id,
    every_event_arrives_through_failures_with_one_delivery_id,
    signed_generic_webhooks_record_once_and_refuse_bad_signatures,
    an_event_that_cannot_be_mapped_is_kept_with_its_reason,
    stripe_events_use_their_metadata_and_stripe_signatures,
);
