//! Fuzz target: Finkok's SOAP response parsers (stamp, stamped, get_xml, cancel,
//! get_sat_status). A body that is no SOAP envelope never proves "not created".
#![no_main]

use libfuzzer_sys::fuzz_target;
use pac_clients::finkok;

const UUID: &str = "6F7C2B1A-3D4E-4F50-8A6B-7C8D9E0F1A2B";

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else { return };
    let status = [200u16, 400, 500, 503][usize::from(first) % 4];
    let stamp = finkok::classify_stamp(status, body);
    if pac_clients::soap::parse(body).is_err() {
        assert!(matches!(stamp, pac::StampOutcome::Unknown { .. }), "garbage classified as {stamp:?}");
    }
    let _ = finkok::classify_stamped(status, body);
    let _ = finkok::classify_get_xml(status, body, UUID);
    let _ = finkok::classify_cancel(status, body, UUID);
    let _ = finkok::classify_sat_status(status, body);
});
