//! Digests used to name and compare bytes (request bodies, cadenas) and to sign webhooks:
//! lowercase hex SHA-256 and HMAC-SHA256, the one implementation of each.

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, bytes).as_ref())
}

/// Lowercase hex HMAC-SHA256 of the concatenation of `parts` with `key`.
pub fn hmac_sha256_hex(key: &[u8], parts: &[&[u8]]) -> String {
    let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, key);
    let mut ctx = aws_lc_rs::hmac::Context::with_key(&key);
    for p in parts {
        ctx.update(p);
    }
    hex(ctx.sign().as_ref())
}

#[cfg(test)]
mod tests {
    #[test]
    fn is_the_known_sha256_of_abc() {
        assert_eq!(
            super::sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn hmac_is_rfc_4231_case_2() {
        assert_eq!(
            super::hmac_sha256_hex(b"Jefe", &[b"what do ya want ", b"for nothing?"]),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
