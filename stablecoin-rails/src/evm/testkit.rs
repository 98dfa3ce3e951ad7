//! Test support, never for production (feature `evm-test`): Anvil started and stopped
//! by the harness, the ERC-4337 v0.8 contracts, the service paymaster and test tokens
//! deployed from `tests/fixtures/evm/contracts.json`, and an [`EvmRail`] over them; and
//! Uniswap V2 from its npm artifacts ([`World::deploy_uniswap`]); Alto, an external
//! ERC-4337 bundler, over EntryPoint v0.8 at its canonical address ([`Alto`],
//! [`World::deploy_canonical`]). Shared by
//! `tests/evm_anvil.rs`, `tests/evm_uniswap.rs` and `benches/evm.rs`.
//!
//! Anvil is found at `$ANVIL`, `scripts/evm/node_modules/.bin/anvil` (installed by
//! `scripts/evm/install_tools.sh`), `scripts/tron/node_modules/.bin/anvil`, or on `PATH`.
//! It runs under `sh`, which kills it when this process's end closes its stdin: nothing
//! outlives the process that started it.
#![allow(clippy::missing_panics_doc)]

#[cfg(doc)]
use super::RpcBundler;
use super::abi::{self, Abi};
use super::rpc::{Eth, hex0x};
use super::{Bundler, EvmAddress, EvmConfig, EvmRail, EvmToken, HttpJsonRpc, JsonRpc, SelfBundler};
use serde_json::{Value, json};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, LegRole, PaymentLeg, Rail, RailPayment, Signer, SubmissionStatus,
};
use std::io::{BufRead, BufReader};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

mod alto;
mod uniswap;
pub use alto::{
    Alto, DETERMINISTIC_DEPLOYER, ENTRY_POINT_V08, ENTRY_POINT_V08_SALT, alto_or_skip,
    deploy_canonical_entry_point, entry_point_create2_address, find_alto,
};
pub use uniswap::{
    Uniswap, pair_init_code_hash, uniswap_amount_out, uniswap_artifact, uniswap_dir,
    uniswap_or_skip,
};

// ---- Anvil ----------------------------------------------------------------------------

/// The anvil binary: `$ANVIL`, else the scripts' `node_modules`, else `PATH`; `None`
/// without one.
pub fn find_anvil() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("ANVIL") {
        return Some(p.into());
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["scripts/evm", "scripts/tron"] {
        let p = root.join(dir).join("node_modules/.bin/anvil");
        if p.exists() {
            return Some(p);
        }
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("anvil"))
            .find(|p| p.exists())
    })
}

/// Whether the Anvil tests can run: `false` (after printing SKIPPED) without an anvil
/// binary, unless `EVM_REQUIRE_ANVIL` is set (as `scripts/test` does), which turns a
/// missing Anvil into a failure instead of a silent skip.
pub fn anvil_or_skip() -> bool {
    if find_anvil().is_some() {
        return true;
    }
    assert!(
        std::env::var_os("EVM_REQUIRE_ANVIL").is_none(),
        "EVM_REQUIRE_ANVIL is set but no anvil binary was found"
    );
    eprintln!("SKIPPED: no anvil binary (set ANVIL or run scripts/evm/install_tools.sh)");
    false
}

/// A running Anvil. Dropping it (or this process ending) stops it.
pub struct Anvil {
    /// The JSON-RPC endpoint, `http://127.0.0.1:<port>`.
    pub url: String,
    _child: std::process::Child,
}

