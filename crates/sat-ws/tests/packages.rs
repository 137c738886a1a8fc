//! Every fixture package reads (junk skipped), and crafted ZIP bombs and traversal names are
//! refused in words.

use std::io::Write;

use chrono::NaiveDateTime;
use rust_decimal::Decimal;
use sat_ws::package::{read_cfdi, read_metadata, Efecto, EstatusCfdi, Limits, PackageError};

include!("common/fixtures.rs");

#[test]
fn the_cfdi_package_gives_its_one_cfdi_and_skips_the_junk() {
    let p = read_cfdi(&fixture("zip/cfdi.zip"), &Limits::default()).unwrap();
    assert_eq!(p.cfdis.len(), 1, "{p:?}");
    assert_eq!(p.cfdis[0].uuid, "AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE");
    assert_eq!(p.cfdis[0].xml, fixture("zip/cfdi.xml"));
    let mut skipped = p.skipped.clone();
    skipped.sort();
    assert_eq!(
        skipped,
        [
            "00000000-0000-0000-0000-000000000000.xml",
            "__MACOSX/",
            "__MACOSX/.aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.xml",
            "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.xml.xml",
            "empty-file",
            "other.txt",
        ]
    );
}

fn dt(s: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap()
}

#[test]
fn the_metadata_package_gives_typed_rows_and_skips_the_junk() {
    let p = read_metadata(&fixture("zip/metadata.zip"), &Limits::default()).unwrap();
    assert_eq!(p.rows.len(), 2, "{p:?}");
    let r = &p.rows[0];
    assert_eq!(r.uuid, "E7215E3B-2DC5-4A40-AB10-C902FF9258DF");
    assert_eq!(r.rfc_emisor, "XAXX010101000");
    assert_eq!(r.nombre_emisor, "RAZON SOCIAL 1");
    assert_eq!(r.rfc_receptor, "XAXX010101001");
    assert_eq!(r.nombre_receptor, "RAZON SOCIAL 1 SA DE CV");
    assert_eq!(r.rfc_pac, "XAXX010101003");
    assert_eq!(r.fecha_emision, dt("2018-01-11 07:10:23"));
    assert_eq!(r.fecha_certificacion_sat, dt("2018-01-11 07:10:51"));
    assert_eq!(r.monto, Decimal::new(112411, 2));
    assert_eq!(r.efecto, Efecto::Ingreso);
    assert_eq!(r.estatus, EstatusCfdi::Vigente);
    assert_eq!(r.fecha_cancelacion, None);
    assert_eq!(r.a_cuenta_terceros, None);
    assert_eq!(p.rows[1].uuid, "129C4D12-1415-4ACE-BE12-34E71C4EAB4E");
    assert_eq!(p.rows[1].monto, Decimal::new(148517, 2));
    let mut skipped = p.skipped.clone();
    skipped.sort();
    assert_eq!(
        skipped,
        [
            "00000000-0000-0000-0000-000000000000_00.txt",
            "__MACOSX/",
            "__MACOSX/._45C5C344-DA01-497A-9271-5AA3852EE6AE_01.txt",
            "empty-file",
            "other.txt",
        ]
    );
}

#[test]
fn the_terceros_file_fills_the_rows_it_names() {
    let p = read_metadata(&fixture("zip/metadata-terceros.zip"), &Limits::default()).unwrap();
    assert_eq!(p.rows.len(), 5);
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    let terceros: Vec<Option<(&str, &str)>> = p
        .rows
        .iter()
        .map(|r| r.a_cuenta_terceros.as_ref().map(|(a, b)| (a.as_str(), b.as_str())))
        .collect();
    assert_eq!(
        terceros,
        [
            None,
            Some(("AAAA010101AA1", "PERSONA FISICA UNO")),
            Some(("AAAA010101AA2", "PERSONA FISICA DOS")),
            Some(("AAAA010101AA3", "PERSONA FISICA TRES")),
            None,
        ]
    );
    assert_eq!(p.rows[4].monto, "999887.65".parse::<Decimal>().unwrap());
}

/// A ZIP of (name, bytes), deflated.
fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in entries {
        w.start_file(*name, opts).unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap().into_inner()
}

const CFDI: &[u8] = b"<?xml version=\"1.0\"?><cfdi:Comprobante/>";

