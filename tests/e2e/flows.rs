//! The flows, each on a fresh app with a fresh temporary database in Modo sandbox.

use crate::harness::{App, Env, Res};

pub(crate) fn check(cond: bool, what: impl Into<String>) -> Res {
    if cond {
        Ok(())
    } else {
        Err(what.into())
    }
}

/// Fills the Emitir form with a valid sale for SAT's test receptor, except the RFC given.
/// The contador's PIN in every flow that acts as contador.
const CONTADOR_PIN: &str = "135792";

/// Sets the contador's PIN from Ajustes the first time — with the sandbox CSD's public password
/// as the proof of authority, as the page hints — and leaves the page.
async fn set_contador_pin(app: &App) -> Res {
    app.go("#/ajustes/equipo").await?;
    let form = "[data-testid=role-pin-form]";
    app.wait_contains(&format!("{form} [data-testid=role-pin-status]"), "nadie puede actuar como contador")
        .await?;
    app.type_into(&format!("{form} input[name='pin.new']"), CONTADOR_PIN).await?;
    app.type_into(&format!("{form} input[name='pin.repeat']"), CONTADOR_PIN).await?;
    app.type_into(&format!("{form} input[name='pin.proof']"), "12345678a").await?;
    app.click(&format!("{form} button[type=submit]")).await?;
    app.wait_contains(&format!("{form} [role=status]"), "PIN del rol Contador guardado")
        .await?;
    Ok(())
}

/// Enters the contador's role from the sidebar with its PIN (the desk then acts as contador).
async fn act_as_contador(app: &App) -> Res {
    app.click("[data-testid=act-as-contador]").await?;
    app.type_into("[data-testid=contador-pin]", CONTADOR_PIN).await?;
    app.click("[data-testid=contador-enter]").await?;
    app.wait_contains("[data-testid=acting-as]", "actuando como Contador").await?;
    Ok(())
}

/// Leaves the contador's role: back to the desk's own.
async fn leave_contador(app: &App) -> Res {
    app.click("[data-testid=leave-contador]").await?;
    app.find("[data-testid=act-as-contador]").await?;
    Ok(())
}

/// Picks `iso` (AAAA-MM-DD) in the date field `name` inside `scope` as a person would: año,
/// mes by its name, día (components/DateField.svelte; never the webview's own date input).
async fn pick_date(app: &App, scope: &str, name: &str, iso: &str) -> Res {
    let mut it = iso.splitn(3, '-').map(|p| p.trim_start_matches('0').to_string());
    let (y, m, d) = (
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
    );
    app.type_into(&format!("{scope} input[name='{name}.anio']"), &y).await?;
    app.select(&format!("{scope} select[name='{name}.mes']"), &m).await?;
    app.select(&format!("{scope} select[name='{name}.dia']"), &d).await?;
    let shown = app
        .attr(&format!("{scope} input[name='{name}']"), "value")
        .await?
        .unwrap_or_default();
    check(shown == iso[..10], format!("la fecha {name} quedó {shown:?}; se eligió {iso}"))
}

async fn fill_sale(app: &App, rfc: &str) -> Res {
    app.type_into("input[name='receptor.rfc']", rfc).await?;
    app.type_into("input[name='receptor.nombre']", "UNIVERSIDAD ROBOTICA ESPAÑOLA")
        .await?;
    app.type_into("input[name='receptor.domicilio_fiscal']", "86991").await?;
    app.choose("", "receptor.regimen_fiscal", "601", "601").await?;
    app.choose("", "receptor.uso_cfdi", "G01", "G01").await?;
    app.type_into("input[name='folio']", "4471").await?;
    app.type_into("input[name='conceptos[0].descripcion']", "Café de olla").await?;
    app.type_into("input[name='conceptos[0].cantidad']", "2").await?;
    app.type_into("input[name='conceptos[0].valor_unitario']", "50.00").await?;
    Ok(())
}

/// Start on an empty database in sandbox mode; emit from the form (a rejected click first,
/// then its retry with the same identity); watch it become Timbrada; the buttons of a
/// Timbrada; download its XML; add and resolve a note.
pub async fn emitir_y_notas(app: &App) -> Res {
    // Sandbox, clearly labelled, and an empty outbox.
    let title = app.client.title().await.map_err(|e| e.to_string())?;
    check(title == "Timbra", format!("título de la ventana: {title:?}"))?;
    app.wait_contains("[data-testid=sandbox-banner]", "Modo sandbox").await?;
    app.wait_contains("[data-testid=sandbox-banner]", "EKU9003173C9").await?;
    app.wait_text("[data-testid=count-total]", "0 facturas", |t| t.trim() == "0")
        .await?;
    // The first screen offers two ways to start.
    app.wait_contains("[data-testid=first-steps]", "Emitir mi primera factura (sandbox)")
        .await?;
    app.wait_contains("[data-testid=first-steps]", "Conectar mi PAC").await?;
    // The first run asks who sits here (proposing the OS user's name, a cashier unless told
    // otherwise); every action is recorded with the name given. This desk is soporte's.
    let personal = app
        .find("[data-testid=seat-first-run-role] input[value=personal]")
        .await?
        .is_selected()
        .await
        .map_err(|e| e.to_string())?;
    check(personal, "el primer arranque propone personal (cajero/a)")?;
    app.type_into("[data-testid=seat-first-run-name]", "Lucía Pérez").await?;
    app.click("[data-testid=seat-first-run-role] input[value=soporte]").await?;
    app.click("[data-testid=seat-first-run-save]").await?;
    app.wait_contains("[data-testid=operator]", "Lucía Pérez").await?;

    // A click with an invalid RFC: field-level error from Rust, nothing written.
    app.go("#/emitir").await?;
    fill_sale(app, "URE18042").await?;
    app.click("[data-testid=emitir-submit]").await?;
    app.wait_text("[data-error-for='receptor.rfc']", "el error del RFC", |t| !t.trim().is_empty())
        .await?;
    let first_click = app
        .wait_text("[data-testid=click-id]", "el identificador del envío", |t| t.contains("emitir-"))
        .await?;
    let click_id = first_click.split_whitespace().last().unwrap_or_default().to_string();

    // Fix the field: live totals from the CFDI core (2 × 50.00 + 16 % IVA).
    app.type_into("input[name='receptor.rfc']", "URE180429TM6").await?;
    app.wait_contains("[data-total=total]", "$116.00").await?;
    app.wait_contains("[data-total=traslados]", "$16.00").await?;
    app.screenshot("emitir").await?;

    // The retry of that click keeps its identity (docs/intake.md, Idempotency) and records the sale once.
    app.click("[data-testid=emitir-submit]").await?;
    let recorded = app.wait_contains("[data-testid=emitir-recorded]", "registrada").await?;
    check(
        recorded.contains(&click_id),
        format!("el reintento debía usar {click_id}; dice {recorded:?}"),
    )?;

    // The invoice page: header, badge, timeline with actor.
    app.click("[data-testid=recorded-link]").await?;
    app.wait_contains("[data-testid=sale-id]", &click_id).await?;
    app.wait_contains("[data-testid=factura-head]", "UNIVERSIDAD ROBOTICA ESPAÑOLA")
        .await?;
    app.wait_contains("[data-testid=factura-head]", "$116.00").await?;
    let entry = app
        .wait_contains("[data-testid=timeline] li[data-kind=sale_recorded]", "Venta registrada")
        .await?;
    check(
        entry.contains("Lucía Pérez · Soporte"),
        format!("la entrada debe nombrar al operador de este puesto: {entry:?}"),
    )?;

    // The drain stamps it against the sandbox PAC: Timbrada, with its UUID and CFDI.
    app.wait_badge("timbrada").await?;
    let uuid = app.wait_text("[data-testid=uuid]", "un UUID", |t| t.trim().len() == 36).await?;
    app.wait_contains("[data-testid=cfdis]", uuid.trim()).await?;
    app.wait_contains("[data-testid=reasons]", "Timbrada por sandbox").await?;
    app.find("[data-testid=timeline] li[data-kind=pac_response]").await?;

    // Timbrada: only the download is enabled; every new try or attempt is refused because a
    // CFDI exists, and the tooltip says so, naming the evidence.
    expect_button(app, "download_xml", true, "").await?;
    expect_button(app, "retry", false, "Ya existe un CFDI para esta venta").await?;
    expect_button(app, "failover", false, "Ya existe un CFDI").await?;
    expect_button(app, "finalize", false, "Ya está finalizada").await?;
    expect_button(app, "send_to_contador", false, "Ya está timbrada").await?;
    check(
        app.all("button[data-action=force_failover]").await?.is_empty(),
        "forzar respaldo es solo del contador",
    )?;
    app.click("button[data-action=download_xml]").await?;
    let saved = app.wait_contains(".notice[role=status]", "Guardado en").await?;
    let path = saved.trim().trim_start_matches("Guardado en").trim().to_string();
    let xml = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    check(
        xml.contains("TimbreFiscalDigital") && xml.contains(uuid.trim()),
        "el XML descargado debe traer el TFD con el UUID",
    )?;

    // Notes: add, see it active and in the timeline; resolve it.
    app.type_into("#note-text", "El cliente pidió el XML por correo; confirmar dirección.")
        .await?;
    app.click("[data-testid=notes] form button[type=submit]").await?;
    app.wait_contains("[data-testid=notes] li.note:not([data-resolved])", "pidió el XML")
        .await?;
    app.wait_contains("[data-testid=timeline] li[data-kind=note_added]", "Nota agregada")
        .await?;
    app.screenshot("factura-timbrada").await?;
    app.click("[data-testid=notes] button[data-resolve]").await?;
    app.wait_contains("[data-testid=notes]", "Notas resueltas (1)").await?;
    app.wait_contains("[data-testid=notes]", "No hay notas activas").await?;
    let resolved = app
        .wait_contains("[data-testid=timeline] li[data-kind=note_resolved]", "Nota resuelta")
        .await?;
    check(
        resolved.contains("Soporte"),
        format!("la resolución debe nombrar al operador: {resolved:?}"),
    )?;

    // Back in the Bandeja: exactly one invoice (the rejected click wrote nothing), Timbrada.
    app.go("#/bandeja").await?;
    app.wait_text("[data-testid=count-total]", "1 factura", |t| t.trim() == "1").await?;
    app.wait_contains(&format!("a.tr[data-sale-id='{click_id}']"), "Timbrada").await?;
    app.wait_contains("[data-count-situation=timbrada] .n", "1").await?;
    app.wait_contains("[data-testid=drain-progress]", "1 timbradas").await?;
    app.screenshot("bandeja-timbrada").await?;

    // A credit note of it from its Factura page: Emitir opens prefilled by Rust (egreso,
    // relation 01 to the UUID) under the derived id nc-<sale>, and the drain stamps it.
    app.click(&format!("a.tr[data-sale-id='{click_id}']")).await?;
    // SAT's status, asked live (Modo sandbox: the simulator that stamped it answers as SAT).
    app.wait_contains("[data-testid=cfdis]", uuid.trim()).await?;
    app.click("[data-testid=sat-check]").await?;
    app.wait_contains("[data-testid=sat-line]", "Vigente · consultado").await?;
    app.click("[data-testid=credit-note]").await?;
    app.wait_contains("[data-testid=emitir-related]", uuid.trim()).await?;
    app.screenshot("emitir-nota-de-credito").await?;
    app.click("[data-testid=emitir-submit]").await?;
    app.wait_contains("[data-testid=emitir-recorded]", &format!("nc-{click_id}"))
        .await?;
    app.click("[data-testid=recorded-link]").await?;
    app.wait_badge("timbrada").await?;
    app.wait_contains("[data-testid=factura-head]", "Nota de crédito (egreso)").await?;
    Ok(())
}

/// Demo data in sandbox mode, search, the settings page, roles and the English switch.
pub async fn demo_ajustes_idioma(app: &App) -> Res {
    app.click("[data-testid=load-demo]").await?;
    app.wait_contains(".notice[role=status]", "36 ventas registradas").await?;
    app.wait_text("[data-testid=count-total]", "36 facturas", |t| t.trim() == "36")
        .await?;
    // Newest first; the oldest rows are outside the virtualized window until scrolled to.
    app.find("a.tr[data-sale-id='demo-036']").await?;
    // The drain works through them against the simulator's mixed faults (timeouts after
    // certifying, 500s, refused connections): every one is tried, most end Timbrada.
    let wait = std::time::Duration::from_secs(60);
    // The per-badge counts are in the state filter's options ("En proceso · por enviar (0)").
    app.wait_text_for(
        "option[data-count-badge=pendiente]",
        "ninguna pendiente",
        |t| t.trim().ends_with("(0)"),
        wait,
    )
    .await?;
    app.wait_text_for(
        "[data-count-situation=timbrada] .n",
        "timbradas",
        |t| t.trim().parse::<u32>().is_ok_and(|n| n > 0),
        wait,
    )
    .await?;
    app.screenshot("bandeja").await?;

    // Search by sale_id prefix, then by receptor RFC.
    app.type_into("[data-testid=search]", "demo-007").await?;
    wait_rows(app, 1).await?;
    app.find("a.tr[data-sale-id='demo-007']").await?;
    app.type_into("[data-testid=search]", "MCI7306249Y1").await?;
    wait_rows(app, 9).await?;
    app.type_into("[data-testid=search]", "").await?;
    // Loading twice records nothing new.
    app.click("[data-testid=load-demo]").await?;
    app.wait_contains(".notice[role=status]", "36 ya estaban").await?;

    // Ajustes: the sandbox emisor and PAC, clearly labelled, each in its section.
    app.go("#/ajustes/emisor").await?;
    app.wait_contains("[data-testid=emisor-form]", "EKU9003173C9").await?;
    app.wait_contains("[data-testid=emisor-form]", "CSD de prueba del SAT").await?;
    app.click("[data-testid=ajustes-sections] a[data-section=pac]").await?;
    app.wait_contains("[data-testid=pac-form]", "simulador").await?;
    app.wait_contains("[data-testid=sandbox-faults]", "Mezcla de fallas").await?;
    app.screenshot("ajustes").await?;
    // The URL comes from the PAC's preset; a PAC without its credential is refused field by
    // field, and nothing changes: still sandbox.
    app.click("[data-testid=pac-form] button[type=submit]").await?;
    app.wait_contains("[data-testid=pac-form] .field-error", "Es obligatorio").await?;
    app.wait_contains("[data-testid=mode-chip]", "Modo sandbox").await?;

    app.go("#/tablero").await?;
    app.wait_contains("[data-testid=badge-bars]", "Timbrada").await?;
    app.screenshot("tablero").await?;

    // The database this console is on, and the drain processes live on it (this app's own).
    app.go("#/ajustes/base").await?;
    app.wait_contains("[data-testid=database-form]", "SQLite").await?;
    app.wait_contains("[data-testid=live-workers]", "timbra-app").await?;
    app.go("#/tablero").await?;
    app.wait_contains("[data-testid=database-and-drain] [data-testid=live-workers-count]", "1 proceso")
        .await?;

    // This desk works as personal (Ajustes › Este puesto, kept on this computer): personal may
    // not change settings (hidden/disabled here, refused by the API).
    app.go("#/ajustes/equipo").await?;
    app.type_into("[data-testid=seat-form] input[name='seat.name']", "Ana Mostrador")
        .await?;
    app.select("[data-testid=seat-form] select[name='seat.role']", "personal").await?;
    app.click("[data-testid=seat-form] button[type=submit]").await?;
    app.wait_contains("[data-testid=seat-form] [role=status]", "a nombre de Ana Mostrador")
        .await?;
    app.wait_contains(".ajustes", "solo lectura").await?;
    app.go("#/ajustes/pac").await?;
    let disabled = app.attr("[data-testid=pac-form] fieldset", "disabled").await?;
    check(disabled.is_some(), "con rol personal el formulario de PAC debe estar deshabilitado")?;
    app.go("#/ajustes/equipo").await?;

    // Nobody acts as contador until the contador has a PIN, and picking a role proves nothing:
    // the first PIN takes the CSD key's password (in sandbox, SAT's public one, as hinted).
    app.wait_contains("[data-testid=contador-no-pin]", "Configure el PIN del contador en Ajustes")
        .await?;
    let form = "[data-testid=role-pin-form]";
    app.wait_contains("[data-testid=role-pin-sandbox-hint]", "12345678a").await?;
    app.type_into(&format!("{form} input[name='pin.new']"), "246813").await?;
    app.type_into(&format!("{form} input[name='pin.repeat']"), "246813").await?;
    app.type_into(&format!("{form} input[name='pin.proof']"), "adivinada").await?;
    app.click(&format!("{form} button[type=submit]")).await?;
    app.wait_contains("[data-testid=role-pin-error]", "La prueba no es correcta")
        .await?;
    app.type_into(&format!("{form} input[name='pin.proof']"), "12345678a").await?;
    app.click(&format!("{form} button[type=submit]")).await?;
    app.wait_contains(&format!("{form} [role=status]"), "PIN del rol Contador guardado")
        .await?;
    app.screenshot("ajustes-pin-y-base").await?;

    // The desk acts as contador with the PIN from the sidebar; a wrong PIN is refused in words.
    app.click("[data-testid=act-as-contador]").await?;
    app.type_into("[data-testid=contador-pin]", "000000").await?;
    app.click("[data-testid=contador-enter]").await?;
    app.wait_contains("[data-testid=role-lock-error]", "El PIN no es correcto").await?;
    app.type_into("[data-testid=contador-pin]", "246813").await?;
    app.click("[data-testid=contador-enter]").await?;
    app.wait_contains("[data-testid=acting-contador]", "Desbloqueado hasta").await?;
    app.wait_contains("[data-testid=acting-as]", "actuando como Contador").await?;
    app.wait_contains("[data-testid=operator]", "Ana Mostrador").await?;
    app.screenshot("rol-desbloqueado").await?;
    app.click("[data-testid=leave-contador]").await?;
    app.find("[data-testid=act-as-contador]").await?;
    // Back to soporte.
    app.select("[data-testid=seat-form] select[name='seat.role']", "soporte").await?;
    app.click("[data-testid=seat-form] button[type=submit]").await?;
    app.wait_contains("[data-testid=operator]", "Soporte").await?;

    // English switch.
    app.click("[data-testid=lang-en]").await?;
    app.wait_contains("nav [data-nav=bandeja]", "Outbox").await?;
    app.wait_contains("[data-testid=sandbox-banner]", "Sandbox mode").await?;
    Ok(())
}

