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
    app.select("select[name='receptor.regimen_fiscal']", "601").await?;
    app.select("select[name='receptor.uso_cfdi']", "G01").await?;
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
