//! Fuzz target: the sale JSON parser (`cfdi::sale::Sale::from_json`, what every intake channel
//! calls). Any input gives a sale or field errors, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(sale) = cfdi::sale::Sale::from_json(data) {
        // What was accepted serializes again and parses to the same sale.
        let again = cfdi::sale::Sale::from_json(sale.to_canonical_json().as_bytes());
        assert!(again.is_ok(), "canonical JSON of an accepted sale is refused");
    }
});
