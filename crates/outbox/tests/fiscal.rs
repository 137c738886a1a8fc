//! The fiscal workflows of a month, end to end against the PAC simulator in process: invoices
//! really stamped, payments (complemento de pago) computed from the stamped XMLs, the factura
//! global of a day's tickets, the contador's month, and the 69-B screening. Every stamped
//! payment and global CFDI is judged by SAT's own tools: `xmllint` with SAT's XSD, `xsltproc`
//! with SAT's cadena stylesheet, `openssl` for the Sello.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use cfdi::secret::Secret;
use cfdi::xml::{Document, Element};
use common::{password, setup, Backend};
use outbox::drain::{Backoff, Drain, DrainConfig, NoSink, RunMode};
use outbox::model::{InvoiceRef, InvoiceState, ListFilter};
use outbox::pacs::{build_pac_set, PacConfig, PacRole, SecretSource};
use outbox::payments::{PaymentRequest, PaymentStatus, PaymentTarget};
use outbox::strategy::Policy;
use outbox::{Actor, Clock, Outbox, OutboxError, Role};
use pac::PacKind;
use pac_sim::{Faults, Flavor, SimConfig, SimHandle};
use rust_decimal::Decimal;

struct SimSecrets;

impl SecretSource for SimSecrets {
    fn get(&self, name: &str) -> Option<Secret> {
        (name == "SIM_TOKEN").then(|| Secret::new("sim-token-infinito"))
    }
}

struct World {
    _db: common::TestDb,
    clock: Arc<outbox::RunningClock>,
    outbox: Arc<Outbox>,
    _sim: SimHandle,
    drain: Arc<Drain>,
}

fn ana() -> Actor {
    Actor::new("ana", Role::Personal, "test")
}

/// The contador, unlocked on `outbox` for one action (its PIN set first, with the CSD
/// password as proof).
async fn contador(outbox: &outbox::Outbox) -> Actor {
    common::unlocked_contador(outbox).await
}

fn dec(s: &str) -> Decimal {
    s.parse().unwrap()
}

async fn world(backend: Backend) -> World {
    let clock = CLOCK.clone();
    let db = common::TestDb::new(backend).await;
    let outbox = Arc::new(db.open(clock.clone()).await.unwrap());
    outbox
        .configure_emisor(&setup(), &password(), &Actor::system("test"))
        .await
        .unwrap();
    outbox.provide_csd_password(password());
    let mut cfg = SimConfig::new(Flavor::Sw);
    cfg.faults = Faults::parse("stamped_lag_ms=0,no_xml_307=0").unwrap();
    let sim = pac_sim::start_with_clock(cfg, common::sim_clock(&clock)).await.unwrap();
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
        timeout_ms: Some(5000),
        sandbox: false,
    };
    outbox.add_pac(config, false, &Actor::system("test")).await.unwrap();
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
            concurrency: 4,
            lease: chrono::Duration::seconds(30),
            poll: StdDuration::from_millis(20),
            grace: StdDuration::from_secs(2),
            backoff: Backoff {
                base: chrono::Duration::milliseconds(30),
                cap: chrono::Duration::milliseconds(200),
            },
            policy: Policy::default(),
        },
        Arc::new(NoSink),
    ));
    World {
        _db: db,
        clock,
        outbox,
        _sim: sim,
        drain,
    }
}

impl World {
    async fn drain(&self) {
        let run = self.drain.run(
            std::future::pending::<()>(),
            RunMode::UntilIdle {
                horizon: StdDuration::from_secs(1),
            },
        );
        tokio::time::timeout(StdDuration::from_secs(60), run)
            .await
            .expect("drain finishes")
            .unwrap();
    }

    async fn record(&self, json: &str) -> i64 {
        self.outbox
            .record_sale_json(json.as_bytes(), None, &ana())
            .await
            .unwrap_or_else(|e| panic!("{e}\n{json}"))
            .invoice_id
    }

    /// The stamped XML of invoice `id`.
    async fn xml(&self, id: i64) -> Vec<u8> {
        let d = self.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
        assert_eq!(
            d.invoice.state,
            InvoiceState::Stamped,
            "{} {:?} {:?}",
            d.invoice.sale_id,
            d.invoice.badge,
            d.invoice.state_reason
        );
        self.outbox
            .cfdi_xml(d.invoice.uuid.as_deref().unwrap())
            .await
            .unwrap()
            .expect("stamped XML stored")
    }

    async fn uuid(&self, id: i64) -> String {
        self.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap().invoice.uuid.unwrap()
    }

    async fn cancel(&self, id: i64) {
        let uuid = self.uuid(id).await;
        sqlx::query("UPDATE cfdis SET cancellation_status = $1 WHERE uuid = $2")
            .bind(outbox::payments::CANCELLED.as_str())
            .bind(uuid)
            .execute(&self._db.raw)
            .await
            .unwrap();
    }

    async fn count(&self, table: &str) -> i64 {
        sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(&self._db.raw)
            .await
            .unwrap()
    }

    async fn ppd_open(&self) -> Vec<String> {
        let page = self
            .outbox
            .list_invoices(&ListFilter {
                ppd_con_saldo: true,
                ..Default::default()
            })
            .await
            .unwrap();
        page.items.into_iter().map(|i| i.sale_id).collect()
    }
}

/// The clock of every world here: it runs from a date inside the test CSD's validity, never
/// today's (so the sales' dates below stay inside it whatever the system date).
static CLOCK: std::sync::LazyLock<Arc<outbox::RunningClock>> = std::sync::LazyLock::new(common::running_clock);

/// Now at LugarExpedicion 42501 (UTC-6), as the sales' occurred_at.
fn local_now() -> String {
    (CLOCK.now() - chrono::Duration::hours(6) - chrono::Duration::minutes(5))
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string()
}

const URE: &str =
    r#"{"rfc":"URE180429TM6","nombre":"UNIVERSIDAD ROBOTICA ESPAÑOLA","domicilio_fiscal":"86991","regimen_fiscal":"601","uso_cfdi":"G03"}"#;
const KIJ: &str =
    r#"{"rfc":"KIJ0906199R1","nombre":"KERNEL INDUSTIA JUGUETERA","domicilio_fiscal":"60954","regimen_fiscal":"601","uso_cfdi":"G03"}"#;