async fn wait_rows(app: &App, n: usize) -> Res {
    let start = std::time::Instant::now();
    let mut last = 0;
    while start.elapsed() < std::time::Duration::from_secs(10) {
        last = app.all("a.tr[data-sale-id]").await?.len();
        if last == n {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err(format!("se esperaban {n} filas, hay {last}"))
}

/// The state in words and the next step that the Factura page behind `factura` and its Bandeja
/// row show now, printed for the report of the strategy situations (`situación …` lines), with
/// a screenshot of the Bandeja (`bandeja-<name>.png`); back on the Factura page afterwards.
async fn situation_words(app: &App, name: &str, factura: &str) -> Res {
    let text = |e: fantoccini::elements::Element| async move { e.text().await.map_err(|e| e.to_string()) };
    let state = text(app.find("[data-testid=strategy] [data-badge]").await?).await?;
    let next = match app.all("[data-testid=next-step]").await?.into_iter().next() {
        Some(e) => text(e).await?,
        None => String::new(),
    };
    app.go("#/bandeja").await?;
    // `factura` may be the link's whole URL (tauri://localhost#/factura/1); rows link the hash.
    let hash = factura.rfind('#').map_or(factura, |i| &factura[i..]);
    let row = format!("a.tr[href='{hash}']");
    let row_state = app
        .wait_text(&format!("{row} [data-badge]"), "el estado de la fila", |t| !t.trim().is_empty())
        .await?;
    // The cell may be clamped to two lines; its title holds the whole sentence.
    let row_next = app
        .attr(&format!("{row} [data-testid=row-next]"), "title")
        .await?
        .unwrap_or_default();
    app.screenshot(&format!("bandeja-{name}")).await?;
    println!("situación {name}: Factura «{state}» · «{next}»; Bandeja «{row_state}» · «{row_next}»");
    app.go(factura).await?;
    app.find("[data-testid=strategy]").await?;
    Ok(())
}

/// Opens the Factura page's "¿Por qué no puedo…?" (the refused actions and their reasons).
async fn open_why_not(app: &App) -> Res {
    app.client
        .execute(
            "document.querySelectorAll('[data-testid=why-not]').forEach((d) => { d.open = true; });",
            vec![],
        )
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Waits for a button's state on the Factura page; `why` must appear in its reason line.
async fn expect_button(app: &App, action: &str, enabled: bool, why: &str) -> Res {
    let css = format!("[data-testid=actions] button[data-action={action}]");
    let start = std::time::Instant::now();
    loop {
        // Refused actions fold into "¿Por qué no puedo…?": open it so their reasons are visible.
        open_why_not(app).await?;
        let b = app.find(&css).await?;
        let now = b.is_enabled().await.map_err(|e| e.to_string())?;
        let text = app
            .find(&format!("[data-why={action}]"))
            .await?
            .text()
            .await
            .map_err(|e| e.to_string())?;
        if now == enabled && text.contains(why) {
            return Ok(());
        }
        if start.elapsed() > std::time::Duration::from_secs(10) {
            return Err(format!(
                "{action}: se esperaba habilitado={enabled} con motivo {why:?}; está habilitado={now}, motivo {text:?}"
            ));
        }
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    }
}

/// Emits a valid sale from the form and opens its Factura page; returns its hash route.
pub(crate) async fn emit_and_open(app: &App, folio: &str) -> Res<String> {
    app.go("#/emitir").await?;
    fill_sale(app, "URE180429TM6").await?;
    app.type_into("input[name='folio']", folio).await?;
    app.wait_contains("[data-total=total]", "$116.00").await?;
    app.click("[data-testid=emitir-submit]").await?;
    app.wait_contains("[data-testid=emitir-recorded]", "registrada").await?;
    let href = app
        .attr("[data-testid=recorded-link]", "href")
        .await?
        .ok_or("el enlace a la factura no tiene href")?;
    app.go(&href).await?;
    app.find("[data-testid=strategy]").await?;
    Ok(href)
}

/// Waits (20 s) until the invoice behind a Factura route has evidence of `kind` with `outcome`
/// (asked through the app's own IPC, as the page does); fails listing the evidence it has.
async fn wait_evidence(app: &App, factura: &str, kind: &str, outcome: &str) -> Res {
    let id: i64 = factura
        .rsplit('/')
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("ruta de factura sin id: {factura}"))?;
    let start = std::time::Instant::now();
    let mut seen = Vec::new();
    while start.elapsed() < std::time::Duration::from_secs(20) {
        let d = app.invoke("invoice_detail", serde_json::json!({ "invoiceId": id })).await?;
        seen = d["evidence"]
            .as_array()
            .map(|a| a.iter().map(|e| format!("{}:{}", e["kind"], e["outcome"])).collect())
            .unwrap_or_default();
        if d["evidence"]
            .as_array()
            .is_some_and(|a| a.iter().any(|e| e["kind"] == kind && e["outcome"] == outcome))
        {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    Err(format!("se esperaba evidencia {kind}:{outcome}; hay {seen:?}"))
}

async fn set_fault(app: &App, fault: &str, says: &str) -> Res {
    app.go("#/ajustes/pac").await?;
    app.select("[data-testid=sandbox-fault]", fault).await?;
    app.wait_contains(".ajustes > .notice[role=status]", says).await?;
    Ok(())
}

/// The sandbox PAC stamps and never answers: the outcome is unknown, the badge says Reanudar,
/// Reintentar resumes (Reprocesar and failover unavailable, naming the evidence), also after
/// the PAC then goes down; the contador alone may force the failover. When the PAC answers
/// again, Reintentar re-sends the same bytes and key and the PAC returns the CFDI it had made:
/// Timbrada with that same UUID, one CFDI, one attempt.
pub async fn timeout_tras_certificar(app: &App) -> Res {
    set_fault(app, "timeout_after_certify", "Timbra y no contesta").await?;
    let factura = emit_and_open(app, "4472").await?;

    // The first send times out after the PAC certified (4 s). Right then the PAC goes down,
    // so the resumes the drain schedules (after 3–6 s) are refused: a later "not sent" does
    // not settle the earlier unknown outcome (strategy case 10), and the badge stays Reanudar.
    app.wait_contains("[data-testid=timeline] li[data-kind=pac_response]", "Sin respuesta clara de")
        .await?;
    app.invoke("set_sandbox_fault", serde_json::json!({ "fault": "outage" })).await?;
    app.wait_badge("reanudar").await?;
    app.wait_contains("[data-testid=reasons]", "sin respuesta clara").await?;
    expect_button(app, "retry", true, "No reprocesa: El PAC pudo haber timbrado").await?;
    app.wait_contains("[data-testid=actions] button[data-action=retry]", "Reintentar · Reanudar")
        .await?;
    expect_button(app, "failover", false, "un envío terminó sin respuesta clara y nada lo ha aclarado").await?;
    expect_button(app, "finalize", false, "Todavía no hay CFDI").await?;
    app.wait_contains("[data-testid=timeline]", "No llegó a").await?;
    expect_button(app, "download_xml", false, "Todavía no hay CFDI").await?;
    check(
        app.all("button[data-action=force_failover]").await?.is_empty(),
        "soporte no ve forzar respaldo",
    )?;
    app.screenshot("factura-reanudar").await?;
    app.wait_contains("[data-testid=next-step]", "Timbra está confirmando con el PAC; no se duplicará")
        .await?;
    situation_words(app, "timeout-tras-certificar", &factura).await?;

    // The contador (its PIN set in Ajustes, entered from the sidebar) sees the forced failover
    // (it needs a note); nothing to verify yet.
    set_contador_pin(app).await?;
    app.go(&factura).await?;
    act_as_contador(app).await?;
    expect_button(app, "force_failover", true, "").await?;
    expect_button(app, "verify_absent", false, "No hay un intento en duda").await?;
    app.click("button[data-action=force_failover]").await?;
    app.find("[data-testid=note-required] textarea").await?;
    app.click("[data-testid=note-required] button:not(.danger)").await?;
    leave_contador(app).await?;

    // The PAC answers again; Reintentar resumes with the same bytes and key.
    set_fault(app, "none", "Sin fallas").await?;
    app.go(&factura).await?;
    app.find("[data-testid=strategy]").await?;
    if let Ok(b) = app.find("[data-testid=actions] button[data-action=retry]").await {
        if b.is_enabled().await.unwrap_or(false) {
            b.click().await.map_err(|e| format!("Reintentar: {e}"))?;
        }
    }
    app.wait_badge("timbrada").await?;
    let uuid = app.wait_text("[data-testid=uuid]", "un UUID", |t| t.trim().len() == 36).await?;
    let uuid = uuid.trim();
    let rows = app.all("[data-testid=cfdis] tbody tr").await?;
    check(rows.len() == 1, format!("debe haber un solo CFDI; hay {}", rows.len()))?;
    // The PAC answered "already stamped" with the CFDI the unanswered send had created.
    let entries = app.all("[data-testid=timeline] li[data-kind=pac_response]").await?;
    let mut texts = Vec::new();
    for e in entries {
        texts.push(e.text().await.map_err(|e| e.to_string())?);
    }
    check(
        texts
            .iter()
            .any(|t| t.contains("dice que ya la había timbrado") && t.contains(uuid)),
        format!("se esperaba una respuesta «ya la había timbrado» con {uuid}: {texts:?}"),
    )?;
    check(
        texts.iter().any(|t| t.contains("Sin respuesta clara de")),
        format!("se esperaba el envío sin respuesta clara: {texts:?}"),
    )?;
    let attempts = app.all("[data-testid=attempts] tbody tr").await?;
    check(attempts.len() == 1, format!("reanudar no crea intentos; hay {}", attempts.len()))?;
    Ok(())
}

/// The sandbox PAC is down (connections refused: known not created): the drain fails over by
/// itself to the backup PAC with the same sealed bytes, and the invoice is stamped there.
pub async fn caida_y_respaldo(app: &App) -> Res {
    set_fault(app, "outage", "Caído").await?;
    let factura = emit_and_open(app, "4473").await?;
    app.wait_badge("timbrada").await?;
    app.wait_contains("[data-testid=reasons]", "Timbrada por sandbox-respaldo").await?;
    let attempts = app
        .wait_text("[data-testid=attempts]", "dos intentos", |t| t.contains("sandbox-respaldo"))
        .await?;
    check(
        attempts.contains("PAC de respaldo"),
        format!("el segundo intento debe ser de respaldo: {attempts:?}"),
    )?;
    app.wait_contains("[data-testid=timeline]", "No llegó a").await?;
    app.screenshot("factura-respaldo").await?;
    situation_words(app, "caida-y-respaldo", &factura).await?;
    Ok(())
}

/// The PAC rejects the document (its clock says the Fecha is older than 72 h: SAT code 401):
/// Reprocesar — Reintentar reprocesses, resuming and failing over are refused because the
/// document is the problem. When the PAC's clock is right again, Reintentar builds attempt 2
/// from the immutable sale with a new key and Fecha, and it is stamped.
pub async fn rechazo_y_reproceso(app: &App) -> Res {
    set_fault(app, "fecha_expired", "rechaza la Fecha").await?;
    let factura = emit_and_open(app, "4474").await?;
    app.wait_badge("reprocesar").await?;
    app.wait_contains("[data-testid=reasons]", "rechazó la Fecha").await?;
    // SAT's 401 in words; the code itself waits in the technical detail.
    app.wait_contains(
        "[data-testid=timeline] li[data-kind=pac_response]",
        "La Fecha del documento está fuera de las 72 horas que acepta el SAT",
    )
    .await?;
    app.wait_contains("[data-testid=actions] button[data-action=retry]", "Reintentar · Reprocesar")
        .await?;
    expect_button(app, "retry", true, "No reanuda: Reenviar el mismo documento fallaría igual").await?;
    expect_button(app, "failover", false, "otro PAC lo rechazaría igual").await?;
    app.screenshot("factura-reprocesar").await?;
    situation_words(app, "fecha-rechazada", &factura).await?;

    set_fault(app, "none", "Sin fallas").await?;
    app.go(&factura).await?;
    app.click("[data-testid=actions] button[data-action=retry]").await?;
    app.wait_badge("timbrada").await?;
    app.wait_contains("[data-testid=attempts] tbody", "reproceso").await?;
    let rows = app.all("[data-testid=attempts] tbody tr").await?;
    check(
        rows.len() == 2,
        format!("se esperaban dos intentos (el rechazado y el reproceso); hay {}", rows.len()),
    )?;
    app.wait_contains("[data-testid=timeline] li[data-kind=operator_action]", "Soporte")
        .await?;
    Ok(())
}

/// Writes a file that is not a database where the app's database goes.
/// This desk set up as soporte's before the app starts (its seat file, the name not confirmed:
/// the first run still asks who uses the console). A new seat is a cashier's (seat.rs); the
/// flows that load the demo data, drive the simulator's faults or change settings sit at a
/// soporte desk.
pub fn soporte_seat(dir: &std::path::Path) -> Res<Env> {
    let seat = dir.join("config").join(outbox::location::APP_IDENTIFIER).join("puesto.json");
    std::fs::create_dir_all(seat.parent().ok_or("sin carpeta")?).map_err(|e| e.to_string())?;
    std::fs::write(&seat, serde_json::json!({ "role": "soporte" }).to_string()).map_err(|e| e.to_string())?;
    Ok(Env::new())
}

pub fn damaged_database(dir: &std::path::Path) -> Res<Env> {
    std::fs::write(dir.join("timbra.db"), b"esto no es una base de datos SQLite, es texto").map_err(|e| e.to_string())?;
    Ok(Env::new())
}

/// A damaged database: the app opens anyway and says, in words, what is wrong and where —
/// the coded error crossed IPC; nothing crashed and nothing else is offered.
pub async fn base_danada(app: &App) -> Res {
    let text = app
        .wait_contains("[data-testid=startup-error]", "Timbra no pudo abrir su base de datos")
        .await?;
    check(text.contains("timbra.db"), format!("el mensaje debe nombrar el archivo: {text:?}"))?;
    check(
        text.contains("dañada") || text.contains("No se pudo abrir"),
        format!("el mensaje debe decir qué pasa: {text:?}"),
    )?;
    check(
        app.all("[data-testid=rows]").await?.is_empty(),
        "sin base de datos no se muestra la Bandeja",
    )?;
    Ok(())
}

/// Modo sandbox with a Finkok-flavoured primary (it answers non-creating `stamped` lookups and
/// may say "already stamped" without the XML) and an SW-flavoured backup.
pub fn finkok_primary(dir: &std::path::Path) -> Res<Env> {
    soporte_seat(dir)?;
    Ok(vec![("TIMBRA_SANDBOX_PRIMARY", "finkok")])
}

/// Modo sandbox with a Facturapi-flavoured primary (JSON attempts; it issues for the sandbox
/// emisor and answers lookups by `external_id`) and an SW-flavoured backup.
pub fn facturapi_primary(dir: &std::path::Path) -> Res<Env> {
    soporte_seat(dir)?;
    Ok(vec![("TIMBRA_SANDBOX_PRIMARY", "facturapi")])
}

/// Facturapi accepts the invoice as `pending` (202): the outcome is open, the badge says
/// Reanudar, reprocess and failover are refused; the drain looks it up by `external_id`
/// (seen pending) and never creates it again. When Facturapi finishes, the lookup finds the
/// CFDI, its XML is fetched and checked against the sale: Timbrada, one CFDI, one attempt
/// whose frozen body is JSON (nothing sealed locally, as the timeline says).
pub async fn facturapi_pendiente(app: &App) -> Res {
    set_fault(app, "pending", "pendiente (202)").await?;
    let factura = emit_and_open(app, "4477").await?;
    app.wait_contains("[data-testid=timeline] li[data-kind=sale_recorded]", "Timbra no sella localmente")
        .await?;
    app.wait_badge("reanudar").await?;
    wait_evidence(app, &factura, "lookup", "pending").await?;
    expect_button(app, "failover", false, "").await?;
    situation_words(app, "facturapi-pendiente", &factura).await?;
    app.wait_badge("timbrada").await?;
    app.wait_text("[data-testid=uuid]", "un UUID", |t| t.trim().len() == 36).await?;
    let rows = app.all("[data-testid=cfdis] tbody tr").await?;
    check(rows.len() == 1, format!("debe haber un solo CFDI; hay {}", rows.len()))?;
    let attempts = app.all("[data-testid=attempts] tbody tr").await?;
    check(attempts.len() == 1, format!("pendiente no crea intentos; hay {}", attempts.len()))?;
    app.screenshot("facturapi-pendiente").await?;
    Ok(())
}

/// The Finkok-flavoured PAC stamps and never answers; its `stamped` lookup lags (not found),
/// and the same bytes re-sent come back "already stamped" without the XML (307): the CFDI
/// exists but Timbra has no data — Finalizar, the only action. Reintentar and the backup are
/// refused because a CFDI exists. When the lookup answers, Finalizar fetches that CFDI
/// without creating another: Timbrada, one CFDI, one attempt.
pub async fn finkok_finalizar(app: &App) -> Res {
    set_fault(app, "stamped_without_xml", "sin el XML").await?;
    let factura = emit_and_open(app, "4475").await?;
    app.wait_contains("[data-testid=timeline] li[data-kind=pac_response]", "Sin respuesta clara de")
        .await?;
    app.wait_badge("reanudar").await?;
    // The drain looks the attempt up first (the lookup lags: not found), then Reintentar
    // re-sends the same bytes and key.
    wait_evidence(app, &factura, "lookup", "not_found").await?;
    expect_button(app, "retry", true, "").await?;
    app.click("[data-testid=actions] button[data-action=retry]").await?;
    app.wait_badge("finalizar").await?;
    app.wait_contains("[data-testid=reasons]", "confirma un CFDI ya timbrado pero no entregó sus datos")
        .await?;
    wait_evidence(app, &factura, "pac_response", "already_stamped").await?;
    expect_button(app, "finalize", true, "").await?;
    expect_button(app, "retry", false, "Ya existe un CFDI para esta venta").await?;
    expect_button(app, "failover", false, "Ya existe un CFDI para esta venta").await?;
    expect_button(app, "download_xml", false, "No hay XML timbrado que descargar").await?;
    app.screenshot("factura-finalizar").await?;
    situation_words(app, "307-sin-xml", &factura).await?;

    // The lookup answers again (the lag is back to 1 s): Finalizar fetches the CFDI.
    set_fault(app, "none", "Sin fallas").await?;
    app.go(&factura).await?;
    app.find("[data-testid=strategy]").await?;
    if let Ok(b) = app.find("[data-testid=actions] button[data-action=finalize]").await {
        if b.is_enabled().await.unwrap_or(false) {
            b.click().await.map_err(|e| format!("Finalizar: {e}"))?;
        }
    }
    app.wait_badge("timbrada").await?;
    app.wait_text("[data-testid=uuid]", "un UUID", |t| t.trim().len() == 36).await?;
    let rows = app.all("[data-testid=cfdis] tbody tr").await?;
    check(rows.len() == 1, format!("debe haber un solo CFDI; hay {}", rows.len()))?;
    let attempts = app.all("[data-testid=attempts] tbody tr").await?;
    check(attempts.len() == 1, format!("finalizar no crea intentos; hay {}", attempts.len()))?;
    expect_button(app, "finalize", false, "Ya está finalizada").await?;
    Ok(())
}

/// The Finkok-flavoured primary stamps and never answers, then goes down (its lookups fail
/// and say nothing). The contador forces the backup with a note; the backup stamps. When
/// Finkok answers again its non-creating lookup finds the first CFDI: two CFDIs for one sale —
/// Duplicado. Every action is refused (the contador decides) except downloading and notes.
pub async fn finkok_duplicado(app: &App) -> Res {
    // Then the contador resolves the pair from the Duplicados page and follows the loser's
    // cancellation to SAT's last word.
    set_contador_pin(app).await?;
    set_fault(app, "timeout_after_certify", "Timbra y no contesta").await?;
    let factura = emit_and_open(app, "4476").await?;
    app.wait_contains("[data-testid=timeline] li[data-kind=pac_response]", "Sin respuesta clara de")
        .await?;
    app.invoke("set_sandbox_fault", serde_json::json!({ "fault": "outage" })).await?;
    app.wait_badge("reanudar").await?;

    // The contador enters with the PIN and forces the backup (the fresh unlock is spent by it).
    act_as_contador(app).await?;
    expect_button(app, "force_failover", true, "").await?;
    app.click("button[data-action=force_failover]").await?;
    app.type_into(
        "[data-testid=note-required] textarea",
        "Finkok no contesta y el cliente espera; se acepta el riesgo de duplicado.",
    )
    .await?;
    app.click("[data-testid=note-required] button.danger").await?;
    app.wait_badge("timbrada").await?;
    app.wait_contains("[data-testid=reasons]", "puede haber timbrado").await?;

    // Finkok answers again; its lookup of the abandoned attempt finds the first CFDI (the
    // drain looks again 24–48 s after stamping: settling a possible duplicate is not urgent).
    app.invoke("set_sandbox_fault", serde_json::json!({ "fault": "none" })).await?;
    app.go(&factura).await?;
    app.wait_text_for(
        "[data-testid=strategy] [data-badge=duplicado]",
        "Necesita una decisión",
        |t| t.contains("Necesita una decisión"),
        std::time::Duration::from_secs(70),
    )
    .await?;
    app.wait_contains("[data-testid=next-step]", "Decide el contador").await?;
    app.wait_badge("duplicado").await?;
    app.wait_contains("[data-testid=reasons]", "Hay más de un CFDI para esta venta")
        .await?;
    let rows = app.all("[data-testid=cfdis] tbody tr").await?;
    check(rows.len() == 2, format!("deben verse los dos CFDI; hay {}", rows.len()))?;
    let decide = "Hay dos CFDI: decide el contador";
    for action in ["retry", "finalize", "failover", "force_failover", "verify_absent"] {
        expect_button(app, action, false, decide).await?;
    }
    expect_button(app, "download_xml", true, "").await?;
    app.find("#note-text").await?;
    app.wait_contains("[data-testid=timeline] li[data-kind=note_added]", "riesgo de duplicado")
        .await?;
    app.screenshot("factura-duplicado").await?;
    situation_words(app, "respaldo-forzado-duplicado", &factura).await?;

    // Soporte sees the queue but cannot decide.
    leave_contador(app).await?;
    app.go("#/duplicados").await?;
    app.find("[data-testid=only-contador]").await?;
    check(
        app.all("[data-testid=decide-form]").await?.is_empty(),
        "soporte no ve el formulario de decisión",
    )?;

    // The contador keeps the CFDI the invoice shows and cancels the other, motivo 02. Back in
    // the role with the PIN, the contador locks it on stepping away (still the contador's desk).
    act_as_contador(app).await?;
    app.click("[data-testid=role-lock-button]").await?;
    app.wait_text("[data-testid=acting-contador]", "bloqueado", |t| !t.contains("Desbloqueado hasta"))
        .await?;
    app.go("#/duplicados").await?;
    app.wait_contains("[data-testid=duplicate-group]", "Dos o más CFDI de una misma venta")
        .await?;
    let side = app.all("[data-testid=duplicate-group] tbody tr[data-uuid]").await?;
    check(
        side.len() == 2,
        format!("la cola muestra los dos CFDI lado a lado; hay {}", side.len()),
    )?;
    app.screenshot("duplicados-cola").await?;
    app.click("[data-testid=duplicate-group] tr:has(.chip) input[data-testid=survivor]")
        .await?;
    app.select("[data-testid=decide-motivo]", "02").await?;
    app.type_into(
        "[data-testid=decide-note]",
        "Se conserva el CFDI entregado al cliente; el del PAC principal se cancela.",
    )
    .await?;
    app.screenshot("duplicados-decision").await?;
    // Locked, the risky action asks for the PIN at the moment it is taken (a wrong PIN is
    // refused in words), and the decision goes through once.
    app.click("[data-testid=decide]").await?;
    app.wait_contains("[data-testid=pin-prompt]", "Confirme con el PIN del rol Contador")
        .await?;
    app.type_into("[data-testid=pin-prompt-input]", "000000").await?;
    app.click("[data-testid=pin-prompt-confirm]").await?;
    app.wait_contains("[data-testid=pin-prompt-error]", "El PIN no es correcto").await?;
    app.type_into("[data-testid=pin-prompt-input]", "135792").await?;
    app.screenshot("pin-accion-de-riesgo").await?;
    app.click("[data-testid=pin-prompt-confirm]").await?;

    // The drain sends the cancellation through the PAC that stamped it and follows SAT.
    app.go(&factura).await?;
    app.wait_text_for(
        "[data-testid=cancellations]",
        "Cancelado sin aceptación",
        |t| t.contains("Cancelado sin aceptación"),
        std::time::Duration::from_secs(60),
    )
    .await?;
    app.wait_badge("timbrada").await?;
    app.wait_contains("[data-testid=reasons]", "se cancelaron ante el SAT").await?;
    app.wait_contains("[data-testid=timeline] li[data-kind=duplicado_decidido]", "")
        .await?;
    app.wait_contains("[data-testid=timeline] li[data-kind=cancellation]", "").await?;
    app.screenshot("factura-duplicado-cancelado").await?;
    app.go("#/duplicados").await?;
    app.find("[data-testid=no-duplicates]").await?;
    leave_contador(app).await?;
    Ok(())
}

/// With at most one send per attempt (an Ajustes setting) and the PAC down, the first refused
/// connection exhausts the tries: Atención, saying so. Nothing was created, so Reintentar
/// resumes (reprocessing is refused: the document is fine) and the backup is allowed. Soporte
/// sends it to the contador with a note (a hand-off: nothing else changes), then uses the
/// backup: the same sealed bytes there, and the invoice is stamped.
pub async fn caida_hasta_atencion(app: &App) -> Res {
    app.invoke("save_drain", serde_json::json!({ "drain": { "concurrency": 2, "max_tries": 1 } }))
        .await?;
    set_fault(app, "outage", "Caído").await?;
    let factura = emit_and_open(app, "4477").await?;
    app.wait_badge("atencion").await?;
    app.wait_contains("[data-testid=reasons]", "Se agotaron los intentos automáticos en sandbox")
        .await?;
    app.wait_contains("[data-testid=timeline] li[data-kind=pac_response]", "No llegó a")
        .await?;
    expect_button(app, "retry", true, "No reprocesa: El documento está bien").await?;
    expect_button(app, "failover", true, "").await?;
    expect_button(app, "finalize", false, "Todavía no hay CFDI").await?;
    expect_button(app, "download_xml", false, "Todavía no hay CFDI").await?;
    app.screenshot("factura-atencion").await?;
    situation_words(app, "intentos-agotados", &factura).await?;

    // Enviar al contador: a hand-off with a note; the badge and the buttons stay as they were.
    expect_button(app, "send_to_contador", true, "no cambia su estado").await?;
    app.click("[data-testid=actions] button[data-action=send_to_contador]").await?;
    app.type_into(
        "[data-testid=note-required] textarea",
        "El PAC lleva caído toda la mañana; ¿usamos el respaldo o esperamos?",
    )
    .await?;
    app.click("[data-testid=note-required] button.danger").await?;
    app.wait_contains("[data-testid=notes] li.note:not([data-resolved])", "¿usamos el respaldo")
        .await?;
    app.wait_contains("[data-testid=timeline]", "Acción: Enviar al contador").await?;
    app.wait_badge("atencion").await?;
    expect_button(app, "failover", true, "").await?;

    app.click("[data-testid=actions] button[data-action=failover]").await?;
    // The action on the timeline first: a failure then says whether the click was taken.
    app.wait_contains("[data-testid=timeline]", "Acción: Usar PAC de respaldo").await?;
    app.wait_badge("timbrada").await?;
    app.wait_contains("[data-testid=reasons]", "Timbrada por sandbox-respaldo").await?;
    Ok(())
}

/// Strategy case 19 in the console: the PAC stamped and the answer was lost; by the resume it
/// validates first with its clock past the window and answers 401 although the CFDI exists.
/// Atención — never one-click Reprocesar; the contador reprocesses accepting the risk, with a
/// note, and the invoice shows the open question as *posible duplicado*.
pub async fn rechazo_tras_desconocido(app: &App) -> Res {
    set_contador_pin(app).await?;
    set_fault(app, "timeout_after_certify", "Timbra y no contesta").await?;
    let factura = emit_and_open(app, "4478").await?;
    app.wait_contains("[data-testid=timeline] li[data-kind=pac_response]", "Sin respuesta clara de")
        .await?;
    set_fault(app, "validates_first_expired", "Valida antes de buscar").await?;
    app.go(&factura).await?;
    app.wait_badge("atencion").await?;
    app.wait_contains("[data-testid=reasons]", "el rechazo no prueba que no exista el primer CFDI")
        .await?;
    // Soporte: Reintentar only re-sends the same bytes (a safe probe); no reprocess.
    expect_button(app, "retry", true, "No reprocesa: Un rechazo después de un resultado desconocido").await?;
    check(
        app.all("button[data-action=reprocess_accepting_risk]").await?.is_empty(),
        "soporte no ve reprocesar aceptando el riesgo",
    )?;
    // The contador (entered with the PIN) sees the risk-accepting path and the records that
    // settle the question.
    act_as_contador(app).await?;
    expect_button(app, "reprocess_accepting_risk", true, "").await?;
    expect_button(app, "verify_absent", true, "").await?;
    expect_button(app, "record_found", true, "").await?;
    expect_button(app, "force_failover", false, "Un rechazo después de un resultado desconocido").await?;
    app.screenshot("factura-rechazo-tras-desconocido").await?;

    set_fault(app, "none", "Sin fallas").await?;
    app.go(&factura).await?;
    app.click("[data-testid=actions] button[data-action=reprocess_accepting_risk]")
        .await?;
    app.type_into(
        "[data-testid=note-required] textarea",
        "El cliente necesita la factura hoy; revisaré el portal del PAC por el primer CFDI.",
    )
    .await?;
    app.click("[data-testid=note-required] button.danger").await?;
    // The action on the timeline first: a failure then says whether the click was taken.
    app.wait_contains("[data-testid=timeline]", "Acción: Reprocesar aceptando el riesgo")
        .await?;
    app.wait_badge("timbrada").await?;
    app.wait_contains("[data-testid=strategy]", "posible duplicado").await?;
    let attempts = app.all("[data-testid=attempts] tbody tr").await?;
    check(attempts.len() == 2, format!("dos intentos; hay {}", attempts.len()))?;
    app.screenshot("factura-riesgo-aceptado").await?;
    leave_contador(app).await?;
    Ok(())
}

/// A one-connection-at-a-time SMTP server on 127.0.0.1 that accepts every message and answers
/// `250 2.0.0 Ok: queued as E2E-<n>`; returns its port and how many messages it accepted.
fn tiny_smtp() -> Res<(u16, std::sync::Arc<std::sync::atomic::AtomicUsize>)> {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("smtp: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut out = match stream.try_clone() {
                Ok(s) => s,
                Err(_) => continue,
            };
            let mut lines = BufReader::new(stream);
            let _ = out.write_all(b"220 e2e ESMTP\r\n");
            let mut in_data = false;
            let mut line = String::new();
            while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
                let l = line.trim_end().to_ascii_uppercase();
                let reply: Option<String> = if in_data {
                    (l == ".").then(|| {
                        in_data = false;
                        let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                        format!("250 2.0.0 Ok: queued as E2E-{n}")
                    })
                } else if l.starts_with("EHLO") || l.starts_with("HELO") {
                    Some("250 e2e".into())
                } else if l.starts_with("DATA") {
                    in_data = true;
                    Some("354 end with <CRLF>.<CRLF>".into())
                } else if l.starts_with("QUIT") {
                    let _ = out.write_all(b"221 bye\r\n");
                    break;
                } else {
                    Some("250 Ok".into())
                };
                if let Some(r) = reply {
                    let _ = out.write_all(format!("{r}\r\n").as_bytes());
                }
                line.clear();
            }
        }
    });
    Ok((port, accepted))
}

