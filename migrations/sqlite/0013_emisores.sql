-- Timbra outbox, SQLite dialect: several emisores, one database each (issue 27).
--
-- Every sale, attempt, CFDI, payment, report, token and setting of an emisor lives in that
-- emisor's own database: isolation is where the rows are, not a column every query must
-- remember. This table is the directory of those databases, kept in the database Timbra opens
-- first (the *home*). The home is itself an emisor's database, read from its own settings and
-- never listed here (its RFC may change while it is Modo sandbox's). Another emisor's place is
-- a name derived from its RFC: the file emisores/<place>/timbra.db beside the home file. The
-- RFC is the key: one emisor is one database, never two. An archived emisor is hidden from the
-- switcher and never chosen by default (the one chosen last is the setting `emisores.elegido`);
-- its database stays (what waits in it is still drained).

CREATE TABLE emisores (
    rfc                 TEXT PRIMARY KEY NOT NULL CHECK (length(rfc) BETWEEN 12 AND 13),
    nombre              TEXT NOT NULL CHECK (length(nombre) > 0),
    place               TEXT NOT NULL UNIQUE CHECK (length(place) > 0 AND place <> 'principal'),
    created_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL,
    archived_at_ms      INTEGER
);

-- One emisor, one database: the home is never the emisor of an RFC the directory has, nor is
-- an RFC registered while it is the home's (whichever write comes second is refused).
CREATE TRIGGER emisores_not_the_home BEFORE INSERT ON emisores
WHEN NEW.rfc = (SELECT rfc FROM emisor_settings ORDER BY id DESC LIMIT 1)
BEGIN
    SELECT RAISE(ABORT, 'one emisor, one database: this RFC is the home database''s emisor');
END;

CREATE TRIGGER emisor_settings_not_in_the_directory BEFORE INSERT ON emisor_settings
WHEN NEW.rfc IN (SELECT rfc FROM emisores)
BEGIN
    SELECT RAISE(ABORT, 'one emisor, one database: this RFC has its own database');
END;
