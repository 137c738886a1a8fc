//! Local time at a LugarExpedicion.
//!
//! A CFDI's Fecha is local time at the postal code where it is issued, with no offset written.
//! SAT and the PACs compare it with their own clock (72-hour window, CSD validity), so Timbra
//! needs the UTC offset of a postal code at an instant.
//!
//! The zone comes from SAT's own catalog: every c_CodigoPostal row carries a *huso horario*
//! (`Tiempo del Centro`, `Tiempo del Centro en Frontera`, `Tiempo del Noroeste`,
//! `Tiempo del Pacífico`, `Tiempo del Sureste`; see [`crate::catalog::DetalleCodigoPostal`]).
//! [`zone_for_huso`] maps each to the IANA zone with the same rules, and `chrono-tz` (IANA data
//! compiled into the binary: no IO) gives the offset at the instant, daylight saving included:
//! since 2022 only the border zones (`Noroeste` = America/Tijuana and `Centro en Frontera` =
//! America/Matamoros) move their clocks, with the US calendar. Where SAT's catalog and the
//! municipal reality may differ (SAT labels the Ciudad Juárez strip `Tiempo del Centro en
//! Frontera`), the catalog wins: it is what the PAC checks Fecha against. A postal code that
//! is not in the catalog (the mapping refuses it anyway) is taken as `Tiempo del Centro`.

use chrono::{DateTime, FixedOffset, LocalResult, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;

use crate::catalog::{self, Detalle};

/// The IANA zone for a huso horario of SAT's c_CodigoPostal; None for an unknown label.
pub fn zone_for_huso(huso: &str) -> Option<Tz> {
    Some(match huso {
        "Tiempo del Centro" => chrono_tz::America::Mexico_City,
        // Central time with the US daylight-saving calendar (Coahuila, Nuevo León, Tamaulipas
        // and Chihuahua border municipalities).
        "Tiempo del Centro en Frontera" => chrono_tz::America::Matamoros,
        // Baja California: Pacific time with the US daylight-saving calendar.
        "Tiempo del Noroeste" => chrono_tz::America::Tijuana,
        // Baja California Sur, Sinaloa, Sonora, Nayarit: UTC−7 all year since 2022.
        "Tiempo del Pacífico" => chrono_tz::America::Mazatlan,
        // Quintana Roo: UTC−5 all year.
        "Tiempo del Sureste" => chrono_tz::America::Cancun,
        _ => return None,
    })
}

/// The IANA zone of a postal code, from the catalog's huso horario (Mexico City when the code
/// or its huso is unknown).
pub fn zone_for(codigo_postal: &str) -> Tz {
    catalog::codigo_postal(codigo_postal)
        .and_then(|e| match e.detalle {
            Detalle::CodigoPostal(d) => zone_for_huso(d.huso_horario),
            _ => None,
        })
        .unwrap_or(chrono_tz::America::Mexico_City)
}

/// A reference instant in January (no daylight saving anywhere in Mexico): standard time.
fn winter() -> DateTime<Utc> {
    Utc.timestamp_opt(1_767_268_800, 0).single().unwrap_or_default() // 2026-01-01T12:00:00Z
}

/// The UTC offset of a postal code at an instant (daylight saving included).
pub fn offset_at(now: DateTime<Utc>, codigo_postal: &str) -> FixedOffset {
    zone_for(codigo_postal).offset_from_utc_datetime(&now.naive_utc()).fix()
}

/// UTC offset in hours of the zone a postal code lies in (standard time, as in January).
pub fn utc_offset_hours(codigo_postal: &str) -> i32 {
    offset_for(codigo_postal).local_minus_utc() / 3600
}

/// The standard (winter) offset for a postal code. For the offset at a given instant, with
/// daylight saving, use [`offset_at`].
pub fn offset_for(codigo_postal: &str) -> FixedOffset {
    offset_at(winter(), codigo_postal)
}

/// A local Fecha at `codigo_postal`, as an instant. A wall-clock time that happens twice (the
/// hour repeated when daylight saving ends) is the first one; one that never happens (the hour
/// skipped when it starts) is read with the offset in force just before the change.
pub fn fecha_to_utc(fecha: NaiveDateTime, codigo_postal: &str) -> DateTime<Utc> {
    let zone = zone_for(codigo_postal);
    match zone.from_local_datetime(&fecha) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t.with_timezone(&Utc),
        LocalResult::None => {
            let before = fecha - chrono::Duration::hours(3);
            let offset = match zone.from_local_datetime(&before) {
                LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t.offset().fix(),
                LocalResult::None => offset_for(codigo_postal),
            };
            Utc.from_utc_datetime(&(fecha - offset))
        }
    }
}

/// The local wall-clock time at `codigo_postal` for an instant.
pub fn local_at(now: DateTime<Utc>, codigo_postal: &str) -> NaiveDateTime {
    now.with_timezone(&zone_for(codigo_postal)).naive_local()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn local(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").unwrap()
    }

    #[test]
    fn offsets_by_region() {
        for (cp, h) in [
            ("06300", -6),
            ("22000", -8),
            ("83000", -7),
            ("77500", -5),
            ("63732", -6),
            ("63000", -7),
            // SAT's catalog: the Ciudad Juárez strip is "Tiempo del Centro en Frontera".
            ("32000", -6),
            ("31000", -6),
            ("x", -6),
        ] {
            assert_eq!(utc_offset_hours(cp), h, "{cp}");
        }
        let f = local("2026-11-29T12:00:00");
        assert_eq!(fecha_to_utc(f, "06300").to_rfc3339(), "2026-11-29T18:00:00+00:00");
        assert_eq!(local_at(fecha_to_utc(f, "22000"), "22000"), f);
    }

    #[test]
    fn border_postal_codes_keep_daylight_saving_in_summer() {
        let summer = utc("2026-07-15T19:00:00Z");
        // Tijuana: UTC−7 in summer, UTC−8 in winter.
        assert_eq!(offset_at(summer, "22000").local_minus_utc(), -7 * 3600);
        assert_eq!(local_at(summer, "22000"), local("2026-07-15T12:00:00"));
        assert_eq!(offset_at(utc("2026-01-15T19:00:00Z"), "22000").local_minus_utc(), -8 * 3600);
        // Matamoros / Reynosa (Centro en Frontera): UTC−5 in summer.
        assert_eq!(offset_at(summer, "87300").local_minus_utc(), -5 * 3600);
        // The interior keeps UTC−6 all year.
        assert_eq!(offset_at(summer, "06300").local_minus_utc(), -6 * 3600);
        assert_eq!(fecha_to_utc(local("2026-07-15T12:00:00"), "22000"), summer);
    }

    #[test]
    fn fecha_across_daylight_saving_changes() {
        // 2026-03-08 02:30 never happens in Tijuana (clocks jump 02:00 → 03:00): read at −8.
        assert_eq!(fecha_to_utc(local("2026-03-08T02:30:00"), "22000"), utc("2026-03-08T10:30:00Z"));
        // 2026-11-01 01:30 happens twice: the first one (still −7).
        assert_eq!(fecha_to_utc(local("2026-11-01T01:30:00"), "22000"), utc("2026-11-01T08:30:00Z"));
    }
}