impl Anvil {
    /// Starts Anvil for `chain_id` on a free port (base fee 1 gwei). `automine`: a block per
    /// transaction; otherwise blocks come only from [`Node::mine`]. Panics without an anvil
    /// binary.
    pub fn start(chain_id: u64, automine: bool) -> Anvil {
        let bin = find_anvil().expect("anvil");
        let mut args = format!(
            "'{}' --host 127.0.0.1 --port 0 --chain-id {chain_id} --base-fee 1000000000",
            bin.display()
        );
        if !automine {
            args.push_str(" --no-mining");
        }
        // `cat` returns when our end of its stdin closes (this process ended or the
        // handle dropped); then anvil is killed.
        let script = format!("{args} & pid=$!; cat >/dev/null; kill $pid");
        let mut child = std::process::Command::new("sh")
            .args(["-c", &script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn anvil");
        let stdout = child.stdout.take().expect("anvil stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut url = None;
        for line in lines.by_ref() {
            let line = line.expect("anvil output");
            if let Some(addr) = line.trim().strip_prefix("Listening on ") {
                url = Some(format!("http://{addr}"));
                break;
            }
        }
        // Keep draining its log so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Anvil {
            url: url.expect("anvil printed no 'Listening on' line"),
            _child: child,
        }
    }
}

/// The URL of an automining Anvil shared by every test of this process: one for chain 56
/// (BNB Smart Chain), one for any other id (started with its first caller's id).
pub fn shared_anvil(chain_id: u64) -> &'static str {
    static POLYGON: OnceLock<Anvil> = OnceLock::new();
    static BSC: OnceLock<Anvil> = OnceLock::new();
    let cell = if chain_id == 56 { &BSC } else { &POLYGON };
    &cell.get_or_init(|| Anvil::start(chain_id, true)).url
}

// ---- deployment -----------------------------------------------------------------------

/// `tests/fixtures/evm/contracts.json`, read once: the contracts' creation code by name.
pub fn fixture() -> &'static Value {
    static F: OnceLock<Value> = OnceLock::new();
    F.get_or_init(|| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/evm/contracts.json");
        serde_json::from_str(&std::fs::read_to_string(path).expect("contracts.json"))
            .expect("contracts.json is JSON")
    })
}

/// The creation code of fixture contract `name` (`entry_point`, `simple_account_factory`,
/// `verifying_paymaster`, `test_token`). Panics when absent.
pub fn code(name: &str) -> Vec<u8> {
    hex::decode(
        fixture()[name]
            .as_str()
            .expect(name)
            .trim_start_matches("0x"),
    )
    .expect("hex")
}

/// The node, the dev account that deploys and mints, and raw helpers.
pub struct Node {
    /// The node's JSON-RPC endpoint.
    pub rpc: Arc<HttpJsonRpc>,
    /// The impersonated account that deploys, mints and sends [`Node::send`]'s transactions.
    pub dev: EvmAddress,
    /// Whether the node mines by itself; if not, the helpers mine a block after sending.
    pub automine: bool,
}

impl Node {
    /// `deployer`: an address of this test's own (impersonated and funded), so tests
    /// sharing a node never race on one account's nonce.
    pub async fn new(url: &str, automine: bool, deployer: EvmAddress) -> Node {
        let rpc = Arc::new(HttpJsonRpc::new(url, Duration::from_secs(10)));
        rpc.request("anvil_impersonateAccount", json!([deployer.to_hex()]))
            .await
            .expect("anvil_impersonateAccount");
        let node = Node {
            rpc,
            dev: deployer,
            automine,
        };
        node.set_balance(&deployer, 1_000 * ETH).await;
        node
    }

