//! `stablecoin-server`: see `stablecoin-server --help` and the crate README.

#[tokio::main]
async fn main() {
    let code = stablecoin_server::cli::main().await;
    std::process::exit(code);
}
