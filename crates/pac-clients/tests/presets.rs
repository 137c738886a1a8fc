//! The named presets: every one parses, every URL is https with the path where it belongs, SW's
//! storage is on its api host and SAT's status service on SAT's host, and no source file of
//! `pac` or `pac-sim` names a real host outside `presets.toml`.

use cfdi::secret::Secret;
use pac::presets::{self, Environment};
use pac::PacKind;

const SAT_HOST: &str = "consultaqr.facturaelectronica.sat.gob.mx";

/// `https://host[/path]` → (host, path).
fn split(url: &str) -> (&str, &str) {
    let rest = url.strip_prefix("https://").unwrap_or_else(|| panic!("{url}: not https"));
    match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    }
}

fn assert_base_url(what: &str, url: &str) {
    let (host, path) = split(url);
    assert!(!host.is_empty() && host.contains('.') && !host.contains(':'), "{what}: {url}");
    assert!(
        host.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-'),
        "{what}: {url}"
    );
    assert_eq!(path, "", "{what}: a base URL carries no path (the adapters append theirs): {url}");
}

#[test]
fn every_preset_parses_and_its_urls_are_https_with_no_path_mistakes() {
    let all = presets::parse(presets::PRESETS_TOML).expect("presets.toml parses");
    assert_eq!(presets::all(), all.as_slice());
    let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["sw-pruebas", "sw-produccion", "finkok-demo", "finkok-produccion", "facturapi"]
    );
    for p in &all {
        assert_eq!(presets::get(&p.name), Some(p));
        assert!(!p.label_es.trim().is_empty(), "{}", p.name);
        assert_base_url(&p.name, &p.services_url);
        let (sat_host, sat_path) = split(&p.sat_status_url);
        assert_eq!(
            (sat_host, sat_path),
            (SAT_HOST, "/ConsultaCFDIService.svc"),
            "{}: SAT's own host",
            p.name
        );
        assert!(
            p.stamp_path.starts_with('/') && !p.stamp_path.contains("//") && !p.stamp_path.ends_with('/'),
            "{}",
            p.name
        );
        for path in [&p.cancel_path, &p.utilities_path].into_iter().flatten() {
            assert!(path.starts_with('/') && !path.contains("//"), "{}: {path}", p.name);
        }
        match p.flavor {
            PacKind::Sw => {
                let api = p.api_url.as_deref().unwrap_or_else(|| panic!("{}: SW needs its api host", p.name));
                assert_base_url(&p.name, api);
                let (api_host, _) = split(api);
                let (services_host, _) = split(&p.services_url);
                assert!(api_host.starts_with("api.") && services_host.starts_with("services."), "{}", p.name);
                assert_ne!(api_host, services_host, "{}: storage is not on the stamping host", p.name);
                assert_eq!(p.stamp_path, "/v4/cfdi33/stamp/v2");
            }
            _ => assert_eq!(p.api_url, None, "{}", p.name),
        }
        let test_host = split(&p.services_url).0.contains("test") || split(&p.services_url).0.starts_with("demo-");
        match p.environment {
            Environment::Pruebas => assert!(test_host, "{}", p.name),
            Environment::Produccion => assert!(!test_host, "{}", p.name),
            Environment::SegunLlave => assert_eq!(p.flavor, PacKind::Facturapi),
        }
    }
    assert!(presets::get("sw").is_none());
    assert!(presets::parse("[[preset]]\nname = \"x\"").is_err());
}

#[test]
fn sats_descarga_masiva_hosts_are_in_the_presets() {
    let sat = presets::sat_descarga().expect("presets.toml names SAT's Descarga Masiva hosts");
    assert_eq!(presets::parse_sat_descarga(presets::PRESETS_TOML).unwrap().as_ref(), Some(sat));
    for url in [&sat.solicitud_url, &sat.descarga_url] {
        assert_base_url("sat_descarga", url);
        assert!(split(url).0.ends_with(".sat.gob.mx"), "{url}");
    }
    assert_ne!(sat.solicitud_url, sat.descarga_url);
}

#[test]
fn presets_fill_the_client_specs() {
    use pac::connect::Credential;
    use pac_clients::spec_from_preset;
    let sw = spec_from_preset(presets::get("sw-produccion").unwrap(), Credential::Token(Secret::new("t")), None);
    assert_eq!(
        (sw.services_url.as_str(), sw.storage_url.as_str(), sw.sat_status_url.as_str()),
        (
            "https://services.sw.com.mx",
            "https://api.sw.com.mx",
            "https://consultaqr.facturaelectronica.sat.gob.mx/ConsultaCFDIService.svc"
        )
    );
    assert_eq!(sw.stamp_path.as_deref(), Some("/v4/cfdi33/stamp/v2"));
    let fk = spec_from_preset(
        presets::get("finkok-demo").unwrap(),
        Credential::UserPassword {
            user: "u".into(),
            password: Secret::new("p"),
        },
        Some("EKU9003173C9".into()),
    );
    assert_eq!(fk.services_url, "https://demo-facturacion.finkok.com");
    assert_eq!(fk.stamp_path.as_deref(), Some("/servicios/soap/stamp.wsdl"));
    let fa = spec_from_preset(
        presets::get("facturapi").unwrap(),
        Credential::Token(Secret::new("sk_test_x")),
        None,
    );
    assert_eq!(fa.services_url, "https://www.facturapi.io");
    assert!(
        !fa.sat_status_url.starts_with(&fa.services_url),
        "SAT's status service is not on the PAC's host"
    );
    // Every preset connects (builds a client; nothing is sent).
    use pac::connect::PacConnector;
    for p in presets::all() {
        let credential = match p.flavor {
            PacKind::Finkok => Credential::UserPassword {
                user: "u".into(),
                password: Secret::new("p"),
            },
            _ => Credential::Token(Secret::new("t")),
        };
        let spec = spec_from_preset(p, credential, Some("EKU9003173C9".into()));
        let client = pac_clients::HttpConnector
            .connect(&spec, std::sync::Arc::new(pac::RunningClock::at("2026-12-01T18:00:00Z")))
            .unwrap();
        assert_eq!(client.kind(), p.flavor, "{}", p.name);
    }
}

fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_source_file_names_a_real_host() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("../pac-sim/src"), &mut files);
    rust_files(&root.join("../pac/src"), &mut files);
    assert!(files.len() > 10);
    let mut hosts: Vec<String> = Vec::new();
    for p in presets::all() {
        hosts.push(split(&p.services_url).0.to_string());
        hosts.push(split(&p.sat_status_url).0.to_string());
        if let Some(a) = &p.api_url {
            hosts.push(split(a).0.to_string());
        }
    }
    // Finkok's SOAP namespace URIs are names, not hosts the client connects to.
    let namespaces = [
        "http://facturacion.finkok.com/stamp",
        "http://facturacion.finkok.com/cancel",
        "http://facturacion.finkok.com/utilities",
        "http://facturacion.finkok.com/registration",
        "http://facturacion.finkok.com/{stamp,cancel,",
    ];
    for f in files {
        let mut text = std::fs::read_to_string(&f).unwrap();
        for ns in namespaces {
            text = text.replace(ns, "");
        }
        for h in &hosts {
            assert!(!text.contains(h.as_str()), "{} names {h}: hosts live in presets.toml", f.display());
        }
        let https: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("https://") && !l.contains("https://x/"))
            .collect();
        assert!(https.is_empty(), "{}: {https:?}", f.display());
    }
}
