//! Local time at a LugarExpedicion.
//!
//! A CFDI's Fecha is local time at the postal code where it is issued, with no offset written.
//! SAT and the PACs compare it with their own clock (72-hour window, CSD validity), so Timbra
//! needs the UTC offset of a postal code. Mexico abolished daylight saving time in 2022 except
//! in municipalities on the US border; this table uses each zone's standard offset by postal
//! code range (the first two digits are the state). A border town in US summer time is one
//! hour off, which the 72-hour window and its safety margins absorb.

use chrono::{DateTime, FixedOffset, NaiveDateTime, TimeZone, Utc};

/// UTC offset in hours of the zone a postal code lies in (standard time).
pub fn utc_offset_hours(codigo_postal: &str) -> i32 {
    let n: u32 = match codigo_postal.get(..3).and_then(|p| p.parse().ok()) {
        Some(n) => n,
        None => return -6,
    };
    match n {
        // Baja California (Zona Noroeste).
        210..=229 => -8,
        // Baja California Sur, Sinaloa, Sonora (Zona Pacífico).
        230..=239 | 800..=829 | 830..=859 => -7,
        // Nayarit except Bahía de Banderas (637xx), which keeps Central time.
        630..=636 | 638..=639 => -7,
        // Ciudad Juárez and the Chihuahua border strip (320xx–323xx) keep Mountain time.
        320..=323 => -7,
        // Quintana Roo (Zona Sureste).
        770..=779 => -5,
        _ => -6,
    }
}

const fn hours(h: i32) -> FixedOffset {
    match FixedOffset::east_opt(h * 3600) {
        Some(o) => o,
        None => panic!("whole-hour offsets within ±12 h are valid"),
    }
}

const OFFSETS: [FixedOffset; 4] = [hours(-8), hours(-7), hours(-6), hours(-5)];

/// The fixed offset for a postal code.
pub fn offset_for(codigo_postal: &str) -> FixedOffset {
    let i = (utc_offset_hours(codigo_postal) + 8).clamp(0, 3) as usize;
    OFFSETS[i]
}

/// A local Fecha at `codigo_postal`, as an instant.
pub fn fecha_to_utc(fecha: NaiveDateTime, codigo_postal: &str) -> DateTime<Utc> {
    let offset = offset_for(codigo_postal);
    // A fixed offset maps every local time to exactly one instant.
    Utc.from_utc_datetime(&(fecha - offset))
}

/// The local wall-clock time at `codigo_postal` for an instant.
pub fn local_at(now: DateTime<Utc>, codigo_postal: &str) -> NaiveDateTime {
    now.with_timezone(&offset_for(codigo_postal)).naive_local()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_by_region() {
        for (cp, h) in [
            ("06300", -6),
            ("22000", -8),
            ("83000", -7),
            ("77500", -5),
            ("63732", -6),
            ("63000", -7),
            ("32000", -7),
            ("31000", -6),
            ("x", -6),
        ] {
            assert_eq!(utc_offset_hours(cp), h, "{cp}");
        }
        let f = NaiveDateTime::parse_from_str("2026-11-29T12:00:00", "%Y-%m-%dT%H:%M:%S").unwrap();
        assert_eq!(fecha_to_utc(f, "06300").to_rfc3339(), "2026-11-29T18:00:00+00:00");
        assert_eq!(local_at(fecha_to_utc(f, "22000"), "22000"), f);
    }
}