    /// Typed JSON-RPC calls on the node.
    pub fn eth(&self) -> Eth<'_> {
        Eth(&*self.rpc)
    }

    /// Mines `blocks` blocks at once (`anvil_mine`).
    pub async fn mine(&self, blocks: u64) {
        self.rpc
            .request("anvil_mine", json!([format!("0x{blocks:x}")]))
            .await
            .expect("anvil_mine");
    }

    /// Sends from the dev account and waits for the receipt; returns it.
    pub async fn send(&self, to: Option<EvmAddress>, data: Vec<u8>, value: u128) -> Value {
        // No gas limit: Anvil estimates one. A block-sized limit would keep the
        // transaction out of any block it shares with another test's, and with automine
        // no later block may come.
        let mut tx = json!({
            "from": self.dev.to_hex(),
            "data": hex0x(&data),
            "value": format!("0x{value:x}"),
        });
        if let Some(to) = to {
            tx["to"] = json!(to.to_hex());
        }
        let hash = self
            .rpc
            .request("eth_sendTransaction", json!([tx]))
            .await
            .expect("eth_sendTransaction");
        if !self.automine {
            self.mine(1).await;
        }
        // Generous: on two busy cores a shared node can lag by seconds.
        for _ in 0..3_000 {
            let r = self
                .rpc
                .request("eth_getTransactionReceipt", json!([hash]))
                .await
                .expect("receipt");
            if !r.is_null() {
                assert_eq!(r["status"], "0x1", "dev transaction reverted: {r}");
                return r;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no receipt for {hash}");
    }

    /// Deploys fixture contract `name` with the ABI-encoded constructor `args`; returns its
    /// address.
    pub async fn deploy(&self, name: &str, args: &[Abi]) -> EvmAddress {
        let mut data = code(name);
        data.extend(abi::encode(args));
        let r = self.send(None, data, 0).await;
        r["contractAddress"]
            .as_str()
            .expect("contractAddress")
            .parse()
            .expect("address")
    }

    /// Sets `who`'s native balance to `wei` (`anvil_setBalance`).
    pub async fn set_balance(&self, who: &EvmAddress, wei: u128) {
        self.rpc
            .request(
                "anvil_setBalance",
                json!([who.to_hex(), format!("0x{wei:x}")]),
            )
            .await
            .expect("anvil_setBalance");
    }

    /// `who`'s native balance, in wei.
    pub async fn native_balance(&self, who: &EvmAddress) -> u128 {
        self.eth().balance(who).await.expect("eth_getBalance")
    }

    /// `who`'s balance of ERC-20 `token`, in its base units.
    pub async fn token_balance(&self, token: &EvmAddress, who: &EvmAddress) -> u128 {
        self.eth()
            .call_uint(
                token,
                &abi::call("balanceOf(address)", &[Abi::address(&who.0)]),
            )
            .await
            .expect("balanceOf")
    }
}

/// Contracts of one test, the rail over them, and its keys.
pub struct World {
    /// The node the contracts live on.
    pub node: Node,
    /// The rail under test, over `config`.
    pub rail: EvmRail,
    /// The contracts deployed for this world, 1 confirmation, then `tune`'s changes.
    pub config: EvmConfig,
    /// Every key of the world: wallets, and `Sponsor` (paymaster signer and bundler).
    pub signer: Arc<LocalSigner>,
    /// The test USDC contract, the chain's USDC in `config`.
    pub usdc: EvmAddress,
    /// The test USDT contract, the chain's USDT in `config`.
    pub usdt: EvmAddress,
    /// Both tokens' decimals: 18 on chain 56, 6 elsewhere, as on the real chains.
    pub decimals: u8,
}

/// One native coin (ether, POL, BNB) in wei: 10^18.
pub const ETH: u128 = 1_000_000_000_000_000_000;

static SEEDS: AtomicUsize = AtomicUsize::new(1);

impl World {
    /// A world of its own (fresh keys and contracts) on the shared Anvil of `chain_id`.
    pub async fn on_shared(chain_id: u64) -> World {
        let url = shared_anvil(chain_id).to_string();
        World::deploy(&url, chain_id, true, |_| {}).await
    }

    /// A world with fresh keys (a new seed per call in this process) on the Anvil at `url`;
    /// `tune` adjusts the config before the rail is built.
    pub async fn deploy(
        url: &str,
        chain_id: u64,
        automine: bool,
        tune: impl FnOnce(&mut EvmConfig),
    ) -> World {
        let seed = SEEDS.fetch_add(1, Ordering::SeqCst) as u8;
        let signer = Arc::new(LocalSigner::from_seed(
            [seed.wrapping_mul(31).wrapping_add(chain_id as u8); 32],
        ));
        World::deploy_for(url, chain_id, automine, signer, tune).await
    }

    /// Deploys for the keys of `signer` (its `Sponsor` key signs for the paymaster and
    /// pays for bundles): a server under test passes the signer of its master seed.
    pub async fn deploy_for(
        url: &str,
        chain_id: u64,
        automine: bool,
        signer: Arc<LocalSigner>,
        tune: impl FnOnce(&mut EvmConfig),
    ) -> World {
        World::deploy_over(url, chain_id, automine, signer, false, tune).await
    }

    /// [`World::deploy_for`] with EntryPoint v0.8 at its canonical address
    /// ([`ENTRY_POINT_V08`], deployed through the CREATE2 deployer unless already there),
    /// where an external bundler such as [`Alto`] finds it. Automining.
    pub async fn deploy_canonical(
        url: &str,
        chain_id: u64,
        signer: Arc<LocalSigner>,
        tune: impl FnOnce(&mut EvmConfig),
    ) -> World {
        World::deploy_over(url, chain_id, true, signer, true, tune).await
    }

    async fn deploy_over(
        url: &str,
        chain_id: u64,
        automine: bool,
        signer: Arc<LocalSigner>,
        canonical_entry_point: bool,
        tune: impl FnOnce(&mut EvmConfig),
    ) -> World {
        let deployer = owner_of(&*signer, &KeyPurpose::Wallet("test_deployer".into())).await;
        let node = Node::new(url, automine, deployer).await;
        let sponsor = owner_of(&*signer, &KeyPurpose::Sponsor).await;
        let decimals = if chain_id == 56 { 18 } else { 6 };
        let entry_point = if canonical_entry_point {
            deploy_canonical_entry_point(&node).await
        } else {
            node.deploy("entry_point", &[]).await
        };
        let factory = node
            .deploy("simple_account_factory", &[Abi::address(&entry_point.0)])
            .await;
        let paymaster = node
            .deploy(
                "verifying_paymaster",
                &[Abi::address(&entry_point.0), Abi::address(&sponsor.0)],
            )
            .await;
        let token_args = |name: &str, symbol: &str| {
            vec![
                Abi::Bytes(name.as_bytes().to_vec()),
                Abi::Bytes(symbol.as_bytes().to_vec()),
                Abi::uint(decimals.into()),
            ]
        };
        let usdc = node
            .deploy("test_token", &token_args("USD Coin", "USDC"))
            .await;
        let usdt = node
            .deploy("test_token", &token_args("Tether USD", "USDT"))
            .await;
        // The paymaster's deposit in the EntryPoint pays every operation's gas; the
        // sponsor key pays the bundles' gas and gets the paymaster's refund.
        node.send(Some(paymaster), abi::call("deposit()", &[]), 10 * ETH)
            .await;
        node.set_balance(&sponsor, 10 * ETH).await;
        let mut config = EvmConfig::new(chain_id, entry_point, factory, paymaster);
        config.usdc = Some(EvmToken {
            address: usdc,
            decimals,
        });
        config.usdt = Some(EvmToken {
            address: usdt,
            decimals,
        });
        config.confirmations = 1;
        tune(&mut config);
        let rail = rail_over(&config, node.rpc.clone(), signer.clone());
        World {
            node,
            rail,
            config,
            signer,
            usdc,
            usdt,
            decimals,
        }
    }

    /// Micro-units to the test tokens' base units.
    pub fn base(&self, micros: u64) -> u128 {
        u128::from(micros) * 10u128.pow(u32::from(self.decimals) - 6)
    }

    /// The smart account of key `p` (counterfactual: maybe not deployed yet).
    pub async fn account(&self, p: &KeyPurpose) -> EvmAddress {
        self.rail.account_of(p).await.expect("account")
    }

    /// Mints to an address as the token issuer would (an external receipt); returns the
    /// transaction's hash (`0x` + 64 hex, as the scanner reports it).
    pub async fn mint(&self, token: EvmAddress, to: &EvmAddress, micros: u64) -> String {
        let receipt = self
            .node
            .send(
                Some(token),
                abi::call(
                    "mint(address,uint256)",
                    &[Abi::address(&to.0), Abi::uint(self.base(micros))],
                ),
                0,
            )
            .await;
        receipt["transactionHash"]
            .as_str()
            .expect("transactionHash")
            .to_string()
    }

    /// `who`'s test USDC, in base units.
    pub async fn usdc_of(&self, who: &EvmAddress) -> u128 {
        self.node.token_balance(&self.usdc, who).await
    }

    /// A USDC [`RailPayment`] from `from`'s account, with `legs` of (recipient, micro-units,
    /// role) and no deadline.
    pub async fn payment(
        &self,
        id: &str,
        from: &KeyPurpose,
        legs: Vec<(EvmAddress, u64, LegRole)>,
    ) -> RailPayment {
        RailPayment {
            id: id.into(),
            from: from.clone(),
            from_address: ChainAddress(self.account(from).await.to_string()),
            token: Token::Usdc,
            legs: legs
                .into_iter()
                .map(|(to, amount, role)| PaymentLeg {
                    to: ChainAddress(to.to_string()),
                    amount: Micros(amount),
                    role,
                })
                .collect(),
            valid_until: None,
        }
    }

    /// Polls `status` until it is final.
    pub async fn settle(&self, rail: &EvmRail, id: &str) -> SubmissionStatus {
        for _ in 0..1_500 {
            match rail.status(id).await.expect("status") {
                SubmissionStatus::Pending { .. } => {
                    if !self.node.automine {
                        self.node.mine(1).await;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                other => return other,
            }
        }
        panic!("payment {id} never left Pending");
    }
}

/// An [`EvmRail`] for `config` over `rpc`, bundled by a [`SelfBundler`] with `signer`'s
/// `Sponsor` key. Panics when `config` is incomplete.
pub fn rail_over(config: &EvmConfig, rpc: Arc<dyn JsonRpc>, signer: Arc<LocalSigner>) -> EvmRail {
    let bundler = Arc::new(SelfBundler::new(
        rpc.clone(),
        signer.clone(),
        KeyPurpose::Sponsor,
        config.entry_point,
        config.chain_id,
    ));
    EvmRail::new(config.clone(), rpc, signer, bundler).expect("complete config")
}

/// An [`EvmRail`] for `config` over `rpc`, bundled by `bundler` (an [`RpcBundler`] of an
/// [`Alto`], or a wrapper of one). Panics when `config` is incomplete.
pub fn rail_with_bundler(
    config: &EvmConfig,
    rpc: Arc<dyn JsonRpc>,
    signer: Arc<LocalSigner>,
    bundler: Arc<dyn Bundler>,
) -> EvmRail {
    EvmRail::new(config.clone(), rpc, signer, bundler).expect("complete config")
}

/// The EOA address of `signer`'s key `p`: the owner of its smart account.
pub async fn owner_of(signer: &dyn Signer, p: &KeyPurpose) -> EvmAddress {
    let pk = signer
        .public_key(p, stablecoin_core::ports::Curve::Secp256k1)
        .await
        .expect("public key");
    EvmAddress::from_public_key(&pk.bytes).expect("address")
}

/// The wallet key of test name `n` (`wal_<n>`).
pub fn wallet(n: &str) -> KeyPurpose {
    KeyPurpose::Wallet(format!("wal_{n}"))
}

/// The `tx_hash` of a `Confirmed` status; panics on any other.
pub fn confirmed_tx(s: &SubmissionStatus) -> String {
    match s {
        SubmissionStatus::Confirmed { tx_hash, .. } => tx_hash.clone(),
        other => panic!("expected Confirmed, got {other:?}"),
    }
}
