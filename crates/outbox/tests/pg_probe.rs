//! The console's *Probar conexión* (`store::postgres::probe`): one connection to a PostgreSQL
//! database, reading what opening it would find and changing nothing — an empty database, one
//! with Timbra's schema, a missing one (never created by the check), another program's tables.
//! PostgreSQL only by nature: it checks a server (a SQLite file is opened, not probed).

mod common;

use outbox::store::postgres::{probe, PgOptions};
use outbox::{Outbox, OutboxError};
use sqlx::Connection;

/// A database name of this test's own on the test server, dropped at the end.
struct Scratch {
    name: String,
    url: String,
}

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let admin = common::pg_admin_url();
        let name = format!("timbra_probe_{tag}_{}", std::process::id());
        let url = match admin.rsplit_once('/') {
            Some((server, _)) => format!("{server}/{name}"),
            None => panic!("{}: falta /BASE", common::PG_ADMIN_URL_ENV),
        };
        Scratch { name, url }
    }

    async fn admin(&self, sql: &str) {
        let mut c = sqlx::PgConnection::connect(&common::pg_admin_url())
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL no responde ({e}); las pruebas de PostgreSQL no se saltan"));
        sqlx::raw_sql(sql).execute(&mut c).await.expect(sql);
        let _ = c.close().await;
    }

    async fn exists(&self) -> bool {
        let mut c = sqlx::PgConnection::connect(&common::pg_admin_url()).await.expect("admin");
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM pg_database WHERE datname = $1")
            .bind(&self.name)
            .fetch_one(&mut c)
            .await
            .expect("pg_database");
        n == 1
    }

    async fn drop_it(&self) {
        self.admin(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)).await;
    }
}

#[tokio::test]
async fn the_connection_check_reads_the_database_and_changes_nothing() {
    let db = Scratch::new("a");
    db.drop_it().await;
    let opts = PgOptions::new(db.url.clone()).acquire_timeout(std::time::Duration::from_secs(5));

    // Missing: named as such, and the check does not create it.
    let missing = probe(&opts).await.unwrap_err();
    assert!(matches!(missing, OutboxError::DatabaseMissing { .. }), "{missing:?}");
    assert_eq!(missing.code(), "db_missing");
    assert!(!db.exists().await, "a check never creates a database");

    // Empty: Timbra would create its tables.
    db.admin(&format!("CREATE DATABASE {} ENCODING 'UTF8' TEMPLATE template0", db.name))
        .await;
    let empty = probe(&opts).await.unwrap();
    assert_eq!(empty.schema_version, None);
    assert!(!empty.server_version.is_empty());
    assert!(empty.location.ends_with(&format!("/{}", db.name)), "{}", empty.location);
    assert!(empty.latest_version >= 7);
    let tables: i64 = {
        let mut c = sqlx::PgConnection::connect(&db.url).await.unwrap();
        sqlx::query_scalar("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'")
            .fetch_one(&mut c)
            .await
            .unwrap()
    };
    assert_eq!(tables, 0, "nothing migrated by the check");

    // Opened by Timbra (without `create`: it exists): the check sees the schema up to date.
    let outbox = Outbox::open_postgres(&opts, common::running_clock()).await.unwrap();
    outbox.store().close().await;
    let ours = probe(&opts).await.unwrap();
    assert_eq!(ours.schema_version, Some(ours.latest_version));
    db.drop_it().await;

    // Another program's tables: refused as opening would refuse them.
    let other = Scratch::new("b");
    other.drop_it().await;
    other
        .admin(&format!("CREATE DATABASE {} ENCODING 'UTF8' TEMPLATE template0", other.name))
        .await;
    {
        let mut c = sqlx::PgConnection::connect(&other.url).await.unwrap();
        sqlx::raw_sql("CREATE TABLE clientes (id INT)").execute(&mut c).await.unwrap();
        let _ = c.close().await;
    }
    let foreign = probe(&PgOptions::new(other.url.clone())).await.unwrap_err();
    assert!(matches!(foreign, OutboxError::DatabaseCorrupt { .. }), "{foreign:?}");
    other.drop_it().await;

    // Nobody listening: unavailable, with the place named and no password in it.
    let down = probe(&PgOptions::new("postgres://timbra@127.0.0.1:1/timbra").password(Some(cfdi::secret::Secret::new("s3cr3t"))))
        .await
        .unwrap_err();
    assert_eq!(down.code(), "db_unavailable", "{down:?}");
    assert!(!format!("{down} {down:?}").contains("s3cr3t"));
}

/// Opening a server that refuses connections says so at once — never "locked by another
/// process" after waiting out the pool's timeout (what the pool alone reports).
#[tokio::test]
async fn opening_a_server_nobody_listens_on_is_unavailable_not_locked() {
    let started = std::time::Instant::now();
    let opts = PgOptions::new("postgres://timbra@127.0.0.1:1/timbra").acquire_timeout(std::time::Duration::from_secs(5));
    let e = Outbox::open_postgres(&opts, common::running_clock()).await.err().expect("refused");
    assert_eq!(e.code(), "db_unavailable", "{e:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(4), "{:?}", started.elapsed());
}
