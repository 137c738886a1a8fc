-- Timbra outbox, SQLite dialect: series and folios numbered at intake.
--
-- folio_series: each serie with the next number Timbra hands out; one of them is the default
-- (a sale that names no serie and no folio takes it). '' is "no serie".
--
-- folios: every serie-folio a sale holds or a recording holds for a while. The primary key is
-- the rule "never two sales with one folio": a recorded sale's folio (sale_ref set) is its own
-- forever. A number Timbra handed out is first *held* by the intake that seals it (hold_owner,
-- hold_until_ms) and becomes the sale's inside the recording transaction, fenced by the owner;
-- a hold whose intake failed or died (released, or its lease past) goes to the next intake, the
-- lowest number first, so the only gaps are numbers no recorded sale will ever need. A folio a
-- sale brings itself is inserted already taken (refused when another sale has it). A restore
-- holds for good every folio the history it replaced had given (hold_owner 'restauracion').

CREATE TABLE folio_series (
    serie               TEXT PRIMARY KEY,
    next_folio          INTEGER NOT NULL CHECK (next_folio >= 1),
    is_default          INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1)),
    created_at_ms       INTEGER NOT NULL
);

CREATE UNIQUE INDEX folio_series_one_default ON folio_series (is_default) WHERE is_default = 1;

CREATE TABLE folios (
    serie               TEXT NOT NULL,
    folio               TEXT NOT NULL,
    number              INTEGER,
    sale_ref            INTEGER UNIQUE REFERENCES sales (id),
    hold_owner          TEXT,
    hold_until_ms       INTEGER,
    PRIMARY KEY (serie, folio),
    CHECK (sale_ref IS NOT NULL OR (hold_owner IS NOT NULL AND hold_until_ms IS NOT NULL))
);

CREATE INDEX folios_free ON folios (serie, number) WHERE sale_ref IS NULL;

-- A folio a sale holds is never handed to another sale nor given back.
CREATE TRIGGER folios_taken_stays BEFORE UPDATE ON folios
WHEN OLD.sale_ref IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'immutable: a recorded sale keeps its folio');
END;

CREATE TRIGGER folios_no_delete BEFORE DELETE ON folios
WHEN OLD.sale_ref IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'immutable: a recorded sale keeps its folio');
END;

-- The folios recorded sales already carry (tickets carry the point of sale's number, not an
-- invoice's): the first sale recorded with a serie-folio keeps it.
INSERT INTO folios (serie, folio, number, sale_ref)
SELECT COALESCE(i.serie, ''), i.folio,
       CASE WHEN i.folio <> '' AND i.folio NOT GLOB '*[^0-9]*' AND length(i.folio) <= 15 THEN CAST(i.folio AS INTEGER) END,
       i.sale_ref
FROM invoices i
JOIN sales s ON s.id = i.sale_ref
WHERE i.folio IS NOT NULL AND json_extract(s.body, '$.ticket') IS NOT 1
ORDER BY i.id
ON CONFLICT DO NOTHING;

-- Every serie in use continues after its highest number; F (the console's serie) is the default.
INSERT INTO folio_series (serie, next_folio, is_default, created_at_ms)
SELECT serie, COALESCE(MAX(number), 0) + 1, 0, 0 FROM folios GROUP BY serie;
INSERT INTO folio_series (serie, next_folio, is_default, created_at_ms) VALUES ('F', 1, 0, 0)
ON CONFLICT (serie) DO NOTHING;
UPDATE folio_series SET is_default = 1 WHERE serie = 'F';
