//! Time to render one stamped CFDI as PDF: a one-concepto factura, a Pagos 2.0 recibo, a
//! 300-concepto factura (18 pages). The documents are stamped by the PAC simulator first,
//! outside the measurement.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pdf::RenderOptions;

fn bench(c: &mut Criterion) {
    let docs = [
        ("factura", common::ingreso()),
        ("pago", common::pago()),
        ("factura-300-conceptos", common::many(300)),
    ];
    let mut g = c.benchmark_group("pdf");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    g.throughput(Throughput::Elements(1));
    for (name, xml) in &docs {
        for sandbox in [false, true] {
            let id = BenchmarkId::new(if sandbox { "render-sandbox" } else { "render" }, name);
            let opts = RenderOptions { sandbox, logo: None };
            g.bench_function(id, |b| {
                b.iter(|| std::hint::black_box(pdf::render(xml.as_bytes(), &opts).expect("renders")))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
