//! Catalog search and lookup: the cost of one query once the catalog is loaded and indexed
//! (the target is under 5 ms per query over c_ClaveProdServ's 52k entries), and, printed once,
//! the one-time cost of loading and indexing and the memory it takes (VmRSS, Linux only).

use std::time::{Duration, Instant};

use cfdi::catalog::{self, Catalogo};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};

/// Resident memory of this process in KiB (Linux `/proc`), if it can be read.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn load_and_index_once() {
    let before = rss_kib();
    let t = Instant::now();
    for c in Catalogo::ALL {
        black_box(catalog::len(c));
    }
    let loaded = t.elapsed();
    let after_load = rss_kib();
    let t = Instant::now();
    for c in Catalogo::ALL {
        black_box(catalog::search(c, "a", 1));
    }
    let indexed = t.elapsed();
    let after_index = rss_kib();
    eprintln!("catalogs: decompress + parse all {loaded:?}, build every search index {indexed:?}");
    if let (Some(b), Some(l), Some(i)) = (before, after_load, after_index) {
        eprintln!(
            "catalogs: VmRSS +{} KiB after loading, +{} KiB more after indexing",
            l.saturating_sub(b),
            i.saturating_sub(l)
        );
    }
}

fn bench(c: &mut Criterion) {
    load_and_index_once();
    let mut g = c.benchmark_group("catalog_search");
    g.measurement_time(Duration::from_secs(3));
    let queries: &[(Catalogo, &str)] = &[
        (Catalogo::ClaveProdServ, "tortilla"),
        (Catalogo::ClaveProdServ, "TORTÍLLA"),
        (Catalogo::ClaveProdServ, "servicios de"),
        (Catalogo::ClaveProdServ, "a"),
        (Catalogo::ClaveProdServ, "5019"),
        (Catalogo::ClaveProdServ, "equipo medico desechable"),
        (Catalogo::CodigoPostal, "42"),
        (Catalogo::CodigoPostal, "pachuca"),
        (Catalogo::ClaveUnidad, "pieza"),
    ];
    for &(catalogo, q) in queries {
        g.bench_with_input(BenchmarkId::new(catalogo.name(), q), &q, |b, q| {
            b.iter(|| catalog::search(catalogo, black_box(q), 20))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("catalog_lookup");
    g.bench_function("c_ClaveProdServ", |b| b.iter(|| catalog::clave_prod_serv(black_box("50221300"))));
    g.bench_function("c_CodigoPostal", |b| b.iter(|| catalog::codigo_postal(black_box("42501"))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
