//! Per-document cost of the CFDI core: the cadena (straight from the bytes, and through the owned
//! tree), cadena + sello, and a whole sale built and sealed. `make bench` compares them with
//! `xsltproc` + `openssl` and python-satcfdi on the same files (scripts/bench-cfdi-baseline).

use std::path::PathBuf;
use std::time::Duration;

use cfdi::csd::Csd;
use cfdi::sale::{EmisorProfile, Sale};
use cfdi::secret::Secret;
use cfdi::xml::Document;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn csd() -> Csd {
    let c = fixtures().join("cfdi/certs");
    let read = |name: &str| std::fs::read(c.join(name)).unwrap();
    Csd::load(&read("EKU9003173C9.cer"), &read("EKU9003173C9.key"), &Secret::new("12345678a")).unwrap()
}

/// The sample documents the baseline script also uses (see scripts/bench-cfdi-baseline).
fn samples() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(fixtures().join("cfdi/samples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    out.sort();
    out
}

fn bench(c: &mut Criterion) {
    let csd = csd();
    let docs = samples();

    let mut g = c.benchmark_group("cfdi");
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(2));
    g.sample_size(30);
    g.throughput(Throughput::Elements(docs.len() as u64));
    // What `timbra cfdi cadena` does in process: bytes → view → cadena.
    g.bench_function(BenchmarkId::new("cadena-xml", "5-samples"), |b| {
        b.iter(|| {
            for (_, bytes) in &docs {
                std::hint::black_box(cfdi::cadena::cadena_original_xml(bytes).unwrap());
            }
        })
    });
    // Through the owned tree (what sealing and verifying a parsed document do).
    g.bench_function(BenchmarkId::new("cadena", "5-samples"), |b| {
        b.iter(|| {
            for (_, bytes) in &docs {
                let doc = Document::parse(bytes).unwrap();
                std::hint::black_box(cfdi::cadena::cadena_original(&doc).unwrap());
            }
        })
    });
    g.bench_function(BenchmarkId::new("parse", "5-samples"), |b| {
        b.iter(|| {
            for (_, bytes) in &docs {
                std::hint::black_box(Document::parse(bytes).unwrap());
            }
        })
    });
    g.bench_function(BenchmarkId::new("cadena+sello", "5-samples"), |b| {
        b.iter(|| {
            for (_, bytes) in &docs {
                let cadena = cfdi::cadena::cadena_original_xml(bytes).unwrap();
                std::hint::black_box(csd.sello(&cadena));
            }
        })
    });
    let sale = Sale::from_json(&std::fs::read(fixtures().join("sales/ingreso-pedido-4471.json")).unwrap()).unwrap();
    let emisor = EmisorProfile {
        rfc: "EKU9003173C9".into(),
        nombre: "ESCUELA KEMPER URGATE".into(),
        regimen_fiscal: "601".into(),
        lugar_expedicion: "42501".into(),
    };
    g.throughput(Throughput::Elements(1));
    g.bench_function(BenchmarkId::new("build+seal+xml", "ingreso"), |b| {
        b.iter(|| {
            let built = cfdi::build(&sale, &emisor, sale.occurred_at.0, Some(&csd)).unwrap();
            std::hint::black_box(built.to_xml());
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
