//! `timbra customer …` and `timbra product …` end to end: add (a bad add names the field, exits 2
//! and writes nothing), list as JSON, import with bad lines reported as `línea N: campo: motivo`
//! (good lines kept, exit 2), export → import into a fresh database gives the same list.

#[path = "common/clock.rs"]
mod clock;

use std::path::{Path, PathBuf};
use std::process::Output;

fn fx(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn run(db: &Path, args: &[&str]) -> Output {
    clock::command(env!("CARGO_BIN_EXE_timbra"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env("TEST_CSD_PASSWORD", "12345678a")
        .env_remove("TIMBRA_DATABASE_URL")
        .output()
        .unwrap()
}

fn init(db: &Path) {
    let o = run(
        db,
        &[
            "init",
            "--emisor",
            &fx("sales/emisor-eku.toml"),
            "--cer",
            &fx("cfdi/certs/EKU9003173C9.cer"),
            "--key",
            &fx("cfdi/certs/EKU9003173C9.key"),
            "--password-env",
            "TEST_CSD_PASSWORD",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stdout)))
}

#[test]
fn customers_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    init(&db);

    let add = run(
        &db,
        &[
            "customer",
            "add",
            "--rfc",
            "URE180429TM6",
            "--nombre",
            "UNIVERSIDAD ROBOTICA ESPAÑOLA",
            "--cp",
            "86991",
            "--regimen",
            "601",
            "--uso",
            "G03",
            "--forma-pago",
            "03",
            "--metodo-pago",
            "PUE",
            "--email",
            "compras@ure.mx",
        ],
    );
    assert!(add.status.success(), "{}", text(&add.stderr));

    // A bad add: the field and the reason, exit 2, nothing written.
    let bad = run(
        &db,
        &[
            "customer",
            "add",
            "--rfc",
            "CACX7605101P8",
            "--nombre",
            "X",
            "--cp",
            "00001",
            "--regimen",
            "601",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    let err = text(&bad.stderr);
    assert!(err.contains("cp: el código postal 00001 no existe"), "{err}");
    assert!(err.contains("regimen: el régimen 601 no aplica a personas físicas"), "{err}");
    let list = run(&db, &["customer", "list", "--json"]);
    let v = json(&list);
    assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v[0]["rfc"], "URE180429TM6");
    assert_eq!(v[0]["emails"][0], "compras@ure.mx");

    let csv = dir.path().join("clientes.csv");
    std::fs::write(
        &csv,
        "rfc,nombre,cp,regimen,uso,forma_pago,metodo_pago,email\n\
         CACX7605101P8,XOCHILT CASAS CHAVEZ,36257,605,D01,,,\n\
         EKU9003173C9,ESCUELA KEMPER URGATE,4250,601,G03,,,\n\
         URE180429TM6,UNIVERSIDAD ROBOTICA ESPAÑOLA,86991,601,G01,,,\n",
    )
    .unwrap();
    let imp = run(&db, &["customer", "import", csv.to_str().unwrap()]);
    assert_eq!(imp.status.code(), Some(2), "a bad line makes the exit 2");
    assert!(
        text(&imp.stdout).contains("1 agregados, 1 actualizados, 1 errores"),
        "{}",
        text(&imp.stdout)
    );
    assert!(
        text(&imp.stderr).contains("línea 3: cp: \"4250\" no es un código postal"),
        "{}",
        text(&imp.stderr)
    );

    let exported = run(&db, &["customer", "export"]);
    assert!(exported.status.success());
    let out = dir.path().join("export.csv");
    std::fs::write(&out, &exported.stdout).unwrap();
    let db2 = dir.path().join("t2.db");
    init(&db2);
    let again = run(&db2, &["customer", "import", out.to_str().unwrap(), "--json"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(json(&again)["added"], 2);
    let strip = |v: serde_json::Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|c| (c["rfc"].clone(), c["nombre"].clone(), c["uso"].clone(), c["emails"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        strip(json(&run(&db, &["customer", "list", "--json"]))),
        strip(json(&run(&db2, &["customer", "list", "--json"])))
    );
}

#[test]
fn products_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    init(&db);
    let add = run(
        &db,
        &[
            "product",
            "add",
            "--sku",
            "CAF-01",
            "--descripcion",
            "Café de olla",
            "--clave-prod-serv",
            "50201706",
            "--clave-unidad",
            "H87",
            "--precio",
            "50.00",
            "--iva",
            "16",
        ],
    );
    assert!(add.status.success(), "{}", text(&add.stderr));
    let bad = run(
        &db,
        &[
            "product",
            "add",
            "--sku",
            "X",
            "--descripcion",
            "X",
            "--clave-prod-serv",
            "99999999",
            "--clave-unidad",
            "H87",
            "--precio",
            "1",
            "--iva",
            "16",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("clave_prod_serv: la clave 99999999 no existe"),
        "{}",
        text(&bad.stderr)
    );
    let v = json(&run(&db, &["product", "list", "--json"]));
    assert_eq!(v.as_array().map(Vec::len), Some(1));
    assert_eq!((v[0]["sku"].as_str(), v[0]["iva"].as_str()), (Some("CAF-01"), Some("16")));

    let csv = dir.path().join("productos.csv");
    std::fs::write(
        &csv,
        "sku,descripcion,clave_prod_serv,clave_unidad,precio,iva\nTOR-01,Tortillas de maíz,50221300,KGM,22.50,0\nMAL,Malo,50221300,KGM,,16\n",
    )
    .unwrap();
    let imp = run(&db, &["product", "import", csv.to_str().unwrap()]);
    assert_eq!(imp.status.code(), Some(2));
    assert!(
        text(&imp.stderr).contains("línea 3: precio: falta el precio unitario"),
        "{}",
        text(&imp.stderr)
    );
    let exported = text(&run(&db, &["product", "export"]).stdout);
    assert!(exported.starts_with("sku,descripcion,clave_prod_serv,clave_unidad,unidad,precio,objeto_imp,iva,ieps,ret_isr,ret_iva\n"));
    assert!(
        exported.contains("TOR-01,Tortillas de maíz,50221300,KGM,,22.5,02,0,,,"),
        "{exported}"
    );
}
