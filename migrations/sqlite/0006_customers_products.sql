-- Timbra outbox, SQLite dialect, version 6: the customers (clientes) and products (productos)
-- the Emitir form fills a sale from.
--
-- Both are master data, not fiscal facts: they may be edited and deleted. A sale never points at
-- them: when a sale is recorded its receptor and conceptos are copied into the sale's own JSON
-- (`sales.body`, immutable), so editing or deleting a customer or a product never changes a
-- recorded sale. Every value was validated against SAT's catalogs before it was written (the
-- `customers` and `products` modules); amounts and rates are decimal text.

CREATE TABLE customers (
    id                  INTEGER PRIMARY KEY,
    -- Upper-case RFC; XAXX010101000 (público en general) and XEXX010101000 (extranjero) may be
    -- shared by many customers, every other RFC is one customer.
    rfc                 TEXT NOT NULL,
    -- The legal name exactly as in SAT's records (Nombre of the receptor).
    nombre              TEXT NOT NULL,
    -- DomicilioFiscalReceptor: a c_CodigoPostal code.
    cp                  TEXT NOT NULL,
    -- c_RegimenFiscal of the receptor.
    regimen             TEXT NOT NULL,
    -- Defaults for a new invoice to this customer (c_UsoCFDI, c_FormaPago, c_MetodoPago).
    uso                 TEXT,
    forma_pago          TEXT,
    metodo_pago         TEXT,
    -- JSON array of e-mail addresses.
    emails              TEXT NOT NULL DEFAULT '[]',
    created_at_ms       INTEGER NOT NULL,
    updated_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL
);

CREATE UNIQUE INDEX customers_by_rfc ON customers (rfc)
    WHERE rfc NOT IN ('XAXX010101000', 'XEXX010101000');
CREATE UNIQUE INDEX customers_generic_by_name ON customers (rfc, nombre)
    WHERE rfc IN ('XAXX010101000', 'XEXX010101000');
CREATE INDEX customers_by_name ON customers (nombre);

CREATE TABLE products (
    id                  INTEGER PRIMARY KEY,
    -- NoIdentificacion of the concepto; the product's key.
    sku                 TEXT NOT NULL UNIQUE,
    descripcion         TEXT NOT NULL,
    -- c_ClaveProdServ and c_ClaveUnidad codes; unidad is the optional free-text unit name.
    clave_prod_serv     TEXT NOT NULL,
    clave_unidad        TEXT NOT NULL,
    unidad              TEXT,
    -- ValorUnitario, decimal text.
    valor_unitario      TEXT NOT NULL,
    -- c_ObjetoImp.
    objeto_imp          TEXT NOT NULL,
    -- IVA trasladado: '16', '8', '0', 'exento', or NULL (none).
    iva                 TEXT CHECK (iva IS NULL OR iva IN ('16', '8', '0', 'exento')),
    -- IEPS trasladado (Tasa), ISR and IVA retenidos: decimal rates (0.080000), or NULL.
    ieps_tasa           TEXT,
    ret_isr_tasa        TEXT,
    ret_iva_tasa        TEXT,
    created_at_ms       INTEGER NOT NULL,
    updated_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL
);

CREATE INDEX products_by_description ON products (descripcion);
