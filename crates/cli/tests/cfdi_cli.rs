//! `timbra cfdi …` as a user runs it: outputs, exit codes and one-line Spanish errors.

#[path = "common/clock.rs"]
mod clock;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fx(rel: &str) -> String {
    root().join("tests/fixtures").join(rel).to_string_lossy().into_owned()
}

fn timbra(args: &[&str]) -> Output {
    clock::command(env!("CARGO_BIN_EXE_timbra"))
        .args(args)
        .env("TEST_CSD_PASSWORD", "12345678a")
        .env("BAD_PASSWORD", "nope")
        .output()
        .unwrap()
}

fn csd_args(cer: &str, key: &str, var: &str) -> Vec<String> {
    vec![
        "--cer".into(),
        fx(&format!("cfdi/certs/{cer}")),
        "--key".into(),
        fx(&format!("cfdi/certs/{key}")),
        "--password-env".into(),
        var.into(),
    ]
}

fn build_sealed(sale: &str, dir: &Path) -> PathBuf {
    let mut args: Vec<String> = vec![
        "cfdi".into(),
        "build".into(),
        fx(&format!("sales/{sale}")),
        "--emisor".into(),
        fx("sales/emisor-eku.toml"),
    ];
    args.extend(csd_args("EKU9003173C9.cer", "EKU9003173C9.key", "TEST_CSD_PASSWORD"));
    let out = timbra(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let path = dir.join(sale.replace(".json", ".xml"));
    std::fs::write(&path, &out.stdout).unwrap();
    path
}

#[test]
fn built_and_sealed_documents_verify_with_timbra_openssl_and_xmllint() {
    let dir = tempfile::tempdir().unwrap();
    for sale in ["ingreso-pedido-4471.json", "egreso-nc-4471.json", "pago-4471.json"] {
        let xml = build_sealed(sale, dir.path());
        let xml_s = xml.to_string_lossy().into_owned();
        let out = timbra(&["cfdi", "verify", &xml_s]);
        assert_eq!(out.status.code(), Some(0), "{sale}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("Sello: válido"));

        let out = timbra(&["cfdi", "cadena", &xml_s]);
        assert!(out.status.success());
        let cadena = out.stdout;
        assert!(
            cadena.starts_with(b"||4.0|") && cadena.ends_with(b"||"),
            "no trailing newline, SAT's delimiters"
        );
        let xslt = root().join("crates/cfdi/sat/sitio_internet/cfd/4/cadenaoriginal_4_0/cadenaoriginal_4_0.xslt");
        let sat = Command::new("xsltproc")
            .arg(xslt)
            .arg(&xml)
            .output()
            .expect("xsltproc (make test installs it)");
        assert_eq!(String::from_utf8_lossy(&cadena), String::from_utf8_lossy(&sat.stdout), "{sale}");

        // openssl verifies the Sello over that cadena with the EKU public key.
        let doc = cfdi::xml::Document::parse(&std::fs::read(&xml).unwrap()).unwrap();
        use base64::Engine as _;
        let sig = base64::engine::general_purpose::STANDARD
            .decode(doc.root.attr("Sello").unwrap())
            .unwrap();
        std::fs::write(dir.path().join("sig"), sig).unwrap();
        std::fs::write(dir.path().join("cadena"), &cadena).unwrap();
        let ok = Command::new("openssl")
            .args([
                "dgst",
                "-sha256",
                "-verify",
                &fx("cfdi/certs/EKU9003173C9.pubkey.pem"),
                "-signature",
            ])
            .arg(dir.path().join("sig"))
            .arg(dir.path().join("cadena"))
            .output()
            .expect("openssl");
        assert!(ok.status.success(), "{sale}: {}", String::from_utf8_lossy(&ok.stdout));

        let lint = Command::new("xmllint")
            .args(["--noout", "--schema"])
            .arg(root().join("crates/cfdi/sat/cfdi40-with-complements.xsd"))
            .arg(&xml)
            .output()
            .expect("xmllint");
        assert!(lint.status.success(), "{sale}: {}", String::from_utf8_lossy(&lint.stderr));
    }
}

#[test]
fn seal_then_verify_and_a_tampered_document_fails() {
    let dir = tempfile::tempdir().unwrap();
    let unsealed = timbra(&[
        "cfdi",
        "build",
        &fx("sales/ingreso-pedido-4471.json"),
        "--emisor",
        &fx("sales/emisor-eku.toml"),
    ]);
    assert!(unsealed.status.success());
    let unsealed_path = dir.path().join("unsealed.xml");
    std::fs::write(&unsealed_path, &unsealed.stdout).unwrap();
    let text = String::from_utf8_lossy(&unsealed.stdout);
    assert!(!text.contains("Sello=") && text.contains("Total=\"116.00\""));

    let mut args = vec!["cfdi".to_string(), "seal".to_string()];
    args.extend(csd_args("EKU9003173C9.cer", "EKU9003173C9.key", "TEST_CSD_PASSWORD"));
    args.push(unsealed_path.to_string_lossy().into_owned());
    let sealed = timbra(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(sealed.status.success(), "{}", String::from_utf8_lossy(&sealed.stderr));
    let sealed_path = dir.path().join("sealed.xml");
    std::fs::write(&sealed_path, &sealed.stdout).unwrap();
    assert_eq!(timbra(&["cfdi", "verify", &sealed_path.to_string_lossy()]).status.code(), Some(0));

    let tampered = String::from_utf8_lossy(&sealed.stdout).replace("Total=\"116.00\"", "Total=\"11.60\"");
    let tampered_path = dir.path().join("tampered.xml");
    std::fs::write(&tampered_path, tampered).unwrap();
    let out = timbra(&["cfdi", "verify", &tampered_path.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: ") && stderr.contains("Sello"), "{stderr}");
}

#[test]
fn stamped_sample_verifies_with_the_pac_certificate_and_prints_its_tfd_cadena() {
    let sample = fx("cfdi/samples/timbrado-ingreso-eku-pac-pruebas.xml");
    let out = timbra(&["cfdi", "verify", &sample, "--pac-cert", &fx("cfdi/certs/30001000000500003456.cer")]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("SelloSAT: válido") && stdout.contains("SelloCFD: válido"),
        "{stdout}"
    );
    // Without the PAC certificate the SelloSAT is reported as not checked, not as valid.
    let out = timbra(&["cfdi", "verify", &sample]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("SelloSAT: no verificado"));
    // With the wrong certificate it fails.
    let out = timbra(&["cfdi", "verify", &sample, "--pac-cert", &fx("cfdi/certs/EKU9003173C9.cer")]);
    assert_eq!(out.status.code(), Some(1));

    let out = timbra(&["cfdi", "cadena", "--tfd", &sample]);
    assert_eq!(
        out.stdout,
        std::fs::read(fx("cfdi/samples/timbrado-ingreso-eku-pac-pruebas.tfd.cadena.txt")).unwrap()
    );
}

/// Runs timbra with `args`, expects exit code 2 and one stderr line containing every needle.
fn check_invalid(args: &[&str], needles: &[&str]) {
    let out = timbra(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?} printed output on failure");
    for n in needles {
        assert!(stderr.contains(n), "{args:?}: {n:?} not in {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn bad_input_is_one_clear_error_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_string_lossy().into_owned()
    };
    let emisor = fx("sales/emisor-eku.toml");
    let sale = fx("sales/ingreso-pedido-4471.json");
    let good = std::fs::read_to_string(&sale).unwrap();

    check_invalid(&["cfdi", "cadena", "/no/such/file.xml"], &["no existe"]);
    check_invalid(&["cfdi", "cadena", &write("bad.xml", b"<cfdi:Comprobante")], &["XML mal formado"]);
    check_invalid(&["cfdi", "cadena", &write("other.xml", b"<factura/>")], &["no es cfdi:Comprobante"]);
    check_invalid(
        &["cfdi", "cadena", "--tfd", &fx("cfdi/samples/pago20-eku.xml")],
        &["TimbreFiscalDigital"],
    );
    // Hostile documents: one clear error naming the limit, never a crash.
    let deep = format!("{}{}", "<a>".repeat(200_000), "</a>".repeat(200_000));
    let deep = write("deep.xml", deep.as_bytes());
    check_invalid(&["cfdi", "cadena", &deep], &["256 niveles"]);
    check_invalid(&["cfdi", "cadena", "--tfd", &deep], &["256 niveles"]);
    check_invalid(&["cfdi", "verify", &deep], &["256 niveles"]);
    let xxe = b"<!DOCTYPE c [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><cfdi:Comprobante xmlns:cfdi=\"http://www.sat.gob.mx/cfd/4\" Serie=\"&x;\"/>";
    check_invalid(&["cfdi", "cadena", &write("xxe.xml", xxe)], &["DOCTYPE"]);
    let serie = "x".repeat(10 << 20);
    let big = format!("<cfdi:Comprobante xmlns:cfdi=\"http://www.sat.gob.mx/cfd/4\" Serie=\"{serie}\"/>");
    check_invalid(&["cfdi", "cadena", &write("big.xml", big.as_bytes())], &["Serie", "1048576"]);
    check_invalid(
        &[
            "cfdi",
            "build",
            &write("s1.json", good.replace("\"50.00\"", "\"50.0000001\"").as_bytes()),
            "--emisor",
            &emisor,
        ],
        &["valor_unitario", "decimales"],
    );
    check_invalid(
        &[
            "cfdi",
            "build",
            &write("s2.json", good.replace("\"G01\"", "\"G99\"").as_bytes()),
            "--emisor",
            &emisor,
        ],
        &["receptor.uso_cfdi", "G99"],
    );
    check_invalid(
        &[
            "cfdi",
            "build",
            &write("s3.json", good.replace("\"serie\":\"F\",", "\"serie\":\"F\",\"x\":1,").as_bytes()),
            "--emisor",
            &emisor,
        ],
        &["campo desconocido"],
    );
    check_invalid(
        &["cfdi", "build", &write("s4.json", b"{\"sale_id\": \"\xff\"}"), "--emisor", &emisor],
        &["UTF-8"],
    );
    check_invalid(
        &["cfdi", "build", &sale, "--emisor", &write("e.toml", b"rfc = \"EKU9003173C9\"\n")],
        &["nombre"],
    );
    check_invalid(
        &[
            "cfdi",
            "build",
            &sale,
            "--emisor",
            &write(
                "e2.toml",
                b"rfc = \"EKU9003173C9\"\nnombre = \"X\"\nregimen_fiscal = \"605\"\nlugar_expedicion = \"42501\"\n",
            ),
        ],
        &["emisor.regimen_fiscal"],
    );

    let bad_csd = |cer: &str, key: &str, var: &str, needles: &[&str]| {
        let mut args: Vec<String> = vec!["cfdi".into(), "build".into(), sale.clone(), "--emisor".into(), emisor.clone()];
        args.extend(csd_args(cer, key, var));
        check_invalid(&args.iter().map(String::as_str).collect::<Vec<_>>(), needles);
    };
    bad_csd(
        "EKU9003173C9.cer",
        "EKU9003173C9.key",
        "BAD_PASSWORD",
        &["contraseña", "incorrecta"],
    );
    bad_csd(
        "EKU9003173C9.cer",
        "EKU9003173C9.key",
        "UNSET_VARIABLE_FOR_TEST",
        &["UNSET_VARIABLE_FOR_TEST", "no está definida"],
    );
    bad_csd("EKU9003173C9.cer", "XIQB891116QE4.key", "TEST_CSD_PASSWORD", &["no corresponde"]);
    bad_csd(
        "FIEL-EKU9003173C9-TEST.cer",
        "FIEL-EKU9003173C9-TEST.key",
        "TEST_CSD_PASSWORD",
        &["FIEL"],
    );
    bad_csd(
        "XIQB891116QE4.cer",
        "XIQB891116QE4.key",
        "TEST_CSD_PASSWORD",
        &["pertenece al RFC XIQB891116QE4"],
    );
    // An expired CSD of the right RFC: the emisor profile of XIQB.
    let xiqb = write(
        "xiqb.toml",
        b"rfc = \"XIQB891116QE4\"\nnombre = \"BERENICE XIMO QUEZADA\"\nregimen_fiscal = \"612\"\nlugar_expedicion = \"42501\"\n",
    );
    let mut args: Vec<String> = vec!["cfdi".into(), "build".into(), sale.clone(), "--emisor".into(), xiqb];
    args.extend(csd_args("XIQB891116QE4.cer", "XIQB891116QE4.key", "TEST_CSD_PASSWORD"));
    check_invalid(&args.iter().map(String::as_str).collect::<Vec<_>>(), &["no está vigente"]);
    // --cer without --key is a usage error.
    check_invalid(
        &[
            "cfdi",
            "build",
            &sale,
            "--emisor",
            &emisor,
            "--cer",
            &fx("cfdi/certs/EKU9003173C9.cer"),
        ],
        &["--key"],
    );
}

#[test]
fn help_documents_exit_codes() {
    let out = timbra(&["cfdi", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("Códigos de salida") && help.contains("2  entrada inválida"), "{help}");
}

#[test]
fn validate_applies_sats_matrix_and_names_the_rule_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let emisor = fx("sales/emisor-eku.toml");
    let sale = fx("sales/ingreso-pedido-4471.json");
    let out = timbra(&["cfdi", "validate", &sale, "--emisor", &emisor]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("válida: total "));
    // PPD with a forma de pago other than 99: CFDI40105, with what to do.
    let good = std::fs::read_to_string(&sale).unwrap();
    let ppd = good.replace("\"metodo_pago\":\"PUE\"", "\"metodo_pago\":\"PPD\"");
    assert_ne!(ppd, good, "the fixture is PUE");
    let path = dir.path().join("ppd.json");
    std::fs::write(&path, ppd).unwrap();
    check_invalid(
        &["cfdi", "validate", path.to_str().unwrap(), "--emisor", &emisor],
        &["forma_pago: [CFDI40105] Con método de pago PPD la forma de pago es 99 Por definir"],
    );
}

#[test]
fn reglas_lists_sats_matrix_with_how_each_rule_is_checked() {
    let out = timbra(&["cfdi", "reglas"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let ppd = text
        .lines()
        .find(|l| l.starts_with("CFDI40105\tppd-forma-99\t"))
        .expect("CFDI40105 listed");
    assert!(
        ppd.contains("revisada por Timbra") && ppd.contains("Con método de pago PPD"),
        "{ppd}"
    );
    let lista = text
        .lines()
        .find(|l| l.contains("\treceptor-lista\t"))
        .expect("the receptor's registration listed");
    assert!(lista.contains("no revisada aquí: SAT coteja"), "{lista}");
    assert_eq!(text.lines().count(), cfdi::matrix::REGLAS.len());
}
