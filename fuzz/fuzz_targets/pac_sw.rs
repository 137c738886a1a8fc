//! Fuzz target: SW Sapién's response parsers (stamp, cancel, the JSON envelope), at the statuses
//! that matter. An answer that is no envelope never proves "not created".
#![no_main]

use libfuzzer_sys::fuzz_target;
use pac_clients::sw;

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else { return };
    let status = [200u16, 201, 400, 401, 404, 500, 502, 503][usize::from(first) % 8];
    let envelope = sw::parse_envelope(body);
    let stamp = sw::classify_stamp(status, body, None, sw::DEFAULT_ENVELOPE_STATUSES);
    if envelope.is_none() {
        assert!(matches!(stamp, pac::StampOutcome::Unknown { .. }), "garbage classified as {stamp:?}");
    }
    let _ = sw::classify_cancel(status, body, "6F7C2B1A-3D4E-4F50-8A6B-7C8D9E0F1A2B", None);
});