/// `POST /v1/sales` over plain HTTP/1.1 (what a POS would send); the status and the body.
fn post_sale(base: &str, token: &str, key: &str, body: &str) -> Res<(u16, String)> {
    use std::io::{Read, Write};
    let host = base.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(host).map_err(|e| format!("{host}: {e}"))?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let req = format!(
        "POST /v1/sales HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nIdempotency-Key: {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).map_err(|e| e.to_string())?;
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("respuesta HTTP ilegible: {answer:?}"))?;
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Ok((status, body))
}

/// Issue 12 in the console: SMTP and the local API configured in Ajustes (the app starts the
/// server, a token is shown once), a POS records a sale with `POST /v1/sales` and it shows in
/// the Bandeja; a stamped invoice's PDF downloaded from the Factura page (a real PDF file) and
/// e-mailed: the request and the SMTP server's answer on the timeline.
pub async fn documentos_y_api(app: &App) -> Res {
    let (smtp_port, accepted) = tiny_smtp()?;
    app.go("#/ajustes/correo").await?;
    app.find("[data-testid=smtp-form]").await?;
    app.type_into("input[name=smtp_host]", "127.0.0.1").await?;
    app.type_into("input[name=smtp_port]", &smtp_port.to_string()).await?;
    app.select("select[name=smtp_tls]", "none").await?;
    app.type_into("input[name=smtp_from]", "facturas@ejemplo.mx").await?;
    app.click("[data-testid=smtp-form] button[type=submit]").await?;
    app.wait_contains("[data-testid=channels-message]", "Ajustes de correo guardados")
        .await?;

    // The API: a bad address is refused naming the field; port 0 picks a free one.
    app.click("input[name=api_enabled]").await?;
    app.type_into("input[name=listen]", "0.0.0.0:8787").await?;
    app.click("[data-testid=api-form] button[type=submit]").await?;
    app.wait_contains("[data-testid=api-form] .field-error", "solo 127.0.0.1").await?;
    app.type_into("input[name=listen]", "127.0.0.1:0").await?;
    app.click("[data-testid=api-form] button[type=submit]").await?;
    let running = app.wait_contains("[data-testid=api-running]", "http://127.0.0.1:").await?;
    let base = running
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .ok_or_else(|| format!("sin dirección: {running:?}"))?
        .to_string();
    app.type_into("input[name=token_name]", "pos-caja-1").await?;
    app.click("[data-testid=token-form] button[type=submit]").await?;
    let token = app
        .wait_text("[data-testid=token-value]", "el token", |t| t.trim().starts_with("tbr_"))
        .await?
        .trim()
        .to_string();
    app.wait_contains("[data-testid=tokens]", "pos-caja-1").await?;
    app.client
        .execute("document.querySelector('[data-testid=api-form]').scrollIntoView();", vec![])
        .await
        .map_err(|e| e.to_string())?;
    app.screenshot("ajustes-api").await?;

    // A POS records a sale through the API with that token; a wrong token is refused.
    let now = app.invoke("local_now", serde_json::json!({})).await?;
    let now = now.as_str().ok_or("local_now no es texto")?;
    let sale = std::fs::read_to_string(crate::harness::repo_root().join("tests/fixtures/sales/ingreso-pedido-4471.json"))
        .map_err(|e| e.to_string())?;
    let mut sale: serde_json::Value = serde_json::from_str(&sale).map_err(|e| e.to_string())?;
    sale["sale_id"] = "pos-e2e-1".into();
    sale["occurred_at"] = now.into();
    let body = sale.to_string();
    let (status, answer) = post_sale(&base, "tbr_0000", "pos-e2e-1", &body)?;
    check(status == 401, format!("un token falso debe dar 401; dio {status} {answer}"))?;
    let (status, answer) = post_sale(&base, &token, "pos-e2e-1", &body)?;
    check(status == 201, format!("POST /v1/sales debía dar 201; dio {status} {answer}"))?;
    app.go("#/bandeja").await?;
    app.wait_contains("a.tr[data-sale-id='pos-e2e-1']", "UNIVERSIDAD ROBOTICA").await?;

    // A stamped invoice: its PDF from the Factura page is a PDF file.
    emit_and_open(app, "4490").await?;
    app.wait_badge("timbrada").await?;
    app.click("[data-testid=download-pdf]").await?;
    let saved = app.wait_contains("[data-testid=doc-saved]", ".pdf").await?;
    let path = saved.trim().trim_start_matches("Guardado en").trim().to_string();
    let pdf = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    check(pdf.starts_with(b"%PDF"), format!("{path} no empieza con %PDF"))?;
    app.click("[data-testid=actions] button[data-action=download_xml]").await?;
    app.wait_contains(".notice[role=status]", ".xml").await?;

    // E-mail: queued, then the worker sends it and the server's answer is on the timeline.
    app.type_into("[data-testid=email-to]", "cliente@ejemplo.mx").await?;
    app.click("[data-testid=email-send]").await?;
    app.wait_contains("[data-testid=email-queued]", "cliente@ejemplo.mx").await?;
    app.wait_contains("[data-testid=timeline] li[data-kind=email_requested]", "cliente@ejemplo.mx")
        .await?;
    app.wait_text_for(
        "[data-testid=timeline] li[data-kind=email_attempt]",
        "la respuesta del servidor SMTP",
        |t| t.contains("Ok: queued as E2E-1"),
        std::time::Duration::from_secs(30),
    )
    .await?;
    check(
        accepted.load(std::sync::atomic::Ordering::SeqCst) == 1,
        "el servidor SMTP debía recibir exactamente un mensaje",
    )?;
    app.client
        .execute(
            "document.querySelector('[data-testid=documents]').scrollIntoView(); window.scrollBy(0, -280); \
             document.querySelector('main, .content')?.scrollBy?.(0, -280);",
            vec![],
        )
        .await
        .map_err(|e| e.to_string())?;
    app.screenshot("factura-documentos").await?;

    // Bulk export of today's stamped invoices to a ZIP, with its progress.
    app.go("#/ajustes/correo").await?;
    app.find("[data-testid=export-form]").await?;
    let day = &now[..10];
    for n in ["desde", "hasta"] {
        pick_date(app, "[data-testid=export-form]", n, day).await?;
    }
    app.click("[data-testid=export-form] button[type=submit]").await?;
    let done = app.wait_contains("[data-testid=channels-message]", "facturas exportadas a").await?;
    let zip = done
        .split(" exportadas a ")
        .nth(1)
        .map(str::trim)
        .ok_or_else(|| format!("sin ruta: {done:?}"))?;
    let bytes = std::fs::read(zip).map_err(|e| format!("{zip}: {e}"))?;
    check(bytes.starts_with(b"PK"), format!("{zip} no es un ZIP"))?;
    check(
        !done.starts_with("0 "),
        format!("la exportación debía traer la factura timbrada: {done:?}"),
    )?;
    app.wait_contains("[data-testid=export-form]", "facturas").await?;
    app.client
        .execute("document.querySelector('[data-testid=smtp-form]').scrollIntoView();", vec![])
        .await
        .map_err(|e| e.to_string())?;
    app.screenshot("ajustes-exportar").await?;
    Ok(())
}

