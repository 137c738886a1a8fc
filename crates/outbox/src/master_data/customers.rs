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

use crate::master_csv;
use crate::model::ActedBy;

/// The columns of the customers' CSV, in order.
pub const CSV_COLUMNS: [&str; 8] = ["rfc", "nombre", "cp", "regimen", "uso", "forma_pago", "metodo_pago", "email"];
pub(crate) const CSV_REQUIRED: [&str; 4] = ["rfc", "nombre", "cp", "regimen"];

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
    pub(crate) fn key(&self) -> (String, Option<String>) {
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

pub(crate) fn input_of_row(row: &master_csv::CsvRow) -> CustomerInput {
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
