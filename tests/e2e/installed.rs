//! The flow run against an *installed* Timbra (`make test` builds the .deb, unpacks it into a
//! scratch root and points `TIMBRA_E2E_APP` at `usr/bin/timbra-app` in it): with no
//! `TIMBRA_DATABASE_URL`, the installed app opens in Modo sandbox on its default database, in
//! the folders the installed layout names (the app-data and config folders named by the
//! identifier, `mx.timbra.app`), and a sale goes from the Emitir form to Timbrada.

use crate::harness::{App, Env, Res};

/// No `TIMBRA_DATABASE_URL`: the app chooses its own database folder.
pub fn default_folders(_: &std::path::Path) -> Res<Env> {
    Ok(vec![("TIMBRA_DATABASE_URL", "")])
}

pub async fn instalada_emitir(app: &App) -> Res {
    app.wait_contains("[data-testid=sandbox-banner]", "Modo sandbox").await?;
    app.type_into("[data-testid=seat-first-run-name]", "Caja 1").await?;
    app.click("[data-testid=seat-first-run-save]").await?;
    app.wait_contains("[data-testid=operator]", "Caja 1").await?;

    app.go("#/emitir").await?;
    app.type_into("input[name='receptor.rfc']", "URE180429TM6").await?;
    app.type_into("input[name='receptor.nombre']", "UNIVERSIDAD ROBOTICA ESPAÑOLA")
        .await?;
    app.type_into("input[name='receptor.domicilio_fiscal']", "86991").await?;
    app.choose("", "receptor.regimen_fiscal", "601", "601").await?;
    app.choose("", "receptor.uso_cfdi", "G01", "G01").await?;
    app.type_into("input[name='folio']", "1").await?;
    app.type_into("input[name='conceptos[0].descripcion']", "Café de olla").await?;
    app.type_into("input[name='conceptos[0].cantidad']", "2").await?;
    app.type_into("input[name='conceptos[0].valor_unitario']", "50.00").await?;
    app.wait_contains("[data-total=total]", "$116.00").await?;
    app.click("[data-testid=emitir-submit]").await?;
    app.wait_contains("[data-testid=emitir-recorded]", "registrada").await?;
    app.click("[data-testid=recorded-link]").await?;
    app.wait_badge("timbrada").await?;

    // Where the installed layout says: the database in the local app-data folder named by the
    // identifier, the seat in the config folder named by it.
    let data = app.dir().join("data").join(outbox_identifier());
    let database = data.join("timbra.db");
    if !database.is_file() {
        return Err(format!("la base de datos debía estar en {}", database.display()));
    }
    let seat = app.dir().join("config").join(outbox_identifier()).join("puesto.json");
    if !seat.is_file() {
        return Err(format!("el puesto debía estar en {}", seat.display()));
    }
    if app.dir().join("timbra.db").exists() {
        return Err("la base de datos no debía quedar fuera de la carpeta de datos de la app".into());
    }
    Ok(())
}

/// The identifier of tauri.conf.json (the name of the app's folders).
fn outbox_identifier() -> &'static str {
    outbox::location::APP_IDENTIFIER
}

const PAC_TOKEN: &str = "tok-E2E-Secreto-51c7a0d2e9";
const SMTP_PASSWORD: &str = "smtp-E2E-Clave-8f3b61c4";
/// SAT's published password of its test CSD.
const CSD_PASSWORD: &str = "12345678a";

/// No Secret Service at all (the session bus points nowhere): the OS credential store refuses.
pub fn no_secret_service(_: &std::path::Path) -> Res<Env> {
    Ok(vec![("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/timbra-e2e-bus")])
}