fn tax(tasa: Option<&str>) -> String {
    match tasa {
        Some(t) => format!(r#""objeto_imp":"02","traslados":[{{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"{t}"}}]"#),
        None => r#""objeto_imp":"02","traslados":[{"impuesto":"002","tipo_factor":"Exento"}]"#.to_string(),
    }
}

/// An ingreso of one concepto worth `valor`, `metodo` PUE or PPD.
fn ingreso(sale_id: &str, receptor: &str, valor: &str, taxes: &str, metodo: &str, moneda: &str) -> String {
    let forma = if metodo == "PPD" { "99" } else { "03" };
    let tc = if moneda == "MXN" {
        String::new()
    } else {
        r#","tipo_cambio":"17.250000""#.to_string()
    };
    format!(
        r#"{{"sale_id":"{sale_id}","kind":"ingreso","occurred_at":"{}","forma_pago":"{forma}","metodo_pago":"{metodo}","moneda":"{moneda}"{tc},
 "receptor":{receptor},
 "conceptos":[{{"clave_prod_serv":"84111506","cantidad":"1","clave_unidad":"E48","descripcion":"Licencia","valor_unitario":"{valor}",{taxes}}}]}}"#,
        local_now()
    )
}

fn ticket(sale_id: &str, valor: &str, forma: &str) -> String {
    format!(
        r#"{{"sale_id":"{sale_id}","kind":"ingreso","ticket":true,"occurred_at":"{}","forma_pago":"{forma}",
 "conceptos":[{{"clave_prod_serv":"01010101","cantidad":"2","clave_unidad":"H87","descripcion":"Taco","valor_unitario":"{valor}",{}}}]}}"#,
        local_now(),
        tax(Some("0.160000"))
    )
}

fn payment(invoices: &[i64], amount: &str) -> PaymentRequest {
    PaymentRequest {
        sale_id: None,
        invoices: invoices
            .iter()
            .map(|i| PaymentTarget {
                invoice: InvoiceRef::Id(*i),
                amount: None,
                equivalencia: None,
            })
            .collect(),
        amount: dec(amount),
        forma_pago: "03".into(),
        fecha_pago: chrono::NaiveDateTime::parse_from_str(&local_now(), "%Y-%m-%dT%H:%M:%S").unwrap() - chrono::Duration::minutes(1),
        moneda: None,
        tipo_cambio: None,
        num_operacion: Some("SPEI-1".into()),
        serie: None,
        folio: None,
    }
}

// The oracle: SAT's XSD, SAT's cadena XSLT, openssl ------------------------------------------

fn sat() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../cfdi/sat")
}

fn tool(name: &str) -> Command {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "falta la herramienta {name}: `make test` la instala (apt-get install xsltproc libxml2-utils openssl)"
    );
    Command::new(name)
}

