//! E-mail to the customer against a tiny SMTP server this test starts: the message carries the
//! XML and the PDF, one request id sends once, and a worker that dies after the server accepted
//! (its record lost) leads to a resend of the *same* message (same Message-ID and
//! X-Timbra-Send-Id) — the documented at-least-once rule — never to a third copy.

mod common;

use std::sync::{Arc, Mutex};

use common::{contador, Backend, World};
use outbox::email::{deliver_due_emails, EmailSettings, MailOutcome, Mailer, OutgoingEmail, TlsMode};
use outbox::model::InvoiceRef;
use outbox::webhooks::RetryPolicy;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Every message the server accepted (the DATA, as received).
#[derive(Clone, Default)]
struct Inbox(Arc<Mutex<Vec<String>>>);

impl Inbox {
    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// A minimal SMTP server: greets, says 250 to everything, 354 to DATA, keeps the message.
async fn smtp_server() -> (u16, Inbox) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let inbox = Inbox::default();
    let kept = inbox.clone();
    tokio::spawn(async move {
        loop {
            let Ok((sock, _)) = listener.accept().await else { return };
            let kept = kept.clone();
            tokio::spawn(async move {
                let (r, mut w) = sock.into_split();
                let mut lines = BufReader::new(r);
                let _ = w.write_all(b"220 prueba ESMTP\r\n").await;
                let mut line = String::new();
                loop {
                    line.clear();
                    if lines.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let cmd = line.trim_end().to_ascii_uppercase();
                    if cmd.starts_with("EHLO") || cmd.starts_with("HELO") {
                        let _ = w.write_all(b"250-prueba\r\n250 8BITMIME\r\n").await;
                    } else if cmd == "DATA" {
                        let _ = w.write_all(b"354 adelante\r\n").await;
                        let mut data = String::new();
                        loop {
                            line.clear();
                            if lines.read_line(&mut line).await.unwrap_or(0) == 0 {
                                return;
                            }
                            if line == ".\r\n" {
                                break;
                            }
                            data.push_str(&line);
                        }
                        kept.0.lock().unwrap().push(data);
                        let _ = w.write_all(b"250 2.0.0 recibido\r\n").await;
                    } else if cmd == "QUIT" {
                        let _ = w.write_all(b"221 adios\r\n").await;
                        return;
                    } else {
                        let _ = w.write_all(b"250 ok\r\n").await;
                    }
                }
            });
        }
    });
    (port, inbox)
}

async fn stamped_with_email(backend: Backend, port: u16) -> (World, i64, String) {
    let w = World::new(backend).await;
    w.outbox
        .set_email_settings(
            &EmailSettings {
                host: "127.0.0.1".into(),
                port,
                tls: TlsMode::None,
                user: None,
                password_env: None,
                from: "facturas@escuela-kemper.mx".into(),
                from_name: Some("Escuela Kemper Urgate".into()),
                auto_send: false,
                contacts: Default::default(),
            },
            &contador(),
        )
        .await
        .unwrap();
    let id = w.record("correo-1").await;
    w.stamp_pending().await;
    let (uuid, _) = w.outbox.stamped_xml(&InvoiceRef::Id(id)).await.unwrap();
    (w, id, uuid)
}

fn header<'a>(message: &'a str, name: &str) -> Option<&'a str> {
    message
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with(&format!("{}:", name.to_ascii_lowercase())))
        .map(|l| l[name.len() + 1..].trim())
}

async fn pass(w: &World, mailer: &dyn Mailer) -> outbox::email::EmailReport {
    deliver_due_emails(
        &w.outbox,
        mailer,
        &w.secrets,
        &services::documents::render_pdf_text,
        &RetryPolicy::default(),
        "w",
        10,
    )
    .await
    .unwrap()
}

async fn the_customer_gets_the_xml_and_the_pdf_once_per_request(backend: Backend) {
    let (port, inbox) = smtp_server().await;
    let (w, id, uuid) = stamped_with_email(backend, port).await;
    let to = vec!["compras@ure.mx".to_string(), "conta@ure.mx".to_string()];
    let (send, created) = w
        .outbox
        .request_email(&InvoiceRef::Id(id), &to, Some("req-1"), &contador())
        .await
        .unwrap();
    assert!(created);
    let report = pass(&w, &api::mailer::SmtpMailer::default()).await;
    assert_eq!(report.sent, 1);
    let all = inbox.all();
    assert_eq!(all.len(), 1);
    let m = &all[0];
    assert!(m.contains(&format!("\"{uuid}.xml\"")), "{m}");
    assert!(m.contains(&format!("\"{uuid}.pdf\"")));
    assert!(m.contains("application/pdf") && m.contains("application/xml"));
    assert_eq!(header(m, "Message-ID"), Some(format!("<{}>", send.message_id).as_str()));
    assert_eq!(header(m, "X-Timbra-Send-Id"), Some("req-1"));
    assert!(header(m, "To").is_some_and(|t| t.contains("compras@ure.mx") && t.contains("conta@ure.mx")));

    // The same request again: the same send, nothing new goes out.
    let (again, created) = w
        .outbox
        .request_email(&InvoiceRef::Id(id), &to, Some("req-1"), &contador())
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(again.id, send.id);
    assert_eq!(again.status, "sent");
    pass(&w, &api::mailer::SmtpMailer::default()).await;
    assert_eq!(inbox.all().len(), 1);

    // Each attempt and the server's answer are recorded, and on the invoice's timeline.
    let attempts = w.outbox.email_attempts("req-1").await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!((attempts[0].outcome.as_deref(), attempts[0].smtp_code), (Some("sent"), Some(250)));
    assert!(attempts[0].smtp_reply.as_deref().unwrap_or("").contains("recibido"));
    let detail = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    let kinds: Vec<&str> = detail.timeline.iter().map(|t| t.kind.as_str()).collect();
    assert!(kinds.contains(&"email_requested") && kinds.contains(&"email_attempt"), "{kinds:?}");
}