/// A PPD invoice from the Emitir form, stamped; from its Factura page a payment above the
/// balance is refused with the numbers, then a partial payment is registered: its CFDI is
/// stamped by the drain and the balance drops. The Bandeja's "PPD con saldo" lists it; the
/// Reportes page shows the month with its chart.
pub async fn pago_parcial(app: &App) -> Res {
    app.wait_contains("[data-testid=sandbox-banner]", "Modo sandbox").await?;
    app.go("#/emitir").await?;
    fill_sale(app, "URE180429TM6").await?;
    app.choose("", "metodo_pago", "PPD", "PPD").await?;
    // With PPD the only forma de pago SAT allows is 99.
    app.choose("", "forma_pago", "99", "99").await?;
    app.wait_contains("[data-total=total]", "$116.00").await?;
    app.click("[data-testid=emitir-submit]").await?;
    app.wait_contains("[data-testid=emitir-recorded]", "registrada").await?;
    app.click("[data-testid=recorded-link]").await?;
    app.wait_badge("timbrada").await?;
    let uuid = app.wait_text("[data-testid=uuid]", "un UUID", |t| t.trim().len() == 36).await?;
    let uuid = uuid.trim().to_string();

    // The balance of a stamped PPD invoice: all of it, no payments yet.
    app.wait_contains("[data-testid=payments] [data-testid=balance]", "$116.00").await?;
    app.wait_contains("[data-testid=payments]", "Aún no hay pagos").await?;

    // More than the balance: refused with the numbers, nothing recorded.
    app.click("[data-testid=payment-open]").await?;
    app.type_into("[data-testid=payment-form] input[name=amount]", "200.00").await?;
    app.select("[data-testid=payment-form] select[name=forma_pago]", "03").await?;
    app.click("[data-testid=payment-submit]").await?;
    let refused = app.wait_contains("[data-testid=payment-error]", "excede el saldo").await?;
    check(
        refused.contains("$200.00") && refused.contains("$116.00"),
        format!("la negativa debe decir el monto y el saldo: {refused:?}"),
    )?;
    check(
        app.all("[data-testid=payment-rows] tbody tr").await?.is_empty(),
        "un pago rechazado no debe registrarse",
    )?;

    // A partial payment: recorded, then its CFDI stamped; the balance drops to 66.00.
    app.type_into("[data-testid=payment-form] input[name=amount]", "50.00").await?;
    app.click("[data-testid=payment-submit]").await?;
    app.wait_contains("[data-testid=payment-recorded]", "Pago registrado").await?;
    app.wait_text_for(
        "[data-testid=payment-rows] tbody tr[data-status=timbrado]",
        "el pago timbrado",
        |t| t.contains("$50.00") && t.contains("$66.00"),
        std::time::Duration::from_secs(30),
    )
    .await?;
    app.wait_contains("[data-testid=payments] [data-testid=balance]", "$66.00").await?;
    app.wait_contains("[data-testid=payments] [data-testid=balance-paid]", "$50.00")
        .await?;
    let row = app
        .find("[data-testid=payment-rows] tbody tr")
        .await?
        .text()
        .await
        .map_err(|e| e.to_string())?;
    check(row.starts_with('1'), format!("la primera parcialidad es 1: {row:?}"))?;
    app.screenshot("pago-parcial").await?;

    // The Bandeja's "PPD con saldo" lists it.
    app.go("#/bandeja").await?;
    app.select("[data-testid=flag-filter]", "ppd_con_saldo").await?;
    app.wait_contains("[data-testid=rows]", "URE180429TM6").await?;

    // The month: totals from the stamped XMLs (the invoice's 100.00 + 16.00 IVA, the payment's
    // 50.00), the receptor in the chart, the PPD still open.
    app.go("#/reportes").await?;
    app.find("[data-testid=report-chart]").await?;
    app.wait_contains("[data-testid=report-chart]", "URE180429TM6").await?;
    app.wait_contains("[data-testid=report-totals] tr[data-row=ingresos]", "$100.00")
        .await?;
    app.wait_contains("[data-testid=report-totals] tr[data-row=ingresos]", "$16.00")
        .await?;
    app.wait_contains("[data-testid=report-totals] tr[data-row=pagos]", "$50.00")
        .await?;
    app.wait_contains("[data-testid=report-ppd]", "$66.00").await?;
    app.screenshot("reporte-mes").await?;
    app.click("[data-testid=export-csv]").await?;
    let saved = app.wait_contains("[data-testid=report-saved]", "Guardado en").await?;
    let path = saved.trim().trim_start_matches("Guardado en").trim().to_string();
    let csv = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    check(
        csv.contains("receptor,URE180429TM6") && csv.contains("ppd_con_saldo,"),
        format!("el CSV debe traer el receptor y la PPD con saldo: {csv:?}"),
    )?;
    // The month's ZIP: every stamped XML with its PDF, named by UUID.
    app.click("[data-testid=export-zip]").await?;
    let saved = app.wait_contains("[data-testid=report-saved]", ".zip").await?;
    let path = saved.trim().trim_start_matches("Guardado en").trim().to_string();
    let zip = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let names = String::from_utf8_lossy(&zip);
    check(
        zip.starts_with(b"PK") && names.contains(&format!("{uuid}.xml")) && names.contains(&format!("{uuid}.pdf")),
        format!("el ZIP {path} debe traer {uuid}.xml y {uuid}.pdf"),
    )?;
    Ok(())
}

/// SAT's 69-B list imported from Ajustes (a CSV chosen in the native file chooser, first
/// cancelled — nothing happens —, then chosen): its date and count;
/// a listed receptor is warned about at Emitir as it is typed, in the recorded answer and on
/// its Factura page, and the sale is recorded all the same. The Factura global page previews a
/// period (no tickets here) and refuses a period its periodicidad does not allow.
pub async fn lista_69b_y_global(app: &App) -> Res {
    app.wait_contains("[data-testid=sandbox-banner]", "Modo sandbox").await?;
    let dir = std::env::temp_dir().join(format!("timbra-e2e-69b-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let csv = dir.join("Listado_Completo_69-B.csv");
    std::fs::write(
        &csv,
        "Información actualizada al 15 de noviembre de 2026\n\
No,RFC,Nombre del Contribuyente,Situación del contribuyente,Publicación página SAT presuntos,Publicación página SAT definitivos\n\
1,AAA010101AAA,EMPRESA FANTASMA SA DE CV,Definitivo,05/10/2020,15/01/2021\n\
2,BBB020202BB2,\"OTRA, SA DE CV\",Presunto,01/03/2026,\n",
    )
    .map_err(|e| e.to_string())?;

    app.go("#/ajustes/listas").await?;
    app.wait_contains("[data-testid=screening-current]", "Aún no se ha importado")
        .await?;
    app.choose_next(&[])?;
    app.click("[data-testid=screening-choose]").await?;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    app.wait_contains("[data-testid=screening-file]", "Ningún archivo elegido").await?;
    check(
        app.attr("[data-testid=screening-import]", "disabled").await?.is_some()
            && app.all("[data-testid=screening-form] [role=alert]").await?.is_empty(),
        "un selector cancelado no hace ni dice nada",
    )?;
    app.choose_next(&[&csv])?;
    app.click("[data-testid=screening-choose]").await?;
    app.wait_contains("[data-testid=screening-file]", "Listado_Completo_69-B.csv")
        .await?;
    let titles = app.chooser_titles()?;
    check(
        titles == ["Elegir la lista 69-B del SAT (CSV)"; 2],
        format!("el selector pregunta en español: {titles:?}"),
    )?;
    app.click("[data-testid=screening-import]").await?;
    app.wait_contains(
        "[data-testid=screening-imported]",
        "Lista del 2026-11-15 importada: 2 contribuyentes",
    )
    .await?;
    app.wait_contains("[data-testid=screening-current]", "del 2026-11-15, 2 contribuyentes")
        .await?;
    app.client
        .execute("document.querySelector('[data-testid=screening-form]').scrollIntoView();", vec![])
        .await
        .map_err(|e| e.to_string())?;
    app.screenshot("lista-69b").await?;

    // Emitir: the warning appears as the RFC is typed, never blocking.
    app.go("#/emitir").await?;
    fill_sale(app, "AAA010101AAA").await?;
    let w = app.wait_contains("[data-testid=screening-warning]", "definitivo").await?;
    check(
        w.contains("2026-11-15") && w.contains("2021-01-15"),
        format!("el aviso debe decir la fecha de la lista y de la situación: {w:?}"),
    )?;
    app.click("[data-testid=emitir-submit]").await?;
    app.wait_contains("[data-testid=emitir-recorded]", "registrada").await?;
    app.wait_contains("[data-testid=recorded-warning]", "lista 69-B").await?;
    app.screenshot("emitir-69b").await?;
    app.click("[data-testid=recorded-link]").await?;
    app.wait_contains("[data-testid=factura-head] [data-testid=screening-warning]", "definitivo")
        .await?;
    app.wait_contains("[data-testid=timeline] li[data-kind=receptor_69b]", "lista 69-B")
        .await?;
    app.screenshot("factura-69b").await?;

    // A receptor not listed: no warning.
    app.go("#/emitir").await?;
    app.type_into("input[name='receptor.rfc']", "URE180429TM6").await?;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    check(
        app.all("[data-testid=screening-warning]").await?.is_empty(),
        "un receptor que no está en la lista no lleva aviso",
    )?;

    // Factura global: a day with no tickets; a daily periodicidad over two days is refused.
    app.go("#/global").await?;
    app.click("[data-testid=global-preview]").await?;
    app.wait_contains("[data-testid=global-tickets]", "No hay tickets pendientes")
        .await?;
    // Two days for a daily global invoice: hasta is the day after desde.
    let desde = app
        .attr("[data-testid=global-form] input[name=desde]", "value")
        .await?
        .unwrap_or_default();
    let next = app
        .client
        .execute(
            "const d = new Date(arguments[0] + 'T12:00:00Z'); d.setUTCDate(d.getUTCDate() + 1); return d.toISOString().slice(0, 10);",
            vec![desde.clone().into()],
        )
        .await
        .map_err(|e| format!("el día siguiente a {desde}: {e}"))?;
    pick_date(app, "[data-testid=global-form]", "hasta", next.as_str().unwrap_or_default()).await?;
    app.click("[data-testid=global-preview]").await?;
    app.wait_contains("[data-testid=global-error]", "cubre un día").await?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Today's counter tickets (the sandbox's demo tickets) collected into the factura global from
/// its page: the preview lists them, *Crear* records it, the drain stamps it to público en
/// general; a second look says it exists and adds nothing.
pub async fn factura_global(app: &App) -> Res {
    app.wait_contains("[data-testid=sandbox-banner]", "Modo sandbox").await?;
    app.go("#/global").await?;
    app.click("[data-testid=load-demo-tickets]").await?;
    app.wait_contains("[data-testid=demo-tickets]", "6 registrados").await?;
    app.wait_contains("[data-testid=global-tickets] h2", "Entran 6 tickets").await?;
    let rows = app.all("[data-testid=global-tickets] tr[data-ticket]").await?;
    check(rows.len() == 6, format!("6 tickets en la vista previa, no {}", rows.len()))?;
    app.client
        .execute("document.querySelector('[data-testid=global-tickets]').scrollIntoView();", vec![])
        .await
        .map_err(|e| e.to_string())?;
    app.screenshot("factura-global").await?;

    app.click("[data-testid=global-create]").await?;
    app.wait_contains("[data-testid=global-created]", "registrada con 6 tickets")
        .await?;
    app.wait_contains("[data-testid=global-tickets]", "ya existe").await?;
    check(
        app.all("[data-testid=global-create]").await?.is_empty(),
        "una factura global existente no se vuelve a crear",
    )?;
    app.click("[data-testid=global-created] a").await?;
    app.wait_contains("[data-testid=factura-head]", "XAXX010101000").await?;
    app.wait_badge("timbrada").await?;
    app.wait_contains("[data-testid=factura-head]", "PUBLICO EN GENERAL").await?;
    app.find("[data-testid=timeline] li[data-kind=global_invoice_tickets]").await?;
    app.screenshot("factura-global-timbrada").await?;
    Ok(())
}

/// Sets the window to `w`×`h` and checks nothing is cut off sideways (the page is no wider than
/// the window).
async fn window_fits(app: &App, w: u32, h: u32) -> Res {
    app.client
        .set_window_size(w, h)
        .await
        .map_err(|e| format!("tamaño de ventana {w}×{h}: {e}"))?;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let v = app
        .client
        .execute(
            "return [document.documentElement.scrollWidth, window.innerWidth, window.outerHeight];",
            vec![],
        )
        .await
        .map_err(|e| e.to_string())?;
    let n = |i: usize| v.get(i).and_then(|x| x.as_i64()).unwrap_or(-1);
    check(
        n(0) <= n(1),
        format!("la página ({} px) es más ancha que la ventana ({} px) a {w}×{h}", n(0), n(1)),
    )?;
    check(n(2) <= h as i64, format!("la ventana mide {} px de alto; se pidió {h}", n(2)))
}

/// The page's primary actions: every visible submit button, `.primary` button, the Factura
/// page's actions and each page's import/export/preview buttons.
pub(crate) const PRIMARY_ACTIONS: &str = "button.primary, button[type=submit], [data-testid=actions] button, \
[data-testid$=-import], [data-testid^=export-], [data-testid$=-export], [data-testid=import-files], \
[data-testid=global-preview], [data-testid=load-demo], [data-testid^=choose-], [data-testid=screening-choose]";

/// What is cut off on the page as it is now: the page wider than the window, and each primary
/// action that cannot be brought into the window by the page's own scroll whole and on top (not
/// under a fixed or sticky element such as the sandbox banner, not past the right edge).
pub(crate) const CUT_OFF_JS: &str = r#"
const problems = [];
const doc = document.scrollingElement || document.documentElement;
if (doc.scrollWidth > window.innerWidth) problems.push(`la página mide ${doc.scrollWidth} px de ancho; la ventana ${window.innerWidth}`);
// The app scrolls inside <main>: sideways there is cut off too. Name what sticks out.
const main = document.querySelector('main');
if (main && main.scrollWidth > main.clientWidth + 1) {
  const edge = main.getBoundingClientRect().left + main.clientWidth;
  const out = [...main.querySelectorAll('*')].filter((e) => e.getBoundingClientRect().right > edge + 1 && ![...e.children].some((c) => c.getBoundingClientRect().right > edge + 1));
  const far = (e) => e.getBoundingClientRect().right + Math.max(0, parseFloat(getComputedStyle(e).marginRight) || 0);
  if (!out.length) out.push(...[...main.querySelectorAll('*')].filter((e) => far(e) > edge + 1).sort((a, b) => far(b) - far(a)));
  // Text that runs past the edge (a word that cannot wrap) is not an element: name its parent.
  const walk = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const range = document.createRange();
    range.selectNodeContents(n);
    if (range.getBoundingClientRect().right > edge + 1 && n.parentElement) out.push(n.parentElement);
  }
  // Still nothing named: the deepest element without which nothing overflows.
  const fits = () => main.scrollWidth <= main.clientWidth + 1;
  const culprit = (el) => {
    for (const c of el.children) {
      const was = c.style.display;
      c.style.display = 'none';
      const ok = fits();
      c.style.display = was;
      if (ok) return culprit(c) || c;
    }
    return null;
  };
  if (!out.length) {
    const c = culprit(main);
    if (c) out.push(c, ...[...c.querySelectorAll('*')].filter((e) => e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0));
  }
  const names = out.slice(0, 8).map((e) => e.tagName.toLowerCase() + (e.getAttribute('name') ? `[name=${e.getAttribute('name')}]` : '') + (e.className ? '.' + String(e.className).split(' ')[0] : '') + `@${Math.round(far(e))}`);
  problems.push(`el contenido mide ${main.scrollWidth} px de ancho en ${main.clientWidth} px; sobresale: ${names.join(', ')}`);
}
for (const b of document.querySelectorAll(arguments[0])) {
  if (!b.offsetParent || b.closest('details:not([open])')) continue;
  const name = (b.getAttribute('data-testid') || b.getAttribute('data-action') || b.textContent || '').trim().slice(0, 40);
  b.scrollIntoView({ block: 'center', inline: 'nearest' });
  const r = b.getBoundingClientRect();
  if (r.left < 0 || r.right > window.innerWidth || r.top < 0 || r.bottom > window.innerHeight) {
    problems.push(`${name}: fuera de la ventana (${Math.round(r.left)},${Math.round(r.top)} – ${Math.round(r.right)},${Math.round(r.bottom)})`);
    continue;
  }
  // Its middle and a quarter in from each corner must be the button itself (hit-testing at
  // its very edge would find the scroll container's overlay scrollbar zone instead).
  const qx = (r.right - r.left) / 4, qy = (r.bottom - r.top) / 4;
  for (const [x, y] of [[r.left + qx, r.top + qy], [r.right - qx, r.bottom - qy], [r.right - qx, r.top + qy], [r.left + qx, r.bottom - qy], [(r.left + r.right) / 2, (r.top + r.bottom) / 2]]) {
    const at = document.elementFromPoint(x, y);
    if (!at || !(at === b || b.contains(at))) {
      problems.push(`${name}: tapado en (${Math.round(x)},${Math.round(y)}) por ${at ? at.tagName.toLowerCase() + '.' + at.className : 'nada'}`);
      break;
    }
  }
}
window.scrollTo(0, 0);
for (const el of document.querySelectorAll('main, .page')) el.scrollTop = 0;
return problems;
"#;

/// Raw codes in the page's visible text (Spanish mode): snake_case words, an HTTP status with a
/// colon ("401:"), "evidencia #" and "bytes", outside *Detalle técnico*, any closed disclosure
/// and verbatim `<code>`; tooltips count as visible. Returns each hit with its surroundings.
pub(crate) const RAW_CODES_JS: &str = r#"
const main = document.querySelector('main');
if (!main) return [];
const copy = main.cloneNode(true);
copy.querySelectorAll('details:not([open]) > :not(summary), details.tech > :not(summary), [data-testid$=technical] > :not(summary)').forEach((e) => e.remove());
// What the person typed, and text shown verbatim (<code>: a CSV header, an event's name).
copy.querySelectorAll('input, textarea, pre, code, .json').forEach((e) => e.remove());
const text = [copy.textContent, ...[...copy.querySelectorAll('[title]')].map((e) => e.getAttribute('title'))].join('\n');
const hits = [];
for (const [name, re] of [['snake_case', /\b[a-z]+(?:_[a-z0-9]+)+\b/g], ['HTTP con dos puntos', /\b[1-5]\d\d:/g], ['evidencia #', /evidencia #/gi], ['bytes', /\bbytes\b/gi]]) {
  for (const m of text.matchAll(re)) hits.push(`${name}: «${text.slice(Math.max(0, m.index - 25), m.index + m[0].length + 25).replace(/\s+/g, ' ')}»`);
}
return hits.slice(0, 8);
"#;

/// Table cells whose text breaks inside a word ("sa nd bo x"): a text with more line boxes than
/// words. Returns the cells named by their text.
pub(crate) const WORD_WRAP_JS: &str = r#"
const out = [];
for (const cell of document.querySelectorAll('main td, main th, main [role=cell], main [role=columnheader]')) {
  if (!cell.offsetParent) continue;
  const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const words = n.textContent.trim().split(/\s+/).filter(Boolean).length;
    if (!words) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))).size;
    if (lines > words) { out.push(`«${n.textContent.trim().slice(0, 30)}» en ${lines} líneas`); break; }
  }
}
return out.slice(0, 8);
"#;

