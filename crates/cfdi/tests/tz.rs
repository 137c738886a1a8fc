//! Time zones against the catalog: every postal code of SAT's c_CodigoPostal gets the offset of
//! the IANA zone its huso horario names, winter and summer, border daylight saving included.

use cfdi::catalog::{self, Catalogo, Detalle};
use cfdi::tz;
use chrono::{DateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use proptest::prelude::*;

/// The huso horario column of SAT's c_CodigoPostal, named independently of `tz`'s table.
fn iana(huso: &str) -> Tz {
    let name = match huso {
        "Tiempo del Centro" => "America/Mexico_City",
        "Tiempo del Centro en Frontera" => "America/Matamoros",
        "Tiempo del Noroeste" => "America/Tijuana",
        "Tiempo del Pacífico" => "America/Mazatlan",
        "Tiempo del Sureste" => "America/Cancun",
        other => panic!("huso horario {other:?} not mapped"),
    };
    name.parse().expect("an IANA zone")
}

fn huso(i: usize) -> (&'static str, &'static str) {
    let e = catalog::nth(Catalogo::CodigoPostal, i).expect("in range");
    match e.detalle {
        Detalle::CodigoPostal(d) => (e.code, d.huso_horario),
        _ => unreachable!("a c_CodigoPostal entry"),
    }
}

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

#[test]
fn every_postal_code_gets_its_catalog_zone_winter_and_summer() {
    let instants = [
        utc("2026-01-15T18:00:00Z"),
        utc("2026-04-15T18:00:00Z"),
        utc("2026-07-15T18:00:00Z"),
        utc("2026-11-15T18:00:00Z"),
    ];
    let n = catalog::len(Catalogo::CodigoPostal);
    assert!(n > 90_000, "the full c_CodigoPostal is embedded ({n})");
    let mut dst = 0;
    for i in 0..n {
        let (cp, huso) = huso(i);
        let zone = iana(huso);
        for now in instants {
            let want = zone.offset_from_utc_datetime(&now.naive_utc()).fix();
            assert_eq!(tz::offset_at(now, cp), want, "{cp} ({huso}) at {now}");
            assert_eq!(tz::local_at(now, cp), now.with_timezone(&zone).naive_local(), "{cp} at {now}");
        }
        let (w, s) = (tz::offset_at(instants[0], cp), tz::offset_at(instants[2], cp));
        if w != s {
            dst += 1;
        }
        assert_eq!(tz::offset_for(cp), w, "{cp}: offset_for is standard time");
    }
    // The border zones (Noroeste and Centro en Frontera) are the only ones with daylight saving.
    assert_eq!(dst, 2_000 + 2_870, "postal codes with daylight saving");
}

#[test]
fn border_postal_code_in_summer_gets_daylight_saving() {
    let summer = utc("2026-07-01T20:00:00Z");
    assert_eq!(tz::offset_at(summer, "22000").local_minus_utc(), -7 * 3600, "Tijuana in summer");
    assert_eq!(tz::local_at(summer, "22000").to_string(), "2026-07-01 13:00:00");
    let winter = utc("2026-12-01T20:00:00Z");
    assert_eq!(tz::local_at(winter, "22000").to_string(), "2026-12-01 12:00:00");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// At any instant from 2023 to 2031, any postal code: the catalog zone's offset, and a local
    /// Fecha read back gives the same instant.
    #[test]
    fn offset_is_the_catalog_zones(i in 0usize..95_000, secs in 1_672_531_200i64..1_924_992_000i64) {
        let n = catalog::len(Catalogo::CodigoPostal);
        let (cp, huso) = huso(i % n);
        let now = Utc.timestamp_opt(secs, 0).single().unwrap();
        let zone = iana(huso);
        prop_assert_eq!(tz::offset_at(now, cp), zone.offset_from_utc_datetime(&now.naive_utc()).fix());
        let fecha = tz::local_at(now, cp);
        let back = tz::fecha_to_utc(fecha, cp);
        // The repeated hour when daylight saving ends reads as its first occurrence.
        prop_assert!(back == now || back == now - chrono::Duration::hours(1), "{} {} -> {} -> {}", cp, now, fecha, back);
    }
}