/// The stamped XML validates against SAT's XSD (CFDI 4.0 + TFD 1.1 + Pagos 2.0), its cadena is
/// what SAT's stylesheet says, and its Sello verifies with its own certificate.
fn oracle(xml: &[u8], what: &str) {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cfdi.xml");
    std::fs::write(&path, xml).unwrap();
    let out = tool("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(sat().join("cfdi40-with-complements.xsd"))
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{what}: xmllint: {}", String::from_utf8_lossy(&out.stderr));
    let out = tool("xsltproc")
        .arg(sat().join("sitio_internet/cfd/4/cadenaoriginal_4_0/cadenaoriginal_4_0.xslt"))
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{what}: xsltproc");
    let sat_cadena = String::from_utf8(out.stdout).unwrap();
    let doc = Document::parse(xml).unwrap();
    assert_eq!(cfdi::cadena::cadena_original(&doc).unwrap(), sat_cadena, "{what}: cadena");
    let b64 = base64::engine::general_purpose::STANDARD;
    std::fs::write(
        dir.path().join("cert.der"),
        b64.decode(doc.root.attr("Certificado").unwrap()).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.path().join("sig.bin"), b64.decode(doc.root.attr("Sello").unwrap()).unwrap()).unwrap();
    std::fs::write(dir.path().join("cadena.txt"), &sat_cadena).unwrap();
    let out = tool("openssl")
        .args(["x509", "-inform", "DER", "-noout", "-pubkey", "-in"])
        .arg(dir.path().join("cert.der"))
        .output()
        .unwrap();
    std::fs::write(dir.path().join("pub.pem"), out.stdout).unwrap();
    let out = tool("openssl")
        .args(["dgst", "-sha256", "-verify"])
        .arg(dir.path().join("pub.pem"))
        .arg("-signature")
        .arg(dir.path().join("sig.bin"))
        .arg(dir.path().join("cadena.txt"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{what}: openssl: {}", String::from_utf8_lossy(&out.stdout));
}

/// Elements named `local` anywhere under `e` (an independent walk, by local name).
fn all<'a>(e: &'a Element, local: &str) -> Vec<&'a Element> {
    e.descendants().into_iter().filter(|x| x.local == local).collect()
}

fn attr(e: &Element, name: &str) -> Decimal {
    dec(e.attr(name).unwrap_or_else(|| panic!("{name} en {}", e.local)))
}

// Payments -----------------------------------------------------------------------------------

async fn ppd_invoice_paid_in_two_parts_then_a_payment_cancelled(backend: Backend) {
    let w = world(backend).await;
    let inv = w
        .record(&ingreso("pedido-100", URE, "1000.00", &tax(Some("0.160000")), "PPD", "MXN"))
        .await;
    let pue = w
        .record(&ingreso("pedido-101", URE, "100.00", &tax(Some("0.160000")), "PUE", "MXN"))
        .await;
    // Not stamped yet: no payment.
    let e = w.outbox.record_payment(&payment(&[inv], "500"), &ana()).await.unwrap_err();
    assert!(matches!(&e, OutboxError::Invalid(v) if v.0[0].code == "no_timbrada"), "{e}");
    w.drain().await;
    assert_eq!(w.ppd_open().await, vec!["pedido-100"]);
    let b = w.outbox.invoice_balance(&InvoiceRef::Id(inv)).await.unwrap();
    assert_eq!(
        (b.total, b.paid, b.balance, b.next_parcialidad),
        (dec("1160.00"), dec("0.00"), dec("1160.00"), 1)
    );

    // Only PPD invoices receive payments; a payment above the balance writes nothing.
    let e = w.outbox.record_payment(&payment(&[pue], "116"), &ana()).await.unwrap_err();
    assert!(matches!(&e, OutboxError::Invalid(v) if v.0[0].code == "no_ppd"), "{e}");
    let before = w.count("sales").await;
    let e = w.outbox.record_payment(&payment(&[inv], "2000"), &ana()).await.unwrap_err();
    let OutboxError::Invalid(v) = &e else { panic!("{e}") };
    assert_eq!((v.0[0].field.as_str(), v.0[0].code), ("amount", "excede_saldo"), "{e}");
    assert!(v.0[0].message.contains("2000") && v.0[0].message.contains("1160.00"), "{e}");
    assert_eq!(w.count("sales").await, before, "nothing written");

    let p1 = w.outbox.record_payment(&payment(&[inv], "500"), &ana()).await.unwrap();
    assert_eq!(p1.recorded.sale_id, "pago-pedido-100-1");
    // Recorded, not stamped: the next payment waits for it.
    let e = w.outbox.record_payment(&payment(&[inv], "660"), &ana()).await.unwrap_err();
    assert!(matches!(&e, OutboxError::Invalid(v) if v.0[0].code == "pago_pendiente"), "{e}");
    w.drain().await;
    let mut p2_req = payment(&[inv], "660");
    p2_req.fecha_pago += chrono::Duration::seconds(30);
    let p2 = w.outbox.record_payment(&p2_req, &ana()).await.unwrap();
    w.drain().await;

    let b = w.outbox.invoice_balance(&InvoiceRef::Id(inv)).await.unwrap();
    assert_eq!((b.paid, b.balance, b.next_parcialidad), (dec("1160.00"), dec("0.00"), 3));
    assert!(b.payments.iter().all(|p| p.status == PaymentStatus::Timbrado));
    assert!(w.ppd_open().await.is_empty());

    // Each payment CFDI: parcialidad and saldos, prorated taxes, SAT's oracle.
    let invoice_uuid = w.uuid(inv).await;
    for (id, parcialidad, ant, pagado, insoluto, base, iva) in [
        (p1.recorded.invoice_id, "1", "1160.00", "500.00", "660.00", "431.03", "68.96"),
        (p2.recorded.invoice_id, "2", "660.00", "660.00", "0.00", "568.97", "91.04"),
    ] {
        let xml = w.xml(id).await;
        oracle(&xml, &format!("pago {parcialidad}"));
        let doc = Document::parse(&xml).unwrap();
        let dr = all(&doc.root, "DoctoRelacionado");
        assert_eq!(dr.len(), 1);
        assert_eq!(dr[0].attr("IdDocumento"), Some(invoice_uuid.as_str()));
        assert_eq!(dr[0].attr("NumParcialidad"), Some(parcialidad));
        assert_eq!(
            (
                attr(dr[0], "ImpSaldoAnt"),
                attr(dr[0], "ImpPagado"),
                attr(dr[0], "ImpSaldoInsoluto")
            ),
            (dec(ant), dec(pagado), dec(insoluto))
        );
        let t = all(dr[0], "TrasladoDR");
        assert_eq!(
            (attr(t[0], "BaseDR"), attr(t[0], "ImporteDR")),
            (dec(base), dec(iva)),
            "parcialidad {parcialidad}"
        );
        let totales = all(&doc.root, "Totales");
        assert_eq!(attr(totales[0], "TotalTrasladosBaseIVA16"), dec(base));
        assert_eq!(attr(totales[0], "TotalTrasladosImpuestoIVA16"), dec(iva));
        assert_eq!(attr(totales[0], "MontoTotalPagos"), dec(pagado));
    }
    // The bases of the two parcialidades add up to the invoice's.
    assert_eq!(dec("431.03") + dec("568.97"), dec("1000.00"));

    // Cancelling the second payment gives its 660 back.
    w.cancel(p2.recorded.invoice_id).await;
    let b = w.outbox.invoice_balance(&InvoiceRef::Id(inv)).await.unwrap();
    assert_eq!((b.paid, b.balance, b.next_parcialidad), (dec("500.00"), dec("660.00"), 2));
    assert!(b.payments.iter().any(|p| p.status == PaymentStatus::Cancelado));
    assert_eq!(w.ppd_open().await, vec!["pedido-100"]);
    // The replacement is parcialidad 2 again, under its own sale_id.
    let mut p3_req = payment(&[inv], "660");
    p3_req.fecha_pago += chrono::Duration::seconds(60);
    let p3 = w.outbox.record_payment(&p3_req, &ana()).await.unwrap();
    assert_eq!(p3.recorded.sale_id, "pago-pedido-100-3");
    assert_eq!(p3.sale.pagos[0].documentos[0].num_parcialidad, 2);
    // The invoice's timeline says what was paid.
    let d = w.outbox.invoice(&InvoiceRef::Id(inv)).await.unwrap();
    assert_eq!(d.timeline.iter().filter(|t| t.kind == "payment_recorded").count(), 3);
}

async fn one_payment_for_two_invoices_and_a_usd_invoice_paid_in_mxn(backend: Backend) {
    let w = world(backend).await;
    let a = w
        .record(&ingreso("pedido-200", KIJ, "1000.00", &tax(Some("0.160000")), "PPD", "MXN"))
        .await;
    let b = w
        .record(&ingreso("pedido-201", KIJ, "500.00", &tax(Some("0.080000")), "PPD", "MXN"))
        .await;
    let other = w
        .record(&ingreso("pedido-202", URE, "500.00", &tax(Some("0.160000")), "PPD", "MXN"))
        .await;
    let usd = w
        .record(&ingreso("pedido-203", URE, "100.00", &tax(Some("0.160000")), "PPD", "USD"))
        .await;
    w.drain().await;

    // Another receptor's invoice cannot share the payment.
    let e = w.outbox.record_payment(&payment(&[a, other], "1740"), &ana()).await.unwrap_err();
    assert!(
        matches!(&e, OutboxError::Invalid(v) if v.0.iter().any(|f| f.code == "receptor_distinto")),
        "{e}"
    );

    // 1160 + 540 in one payment, filled in order.
    let p = w.outbox.record_payment(&payment(&[a, b], "1700"), &ana()).await.unwrap();
    w.drain().await;
    let xml = w.xml(p.recorded.invoice_id).await;
    oracle(&xml, "pago de dos facturas");
    let doc = Document::parse(&xml).unwrap();
    let dr = all(&doc.root, "DoctoRelacionado");
    assert_eq!(dr.len(), 2);
    assert_eq!(
        (attr(dr[0], "ImpPagado"), attr(dr[1], "ImpPagado")),
        (dec("1160.00"), dec("540.00"))
    );
    let totales = all(&doc.root, "Totales")[0];
    assert_eq!(
        (attr(totales, "TotalTrasladosBaseIVA16"), attr(totales, "TotalTrasladosBaseIVA8")),
        (dec("1000.00"), dec("500.00"))
    );
    for id in [a, b] {
        assert_eq!(w.outbox.invoice_balance(&InvoiceRef::Id(id)).await.unwrap().balance, dec("0.00"));
    }

    // 116.00 USD paid with 2001.00 MXN: EquivalenciaDR = USD per MXN.
    let mut req = payment(&[usd], "2001.00");
    req.invoices[0].amount = Some(dec("116.00"));
    let p = w.outbox.record_payment(&req, &ana()).await.unwrap();
    let eq = p.sale.pagos[0].documentos[0].equivalencia.unwrap().0;
    assert!(dec("116.00") / eq <= dec("2001.00") && eq.scale() <= 10, "{eq}");
    w.drain().await;
    let xml = w.xml(p.recorded.invoice_id).await;
    oracle(&xml, "pago en MXN de una factura en USD");
    let doc = Document::parse(&xml).unwrap();
    let dr = all(&doc.root, "DoctoRelacionado")[0];
    assert_eq!(dr.attr("MonedaDR"), Some("USD"));
    assert_eq!(attr(dr, "EquivalenciaDR"), eq);
    assert_eq!(all(&doc.root, "Pago")[0].attr("MonedaP"), Some("MXN"));
    assert_eq!(w.outbox.invoice_balance(&InvoiceRef::Id(usd)).await.unwrap().balance, dec("0.00"));
}

// The factura global ---------------------------------------------------------------------------

async fn thirty_tickets_of_a_day_make_one_global_invoice_once(backend: Backend) {
    let w = world(backend).await;
    let mut ids = Vec::new();
    for n in 0..30 {
        let forma = if n % 3 == 0 { "04" } else { "01" };
        let r = w
            .outbox
            .record_sale_json(
                ticket(&format!("ticket-{n:03}"), &format!("{}.50", 20 + n), forma).as_bytes(),
                None,
                &ana(),
            )
            .await
            .unwrap();
        assert_eq!(r.state, InvoiceState::Held);
        ids.push(r.invoice_id);
    }
    // A ticket is never stamped by itself: the drain never claims it.
    w.drain().await;
    assert_eq!(w.count("attempts").await, 0);
    assert_eq!(w.count("tries").await, 0);
    // Recording a ticket again is a replay.
    let again = w
        .outbox
        .record_sale_json(ticket("ticket-000", "20.50", "04").as_bytes(), None, &ana())
        .await;
    // (occurred_at differs by the minute it was built in: same sale_id, maybe another body.)
    assert!(again.as_ref().map(|r| r.replayed).unwrap_or(true) || matches!(again, Err(OutboxError::IdempotencyConflict { .. })));

    // Ticket 7 is invoiced to a named customer before the global invoice.
    let receptor: cfdi::sale::SaleReceptor = serde_json::from_str(KIJ).unwrap();
    let named = w
        .outbox
        .invoice_ticket(&InvoiceRef::SaleId("ticket-007".into()), receptor, None, &ana())
        .await
        .unwrap();
    assert_eq!(named.sale_id, "factura-ticket-007");
    let t7 = w.outbox.invoice(&InvoiceRef::SaleId("ticket-007".into())).await.unwrap();
    assert!(
        t7.timeline.iter().any(|t| t.kind == "ticket_invoiced_to_customer"),
        "{:?}",
        t7.timeline
    );

    let day = chrono::NaiveDateTime::parse_from_str(&local_now(), "%Y-%m-%dT%H:%M:%S")
        .unwrap()
        .date();
    // The preview writes nothing and says which tickets go in and why ticket 7 stays out.
    let p = w.outbox.global_invoice_preview("01", day, day).await.unwrap();
    assert_eq!(p.existing_invoice_id, None);
    assert_eq!(p.tickets.len(), 30);
    let out: Vec<&str> = p
        .tickets
        .iter()
        .filter(|t| t.excluded.is_some())
        .map(|t| t.sale_id.as_str())
        .collect();
    assert_eq!(out, vec!["ticket-007"]);
    let t0 = p.tickets.iter().find(|t| t.sale_id == "ticket-000").unwrap();
    assert_eq!(t0.total.as_deref(), Some("47.56"));
    // Σ over the 29 that go in of 2 × (20.50 + n) × 1.16, n ≠ 7.
    let expected: Decimal = (0..30)
        .filter(|n| *n != 7)
        .map(|n| cfdi::payment::round_money(Decimal::from(2) * (dec("20.50") + Decimal::from(n)) * dec("1.16"), 2))
        .sum();
    assert_eq!(dec(&p.total), expected);
    assert_eq!(w.count("ticket_claims WHERE kind = 'global'").await, 0);
    assert!(matches!(
        w.outbox.global_invoice_preview("01", day, day + chrono::Days::new(1)).await,
        Err(OutboxError::Invalid(_))
    ));

    let g = w.outbox.create_global_invoice("01", day, day, &ana()).await.unwrap();
    assert_eq!((g.added, g.tickets.len()), (29, 29));
    let p = w.outbox.global_invoice_preview("01", day, day).await.unwrap();
    assert_eq!(p.existing_invoice_id, Some(g.recorded.invoice_id));
    assert_eq!(p.tickets.iter().filter(|t| t.excluded.is_none()).count(), 29);
    assert_eq!(g.excluded_named, vec!["ticket-007"]);
    assert!(!g.tickets.contains(&"ticket-007".to_string()));
    w.drain().await;

    let xml = w.xml(g.recorded.invoice_id).await;
    oracle(&xml, "factura global");
    let doc = Document::parse(&xml).unwrap();
    let r = all(&doc.root, "Receptor")[0];
    assert_eq!(
        (
            r.attr("Rfc"),
            r.attr("Nombre"),
            r.attr("RegimenFiscalReceptor"),
            r.attr("UsoCFDI"),
            r.attr("DomicilioFiscalReceptor")
        ),
        (
            Some("XAXX010101000"),
            Some("PUBLICO EN GENERAL"),
            Some("616"),
            Some("S01"),
            doc.root.attr("LugarExpedicion")
        )
    );
    let ig = all(&doc.root, "InformacionGlobal")[0];
    assert_eq!(ig.attr("Periodicidad"), Some("01"));
    assert_eq!(ig.attr("Meses"), Some(format!("{:02}", chrono::Datelike::month(&day)).as_str()));
    assert_eq!(ig.attr("Año"), Some(format!("{}", chrono::Datelike::year(&day)).as_str()));
    let conceptos = all(&doc.root, "Concepto");
    let mut seen: Vec<&str> = conceptos.iter().map(|c| c.attr("NoIdentificacion").unwrap()).collect();
    assert!(conceptos
        .iter()
        .all(|c| c.attr("ClaveProdServ") == Some("01010101") && c.attr("ClaveUnidad") == Some("ACT")));
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 29, "each ticket exactly once");
    // Each concepto is its ticket's importe (2 × valor) with its 16 % IVA.
    let c0 = conceptos.iter().find(|c| c.attr("NoIdentificacion") == Some("ticket-000")).unwrap();
    assert_eq!(attr(c0, "Importe"), dec("41.00"));
    assert_eq!(attr(all(c0, "Traslado")[0], "Importe"), dec("6.56"));
    // FormaPago: the one with the largest amount (efectivo, 20 of the 29).
    assert_eq!(doc.root.attr("FormaPago"), Some("01"));

    // A second run adds nothing; a ticket already in it cannot be invoiced to a customer.
    let again = w.outbox.create_global_invoice("01", day, day, &ana()).await.unwrap();
    assert_eq!((again.added, again.recorded.replayed, again.tickets.len()), (0, true, 29));
    assert_eq!(w.count("ticket_claims WHERE kind = 'global' AND released_at_ms IS NULL").await, 29);
    let receptor: cfdi::sale::SaleReceptor = serde_json::from_str(KIJ).unwrap();
    let e = w
        .outbox
        .invoice_ticket(&InvoiceRef::SaleId("ticket-001".into()), receptor, None, &ana())
        .await
        .unwrap_err();
    assert!(matches!(&e, OutboxError::Invalid(v) if v.0[0].code == "en_factura_global"), "{e}");
    let _ = ids;
}

