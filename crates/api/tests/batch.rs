//! Issue 31 item 4, over real HTTP: rate limits per token (its own, stored with it; reads and
//! writes in separate buckets; the loopback defaults never refuse an ERP's 2,000-order backlog
//! over 16 connections) and `POST /v1/sales/batch` (an answer per item with the idempotency
//! table of `POST /v1/sales`, keys shared with the single endpoint, a batch too large refused
//! with nothing written). Counts are asserted, never timings.

mod common;

use std::sync::Arc;

use api::rate_limit::RateLimits;
use common::{contador, json, sale, sale_changed, Backend, World};
use outbox::api_tokens::TokenLimits;
use outbox::Clock;
use serde_json::{json, Value};

fn limited(per_second: u32, burst: u32) -> TokenLimits {
    TokenLimits {
        per_second: Some(per_second),
        burst: Some(burst),
    }
}

async fn token_with(w: &World, name: &str, limits: TokenLimits) -> String {
    let (t, secret) = w.outbox.create_api_token_with(name, limits, &contador()).await.unwrap();
    assert_eq!(t.limits, limits, "stored with the token");
    secret.expose().to_string()
}

fn batch(s: &common::Server, token: &str, items: Value) -> reqwest::RequestBuilder {
    s.client
        .post(format!("{}/v1/sales/batch", s.url))
        .bearer_auth(token)
        .json(&json!({ "items": items }))
}

fn item(key: Option<&str>, sale_json: &str) -> Value {
    let sale: Value = serde_json::from_str(sale_json).unwrap();
    match key {
        Some(k) => json!({"idempotencyKey": k, "sale": sale}),
        None => json!({"sale": sale}),
    }
}

/// A token's own low limit answers 429 with Retry-After (nothing recorded); another token on
/// the same server keeps the server's default; changing the limit applies on the next request.
async fn a_token_own_limit_is_honoured(backend: Backend) {
    let w = World::new(backend).await;
    let slow = token_with(&w, "erp-lento", limited(1, 2)).await;
    let other = w.token("pos").await;
    w.record("l-0").await;
    let s = w.serve().await;
    // Replays (cheap): the three requests fall well inside one second of refill.
    for _ in 0..2 {
        let (st, body) = json(s.post_sale(Some(&slow), None, sale("l-0")).send().await.unwrap()).await;
        assert_eq!(st, 200, "{body}");
    }
    let resp = s.post_sale(Some(&slow), None, sale("l-2")).send().await.unwrap();
    let retry: u64 = resp.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    let (st, body) = json(resp).await;
    assert_eq!((st, body["error"].as_str()), (429, Some("rate_limited")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("erp-lento"), "{body}");
    assert!(retry >= 1);
    assert_eq!(w.outbox.counts().await.unwrap().total, 1, "the refused sale was not recorded");
    let (st, body) = json(s.post_sale(Some(&other), None, sale("p-0")).send().await.unwrap()).await;
    assert_eq!(st, 201, "another token has the server's default: {body}");
    // Raised while the server runs: the next request passes.
    let t = w
        .outbox
        .set_api_token_limits("erp-lento", limited(1, 1_000), &contador())
        .await
        .unwrap();
    assert_eq!(t.limits.burst, Some(1_000));
    let (st, body) = json(s.post_sale(Some(&slow), None, sale("l-2")).send().await.unwrap()).await;
    assert_eq!(st, 201, "{body}");
    s.stop().await;
}

/// Reads and writes have separate buckets: a token that used up its reads still records.
async fn reads_never_starve_writes(backend: Backend) {
    let w = World::new(backend).await;
    let t = token_with(&w, "erp", limited(1, 3)).await;
    let s = w.serve().await;
    w.record("r-1").await;
    let mut refused = 0;
    for _ in 0..5 {
        let st = s
            .client
            .get(format!("{}/v1/sales/r-1", s.url))
            .bearer_auth(&t)
            .send()
            .await
            .unwrap()
            .status();
        if st == 429 {
            refused += 1;
        }
    }
    assert_eq!(refused, 2, "three reads at once, then 429");
    let (st, body) = json(s.post_sale(Some(&t), None, sale("r-2")).send().await.unwrap()).await;
    assert_eq!(st, 201, "writes have their own bucket: {body}");
    s.stop().await;
}

/// The bench's load shape on the loopback defaults: 2,000 sale requests over 16 connections
/// (replays here, so the test stays cheap: the limiter counts requests, not sealing) and ~1,000
/// reads of their state, one token: no 429. (Before: one shared bucket of 100 at 20/s, reads
/// included: most of these were 429.)
async fn the_loopback_defaults_never_refuse_an_erp_backlog(backend: Backend) {
    let w = World::new(backend).await;
    let t = Arc::new(w.token("erp").await);
    w.record("b-0").await;
    let s = w.serve_with_limits(RateLimits::for_listen("127.0.0.1".parse().unwrap())).await;
    let body = Arc::new(sale("b-0"));
    let mut tasks = Vec::new();
    for c in 0..16 {
        let (client, url, t, body) = (reqwest::Client::new(), s.url.clone(), t.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let mut counts = std::collections::BTreeMap::<u16, usize>::new();
            for i in 0..(2_000 / 16 + usize::from(c < 2_000 % 16)) {
                let st = client
                    .post(format!("{url}/v1/sales"))
                    .bearer_auth(&*t)
                    .body((*body).clone())
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16();
                *counts.entry(st).or_default() += 1;
                if i % 2 == 0 {
                    let st = client
                        .get(format!("{url}/v1/sales/b-0"))
                        .bearer_auth(&*t)
                        .send()
                        .await
                        .unwrap()
                        .status()
                        .as_u16();
                    *counts.entry(st).or_default() += 1;
                }
            }
            counts
        }));
    }
    let mut total = std::collections::BTreeMap::<u16, usize>::new();
    for task in tasks {
        for (st, n) in task.await.unwrap() {
            *total.entry(st).or_default() += n;
        }
    }
    assert_eq!(total.get(&429), None, "{total:?}");
    // 2,000 writes and 1,008 reads (after every other write: 63 on each of 16 connections).
    assert_eq!(total.values().sum::<usize>(), 3_008, "{total:?}");
    assert_eq!(
        total.get(&200),
        Some(&3_008),
        "every write a replay, every read answered: {total:?}"
    );
    assert_eq!(w.outbox.counts().await.unwrap().total, 1);
    s.stop().await;
}