#[test]
fn a_zip_bomb_is_refused_in_words() {
    let zeros = vec![0u8; 20 * 1024 * 1024];
    let bomb = zip_of(&[("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.xml", &zeros)]);
    assert!(bomb.len() < 100 * 1024, "the bomb is small: {}", bomb.len());
    let err = read_cfdi(&bomb, &Limits::default()).unwrap_err();
    assert!(matches!(err, PackageError::RatioTooHigh { .. }), "{err:?}");
    assert!(err.to_string().contains("posible bomba ZIP"), "{err}");
    let err = read_metadata(&bomb, &Limits::default()).unwrap_err();
    assert!(matches!(err, PackageError::RatioTooHigh { .. }), "{err:?}");

    let strict = Limits {
        max_entry_bytes: 1024 * 1024,
        ..Limits::default()
    };
    let err = read_cfdi(&bomb, &strict).unwrap_err();
    assert_eq!(
        err.to_string(),
        "el archivo «aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.xml» del paquete pesa 20971520 bytes descomprimido; el máximo es 1048576 (posible bomba ZIP)"
    );

    let many: Vec<(String, &[u8])> = (0..20).map(|i| (format!("junk-{i}.txt"), CFDI)).collect();
    let many: Vec<(&str, &[u8])> = many.iter().map(|(n, b)| (n.as_str(), *b)).collect();
    let err = read_cfdi(
        &zip_of(&many),
        &Limits {
            max_entries: 10,
            ..Limits::default()
        },
    )
    .unwrap_err();
    assert_eq!(err, PackageError::TooManyEntries { count: 20, limit: 10 });

    let err = read_cfdi(
        &zip_of(&many),
        &Limits {
            max_total_bytes: 200,
            ..Limits::default()
        },
    )
    .unwrap_err();
    assert_eq!(err, PackageError::TotalTooLarge { limit: 200 });
}

#[test]
fn a_traversal_name_refuses_the_package_in_words() {
    for name in [
        "../aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.xml",
        "x/../../aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.xml",
        "/etc/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.xml",
        "..\\aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.xml",
        "C:/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.xml",
    ] {
        let z = zip_of(&[("bbbbbbbb-bbbb-cccc-dddd-eeeeeeeeeeee.xml", CFDI), (name, CFDI)]);
        let err = read_cfdi(&z, &Limits::default()).unwrap_err();
        assert_eq!(err, PackageError::UnsafeName { name: name.into() }, "{name}");
        assert!(err.to_string().contains("sale de su carpeta"), "{err}");
        assert!(matches!(
            read_metadata(&z, &Limits::default()),
            Err(PackageError::UnsafeName { .. })
        ));
    }
}

#[test]
fn not_a_zip_and_broken_metadata_are_refused_naming_the_place() {
    assert!(matches!(read_cfdi(b"not a zip", &Limits::default()), Err(PackageError::NotZip(_))));
    let header = "Uuid~RfcEmisor~NombreEmisor~RfcReceptor~NombreReceptor~RfcPac~FechaEmision~FechaCertificacionSat~Monto~EfectoComprobante~Estatus~FechaCancelacion";
    let good = "E7215E3B-2DC5-4A40-AB10-C902FF9258DF~XAXX010101000~A~XAXX010101001~B~XAXX010101003~2018-01-11 07:10:23~2018-01-11 07:10:51~1124.11~E~0~2018-02-01 10:00:00";
    let p = read_metadata(
        &zip_of(&[("x_01.txt", format!("{header}\n{good}\n").as_bytes())]),
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(p.rows[0].estatus, EstatusCfdi::Cancelado);
    assert_eq!(p.rows[0].efecto, Efecto::Egreso);
    assert_eq!(p.rows[0].fecha_cancelacion, Some(dt("2018-02-01 10:00:00")));

    let bad = good.replace("1124.11", "mil");
    let err = read_metadata(
        &zip_of(&[("x_01.txt", format!("{header}\n{bad}\n").as_bytes())]),
        &Limits::default(),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "el archivo «x_01.txt», renglón 2: Monto «mil» no es un importe");
    let bad = format!("{good}~extra");
    let err = read_metadata(
        &zip_of(&[("x_01.txt", format!("{header}\n{bad}\n").as_bytes())]),
        &Limits::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("tiene 13 columnas"), "{err}");
}