/// Sends through SMTP, then never returns: the process died before recording the answer.
struct DiesAfterAccepted {
    inner: api::mailer::SmtpMailer,
    sent: tokio::sync::mpsc::UnboundedSender<()>,
}

impl Mailer for DiesAfterAccepted {
    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> std::pin::Pin<Box<dyn std::future::Future<Output = MailOutcome> + Send + 'a>> {
        Box::pin(async move {
            let outcome = self.inner.send(email).await;
            assert!(matches!(outcome, MailOutcome::Sent { .. }), "{outcome:?}");
            let _ = self.sent.send(());
            std::future::pending().await
        })
    }
}

async fn a_crash_after_the_server_accepted_resends_the_same_message_once(backend: Backend) {
    let (port, inbox) = smtp_server().await;
    let (w, id, _) = stamped_with_email(backend, port).await;
    w.outbox
        .request_email(&InvoiceRef::Id(id), &["compras@ure.mx".into()], Some("req-crash"), &contador())
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let dying = DiesAfterAccepted {
        inner: api::mailer::SmtpMailer::default(),
        sent: tx,
    };
    let (outbox, secrets) = (w.outbox.clone(), w.secrets.clone());
    let task = tokio::spawn(async move {
        deliver_due_emails(
            &outbox,
            &dying,
            &secrets,
            &services::documents::render_pdf_text,
            &RetryPolicy::default(),
            "muere",
            10,
        )
        .await
    });
    rx.recv().await.unwrap();
    task.abort();
    assert_eq!(inbox.all().len(), 1, "the server accepted it; Timbra never recorded that");

    // Before the lease expires nobody sends it again.
    pass(&w, &api::mailer::SmtpMailer::default()).await;
    assert_eq!(inbox.all().len(), 1);
    w.clock.advance(RetryPolicy::default().lease + chrono::Duration::seconds(1));
    let report = pass(&w, &api::mailer::SmtpMailer::default()).await;
    assert_eq!(report.sent, 1);
    let all = inbox.all();
    assert_eq!(all.len(), 2, "at least once: one resend");
    assert_eq!(header(&all[0], "Message-ID"), header(&all[1], "Message-ID"), "the same message");
    assert_eq!(header(&all[1], "X-Timbra-Send-Id"), Some("req-crash"));
    let attempts = w.outbox.email_attempts("req-crash").await.unwrap();
    assert_eq!(attempts.len(), 2);
    assert!(attempts[0].finished_at.is_none(), "the first answer was lost: an unknown outcome");
    assert_eq!(attempts[1].outcome.as_deref(), Some("sent"));
    let detail = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    let resend = detail
        .timeline
        .iter()
        .find(|t| t.kind == "email_attempt")
        .map(|t| t.detail["after_unknown"].clone());
    assert_eq!(
        resend,
        Some(serde_json::json!(true)),
        "the timeline says it was a resend after an unknown outcome"
    );
    // Sent is final.
    w.clock.advance(chrono::Duration::hours(1));
    pass(&w, &api::mailer::SmtpMailer::default()).await;
    assert_eq!(inbox.all().len(), 2);
}

async fn bad_recipients_and_unstamped_invoices_are_refused_before_anything_is_queued(backend: Backend) {
    let (port, _inbox) = smtp_server().await;
    let (w, id, _) = stamped_with_email(backend, port).await;
    let e = w
        .outbox
        .request_email(&InvoiceRef::Id(id), &["no-es-correo".into()], None, &contador())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "validation");
    let pending = w.record("sin-timbrar").await;
    let e = w
        .outbox
        .request_email(&InvoiceRef::Id(pending), &["a@b.mx".into()], None, &contador())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "not_found");
    assert!(w.outbox.email_sends(None, 10).await.unwrap().is_empty());
}

async fn automatic_send_on_stamping_goes_to_the_receptors_contacts(backend: Backend) {
    let (port, inbox) = smtp_server().await;
    let w = World::new(backend).await;
    let mut contacts = std::collections::BTreeMap::new();
    contacts.insert("URE180429TM6".to_string(), vec!["facturas@ure.mx".to_string()]);
    w.outbox
        .set_email_settings(
            &EmailSettings {
                host: "127.0.0.1".into(),
                port,
                tls: TlsMode::None,
                user: None,
                password_env: None,
                from: "facturas@escuela-kemper.mx".into(),
                from_name: None,
                auto_send: true,
                contacts,
            },
            &contador(),
        )
        .await
        .unwrap();
    let id = w.record("auto-1").await;
    w.stamp_pending().await;
    let sends = w.outbox.email_sends(Some(&InvoiceRef::Id(id)), 10).await.unwrap();
    assert_eq!(sends.len(), 1, "queued with the stamping verdict");
    assert_eq!(sends[0].origin, "auto");
    pass(&w, &api::mailer::SmtpMailer::default()).await;
    assert_eq!(inbox.all().len(), 1);
}

crate::conformance!(
    bad_recipients_and_unstamped_invoices_are_refused_before_anything_is_queued,
    a_crash_after_the_server_accepted_resends_the_same_message_once,
    the_customer_gets_the_xml_and_the_pdf_once_per_request,
    automatic_send_on_stamping_goes_to_the_receptors_contacts,
);