// The contador's month -----------------------------------------------------------------------

async fn month_report_totals_equal_the_stamped_xmls(backend: Backend) {
    let w = world(backend).await;
    let i16 = w
        .record(&ingreso("m-16", URE, "1000.00", &tax(Some("0.160000")), "PPD", "MXN"))
        .await;
    w.record(&ingreso("m-08", URE, "500.00", &tax(Some("0.080000")), "PUE", "MXN"))
        .await;
    w.record(&ingreso("m-00", KIJ, "300.00", &tax(Some("0.000000")), "PUE", "MXN"))
        .await;
    w.record(&ingreso("m-ex", KIJ, "200.00", &tax(None), "PUE", "MXN")).await;
    let ret = r#""objeto_imp":"02","traslados":[{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}],"retenciones":[{"impuesto":"001","tipo_factor":"Tasa","tasa_o_cuota":"0.100000"},{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.106667"}]"#;
    w.record(&ingreso("m-ret", URE, "1000.00", ret, "PUE", "MXN")).await;
    let cancelled = w
        .record(&ingreso("m-can", KIJ, "700.00", &tax(Some("0.160000")), "PUE", "MXN"))
        .await;
    w.drain().await;
    let egreso = format!(
        r#"{{"sale_id":"m-eg","kind":"egreso","occurred_at":"{}","forma_pago":"03","metodo_pago":"PUE","receptor":{URE},
 "relacionados":[{{"tipo_relacion":"01","uuids":["{}"]}}],
 "conceptos":[{{"clave_prod_serv":"84111506","cantidad":"1","clave_unidad":"ACT","descripcion":"Bonificación","valor_unitario":"100.00",{}}}]}}"#,
        local_now(),
        w.uuid(i16).await,
        tax(Some("0.160000"))
    );
    w.record(&egreso).await;
    // The credit note changes the saldo: it is stamped before the payment is recorded.
    w.drain().await;
    w.outbox.record_payment(&payment(&[i16], "580"), &ana()).await.unwrap();
    w.drain().await;
    w.cancel(cancelled).await;

    let xml0 = w.xml(i16).await;
    let fecha = Document::parse(&xml0).unwrap().root.attr("Fecha").unwrap().to_string();
    let (year, month): (i32, u32) = (fecha[..4].parse().unwrap(), fecha[5..7].parse().unwrap());
    let report = w.outbox.month_report(year, month).await.unwrap();

    // Independently: every stored XML, walked by local names, summed with Decimal.
    let uuids: Vec<(String, i64)> = sqlx::query_as(
        "SELECT uuid, CAST(CASE WHEN cancellation_status = 'cancelado' THEN 1 ELSE 0 END AS BIGINT) FROM cfdis WHERE xml IS NOT NULL",
    )
    .fetch_all(&w._db.raw)
    .await
    .unwrap();
    let mut sub = Decimal::ZERO;
    let (mut b16, mut i16_, mut b8, mut i8_, mut b0, mut bex, mut ret_iva, mut ret_isr, mut eg_total, mut pagos) = (
        Decimal::ZERO,
        Decimal::ZERO,
        Decimal::ZERO,
        Decimal::ZERO,
        Decimal::ZERO,
        Decimal::ZERO,
        Decimal::ZERO,
        Decimal::ZERO,
        Decimal::ZERO,
        Decimal::ZERO,
    );
    let mut n_cancelled = 0;
    for (uuid, is_cancelled) in uuids {
        let xml = w.outbox.cfdi_xml(&uuid).await.unwrap().unwrap();
        let doc = Document::parse(&xml).unwrap();
        let root = &doc.root;
        if !root.attr("Fecha").unwrap().starts_with(&fecha[..7]) {
            continue;
        }
        if is_cancelled != 0 {
            n_cancelled += 1;
            continue;
        }
        match root.attr("TipoDeComprobante").unwrap() {
            "I" => {
                sub += attr(root, "SubTotal");
                let summary = root.elements().find(|e| e.local == "Impuestos").unwrap();
                for t in all(summary, "Traslado") {
                    match (t.attr("TipoFactor"), t.attr("TasaOCuota")) {
                        (Some("Exento"), _) => bex += attr(t, "Base"),
                        (_, Some("0.160000")) => {
                            b16 += attr(t, "Base");
                            i16_ += attr(t, "Importe");
                        }
                        (_, Some("0.080000")) => {
                            b8 += attr(t, "Base");
                            i8_ += attr(t, "Importe");
                        }
                        (_, Some("0.000000")) => b0 += attr(t, "Base"),
                        other => panic!("{other:?}"),
                    }
                }
                for r in all(summary, "Retencion") {
                    match r.attr("Impuesto") {
                        Some("002") => ret_iva += attr(r, "Importe"),
                        Some("001") => ret_isr += attr(r, "Importe"),
                        _ => {}
                    }
                }
            }
            "E" => eg_total += attr(root, "Total"),
            "P" => pagos += attr(all(root, "Totales")[0], "MontoTotalPagos"),
            _ => {}
        }
    }
    let r = &report;
    assert_eq!(r.ingresos.documentos, 5);
    assert_eq!(
        (
            r.ingresos.subtotal,
            r.ingresos.base_iva16,
            r.ingresos.iva16,
            r.ingresos.base_iva8,
            r.ingresos.iva8,
            r.ingresos.base_iva0,
            r.ingresos.base_iva_exento
        ),
        (sub, b16, i16_, b8, i8_, b0, bex)
    );
    assert_eq!((r.ingresos.iva_retenido, r.ingresos.isr_retenido), (ret_iva, ret_isr));
    assert_eq!((r.egresos.documentos, r.egresos.total), (1, eg_total));
    assert_eq!((r.pagos.documentos, r.pagos.monto), (1, pagos));
    assert_eq!(r.cancelados.len(), n_cancelled);
    assert_eq!(n_cancelled, 1);
    // Known figures too: 16 % bases are 1000 + 1000, 8 % is 500, exento 200.
    assert_eq!((b16, b8, bex), (dec("2000.00"), dec("500.00"), dec("200.00")));
    // The PPD invoice: 1160, credited 116 by the note, 580 paid.
    assert_eq!(r.ppd_con_saldo.len(), 1);
    assert_eq!(
        (
            r.ppd_con_saldo[0].notas_credito,
            r.ppd_con_saldo[0].pagado,
            r.ppd_con_saldo[0].saldo
        ),
        (dec("116.00"), dec("580.00"), dec("464.00"))
    );
    let kij = r.por_receptor.iter().find(|l| l.rfc == "KIJ0906199R1").unwrap();
    assert_eq!((kij.ingresos.documentos, kij.cancelados.documentos), (2, 1));
    let month_docs = w.outbox.month_documents(year, month).await.unwrap();
    assert_eq!(month_docs.len(), r.documentos.len());
}