/// One batch with a new sale, a replay, a conflict, one in progress, an invalid one and the
/// same key twice: each answered as the single endpoint would, in order.
async fn a_batch_answers_each_item_as_the_single_endpoint_would(backend: Backend) {
    let w = World::new(backend).await;
    let t = w.token("erp").await;
    let s = w.serve().await;
    let (st, first) = json(s.post_sale(Some(&t), Some("k-a"), sale("m-a")).send().await.unwrap()).await;
    assert_eq!(st, 201, "{first}");
    // A process that died mid-request holds k-busy.
    let now = w.clock.now().timestamp_millis();
    let until = now + outbox::intake::RESERVATION_LEASE.num_milliseconds();
    w.outbox
        .store()
        .reserve_key("k-busy", "m-busy", "x", "proceso-muerto", until, now)
        .await
        .unwrap();
    let bad = sale("m-bad").replace("\"URE180429TM6\"", "\"XXXX\"");
    let items = json!([
        item(Some("k-a"), &sale("m-a")),         // replay
        item(Some("k-b"), &sale("m-b")),         // new
        item(Some("k-a"), &sale_changed("m-a")), // conflict (same key, other body)
        item(Some("k-busy"), &sale("m-busy")),   // in progress
        item(Some("k-bad"), &bad),               // invalid
        item(None, &sale("m-c")),                // new, keyed by its sale_id
        item(Some("k-b"), &sale("m-b")),         // the same key again: a replay of item 1
    ]);
    let (st, body) = json(batch(&s, &t, items).send().await.unwrap()).await;
    assert_eq!(st, 200, "{body}");
    let answers = body["items"].as_array().unwrap();
    let statuses: Vec<u64> = answers.iter().map(|a| a["status"].as_u64().unwrap()).collect();
    assert_eq!(statuses, vec![200, 201, 409, 409, 422, 201, 200], "{body}");
    assert_eq!(answers[0]["body"]["invoiceId"], first["invoiceId"]);
    assert_eq!(answers[0]["body"]["replayed"], true);
    assert_eq!(answers[2]["body"]["error"], "idempotency_conflict");
    assert_eq!(answers[3]["body"]["error"], "idempotency_in_progress");
    assert!(answers[3]["body"]["retryAfterSeconds"].as_u64().is_some_and(|s| s >= 1), "{body}");
    assert_eq!(answers[4]["body"]["error"], "validation");
    assert_eq!(answers[6]["body"]["invoiceId"], answers[1]["body"]["invoiceId"]);
    assert_eq!(answers[1]["idempotencyKey"], "k-b");
    assert_eq!(answers[5]["idempotencyKey"], Value::Null);
    assert_eq!(
        (body["recorded"].as_u64(), body["replayed"].as_u64(), body["failed"].as_u64()),
        (Some(2), Some(2), Some(3))
    );
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a["index"].as_u64(), Some(i as u64));
    }
    assert_eq!(w.outbox.counts().await.unwrap().total, 3, "m-a, m-b, m-c");
    s.stop().await;
}

