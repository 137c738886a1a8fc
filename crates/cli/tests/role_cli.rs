//! The contador's credential through the CLI: until it exists, `--role contador` is refused
//! (declaring the role proves nothing); the first one is set from `TIMBRA_CONTADOR_PIN_NUEVO`
//! (here the 0600 secrets file) with the emisor's CSD password as proof (the variable the
//! emisor names), a change with the current one; then every contador action needs
//! `TIMBRA_CONTADOR_PIN` — never an argument — and a wrong one stops the command; soporte is
//! unaffected; the database holds only the Argon2id hash.

#[path = "common/clock.rs"]
mod clock;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Output;

fn fx(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn run(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = clock::command(env!("CARGO_BIN_EXE_timbra"));
    c.arg("--db")
        .arg(dir.join("t.db"))
        .args(args)
        .env("TEST_CSD_PASSWORD", "12345678a")
        .env_remove("TIMBRA_DATABASE_URL")
        .env_remove("TIMBRA_CONTADOR_PIN")
        .env_remove("TIMBRA_SECRETS_FILE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn contador_actions_need_the_credential_once_it_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let init = run(
        d,
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
        &[],
    );
    assert!(init.status.success(), "{}", stderr(&init));
    let xml = fx("cfdi/samples/pago20-eku.xml");
    let import = ["cfdi", "import", xml.as_str(), "--role", "contador"];

    // Declared role, no credential: refused, saying how to set one.
    let out = run(d, &import, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("hasta que el contador tenga PIN") && stderr(&out).contains("timbra role set-credential contador"),
        "{}",
        stderr(&out)
    );

    let secrets = d.join("secretos.env");
    std::fs::write(&secrets, "TIMBRA_CONTADOR_PIN_NUEVO=482913-caja\n").unwrap();
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
    let file = secrets.to_str().unwrap();
    let set = ["role", "set-credential", "contador"];
    // No proof at all, then a wrong CSD password: refused, nothing stored.
    let out = run(d, &set, &[("TIMBRA_SECRETS_FILE", file), ("TEST_CSD_PASSWORD", "")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("falta la prueba de autoridad") && stderr(&out).contains("TEST_CSD_PASSWORD"),
        "{}",
        stderr(&out)
    );
    let out = run(d, &set, &[("TIMBRA_SECRETS_FILE", file), ("TEST_CSD_PASSWORD", "adivinada")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("la contraseña de la llave privada del CSD no es correcta"),
        "{}",
        stderr(&out)
    );
    let status = run(d, &["role", "status"], &[]);
    assert!(String::from_utf8_lossy(&status.stdout).contains("contador: sin credencial"));
    // The CSD password (TEST_CSD_PASSWORD, the variable the emisor names) is the proof.
    let out = run(d, &set, &[("TIMBRA_SECRETS_FILE", file)]);
    assert!(out.status.success(), "{}", stderr(&out));

    let out = run(d, &import, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("sin desbloquearse") && stderr(&out).contains("TIMBRA_CONTADOR_PIN"),
        "{}",
        stderr(&out)
    );
    let out = run(d, &import, &[("TIMBRA_CONTADOR_PIN", "000000-caja")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no es la credencial del rol contador"), "{}", stderr(&out));
    let out = run(d, &import, &[("TIMBRA_CONTADOR_PIN", "482913-caja")]);
    assert!(
        !stderr(&out).contains("desbloquearse") && !stderr(&out).contains("credencial"),
        "{}",
        stderr(&out)
    );
    // Changing it takes the current one (a wrong current one changes nothing).
    let out = run(
        d,
        &set,
        &[
            ("TIMBRA_CONTADOR_PIN", "482913-caja"),
            ("TIMBRA_CONTADOR_PIN_NUEVO", "775511-caja"),
            ("TEST_CSD_PASSWORD", ""),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(d, &import, &[("TIMBRA_CONTADOR_PIN", "482913-caja")]);
    assert!(stderr(&out).contains("no es la credencial del rol contador"), "{}", stderr(&out));
    let out = run(d, &import, &[("TIMBRA_CONTADOR_PIN", "775511-caja")]);
    assert!(!stderr(&out).contains("credencial"), "{}", stderr(&out));
    // The import is the contador's: soporte is refused, whatever it declares.
    let out = run(d, &["cfdi", "import", xml.as_str(), "--role", "soporte"], &[]);
    assert!(stderr(&out).contains("soporte no puede importar"), "{}", stderr(&out));

    let db = std::fs::read(d.join("t.db")).unwrap();
    assert!(
        !db.windows(11).any(|w| w == b"482913-caja" || w == b"775511-caja"),
        "the credential is not in the database"
    );
    assert!(db.windows(10).any(|w| w == b"$argon2id$"), "its hash is");
}

fn init(d: &std::path::Path) {
    let init = run(
        d,
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
        &[],
    );
    assert!(init.status.success(), "{}", stderr(&init));
}

/// `timbra restore` and the reconciliation import (`timbra cfdi import`) are contador actions
/// with the PIN: soporte is refused, and so is the contador without `TIMBRA_CONTADOR_PIN` (or
/// with a wrong one); with it, both run.
#[test]
fn restore_and_the_reconciliation_import_need_the_contadors_pin() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    init(d);
    let secrets = d.join("secretos.env");
    std::fs::write(&secrets, "TIMBRA_CONTADOR_PIN_NUEVO=482913-caja\n").unwrap();
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = run(
        d,
        &["role", "set-credential", "contador"],
        &[("TIMBRA_SECRETS_FILE", secrets.to_str().unwrap())],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let backup = d.join("respaldo.db");
    let out = run(d, &["backup", backup.to_str().unwrap()], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let moved_aside = || {
        std::fs::read_dir(d)
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().contains("antes-de-restaurar"))
    };
    let pin = ("TIMBRA_CONTADOR_PIN", "482913-caja");

    // Restore: without the PIN, as soporte, or with a wrong PIN, nothing moves.
    let restore = ["restore", backup.to_str().unwrap()];
    let out = run(d, &restore, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("sin desbloquearse"), "{}", stderr(&out));
    let out = run(d, &["restore", backup.to_str().unwrap(), "--role", "soporte"], &[pin]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("soporte no puede restaurar"), "{}", stderr(&out));
    let out = run(d, &restore, &[("TIMBRA_CONTADOR_PIN", "000000-caja")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!moved_aside(), "nothing was restored");
    let out = run(d, &restore, &[pin]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(moved_aside(), "restored, the previous database kept aside");

    // The reconciliation import: soporte is refused; the contador needs the PIN.
    let xml = fx("cfdi/samples/pago20-eku.xml");
    let out = run(d, &["cfdi", "import", xml.as_str(), "--role", "soporte"], &[pin]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("soporte no puede importar"), "{}", stderr(&out));
    let out = run(d, &["cfdi", "import", xml.as_str()], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("sin desbloquearse"), "{}", stderr(&out));
    let out = run(d, &["cfdi", "import", xml.as_str()], &[pin]);
    assert!(
        !stderr(&out).contains("desbloquearse") && !stderr(&out).contains("no puede"),
        "{}",
        stderr(&out)
    );
}

/// `timbra pac add` acts as whoever runs it (soporte by default), never as a contador without
/// the PIN.
#[test]
fn pac_add_as_contador_needs_the_pin() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    init(d);
    let add = ["pac", "add", "sw", "--preset", "sw-pruebas", "--token-env", "SW_TOKEN"];
    let as_contador = [&add[..], &["--actor-role", "contador"]].concat();
    let out = run(d, &as_contador, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("hasta que el contador tenga PIN"), "{}", stderr(&out));
    let out = run(
        d,
        &[
            "pac",
            "add",
            "sw",
            "--preset",
            "sw-pruebas",
            "--token-env",
            "SW_TOKEN",
            "--actor-role",
            "personal",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("personal no puede"), "{}", stderr(&out));
    let out = run(d, &add, &[]);
    assert!(out.status.success(), "soporte configures PACs: {}", stderr(&out));
}