// Receptor screening (69-B) --------------------------------------------------------------------

async fn listed_receptors_are_warned_about_and_bad_lines_are_named(backend: Backend) {
    let w = world(backend).await;
    let list = "Información actualizada al 15 de noviembre de 2026\n\
No,RFC,Nombre del Contribuyente,Situación del contribuyente,Publicación página SAT definitivos\n\
1,URE180429TM6,UNIVERSIDAD ROBOTICA ESPAÑOLA,Definitivo,15/01/2021\n\
2,NOT-AN-RFC,MALA,Definitivo,\n\
3,MASO451221PM4,MARIA OLIVIA MARTINEZ SAGAZ,Desvirtuado,\n\
4,AAA010101AAA,OTRA,Quizá,\n";
    let e = w
        .outbox
        .import_screening_list(list.as_bytes(), "69b.csv", None, false, &contador(&w.outbox).await)
        .await
        .unwrap_err();
    let OutboxError::Invalid(v) = &e else { panic!("{e}") };
    let fields: Vec<&str> = v.0.iter().map(|f| f.field.as_str()).collect();
    assert_eq!(fields, vec!["línea 4", "línea 6"]);
    assert_eq!(w.count("screening_lists").await, 0, "nothing written");
    // Personal may not import it.
    assert!(matches!(
        w.outbox.import_screening_list(list.as_bytes(), "69b.csv", None, true, &ana()).await,
        Err(OutboxError::Forbidden { .. })
    ));
    let imported = w
        .outbox
        .import_screening_list(list.as_bytes(), "69b.csv", None, true, &contador(&w.outbox).await)
        .await
        .unwrap();
    assert_eq!(
        (imported.entries, imported.list_date.as_str(), imported.bad_lines.len()),
        (2, "2026-11-15", 2)
    );

    let listed = w
        .outbox
        .record_sale_json(
            ingreso("s-1", URE, "10.00", &tax(Some("0.160000")), "PUE", "MXN").as_bytes(),
            None,
            &ana(),
        )
        .await
        .unwrap();
    assert_eq!(listed.warnings.len(), 1);
    assert!(
        listed.warnings[0].message.contains("definitivo") && listed.warnings[0].message.contains("2026-11-15"),
        "{:?}",
        listed.warnings
    );
    let d = w.outbox.invoice(&InvoiceRef::Id(listed.invoice_id)).await.unwrap();
    assert!(d.timeline.iter().any(|t| t.kind == "receptor_69b"));

    let clean = w
        .outbox
        .record_sale_json(
            ingreso("s-2", KIJ, "10.00", &tax(Some("0.160000")), "PUE", "MXN").as_bytes(),
            None,
            &ana(),
        )
        .await
        .unwrap();
    assert!(clean.warnings.is_empty());
    let d = w.outbox.invoice(&InvoiceRef::Id(clean.invoice_id)).await.unwrap();
    assert!(!d.timeline.iter().any(|t| t.kind == "receptor_69b"));

    let s = w.outbox.screening_check("maso451221pm4").await.unwrap();
    assert_eq!((s.entry.map(|e| e.situacion), s.warns), (Some("desvirtuado".to_string()), false));
}

