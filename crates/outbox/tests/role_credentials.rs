//! Roles authenticated, not declared: once the contador has a credential, a contador-only
//! action needs the role unlocked with it; the unlock expires after 15 minutes (the test clock
//! moves); each risky action spends the unlock, so the next one asks again; a wrong credential
//! is refused and locks again; the credential is stored only as an Argon2id hash; roles
//! without a credential work as before.

mod common;

use cfdi::secret::Secret;
use common::*;
use outbox::model::InvoiceRef;
use outbox::role_credentials::UNLOCK_TTL;
use outbox::{Actor, Clock, OutboxError, Role};

fn contador() -> Actor {
    Actor::new("carlos", Role::Contador, "test")
}

fn is_locked(e: &OutboxError) -> bool {
    matches!(e, OutboxError::RoleLocked { role: "contador", .. })
}

async fn a_contador_with_a_credential_acts_only_while_unlocked(backend: Backend) {
    let e = env(backend).await;
    let rec = e.outbox.record_sale_json(ingreso("v-1").as_bytes(), None, &staff()).await.unwrap();
    let invoice = InvoiceRef::Id(rec.invoice_id);
    // No credential yet: the declared role acts (the strategy may still refuse the action).
    let before = e.outbox.verify_absent(&invoice, 1, "sin credencial", &contador()).await;
    assert!(!before.as_ref().is_err_and(is_locked), "{before:?}");

    let pin = Secret::new("482913");
    assert!(
        e.outbox.set_role_credential(Role::Contador, &pin, &admin()).await.is_err(),
        "soporte cannot set the contador's"
    );
    let short = e.outbox.set_role_credential(Role::Contador, &Secret::new("123"), &contador()).await;
    assert!(matches!(short, Err(OutboxError::Invalid(_))), "{short:?}");
    e.outbox.set_role_credential(Role::Contador, &pin, &contador()).await.unwrap();
    assert!(e.outbox.role_has_credential(Role::Contador).await.unwrap());
    let stored: String = sqlx::query_scalar("SELECT value FROM settings WHERE key = 'roles.credenciales'")
        .fetch_one(e.pool())
        .await
        .unwrap();
    assert!(stored.contains("$argon2id$") && !stored.contains("482913"), "{stored}");

    // Locked: refused before the strategy is asked, and for the import and decisions too.
    let locked = e.outbox.verify_absent(&invoice, 1, "bloqueado", &contador()).await.unwrap_err();
    assert!(is_locked(&locked), "{locked:?}");
    let import = e
        .outbox
        .import_cfdis(&[], outbox::reconciliation::SaleIdField::None, &contador())
        .await
        .unwrap_err();
    assert!(is_locked(&import), "{import:?}");
    // Other roles are not affected.
    let soporte = e.outbox.retry(&invoice, &admin()).await;
    assert!(
        !soporte.as_ref().is_err_and(|e| matches!(e, OutboxError::Forbidden { .. })),
        "{soporte:?}"
    );

    // A wrong credential is refused.
    let wrong = e.outbox.unlock_role(Role::Contador, &Secret::new("000000")).await.unwrap_err();
    assert!(matches!(wrong, OutboxError::Forbidden { .. }), "{wrong:?}");
    assert!(e.outbox.role_unlocked_until(Role::Contador).is_none());

    // Unlocked: the action reaches the strategy.
    let until = e.outbox.unlock_role(Role::Contador, &pin).await.unwrap();
    assert_eq!(until, e.clock.now() + UNLOCK_TTL);
    let unlocked = e.outbox.verify_absent(&invoice, 1, "desbloqueado", &contador()).await;
    assert!(!unlocked.as_ref().is_err_and(is_locked), "{unlocked:?}");

    // After the unlock's time the role asks again.
    e.clock.advance(UNLOCK_TTL + chrono::Duration::seconds(1));
    let expired = e.outbox.verify_absent(&invoice, 1, "vencido", &contador()).await.unwrap_err();
    assert!(is_locked(&expired), "{expired:?}");

    // A wrong credential after a good one locks again.
    e.outbox.unlock_role(Role::Contador, &pin).await.unwrap();
    assert!(e.outbox.unlock_role(Role::Contador, &Secret::new("999999")).await.is_err());
    assert!(e.outbox.role_unlocked_until(Role::Contador).is_none());

    // Changing it takes the current one.
    let change = e
        .outbox
        .set_role_credential(Role::Contador, &Secret::new("nuevo-7781"), &contador())
        .await
        .unwrap_err();
    assert!(is_locked(&change), "{change:?}");
    e.outbox.unlock_role(Role::Contador, &pin).await.unwrap();
    e.outbox
        .set_role_credential(Role::Contador, &Secret::new("nuevo-7781"), &contador())
        .await
        .unwrap();
    assert!(
        e.outbox.unlock_role(Role::Contador, &pin).await.is_err(),
        "the old one no longer works"
    );
    e.outbox.unlock_role(Role::Contador, &Secret::new("nuevo-7781")).await.unwrap();
}

