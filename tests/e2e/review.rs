//! The screen review (issue 30): every page — each Ajustes section its own — with seeded data,
//! in both themes and at the three window sizes Timbra supports (1024×600, 1280×720,
//! 1366×768). At each, a screenshot (`revision-<tema>-<ancho>x<alto>-<página>.png`) and the
//! checks measured in the DOM: nothing cut off sideways and every primary action reachable
//! ([`CUT_OFF_JS`]), no table cell breaking inside a word ([`WORD_WRAP_JS`]) nor text running
//! out of its cell or the window ([`OVERFLOW_JS`]), text readable against its background
//! ([`CONTRAST_JS`]), and in Spanish mode no raw code ([`RAW_CODES_JS`]) nor any English
//! phrase of the UI's catalogue ([`ENGLISH_JS`], the phrases read from `ui/src/lib/i18n`).
//! Ajustes' sections also hold still while they load: what they show once ready is where it
//! stays.

use crate::flows::{check, emit_and_open, CUT_OFF_JS, PRIMARY_ACTIONS, RAW_CODES_JS, WORD_WRAP_JS};
use crate::harness::{App, Res};

const SIZES: [(u32, u32); 3] = [(1024, 600), (1280, 720), (1366, 768)];
const THEMES: [(&str, &str); 2] = [("claro", "light"), ("oscuro", "dark")];
/// Ajustes' sections (ui/src/pages/ajustes/sections.ts), each its own page.
const SECTIONS: [&str; 10] = [
    "equipo",
    "emisor",
    "emisores",
    "pac",
    "base",
    "respaldos",
    "correo",
    "listas",
    "apariencia",
    "acerca",
];

/// Text running out of its table cell (not an ellipsis the cell chose), past the window's
/// right edge or below its bottom where nothing scrolls to it, and a frame that scrolls whole.
/// Returns each with its text.
const OVERFLOW_JS: &str = r#"
const out = [];
const shown = (e) => e && (e.offsetParent !== null || getComputedStyle(e).position === 'fixed');
const ellipsis = (e) => { for (let x = e; x; x = x.parentElement) if (getComputedStyle(x).textOverflow === 'ellipsis') return true; return false; };
const rectOf = (n) => { const r = document.createRange(); r.selectNodeContents(n); return r.getBoundingClientRect(); };
for (const cell of document.querySelectorAll('td, th, [role=cell], [role=columnheader]')) {
  if (!shown(cell)) continue;
  const box = cell.getBoundingClientRect();
  const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (!n.textContent.trim() || !shown(n.parentElement) || ellipsis(n.parentElement)) continue;
    const r = rectOf(n);
    if (r.width && (r.right > box.right + 1 || r.left < box.left - 1)) {
      out.push(`«${n.textContent.trim().slice(0, 30)}» sale de su celda (${Math.round(Math.max(r.right - box.right, box.left - r.left))} px)`);
      break;
    }
  }
}
const scrolls = (e) => { for (let x = e; x && x !== document.body; x = x.parentElement) { const o = getComputedStyle(x).overflowX; if (o === 'auto' || o === 'scroll') return true; } return false; };
const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let n = walk.nextNode(); n; n = walk.nextNode()) {
  const p = n.parentElement;
  if (!n.textContent.trim() || !shown(p) || ellipsis(p) || p.closest('option, select')) continue;
  const r = rectOf(n);
  if (r.width && r.right > window.innerWidth + 1 && !scrolls(p)) out.push(`«${n.textContent.trim().slice(0, 30)}» sale de la ventana (${Math.round(r.right - window.innerWidth)} px)`);
  // Below the window with nothing to scroll it into view (the frame never scrolls whole:
  // the page and the sidebar scroll in their own boxes).
  const scrollsY = (e) => { for (let x = e; x && x !== document.body; x = x.parentElement) { const o = getComputedStyle(x).overflowY; if (o === 'auto' || o === 'scroll') return true; } return false; };
  if (r.height && r.top > window.innerHeight - 2 && !scrollsY(p)) out.push(`«${n.textContent.trim().slice(0, 30)}» queda debajo de la ventana sin desplazamiento`);
}
const doc = document.scrollingElement || document.documentElement;
if (doc.scrollHeight > window.innerHeight + 1) out.push(`la ventana entera se desplaza (${doc.scrollHeight} px de alto en ${window.innerHeight})`);
return out.slice(0, 8);
"#;

