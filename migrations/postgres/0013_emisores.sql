-- Timbra outbox, PostgreSQL dialect: several emisores, one schema each (issue 27).
--
-- Every sale, attempt, CFDI, payment, report, token and setting of an emisor lives in that
-- emisor's own schema of the team's database: isolation is where the rows are, not a column
-- every query must remember. This table is the directory of those schemas, kept in the schema
-- Timbra opens first (the *home*). The home is itself an emisor's schema, read from its own
-- settings and never listed here (its RFC may change while it is Modo sandbox's). Another
-- emisor's place is a name derived from its RFC: the schema emisor_<place>, reached through the
-- connection's search_path. The RFC is the key: one emisor is one schema, never two. An
-- archived emisor is hidden from the switcher and never chosen by default (the one chosen last
-- is the setting `emisores.elegido`); its schema stays (what waits in it is still drained).

CREATE TABLE emisores (
    rfc                 TEXT COLLATE "C" PRIMARY KEY CHECK (length(rfc) BETWEEN 12 AND 13),
    nombre              TEXT COLLATE "C" NOT NULL CHECK (length(nombre) > 0),
    place               TEXT COLLATE "C" NOT NULL UNIQUE CHECK (length(place) > 0 AND place <> 'principal'),
    created_at_ms       BIGINT NOT NULL,
    actor               TEXT COLLATE "C" NOT NULL,
    actor_role          TEXT COLLATE "C" NOT NULL,
    archived_at_ms      BIGINT
);

-- One emisor, one database: the home is never the emisor of an RFC the directory has, nor is
-- an RFC registered while it is the home's (whichever write comes second is refused).
CREATE FUNCTION emisores_one_database() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'emisores'
       AND NEW.rfc = (SELECT rfc FROM emisor_settings ORDER BY id DESC LIMIT 1) THEN
        RAISE EXCEPTION USING ERRCODE = 'integrity_constraint_violation',
            MESSAGE = 'one emisor, one database: this RFC is the home database''s emisor';
    END IF;
    IF TG_TABLE_NAME = 'emisor_settings' AND EXISTS (SELECT 1 FROM emisores WHERE rfc = NEW.rfc) THEN
        RAISE EXCEPTION USING ERRCODE = 'integrity_constraint_violation',
            MESSAGE = 'one emisor, one database: this RFC has its own database';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER emisores_not_the_home BEFORE INSERT ON emisores
FOR EACH ROW EXECUTE FUNCTION emisores_one_database();

CREATE TRIGGER emisor_settings_not_in_the_directory BEFORE INSERT ON emisor_settings
FOR EACH ROW EXECUTE FUNCTION emisores_one_database();
