//! Signature verification against its ceiling, a bare HMAC-SHA256 loop, on a 1 KiB body.
//!
//! ```text
//! cargo bench -p stablecoin-webhooks --bench webhooks -- --warm-up-time 1 --measurement-time 3
//! ```

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use stablecoin_webhooks::Family;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let body = vec![b'x'; 1024];
    let secret = "whsec_9b8a7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b";
    let mut g = c.benchmark_group("signature_1KiB");
    g.throughput(Throughput::Elements(1));
    g.bench_function("bare_hmac_sha256", |b| {
        b.iter(|| {
            let mut m = <Hmac<Sha256> as Mac>::new_from_slice(black_box(secret.as_bytes()))
                .expect("any key length");
            m.update(black_box(&body));
            black_box(m.finalize().into_bytes())
        })
    });
    for family in [Family::Wallet, Family::Payments] {
        let header = family.sign(secret, &body);
        g.bench_function(format!("verify_{family:?}").to_lowercase(), |b| {
            b.iter(|| {
                family
                    .verify(
                        black_box(secret),
                        black_box(&body),
                        Some(black_box(&header)),
                    )
                    .expect("valid")
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