/// On a computer without an OS password store, Ajustes says so in Spanish; *Probar conexión*
/// answers for the sandbox's PAC; saving the CSD with its password, the PAC's token and the
/// SMTP password succeeds (the token and the SMTP password kept in Timbra's local encrypted
/// store), the PAC field says *guardada* only once something was saved, and no file Timbra wrote
/// (the data and config folders, the database and its WAL, the logs) holds any of the three
/// secrets, in plain text or Base64.
pub async fn sin_almacen_de_contrasenas(app: &App) -> Res {
    app.wait_contains("[data-testid=sandbox-banner]", "Modo sandbox").await?;
    app.type_into("[data-testid=seat-first-run-name]", "Caja 1").await?;
    // Ajustes' PAC form is soporte's (the first run's default seat is the cashier's).
    app.click("[data-testid=seat-first-run-role] input[value=soporte]").await?;
    app.click("[data-testid=seat-first-run-save]").await?;
    app.go("#/ajustes/pac").await?;
    app.wait_contains("[data-testid=credential-store-local]", "cifradas en este equipo")
        .await?;
    // Probar conexión (issue 25 item 6) on the sandbox's primary simulator: the account is
    // ready to stamp.
    app.click("[data-testid=pac-test-sandbox] [data-testid=pac-test-run]").await?;
    app.wait_contains(
        "[data-testid=pac-test-sandbox] [data-testid=pac-test-verdict]",
        "Lista para timbrar",
    )
    .await?;
    app.wait_contains("[data-testid=pac-test-sandbox] [data-step=credenciales]", "aceptó las credenciales")
        .await?;
    // The CSD and its password, through the native chooser (SAT's test CSD: the one valid
    // today; Timbra knows its public password and keeps no copy of it).
    app.go("#/ajustes/emisor").await?;
    let certs = crate::harness::repo_root()
        .join("tests/fixtures/cfdi/certs")
        .canonicalize()
        .map_err(|e| format!("certificados de prueba: {e}"))?;
    app.choose_next(&[&certs.join("EKU9003173C9.cer")])?;
    app.click("[data-testid=choose-cer]").await?;
    app.wait_contains("[data-testid=chosen-cer]", "EKU9003173C9.cer").await?;
    app.choose_next(&[&certs.join("EKU9003173C9.key")])?;
    app.click("[data-testid=choose-key]").await?;
    app.wait_contains("[data-testid=chosen-key]", "EKU9003173C9.key").await?;
    app.type_into("[data-testid=emisor-form] input[name=password]", CSD_PASSWORD)
        .await?;
    app.click("[data-testid=emisor-form] button[type=submit]").await?;
    app.wait_contains(".notice[role=status]", "Emisor y CSD guardados").await?;
    app.go("#/ajustes/pac").await?;
    // Nothing saved yet: the field does not say guardada.
    let placeholder = app
        .client
        .find(fantoccini::Locator::Css("input[name='primary.secret']"))
        .await
        .map_err(|e| e.to_string())?
        .attr("placeholder")
        .await
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    if placeholder.contains("guardada") {
        return Err(format!("sin nada guardado, el campo dice {placeholder:?}"));
    }
    app.type_into("input[name='primary.secret']", PAC_TOKEN).await?;
    app.click("[data-testid=pac-form] button[type=submit]").await?;
    app.wait_contains(".notice[role=status]", "PAC guardados").await?;
    app.go("#/").await?;
    app.go("#/ajustes/pac").await?;
    let mut kept = String::new();
    for _ in 0..50 {
        kept = app
            .client
            .find(fantoccini::Locator::Css("input[name='primary.secret']"))
            .await
            .map_err(|e| e.to_string())?
            .attr("placeholder")
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        if kept.contains("guardada") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    if !kept.contains("guardada") {
        return Err(format!("tras guardar, el campo debía decir guardada; dice {kept:?}"));
    }
    // The SMTP password (ChannelSettings), kept in the same local store.
    app.go("#/ajustes/correo").await?;
    app.find("[data-testid=smtp-form]").await?;
    app.type_into("input[name=smtp_host]", "127.0.0.1").await?;
    app.type_into("input[name=smtp_port]", "2525").await?;
    app.select("select[name=smtp_tls]", "none").await?;
    app.type_into("input[name=smtp_user]", "facturas@ejemplo.mx").await?;
    app.type_into("input[name=smtp_password]", SMTP_PASSWORD).await?;
    app.type_into("input[name=smtp_from]", "facturas@ejemplo.mx").await?;
    app.click("[data-testid=smtp-form] button[type=submit]").await?;
    app.wait_contains("[data-testid=channels-message]", "Ajustes de correo guardados")
        .await?;
    let store = app.dir().join("data").join(outbox_identifier()).join("credenciales.cifradas");
    if !store.is_file() {
        return Err(format!("el almacén local debía estar en {}", store.display()));
    }
    // The leak scenario on the fallback: every file Timbra wrote, byte for byte.
    use base64::Engine as _;
    let needles: Vec<String> = [PAC_TOKEN, SMTP_PASSWORD, CSD_PASSWORD]
        .into_iter()
        .flat_map(|s| [s.to_string(), base64::engine::general_purpose::STANDARD.encode(s)])
        .collect();
    let mut leaks = Vec::new();
    let mut stack = vec![app.dir().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| e.to_string())?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                for n in &needles {
                    if bytes.windows(n.len()).any(|w| w == n.as_bytes()) {
                        leaks.push(format!("{} ({n})", p.display()));
                    }
                }
            }
        }
    }
    if !leaks.is_empty() {
        return Err(format!("un secreto aparece en {leaks:?}"));
    }
    Ok(())
}
