//! Roles authenticated, not declared: nobody acts as contador until the contador has a
//! credential, and the first one takes the emisor's CSD key password as proof of authority
//! (never a role picker); changing it takes the current one or that proof. Once set, a
//! contador-only action needs the role unlocked with it; the unlock expires after 15 minutes
//! (the test clock moves); each risky action spends the unlock, so the next one asks again; a
//! wrong credential is refused and locks again; the credential is stored only as an Argon2id
//! hash; two processes changing it at once cannot both win with a stale proof; a new emisor RFC
//! forgets the credentials set under the old one.

mod common;

use cfdi::secret::Secret;
use common::*;
use outbox::model::InvoiceRef;
use outbox::role_credentials::{RoleProof, UNLOCK_TTL};
use outbox::{Actor, Clock, OutboxError, Role};

fn contador() -> Actor {
    Actor::new("carlos", Role::Contador, "test")
}

fn is_locked(e: &OutboxError) -> bool {
    matches!(e, OutboxError::RoleLocked { role: "contador", .. })
}

fn no_pin(e: &OutboxError) -> bool {
    matches!(e, OutboxError::ContadorPinMissing { .. }) && e.code() == "contador_pin_missing"
}

const CSD: &str = "12345678a";

async fn stored_credentials(e: &Env) -> Option<String> {
    sqlx::query_scalar("SELECT value FROM settings WHERE key = 'roles.credenciales'")
        .fetch_optional(e.pool())
        .await
        .unwrap()
}

async fn nobody_acts_as_contador_until_the_pin_is_set_with_the_csd_password(backend: Backend) {
    let e = env(backend).await;
    let rec = e.outbox.record_sale_json(ingreso("v-0").as_bytes(), None, &staff()).await.unwrap();
    let invoice = InvoiceRef::Id(rec.invoice_id);

    // No credential: a declared contador is refused before the strategy is asked — a risky
    // action, a decision, the import, and the unlock itself — and the try is written on the
    // invoice's timeline.
    let verify = e.outbox.verify_absent(&invoice, 1, "sin PIN", &contador()).await.unwrap_err();
    assert!(no_pin(&verify), "{verify:?}");
    let force = e
        .outbox
        .force_failover(&invoice, "respaldo", "sin PIN", &contador())
        .await
        .unwrap_err();
    assert!(no_pin(&force), "{force:?}");
    let import = e
        .outbox
        .import_cfdis(&[], outbox::reconciliation::SaleIdField::None, &contador())
        .await
        .unwrap_err();
    assert!(no_pin(&import), "{import:?}");
    let unlock = e.outbox.unlock_role(Role::Contador, &Secret::new("482913")).await.unwrap_err();
    assert!(no_pin(&unlock), "{unlock:?}");
    let d = e.outbox.invoice(&invoice).await.unwrap();
    let refused: Vec<_> = d.timeline.iter().filter(|t| t.kind == "action_forbidden").collect();
    assert_eq!(refused.len(), 2, "{:#?}", d.timeline);
    assert!(refused
        .iter()
        .all(|t| t.detail["reason"] == "sin_pin" && t.detail["role"] == "contador"));
    // Other roles are not affected.
    let soporte = e.outbox.retry(&invoice, &admin()).await;
    assert!(
        !soporte
            .as_ref()
            .is_err_and(|e| matches!(e, OutboxError::Forbidden { .. } | OutboxError::ContadorPinMissing { .. })),
        "{soporte:?}"
    );

    // Picking the role proves nothing: without a credential to change, the "current
    // credential" proof has nothing to match; a wrong CSD password is refused; nothing is
    // written by either.
    let pin = Secret::new("482913");
    let none = e
        .outbox
        .set_role_credential(Role::Contador, &pin, RoleProof::CurrentCredential(&pin), &contador())
        .await
        .unwrap_err();
    assert!(
        matches!(&none, OutboxError::Invalid(v) if v.0[0].code == "sin_credencial"),
        "{none:?}"
    );
    let wrong = e
        .outbox
        .set_role_credential(Role::Contador, &pin, RoleProof::CsdPassword(&Secret::new("adivinada")), &contador())
        .await
        .unwrap_err();
    assert!(matches!(wrong, OutboxError::Forbidden { .. }), "{wrong:?}");
    let short = e
        .outbox
        .set_role_credential(
            Role::Contador,
            &Secret::new("123"),
            RoleProof::CsdPassword(&Secret::new(CSD)),
            &staff(),
        )
        .await;
    assert!(matches!(short, Err(OutboxError::Invalid(_))), "{short:?}");
    assert_eq!(stored_credentials(&e).await, None, "nothing written by a refused proof");

    // The CSD password is the proof; whoever holds it may set it (personal here), and that
    // person is recorded with the setting.
    e.outbox
        .set_role_credential(Role::Contador, &pin, RoleProof::CsdPassword(&Secret::new(CSD)), &staff())
        .await
        .unwrap();
    let stored = stored_credentials(&e).await.unwrap();
    assert!(stored.contains("$argon2id$") && !stored.contains("482913"), "{stored}");
    let who: String = sqlx::query_scalar("SELECT actor FROM settings WHERE key = 'roles.credenciales'")
        .fetch_one(e.pool())
        .await
        .unwrap();
    assert_eq!(who, "ana");
    // Now the contador is locked, not missing a PIN; the PIN unlocks.
    let locked = e.outbox.verify_absent(&invoice, 1, "bloqueado", &contador()).await.unwrap_err();
    assert!(is_locked(&locked), "{locked:?}");
    e.outbox.unlock_role(Role::Contador, &pin).await.unwrap();
    let unlocked = e.outbox.verify_absent(&invoice, 1, "desbloqueado", &contador()).await;
    assert!(!unlocked.as_ref().is_err_and(|e| is_locked(e) || no_pin(e)), "{unlocked:?}");

    // Changing it: the current PIN, or — a forgotten PIN — the CSD password again.
    let wrong_current = e
        .outbox
        .set_role_credential(
            Role::Contador,
            &Secret::new("nuevo-7781"),
            RoleProof::CurrentCredential(&Secret::new("000000")),
            &contador(),
        )
        .await
        .unwrap_err();
    assert!(matches!(wrong_current, OutboxError::Forbidden { .. }), "{wrong_current:?}");
    e.outbox
        .set_role_credential(
            Role::Contador,
            &Secret::new("nuevo-7781"),
            RoleProof::CurrentCredential(&pin),
            &contador(),
        )
        .await
        .unwrap();
    assert!(
        e.outbox.unlock_role(Role::Contador, &pin).await.is_err(),
        "the old one no longer works"
    );
    e.outbox
        .set_role_credential(
            Role::Contador,
            &Secret::new("olvido-5521"),
            RoleProof::CsdPassword(&Secret::new(CSD)),
            &admin(),
        )
        .await
        .unwrap();
    e.outbox.unlock_role(Role::Contador, &Secret::new("olvido-5521")).await.unwrap();
}

