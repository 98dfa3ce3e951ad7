//! `stablecoin-signer serve`: the signing service (see the crate's README).

use clap::{Parser, Subcommand};
use stablecoin_signer::files::{read_seed_file, read_token_file};
use stablecoin_signer::service::{SignerService, bind, serve};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// The signing service of the stablecoin server: holds the master seed, signs by key
/// purpose over authenticated HTTP.
#[derive(Parser)]
#[command(name = "stablecoin-signer", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serves the signing protocol until SIGINT/SIGTERM.
    Serve {
        /// Where to listen: a loopback or private address.
        #[arg(
            long,
            env = "STABLECOIN_SIGNER_LISTEN",
            default_value = "127.0.0.1:7300"
        )]
        listen: SocketAddr,
        /// The master seed: 64 hexadecimal characters, mode 0600.
        #[arg(long, env = "STABLECOIN_SIGNER_SEED_FILE")]
        seed_file: PathBuf,
        /// The shared token (at least 32 characters), mode 0600.
        #[arg(long, env = "STABLECOIN_SIGNER_TOKEN_FILE")]
        token_file: PathBuf,
        /// Allow an address that is neither loopback nor private (not recommended).
        #[arg(long)]
        allow_public_listen: bool,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("STABLECOIN_SIGNER_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .init();
    let Command::Serve {
        listen,
        seed_file,
        token_file,
        allow_public_listen,
    } = Cli::parse().command;
    let run = async {
        let seed = read_seed_file(&seed_file)?;
        let token = read_token_file(&token_file)?;
        let service = SignerService::new(seed, &token)?;
        let listener = bind(listen, allow_public_listen).await?;
        tracing::info!(listen = %listener.local_addr().unwrap_or(listen), "signing service listening");
        serve(listener, &service, shutdown_signal())
            .await
            .map_err(|e| stablecoin_signer::Error::Unavailable(e.to_string()))
    };
    match run.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stablecoin-signer: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
