//! `stablecoin-server`: see `stablecoin-server --help` and the crate README.

/// mimalloc rather than glibc's malloc: in the webhook deliveries benchmark glibc spent
/// ~15% of the CPU freeing and coalescing the JSON strings of stored records, and
/// mimalloc took SQLite deliveries from ~4.2k/s to ~6k/s (BENCHMARKS.md). The HTTP load
/// numbers did not move. The library crates leave the choice to the embedding binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    let code = stablecoin_server::cli::main().await;
    std::process::exit(code);
}
