//! Key custody of the API process: where the signer and the two symmetric keys (the
//! one-time-code hashing key and the webhook-secret sealing key) come from.
//!
//! - `signer.kind = "local"` (development): the master seed is `master_seed` /
//!   `STABLECOIN_MASTER_SEED` when set. Otherwise, on durable storage, it is read from
//!   `<data_dir>/master_seed.hex`, which is generated once (32 random bytes, file mode
//!   0600) on first start, so every key derives the same after a restart; keep that file
//!   with the database and back it up. On memory storage nothing survives a restart
//!   anyway, so an ephemeral seed is generated in memory and no file is written. The
//!   seed is never logged.
//! - `signer.kind = "remote"`: the signing service (`stablecoin-signer`) holds the seed.
//!   This process signs through [`RemoteSigner`], fetches the two symmetric keys from the
//!   service once at start (`POST /v1/derive-key`) and keeps them in memory only; it
//!   never reads or writes a seed file. The keys are the ones a local seed would derive,
//!   so a deployment that moves its seed into the service keeps its addresses, its
//!   pending codes and its sealed webhook secrets.

use crate::config::{Config, SignerSettings, parse_seed};
use crate::error::StartupError;
use stablecoin_core::domain::otp::CodeKey;
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::Signer;
use stablecoin_signer::RemoteSigner;
use stablecoin_signer::protocol::{
    CONSOLE_SESSION_KEY_LABEL, OTP_CODE_KEY_LABEL, WEBHOOK_SECRET_KEY_LABEL,
};
use stablecoin_webhooks::secret_box::SecretKey;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The keys the API process works with.
pub struct Custody {
    /// Signs transactions and gives addresses.
    pub signer: Arc<dyn Signer>,
    /// Hashes one-time codes.
    pub code_key: CodeKey,
    /// Seals webhook endpoint secrets.
    pub webhook_key: SecretKey,
    /// Signs the web consoles' session cookies and CSRF tokens (`crate::pages::session`).
    pub session_key: [u8; 32],
}

impl Custody {
    /// The custody of `config.signer` (see the module documentation). `durable`: the
    /// storage survives a restart (a local seed must too).
    pub async fn build(config: &Config, durable: bool) -> Result<Custody, StartupError> {
        match &config.signer {
            SignerSettings::Local => {
                let seed = load_master_seed(config, durable)?;
                Ok(Custody {
                    signer: Arc::new(LocalSigner::from_seed(seed)),
                    code_key: CodeKey::from_master_seed(&seed),
                    webhook_key: SecretKey::from_master_seed(&seed),
                    session_key: hmac_label(&seed, CONSOLE_SESSION_KEY_LABEL),
                })
            }
            SignerSettings::Remote {
                url,
                token,
                timeout_ms,
            } => {
                let remote =
                    RemoteSigner::new(url, token.expose(), Duration::from_millis(*timeout_ms))
                        .map_err(|e| StartupError::Signer(e.to_string()))?;
                let derive = async |label: &str| {
                    remote.derive_key(label).await.map_err(|e| {
                        StartupError::Signer(format!("{url}: deriving the key {label:?}: {e}"))
                    })
                };
                let code_key = CodeKey::new(derive(OTP_CODE_KEY_LABEL).await?);
                let webhook_key = SecretKey::new(derive(WEBHOOK_SECRET_KEY_LABEL).await?);
                let session_key = derive(CONSOLE_SESSION_KEY_LABEL).await?;
                tracing::info!(url = %url, "keys are held by the signing service");
                Ok(Custody {
                    signer: Arc::new(remote),
                    code_key,
                    webhook_key,
                    session_key,
                })
            }
        }
    }
}

/// `HMAC-SHA256(seed, label)`: what the signing service's `derive-key` answers for
/// `label`, so a seed moved into the service keeps deriving the same keys.
fn hmac_label(seed: &[u8; 32], label: &str) -> [u8; 32] {
    use hmac::{Hmac, Mac};
    let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(seed)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
    mac.update(label.as_bytes());
    mac.finalize().into_bytes().into()
}

fn random_bytes<const N: usize>() -> Result<[u8; N], StartupError> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).map_err(|e| StartupError::Seed(format!("OS random source: {e}")))?;
    Ok(b)
}

/// The master seed (see the module documentation for where it comes from).
pub fn load_master_seed(config: &Config, durable: bool) -> Result<[u8; 32], StartupError> {
    if !config.signer.is_local() {
        return Err(StartupError::Seed(
            "this process holds no seed: signer.kind is not \"local\"".into(),
        ));
    }
    if let Some(s) = &config.master_seed {
        return parse_seed(s.expose()).map_err(StartupError::Seed);
    }
    if !durable {
        tracing::info!("memory storage: using an ephemeral master seed (nothing is persisted)");
        return random_bytes::<32>();
    }
    seed_file(&config.data_dir)
}

fn seed_file(dir: &Path) -> Result<[u8; 32], StartupError> {
    let path = dir.join("master_seed.hex");
    let err = |e: std::io::Error| StartupError::Seed(format!("{}: {e}", path.display()));
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            crate::file_modes::require_private_file(&path).map_err(StartupError::Seed)?;
            parse_seed(&text).map_err(|e| StartupError::Seed(format!("{}: {e}", path.display())))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::file_modes::ensure_private_dir(dir).map_err(err)?;
            let seed = random_bytes::<32>()?;
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                opts.mode(0o600);
            }
            use std::io::Write;
            let mut f = opts.open(&path).map_err(err)?;
            f.write_all(format!("{}\n", crate::config::hex(&seed)).as_bytes())
                .map_err(err)?;
            f.sync_all().map_err(err)?;
            tracing::info!(path = %path.display(), "generated a new master seed; back this file up with the database");
            Ok(seed)
        }
        Err(e) => Err(err(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_file_is_generated_once_and_reused() {
        let dir = std::env::temp_dir().join(format!("scseed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let a = seed_file(&dir).unwrap();
        let b = seed_file(&dir).unwrap();
        assert_eq!(a, b);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join("master_seed.hex"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn configured_seed_wins_and_memory_writes_no_file() {
        let mut c = Config {
            data_dir: std::env::temp_dir().join(format!("scseed2-{}", std::process::id())),
            ..Default::default()
        };
        load_master_seed(&c, false).unwrap();
        assert!(!c.data_dir.exists());
        c.master_seed = Some(crate::config::Secret::new("11".repeat(32)));
        assert_eq!(load_master_seed(&c, true).unwrap(), [0x11; 32]);
    }
}
