//! The shared use cases judged from outside: the one sandbox rule on real stamped CFDIs, the
//! export sink (folder and ZIP, all or nothing, one entry order) and the day ranges.

use std::path::Path;
use std::sync::Arc;

use chrono::{Duration, TimeZone, Utc};
use services::export::{entry_name, write_all, DayRange, Destination, Progress, Sink};
use services::ServiceError;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(format!("{FIX}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// A sale fixture sealed with SAT's test CSD and stamped by the simulator's engine.
fn stamped(file: &str) -> (String, Vec<u8>) {
    use cfdi::sale::{EmisorProfile, Sale};
    let sale = Sale::from_json(&read(&format!("sales/{file}"))).expect("sale");
    let emisor: EmisorProfile = toml::from_str(&String::from_utf8(read("sales/emisor-eku.toml")).unwrap()).unwrap();
    let csd = cfdi::csd::Csd::load(
        &read("cfdi/certs/EKU9003173C9.cer"),
        &read("cfdi/certs/EKU9003173C9.key"),
        &cfdi::secret::Secret::new("12345678a"),
    )
    .expect("SAT's test CSD");
    let now = || Utc.with_ymd_and_hms(2026, 11, 30, 18, 0, 0).single().unwrap();
    let fecha = cfdi::tz::local_at(now() - Duration::hours(1), &emisor.lugar_expedicion);
    let built = cfdi::build(&sale, &emisor, fecha, Some(&csd)).expect("build");
    let engine = pac_sim::Engine::new(
        pac_sim::Flavor::Sw,
        pac_sim::Faults::default(),
        pac_sim::SimClock::with_base(Arc::new(now)),
        None,
    )
    .unwrap();
    match engine.stamp(built.to_xml().as_bytes(), None, None, false) {
        pac_sim::engine::StampDecision::Stamped(r) => {
            let uuid = r.xml.split("UUID=\"").nth(1).and_then(|t| t.split('"').next()).unwrap().to_string();
            (uuid, r.xml.into_bytes())
        }
        other => panic!("expected Stamped, got {other:?}"),
    }
}

/// The text of a PDF (poppler's `pdftotext`, the judge the pdf crate's tests use).
fn pdf_text(pdf: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.pdf");
    std::fs::write(&p, pdf).unwrap();
    let out = std::process::Command::new("pdftotext")
        .arg(&p)
        .arg("-")
        .output()
        .expect("pdftotext is installed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_sandbox_mark_follows_the_emisor_rfc_in_the_xml() {
    let (_, xml) = stamped("ingreso-pedido-4471.json");
    let text = String::from_utf8(xml).unwrap();
    let emisor = |rfc: &str| text.replacen("Rfc=\"EKU9003173C9\"", &format!("Rfc=\"{rfc}\""), 1).into_bytes();
    // (emisor RFC written in the XML, marked)
    let cases = [
        ("EKU9003173C9", true),
        ("eku9003173c9", true),
        ("URE180429TM6", false),
        ("AAA010101AAA", false),
    ];
    for (rfc, marked) in cases {
        let xml = emisor(rfc);
        assert_eq!(services::documents::is_sandbox(&xml), marked, "{rfc}");
        let pdf = services::documents::render_pdf(&xml).unwrap_or_else(|e| panic!("{rfc}: {e}"));
        assert_eq!(pdf_text(&pdf).contains("SIN VALIDEZ FISCAL"), marked, "{rfc}");
    }
    assert!(!services::documents::is_sandbox(b"<no-es-cfdi/>"));
    assert!(!services::documents::is_sandbox(b""));
}

fn names_in_zip(path: &Path) -> Vec<String> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    (0..zip.len())
        .map(|i| zip.by_index(i).unwrap().name().unwrap().to_string())
        .collect()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn every_cfdi_is_written_xml_first_then_pdf_in_folders_and_zips() {
    let a = stamped("ingreso-pedido-4471.json");
    let b = stamped("pago-4471.json");
    let dir = tempfile::tempdir().unwrap();
    let docs = || {
        vec![
            ("A".to_string(), a.0.to_lowercase(), a.1.clone()),
            ("B".to_string(), b.0.clone(), b.1.clone()),
        ]
    };
    let (na, nb) = (a.0.to_uppercase(), b.0.to_uppercase());

    let zip_path = dir.path().join("out").join("mes.zip");
    let mut seen = Vec::new();
    let done = write_all(
        &Destination::Zip {
            path: zip_path.clone(),
            replace: false,
        },
        docs(),
        2,
        &mut |p: &Progress| seen.push(p.clone()),
    )
    .unwrap();
    assert_eq!((done.path.as_path(), done.invoices, done.files), (zip_path.as_path(), 2, 4));
    assert_eq!(
        names_in_zip(&zip_path),
        [format!("{na}.xml"), format!("{na}.pdf"), format!("{nb}.xml"), format!("{nb}.pdf")]
    );
    assert_eq!(
        seen.iter()
            .map(|p| (p.done, p.total, p.name.clone(), p.sale_id.clone()))
            .collect::<Vec<_>>(),
        [(1, 2, na.clone(), "A".into()), (2, 2, nb.clone(), "B".into())]
    );
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&zip_path).unwrap()).unwrap();
    let mut xml = Vec::new();
    std::io::Read::read_to_end(&mut zip.by_name(&format!("{na}.xml")).unwrap(), &mut xml).unwrap();
    assert_eq!(xml, a.1, "the XML as stored, byte for byte");

    let folder = dir.path().join("carpeta");
    write_all(&Destination::Dir(folder.clone()), docs(), 2, &mut |_| {}).unwrap();
    let mut expected = vec![format!("{na}.xml"), format!("{na}.pdf"), format!("{nb}.xml"), format!("{nb}.pdf")];
    expected.sort();
    assert_eq!(files_in(&folder), expected);
    assert_eq!(files_in(dir.path()), ["carpeta", "out"], "no temporary left beside them");
}

#[test]
fn destinations_are_refused_or_replaced_as_their_rule_says() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("llena");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("otro.txt"), b"x").unwrap();
    let empty = dir.path().join("vacia");
    std::fs::create_dir(&empty).unwrap();
    let zip = dir.path().join("hay.zip");
    std::fs::write(&zip, b"viejo").unwrap();
    // (destination, accepted)
    let cases = [
        (Destination::Dir(full.clone()), false),
        (Destination::Dir(empty.clone()), true),
        (Destination::Dir(dir.path().join("nueva")), true),
        (
            Destination::Zip {
                path: zip.clone(),
                replace: false,
            },
            false,
        ),
        (
            Destination::Zip {
                path: zip.clone(),
                replace: true,
            },
            true,
        ),
        (
            Destination::Zip {
                path: dir.path().join("nuevo.zip"),
                replace: false,
            },
            true,
        ),
    ];
    for (dest, accepted) in cases {
        let r = write_all(&dest, Vec::new(), 0, &mut |_| {});
        assert_eq!(r.is_ok(), accepted, "{dest:?}: {r:?}");
        if !accepted {
            assert!(matches!(r, Err(ServiceError::File { .. })), "{dest:?}");
        }
    }
    assert_eq!(std::fs::read(full.join("otro.txt")).unwrap(), b"x", "a refused folder is untouched");
    assert_eq!(names_in_zip(&zip).len(), 0, "replaced by the new, empty ZIP");
    assert!(
        files_in(dir.path()).iter().all(|n| !n.contains(".tmp-")),
        "{:?}",
        files_in(dir.path())
    );
}

