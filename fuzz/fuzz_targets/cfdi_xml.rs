//! Fuzz target: the CFDI XML reader (`cfdi::xml::Document::parse`, the borrowed `Tree` view)
//! and the cadena original computed straight from bytes (`timbra cfdi cadena`). Any input gives
//! a value or an error, never a panic, a stack overflow or unbounded memory.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(doc) = cfdi::xml::Document::parse(data) {
        // A parsed document reads as a CFDI or says why not.
        let _ = cfdi::read::summary(&doc);
        let _ = cfdi::cadena::cadena_original(&doc);
        let _ = cfdi::cadena::cadena_tfd(&doc);
    }
    let _ = cfdi::cadena::cadena_original_xml(data);
});
