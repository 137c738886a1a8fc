-- The emisor's certificates by NoCertificado, append-only (issue 27): renewing the CSD adds the
-- new certificate and keeps the old one, so a CFDI sealed before the renewal still verifies
-- against the certificate its NoCertificado names. Only certificates (public) are kept here;
-- the encrypted keys stay in emisor_settings.
CREATE TABLE csd_certificates (
    no_certificado      TEXT PRIMARY KEY,
    rfc                 TEXT NOT NULL,
    cer_der             BLOB NOT NULL,
    cer_not_before_ms   INTEGER NOT NULL,
    cer_not_after_ms    INTEGER NOT NULL,
    added_at_ms         INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL
);

CREATE TRIGGER csd_certificates_no_update BEFORE UPDATE ON csd_certificates
BEGIN
    SELECT RAISE(ABORT, 'immutable: a known certificate is never changed');
END;

CREATE TRIGGER csd_certificates_no_delete BEFORE DELETE ON csd_certificates
BEGIN
    SELECT RAISE(ABORT, 'immutable: a known certificate is never deleted');
END;

-- Every certificate the emisor settings ever held, as first stored.
INSERT INTO csd_certificates (no_certificado, rfc, cer_der, cer_not_before_ms, cer_not_after_ms, added_at_ms, actor, actor_role)
SELECT e.no_certificado, e.rfc, e.cer_der, e.cer_not_before_ms, e.cer_not_after_ms, e.created_at_ms, e.actor, e.actor_role
FROM emisor_settings e
WHERE e.id = (SELECT MIN(f.id) FROM emisor_settings f WHERE f.no_certificado = e.no_certificado);

-- Every certificate stored from now on is kept too, in the same transaction.
CREATE TRIGGER emisor_settings_keep_certificate AFTER INSERT ON emisor_settings
BEGIN
    INSERT OR IGNORE INTO csd_certificates (no_certificado, rfc, cer_der, cer_not_before_ms, cer_not_after_ms, added_at_ms, actor, actor_role)
    VALUES (NEW.no_certificado, NEW.rfc, NEW.cer_der, NEW.cer_not_before_ms, NEW.cer_not_after_ms, NEW.created_at_ms, NEW.actor, NEW.actor_role);
END;