/// A credit note (egreso, TipoRelacion 01) of a PPD invoice lowers the saldo a payment writes as
/// ImpSaldoAnt, as SAT's guide for the payment complement and the PACs' guides read it: a
/// payment of the whole total is refused once the note is stamped, the REP of what is left
/// passes SAT's oracle, and cancelling the note gives its amount back to the saldo.
/// A `credit_note_documents` row: note, invoice, invoice UUID, note total and invoice total in
/// minor units.
type CreditLink = (i64, i64, String, Option<i64>, Option<i64>);
/// The same with its created_at_ms.
type CreditLinkAt = (i64, i64, String, Option<i64>, Option<i64>, i64);

async fn a_credit_note_lowers_the_saldo_a_payment_writes(backend: Backend) {
    let w = world(backend).await;
    let inv = w
        .record(&ingreso("pedido-300", URE, "1000.00", &tax(Some("0.160000")), "PPD", "MXN"))
        .await;
    w.drain().await;
    let invoice_uuid = w.uuid(inv).await;
    let note = w
        .record(&format!(
            r#"{{"sale_id":"nc-300","kind":"egreso","occurred_at":"{}","forma_pago":"15","metodo_pago":"PUE","moneda":"MXN",
 "receptor":{URE},
 "relacionados":[{{"tipo_relacion":"01","uuids":["{}"]}}],
 "conceptos":[{{"clave_prod_serv":"84111506","cantidad":"1","clave_unidad":"ACT","descripcion":"Descuento","valor_unitario":"100.00",{}}}]}}"#,
            local_now(),
            invoice_uuid.to_lowercase(),
            tax(Some("0.160000"))
        ))
        .await;
    // The note is recorded, not stamped: the saldo will change, so a payment waits.
    let e = w.outbox.record_payment(&payment(&[inv], "1044"), &ana()).await.unwrap_err();
    assert!(matches!(&e, OutboxError::Invalid(v) if v.0[0].code == "nota_pendiente"), "{e}");
    let b = w.outbox.invoice_balance(&InvoiceRef::Id(inv)).await.unwrap();
    assert_eq!((b.credited, b.balance), (dec("0.00"), dec("1160.00")));
    assert_eq!(b.credit_notes.len(), 1);
    assert_eq!(b.credit_notes[0].status, PaymentStatus::Pendiente);
    w.drain().await;

    let b = w.outbox.invoice_balance(&InvoiceRef::Id(inv)).await.unwrap();
    assert_eq!(
        (b.total, b.credited, b.paid, b.balance),
        (dec("1160.00"), dec("116.00"), dec("0.00"), dec("1044.00"))
    );
    assert!(b.credit_notes[0].applied && b.credit_notes[0].credit_invoice_id == note);
    assert_eq!(w.ppd_open().await, vec!["pedido-300"]);
    let before = w.count("sales").await;
    let e = w.outbox.record_payment(&payment(&[inv], "1160"), &ana()).await.unwrap_err();
    let OutboxError::Invalid(v) = &e else { panic!("{e}") };
    assert_eq!(v.0[0].code, "excede_saldo", "{e}");
    assert!(v.0[0].message.contains("notas de crédito 116.00"), "{e}");
    assert_eq!(w.count("sales").await, before, "nothing written");

    let p = w.outbox.record_payment(&payment(&[inv], "1044"), &ana()).await.unwrap();
    w.drain().await;
    let xml = w.xml(p.recorded.invoice_id).await;
    oracle(&xml, "pago tras nota de crédito");
    let doc = Document::parse(&xml).unwrap();
    let dr = all(&doc.root, "DoctoRelacionado");
    assert_eq!(
        (
            attr(dr[0], "ImpSaldoAnt"),
            attr(dr[0], "ImpPagado"),
            attr(dr[0], "ImpSaldoInsoluto")
        ),
        (dec("1044.00"), dec("1044.00"), dec("0.00"))
    );
    let t = all(dr[0], "TrasladoDR");
    assert_eq!((attr(t[0], "BaseDR"), attr(t[0], "ImporteDR")), (dec("900.00"), dec("144.00")));
    assert!(w.ppd_open().await.is_empty(), "paid and credited in full");

    // A database from before migration 0010 gets the same link from the note's recorded sale:
    // the migration's backfill query, run now, finds exactly what intake wrote.
    let dialect = match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    let migration =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../migrations/{dialect}/0010_credit_notes.sql")))
            .unwrap();
    let backfill = &migration[migration.rfind("SELECT n.id").unwrap()..];
    let backfill = backfill.trim().trim_end_matches(';').trim_end_matches("ON CONFLICT DO NOTHING");
    let from_backfill: Vec<CreditLinkAt> = sqlx::query_as(backfill).fetch_all(&w._db.raw).await.unwrap();
    let from_intake: Vec<CreditLink> = sqlx::query_as(
        "SELECT credit_invoice_id, invoice_id, invoice_uuid, credit_total_minor, invoice_total_minor FROM credit_note_documents",
    )
    .fetch_all(&w._db.raw)
    .await
    .unwrap();
    let from_backfill: Vec<_> = from_backfill.into_iter().map(|r| (r.0, r.1, r.2, r.3, r.4)).collect();
    assert_eq!(from_intake, vec![(note, inv, invoice_uuid.clone(), Some(11600), Some(116000))]);
    assert_eq!(from_backfill, from_intake);

    // SAT cancels the note: its 116 is owed again.
    w.cancel(note).await;
    let b = w.outbox.invoice_balance(&InvoiceRef::Id(inv)).await.unwrap();
    assert_eq!((b.credited, b.paid, b.balance), (dec("0.00"), dec("1044.00"), dec("116.00")));
    assert_eq!(b.credit_notes[0].status, PaymentStatus::Cancelado);
    assert_eq!(w.ppd_open().await, vec!["pedido-300"]);
}