async fn a_contador_with_a_credential_acts_only_while_unlocked(backend: Backend) {
    let e = env(backend).await;
    let rec = e.outbox.record_sale_json(ingreso("v-1").as_bytes(), None, &staff()).await.unwrap();
    let invoice = InvoiceRef::Id(rec.invoice_id);
    let pin = Secret::new("482913");
    e.outbox
        .set_role_credential(Role::Contador, &pin, RoleProof::CsdPassword(&password()), &admin())
        .await
        .unwrap();

    // Locked: refused before the strategy is asked, and for the import and decisions too.
    let locked = e.outbox.verify_absent(&invoice, 1, "bloqueado", &contador()).await.unwrap_err();
    assert!(is_locked(&locked), "{locked:?}");
    let import = e
        .outbox
        .import_cfdis(&[], outbox::reconciliation::SaleIdField::None, &contador())
        .await
        .unwrap_err();
    assert!(is_locked(&import), "{import:?}");

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
        .set_role_credential(
            Role::Contador,
            &Secret::new("482913"),
            RoleProof::CsdPassword(&password()),
            &admin(),
        )
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
    e.outbox
        .set_role_credential(Role::Contador, &pin, RoleProof::CsdPassword(&password()), &admin())
        .await
        .unwrap();
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

    // A soporte credential (optional) works the same way; an ordinary action of a role with a
    // credential only needs the unlock to be live.
    let soporte_pin = Secret::new("soporte-55");
    e.outbox
        .set_role_credential(Role::Soporte, &soporte_pin, RoleProof::CsdPassword(&password()), &admin())
        .await
        .unwrap();
    let sofia = admin();
    let hand_off = || e.outbox.send_to_contador(&invoice, "revisar, por favor", &sofia);
    let locked = hand_off().await.unwrap_err();
    assert!(matches!(locked, OutboxError::RoleLocked { role: "soporte", .. }), "{locked:?}");
    e.outbox.unlock_role(Role::Soporte, &soporte_pin).await.unwrap();
    for _ in 0..2 {
        hand_off().await.expect("an ordinary action while unlocked, twice");
    }
    assert!(e.outbox.role_unlocked_until(Role::Soporte).is_some());
}