/// A key is one key across both endpoints: recorded by a batch, replayed or refused by the
/// single endpoint, and the other way round.
async fn idempotency_keys_are_shared_by_the_single_and_batch_endpoints(backend: Backend) {
    let w = World::new(backend).await;
    let t = w.token("erp").await;
    let s = w.serve().await;
    let (st, body) = json(batch(&s, &t, json!([item(Some("x-1"), &sale("s-1"))])).send().await.unwrap()).await;
    assert_eq!((st, body["items"][0]["status"].as_u64()), (200, Some(201)), "{body}");
    let id = body["items"][0]["body"]["invoiceId"].clone();
    let (st, again) = json(s.post_sale(Some(&t), Some("x-1"), sale("s-1")).send().await.unwrap()).await;
    assert_eq!((st, &again["invoiceId"]), (200, &id), "{again}");
    let (st, other) = json(s.post_sale(Some(&t), Some("x-1"), sale_changed("s-1")).send().await.unwrap()).await;
    assert_eq!((st, other["error"].as_str()), (409, Some("idempotency_conflict")), "{other}");
    // Recorded one at a time, then sent in a batch.
    let (st, single) = json(s.post_sale(Some(&t), Some("x-2"), sale("s-2")).send().await.unwrap()).await;
    assert_eq!(st, 201, "{single}");
    let items = json!([item(Some("x-2"), &sale("s-2")), item(Some("x-2b"), &sale_changed("s-2"))]);
    let (_, body) = json(batch(&s, &t, items).send().await.unwrap()).await;
    assert_eq!(body["items"][0]["status"], 200, "{body}");
    assert_eq!(body["items"][0]["body"]["invoiceId"], single["invoiceId"]);
    assert_eq!(body["items"][1]["status"], 409, "the same sale_id with another body: {body}");
    assert_eq!(w.outbox.counts().await.unwrap().total, 2);
    s.stop().await;
}

/// More than the maximum is 413 naming the limit, in Spanish, with nothing written; a body
/// that is not a batch is 422.
async fn a_batch_too_large_is_refused_with_nothing_written(backend: Backend) {
    let w = World::new(backend).await;
    let t = w.token("erp").await;
    let s = w.serve().await;
    let n = api::server::MAX_BATCH_ITEMS + 1;
    let items: Vec<Value> = (0..n).map(|i| json!({"sale": {"sale_id": format!("g-{i}")}})).collect();
    let (st, body) = json(batch(&s, &t, Value::Array(items)).send().await.unwrap()).await;
    assert_eq!((st, body["error"].as_str()), (413, Some("batch_too_large")), "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains(&api::server::MAX_BATCH_ITEMS.to_string()) && message.contains("máximo"),
        "{message}"
    );
    let (st, body) = json(
        s.client
            .post(format!("{}/v1/sales/batch", s.url))
            .bearer_auth(&t)
            .json(&json!({"ventas": []}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((st, body["error"].as_str()), (422, Some("invalid_batch")), "{body}");
    assert_eq!(w.outbox.counts().await.unwrap().total, 0);
    s.stop().await;
}

/// A batch takes one write per sale from its token's bucket, all before anything is written.
async fn a_batch_counts_one_write_per_sale(backend: Backend) {
    let w = World::new(backend).await;
    let t = token_with(&w, "erp", limited(1, 4)).await;
    let s = w.serve().await;
    // Three invalid sales (cheap to answer): three writes of four.
    let invalid: Vec<Value> = (0..3).map(|i| json!({"sale": {"sale_id": format!("z-{i}")}})).collect();
    let (st, body) = json(batch(&s, &t, Value::Array(invalid)).send().await.unwrap()).await;
    assert_eq!((st, body["failed"].as_u64()), (200, Some(3)), "{body}");
    let three = json!([item(None, &sale("c-1")), item(None, &sale("c-2")), item(None, &sale("c-3"))]);
    let resp = batch(&s, &t, three).send().await.unwrap();
    assert!(resp.headers().contains_key("retry-after"));
    let (st, body) = json(resp).await;
    assert_eq!((st, body["error"].as_str()), (429, Some("rate_limited")), "{body}");
    assert_eq!(w.outbox.counts().await.unwrap().total, 0, "nothing of the refused batch");
    s.stop().await;
}

crate::conformance!(
    a_token_own_limit_is_honoured,
    reads_never_starve_writes,
    the_loopback_defaults_never_refuse_an_erp_backlog,
    a_batch_answers_each_item_as_the_single_endpoint_would,
    idempotency_keys_are_shared_by_the_single_and_batch_endpoints,
    a_batch_too_large_is_refused_with_nothing_written,
    a_batch_counts_one_write_per_sale,
);