/// The counter's day (Venta de mostrador) and what list rows need beyond their columns: each
/// ticket with its total and, once taken, its factura global; a payment's amount (its
/// comprobante totals 0 XXX).
async fn the_counter_day_and_what_rows_need_beyond_their_columns(backend: Backend) {
    let w = world(backend).await;
    let mut tickets = Vec::new();
    for (n, valor) in ["10.00", "25.50", "7.25"].iter().enumerate() {
        let r = w
            .outbox
            .record_sale_json(ticket(&format!("mostrador-{n}"), valor, "01").as_bytes(), None, &ana())
            .await
            .unwrap();
        tickets.push(r.invoice_id);
    }
    let inv = w
        .record(&ingreso("pedido-700", URE, "1000.00", &tax(Some("0.160000")), "PPD", "MXN"))
        .await;
    w.drain().await;
    let pay = w
        .outbox
        .record_payment(&payment(&[inv], "500"), &ana())
        .await
        .unwrap()
        .recorded
        .invoice_id;
    w.drain().await;

    let day = chrono::NaiveDateTime::parse_from_str(&local_now(), "%Y-%m-%dT%H:%M:%S")
        .unwrap()
        .date();
    let d = w.outbox.tickets_of_day(day).await.unwrap();
    assert_eq!(d.tickets.iter().map(|t| t.invoice_id).collect::<Vec<_>>(), tickets);
    // Each ticket: 2 × valor × 1.16 (the fixture's two units with IVA).
    let each: Vec<Decimal> = ["10.00", "25.50", "7.25"]
        .iter()
        .map(|v| cfdi::payment::round_money(Decimal::from(2) * dec(v) * dec("1.16"), 2))
        .collect();
    assert_eq!(d.tickets.iter().map(|t| dec(&t.total)).collect::<Vec<_>>(), each);
    assert_eq!(dec(&d.total), each.iter().sum::<Decimal>());
    assert!(d.tickets.iter().all(|t| t.document.is_none()), "no factura global yet");
    assert!(w.outbox.tickets_of_day(day.pred_opt().unwrap()).await.unwrap().tickets.is_empty());

    let mut ids = tickets.clone();
    ids.extend([inv, pay]);
    let asides = w.outbox.invoice_asides(&ids).await.unwrap();
    // A payment's row: its Monto and currency; tickets waiting and the invoice: nothing to add.
    assert_eq!(asides.len(), 1, "{asides:?}");
    assert_eq!(asides[0].invoice_id, pay);
    let amount = asides[0].payment.as_ref().expect("a payment's amount");
    assert_eq!((dec(&amount.amount), amount.moneda.as_str()), (dec("500.00"), "MXN"));

    // The day's factura global takes the tickets: each row names it.
    let g = w.outbox.create_global_invoice("01", day, day, &ana()).await.unwrap();
    let d = w.outbox.tickets_of_day(day).await.unwrap();
    for t in &d.tickets {
        let doc = t.document.as_ref().expect("in the factura global");
        assert_eq!(
            (doc.invoice_id, doc.kind),
            (g.recorded.invoice_id, outbox::counter::TicketDocumentKind::Global)
        );
    }
    let asides = w.outbox.invoice_asides(&tickets).await.unwrap();
    assert_eq!(asides.len(), 3);
    assert!(asides
        .iter()
        .all(|a| a.ticket_document.as_ref().map(|d| d.invoice_id) == Some(g.recorded.invoice_id)));
    w.drain().await;
    let stamped = w.outbox.invoice_asides(&tickets[..1]).await.unwrap();
    assert!(
        stamped[0].ticket_document.as_ref().and_then(|d| d.uuid.as_ref()).is_some(),
        "its UUID once stamped"
    );

    // A page at a time.
    let many: Vec<i64> = (1..=501).collect();
    assert!(matches!(w.outbox.invoice_asides(&many).await, Err(OutboxError::Invalid(_))));
}

