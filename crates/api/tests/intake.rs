//! The local intake API over real HTTP on port 0: every row of the idempotency table of `docs/intake.md`,
//! authentication, bad input (oversized, malformed, wrong headers) answered as JSON 4xx,
//! twenty concurrent requests with one key, reads and documents, and the OpenAPI document.

mod common;

use common::{json, sale, sale_changed, Backend, World};

use outbox::Clock;

async fn same_key_same_body_is_the_original_result_and_nothing_new(backend: Backend) {
    let w = World::new(backend).await;
    let t = w.token("pos").await;
    let s = w.serve().await;
    let (st, first) = json(s.post_sale(Some(&t), Some("k-1"), sale("api-1")).send().await.unwrap()).await;
    assert_eq!(st, 201, "{first}");
    assert_eq!(first["replayed"], false);
    let (st, again) = json(s.post_sale(Some(&t), Some("k-1"), sale("api-1")).send().await.unwrap()).await;
    assert_eq!(st, 200, "{again}");
    assert_eq!(again["replayed"], true);
    assert_eq!(again["invoiceId"], first["invoiceId"]);
    assert_eq!(w.outbox.counts().await.unwrap().total, 1);
    s.stop().await;
}

async fn same_key_different_body_is_a_conflict_and_writes_nothing(backend: Backend) {
    let w = World::new(backend).await;
    let t = w.token("pos").await;
    let s = w.serve().await;
    assert_eq!(
        s.post_sale(Some(&t), Some("k-2"), sale("api-2")).send().await.unwrap().status(),
        201
    );
    let (st, body) = json(s.post_sale(Some(&t), Some("k-2"), sale_changed("api-2")).send().await.unwrap()).await;
    assert_eq!(st, 409, "{body}");
    assert_eq!(body["error"], "idempotency_conflict");
    // The same sale_id under another key with another body is the same identity: a conflict too.
    let (st, body) = json(s.post_sale(Some(&t), Some("k-other"), sale_changed("api-2")).send().await.unwrap()).await;
    assert_eq!((st, body["error"].as_str()), (409, Some("idempotency_conflict")));
    assert_eq!(w.outbox.counts().await.unwrap().total, 1);
    s.stop().await;
}

async fn a_key_being_recorded_is_in_progress_until_its_reservation_expires(backend: Backend) {
    let w = World::new(backend).await;
    let t = w.token("pos").await;
    let s = w.serve().await;
    // A process that died mid-request left its reservation behind.
    let now = w.clock.now().timestamp_millis();
    let until = now + outbox::intake::RESERVATION_LEASE.num_milliseconds();
    let r = w
        .outbox
        .store()
        .reserve_key("k-3", "api-3", "x", "proceso-muerto", until, now)
        .await
        .unwrap();
    assert_eq!(r, outbox::store::Reservation::Granted);
    let resp = s.post_sale(Some(&t), Some("k-3"), sale("api-3")).send().await.unwrap();
    let retry_after: u64 = resp.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    let (st, body) = json(resp).await;
    assert_eq!((st, body["error"].as_str()), (409, Some("idempotency_in_progress")), "{body}");
    assert_eq!(body["retryAfterSeconds"].as_u64(), Some(retry_after));
    assert!((1..=120).contains(&retry_after), "{retry_after}");
    assert_eq!(w.outbox.counts().await.unwrap().total, 0);
    // After the lease the key is free again.
    w.clock.advance(outbox::intake::RESERVATION_LEASE + chrono::Duration::seconds(1));
    let (st, body) = json(s.post_sale(Some(&t), Some("k-3"), sale("api-3")).send().await.unwrap()).await;
    assert_eq!(st, 201, "{body}");
    s.stop().await;
}

