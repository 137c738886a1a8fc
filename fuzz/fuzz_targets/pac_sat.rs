//! Fuzz target: SAT's ConsultaCFDIService answer parser. Any input gives a status or an
//! unknown outcome, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else { return };
    let status = [200u16, 500, 503][usize::from(first) % 3];
    let _ = pac_clients::sat::classify(status, body);
});