crate::conformance!(
    ppd_invoice_paid_in_two_parts_then_a_payment_cancelled,
    a_credit_note_lowers_the_saldo_a_payment_writes,
    one_payment_for_two_invoices_and_a_usd_invoice_paid_in_mxn,
    thirty_tickets_of_a_day_make_one_global_invoice_once,
    the_counter_day_and_what_rows_need_beyond_their_columns,
    month_report_totals_equal_the_stamped_xmls,
    listed_receptors_are_warned_about_and_bad_lines_are_named,
);

/// A restore is a known gap in history (SQLite: PostgreSQL restores with `pg_restore`): a REP
/// stamped after the backup is not in the restored database, so the same payment registered
/// again would stamp a second REP. Timbra says so and holds payments, globals and follow-ups
/// until the contador settles the gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_holds_payments_until_the_contador_settles_what_was_stamped_after_the_backup() {
    let w = world(Backend::Sqlite).await;
    let inv = w
        .record(&ingreso("pedido-300", URE, "1000.00", &tax(Some("0.160000")), "PPD", "MXN"))
        .await;
    w.drain().await;
    let backup = w._db.dir.path().join("respaldo.db");
    outbox::backup::backup(w.outbox.store().sqlite().expect("SQLite"), &backup)
        .await
        .unwrap();
    // After the backup: the payment's REP is stamped.
    w.outbox.record_payment(&payment(&[inv], "1160"), &ana()).await.unwrap();
    w.drain().await;
    assert_eq!(w.outbox.invoice_balance(&InvoiceRef::Id(inv)).await.unwrap().balance, dec("0.00"));
    // Restored: the REP is gone from the database, not from SAT.
    let outbox::DatabaseLocation::Sqlite(path) = w._db.location.clone() else {
        panic!("SQLite")
    };
    w.outbox.store().close().await;
    let report = outbox::backup::restore(&backup, &path, w.clock.now()).await.unwrap();
    assert!(report.backup_at <= w.clock.now());
    let restored = Outbox::open_sqlite(&outbox::SqliteOptions::new(&path), w.clock.clone())
        .await
        .unwrap();
    restored.provide_csd_password(password());
    assert_eq!(
        restored.invoice_balance(&InvoiceRef::Id(inv)).await.unwrap().balance,
        dec("1160.00"),
        "the restored database does not know the REP"
    );
    let gaps = restored.history_gaps().await.unwrap();
    assert_eq!(gaps.len(), 1);
    assert_eq!(gaps[0].id, report.gap_id);
    // The same payment again is held, in words, and nothing is written.
    let e = restored.record_payment(&payment(&[inv], "1160"), &ana()).await.unwrap_err();
    let OutboxError::Invalid(v) = &e else { panic!("{e}") };
    assert_eq!(v.0[0].code, "respaldo_restaurado", "{e}");
    assert!(v.0[0].message.contains("se restauró un respaldo"), "{e}");
    // …and names the command that settles it, as the CLI spells it.
    assert!(v.0[0].message.contains(&format!("timbra db settle-gap {}", report.gap_id)), "{e}");
    // So is a factura global.
    let today = chrono::NaiveDateTime::parse_from_str(&local_now(), "%Y-%m-%dT%H:%M:%S")
        .unwrap()
        .date();
    let e = restored.create_global_invoice("01", today, today, &ana()).await.unwrap_err();
    assert!(matches!(&e, OutboxError::Invalid(v) if v.0[0].code == "respaldo_restaurado"), "{e}");
    // Only the contador settles it, with a note.
    let e = restored.settle_history_gap(report.gap_id, "revisado", &ana()).await.unwrap_err();
    assert!(matches!(e, OutboxError::Forbidden { .. }), "{e}");
    let c = contador(&restored).await;
    let e = restored.settle_history_gap(report.gap_id, "  ", &c).await.unwrap_err();
    assert!(matches!(&e, OutboxError::Invalid(v) if v.0[0].field == "note"), "{e}");
    let settled = restored
        .settle_history_gap(
            report.gap_id,
            "revisado en el portal del PAC: el REP del pedido-300 existe; se importó con conciliación",
            &c,
        )
        .await
        .unwrap();
    assert!(settled.settled_at.is_some());
    assert!(restored.open_history_gap().await.unwrap().is_none());
    // Then payments go on.
    restored.record_payment(&payment(&[inv], "100"), &ana()).await.unwrap();
}