/// Runs one of the page scans above; its findings, prefixed with the page and size.
async fn scan(app: &App, js: &str, page: &str, w: u32, h: u32) -> Res<Vec<String>> {
    let v = app.client.execute(js, vec![]).await.map_err(|e| format!("{page}: {e}"))?;
    Ok(v.as_array()
        .map(|a| {
            a.iter()
                .map(|x| format!("{page} a {w}×{h}: {}", x.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default())
}

/// Checks the current page at `w`×`h`: nothing overflows sideways and every primary action is
/// reachable (see [`CUT_OFF_JS`]); `page` names it in the error.
async fn page_fits(app: &App, page: &str, w: u32, h: u32) -> Res {
    app.client
        .set_window_size(w, h)
        .await
        .map_err(|e| format!("tamaño de ventana {w}×{h}: {e}"))?;
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let v = app
        .client
        .execute(CUT_OFF_JS, vec![PRIMARY_ACTIONS.into()])
        .await
        .map_err(|e| format!("{page}: {e}"))?;
    let problems: Vec<String> = v
        .as_array()
        .map(|a| a.iter().map(|x| x.as_str().unwrap_or_default().to_string()).collect())
        .unwrap_or_default();
    check(problems.is_empty(), format!("{page} a {w}×{h}: {}", problems.join("; ")))
}

/// Every page at 1366×768 and at the window's minimum size (1024×600, tauri.conf.json): nothing
/// overflows sideways and every primary action is reachable, never under the sandbox banner;
/// a screenshot of each page at 1366×768 (`ventana-<página>.png`). On the way, the files the
/// native chooser answers: the CSD in Ajustes (cancelled, a wrong file refused by Rust naming
/// the field, then SAT's test CSD) and a stamped XML imported from Duplicados.
pub async fn ventana_y_archivos(app: &App) -> Res {
    app.wait_contains("[data-testid=sandbox-banner]", "Modo sandbox").await?;
    // A soporte desk (soporte_seat), which may load the demo data.
    app.click("[data-testid=load-demo]").await?;
    app.wait_contains(".notice[role=status]", "36 ventas registradas").await?;
    let factura = emit_and_open(app, "4501").await?;
    app.wait_badge("timbrada").await?;
    app.click("button[data-action=download_xml]").await?;
    let saved = app.wait_contains(".notice[role=status]", "Guardado en").await?;
    let xml = std::path::PathBuf::from(saved.trim().trim_start_matches("Guardado en").trim());

    // Ajustes: the CSD's files through the native chooser.
    // As a chooser answers: absolute, no `..` step (Rust refuses one).
    let certs = crate::harness::repo_root()
        .join("tests/fixtures/cfdi/certs")
        .canonicalize()
        .map_err(|e| format!("certificados de prueba: {e}"))?;
    app.go("#/ajustes/emisor").await?;
    app.choose_next(&[])?;
    app.click("[data-testid=choose-cer]").await?;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    app.wait_contains("[data-testid=chosen-cer]", "Ningún archivo elegido").await?;
    app.choose_next(&[&certs.join("EKU9003173C9.cer")])?;
    app.click("[data-testid=choose-cer]").await?;
    app.wait_contains("[data-testid=chosen-cer]", "EKU9003173C9.cer").await?;
    // A file that is not a .key: Rust refuses it under the field, nothing is saved.
    app.choose_next(&[&certs.join("EKU9003173C9.cer")])?;
    app.click("[data-testid=choose-key]").await?;
    app.wait_contains("[data-testid=chosen-key]", "EKU9003173C9.cer").await?;
    app.type_into("[data-testid=emisor-form] input[name=password]", "12345678a").await?;
    app.click("[data-testid=emisor-form] button[type=submit]").await?;
    app.wait_contains("[data-testid=emisor-form] .field-error", "No es un archivo del tipo esperado")
        .await?;
    app.choose_next(&[&certs.join("EKU9003173C9.key")])?;
    app.click("[data-testid=choose-key]").await?;
    app.wait_contains("[data-testid=chosen-key]", "EKU9003173C9.key").await?;
    app.type_into("[data-testid=emisor-form] input[name=password]", "12345678a").await?;
    app.click("[data-testid=emisor-form] button[type=submit]").await?;
    app.wait_contains(".notice[role=status]", "Emisor y CSD guardados").await?;

    // Duplicados: the XML just downloaded, chosen again, is one Timbra already has. The
    // reconciliation import is the contador's, with the PIN.
    set_contador_pin(app).await?;
    act_as_contador(app).await?;
    app.go("#/duplicados").await?;
    app.choose_next(&[&xml])?;
    app.click("[data-testid=import-files]").await?;
    app.wait_contains("[data-testid=import-result]", "1 ya registrados").await?;
    leave_contador(app).await?;
    let titles = app.chooser_titles()?;
    check(
        titles
            == [
                "Elegir el certificado del CSD (.cer)",
                "Elegir el certificado del CSD (.cer)",
                "Elegir la llave privada del CSD (.key)",
                "Elegir la llave privada del CSD (.key)",
                "Elegir XML timbrados o la descarga masiva del SAT (ZIP)",
            ],
        format!("el selector pregunta en español: {titles:?}"),
    )?;

    let pages = [
        ("bandeja", "#/bandeja".to_string()),
        ("emitir", "#/emitir".to_string()),
        ("factura", factura),
        ("clientes", "#/clientes".to_string()),
        ("productos", "#/productos".to_string()),
        ("duplicados", "#/duplicados".to_string()),
        ("reportes", "#/reportes".to_string()),
        ("factura-global", "#/global".to_string()),
        ("pagos", "#/pagos".to_string()),
        ("tablero", "#/tablero".to_string()),
        ("ajustes", "#/ajustes".to_string()),
    ];
    let mut problems = Vec::new();
    for (name, hash) in &pages {
        app.go(hash).await?;
        app.find("main .page, main [data-testid=strategy]").await?;
        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
        for (w, h) in [(1024, 600), (1280, 720), (1366, 768)] {
            if let Err(e) = page_fits(app, name, w, h).await {
                problems.push(e);
            }
            // The pages that say an invoice's state: no raw code visible, and (from 1280 px) no
            // table cell breaking inside a word. The others are reported, not yet held.
            let words = scan(app, RAW_CODES_JS, name, w, h).await?;
            let wraps = if w >= 1280 {
                scan(app, WORD_WRAP_JS, name, w, h).await?
            } else {
                Vec::new()
            };
            if ["bandeja", "factura", "tablero"].contains(name) {
                problems.extend(words);
                problems.extend(wraps);
            } else {
                for p in words.iter().chain(&wraps) {
                    println!("aviso (sin exigir): {p}");
                }
            }
            if w == 1024 {
                app.screenshot(&format!("ventana-{name}-1024x600")).await?;
            }
        }
        app.screenshot(&format!("ventana-{name}")).await?;
    }
    check(problems.is_empty(), problems.join("\n    "))
}

/// A timed-out PAC send, in words: the timeline of the invoice says what happened in Spanish
/// from its codes — no English transport text, no raw outcome code, the worker as "Timbra
/// (automático)" — with the raw text folded in "Detalle técnico". Then the Tablero shows the
/// PAC health and totals measured from the database. Both at 1366×768.
pub async fn linea_de_tiempo_en_palabras(app: &App) -> Res {
    window_fits(app, 1366, 768).await?;
    set_fault(app, "timeout_after_certify", "Timbra y no contesta").await?;
    let factura = emit_and_open(app, "4496").await?;
    app.wait_text_for(
        "[data-testid=timeline] li[data-kind=pac_response]",
        "la respuesta del PAC en palabras",
        |t| t.contains("Sin respuesta clara de sandbox") && t.contains("el PAC no contestó a tiempo"),
        std::time::Duration::from_secs(30),
    )
    .await?;
    let text = app.wait_contains("[data-testid=timeline]", "Timbra (automático)").await?;
    for raw in [
        "error sending request",
        "operation timed out",
        "unknown",
        "not_sent",
        "already_stamped",
        "unavailable",
        "rejected",
        "pac_response",
        "resultado:",
        "· Sistema",
    ] {
        check(!text.contains(raw), format!("el historial no debe decir {raw:?}: {text:?}"))?;
    }
    // The header leads with Serie-Folio and the receptor.
    app.wait_contains("[data-testid=factura-title]", "F-4496").await?;
    app.wait_contains("[data-testid=factura-title]", "UNIVERSIDAD ROBOTICA ESPAÑOLA")
        .await?;
    // The raw text is there, folded.
    app.client
        .execute(
            "const d = document.querySelector('[data-testid=timeline] li[data-kind=pac_response] details'); d.open = true; \
             d.scrollIntoView({block: 'center'});",
            vec![],
        )
        .await
        .map_err(|e| e.to_string())?;
    app.wait_contains("[data-testid=timeline] li[data-kind=pac_response] details", "unknown")
        .await?;
    window_fits(app, 1366, 768).await?;
    app.screenshot("linea-de-tiempo").await?;

    // The PAC answers again; Reintentar resumes and the PAC hands back the CFDI it had made.
    set_fault(app, "none", "Sin fallas").await?;
    app.go(&factura).await?;
    app.click("[data-testid=actions] button[data-action=retry]").await?;
    app.wait_badge("timbrada").await?;

    // The Tablero: the timeout is the sandbox PAC's last failure, ended by the success; the
    // totals are the stamped XML's.
    app.go("#/tablero").await?;
    let outage = app
        .wait_contains(
            "[data-testid=pac-health] tr[data-pac=sandbox] [data-testid=outage]",
            "el PAC no contestó a tiempo",
        )
        .await?;
    check(
        outage.contains("respondió de nuevo"),
        format!("la falla debía terminar: {outage:?}"),
    )?;
    app.wait_contains("[data-testid=pac-health] tr[data-pac=sandbox] [data-testid=p50]", " s")
        .await?;
    app.wait_contains("[data-testid=totals] tr[data-total=amount]", "$116.00").await?;
    app.wait_contains("[data-testid=totals] tr[data-total=iva_trasladado]", "$16.00")
        .await?;
    app.wait_contains("[data-testid=per-hour]", "Timbradas en las últimas 24 horas: 1")
        .await?;
    window_fits(app, 1366, 768).await?;
    app.screenshot("tablero").await?;
    Ok(())
}

/// WebDriver's key codes (W3C WebDriver, "keys"): Enter, Control, Alt, Delete (Supr) and the
/// release of every modifier.
const ENTER: char = '\u{E007}';
const CONTROL: char = '\u{E009}';
const ALT: char = '\u{E00A}';
const DELETE: char = '\u{E017}';
const RELEASE: char = '\u{E000}';

/// Types `text` into whatever has the focus and answers how many keys that took (a chord such
/// as Ctrl+Enter is two; the release of the modifiers is not a key).
async fn press(app: &App, text: &str) -> Res<usize> {
    keys(app, text).await?;
    Ok(text.chars().filter(|&c| c != RELEASE).count())
}

/// Types into whatever has the focus, as a keyboard does.
async fn keys(app: &App, text: &str) -> Res {
    let e = app
        .client
        .active_element()
        .await
        .map_err(|e| format!("elemento con el foco: {e}"))?;
    e.send_keys(text).await.map_err(|e| format!("teclear {text:?}: {e}"))
}

async fn focused_name(app: &App) -> Res<String> {
    let e = app
        .client
        .active_element()
        .await
        .map_err(|e| format!("elemento con el foco: {e}"))?;
    Ok(e.attr("name").await.map_err(|e| e.to_string())?.unwrap_or_default())
}

/// A customer saved from the Clientes form (a bad CP first: the field named, nothing written),
/// a customers' CSV with a bad line imported through the native file chooser (first cancelled:
/// nothing happens), two products imported as a CSV from the Productos page (its bad line
/// reported by number); then an invoice for them emitted with the keyboard alone — the customer
/// found by RFC and taken with Enter (its defaults filled), two products added with Enter in the
/// product search, Alt+N / Alt+Supr adding and removing a blank line, Ctrl+Enter to emit — and
/// stamped. The keystrokes of the practiced path are counted (and printed with the time it
/// took, which is never a pass/fail condition).
pub async fn emitir_con_catalogos(app: &App) -> Res {
    app.wait_contains("[data-testid=sandbox-banner]", "Modo sandbox").await?;
    let dir = std::env::temp_dir().join(format!("timbra-e2e-catalogos-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;

    // Clientes: the form refuses CP 00001 naming it, then saves the customer.
    app.go("#/clientes").await?;
    app.click("[data-testid=cliente-nuevo]").await?;
    for (name, value) in [
        ("rfc", "URE180429TM6"),
        ("nombre", "UNIVERSIDAD ROBOTICA ESPAÑOLA"),
        ("cp", "00001"),
        ("email", "compras@ure.mx"),
    ] {
        app.type_into(&format!("[data-testid=cliente-form] input[name={name}]"), value)
            .await?;
    }
    // The catalog selects: by code, or by words of SAT's description.
    let form = "[data-testid=cliente-form]";
    app.choose(form, "regimen", "general de ley", "601").await?;
    app.choose(form, "uso", "G03", "G03").await?;
    app.choose(form, "forma_pago", "transferencia", "03").await?;
    app.choose(form, "metodo_pago", "PUE", "PUE").await?;
    app.click("[data-testid=cliente-guardar]").await?;
    app.wait_contains("[data-error-for=cp]", "00001").await?;
    check(
        app.all("[data-testid=clientes-table] tbody tr td.mono").await?.is_empty(),
        "un cliente con CP 00001 no se guarda",
    )?;
    app.type_into("[data-testid=cliente-form] input[name=cp]", "86991").await?;
    app.click("[data-testid=cliente-guardar]").await?;
    app.wait_contains("[data-testid=clientes-notice]", "guardado").await?;
    app.wait_contains("[data-testid=clientes-table]", "URE180429TM6").await?;

    // The customers' CSV through the native chooser: cancelled first (nothing happens), then
    // chosen; the same RFC is updated, the bad line reported by number.
    let clientes = dir.join("clientes.csv");
    std::fs::write(
        &clientes,
        "rfc,nombre,cp,regimen,uso,forma_pago,metodo_pago,email\n\
URE180429TM6,UNIVERSIDAD ROBOTICA ESPAÑOLA,86991,601,G03,03,PUE,compras@ure.mx\n\
CACX7605101P8,XOCHILT CASAS CHAVEZ,00001,612,G03,,,\n",
    )
    .map_err(|e| e.to_string())?;
    app.choose_next(&[])?;
    app.click("[data-testid=clientes-import]").await?;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    check(
        app.all("[data-testid=clientes-imported]").await?.is_empty() && app.all("[data-testid=clientes-import-error]").await?.is_empty(),
        "un selector cancelado no importa ni dice nada",
    )?;
    app.choose_next(&[&clientes])?;
    app.click("[data-testid=clientes-import]").await?;
    app.wait_contains("[data-testid=clientes-imported]", "0 agregados, 1 actualizados, 1 errores")
        .await?;
    app.wait_contains("[data-testid=clientes-bad-lines]", "línea 3: cp:").await?;
    check(
        app.all("[data-testid=clientes-table] tbody tr").await?.len() == 1,
        "un solo cliente guardado",
    )?;
    app.screenshot("clientes").await?;

    // Productos: two products and a bad line from a CSV chosen in the native chooser.
    let productos = dir.join("productos.csv");
    std::fs::write(
        &productos,
        "sku,descripcion,clave_prod_serv,clave_unidad,unidad,precio,objeto_imp,iva,ieps,ret_isr,ret_iva\n\
CAF-01,Café de olla,50201706,H87,,50.00,02,16,,,\n\
TOR-01,Tortillas de maíz,50221300,KGM,,22.50,02,0,,,\n\
MAL-01,Clave inventada,99999999,H87,,1.00,02,16,,,\n",
    )
    .map_err(|e| e.to_string())?;
    app.go("#/productos").await?;
    app.choose_next(&[&productos])?;
    app.click("[data-testid=productos-import]").await?;
    app.wait_contains("[data-testid=productos-imported]", "2 agregados, 0 actualizados, 1 errores")
        .await?;
    app.wait_contains("[data-testid=productos-bad-lines]", "línea 4: clave_prod_serv:")
        .await?;
    app.wait_contains("[data-testid=productos-table]", "TOR-01").await?;
    let titles = app.chooser_titles()?;
    check(
        titles
            == [
                "Elegir el CSV de clientes",
                "Elegir el CSV de clientes",
                "Elegir el CSV de productos",
            ],
        format!("el selector pregunta en español: {titles:?}"),
    )?;
    app.click("[data-testid=producto-nuevo]").await?;
    app.type_into("input[name='clave_prod_serv']", "tortilla").await?;
    app.wait_contains("[data-testid=ac-clave_prod_serv-list]", "50221300").await?;
    app.screenshot("productos").await?;
    let _ = std::fs::remove_dir_all(&dir);

    // Emitir with the keyboard only: the focus starts in the customer search.
    app.go("#/emitir").await?;
    app.find("[data-testid=ac-customer-search]").await?;
    let start = std::time::Instant::now();
    while focused_name(app).await? != "customer-search" {
        check(
            start.elapsed() < std::time::Duration::from_secs(5),
            "el foco empieza en la búsqueda de cliente",
        )?;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The practiced path: every key counted, no click until the invoice is recorded.
    let began = std::time::Instant::now();
    let mut keystrokes = press(app, "URE18").await?;
    app.wait_contains("[data-testid=ac-customer-search-list]", "UNIVERSIDAD ROBOTICA")
        .await?;
    keystrokes += press(app, &ENTER.to_string()).await?;
    let start = std::time::Instant::now();
    while focused_name(app).await? != "product-search" {
        check(
            start.elapsed() < std::time::Duration::from_secs(5),
            "tras el cliente, el foco pasa a los productos",
        )?;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    check(
        app.client
            .execute(
                "return document.querySelector(\"[name='receptor.domicilio_fiscal']\").value",
                vec![],
            )
            .await
            .map_err(|e| e.to_string())?
            == serde_json::json!("86991"),
        "el CP del cliente se llenó",
    )?;
    keystrokes += press(app, "CAF").await?;
    app.wait_contains("[data-testid=ac-product-search-list]", "Café de olla").await?;
    keystrokes += press(app, &ENTER.to_string()).await?;
    keystrokes += press(app, "TOR").await?;
    app.wait_contains("[data-testid=ac-product-search-list]", "TOR-01").await?;
    // Let the webview paint the suggestions before the picture (not part of the path's time).
    let painting = std::time::Instant::now();
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    app.screenshot("emitir-autocompletar").await?;
    let pictured = painting.elapsed();
    keystrokes += press(app, &ENTER.to_string()).await?;
    // Live totals: 50.00 × 1.16 + 22.50 × 1.00.
    app.wait_contains("[data-total=total]", "$80.50").await?;

    // Not part of the practiced path: Alt+N adds a blank line (the focus in it), Alt+Supr
    // removes it again; the total stays.
    let aside = std::time::Instant::now();
    keys(app, &format!("{ALT}n{RELEASE}")).await?;
    let start = std::time::Instant::now();
    while focused_name(app).await? != "conceptos[2].descripcion" {
        check(
            start.elapsed() < std::time::Duration::from_secs(5),
            "Alt+N agrega una línea en blanco con el foco en ella",
        )?;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    keys(app, &format!("{ALT}{DELETE}{RELEASE}")).await?;
    let start = std::time::Instant::now();
    while !app.all("[name='conceptos[2].descripcion']").await?.is_empty() {
        check(
            start.elapsed() < std::time::Duration::from_secs(5),
            "Alt+Supr quita la línea con el foco",
        )?;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    app.wait_contains("[data-total=total]", "$80.50").await?;
    let aside = aside.elapsed();

    keystrokes += press(app, &format!("{CONTROL}{ENTER}{RELEASE}")).await?;
    let recorded = app.wait_contains("[data-testid=emitir-recorded]", "registrada").await?;
    // Printed for docs/customers-products.md; a timing never decides this test.
    println!(
        "    emitir_con_catalogos: {keystrokes} teclas, {:.1} s con el teclado (WebDriver, sin la captura ni Alt+N/Alt+Supr)",
        (began.elapsed() - pictured - aside).as_secs_f64()
    );
    let link = app
        .attr("[data-testid=recorded-link]", "href")
        .await?
        .ok_or_else(|| format!("sin enlace a la factura: {recorded}"))?;
    app.go(&link).await?;
    app.wait_contains("[data-testid=factura-head]", "URE180429TM6").await?;
    app.wait_badge("timbrada").await?;

    // A backup of this moment, for the restore below (the contador's PIN set first: the backup
    // keeps it).
    set_contador_pin(app).await?;
    app.go("#/ajustes/respaldos").await?;
    app.click("[data-testid=backups-now]").await?;
    app.wait_contains("[data-testid=backups-current]", "en la carpeta").await?;
    let folder = app
        .wait_text("[data-testid=backups-current] .mono", "la carpeta", |t| !t.trim().is_empty())
        .await?;
    let backup = std::fs::read_dir(folder.trim())
        .map_err(|e| format!("{folder}: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "db"))
        // The newest (the names carry the instant): the one just taken.
        .max()
        .ok_or_else(|| format!("no hay respaldo en {folder}"))?;

    // A new customer typed in Emitir: a persona física's RFC offers only her regímenes (601 is
    // a persona moral's), the régimen and the uso are found by words, and *Guardar cliente*
    // keeps her in Clientes.
    app.go("#/emitir").await?;
    app.type_into("input[name='receptor.rfc']", "CACX7605101P8").await?;
    app.type_into("input[name='receptor.nombre']", "XOCHILT CASAS CHAVEZ").await?;
    app.type_into("input[name='receptor.domicilio_fiscal']", "86991").await?;
    app.wait_contains("[data-testid=regimen-hint]", "persona física").await?;
    app.click("[data-testid='cs-receptor.regimen_fiscal']").await?;
    app.find("[data-testid='cs-receptor.regimen_fiscal']")
        .await?
        .send_keys("601")
        .await
        .map_err(|e| e.to_string())?;
    app.wait_contains("[data-testid='cs-receptor.regimen_fiscal-list']", "Ninguna opción")
        .await?;
    keys(app, "\u{E00C}").await?; // Esc: the search is dropped, the value stays.
    app.choose("", "receptor.regimen_fiscal", "simplificado de confianza", "626")
        .await?;
    app.choose("", "receptor.uso_cfdi", "gastos en general", "G03").await?;
    app.click("[data-testid=emitir-save-customer]").await?;
    app.wait_contains("[data-testid=emitir-customer-saved]", "XOCHILT CASAS CHAVEZ")
        .await?;
    app.go("#/clientes").await?;
    let row = app.wait_contains("[data-testid=clientes-table]", "CACX7605101P8").await?;
    check(
        row.contains("626") && row.contains("G03"),
        format!("el cliente guardado desde Emitir: {row:?}"),
    )?;

    // Restore from Ajustes (the contador, with the PIN): what will happen first, then the
    // console shows the restored database — the customer saved after the backup is not in it.
    act_as_contador(app).await?;
    app.go("#/ajustes/respaldos").await?;
    app.choose_next(&[&backup])?;
    app.click("[data-testid=restore-choose]").await?;
    let preview = app.wait_contains("[data-testid=restore-preview]", "1 facturas").await?;
    check(
        preview.contains("quedan retenidos"),
        format!("lo que hará la restauración: {preview:?}"),
    )?;
    app.click("[data-testid=restore-confirm]").await?;
    app.wait_contains("[data-testid=restore-done]", "Respaldo restaurado").await?;
    // The console reloads on the reopened database (no role entered).
    app.find("[data-testid=act-as-contador]").await?;
    app.go("#/clientes").await?;
    let clientes = app.wait_contains("[data-testid=clientes-table]", "URE180429TM6").await?;
    check(
        !clientes.contains("CACX7605101P8"),
        format!("tras restaurar, el cliente posterior al respaldo no está: {clientes:?}"),
    )?;
    Ok(())
}

/// The PostgreSQL server the team flow creates its database on (as the other suites:
/// `TIMBRA_TEST_POSTGRES_URL`, else the local server as postgres).
fn pg_admin_url() -> String {
    std::env::var("TIMBRA_TEST_POSTGRES_URL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// The team flow's database (one E2E run at a time on a machine: a fixed name, replaced).
const TEAM_DB: &str = "timbra_e2e_equipo";

fn psql(sql: &str) -> Res {
    let out = std::process::Command::new("psql")
        .arg(pg_admin_url())
        .args(["-v", "ON_ERROR_STOP=1", "-Atqc", sql])
        .output()
        .map_err(|e| format!("psql: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("psql {sql}: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

fn team_url() -> Res<String> {
    let admin = pg_admin_url();
    let (server, _) = admin.rsplit_once('/').ok_or("TIMBRA_TEST_POSTGRES_URL sin /BASE")?;
    Ok(format!("{server}/{TEAM_DB}"))
}

/// A team's PostgreSQL database, empty, saved in this machine's seat file (`puesto.json` under
/// the app's XDG config folder) as Ajustes saves it, with the seat's operator; no
/// `TIMBRA_DATABASE_URL`, so the saved choice is what opens.
pub fn team_database(dir: &std::path::Path) -> Res<Env> {
    psql(&format!("DROP DATABASE IF EXISTS {TEAM_DB} WITH (FORCE)"))?;
    psql(&format!("CREATE DATABASE {TEAM_DB} ENCODING 'UTF8' TEMPLATE template0"))?;
    let seat = dir.join("config/mx.timbra.app/puesto.json");
    std::fs::create_dir_all(seat.parent().ok_or("sin carpeta")?).map_err(|e| e.to_string())?;
    let json = serde_json::json!({ "operator": "Caja 2", "role": "soporte", "postgres_url": team_url()? });
    std::fs::write(&seat, json.to_string()).map_err(|e| e.to_string())?;
    Ok(vec![("TIMBRA_DATABASE_URL", "")])
}

/// A console on a team's PostgreSQL database chosen in Ajustes (no environment variable): the
/// frame and Ajustes name it (never a password), the app's own drain is counted live there and on
/// the Tablero, a sale recorded by this seat's operator is stamped by it, *Probar conexión* reads
/// Timbra's schema on the server, and going back to this computer's SQLite is saved for the next
/// start (it says so).
pub async fn equipo_postgres(app: &App) -> Res {
    let url = team_url()?;
    let shown = url.trim_start_matches("postgres://").to_string();
    let r = async {
        app.wait_contains("[data-testid=frame-database]", &shown).await?;
        app.wait_contains("[data-testid=operator]", "Caja 2 · Soporte").await?;
        app.go("#/ajustes/base").await?;
        app.wait_contains("[data-testid=database-form]", "PostgreSQL").await?;
        app.wait_contains("[data-testid=database-shown]", &url).await?;
        app.wait_contains("[data-testid=database-form]", "elegida aquí").await?;
        app.wait_contains("[data-testid=live-workers]", "timbra-app").await?;

        let factura = emit_and_open(app, "4490").await?;
        app.wait_badge("timbrada").await?;
        app.wait_contains("[data-testid=timeline] li[data-kind=sale_recorded]", "Caja 2 · Soporte")
            .await?;
        app.go("#/tablero").await?;
        app.wait_contains("[data-testid=tablero-database]", &url).await?;
        app.wait_contains("[data-testid=database-and-drain] [data-testid=live-workers-count]", "1 proceso")
            .await?;

        app.go("#/ajustes/base").await?;
        app.click("[data-testid=database-test]").await?;
        app.wait_contains("[data-testid=database-probe]", "Esquema de Timbra: versión")
            .await?;
        app.screenshot("ajustes-base-equipo").await?;
        app.click("[data-testid=database-local]").await?;
        app.click("[data-testid=database-form] button[type=submit]").await?;
        app.wait_contains("[data-testid=database-form] [role=status]", "se aplica al reiniciar Timbra")
            .await?;
        app.wait_contains("[data-testid=database-restart]", "reiniciar").await?;
        app.go(&factura).await?;
        app.wait_badge("timbrada").await?;
        Ok(())
    }
    .await;
    let dropped = psql(&format!("DROP DATABASE IF EXISTS {TEAM_DB} WITH (FORCE)"));
    r.and(dropped)
}

/// Support at a distance and updates (issue 25): *Acerca de Timbra* names the version, the
/// database and the log folder; *Exportar diagnóstico* saves one ZIP in Descargas with the
/// settings, the versions and the app's own log. The update address must be https (or this
/// computer); with one saved, *Buscar actualizaciones* in a build without the release key says
/// in Spanish that this copy cannot update itself (the signature checks themselves are
/// `src-tauri/tests/updater.rs`).
pub async fn acerca_y_diagnostico(app: &App) -> Res {
    app.wait_contains("[data-testid=sandbox-banner]", "Modo sandbox").await?;
    app.go("#/ajustes/acerca").await?;
    app.wait_contains("[data-testid=about-version]", "Timbra ").await?;
    app.wait_contains("[data-testid=about-database]", "SQLite").await?;
    app.wait_contains("[data-testid=about-logs]", "registros").await?;
    app.click("[data-testid=export-diagnostic]").await?;
    let saved = app.wait_contains("[data-testid=diagnostic-saved]", ".zip").await?;
    let path = saved
        .trim()
        .trim_start_matches("Diagnóstico guardado en")
        .trim()
        .trim_end_matches('.')
        .to_string();
    let file = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| format!("{path}: {e}"))?;
    let names: Vec<String> = zip.file_names().filter_map(|n| n.ok().map(|n| n.to_string())).collect();
    for want in ["acerca.txt", "ajustes.json", "registros/timbra.log"] {
        check(names.iter().any(|n| n == want), format!("el diagnóstico trae {want}: {names:?}"))?;
    }
    let mut about = String::new();
    std::io::Read::read_to_string(&mut zip.by_name("acerca.txt").map_err(|e| e.to_string())?, &mut about).map_err(|e| e.to_string())?;
    check(about.contains("Versión del esquema: "), format!("acerca.txt: {about}"))?;

    let form = "[data-testid=updates-form]";
    app.type_into("[data-testid=update-url]", "http://actualizaciones.ejemplo.mx/latest.json")
        .await?;
    app.click(&format!("{form} button[type=submit]")).await?;
    app.wait_contains(
        "[data-testid=update-error]",
        "Dirección de actualizaciones: Debe empezar con https://",
    )
    .await?;
    app.type_into("[data-testid=update-url]", "http://127.0.0.1:9/latest.json").await?;
    app.click(&format!("{form} button[type=submit]")).await?;
    app.wait_contains(form, "Guardado").await?;
    app.click("[data-testid=update-check]").await?;
    app.wait_contains("[data-testid=update-error]", "no trae la llave").await?;
    Ok(())
}

/// SAT's UUID shape: 8-4-4-4-12 hexadecimal, upper case.
fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts
            .iter()
            .all(|p| p.chars().all(|c| c.is_ascii_digit() || ('A'..='F').contains(&c)))
}

/// The start of a file, to tell a PDF.
fn file_head(path: &std::path::Path) -> Res<Vec<u8>> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(bytes.into_iter().take(5).collect())
}

/// A cashier's day: three invoices in a row, each followed on the page until Timbrada (its
/// name, Serie-Folio, as the invoice has it, and its UUID), printed, saved as PDF and shared
/// by WhatsApp, then *Nueva factura* leaves every field blank; a counter ticket recorded with
/// Enter goes into the day's factura global and shows *En factura global* in the Venta de
/// mostrador, the Bandeja and its Factura page (never held or late).
pub async fn mostrador_y_emitir(app: &App) -> Res {
    app.wait_contains("[data-testid=sandbox-banner]", "Modo sandbox").await?;
    let status = app.invoke("app_status", serde_json::json!({})).await?;
    let business = status["emisor"]["nombre"].as_str().unwrap_or_default().to_string();
    check(!business.is_empty(), "el emisor del sandbox tiene nombre")?;
    app.go("#/emitir").await?;
    let mut names = Vec::new();
    for n in 0..3 {
        app.type_into("input[name='receptor.rfc']", "URE180429TM6").await?;
        app.type_into("input[name='receptor.nombre']", "UNIVERSIDAD ROBOTICA ESPAÑOLA")
            .await?;
        app.type_into("input[name='receptor.domicilio_fiscal']", "86991").await?;
        app.choose("", "receptor.regimen_fiscal", "601", "601").await?;
        app.choose("", "receptor.uso_cfdi", "G01", "G01").await?;
        app.type_into("input[name='conceptos[0].descripcion']", "Café de olla").await?;
        app.type_into("input[name='conceptos[0].cantidad']", "2").await?;
        app.type_into("input[name='conceptos[0].valor_unitario']", "50.00").await?;
        app.click("[data-testid=emitir-submit]").await?;
        // The page follows the sale until the PAC stamped it.
        app.wait_text_for(
            "[data-testid=emit-status]",
            "Timbrada",
            |t| t.contains("Timbrada"),
            std::time::Duration::from_secs(30),
        )
        .await?;
        let name = app.find("[data-testid=emit-name]").await?.text().await.map_err(|e| e.to_string())?;
        let uuid = app.find("[data-testid=emit-uuid]").await?.text().await.map_err(|e| e.to_string())?;
        check(is_uuid(uuid.trim()), format!("factura {}: UUID {uuid:?}", n + 1))?;
        // The name shown is the invoice's own Serie-Folio.
        let link = app.attr("[data-testid=recorded-link]", "href").await?.unwrap_or_default();
        let id: i64 = link
            .rsplit('/')
            .next()
            .and_then(|x| x.parse().ok())
            .ok_or(format!("enlace {link:?}"))?;
        let detail = app.invoke("invoice_detail", serde_json::json!({ "invoiceId": id })).await?;
        let inv = &detail["invoice"];
        let own: Vec<&str> = [inv["serie"].as_str(), inv["folio"].as_str()]
            .into_iter()
            .flatten()
            .filter(|x| !x.is_empty())
            .collect();
        check(
            !name.trim().is_empty() && name.trim() == own.join("-"),
            format!("factura {}: la página dice {name:?}; la factura es {:?}", n + 1, own.join("-")),
        )?;
        check(
            inv["uuid"].as_str() == Some(uuid.trim()),
            format!("UUID {uuid:?} vs {}", inv["uuid"]),
        )?;
        names.push(name.trim().to_string());

        if n == 0 {
            // Imprimir: the PDF opened with the system's viewer.
            app.click("[data-testid=emit-print]").await?;
            app.wait_contains("[data-testid=emit-done]", "visor de PDF").await?;
            let opened = app.opened_files();
            let pdf = opened.last().ok_or("Imprimir no abrió ningún archivo")?;
            check(file_head(pdf)? == b"%PDF-", format!("{} no es un PDF", pdf.display()))?;
            check(
                pdf.file_name().is_some_and(|f| f.to_string_lossy().starts_with(&names[0])),
                format!("el PDF {} lleva el nombre de la factura", pdf.display()),
            )?;
            // PDF: saved where the person chose in the save dialog.
            let dest = app.dir().join(format!("{}.pdf", names[0]));
            app.choose_next(&[&dest])?;
            app.click("[data-testid=emit-pdf]").await?;
            app.wait_contains("[data-testid=emit-done]", &names[0]).await?;
            check(file_head(&dest)? == b"%PDF-", format!("{} no es un PDF", dest.display()))?;
            // WhatsApp: the message names the business, the invoice, its total and UUID, and
            // the page says which PDF to attach.
            app.click("[data-testid=emit-whatsapp]").await?;
            let said = app.wait_contains("[data-testid=whatsapp-status]", "adjunte").await?;
            check(
                said.contains("Mensaje copiado"),
                format!("el mensaje se copió al portapapeles: {said:?}"),
            )?;
            let text = app
                .find("[data-testid=whatsapp-text]")
                .await?
                .prop("value")
                .await
                .map_err(|e| e.to_string())?
                .unwrap_or_default();
            for part in [business.as_str(), names[0].as_str(), uuid.trim(), "$116.00"] {
                check(text.contains(part), format!("el mensaje para WhatsApp no dice {part:?}: {text:?}"))?;
            }
            app.screenshot("emitir-timbrada").await?;
        }
        // Nueva factura: every field blank, the customer search too.
        app.click("[data-testid=emit-new]").await?;
        for field in ["customer-search", "receptor.rfc", "receptor.nombre", "conceptos[0].descripcion"] {
            let v = app
                .attr(&format!("#emitir-form [name='{field}']"), "value")
                .await?
                .unwrap_or_default();
            check(v.is_empty(), format!("{field} quedó con {v:?} tras Nueva factura"))?;
        }
    }
    let distinct: std::collections::BTreeSet<&String> = names.iter().collect();
    check(distinct.len() == 3, format!("tres facturas, tres nombres: {names:?}"))?;

    // A counter ticket: typed and recorded with Enter.
    app.go("#/mostrador").await?;
    app.type_into("#mostrador-form input[name='lines[0].descripcion']", "Tamal de elote")
        .await?;
    app.type_into("#mostrador-form input[name='lines[0].cantidad']", "3").await?;
    app.type_into("#mostrador-form input[name='lines[0].valor_unitario']", "20.00")
        .await?;
    keys(app, &ENTER.to_string()).await?;
    app.wait_contains("[data-testid=ticket-recorded]", "$69.60").await?;
    app.wait_contains("[data-testid=day-tickets]", "Espera la factura global").await?;
    app.wait_contains("[data-testid=day-total]", "1 tickets · $69.60").await?;

    // The day's factura global takes it.
    app.go("#/global").await?;
    app.click("[data-testid=global-preview]").await?;
    app.wait_contains("[data-testid=global-tickets] h2", "Entran 1 tickets").await?;
    app.click("[data-testid=global-create]").await?;
    app.wait_contains("[data-testid=global-created]", "registrada con 1 tickets")
        .await?;
    let global = app.attr("[data-testid=global-created] a", "href").await?.unwrap_or_default();
    let global_id = global.rsplit('/').next().unwrap_or_default().to_string();

    // En factura global, at the counter, in the Bandeja and on the ticket's page.
    app.go("#/mostrador").await?;
    app.wait_contains("[data-testid=day-tickets] [data-testid=ticket-place]", "En factura global")
        .await?;
    app.go("#/bandeja").await?;
    let row = "a.tr[data-sale-id^='ticket-']";
    let text = app.wait_contains(row, "En factura global").await?;
    check(
        !text.contains("Detenida") && !text.contains("Fuera de las 72 h"),
        format!("el ticket no está detenido ni fuera de plazo: {text:?}"),
    )?;
    // Its sale cell opens the ticket (its state cell opens the factura global).
    app.click(&format!("{row} span[role=cell]:first-child")).await?;
    app.wait_contains("[data-testid=factura-ticket]", "En factura global").await?;
    let place = app.attr("[data-testid=factura-ticket] a", "href").await?.unwrap_or_default();
    check(
        place.ends_with(&format!("/factura/{global_id}")),
        format!("el enlace lleva a la factura global {global_id}: {place:?}"),
    )?;
    check(
        !app.find("[data-testid=factura-head]")
            .await?
            .text()
            .await
            .map_err(|e| e.to_string())?
            .contains("Fuera de las 72 h"),
        "la página del ticket no dice Fuera de las 72 h",
    )?;
    Ok(())
}

/// Records a sale as the Emitir page does (the app's own `record_sale`), from the ingreso
/// fixture: `sale_id`, `folio`, `metodo` (PUE or PPD) and the receptor.
async fn record_draft(app: &App, sale_id: &str, folio: &str, metodo: &str, receptor: (&str, &str, &str)) -> Res {
    let now = app.invoke("local_now", serde_json::json!({})).await?;
    let now = now.as_str().ok_or("local_now no es texto")?;
    let sale = std::fs::read_to_string(crate::harness::repo_root().join("tests/fixtures/sales/ingreso-pedido-4471.json"))
        .map_err(|e| e.to_string())?;
    let mut draft: serde_json::Value = serde_json::from_str(&sale).map_err(|e| e.to_string())?;
    draft["sale_id"] = sale_id.into();
    draft["occurred_at"] = now.into();
    draft["folio"] = folio.into();
    draft["metodo_pago"] = metodo.into();
    if metodo == "PPD" {
        draft["forma_pago"] = "99".into();
    }
    draft["receptor"]["rfc"] = receptor.0.into();
    draft["receptor"]["nombre"] = receptor.1.into();
    draft["receptor"]["domicilio_fiscal"] = receptor.2.into();
    app.invoke("record_sale", serde_json::json!({ "saleId": sale_id, "draft": draft }))
        .await
        .map(|_| ())
}

/// Issue 29, items 5 and 6. Two PPD invoices of one customer, paid by one payment from the Pagos
/// page: each shows its saldo, the payment's REP is stamped and both saldos drop; the Pagos list
/// shows it with both invoices. Three more invoices are rejected by the PAC (its clock is 73 h
/// ahead), one of another customer. The Bandeja finds the customer's rows by a part of the name
/// and the day, and nothing on another day; five rows selected and retried: the three rejected
/// are retried, the two stamped ones say why not.
pub async fn pagos_y_bandeja(app: &App) -> Res {
    const URE: (&str, &str, &str) = ("URE180429TM6", "UNIVERSIDAD ROBOTICA ESPAÑOLA", "86991");
    const ICV: (&str, &str, &str) = ("ICV060329BY0", "INMOBILIARIA CVA", "33826");
    app.wait_contains("[data-testid=sandbox-banner]", "Modo sandbox").await?;
    record_draft(app, "pyb-ppd-1", "5101", "PPD", URE).await?;
    record_draft(app, "pyb-ppd-2", "5102", "PPD", URE).await?;
    app.go("#/bandeja").await?;
    for s in ["pyb-ppd-1", "pyb-ppd-2"] {
        app.wait_contains(&format!("a.tr[data-sale-id='{s}']"), "Timbrada").await?;
    }

    // One payment for both: each invoice's saldo, 50.00 applied to each.
    app.go("#/pagos").await?;
    app.type_into("[data-testid=pay-find]", "URE180429").await?;
    for s in ["pyb-ppd-1", "pyb-ppd-2"] {
        app.click(&format!("[data-testid=pay-pick][data-sale-id='{s}']")).await?;
    }
    let mut before = Vec::new();
    for s in ["pyb-ppd-1", "pyb-ppd-2"] {
        let saldo = app
            .wait_text(
                &format!("[data-testid=pay-picked] tr[data-sale-id='{s}'] [data-testid=pay-saldo]"),
                "el saldo",
                |t| t.contains('$'),
            )
            .await?;
        before.push(saldo);
    }
    app.type_into("[data-testid=pay-form] input[name='invoices[0].amount']", "50.00")
        .await?;
    app.type_into("[data-testid=pay-form] input[name='invoices[1].amount']", "50.00")
        .await?;
    app.type_into("[data-testid=pay-form] input[name=amount]", "100.00").await?;
    app.click("[data-testid=pay-submit]").await?;
    app.wait_contains("[data-testid=pay-recorded]", "Pago registrado").await?;
    // Its REP is stamped (with its UUID) and it lists both invoices; both saldos drop.
    let row = app
        .wait_text("[data-testid=payments-list] tr[data-rep=timbrado]", "el pago timbrado", |t| {
            t.contains("Timbrado")
        })
        .await?;
    check(
        row.contains("F-5101") && row.contains("F-5102") && row.matches("$50.00").count() == 2,
        format!("el pago debe listar las dos facturas con $50.00 cada una: {row:?}"),
    )?;
    for (s, was) in ["pyb-ppd-1", "pyb-ppd-2"].iter().zip(&before) {
        let now = app
            .wait_text(
                &format!("[data-testid=pay-picked] tr[data-sale-id='{s}'] [data-testid=pay-saldo]"),
                "el saldo nuevo",
                |t| t.contains('$') && t != was,
            )
            .await?;
        check(now != *was, format!("el saldo de {s} debía bajar de {was}: {now}"))?;
    }
    app.screenshot("pagos").await?;

    // Three rejected by the PAC (one of another customer): Rechazada, to reprocess.
    set_fault(app, "fecha_expired", "rechaza la Fecha").await?;
    record_draft(app, "pyb-r-1", "5103", "PUE", URE).await?;
    record_draft(app, "pyb-r-2", "5104", "PUE", URE).await?;
    record_draft(app, "pyb-r-3", "5105", "PUE", ICV).await?;
    app.go("#/bandeja").await?;
    for s in ["pyb-r-1", "pyb-r-2", "pyb-r-3"] {
        app.wait_contains(&format!("a.tr[data-sale-id='{s}']"), "Rechazada").await?;
    }
    set_fault(app, "none", "Sin fallas").await?;

    // The search: a part of the customer's name and today; nothing on another day.
    app.go("#/bandeja").await?;
    let today = app.invoke("local_now", serde_json::json!({})).await?;
    let today = today.as_str().ok_or("local_now no es texto")?[..10].to_string();
    app.type_into("[data-testid=customer-search]", "robotica").await?;
    pick_date(app, "[data-testid=date-range]", "desde", &today).await?;
    pick_date(app, "[data-testid=date-range]", "hasta", &today).await?;
    app.wait_contains("a.tr[data-sale-id='pyb-r-2']", "URE180429TM6").await?;
    let found = app.all("a.tr[data-sale-id]").await?;
    let mut ids = Vec::new();
    for r in &found {
        ids.push(r.attr("data-sale-id").await.map_err(|e| e.to_string())?.unwrap_or_default());
    }
    check(
        ["pyb-ppd-1", "pyb-ppd-2", "pyb-r-1", "pyb-r-2"]
            .iter()
            .all(|s| ids.iter().any(|i| i == s))
            && !ids.iter().any(|i| i == "pyb-r-3"),
        format!("la búsqueda por cliente y fecha debía dar sus facturas y no las de otro cliente: {ids:?}"),
    )?;
    let year: i32 = today[..4].parse().map_err(|e| format!("{today}: {e}"))?;
    pick_date(app, "[data-testid=date-range]", "desde", &format!("{}-01-01", year - 1)).await?;
    pick_date(app, "[data-testid=date-range]", "hasta", &format!("{}-01-02", year - 1)).await?;
    app.wait_contains(".bandeja .empty", "Ninguna factura coincide").await?;
    app.screenshot("bandeja-busqueda").await?;

    // Five selected, retried together: the rejected three are retried, the stamped two say why.
    app.click("[data-testid=clear-filters]").await?;
    app.wait_contains("a.tr[data-sale-id='pyb-r-3']", "INMOBILIARIA").await?;
    for s in ["pyb-ppd-1", "pyb-ppd-2", "pyb-r-1", "pyb-r-2", "pyb-r-3"] {
        let id = app
            .attr(&format!("a.tr[data-sale-id='{s}']"), "data-invoice-id")
            .await?
            .ok_or_else(|| format!("{s} sin id"))?;
        app.click(&format!("[data-testid=select-row][data-select-id='{id}']")).await?;
    }
    app.wait_contains("[data-testid=bulk-bar]", "5 seleccionadas").await?;
    app.click("[data-testid=bulk-retry]").await?;
    let result = app.wait_contains("[data-testid=bulk-result]", "Reintentadas: 3.").await?;
    check(
        result.contains("No se pudo con 2") && result.contains("F-5101") && result.contains("F-5102"),
        format!("los dos timbrados deben decir por qué no: {result:?}"),
    )?;
    for li in app.all("[data-testid=bulk-result] li[data-outcome=refused]").await? {
        let text = li.text().await.map_err(|e| e.to_string())?;
        check(
            text.split_once(':').is_some_and(|(_, why)| why.trim().len() > 10) && !text.contains('_'),
            format!("cada rechazo dice por qué, en palabras: {text:?}"),
        )?;
    }
    for s in ["pyb-r-1", "pyb-r-2", "pyb-r-3"] {
        app.wait_contains(&format!("a.tr[data-sale-id='{s}']"), "Timbrada").await?;
    }
    app.screenshot("bandeja-seleccion").await?;
    Ok(())
}

/// A CFDI stamped elsewhere that looks like the one at `stamped` (the same serie and folio, a
/// minute earlier, sealed again with the emisor's CSD, a TFD of another UUID whose SelloCFD is
/// the new Sello): imported in Duplicados it is a *posible duplicado* of that sale.
fn stamped_twin(stamped: &std::path::Path, cer: &std::path::Path, key: &std::path::Path) -> Res<Vec<u8>> {
    use cfdi::xml::{Document, Node};
    let bytes = std::fs::read(stamped).map_err(|e| format!("{}: {e}", stamped.display()))?;
    let mut doc = Document::parse(&bytes).map_err(|e| format!("XML timbrado: {e}"))?;
    let at = doc
        .root
        .children
        .iter()
        .position(|n| matches!(n, Node::Element(e) if e.is(cfdi::NS_CFDI, "Complemento")))
        .ok_or("el XML timbrado no tiene Complemento")?;
    let Node::Element(mut complemento) = doc.root.children.remove(at) else {
        return Err("Complemento".into());
    };
    let fecha = doc.root.attr("Fecha").ok_or("sin Fecha")?;
    let fecha =
        chrono::NaiveDateTime::parse_from_str(fecha, cfdi::write::FECHA_FORMAT).map_err(|e| e.to_string())? - chrono::Duration::minutes(1);
    doc.root.set_attr("Fecha", fecha.format(cfdi::write::FECHA_FORMAT).to_string());
    let read = |p: &std::path::Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let csd = cfdi::csd::Csd::load(&read(cer)?, &read(key)?, &cfdi::secret::Secret::new("12345678a")).map_err(|e| format!("CSD: {e}"))?;
    cfdi::seal::seal(&mut doc, &csd).map_err(|e| format!("sellar: {e}"))?;
    let sello = doc.root.attr("Sello").unwrap_or_default().to_string();
    for node in complemento.children.iter_mut() {
        if let Node::Element(tfd) = node {
            if tfd.is(cfdi::NS_TFD, "TimbreFiscalDigital") {
                let uuid = tfd.attr("UUID").unwrap_or_default().to_string();
                tfd.set_attr("UUID", format!("{}ABCDEF012345", &uuid[..uuid.len().saturating_sub(12)]));
                tfd.set_attr("SelloCFD", sello.clone());
            }
        }
    }
    doc.root.children.insert(at, Node::Element(complemento));
    Ok(doc.to_xml().into_bytes())
}

/// Emits the sale with `folio` for the emisor on screen and waits until it is Timbrada;
/// downloads its XML. Returns the XML's path.
async fn emit_stamped(app: &App, folio: &str) -> Res<std::path::PathBuf> {
    emit_and_open(app, folio).await?;
    app.wait_badge("timbrada").await?;
    app.click("button[data-action=download_xml]").await?;
    let saved = app.wait_contains(".notice[role=status]", "Guardado en").await?;
    Ok(std::path::PathBuf::from(saved.trim().trim_start_matches("Guardado en").trim()))
}

/// Puts `rfc` on screen from the sidebar's switcher.
async fn switch_to(app: &App, rfc: &str) -> Res {
    app.select("[data-testid=emisor-select]", rfc).await?;
    app.wait_text("[data-testid=current-emisor-rfc]", rfc, |t| t.trim() == rfc).await?;
    Ok(())
}

/// Several emisores in one console (issue 27): soporte adds a second emisor in Ajustes ›
/// Emisores (Timbra's own test CSD for CACX7605101P8), each emisor emits from Emitir with its
/// own CSD and its own sandbox PAC (the switcher names the emisor on screen), and the
/// contador's queue in Duplicados shows both emisores' *posibles duplicados*, each row naming
/// its emisor; a row of the other emisor is decided only after switching to it.
pub async fn dos_emisores(app: &App) -> Res {
    const SEGUNDO: &str = "CACX7605101P8";
    app.wait_contains("[data-testid=current-emisor-rfc]", "EKU9003173C9").await?;
    check(
        app.all("[data-testid=emisor-select]").await?.is_empty(),
        "con un solo emisor no hay nada que elegir",
    )?;
    let certs = crate::harness::repo_root()
        .join("tests/fixtures/cfdi/certs")
        .canonicalize()
        .map_err(|e| format!("certificados de prueba: {e}"))?;
    let (cer2, key2) = (
        certs.join("segundo-emisor/CACX7605101P8-TIMBRA-PRUEBA.cer"),
        certs.join("segundo-emisor/CACX7605101P8-TIMBRA-PRUEBA.key"),
    );

    // Soporte adds the second emisor: the same inputs as Ajustes › Emisor y CSD.
    app.go("#/ajustes/emisores").await?;
    let form = "[data-testid=emisor-add-form]";
    app.type_into(&format!("{form} input[name=rfc]"), SEGUNDO).await?;
    app.type_into(&format!("{form} input[name=nombre]"), "XOCHILT CASAS CHAVEZ").await?;
    app.choose(form, "regimen_fiscal", "612", "612").await?;
    app.type_into(&format!("{form} input[name=lugar_expedicion]"), "42501").await?;
    app.choose_next(&[&cer2])?;
    app.click("[data-testid=add-choose-cer]").await?;
    app.wait_contains("[data-testid=add-chosen-cer]", "CACX7605101P8-TIMBRA-PRUEBA.cer")
        .await?;
    app.choose_next(&[&key2])?;
    app.click("[data-testid=add-choose-key]").await?;
    app.wait_contains("[data-testid=add-chosen-key]", "CACX7605101P8-TIMBRA-PRUEBA.key")
        .await?;
    app.type_into(&format!("{form} input[name=password]"), "12345678a").await?;
    app.click("[data-testid=emisor-add]").await?;
    app.wait_contains(".notice[role=status]", "Emisor agregado: CACX7605101P8").await?;
    app.wait_contains(&format!("[data-testid=emisor-row][data-rfc={SEGUNDO}]"), "XOCHILT CASAS CHAVEZ")
        .await?;
    app.wait_contains(&format!("[data-testid=emisor-row][data-rfc={SEGUNDO}]"), "CSD vigente")
        .await?;
    // Adding does not change the emisor on screen.
    app.wait_contains("[data-testid=current-emisor-rfc]", "EKU9003173C9").await?;
    app.screenshot("ajustes-emisores").await?;

    // Each emisor emits with its own CSD and PAC.
    let xml1 = emit_stamped(app, "7001").await?;
    switch_to(app, SEGUNDO).await?;
    app.wait_contains("[data-testid=current-emisor-name]", "XOCHILT CASAS CHAVEZ")
        .await?;
    app.wait_contains("[data-testid=sandbox-banner]", "PAC simulado para el emisor CACX7605101P8")
        .await?;
    let xml2 = emit_stamped(app, "7001").await?;
    let text2 = std::fs::read_to_string(&xml2).map_err(|e| e.to_string())?;
    check(
        text2.contains("Rfc=\"CACX7605101P8\"") && text2.contains("99990000000000000002"),
        "la factura del segundo emisor va sellada con su propio CSD",
    )?;
    app.go("#/bandeja").await?;
    app.wait_text("[data-testid=count-total]", "1 factura", |t| t.trim() == "1").await?;

    // Each emisor imports a look-alike stamped elsewhere (the contador's, with each emisor's
    // own PIN): a posible duplicado in each database.
    for (rfc, xml, cer, key) in [
        (SEGUNDO, &xml2, cer2.clone(), key2.clone()),
        (
            "EKU9003173C9",
            &xml1,
            certs.join("EKU9003173C9.cer"),
            certs.join("EKU9003173C9.key"),
        ),
    ] {
        switch_to(app, rfc).await?;
        let twin = app.dir().join(format!("gemelo-{rfc}.xml"));
        std::fs::write(&twin, stamped_twin(xml, &cer, &key)?).map_err(|e| e.to_string())?;
        set_contador_pin(app).await?;
        act_as_contador(app).await?;
        app.go("#/duplicados").await?;
        app.choose_next(&[&twin])?;
        app.click("[data-testid=import-files]").await?;
        app.wait_contains("[data-testid=import-result]", "1 posibles duplicados").await?;
        leave_contador(app).await?;
    }

    // ONE queue across the emisores, each group naming its emisor.
    app.go("#/duplicados").await?;
    app.wait_contains("[data-testid=current-emisor-rfc]", "EKU9003173C9").await?;
    let mut named = Vec::new();
    for _ in 0..40 {
        named.clear();
        for g in app.all("[data-testid=duplicate-group]").await? {
            named.push(g.text().await.map_err(|e| e.to_string())?);
        }
        if named.len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    check(
        named.iter().any(|t| t.contains("ESCUELA KEMPER URGATE · EKU9003173C9"))
            && named.iter().any(|t| t.contains("XOCHILT CASAS CHAVEZ · CACX7605101P8")),
        format!("la cola del contador nombra a cada emisor: {named:?}"),
    )?;
    // The other emisor's row is decided after switching to it (never on the wrong emisor).
    let other = format!("[data-testid=duplicate-group][data-emisor={SEGUNDO}]");
    app.find(&format!("{other} [data-testid=switch-to-emisor]")).await?;
    check(
        app.all(&format!("{other} [data-testid=decide-form]")).await?.is_empty(),
        "la fila del otro emisor no ofrece decidir sin cambiar de emisor",
    )?;
    app.screenshot("duplicados-dos-emisores").await?;
    app.click(&format!("{other} [data-testid=switch-to-emisor]")).await?;
    app.wait_text("[data-testid=current-emisor-rfc]", SEGUNDO, |t| t.trim() == SEGUNDO)
        .await?;
    Ok(())
}

/// `POST {base}{path}` with a text body (the simulator's control endpoints); the status and body.
fn post_text(base: &str, path: &str, body: &str) -> Res<(u16, String)> {
    use std::io::{Read, Write};
    let host = base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .ok_or_else(|| format!("dirección ilegible: {base}"))?
        .to_string();
    let mut s = std::net::TcpStream::connect(&host).map_err(|e| format!("{host}: {e}"))?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).map_err(|e| e.to_string())?;
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("respuesta HTTP ilegible: {answer:?}"))?;
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Ok((status, body))
}

/// Issue 28 in the console: the contador loads SAT's test e.firma on the SAT page, a sale is
/// stamped through Timbra (Modo sandbox: the simulator answers as SAT too), a CFDI of the same
/// emisor stamped elsewhere appears at SAT (`/_sim/sat/inject`), and *Conciliar con el SAT*
/// enqueues the month's requests: the drain steps them, records SAT's packages and reconciles.
/// The page shows finished requests, the last reconciliation and the *CFDI desconocido en el
/// SAT* (linked to the look-alike sale, pointing to Duplicados); the Factura page says *Vigente*
/// from SAT's own record, without asking SAT live.
pub async fn sat_conciliacion(app: &App) -> Res {
    app.wait_contains("[data-testid=current-emisor-rfc]", "EKU9003173C9").await?;
    let factura = emit_and_open(app, "8128").await?;
    app.wait_badge("timbrada").await?;
    app.click("button[data-action=download_xml]").await?;
    let saved = app.wait_contains(".notice[role=status]", "Guardado en").await?;
    let xml_path = std::path::PathBuf::from(saved.trim().trim_start_matches("Guardado en").trim());
    let xml = std::fs::read_to_string(&xml_path).map_err(|e| format!("{}: {e}", xml_path.display()))?;
    let uuid = xml
        .split("UUID=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .ok_or("el XML timbrado no trae UUID")?
        .to_string();
    check(uuid.len() == 36, format!("UUID ilegible: {uuid:?}"))?;

    // The SAT page: no e.firma yet, nothing asked.
    app.go("#/sat").await?;
    app.wait_contains("[data-testid=efirma-state]", "No hay e.firma").await?;
    app.wait_contains("[data-testid=sat-requests]", "Todavía no hay solicitudes")
        .await?;
    let fiel = crate::harness::repo_root()
        .join("tests/fixtures/sat-descarga-masiva/fake-fiel")
        .canonicalize()
        .map_err(|e| format!("e.firma de prueba: {e}"))?;
    let (cer, key) = (fiel.join("EKU9003173C9.cer"), fiel.join("EKU9003173C9.key"));
    app.choose_next(&[&cer])?;
    app.click("[data-testid=efirma-choose-cer]").await?;
    app.wait_contains("[data-testid=efirma-chosen-cer]", "EKU9003173C9.cer").await?;
    app.choose_next(&[&key])?;
    app.click("[data-testid=efirma-choose-key]").await?;
    app.wait_contains("[data-testid=efirma-chosen-key]", "EKU9003173C9.key").await?;
    app.type_into("[data-testid=efirma-form] input[name=password]", "12345678a").await?;
    app.click("[data-testid=efirma-save]").await?;
    app.wait_contains("[data-testid=efirma-state]", "e.firma de EKU9003173C9 cargada")
        .await?;
    app.wait_contains("[data-testid=sat-url]", "Modo sandbox").await?;

    // SAT (the sandbox simulator) publishes at once and holds a CFDI stamped elsewhere: the
    // same sale's XML under another UUID (same receptor, total and date).
    let sat = app
        .attr("[data-testid=sat-url]", "data-url")
        .await?
        .filter(|u| u.starts_with("http://"))
        .ok_or("la página SAT no dice dónde está el SAT")?;
    let (code, body) = post_text(&sat, "/_sim/sat/publish-delay", "0")?;
    check(code == 200, format!("publish-delay: {code} {body}"))?;
    let other = "5A7E0C1D-28E2-4E00-9A11-0000000028E2";
    let (code, body) = post_text(&sat, "/_sim/sat/inject", &xml.replace(&uuid, other))?;
    check(code == 200, format!("inject: {code} {body}"))?;

    app.click("[data-testid=sat-reconcile]").await?;
    app.wait_contains(".notice[role=status]", "Solicitudes al SAT enviadas").await?;
    app.wait_text_for(
        "[data-testid=sat-requests]",
        "solicitudes terminadas",
        |t| t.contains("Terminada") || t.contains("terminada"),
        std::time::Duration::from_secs(120),
    )
    .await?;
    app.wait_text_for(
        "[data-testid=sat-unknown]",
        "el CFDI desconocido en el SAT",
        |t| t.contains(other),
        std::time::Duration::from_secs(120),
    )
    .await?;
    let row = format!("[data-testid=sat-unknown-row][data-uuid='{other}']");
    app.wait_contains(&row, "URE180429TM6").await?;
    app.wait_contains(&row, "116.00").await?;
    let sale = app
        .attr(&format!("{row} [data-testid=sat-unknown-sale]"), "href")
        .await?
        .ok_or("el CFDI desconocido no enlaza la venta parecida")?;
    check(sale == factura, format!("la venta parecida es {factura}; el enlace dice {sale}"))?;
    check(
        !app.all("[data-testid=sat-to-duplicados]").await?.is_empty(),
        "la página SAT lleva a la cola de Duplicados",
    )?;
    app.wait_contains("[data-testid=sat-last-summary]", "1 desconocidos para Timbra")
        .await?;
    // The unknown CFDI has no XML yet: the reconciliation asked SAT for that day's CFDIs on its
    // own, and the page shows that request until it settles too.
    let settled_by = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !app.all("[data-testid=sat-request][data-live=true]").await?.is_empty() {
        check(
            std::time::Instant::now() < settled_by,
            "ninguna solicitud sigue en curso (la del XML del CFDI desconocido tampoco)",
        )?;
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    // Each request says what it asked for: the day's list (metadatos), then the XML.
    let asked = app.all("[data-testid=sat-request-what]").await?;
    let mut what = Vec::new();
    for e in asked {
        what.push(e.text().await.map_err(|e| format!("solicitud: {e}"))?);
    }
    for expected in ["Emitidos · metadatos", "Emitidos · XML"] {
        check(
            what.iter().any(|w| w.trim() == expected),
            format!("la tabla de solicitudes dice {expected:?}: {what:?}"),
        )?;
    }
    app.screenshot("sat-conciliacion").await?;

    // The Factura page: SAT's record says Vigente (nobody pressed Consultar al SAT).
    app.go(&factura).await?;
    app.wait_contains("[data-testid=sat-line]", "Vigente").await?;
    check(
        app.all("[data-testid=sat-check-result]").await?.is_empty(),
        "el estado viene de la conciliación, no de una consulta en vivo",
    )?;
    Ok(())
}
