//! Alto, Pimlico's ERC-4337 bundler (`@pimlico/alto`, installed by
//! `scripts/evm/install_tools.sh` with its listen address pinned to 127.0.0.1), started
//! against an Anvil, and EntryPoint v0.8 at its canonical address, where Alto looks for
//! it (it infers the EntryPoint's version from the address).
//!
//! Alto runs under `sh` like Anvil: killed when its handle drops or this process ends.
//! Start it on a chain id other than 137: on Polygon's id Alto prices gas from Polygon's
//! public gas station over the internet (mainnet prices wherever that is reachable).

use super::{ETH, Node, code};
use crate::evm::rpc::hex0x;
use crate::evm::{EvmAddress, HttpJsonRpc, JsonRpc, abi::keccak};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The canonical address of EntryPoint v0.8 on every chain.
pub const ENTRY_POINT_V08: EvmAddress = EvmAddress([
    0x43, 0x37, 0x08, 0x4d, 0x9e, 0x25, 0x5f, 0xf0, 0x70, 0x24, 0x61, 0xcf, 0x88, 0x95, 0xce, 0x9e,
    0x3b, 0x5f, 0xf1, 0x08,
]);

/// The salt EntryPoint v0.8 is deployed with through the deterministic deployer (the
/// account-abstraction repository's deployment salt): with the published creation code
/// (the fixture's `entry_point`, byte for byte `@account-abstraction/contracts@0.8.0`'s
/// artifact) it lands on [`ENTRY_POINT_V08`].
pub const ENTRY_POINT_V08_SALT: [u8; 32] = [
    0x0a, 0x59, 0xdb, 0xff, 0x79, 0x0c, 0x23, 0xc9, 0x76, 0xa5, 0x48, 0x69, 0x0c, 0x27, 0x29, 0x78,
    0x83, 0xcc, 0x66, 0xb4, 0xc6, 0x70, 0x24, 0xf9, 0x11, 0x7b, 0x02, 0x38, 0x99, 0x5e, 0x35, 0xe9,
];

/// Arachnid's deterministic CREATE2 deployer, present on Anvil from genesis: a call of
/// `salt || init code` deploys the code at `create2(deployer, salt, keccak(init code))`.
pub const DETERMINISTIC_DEPLOYER: EvmAddress = EvmAddress([
    0x4e, 0x59, 0xb4, 0x48, 0x47, 0xb3, 0x79, 0x57, 0x85, 0x88, 0x92, 0x0c, 0xa7, 0x8f, 0xbf, 0x26,
    0xc0, 0xb4, 0x95, 0x6c,
]);

/// Where the fixture's EntryPoint lands through the deterministic deployer with
/// [`ENTRY_POINT_V08_SALT`].
pub fn entry_point_create2_address() -> EvmAddress {
    EvmAddress::create2(
        &DETERMINISTIC_DEPLOYER,
        &ENTRY_POINT_V08_SALT,
        &keccak(&code("entry_point")),
    )
}

/// Deploys EntryPoint v0.8 at [`ENTRY_POINT_V08`] through the deterministic deployer
/// (once per node: an existing deployment is kept); returns the address.
pub async fn deploy_canonical_entry_point(node: &Node) -> EvmAddress {
    let at = ENTRY_POINT_V08;
    if node.eth().code(&at).await.expect("eth_getCode").is_empty() {
        let mut data = ENTRY_POINT_V08_SALT.to_vec();
        data.extend(code("entry_point"));
        node.send(Some(DETERMINISTIC_DEPLOYER), data, 0).await;
    }
    assert!(
        !node.eth().code(&at).await.expect("eth_getCode").is_empty(),
        "no EntryPoint at {at} after the CREATE2 deployment"
    );
    at
}

/// The alto launcher: `$ALTO`, else `scripts/evm/node_modules/.bin/alto`; `None` without
/// one.
pub fn find_alto() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("ALTO") {
        return Some(p.into());
    }
    let p =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/evm/node_modules/.bin/alto");
    p.exists().then_some(p)
}