#[test]
fn a_cfdi_without_a_pdf_abandons_the_whole_export() {
    let good = stamped("ingreso-pedido-4471.json");
    let dir = tempfile::tempdir().unwrap();
    for dest in [
        Destination::Dir(dir.path().join("c")),
        Destination::Zip {
            path: dir.path().join("c.zip"),
            replace: false,
        },
    ] {
        let docs = vec![
            ("A".into(), good.0.clone(), good.1.clone()),
            ("B".into(), "ROTO".into(), b"<no-es-cfdi/>".to_vec()),
        ];
        let e = write_all(&dest, docs, 2, &mut |_| {}).unwrap_err();
        assert!(matches!(&e, ServiceError::Pdf { uuid, .. } if uuid == "ROTO"), "{e:?}");
        assert!(files_in(dir.path()).is_empty(), "{dest:?}: {:?}", files_in(dir.path()));
    }
    // The same UUID twice is refused, not overwritten, and nothing is left.
    for dest in [
        Destination::Dir(dir.path().join("e")),
        Destination::Zip {
            path: dir.path().join("e.zip"),
            replace: false,
        },
    ] {
        let twice = vec![
            ("A".into(), good.0.clone(), good.1.clone()),
            ("A2".into(), good.0.to_lowercase(), good.1.clone()),
        ];
        let e = write_all(&dest, twice, 2, &mut |_| {}).unwrap_err();
        assert!(
            matches!(&e, ServiceError::File { message, .. } if message.contains("se repite")),
            "{dest:?}: {e:?}"
        );
        assert!(files_in(dir.path()).is_empty(), "{dest:?}: {:?}", files_in(dir.path()));
    }
    // A sink opened and dropped unfinished leaves nothing either.
    let sink = Sink::open(&Destination::Zip {
        path: dir.path().join("d.zip"),
        replace: false,
    })
    .unwrap();
    sink.abandon();
    assert!(files_in(dir.path()).is_empty());
}

#[test]
fn entry_names_are_capital_safe_uuids() {
    for (uuid, name) in [
        ("5fb2822e-396d-4725-8521-cdc4bdd20ccf", "5FB2822E-396D-4725-8521-CDC4BDD20CCF"),
        (" 5FB2822E-396D-4725-8521-CDC4BDD20CCF ", "5FB2822E-396D-4725-8521-CDC4BDD20CCF"),
        ("../x", "___X"),
    ] {
        assert_eq!(entry_name(uuid), name);
    }
}

#[test]
fn day_ranges_include_the_last_day_and_name_the_bad_field() {
    let ok = |d: &str, h: &str| DayRange::parse(d, h).unwrap().fecha_bounds();
    assert_eq!(
        ok("2026-11-01", "2026-11-30"),
        ("2026-11-01T00:00:00".into(), "2026-12-01T00:00:00".into())
    );
    assert_eq!(
        ok(" 2026-12-31", "2026-12-31 "),
        ("2026-12-31T00:00:00".into(), "2027-01-01T00:00:00".into())
    );
    // (desde, hasta, field, code)
    for (d, h, field, code) in [
        ("1/11/2026", "2026-11-01", "desde", "fecha_invalida"),
        ("2026-11-01", "2026-13-01", "hasta", "fecha_invalida"),
        ("2026-11-02", "2026-11-01", "hasta", "fuera_de_rango"),
    ] {
        match DayRange::parse(d, h) {
            Err(ServiceError::Invalid { field: f, code: c, .. }) => assert_eq!((f, c), (field, code), "{d} {h}"),
            other => panic!("{d} {h}: {other:?}"),
        }
    }
}
