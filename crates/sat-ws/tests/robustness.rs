//! Outside input never panics: SAT's answers, packages and signed requests, mutated (bytes
//! replaced, the tail cut), give a value or an error in words.

use proptest::prelude::*;
use sat_ws::package::{read_cfdi, read_metadata, Limits};
use sat_ws::response::{parse_authenticate, parse_download, parse_query, parse_verify};

include!("common/fixtures.rs");

const INPUTS: [&str; 16] = [
    "authenticate/request.xml",
    "authenticate/response-with-token.xml",
    "authenticate/response-with-error.xml",
    "query/request-issued.xml",
    "query/response-issued.xml",
    "query/response-received.xml",
    "query/response-item.xml",
    "verify/request.xml",
    "verify/response-0-packages.xml",
    "verify/response-2-packages.xml",
    "download/request.xml",
    "download/response-with-package.xml",
    "download/response-with-package-template.xml",
    "zip/cfdi.zip",
    "zip/metadata.zip",
    "zip/metadata-terceros.zip",
];

fn mutate(mut bytes: Vec<u8>, edits: &[(usize, u8)], keep: usize) -> Vec<u8> {
    if bytes.is_empty() {
        return bytes;
    }
    for (at, b) in edits {
        let i = at % bytes.len();
        bytes[i] = *b;
    }
    let keep = keep % (bytes.len() + 1);
    bytes.truncate(keep.max(bytes.len() / 2));
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn mutated_answers_and_packages_never_panic(
        which in 0..INPUTS.len(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
        keep in any::<usize>(),
    ) {
        let bytes = mutate(fixture(INPUTS[which]), &edits, keep);
        let _ = parse_authenticate(&bytes);
        let _ = parse_query(&bytes);
        let _ = parse_verify(&bytes);
        let _ = parse_download(&bytes);
        let _ = sat_ws::xmldsig::verify(&bytes);
        let _ = read_cfdi(&bytes, &Limits::default());
        let _ = read_metadata(&bytes, &Limits::default());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse_verify(&bytes);
        let _ = sat_ws::xmldsig::verify(&bytes);
        let _ = read_cfdi(&bytes, &Limits::default());
        let _ = read_metadata(&bytes, &Limits::default());
    }
}