/// Two consoles change the PIN at the same moment with the same current PIN: one wins; the
/// other's proof is checked again against what the winner wrote and refused. Two setting the
/// first one with the CSD password both hold the authority: one PIN ends up stored, not a mix.
async fn two_consoles_changing_the_pin_at_once_cannot_both_win(backend: Backend) {
    let e = env(backend).await;
    let other = e.reopen().await;
    let first = Secret::new("inicial-1111");
    let second = Secret::new("inicial-2222");
    let (csd, sofia, carlos) = (password(), admin(), contador());
    let (a, b) = tokio::join!(
        e.outbox
            .set_role_credential(Role::Contador, &first, RoleProof::CsdPassword(&csd), &sofia),
        other.set_role_credential(Role::Contador, &second, RoleProof::CsdPassword(&csd), &sofia),
    );
    a.unwrap();
    b.unwrap();
    let works = [
        e.outbox.unlock_role(Role::Contador, &first).await.is_ok(),
        e.outbox.unlock_role(Role::Contador, &second).await.is_ok(),
    ];
    assert_eq!(works.iter().filter(|w| **w).count(), 1, "{works:?}");
    let mut current = if works[0] { first } else { second };

    // Each round starts from the previous winner's PIN.
    for round in 0..3 {
        let (x, y) = (Secret::new(format!("ronda{round}-aaaa")), Secret::new(format!("ronda{round}-bbbb")));
        let (a, b) = tokio::join!(
            e.outbox
                .set_role_credential(Role::Contador, &x, RoleProof::CurrentCredential(&current), &carlos),
            other.set_role_credential(Role::Contador, &y, RoleProof::CurrentCredential(&current), &carlos),
        );
        assert_eq!(
            [&a, &b].iter().filter(|r| r.is_ok()).count(),
            1,
            "round {round}: one change from one current PIN: {a:?} {b:?}"
        );
        let loser = if a.is_ok() { &b } else { &a };
        assert!(matches!(loser, Err(OutboxError::Forbidden { .. })), "{loser:?}");
        let winner = if a.is_ok() { x } else { y };
        e.outbox.unlock_role(Role::Contador, &winner).await.expect("the winner's PIN works");
        assert!(e.outbox.unlock_role(Role::Contador, &current).await.is_err());
        current = winner;
    }
}

/// Configuring an emisor of another RFC (Modo sandbox's test CSD → the business's own, or one
/// business → another) forgets the role credentials set under the old one; a renewal of the
/// same RFC keeps them.
async fn a_new_emisor_rfc_forgets_the_role_credentials(backend: Backend) {
    // XIQB891116QE4's test CSD was valid in 2021, EKU9003173C9's from 2023-05-18.
    let e = bare(backend).await;
    e.clock.set("2021-06-01T18:00:00Z".parse().unwrap());
    let xiqb = outbox::EmisorSetup {
        profile: cfdi::sale::EmisorProfile {
            rfc: "XIQB891116QE4".into(),
            nombre: "BERENICE XIMO QUEZADA".into(),
            regimen_fiscal: "612".into(),
            lugar_expedicion: "42501".into(),
        },
        cer: fixture("cfdi/certs/XIQB891116QE4.cer"),
        key: fixture("cfdi/certs/XIQB891116QE4.key"),
        password_env: "TIMBRA_CSD_PASSWORD".into(),
    };
    e.outbox.configure_emisor(&xiqb, &password(), &admin()).await.unwrap();
    let pin = Secret::new("482913");
    e.outbox
        .set_role_credential(Role::Contador, &pin, RoleProof::CsdPassword(&password()), &admin())
        .await
        .unwrap();
    e.outbox.unlock_role(Role::Contador, &pin).await.unwrap();
    // The same RFC again (a renewed CSD): kept.
    e.outbox.configure_emisor(&xiqb, &password(), &admin()).await.unwrap();
    assert!(e.outbox.role_has_credential(Role::Contador).await.unwrap());
    assert!(e.outbox.role_unlocked_until(Role::Contador).is_some());

    e.clock.set(NOW.parse().unwrap());
    e.outbox.configure_emisor(&setup(), &password(), &admin()).await.unwrap();
    assert!(!e.outbox.role_has_credential(Role::Contador).await.unwrap());
    assert!(e.outbox.role_unlocked_until(Role::Contador).is_none(), "locked in this process too");
    let refused = e.outbox.unlock_role(Role::Contador, &pin).await.unwrap_err();
    assert!(no_pin(&refused), "{refused:?}");
    // Another process on the same database sees it too.
    let other = e.reopen().await;
    assert!(!other.role_has_credential(Role::Contador).await.unwrap());
}

crate::conformance!(
    nobody_acts_as_contador_until_the_pin_is_set_with_the_csd_password,
    every_risky_action_asks_for_the_credential_again,
    a_contador_with_a_credential_acts_only_while_unlocked,
    a_refusal_for_the_role_is_written_on_the_invoice_timeline,
    two_consoles_changing_the_pin_at_once_cannot_both_win,
    a_new_emisor_rfc_forgets_the_role_credentials,
);
