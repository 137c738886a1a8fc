//! The PostgreSQL side of the customers and products (master data): reads, one-transaction batch
//! writes, deletes. The [`super::Store`] methods of these tables delegate here.

use std::str::FromStr;

use rust_decimal::Decimal;
use sqlx::postgres::PgRow;

use super::{acted, get, instant, PgStore};
use crate::actor::Actor;
use crate::customers::{Customer, CustomerRecord};
use crate::error::{OutboxError, Result};
use crate::products::{Iva, Product, ProductRecord};

fn customer_row(r: &PgRow) -> Result<Customer> {
    let emails: String = get(r, "emails")?;
    Ok(Customer {
        id: get(r, "id")?,
        rfc: get(r, "rfc")?,
        nombre: get(r, "nombre")?,
        cp: get(r, "cp")?,
        regimen: get(r, "regimen")?,
        uso: get(r, "uso")?,
        forma_pago: get(r, "forma_pago")?,
        metodo_pago: get(r, "metodo_pago")?,
        emails: serde_json::from_str(&emails).map_err(|e| OutboxError::Database(format!("customers.emails: {e}")))?,
        updated_at: instant(get(r, "updated_at_ms")?)?.to_rfc3339(),
        updated_by: acted(r, "actor", "actor_role")?,
    })
}

fn product_row(r: &PgRow) -> Result<Product> {
    let iva: Option<String> = get(r, "iva")?;
    let precio: String = get(r, "valor_unitario")?;
    Decimal::from_str(&precio).map_err(|e| OutboxError::Database(format!("products.valor_unitario {precio:?}: {e}")))?;
    Ok(Product {
        id: get(r, "id")?,
        sku: get(r, "sku")?,
        descripcion: get(r, "descripcion")?,
        clave_prod_serv: get(r, "clave_prod_serv")?,
        clave_unidad: get(r, "clave_unidad")?,
        unidad: get(r, "unidad")?,
        precio,
        objeto_imp: get(r, "objeto_imp")?,
        iva: iva
            .map(|v| Iva::parse(&v).ok_or_else(|| OutboxError::Database(format!("products.iva {v:?}"))))
            .transpose()?,
        ieps: get(r, "ieps_tasa")?,
        ret_isr: get(r, "ret_isr_tasa")?,
        ret_iva: get(r, "ret_iva_tasa")?,
        updated_at: instant(get(r, "updated_at_ms")?)?.to_rfc3339(),
        updated_by: acted(r, "actor", "actor_role")?,
    })
}

impl PgStore {
    pub(super) async fn customers_impl(&self) -> Result<Vec<Customer>> {
        let rows = sqlx::query(sql!("master_data/customers"))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(customer_row).collect()
    }

    pub(super) async fn customer_impl(&self, id: i64) -> Result<Option<Customer>> {
        let row = sqlx::query(sql!("master_data/customer_by_id"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        row.as_ref().map(customer_row).transpose()
    }

    pub(super) async fn save_customers_impl(&self, batch: &[(Option<i64>, CustomerRecord)], actor: &Actor, at_ms: i64) -> Result<Vec<i64>> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
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
                        .map_err(|e| self.err(e))?;
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
                        .map_err(|e| self.err(e))?;
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
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(ids)
    }

    pub(super) async fn delete_customer_impl(&self, id: i64) -> Result<bool> {
        let done = sqlx::query(sql!("master_data/delete_customer"))
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(done.rows_affected() == 1)
    }

    pub(super) async fn products_impl(&self) -> Result<Vec<Product>> {
        let rows = sqlx::query(sql!("master_data/products"))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(product_row).collect()
    }

    pub(super) async fn product_impl(&self, id: i64) -> Result<Option<Product>> {
        let row = sqlx::query(sql!("master_data/product_by_id"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        row.as_ref().map(product_row).transpose()
    }

    pub(super) async fn save_products_impl(&self, batch: &[(Option<i64>, ProductRecord)], actor: &Actor, at_ms: i64) -> Result<Vec<i64>> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
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
                        .map_err(|e| self.err(e))?;
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
                        .map_err(|e| self.err(e))?;
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
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(ids)
    }

    pub(super) async fn delete_product_impl(&self, id: i64) -> Result<bool> {
        let done = sqlx::query(sql!("master_data/delete_product"))
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(done.rows_affected() == 1)
    }
}