/// Text whose colour is too close to its background (WCAG AA: 4.5:1, 3:1 for large text),
/// over solid backgrounds; disabled controls are exempt (WCAG's own exception).
const CONTRAST_JS: &str = r#"
const out = [];
const parse = (c) => { const m = /rgba?\(([^)]+)\)/.exec(c || ''); if (!m) return null; const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number); return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 }; };
const over = (top, bottom) => ({ r: top.r * top.a + bottom.r * (1 - top.a), g: top.g * top.a + bottom.g * (1 - top.a), b: top.b * top.a + bottom.b * (1 - top.a), a: 1 });
const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
const background = (el) => {
  const layers = [];
  for (let e = el; e; e = e.parentElement) {
    const cs = getComputedStyle(e);
    if (cs.backgroundImage !== 'none') return null;
    const c = parse(cs.backgroundColor);
    if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
  }
  let bg = { r: 255, g: 255, b: 255, a: 1 };
  for (const l of layers.reverse()) bg = over(l, bg);
  return bg;
};
const seen = new Set();
const all = document.body.querySelectorAll('*');
for (const el of all) {
  if (!(el.offsetParent !== null || getComputedStyle(el).position === 'fixed')) continue;
  if (![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
  if (el.closest(':disabled, [aria-disabled=true], option')) continue;
  let faded = false;
  for (let e = el; e; e = e.parentElement) if (parseFloat(getComputedStyle(e).opacity) < 1) { faded = true; break; }
  if (faded) continue;
  const cs = getComputedStyle(el);
  const bg = background(el);
  const fg = parse(cs.color);
  if (!bg || !fg) continue;
  const text = over(fg, bg);
  const [a, b] = [lum(text), lum(bg)].sort((x, y) => y - x);
  const ratio = (a + 0.05) / (b + 0.05);
  const size = parseFloat(cs.fontSize);
  const large = size >= 24 || (size >= 18.6 && Number(cs.fontWeight) >= 700);
  const need = large ? 3 : 4.5;
  if (ratio < need) {
    const what = [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent.trim()).join(' ').slice(0, 30);
    const key = `${el.tagName}.${el.className}:${cs.color}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(`«${what}» contraste ${ratio.toFixed(2)}:1 (${cs.color} sobre rgb(${Math.round(bg.r)}, ${Math.round(bg.g)}, ${Math.round(bg.b)}))`);
  }
}
return out.slice(0, 8);
"#;

/// Phrases of the English catalogue (arguments[0]) visible on the page: the window's text
/// outside *Detalle técnico*, closed disclosures and what the user typed.
const ENGLISH_JS: &str = r#"
const copy = document.body.cloneNode(true);
copy.querySelectorAll('details:not([open]) > :not(summary), details.tech > :not(summary), [data-testid$=technical] > :not(summary), input, textarea, pre, .json, script, style').forEach((e) => e.remove());
const text = [copy.textContent, ...[...copy.querySelectorAll('[title]')].map((e) => e.getAttribute('title'))].join('\n').replace(/\s+/g, ' ');
return arguments[0].filter((p) => text.includes(p)).slice(0, 8).map((p) => `en inglés: «${p}»`);
"#;

/// The catalogue's values by key, read from a `ui/src/lib/i18n/*.ts` file (one `'key': 'value',`
/// a line, the value in single or double quotes).
fn catalogue(file: &str) -> Res<Vec<(String, String)>> {
    let path = crate::harness::repo_root().join("ui/src/lib/i18n").join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix('\'') else { continue };
        let Some((key, value)) = rest.split_once("': ") else { continue };
        let value = value.trim_end_matches(',');
        let quote = value.chars().next().unwrap_or(' ');
        if (quote == '\'' || quote == '"') && value.len() >= 2 && value.ends_with(quote) {
            let inner = &value[1..value.len() - 1];
            out.push((key.to_string(), inner.replace("\\'", "'").replace("\\\"", "\"")));
        }
    }
    Ok(out)
}

/// The English catalogue's phrases that Spanish never says: each value differing from its
/// Spanish one, cut at its `{placeholders}`, the pieces of at least three words and 14
/// characters that appear in no Spanish text.
fn english_phrases() -> Res<Vec<String>> {
    let es = catalogue("es.ts")?;
    let en = catalogue("en.ts")?;
    check(
        es.len() > 500 && en.len() > 500,
        format!("catálogos leídos: es {} en {}", es.len(), en.len()),
    )?;
    let spanish: Vec<&str> = es.iter().map(|(_, v)| v.as_str()).collect();
    let mut out: Vec<String> = Vec::new();
    for (key, value) in &en {
        if es.iter().any(|(k, v)| k == key && v == value) {
            continue;
        }
        for piece in value.split(['{', '}']).step_by(2) {
            let piece = piece.trim().trim_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace());
            if piece.len() >= 14 && piece.split_whitespace().count() >= 3 && !spanish.iter().any(|s| s.contains(piece)) {
                out.push(piece.to_string());
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Runs `js` (with `args`) on the page; its findings prefixed with the page, theme and size.
async fn findings(app: &App, js: &str, args: Vec<serde_json::Value>, at: &str) -> Res<Vec<String>> {
    let v = app.client.execute(js, args).await.map_err(|e| format!("{at}: {e}"))?;
    Ok(v.as_array()
        .map(|a| a.iter().map(|x| format!("{at}: {}", x.as_str().unwrap_or_default())).collect())
        .unwrap_or_default())
}

/// The positions of a section's controls, to compare once it had time to change.
const CONTROLS_JS: &str = r#"
return [...document.querySelectorAll('main input, main select, main textarea, main button')]
  .filter((e) => e.offsetParent !== null)
  .map((e) => { const r = e.getBoundingClientRect(); return `${e.name || e.getAttribute('data-testid') || e.textContent.trim().slice(0, 20)}@${Math.round(r.left)},${Math.round(r.top)}`; });
"#;

/// Picks the theme in Ajustes › Idioma y apariencia and checks the page took it.
async fn set_theme(app: &App, choice: &str) -> Res {
    app.go("#/ajustes/apariencia").await?;
    app.select("[data-testid=theme]", choice).await?;
    let applied = app
        .client
        .execute("return document.documentElement.dataset.theme;", vec![])
        .await
        .map_err(|e| e.to_string())?;
    // Como el sistema: the OS's (Xvfb's GTK says light or dark).
    let ok = match choice {
        "system" => matches!(applied.as_str(), Some("light" | "dark")),
        c => applied.as_str() == Some(c),
    };
    check(ok, format!("el tema debía ser {choice}; es {applied}"))
}

pub async fn revision_de_pantallas(app: &App) -> Res {
    let started = std::time::Instant::now();
    app.wait_contains("[data-testid=sandbox-banner]", "Modo sandbox").await?;
    // The first screen offers the two ways to start, Conectar mi PAC to Ajustes' PAC page.
    let pac = app.attr("[data-testid=first-pac]", "href").await?;
    check(
        pac.as_deref().is_some_and(|h| h.ends_with("#/ajustes/pac")),
        format!("Conectar mi PAC lleva a {pac:?}"),
    )?;
    // Seeded: the demo's sales (a soporte desk loads them) and a stamped invoice to open.
    app.click("[data-testid=load-demo]").await?;
    app.wait_contains(".notice[role=status]", "36 ventas registradas").await?;
    let factura = emit_and_open(app, "4520").await?;
    app.wait_badge("timbrada").await?;

    let mut pages: Vec<(String, String)> = [
        ("bandeja", "#/bandeja"),
        ("emitir", "#/emitir"),
        ("clientes", "#/clientes"),
        ("productos", "#/productos"),
        ("duplicados", "#/duplicados"),
        ("reportes", "#/reportes"),
        ("factura-global", "#/global"),
        ("mostrador", "#/mostrador"),
        ("pagos", "#/pagos"),
        ("tablero", "#/tablero"),
    ]
    .iter()
    .map(|(n, h)| (n.to_string(), h.to_string()))
    .collect();
    pages.insert(1, ("factura".into(), factura));
    pages.extend(SECTIONS.iter().map(|s| (format!("ajustes-{s}"), format!("#/ajustes/{s}"))));
    let english = serde_json::Value::from(english_phrases()?);

    // The checks see what they look for: a planted cell whose text runs out of it, faint
    // text, a raw code and an English phrase are each found, then removed.
    app.go("#/bandeja").await?;
    app.find("main .page").await?;
    let phrase = english.get(0).cloned().unwrap_or_default();
    app.client
        .execute(
            "const t = document.createElement('table'); t.id = 'planted'; Object.assign(t.style, { tableLayout: 'fixed', width: '3rem' }); \
             const td = t.insertRow().insertCell(); td.textContent = 'estado_crudo'; \
             Object.assign(td.style, { width: '3rem', maxWidth: '3rem', whiteSpace: 'nowrap', color: '#ddd' }); \
             const p = document.createElement('p'); p.textContent = arguments[0]; td.append(p); \
             document.querySelector('main .page').prepend(t);",
            vec![phrase],
        )
        .await
        .map_err(|e| e.to_string())?;
    for (what, js, args) in [
        ("texto fuera de su celda", OVERFLOW_JS, vec![]),
        ("contraste", CONTRAST_JS, vec![]),
        ("código crudo", RAW_CODES_JS, vec![]),
        ("inglés", ENGLISH_JS, vec![english.clone()]),
    ] {
        let found = findings(app, js, args, "prueba").await?;
        check(!found.is_empty(), format!("la revisión no ve {what} en una celda plantada"))?;
    }
    app.client
        .execute("document.getElementById('planted').remove();", vec![])
        .await
        .map_err(|e| e.to_string())?;

    // Months in Spanish whatever the OS locale (DateField, not the webview's date input).
    app.go("#/global").await?;
    let month = app
        .wait_text("[data-testid=global-form] select[name='desde.mes'] option:checked", "el mes", |t| {
            !t.trim().is_empty()
        })
        .await?;
    const MESES: [&str; 12] = [
        "Enero",
        "Febrero",
        "Marzo",
        "Abril",
        "Mayo",
        "Junio",
        "Julio",
        "Agosto",
        "Septiembre",
        "Octubre",
        "Noviembre",
        "Diciembre",
    ];
    check(MESES.contains(&month.trim()), format!("el mes se lee {month:?}"))?;
    check(
        app.all("input[type=date], input[type=month], input[type=datetime-local]")
            .await?
            .is_empty(),
        "ninguna fecha con el selector del sistema",
    )?;

    // Ajustes' sections hold still once shown (layout-hold.ts).
    let mut problems = Vec::new();
    for s in SECTIONS {
        app.go("#/bandeja").await?;
        app.go(&format!("#/ajustes/{s}")).await?;
        app.find(&format!("[data-testid=settings-section][data-section={s}][data-ready=true]"))
            .await?;
        let first = app.client.execute(CONTROLS_JS, vec![]).await.map_err(|e| e.to_string())?;
        tokio::time::sleep(std::time::Duration::from_millis(800)).await;
        let then = app.client.execute(CONTROLS_JS, vec![]).await.map_err(|e| e.to_string())?;
        if first != then {
            problems.push(format!("ajustes-{s}: los campos se movieron al cargar: {first} → {then}"));
        }
    }

    for (theme, choice) in THEMES {
        set_theme(app, choice).await?;
        for (w, h) in SIZES {
            app.client
                .set_window_size(w, h)
                .await
                .map_err(|e| format!("tamaño de ventana {w}×{h}: {e}"))?;
            for (name, hash) in &pages {
                app.go(hash).await?;
                app.find("main .page").await?;
                if name.starts_with("ajustes-") {
                    app.find("[data-testid=settings-section][data-ready=true]").await?;
                }
                tokio::time::sleep(std::time::Duration::from_millis(400)).await;
                let at = format!("{name} ({theme}, {w}×{h})");
                problems.extend(findings(app, CUT_OFF_JS, vec![PRIMARY_ACTIONS.into()], &at).await?);
                problems.extend(findings(app, RAW_CODES_JS, vec![], &at).await?);
                problems.extend(findings(app, WORD_WRAP_JS, vec![], &at).await?);
                problems.extend(findings(app, OVERFLOW_JS, vec![], &at).await?);
                problems.extend(findings(app, CONTRAST_JS, vec![], &at).await?);
                problems.extend(findings(app, ENGLISH_JS, vec![english.clone()], &at).await?);
                // The checks scrolled to each action: the screenshot shows the page's top.
                app.client
                    .execute("for (const e of document.querySelectorAll('.side, main')) e.scrollTop = 0;", vec![])
                    .await
                    .map_err(|e| e.to_string())?;
                app.screenshot(&format!("revision-{theme}-{w}x{h}-{name}")).await?;
            }
        }
    }
    set_theme(app, "system").await?;
    println!(
        "revisión de pantallas: {} páginas × {} tamaños × {} temas en {:.0} s",
        pages.len(),
        SIZES.len(),
        THEMES.len(),
        started.elapsed().as_secs_f64()
    );
    check(
        problems.is_empty(),
        format!("{} problemas:\n    {}", problems.len(), problems.join("\n    ")),
    )
}
