//! Customers (clientes): the receptores an invoice is issued to, with their defaults — RFC,
//! exact legal name, código postal, régimen, default uso CFDI, forma and método de pago,
//! e-mails. Validation against SAT's catalogs ([`validate`]), CRUD, search, CSV import and
//! export (`rfc,nombre,cp,regimen,uso,forma_pago,metodo_pago,email`).
//!
//! Rules (each failure names its field, in the CSV/CLI column names, and writes nothing):
//! - `rfc`: upper-cased; the shape of SAT's `t_RFC` (12 characters: persona moral, 13: física);
//!   the generic XAXX010101000 (público en general) and XEXX010101000 (extranjero) are allowed;
//! - `nombre`: required, at most 254 characters, kept as typed (SAT compares it with its records);
//! - `cp`: a member of c_CodigoPostal;
//! - `regimen`: a member of c_RegimenFiscal that applies to the persona the RFC's length says;
//!   616 with a generic RFC;
//! - `uso` (optional): a member of c_UsoCFDI for that persona and allowed with that régimen; S01
//!   with a generic RFC;
//! - `forma_pago`, `metodo_pago` (optional): members of c_FormaPago and c_MetodoPago; PPD goes
//!   with forma 99;
//! - `email`: addresses separated by `;` or `,`, each `local@dominio`.
//!
//! The key: an RFC names one customer, except the two generic RFCs, shared by many customers told
//! apart by name. A CSV import updates the customer with the same key and adds the rest.
//!
//! Master data, not fiscal facts: a customer may be edited or deleted at any time. A recorded
//! sale carries its own copy of the receptor (immutable), so no edit reaches it.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use cfdi::catalog::{self, Persona, RFC_EXTRANJERO, RFC_PUBLICO_EN_GENERAL};
use cfdi::validation::{FieldError, ValidationErrors};

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::master_csv::{self, CsvBadLine, CsvImport};
use crate::model::ActedBy;
use crate::outbox::Outbox;
use crate::store::Store;

/// The columns of the customers' CSV, in order.
pub const CSV_COLUMNS: [&str; 8] = ["rfc", "nombre", "cp", "regimen", "uso", "forma_pago", "metodo_pago", "email"];
const CSV_REQUIRED: [&str; 4] = ["rfc", "nombre", "cp", "regimen"];

/// Longest legal name (the receptor's Nombre in CFDI 4.0).
pub const MAX_NOMBRE: usize = 254;
/// At most this many e-mail addresses per customer.
pub const MAX_EMAILS: usize = 10;

/// A customer as typed (a form, a CSV line, the CLI's flags): loose text, checked by [`validate`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(optional_fields = nullable)]
pub struct CustomerInput {
    pub rfc: String,
    pub nombre: String,
    pub cp: String,
    pub regimen: String,
    #[serde(default)]
    pub uso: Option<String>,
    #[serde(default)]
    pub forma_pago: Option<String>,
    #[serde(default)]
    pub metodo_pago: Option<String>,
    #[serde(default)]
    pub emails: Vec<String>,
}

/// A validated customer: what is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomerRecord {
    pub rfc: String,
    pub nombre: String,
    pub cp: String,
    pub regimen: String,
    pub uso: Option<String>,
    pub forma_pago: Option<String>,
    pub metodo_pago: Option<String>,
    pub emails: Vec<String>,
}

impl CustomerRecord {
    /// Whether the RFC is one of SAT's generic RFCs (shared by many customers).
    pub fn generic(&self) -> bool {
        is_generic(&self.rfc)
    }

    /// The key two records of the same customer share.
    fn key(&self) -> (String, Option<String>) {
        (self.rfc.clone(), self.generic().then(|| self.nombre.clone()))
    }
}

/// A stored customer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct Customer {
    pub id: i64,
    pub rfc: String,
    pub nombre: String,
    pub cp: String,
    pub regimen: String,
    pub uso: Option<String>,
    pub forma_pago: Option<String>,
    pub metodo_pago: Option<String>,
    pub emails: Vec<String>,
    /// RFC 3339.
    pub updated_at: String,
    pub updated_by: ActedBy,
}

impl Customer {
    pub fn record(&self) -> CustomerRecord {
        CustomerRecord {
            rfc: self.rfc.clone(),
            nombre: self.nombre.clone(),
            cp: self.cp.clone(),
            regimen: self.regimen.clone(),
            uso: self.uso.clone(),
            forma_pago: self.forma_pago.clone(),
            metodo_pago: self.metodo_pago.clone(),
            emails: self.emails.clone(),
        }
    }
}

