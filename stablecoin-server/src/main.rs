//! `stablecoin-server`: see `stablecoin-server --help` and the crate README.

/// mimalloc rather than glibc's malloc: under load glibc spent ~15% of the CPU freeing
/// and coalescing the JSON strings of stored records (BENCHMARKS.md). The library leaves
/// the choice to the embedding binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    let code = stablecoin_server::cli::main().await;
    std::process::exit(code);
}
