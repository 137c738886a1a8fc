//! Fuzz target: Facturapi's JSON response parsers (create, list by external_id, cancel). A body
//! that is no JSON never proves "not created".
#![no_main]

use libfuzzer_sys::fuzz_target;
use pac_clients::facturapi;

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else { return };
    let status = [200u16, 201, 202, 400, 401, 404, 409, 500][usize::from(first) % 8];
    let create = facturapi::classify_create(status, body, None);
    if serde_json::from_slice::<serde_json::Value>(body).is_err() {
        assert!(matches!(create, pac::StampOutcome::Unknown { .. }), "garbage classified as {create:?}");
    }
    let _ = facturapi::classify_list(status, body);
    let _ = facturapi::classify_cancel(status, body, None);
});
