//! The CLI tests' clock. Every `timbra` process a test starts reads the system clock moved by
//! one offset (`TIMBRA_TEST_CLOCK_OFFSET_MS`, honoured by debug builds only), fixed per test
//! binary so that the processes agree with each other and time runs at real speed: their "now"
//! starts at [`PINNED`], a day the fixtures' dates and certificates fit, whatever the system
//! date (the suite passes with the system clock past the test CSD's end, 2027-05-18).

use std::process::Command;
use std::sync::OnceLock;

use chrono::{DateTime, Utc};

/// The variable the `timbra` binary reads (see `shell::process_clock`).
pub const VAR: &str = "TIMBRA_TEST_CLOCK_OFFSET_MS";

/// Where the tests' clock starts: half an hour after the fixture sales' `occurred_at`
/// (2026-11-29T12:00 at LugarExpedicion 42501, UTC−6), inside the test CSD's validity.
pub const PINNED: &str = "2026-11-29T18:30:00Z";

fn offset() -> chrono::Duration {
    static OFFSET: OnceLock<chrono::Duration> = OnceLock::new();
    *OFFSET.get_or_init(|| {
        let pinned = DateTime::parse_from_rfc3339(PINNED).expect("PINNED").with_timezone(&Utc);
        pinned - Utc::now()
    })
}

/// The offset in milliseconds, as the binary reads it.
pub fn offset_ms() -> String {
    offset().num_milliseconds().to_string()
}

/// Now, by the tests' clock (what the `timbra` processes read).
#[allow(dead_code)]
pub fn now() -> DateTime<Utc> {
    Utc::now() + offset()
}

/// `program` as a command that runs on the tests' clock.
#[allow(dead_code)]
pub fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new(program);
    c.env(VAR, offset_ms());
    c
}
