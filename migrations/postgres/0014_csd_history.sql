-- The emisor's certificates by NoCertificado, append-only (issue 27): renewing the CSD adds the
-- new certificate and keeps the old one, so a CFDI sealed before the renewal still verifies
-- against the certificate its NoCertificado names. Only certificates (public) are kept here;
-- the encrypted keys stay in emisor_settings.
CREATE TABLE csd_certificates (
    no_certificado      TEXT COLLATE "C" PRIMARY KEY,
    rfc                 TEXT COLLATE "C" NOT NULL,
    cer_der             BYTEA NOT NULL,
    cer_not_before_ms   BIGINT NOT NULL,
    cer_not_after_ms    BIGINT NOT NULL,
    added_at_ms         BIGINT NOT NULL,
    actor               TEXT COLLATE "C" NOT NULL,
    actor_role          TEXT COLLATE "C" NOT NULL
);

CREATE TRIGGER csd_certificates_no_update BEFORE UPDATE ON csd_certificates
FOR EACH ROW
EXECUTE FUNCTION timbra_refuse('immutable: a known certificate is never changed');

CREATE TRIGGER csd_certificates_no_delete BEFORE DELETE ON csd_certificates
FOR EACH ROW
EXECUTE FUNCTION timbra_refuse('immutable: a known certificate is never deleted');

-- Every certificate the emisor settings ever held, as first stored.
INSERT INTO csd_certificates (no_certificado, rfc, cer_der, cer_not_before_ms, cer_not_after_ms, added_at_ms, actor, actor_role)
SELECT e.no_certificado, e.rfc, e.cer_der, e.cer_not_before_ms, e.cer_not_after_ms, e.created_at_ms, e.actor, e.actor_role
FROM emisor_settings e
WHERE e.id = (SELECT MIN(f.id) FROM emisor_settings f WHERE f.no_certificado = e.no_certificado);

-- Every certificate stored from now on is kept too, in the same transaction.
CREATE FUNCTION timbra_keep_certificate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO csd_certificates (no_certificado, rfc, cer_der, cer_not_before_ms, cer_not_after_ms, added_at_ms, actor, actor_role)
    VALUES (NEW.no_certificado, NEW.rfc, NEW.cer_der, NEW.cer_not_before_ms, NEW.cer_not_after_ms, NEW.created_at_ms, NEW.actor, NEW.actor_role)
    ON CONFLICT (no_certificado) DO NOTHING;
    RETURN NEW;
END
$$;

CREATE TRIGGER emisor_settings_keep_certificate AFTER INSERT ON emisor_settings
FOR EACH ROW
EXECUTE FUNCTION timbra_keep_certificate();
