//! The intake API's defences over real HTTP: rate limits per token (a flooding POS token gets
//! 429 with Retry-After, another token is untouched), failed authentications limited together
//! (guessing waits, a valid token still passes), webhooks limited per source; loopback-only
//! listening unless explicitly allowed.

mod common;

use api::rate_limit::{Rate, RateLimits};
use common::{Backend, World};

fn limits(per_token: u32, failed_auth: u32, per_source: u32) -> RateLimits {
    // Refill so slow that nothing comes back during a test.
    let rate = |burst| Rate { burst, per_second: 0.0001 };
    RateLimits {
        per_token: rate(per_token),
        per_token_reads: rate(per_token),
        failed_auth: rate(failed_auth),
        per_webhook_source: rate(per_source),
    }
}

async fn status_of(r: reqwest::RequestBuilder) -> (u16, Option<String>, serde_json::Value) {
    let resp = r.send().await.unwrap();
    let status = resp.status().as_u16();
    let retry = resp.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    let body = resp.json().await.unwrap_or_default();
    (status, retry, body)
}

async fn a_flooding_token_is_limited_and_the_others_are_not(backend: Backend) {
    let w = World::new(backend).await;
    let pos = w.token("pos-caja-1").await;
    let other = w.token("pos-caja-2").await;
    let s = w.serve_with_limits(limits(3, 100, 100)).await;
    for i in 0..3 {
        let (st, _, body) = status_of(s.post_sale(Some(&pos), None, common::sale(&format!("v-{i}")))).await;
        assert_eq!(st, 201, "{body}");
    }
    let (st, retry, body) = status_of(s.post_sale(Some(&pos), None, common::sale("v-3"))).await;
    assert_eq!(st, 429, "{body}");
    assert_eq!(body["error"], "rate_limited");
    assert!(body["message"].as_str().unwrap().contains("pos-caja-1"), "{body}");
    assert!(retry.unwrap().parse::<u64>().unwrap() >= 1);
    // Nothing was recorded for the refused request.
    let (st, _, _) = status_of(s.client.get(format!("{}/v1/sales/v-3", s.url)).bearer_auth(&other)).await;
    assert_eq!(st, 404);
    let (st, _, body) = status_of(s.post_sale(Some(&other), None, common::sale("v-4"))).await;
    assert_eq!(st, 201, "another token has its own budget: {body}");
    s.stop().await;
}

async fn guessing_tokens_is_slowed_for_everyone_but_a_valid_token_still_passes(backend: Backend) {
    let w = World::new(backend).await;
    let pos = w.token("pos").await;
    let s = w.serve_with_limits(limits(100, 5, 100)).await;
    let guesses = [
        Some("tbr_0000000000000000000000000000000000000000000000000000000000000000"),
        Some("nada"),
        None,
        Some("tbr_1111111111111111111111111111111111111111111111111111111111111111"),
        Some("tbr_2222222222222222222222222222222222222222222222222222222222222222"),
    ];
    for g in guesses {
        let (st, _, body) = status_of(s.post_sale(g, None, common::sale("x"))).await;
        assert_eq!(st, 401, "{body}");
    }
    let (st, retry, body) = status_of(s.post_sale(Some("tbr_3333"), None, common::sale("x"))).await;
    assert_eq!((st, body["error"].as_str()), (429, Some("rate_limited")), "{body}");
    assert!(retry.is_some());
    let (st, _, _) = status_of(s.post_sale(None, None, common::sale("x"))).await;
    assert_eq!(st, 429, "no header at all waits too");
    let (st, _, body) = status_of(s.post_sale(Some(&pos), None, common::sale("real"))).await;
    assert_eq!(st, 201, "the real POS is not locked out: {body}");
    s.stop().await;
}

async fn webhooks_are_limited_per_source(backend: Backend) {
    let w = World::new(backend).await;
    let s = w.serve_with_limits(limits(100, 100, 2)).await;
    for _ in 0..2 {
        let (st, _, body) = status_of(s.client.post(format!("{}/v1/webhooks/tienda", s.url)).body("{}")).await;
        assert_eq!(st, 404, "an unknown source, answered: {body}");
    }
    let (st, retry, body) = status_of(s.client.post(format!("{}/v1/webhooks/tienda", s.url)).body("{}")).await;
    assert_eq!((st, body["error"].as_str()), (429, Some("rate_limited")), "{body}");
    assert!(retry.is_some());
    let (st, _, _) = status_of(s.client.post(format!("{}/v1/webhooks/otra", s.url)).body("{}")).await;
    assert_eq!(st, 404, "another source has its own budget");
    s.stop().await;
}

#[test]
fn only_loopback_unless_remote_is_allowed() {
    for ok in ["127.0.0.1:8787", "[::1]:8787", "127.0.0.2:1"] {
        assert!(api::check_listen(ok.parse().unwrap(), false).is_ok(), "{ok}");
    }
    for remote in ["0.0.0.0:8787", "[::]:8787", "192.168.1.20:8787", "10.0.0.1:80"] {
        let err = api::check_listen(remote.parse().unwrap(), false).unwrap_err();
        assert!(err.contains("--allow-remote"), "{remote}: {err}");
        assert!(
            api::check_listen(remote.parse().unwrap(), true).is_ok(),
            "{remote} with --allow-remote"
        );
    }
}

async fn hostile_sale_bodies_are_client_errors_and_write_nothing(backend: Backend) {
    let w = World::new(backend).await;
    let pos = w.token("pos").await;
    let s = w.serve().await;
    let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    let deep_in_field = format!("{{\"sale_id\":\"x\",\"conceptos\":{}{}}}", "[".repeat(200_000), "]".repeat(200_000));
    let big = format!("{{\"sale_id\":\"{}\"}}", "x".repeat(2 << 20));
    for (what, body, status) in [
        ("deep", deep, 422),
        ("deep in a field", deep_in_field, 422),
        ("over 1 MiB", big, 413),
    ] {
        let (st, _, reply) = status_of(s.post_sale(Some(&pos), None, body)).await;
        assert_eq!(st, status, "{what}: {reply}");
        assert!(reply["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {reply}");
    }
    let (st, _, _) = status_of(s.client.get(format!("{}/v1/sales/x", s.url)).bearer_auth(&pos)).await;
    assert_eq!(st, 404, "nothing recorded");
    s.stop().await;
}

crate::conformance!(
    a_flooding_token_is_limited_and_the_others_are_not,
    guessing_tokens_is_slowed_for_everyone_but_a_valid_token_still_passes,
    webhooks_are_limited_per_source,
    hostile_sale_bodies_are_client_errors_and_write_nothing,
);
