//! The Anvil backend: the token's real EVM bytecode on an Anvil child process, reached
//! over JSON-RPC.

use crate::Addr;
use crate::chain::TokenBackend;
use crate::trigger::evm_of;
use serde_json::{Value, json};
use std::time::Duration;

#[derive(Debug)]
pub(crate) struct EvmReceipt {
    pub(crate) success: bool,
    pub(crate) gas_used: u64,
    /// TRON-shaped log JSON.
    pub(crate) logs: Vec<Value>,
}

/// JSON-RPC to the Anvil child process.
#[derive(Clone, Debug)]
pub(crate) struct Evm {
    pub(crate) url: String,
    pub(crate) http: reqwest::Client,
}

pub(crate) fn hex0x(b: &[u8]) -> String {
    format!("0x{}", hex::encode(b))
}

pub(crate) fn quantity(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap_or("0x0").trim_start_matches("0x"), 16).unwrap_or(0)
}

impl Evm {
    pub(crate) async fn rpc(&self, method: &str, params: Value) -> Result<Value, String> {
        let resp: Value = self
            .http
            .post(&self.url)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await
            .map_err(|e| format!("{method}: {e}"))?
            .json()
            .await
            .map_err(|e| format!("{method}: {e}"))?;
        if let Some(e) = resp.get("error") {
            return Err(format!("{method}: {e}"));
        }
        Ok(resp["result"].clone())
    }

    pub(crate) async fn call(&self, to: &[u8; 20], data: &[u8]) -> Result<Vec<u8>, String> {
        let out = self
            .rpc(
                "eth_call",
                json!([{"to": hex0x(to), "data": hex0x(data)}, "latest"]),
            )
            .await?;
        hex::decode(out.as_str().unwrap_or("0x").trim_start_matches("0x"))
            .map_err(|e| e.to_string())
    }

    /// An impersonated, zero-gas-price transaction, mined at once.
    pub(crate) async fn send(
        &self,
        from: &[u8; 20],
        to: &[u8; 20],
        data: &[u8],
        gas: u64,
    ) -> Result<EvmReceipt, String> {
        let hash = self
            .rpc(
                "eth_sendTransaction",
                json!([{
                    "from": hex0x(from), "to": hex0x(to), "data": hex0x(data),
                    "gas": format!("0x{gas:x}"), "gasPrice": "0x0",
                }]),
            )
            .await?;
        // Automine seals it at once, but the receipt may show up a moment later.
        let mut r = Value::Null;
        for _ in 0..400 {
            r = self.rpc("eth_getTransactionReceipt", json!([hash])).await?;
            if !r.is_null() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if r.is_null() {
            return Err(format!("no receipt for {hash}"));
        }
        let logs = r["logs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| {
                json!({
                    "address": l["address"].as_str().unwrap_or("").trim_start_matches("0x").to_lowercase(),
                    "topics": l["topics"].as_array().into_iter().flatten()
                        .map(|t| t.as_str().unwrap_or("").trim_start_matches("0x").to_string())
                        .collect::<Vec<_>>(),
                    "data": l["data"].as_str().unwrap_or("").trim_start_matches("0x"),
                })
            })
            .collect();
        Ok(EvmReceipt {
            success: quantity(&r["status"]) == 1,
            gas_used: quantity(&r["gasUsed"]),
            logs,
        })
    }
}

/// The token backend a suite runs on: `Anvil` when an anvil binary is found, else the
/// native ledger, unless `TRON_REQUIRE_ANVIL` is set (as `scripts/test` does), which
/// turns a missing Anvil into a failure instead of a silent downgrade.
pub fn backend_from_env() -> TokenBackend {
    if find_anvil().is_some() {
        return TokenBackend::Anvil;
    }
    assert!(
        std::env::var_os("TRON_REQUIRE_ANVIL").is_none(),
        "TRON_REQUIRE_ANVIL is set but no anvil binary was found"
    );
    TokenBackend::Native
}

/// `stablecoin-rails/`, where the TRON tools live: `scripts/tron/install_tools.sh` installs
/// anvil under it and the token's bytecode is its fixture (`scripts/tron/README.md`).
fn rails_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../stablecoin-rails")
}

/// The anvil binary: `$ANVIL`, then `stablecoin-rails/scripts/tron/node_modules/.bin/anvil`
/// (see `stablecoin-rails/scripts/tron/README.md`), then `anvil` on `PATH`.
pub fn find_anvil() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("ANVIL") {
        return Some(p.into());
    }
    let local = rails_dir().join("scripts/tron/node_modules/.bin/anvil");
    if local.exists() {
        return Some(local);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("anvil"))
            .find(|p| p.exists())
    })
}

pub(crate) async fn start_anvil(contracts: &[Addr]) -> (tokio::process::Child, Evm) {
    let bin = find_anvil().expect("anvil not found: set ANVIL or see scripts/tron/README.md");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(bin)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args([
            "--hardfork",
            "istanbul",
            "--gas-price",
            "0",
            "--auto-impersonate",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn anvil");
    let evm = Evm {
        url: format!("http://127.0.0.1:{port}"),
        http: reqwest::Client::new(),
    };
    let mut ready = false;
    for _ in 0..200 {
        if evm.rpc("eth_chainId", json!([])).await.is_ok() {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(ready, "anvil did not answer on port {port}");
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(rails_dir().join("tests/fixtures/tron/usdt_like.json")).unwrap(),
    )
    .unwrap();
    let code = fixture["runtime_bytecode"].as_str().unwrap();
    for contract in contracts {
        evm.rpc(
            "anvil_setCode",
            json!([hex0x(&evm_of(contract)), format!("0x{code}")]),
        )
        .await
        .expect("anvil_setCode");
    }
    (child, evm)
}
