//! The outbox's operations on its master data — customers and products (CRUD, search, CSV
//! import and export) — over the types and validation of [`crate::customers`] and
//! [`crate::products`], which stay free of the store so the store can name them.
//!
//! Submodules: `customers` and `products` (validated against SAT's catalogs) and `master_csv`
//! (their CSV import and export).

pub mod customers;
pub mod master_csv;
pub mod products;

mod customer_ops {
    use crate::actor::Actor;
    use crate::customers::*;
    use crate::error::{OutboxError, Result};
    use crate::master_csv::{self, CsvBadLine, CsvImport};
    use crate::outbox::Outbox;

    impl Outbox {
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
}

mod product_ops {
    use crate::actor::Actor;
    use crate::error::{OutboxError, Result};
    use crate::master_csv::{self, CsvBadLine, CsvImport};
    use crate::outbox::Outbox;
    use crate::products::*;

    impl Outbox {
        /// Every product (by SKU), or those matching `query` (see [`matches`]).
        pub async fn products(&self, query: Option<&str>) -> Result<Vec<Product>> {
            let all = self.store().products().await?;
            Ok(match query {
                Some(q) => all.into_iter().filter(|p| matches(p, q)).collect(),
                None => all,
            })
        }

        pub async fn product(&self, id: i64) -> Result<Product> {
            self.store().product(id).await?.ok_or_else(|| OutboxError::NotFound {
                what: "el producto",
                id: id.to_string(),
            })
        }

        /// Adds a product; refused (nothing written) when invalid or its SKU is another product's.
        pub async fn add_product(&self, input: &ProductInput, actor: &Actor) -> Result<Product> {
            let record = validate(input)?;
            self.check_sku(&record.sku, None).await?;
            let ids = self
                .store()
                .save_products(&[(None, record)], actor, self.now().timestamp_millis())
                .await?;
            let id = *ids
                .first()
                .ok_or_else(|| OutboxError::Database("save_products no devolvió el id".into()))?;
            self.product(id).await
        }

        /// Replaces product `id`'s data. Recorded sales keep the conceptos they were recorded with.
        pub async fn update_product(&self, id: i64, input: &ProductInput, actor: &Actor) -> Result<Product> {
            let record = validate(input)?;
            self.product(id).await?;
            self.check_sku(&record.sku, Some(id)).await?;
            self.store()
                .save_products(&[(Some(id), record)], actor, self.now().timestamp_millis())
                .await?;
            self.product(id).await
        }

        pub async fn delete_product(&self, id: i64, actor: &Actor) -> Result<()> {
            if !self.store().delete_product(id).await? {
                return Err(OutboxError::NotFound {
                    what: "el producto",
                    id: id.to_string(),
                });
            }
            tracing::info!(product = id, actor = %actor.name, "producto eliminado");
            Ok(())
        }

        async fn check_sku(&self, sku: &str, except: Option<i64>) -> Result<()> {
            if let Some(other) = self
                .store()
                .products()
                .await?
                .into_iter()
                .find(|p| Some(p.id) != except && p.sku == sku)
            {
                return Err(OutboxError::invalid(
                    "sku",
                    "duplicado",
                    format!("el SKU {sku} ya es del producto {:?}", other.descripcion),
                ));
            }
            Ok(())
        }

        /// Imports a products' CSV (see [`CSV_COLUMNS`]): good lines written in one transaction
        /// (the product with the same SKU updated, the others added), each bad field reported as
        /// `línea N: campo: motivo`. A file whose header is wrong imports nothing.
        pub async fn import_products_csv(&self, bytes: &[u8], actor: &Actor) -> Result<CsvImport> {
            let (rows, mut bad) =
                master_csv::read(bytes, &CSV_COLUMNS, &CSV_REQUIRED).map_err(|m| OutboxError::invalid("archivo", "formato", m))?;
            let existing = self.store().products().await?;
            let mut batch: Vec<(Option<i64>, ProductRecord)> = Vec::new();
            let mut seen: Vec<(String, u64)> = Vec::new();
            let (mut added, mut updated) = (0, 0);
            for row in rows {
                let record = match validate(&input_of_row(&row)) {
                    Ok(r) => r,
                    Err(e) => {
                        bad.extend(master_csv::bad_lines(row.line, e));
                        continue;
                    }
                };
                if let Some((_, first)) = seen.iter().find(|(s, _)| *s == record.sku) {
                    bad.push(CsvBadLine {
                        line: row.line,
                        field: "sku".into(),
                        message: format!("el SKU {} ya viene en la línea {first}", record.sku),
                    });
                    continue;
                }
                seen.push((record.sku.clone(), row.line));
                let id = existing.iter().find(|p| p.sku == record.sku).map(|p| p.id);
                if id.is_some() {
                    updated += 1;
                } else {
                    added += 1;
                }
                batch.push((id, record));
            }
            if !batch.is_empty() {
                self.store().save_products(&batch, actor, self.now().timestamp_millis()).await?;
            }
            bad.sort_by_key(|b| b.line);
            Ok(CsvImport {
                added,
                updated,
                bad_lines: bad,
            })
        }

        /// Every product as CSV, in the import's shape.
        pub async fn export_products_csv(&self) -> Result<String> {
            Ok(to_csv(&self.products(None).await?))
        }
    }
}
