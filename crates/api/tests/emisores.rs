//! Several emisores behind one local API (`outbox::emisores`): a token belongs to one emisor,
//! and a request acts in that emisor only — what one token records, another emisor's token
//! neither sees nor replays, even under the same sale_id.

mod common;

use std::sync::Arc;

use cfdi::secret::Secret;
use common::{json, Backend, World};
use outbox::{Actor, EmisorSetup, Role};

async fn a_token_acts_in_its_own_emisor_only(backend: Backend) {
    let mut w = World::new(backend).await;
    // Inside both test CSDs' validity (CACX7605101P8's ended 2023-06-17).
    w.clock.set("2023-06-01T19:00:00Z".parse().unwrap());
    let certs = common::fixture("cfdi/certs");
    let setup = EmisorSetup {
        profile: toml::from_str(&std::fs::read_to_string(common::fixture("sales/emisor-cacx.toml")).unwrap()).unwrap(),
        cer: std::fs::read(certs.join("CACX7605101P8.cer")).unwrap(),
        key: std::fs::read(certs.join("CACX7605101P8.key")).unwrap(),
        password_env: "TIMBRA_CSD_PASSWORD".into(),
    };
    let admin = Actor::new("sofia", Role::Soporte, "test");
    let entry = outbox::emisores::add_emisor(
        &w.outbox,
        &w.db.location,
        &setup,
        &Secret::new("12345678a"),
        &admin,
        std::time::Duration::from_secs(5),
    )
    .await
    .unwrap();
    let other = Arc::new(
        outbox::emisores::open_emisor(&w.db.location, &entry, std::time::Duration::from_secs(5), w.clock.clone())
            .await
            .unwrap(),
    );
    other.provide_csd_password(Secret::new("12345678a"));
    w.outbox.provide_csd_password(Secret::new("12345678a"));
    w.emisores.push(other.clone());
    let (_, cacx) = other.create_api_token("erp", &common::contador()).await.unwrap();
    let eku = w.token("erp").await;
    let s = w.serve().await;
    let body = |id: &str| common::sale(id).replace("2026-11-29T12:00:00", "2023-06-01T12:00:00");

    let (st, recorded) = json(s.post_sale(Some(cacx.expose()), None, body("venta-1")).send().await.unwrap()).await;
    assert_eq!(st, 201, "{recorded}");
    assert_eq!(
        (other.counts().await.unwrap().total, w.outbox.counts().await.unwrap().total),
        (1, 0)
    );
    // Read back with its token; another emisor's token does not see it.
    let get = |t: &str| {
        s.client
            .get(format!("{}/v1/sales/venta-1", s.url))
            .bearer_auth(t.to_string())
            .send()
    };
    assert_eq!(get(cacx.expose()).await.unwrap().status(), 200);
    assert_eq!(get(&eku).await.unwrap().status(), 404);
    // The same sale_id under the other emisor's token is that emisor's own sale, not a replay.
    let (st, mine) = json(s.post_sale(Some(&eku), None, body("venta-1")).send().await.unwrap()).await;
    assert_eq!((st, mine["replayed"].as_bool()), (201, Some(false)), "{mine}");
    assert_eq!(
        (other.counts().await.unwrap().total, w.outbox.counts().await.unwrap().total),
        (1, 1)
    );
    for (o, rfc) in [(&other, "CACX7605101P8"), (&w.outbox, "EKU9003173C9")] {
        let d = o.invoice(&outbox::model::InvoiceRef::SaleId("venta-1".into())).await.unwrap();
        let (_, sealed) = o.attempt_body(d.attempts[0].id).await.unwrap();
        assert!(String::from_utf8_lossy(&sealed).contains(&format!("Rfc=\"{rfc}\"")), "{rfc}");
    }
    s.stop().await;
}

conformance!(a_token_acts_in_its_own_emisor_only);