fn is_generic(rfc: &str) -> bool {
    rfc == RFC_PUBLICO_EN_GENERAL || rfc == RFC_EXTRANJERO
}

fn trimmed(v: &Option<String>) -> Option<String> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

/// Splits an `email` cell (`a@x.mx; b@y.mx`) into addresses.
pub fn split_emails(cell: &str) -> Vec<String> {
    cell.split([';', ','])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether `s` looks like an e-mail address: one `@`, something before it, a dotted domain
/// after it, no spaces or control characters.
pub fn email_valido(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && local.len() <= 64
        && s.len() <= 254
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains("..")
        && s.chars()
            .all(|c| !c.is_whitespace() && !c.is_control() && !matches!(c, '<' | '>' | '"' | '(' | ')' | ',' | ';'))
}

/// Checks a customer against SAT's catalogs (see the module docs); every problem names its field.
pub fn validate(input: &CustomerInput) -> std::result::Result<CustomerRecord, ValidationErrors> {
    let mut errors = Vec::new();
    let mut err = |field: &str, code: &'static str, message: String| errors.push(FieldError::new(field, code, message));

    let rfc = input.rfc.trim().to_uppercase();
    let persona = if rfc.is_empty() {
        err("rfc", "requerido", "falta el RFC".into());
        None
    } else {
        let p = catalog::rfc_persona(&rfc);
        if p.is_none() {
            err(
                "rfc",
                "rfc_invalido",
                format!("{rfc:?} no tiene la forma de un RFC (12 caracteres persona moral, 13 persona física)"),
            );
        }
        p
    };
    let generic = is_generic(&rfc);

    let nombre = input.nombre.trim().to_string();
    if nombre.is_empty() {
        err(
            "nombre",
            "requerido",
            "falta el nombre o razón social (exacto, como en la constancia del SAT)".into(),
        );
    } else if nombre.chars().count() > MAX_NOMBRE {
        err(
            "nombre",
            "longitud",
            format!("tiene {} caracteres; el máximo es {MAX_NOMBRE}", nombre.chars().count()),
        );
    } else if nombre.chars().any(char::is_control) {
        err("nombre", "texto_invalido", "contiene caracteres de control".into());
    }

    let cp = input.cp.trim().to_string();
    if cp.is_empty() {
        err("cp", "requerido", "falta el código postal del domicilio fiscal".into());
    } else if !catalog::codigo_postal_valido(&cp) {
        err("cp", "codigo_postal", format!("{cp:?} no es un código postal (5 dígitos)"));
    } else if catalog::codigo_postal(&cp).is_none() {
        err(
            "cp",
            "catalogo",
            format!("el código postal {cp} no existe en el catálogo c_CodigoPostal del SAT"),
        );
    }

    let regimen = input.regimen.trim().to_string();
    if regimen.is_empty() {
        err("regimen", "requerido", "falta el régimen fiscal".into());
    } else {
        match catalog::regimen_fiscal(&regimen) {
            None => err(
                "regimen",
                "catalogo",
                format!("el régimen {regimen} no existe en el catálogo c_RegimenFiscal del SAT"),
            ),
            Some(_) if generic && regimen != "616" => err(
                "regimen",
                "combinacion",
                format!("con el RFC genérico {rfc} el régimen debe ser 616 (Sin obligaciones fiscales)"),
            ),
            Some(r) if !r.fisica && !r.moral => err("regimen", "catalogo", format!("el régimen {regimen} ya no se usa en CFDI 4.0")),
            Some(r) => match persona {
                Some(Persona::Fisica) if !r.fisica && !generic => err(
                    "regimen",
                    "combinacion",
                    format!("el régimen {regimen} no aplica a personas físicas (RFC de 13 caracteres)"),
                ),
                Some(Persona::Moral) if !r.moral => err(
                    "regimen",
                    "combinacion",
                    format!("el régimen {regimen} no aplica a personas morales (RFC de 12 caracteres)"),
                ),
                _ => {}
            },
        }
    }

    let uso = trimmed(&input.uso).map(|u| u.to_uppercase());
    if let Some(code) = &uso {
        match catalog::uso_cfdi(code) {
            None => err(
                "uso",
                "catalogo",
                format!("el uso {code} no existe en el catálogo c_UsoCFDI del SAT"),
            ),
            Some(_) if generic && code != "S01" => err(
                "uso",
                "combinacion",
                format!("con el RFC genérico {rfc} el uso debe ser S01 (Sin efectos fiscales)"),
            ),
            Some(u) => {
                match persona {
                    Some(Persona::Fisica) if !u.fisica => err("uso", "combinacion", format!("el uso {code} no aplica a personas físicas")),
                    Some(Persona::Moral) if !u.moral => err("uso", "combinacion", format!("el uso {code} no aplica a personas morales")),
                    _ => {}
                }
                if catalog::regimen_fiscal(&regimen).is_some() && !u.regimenes_receptor.contains(&regimen.as_str()) {
                    err(
                        "uso",
                        "combinacion",
                        format!("el uso {code} no se permite con el régimen {regimen}"),
                    );
                }
            }
        }
    }

    let forma_pago = trimmed(&input.forma_pago);
    if let Some(code) = &forma_pago {
        if catalog::forma_pago(code).is_none() {
            err(
                "forma_pago",
                "catalogo",
                format!("la forma de pago {code} no existe en el catálogo c_FormaPago del SAT"),
            );
        }
    }
    let metodo_pago = trimmed(&input.metodo_pago).map(|m| m.to_uppercase());
    if let Some(code) = &metodo_pago {
        if catalog::metodo_pago(code).is_none() {
            err(
                "metodo_pago",
                "catalogo",
                format!("el método de pago {code} no existe en c_MetodoPago (PUE o PPD)"),
            );
        } else if code == "PPD" && forma_pago.as_deref().is_some_and(|f| f != "99") {
            err(
                "forma_pago",
                "combinacion",
                "con método de pago PPD la forma de pago es 99 (Por definir)".into(),
            );
        }
    }

    let emails: Vec<String> = input.emails.iter().flat_map(|e| split_emails(e)).collect();
    if emails.len() > MAX_EMAILS {
        err("email", "rango", format!("son {} correos; el máximo es {MAX_EMAILS}", emails.len()));
    }
    for e in &emails {
        if !email_valido(e) {
            err("email", "formato", format!("{e:?} no es una dirección de correo"));
        }
    }

    if !errors.is_empty() {
        return Err(ValidationErrors(errors));
    }
    Ok(CustomerRecord {
        rfc,
        nombre,
        cp,
        regimen,
        uso,
        forma_pago,
        metodo_pago,
        emails,
    })
}

/// Whether `c` matches a search: words (accent- and case-insensitive) of its name, or the start
/// of its RFC. An empty query matches everything.
pub fn matches(c: &Customer, query: &str) -> bool {
    let q = query.trim();
    if q.is_empty() {
        return true;
    }
    if c.rfc.starts_with(&q.to_uppercase()) {
        return true;
    }
    let name = catalog::normalize(&c.nombre);
    let words: Vec<&str> = name.split(' ').collect();
    catalog::normalize(q).split(' ').all(|w| words.iter().any(|n| n.starts_with(w)))
}

fn input_of_row(row: &master_csv::CsvRow) -> CustomerInput {
    CustomerInput {
        rfc: row.get("rfc").to_string(),
        nombre: row.get("nombre").to_string(),
        cp: row.get("cp").to_string(),
        regimen: row.get("regimen").to_string(),
        uso: row.opt("uso"),
        forma_pago: row.opt("forma_pago"),
        metodo_pago: row.opt("metodo_pago"),
        emails: split_emails(row.get("email")),
    }
}

/// The customers as CSV (the import's columns; e-mails joined by `;`).
pub fn to_csv(customers: &[Customer]) -> String {
    master_csv::write(
        &CSV_COLUMNS,
        customers.iter().map(|c| {
            vec![
                c.rfc.clone(),
                c.nombre.clone(),
                c.cp.clone(),
                c.regimen.clone(),
                c.uso.clone().unwrap_or_default(),
                c.forma_pago.clone().unwrap_or_default(),
                c.metodo_pago.clone().unwrap_or_default(),
                c.emails.join(";"),
            ]
        }),
    )
}

impl<S: Store> Outbox<S> {
    /// Every customer (by name), or those matching `query` (see [`matches`]).
    pub async fn customers(&self, query: Option<&str>) -> Result<Vec<Customer>> {
        let all = self.store().customers().await?;
        Ok(match query {
            Some(q) => all.into_iter().filter(|c| matches(c, q)).collect(),
            None => all,
        })
    }

    pub async fn customer(&self, id: i64) -> Result<Customer> {
        self.store().customer(id).await?.ok_or_else(|| OutboxError::NotFound {
            what: "el cliente",
            id: id.to_string(),
        })
    }

    /// Adds a customer. Refused (nothing written) when invalid or when its key (the RFC; for a
    /// generic RFC, RFC and name) is another customer's.
    pub async fn add_customer(&self, input: &CustomerInput, actor: &Actor) -> Result<Customer> {
        let record = validate(input)?;
        self.check_customer_key(&record, None).await?;
        let ids = self
            .store()
            .save_customers(&[(None, record)], actor, self.now().timestamp_millis())
            .await?;
        let id = *ids
            .first()
            .ok_or_else(|| OutboxError::Database("save_customers no devolvió el id".into()))?;
        self.customer(id).await
    }

    /// Replaces customer `id`'s data. Recorded sales keep the receptor they were recorded with.
    pub async fn update_customer(&self, id: i64, input: &CustomerInput, actor: &Actor) -> Result<Customer> {
        let record = validate(input)?;
        self.customer(id).await?;
        self.check_customer_key(&record, Some(id)).await?;
        self.store()
            .save_customers(&[(Some(id), record)], actor, self.now().timestamp_millis())
            .await?;
        self.customer(id).await
    }

    /// Deletes customer `id` (sales recorded for it keep their copy of the receptor).
    pub async fn delete_customer(&self, id: i64, actor: &Actor) -> Result<()> {
        if !self.store().delete_customer(id).await? {
            return Err(OutboxError::NotFound {
                what: "el cliente",
                id: id.to_string(),
            });
        }
        tracing::info!(customer = id, actor = %actor.name, "cliente eliminado");
        Ok(())
    }

    async fn check_customer_key(&self, record: &CustomerRecord, except: Option<i64>) -> Result<()> {
        let key = record.key();
        if let Some(other) = self
            .store()
            .customers()
            .await?
            .into_iter()
            .find(|c| Some(c.id) != except && c.record().key() == key)
        {
            let (field, what) = if record.generic() {
                (
                    "nombre",
                    format!("ya hay un cliente {} con el RFC genérico {}", other.nombre, other.rfc),
                )
            } else {
                ("rfc", format!("el RFC {} ya es del cliente {:?}", other.rfc, other.nombre))
            };
            return Err(OutboxError::invalid(field, "duplicado", what));
        }
        Ok(())
    }

    /// Imports a customers' CSV (see [`CSV_COLUMNS`]): every good line is written — the customer
    /// with the same key updated, the others added — in one transaction; every bad field of a bad
    /// line is reported as `línea N: campo: motivo`. A file whose header is wrong imports nothing.
    pub async fn import_customers_csv(&self, bytes: &[u8], actor: &Actor) -> Result<CsvImport> {
        let (rows, mut bad) =
            master_csv::read(bytes, &CSV_COLUMNS, &CSV_REQUIRED).map_err(|m| OutboxError::invalid("archivo", "formato", m))?;
        let existing = self.store().customers().await?;
        let mut batch: Vec<(Option<i64>, CustomerRecord)> = Vec::new();
        let mut seen: Vec<((String, Option<String>), u64)> = Vec::new();
        let (mut added, mut updated) = (0, 0);
        for row in rows {
            let record = match validate(&input_of_row(&row)) {
                Ok(r) => r,
                Err(e) => {
                    bad.extend(master_csv::bad_lines(row.line, e));
                    continue;
                }
            };
            let key = record.key();
            if let Some((_, first)) = seen.iter().find(|(k, _)| *k == key) {
                bad.push(CsvBadLine {
                    line: row.line,
                    field: if record.generic() { "nombre" } else { "rfc" }.into(),
                    message: format!("el mismo cliente ya viene en la línea {first}"),
                });
                continue;
            }
            seen.push((key.clone(), row.line));
            let id = existing.iter().find(|c| c.record().key() == key).map(|c| c.id);
            if id.is_some() {
                updated += 1;
            } else {
                added += 1;
            }
            batch.push((id, record));
        }
        if !batch.is_empty() {
            self.store().save_customers(&batch, actor, self.now().timestamp_millis()).await?;
        }
        bad.sort_by_key(|b| b.line);
        Ok(CsvImport {
            added,
            updated,
            bad_lines: bad,
        })
    }

    /// Every customer as CSV, in the import's shape (an export imports back to the same list).
    pub async fn export_customers_csv(&self) -> Result<String> {
        Ok(to_csv(&self.customers(None).await?))
    }
}