async fn a_refusal_for_the_role_is_written_on_the_invoice_timeline(backend: Backend) {
    let e = env(backend).await;
    let rec = e.outbox.record_sale_json(ingreso("v-2").as_bytes(), None, &staff()).await.unwrap();
    let invoice = InvoiceRef::Id(rec.invoice_id);
    let forbidden = |d: &outbox::model::InvoiceDetail, why: &str| {
        d.timeline
            .iter()
            .filter(|t| t.kind == "action_forbidden" && t.detail["reason"] == why)
            .count()
    };
    // Soporte calling the contador's forced failover directly (the UI hides the button).
    let r = e.outbox.force_failover(&invoice, "respaldo", "a escondidas", &admin()).await;
    assert!(matches!(r, Err(OutboxError::Forbidden { .. })), "{r:?}");
    let d = e.outbox.invoice(&invoice).await.unwrap();
    assert_eq!(forbidden(&d, "rol"), 1, "{:#?}", d.timeline);
    let entry = d.timeline.iter().find(|t| t.kind == "action_forbidden").unwrap();
    assert_eq!(entry.detail["role"], "soporte");
    assert_eq!(entry.detail["action"], "force_failover");

    // The contador, locked: refused and written too; nothing else changed.
    e.outbox
        .set_role_credential(Role::Contador, &Secret::new("482913"), &contador())
        .await
        .unwrap();
    let r = e.outbox.verify_absent(&invoice, 1, "bloqueado", &contador()).await;
    assert!(r.as_ref().is_err_and(is_locked), "{r:?}");
    let after = e.outbox.invoice(&invoice).await.unwrap();
    assert_eq!(forbidden(&after, "bloqueado"), 1);
    assert_eq!(after.evidence.len(), d.evidence.len(), "a refusal is not evidence");
    assert_eq!(after.invoice.badge, d.invoice.badge);
}

async fn every_risky_action_asks_for_the_credential_again(backend: Backend) {
    let e = env(backend).await;
    let rec = e.outbox.record_sale_json(ingreso("v-3").as_bytes(), None, &staff()).await.unwrap();
    let invoice = InvoiceRef::Id(rec.invoice_id);
    let pin = Secret::new("482913");
    e.outbox.set_role_credential(Role::Contador, &pin, &contador()).await.unwrap();
    let carlos = contador();
    let import = || e.outbox.import_cfdis(&[], outbox::reconciliation::SaleIdField::None, &carlos);

    // One unlock, one risky action: the second import asks again within the 15 minutes.
    e.outbox.unlock_role(Role::Contador, &pin).await.unwrap();
    import().await.expect("the first risky action after the unlock");
    assert!(e.outbox.role_unlocked_until(Role::Contador).is_none(), "the unlock was spent");
    let again = import().await.unwrap_err();
    assert!(is_locked(&again), "{again:?}");

    // An action the strategy refuses spends nothing: a fresh invoice has no open question to
    // verify, so the unlock is still there for the import after it.
    e.outbox.unlock_role(Role::Contador, &pin).await.unwrap();
    let refused = e
        .outbox
        .verify_absent(&invoice, 1, "nada que verificar", &contador())
        .await
        .unwrap_err();
    assert!(matches!(refused, OutboxError::ActionRefused { .. }), "{refused:?}");
    assert!(e.outbox.role_unlocked_until(Role::Contador).is_some());
    import().await.expect("the unlock survived the refused action");

    // Two risky calls racing on one unlock: exactly one goes through.
    e.outbox.unlock_role(Role::Contador, &pin).await.unwrap();
    let (a, b) = tokio::join!(import(), import());
    assert_eq!(
        [&a, &b].iter().filter(|r| r.is_ok()).count(),
        1,
        "one unlock, one risky action: {a:?} {b:?}"
    );
    assert!([&a, &b].iter().any(|r| r.as_ref().is_err_and(is_locked)));

    // An ordinary action of a role with a credential only needs the unlock to be live.
    e.outbox
        .set_role_credential(Role::Soporte, &Secret::new("soporte-55"), &admin())
        .await
        .unwrap();
    e.outbox.unlock_role(Role::Soporte, &Secret::new("soporte-55")).await.unwrap();
    for _ in 0..2 {
        let r = e.outbox.retry(&invoice, &admin()).await;
        assert!(!r.as_ref().is_err_and(|e| matches!(e, OutboxError::RoleLocked { .. })), "{r:?}");
    }
    assert!(e.outbox.role_unlocked_until(Role::Soporte).is_some());
}

crate::conformance!(
    every_risky_action_asks_for_the_credential_again,
    a_contador_with_a_credential_acts_only_while_unlocked,
    a_refusal_for_the_role_is_written_on_the_invoice_timeline,
);