async fn a_validation_error_names_every_field_and_leaves_the_key_free(backend: Backend) {
    let w = World::new(backend).await;
    let t = w.token("pos").await;
    let s = w.serve().await;
    let bad = sale("api-4")
        .replace("\"URE180429TM6\"", "\"XXXX\"")
        .replace("\"01010101\"", "\"99999999\"");
    let (st, body) = json(s.post_sale(Some(&t), Some("k-4"), bad).send().await.unwrap()).await;
    assert_eq!((st, body["error"].as_str()), (422, Some("validation")), "{body}");
    let fields: Vec<&str> = body["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert!(fields.len() >= 2, "{fields:?}");
    assert!(fields.iter().any(|f| f.contains("receptor.rfc")), "{fields:?}");
    assert!(fields.iter().any(|f| f.contains("clave_prod_serv")), "{fields:?}");
    assert!(body["fields"][0]["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert_eq!(w.outbox.counts().await.unwrap().total, 0);
    let (st, body) = json(s.post_sale(Some(&t), Some("k-4"), sale("api-4")).send().await.unwrap()).await;
    assert_eq!(st, 201, "the corrected body with the same key: {body}");
    s.stop().await;
}

async fn twenty_concurrent_requests_with_one_key_record_one_sale(backend: Backend) {
    let w = World::new(backend).await;
    let t = w.token("pos").await;
    let s = w.serve().await;
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let req = s.post_sale(Some(&t), Some("k-20"), sale("api-20"));
        tasks.push(tokio::spawn(async move { json(req.send().await.unwrap()).await }));
    }
    let mut created = 0;
    let mut invoice_ids = std::collections::BTreeSet::new();
    for task in tasks {
        let (st, body) = task.await.unwrap();
        match st {
            201 => {
                created += 1;
                invoice_ids.insert(body["invoiceId"].as_i64().unwrap());
            }
            200 => {
                assert_eq!(body["replayed"], true);
                invoice_ids.insert(body["invoiceId"].as_i64().unwrap());
            }
            409 => assert_eq!(body["error"], "idempotency_in_progress", "{body}"),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(created, 1);
    assert_eq!(invoice_ids.len(), 1);
    assert_eq!(w.outbox.counts().await.unwrap().total, 1);
    s.stop().await;
}

async fn tokens_are_required_checked_and_revocable(backend: Backend) {
    let w = World::new(backend).await;
    let t = w.token("pos").await;
    let s = w.serve().await;
    let get = |tok: Option<&str>| {
        let mut r = s.client.get(format!("{}/v1/sales/nada", s.url));
        if let Some(t) = tok {
            r = r.bearer_auth(t);
        }
        r.send()
    };
    let resp = get(None).await.unwrap();
    assert!(resp.headers().contains_key("www-authenticate"));
    let (st, body) = json(resp).await;
    assert_eq!((st, body["error"].as_str()), (401, Some("unauthorized")));
    let last = if t.ends_with('0') { '1' } else { '0' };
    let wrong = format!("{}{last}", &t[..t.len() - 1]);
    let (st, _) = json(get(Some(&wrong)).await.unwrap()).await;
    assert_eq!(st, 401);
    let (st, _) = json(get(Some("no-es-un-token")).await.unwrap()).await;
    assert_eq!(st, 401);
    let (st, body) = json(
        s.client
            .get(format!("{}/v1/sales/nada", s.url))
            .header("Authorization", "Basic abc")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((st, body["error"].as_str()), (401, Some("unauthorized")));
    let (st, body) = json(get(Some(&t)).await.unwrap()).await;
    assert_eq!(
        (st, body["error"].as_str()),
        (404, Some("not_found")),
        "a valid token reaches the route"
    );
    w.outbox.revoke_api_token("pos", &common::contador()).await.unwrap();
    let (st, _) = json(get(Some(&t)).await.unwrap()).await;
    assert_eq!(st, 401, "revoked");
    // Tokens are stored hashed: the token itself is nowhere in the database.
    match backend {
        Backend::Sqlite => {
            let db = std::fs::read(w.db.dir.path().join("timbra.db")).unwrap();
            let wal = std::fs::read(w.db.dir.path().join("timbra.db-wal")).unwrap_or_default();
            for bytes in [db, wal] {
                assert!(!bytes.windows(t.len()).any(|win| win == t.as_bytes()));
            }
        }
        Backend::Postgres => {
            let rows: Vec<String> =
                sqlx::query_scalar("SELECT concat_ws('|', id::text, name, prefix, token_sha256, actor, revoked_by) FROM api_tokens")
                    .fetch_all(&w.db.raw)
                    .await
                    .unwrap();
            assert!(!rows.is_empty());
            assert!(rows.iter().all(|r| !r.contains(t.as_str())), "{rows:?}");
        }
    }
    s.stop().await;
}

async fn bad_input_is_a_json_4xx_never_a_5xx(backend: Backend) {
    let w = World::new(backend).await;
    let t = w.token("pos").await;
    let s = w.serve().await;
    let big = vec![b' '; api::server::MAX_BODY_BYTES + 1];
    let (st, body) = json(s.post_sale(Some(&t), None, big).send().await.unwrap()).await;
    assert_eq!((st, body["error"].as_str()), (413, Some("payload_too_large")));
    // Without a Content-Length (chunked), the limit holds too.
    let stream = futures_stream(api::server::MAX_BODY_BYTES + 10);
    let (st, body) = json(s.post_sale(Some(&t), None, stream).send().await.unwrap()).await;
    assert_eq!((st, body["error"].as_str()), (413, Some("payload_too_large")));
    // A body far beyond the limit is read only so far (the 413 comes, or the connection is cut
    // once the bounded drain is done), never to its end; the server answers the next request.
    let endless = futures_stream(64 * api::server::MAX_BODY_BYTES);
    match s.post_sale(Some(&t), None, endless).send().await {
        Ok(r) => assert_eq!(r.status(), 413),
        Err(e) => assert!(e.is_request() || e.is_body(), "{e}"),
    }
    for (raw, code) in [("{nope", "malformed_json"), ("", "malformed_json"), ("[1,2", "malformed_json")] {
        let (st, body) = json(s.post_sale(Some(&t), None, raw).send().await.unwrap()).await;
        assert_eq!((st, body["error"].as_str()), (400, Some(code)), "{raw:?}: {body}");
    }
    let (st, body) = json(s.post_sale(Some(&t), None, "[]").send().await.unwrap()).await;
    assert_eq!((st, body["error"].as_str()), (422, Some("validation")), "{body}");
    let (st, body) = json(
        s.post_sale(Some(&t), None, sale("x"))
            .header("Idempotency-Key", reqwest::header::HeaderValue::from_bytes(b"\xff\xfe").unwrap())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((st, body["error"].as_str()), (400, Some("invalid_header")));
    let (st, body) = json(s.post_sale(Some(&t), Some(&"k".repeat(300)), sale("x")).send().await.unwrap()).await;
    assert_eq!((st, body["error"].as_str()), (422, Some("validation")), "{body}");
    let (st, body) = json(s.client.get(format!("{}/v1/nada", s.url)).send().await.unwrap()).await;
    assert_eq!((st, body["error"].as_str()), (404, Some("not_found")));
    let (st, body) = json(s.client.delete(format!("{}/v1/sales", s.url)).send().await.unwrap()).await;
    assert_eq!((st, body["error"].as_str()), (405, Some("method_not_allowed")));
    let (st, body) = json(
        s.client
            .get(format!("{}/v1/invoices/%FF/xml", s.url))
            .bearer_auth(&t)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert!(st == 400 || st == 404, "{st} {body}");
    s.stop().await;
}

fn futures_stream(n: usize) -> reqwest::Body {
    let chunk = vec![b' '; 64 * 1024];
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = (0..n.div_ceil(chunk.len())).map(|_| Ok(chunk.clone())).collect();
    reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))
}

async fn reads_and_documents_of_a_stamped_sale(backend: Backend) {
    let w = World::new(backend).await;
    let t = w.token("pos").await;
    let s = w.serve().await;
    let (st, created) = json(s.post_sale(Some(&t), Some("k-doc"), sale("api-doc")).send().await.unwrap()).await;
    assert_eq!(st, 201);
    let id = created["invoiceId"].as_i64().unwrap();
    let (st, body) = json(
        s.client
            .get(format!("{}/v1/sales/api-doc", s.url))
            .bearer_auth(&t)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!(
        (body["state"].as_str(), body["badge"].as_str()),
        (Some("pending"), Some("pendiente"))
    );
    assert!(body["uuid"].is_null());
    let (st, body) = json(
        s.client
            .get(format!("{}/v1/invoices/{id}/xml", s.url))
            .bearer_auth(&t)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((st, body["error"].as_str()), (409, Some("not_stamped")));

    w.stamp_pending().await;
    let (st, body) = json(
        s.client
            .get(format!("{}/v1/sales/api-doc", s.url))
            .bearer_auth(&t)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!(
        (body["state"].as_str(), body["badge"].as_str()),
        (Some("stamped"), Some("timbrada")),
        "{body}"
    );
    let uuid = body["uuid"].as_str().unwrap().to_string();
    for path in [format!("/v1/invoices/{id}/xml"), "/v1/invoices/api-doc/xml".to_string()] {
        let resp = s.client.get(format!("{}{path}", s.url)).bearer_auth(&t).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "application/xml");
        let xml = resp.bytes().await.unwrap();
        assert_eq!(Some(xml.to_vec()), w.outbox.cfdi_xml(&uuid).await.unwrap());
        assert!(services::documents::is_sandbox(&xml));
    }
    let resp = s
        .client
        .get(format!("{}/v1/invoices/{id}/pdf", s.url))
        .bearer_auth(&t)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/pdf");
    assert!(resp.headers()["content-disposition"].to_str().unwrap().contains(&uuid));
    let pdf = resp.bytes().await.unwrap();
    assert!(pdf.starts_with(b"%PDF"));
    let xml = w.outbox.cfdi_xml(&uuid).await.unwrap().unwrap();
    assert_eq!(
        pdf.to_vec(),
        pdf::render(&xml, &pdf::RenderOptions { sandbox: true, logo: None }).unwrap(),
        "sandbox mark on"
    );
    s.stop().await;
}

async fn health_and_the_openapi_document_kept_in_the_repository(backend: Backend) {
    let w = World::new(backend).await;
    let s = w.serve().await;
    let (st, body) = json(s.client.get(format!("{}/v1/health", s.url)).send().await.unwrap()).await;
    assert_eq!((st, body["status"].as_str()), (200, Some("ok")));
    let served = s
        .client
        .get(format!("{}/v1/openapi.json", s.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let file = std::fs::read_to_string(common::root().join("crates/api/openapi.json")).unwrap();
    assert_eq!(served, file, "the served document is crates/api/openapi.json");
    let doc: serde_json::Value = serde_json::from_str(&file).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for method in ops
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| ["get", "post", "put", "delete", "patch"].contains(&k.as_str()))
        {
            documented.push((method.clone(), path.clone()));
        }
    }
    documented.sort();
    // The router's own routes (the table it is built from), never a list kept beside it.
    let mut routes: Vec<(String, String)> = api::server::routes()
        .into_iter()
        .map(|(m, p, _)| (m.as_str().to_string(), p.to_string()))
        .collect();
    routes.sort();
    assert_eq!(documented, routes, "every route documented, nothing else");
    // And the running server answers each documented route: not its "no such route" fallback,
    // not "method not allowed".
    let fallback = |st: u16, body: &serde_json::Value| {
        (st == 404 && body["message"].as_str().is_some_and(|m| m.starts_with("no existe esa ruta")))
            || (st == 405 && body["error"] == "method_not_allowed")
    };
    let (st, body) = json(s.client.get(format!("{}/v1/no-existe", s.url)).send().await.unwrap()).await;
    assert!(fallback(st, &body), "an unknown route answers the fallback: {st} {body}");
    for (method, path) in &documented {
        let url = format!(
            "{}{}",
            s.url,
            path.replace("{sale_id}", "x").replace("{id}", "1").replace("{source}", "x")
        );
        let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let (st, body) = json(s.client.request(m, &url).send().await.unwrap()).await;
        assert!(
            !fallback(st, &body),
            "{method} {path} is documented but the router does not answer it: {st} {body}"
        );
        // The path is the router's: DELETE is refused as a method (or by the route's token
        // check first), never answered by the unknown-route fallback.
        let (st, body) = json(s.client.delete(&url).send().await.unwrap()).await;
        assert!([401, 405, 429].contains(&st) && !fallback(404, &body), "DELETE {path}: {st} {body}");
    }
    s.stop().await;
}

async fn graceful_shutdown_finishes_and_frees_the_port(backend: Backend) {
    let w = World::new(backend).await;
    let s = w.serve().await;
    let url = s.url.clone();
    s.stop().await;
    assert!(reqwest::get(format!("{url}/v1/health")).await.is_err());
}

crate::conformance!(
    same_key_same_body_is_the_original_result_and_nothing_new,
    same_key_different_body_is_a_conflict_and_writes_nothing,
    a_key_being_recorded_is_in_progress_until_its_reservation_expires,
    a_validation_error_names_every_field_and_leaves_the_key_free,
    twenty_concurrent_requests_with_one_key_record_one_sale,
    tokens_are_required_checked_and_revocable,
    bad_input_is_a_json_4xx_never_a_5xx,
    reads_and_documents_of_a_stamped_sale,
    health_and_the_openapi_document_kept_in_the_repository,
    graceful_shutdown_finishes_and_frees_the_port,
);