/// Whether the Alto tests can run: Anvil and Alto present; a skip (SKIPPED printed)
/// without them, a failure when `EVM_REQUIRE_ANVIL` is set.
pub fn alto_or_skip() -> bool {
    if !super::anvil_or_skip() {
        return false;
    }
    if find_alto().is_some() {
        return true;
    }
    assert!(
        std::env::var_os("EVM_REQUIRE_ANVIL").is_none(),
        "EVM_REQUIRE_ANVIL is set but Alto is not installed (scripts/evm/install_tools.sh)"
    );
    eprintln!("SKIPPED: no Alto (run scripts/evm/install_tools.sh)");
    false
}

/// A running Alto. Dropping it (or this process ending) stops it.
pub struct Alto {
    /// Its JSON-RPC endpoint, `http://127.0.0.1:<port>`.
    pub url: String,
    /// The port it listens on (127.0.0.1 only).
    pub port: u16,
    /// The executor account that sends its bundles.
    pub executor: EvmAddress,
    _child: std::process::Child,
}

static KEYS: AtomicUsize = AtomicUsize::new(1);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn key_address(key: &[u8; 32]) -> EvmAddress {
    let sk = k256::ecdsa::SigningKey::from_slice(key).expect("secp256k1 key");
    let pk = sk.verifying_key().to_encoded_point(false);
    EvmAddress::from_public_key(pk.as_bytes()).expect("address")
}

impl Alto {
    /// Starts Alto against the Anvil of `node` for [`ENTRY_POINT_V08`] (deployed first if
    /// absent), in `--safe-mode false`, bundling as soon as an operation arrives, with
    /// executor and utility keys of its own (funded on the node), and its `debug_bundler_*`
    /// methods on (tests hold operations with `debug_bundler_setBundlingMode` and drop
    /// its mempool with `debug_bundler_clearState`). Waits until it answers
    /// `eth_supportedEntryPoints`. Panics without Alto.
    pub async fn start(node: &Node, rpc_url: &str) -> Alto {
        deploy_canonical_entry_point(node).await;
        let bin = find_alto().expect("alto");
        let n = KEYS.fetch_add(1, Ordering::SeqCst);
        let tag = format!("alto {} {n}", std::process::id());
        let executor_key = keccak(format!("{tag} executor").as_bytes());
        let utility_key = keccak(format!("{tag} utility").as_bytes());
        let executor = key_address(&executor_key);
        node.set_balance(&executor, 1_000 * ETH).await;
        node.set_balance(&key_address(&utility_key), 1_000 * ETH)
            .await;
        let port = free_port();
        let args = format!(
            "'{}' --entrypoints {} --executor-private-keys {} --utility-private-key {} \
             --rpc-url {rpc_url} --port {port} --safe-mode false --block-time 100 \
             --min-bundle-interval 10 --max-bundle-interval 50 --mempool-max-parallel-ops 100 \
             --enable-debug-endpoints true --log-level warn",
            bin.display(),
            ENTRY_POINT_V08.to_hex(),
            hex0x(&executor_key),
            hex0x(&utility_key),
        );
        // As for Anvil: `cat` returns when our end of its stdin closes, then Alto is killed
        // (node's launcher and its children: the process group of the `sh`).
        let script = format!("{args} & pid=$!; cat >/dev/null; kill $pid");
        let mut child = std::process::Command::new("sh")
            .args(["-c", &script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn alto");
        for pipe in [
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            // Drained so Alto never blocks on a full pipe; echoed for a failing test's log.
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    eprintln!("[alto] {line}");
                }
            });
        }
        let url = format!("http://127.0.0.1:{port}");
        let alto = Alto {
            url: url.clone(),
            port,
            executor,
            _child: child,
        };
        let rpc = HttpJsonRpc::new(&url, Duration::from_secs(2));
        // Node starts slowly on two busy cores, and Alto deploys its simulation contracts
        // before listening.
        for _ in 0..600 {
            if let Ok(v) = rpc.request("eth_supportedEntryPoints", json!([])).await {
                assert_eq!(
                    v,
                    json!([ENTRY_POINT_V08.to_string()]),
                    "Alto serves other EntryPoints"
                );
                return alto;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("Alto did not answer on {url} within 120 s");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_entry_point_lands_on_the_canonical_address() {
        assert_eq!(entry_point_create2_address(), ENTRY_POINT_V08);
        assert_eq!(
            ENTRY_POINT_V08.to_string(),
            "0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108"
        );
    }
}
