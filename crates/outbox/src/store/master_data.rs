//! Customers and products.
//!
//! Each operation is written once: its body runs on either database through [`on_dialect!`]
//! (SQL from `sql/<dialect>/`); a `match` on the backend appears only where the databases differ.

use super::any::{on_dialect, AnyStore};
use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::products::Iva;

impl AnyStore {
    /// Every customer, by name.
    pub async fn customers(&self) -> Result<Vec<crate::customers::Customer>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("master_data/customers"))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(customer_row).collect()
        })
    }

    pub async fn customer(&self, id: i64) -> Result<Option<crate::customers::Customer>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("master_data/customer_by_id"))
                .bind(id)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            row.as_ref().map(customer_row).transpose()
        })
    }

    /// Writes validated customers in **one** transaction: `(None, c)` inserts, `(Some(id), c)`
    /// replaces customer `id`. Returns the ids in order. A key another customer holds (the RFC,
    /// or RFC + name for the generic RFCs) fails the whole batch.
    pub async fn save_customers(
        &self,
        batch: &[(Option<i64>, crate::customers::CustomerRecord)],
        actor: &Actor,
        at_ms: i64,
    ) -> Result<Vec<i64>> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let mut ids = Vec::with_capacity(batch.len());
            for (id, c) in batch {
                let emails = serde_json::to_string(&c.emails).map_err(|e| OutboxError::Database(e.to_string()))?;
                match id {
                    None => {
                        let id: i64 = sqlx::query_scalar(sql!("master_data/insert_customer"))
                            .bind(&c.rfc)
                            .bind(&c.nombre)
                            .bind(&c.cp)
                            .bind(&c.regimen)
                            .bind(&c.uso)
                            .bind(&c.forma_pago)
                            .bind(&c.metodo_pago)
                            .bind(emails)
                            .bind(at_ms)
                            .bind(&actor.name)
                            .bind(actor.role.as_str())
                            .fetch_one(&mut *tx)
                            .await
                            .map_err(|e| db.err(e))?;
                        ids.push(id);
                    }
                    Some(id) => {
                        let done = sqlx::query(sql!("master_data/update_customer"))
                            .bind(id)
                            .bind(&c.rfc)
                            .bind(&c.nombre)
                            .bind(&c.cp)
                            .bind(&c.regimen)
                            .bind(&c.uso)
                            .bind(&c.forma_pago)
                            .bind(&c.metodo_pago)
                            .bind(emails)
                            .bind(at_ms)
                            .bind(&actor.name)
                            .bind(actor.role.as_str())
                            .execute(&mut *tx)
                            .await
                            .map_err(|e| db.err(e))?;
                        if done.rows_affected() != 1 {
                            return Err(OutboxError::NotFound {
                                what: "el cliente",
                                id: id.to_string(),
                            });
                        }
                        ids.push(*id);
                    }
                }
            }
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(ids)
        })
    }

    /// Deletes a customer; whether it existed.
    pub async fn delete_customer(&self, id: i64) -> Result<bool> {
        on_dialect!(self, |db| {
            let done = sqlx::query(sql!("master_data/delete_customer"))
                .bind(id)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Every product, by SKU.
    pub async fn products(&self) -> Result<Vec<crate::products::Product>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("master_data/products"))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(product_row).collect()
        })
    }

    pub async fn product(&self, id: i64) -> Result<Option<crate::products::Product>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("master_data/product_by_id"))
                .bind(id)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            row.as_ref().map(product_row).transpose()
        })
    }

    /// As [`AnyStore::save_customers`], for products (the SKU is unique).
    pub async fn save_products(
        &self,
        batch: &[(Option<i64>, crate::products::ProductRecord)],
        actor: &Actor,
        at_ms: i64,
    ) -> Result<Vec<i64>> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let mut ids = Vec::with_capacity(batch.len());
            for (id, p) in batch {
                let (ieps, ret_isr, ret_iva) = p.rates();
                let iva = p.iva.map(Iva::as_str);
                let precio = p.valor_unitario.to_string();
                match id {
                    None => {
                        let id: i64 = sqlx::query_scalar(sql!("master_data/insert_product"))
                            .bind(&p.sku)
                            .bind(&p.descripcion)
                            .bind(&p.clave_prod_serv)
                            .bind(&p.clave_unidad)
                            .bind(&p.unidad)
                            .bind(precio)
                            .bind(&p.objeto_imp)
                            .bind(iva)
                            .bind(ieps)
                            .bind(ret_isr)
                            .bind(ret_iva)
                            .bind(at_ms)
                            .bind(&actor.name)
                            .bind(actor.role.as_str())
                            .fetch_one(&mut *tx)
                            .await
                            .map_err(|e| db.err(e))?;
                        ids.push(id);
                    }
                    Some(id) => {
                        let done = sqlx::query(sql!("master_data/update_product"))
                            .bind(id)
                            .bind(&p.sku)
                            .bind(&p.descripcion)
                            .bind(&p.clave_prod_serv)
                            .bind(&p.clave_unidad)
                            .bind(&p.unidad)
                            .bind(precio)
                            .bind(&p.objeto_imp)
                            .bind(iva)
                            .bind(ieps)
                            .bind(ret_isr)
                            .bind(ret_iva)
                            .bind(at_ms)
                            .bind(&actor.name)
                            .bind(actor.role.as_str())
                            .execute(&mut *tx)
                            .await
                            .map_err(|e| db.err(e))?;
                        if done.rows_affected() != 1 {
                            return Err(OutboxError::NotFound {
                                what: "el producto",
                                id: id.to_string(),
                            });
                        }
                        ids.push(*id);
                    }
                }
            }
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(ids)
        })
    }

    /// Deletes a product; whether it existed.
    pub async fn delete_product(&self, id: i64) -> Result<bool> {
        on_dialect!(self, |db| {
            let done = sqlx::query(sql!("master_data/delete_product"))
                .bind(id)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(done.rows_affected() == 1)
        })
    }
}
