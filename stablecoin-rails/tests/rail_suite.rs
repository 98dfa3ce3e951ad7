//! The rail conformance suite (`stablecoin_core::testkit::rail_suite`) on every rail:
//! the simulated chain (each profile; default features), EVM on Anvil (`evm-test`),
//! TRON on the local node (`tron-test`, the token on Anvil when an anvil binary is
//! found) and Solana on litesvm (`solana-test`). Each rail's harness supplies what the
//! port cannot do: fund an address, add blocks, lose the next answer, and drive the
//! readiness states.
//!
//! Without an anvil binary the EVM run prints SKIPPED and passes, and the TRON run falls
//! back to the node's native ledger, unless `EVM_REQUIRE_ANVIL` / `TRON_REQUIRE_ANVIL`
//! is set (as `scripts/test` does), which turns that into a failure.

#[cfg(feature = "sim")]
mod sim {
    use async_trait::async_trait;
    use stablecoin_core::domain::money::{Micros, Token};
    use stablecoin_core::memory::LocalSigner;
    use stablecoin_core::ports::{ChainAddress, Rail, ReadinessStatus};
    use stablecoin_core::testkit::{RailHarness, rail_suite};
    use stablecoin_rails::{Fault, SimConfig, SimProfile, SimRail};
    use std::sync::Arc;

    struct SimHarness {
        rail: Arc<SimRail>,
    }

    impl SimHarness {
        fn new(profile: SimProfile) -> SimHarness {
            let signer = Arc::new(LocalSigner::from_seed([7; 32]));
            let rail = SimRail::new(profile, signer, SimConfig::for_profile(profile));
            SimHarness {
                rail: Arc::new(rail),
            }
        }
    }

    #[async_trait]
    impl RailHarness for SimHarness {
        fn rail(&self) -> Arc<dyn Rail> {
            self.rail.clone()
        }

        fn configured_tokens(&self) -> Vec<Token> {
            self.rail.profile().tokens()
        }

        fn confirmations(&self) -> u64 {
            self.rail.config().confirmations
        }

        /// The simulated outage fails every call, `address_for` included.
        fn addresses_offline(&self) -> bool {
            false
        }

        async fn fund(&self, to: &ChainAddress, token: Token, amount: Micros) -> String {
            self.rail.mint(to, token, amount).expect("mint")
        }

        async fn advance(&self, blocks: u64) {
            self.rail.mine(blocks);
        }

        async fn lose_next_response(&self) {
            self.rail.inject(Fault::LostResponse);
        }

        async fn set_readiness(&self, status: ReadinessStatus) {
            self.rail.set_rpc_down(status == ReadinessStatus::Degraded);
            self.rail
                .set_sponsor_funded(status != ReadinessStatus::InboundReady);
        }
    }

    #[tokio::test]
    async fn the_simulated_evm_chain_conforms() {
        rail_suite(|| async { SimHarness::new(SimProfile::Evm(137)) }).await;
    }

    #[tokio::test]
    async fn the_simulated_tron_chain_conforms() {
        rail_suite(|| async { SimHarness::new(SimProfile::Tron) }).await;
    }

    #[tokio::test]
    async fn the_simulated_solana_chain_conforms() {
        rail_suite(|| async { SimHarness::new(SimProfile::Solana) }).await;
    }
}

#[cfg(feature = "evm-test")]
mod evm {
    use async_trait::async_trait;
    use serde_json::Value;
    use stablecoin_core::domain::money::{Micros, Token};
    use stablecoin_core::memory::{MemoryStore, SystemClock};
    use stablecoin_core::ports::{ChainAddress, KeyPurpose, Rail, ReadinessStatus, StoreJournal};
    use stablecoin_core::testkit::{RailHarness, rail_suite};
    use stablecoin_rails::evm::testkit::{
        ETH, World, anvil_or_skip, owner_of, rail_over, shared_anvil,
    };
    use stablecoin_rails::evm::{EvmAddress, EvmRail, HttpJsonRpc, JsonRpc, RpcError};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Anvil's JSON-RPC, with an outage switch and a lost answer to the next
    /// `eth_sendRawTransaction` (the node got the bundle).
    struct Switchboard {
        inner: Arc<HttpJsonRpc>,
        down: AtomicBool,
        lose_next_send: AtomicBool,
    }

    #[async_trait]
    impl JsonRpc for Switchboard {
        async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
            if self.down.load(Ordering::SeqCst) {
                return Err(RpcError::Transport(
                    "connection refused (test outage)".into(),
                ));
            }
            let answer = self.inner.request(method, params).await;
            if method == "eth_sendRawTransaction"
                && self.lose_next_send.swap(false, Ordering::SeqCst)
            {
                answer?;
                return Err(RpcError::Transport(
                    "connection reset after the request was sent".into(),
                ));
            }
            answer
        }
    }

    struct EvmHarness {
        world: World,
        rpc: Arc<Switchboard>,
        rail: Arc<EvmRail>,
        /// The bundler's account (the signer's `Sponsor` key): its gas money decides
        /// between READY and INBOUND_READY.
        bundler: EvmAddress,
    }

    impl EvmHarness {
        async fn start() -> EvmHarness {
            let world = World::deploy(shared_anvil(137), 137, true, |_| {}).await;
            let rpc = Arc::new(Switchboard {
                inner: world.node.rpc.clone(),
                down: AtomicBool::new(false),
                lose_next_send: AtomicBool::new(false),
            });
            let mut config = world.config.clone();
            config.confirmations = 3;
            // Scans start at this world's contracts: the shared node's earlier blocks
            // belong to other worlds.
            config.scan_start_block = world.node.eth().block_number().await.expect("head");
            let store = Arc::new(MemoryStore::new());
            let rail = rail_over(&config, rpc.clone(), world.signer.clone())
                .with_journal(Arc::new(StoreJournal::new(store, Arc::new(SystemClock))));
            let bundler = owner_of(&*world.signer, &KeyPurpose::Sponsor).await;
            EvmHarness {
                world,
                rpc,
                rail: Arc::new(rail),
                bundler,
            }
        }
    }

    #[async_trait]
    impl RailHarness for EvmHarness {
        fn rail(&self) -> Arc<dyn Rail> {
            self.rail.clone()
        }

        fn configured_tokens(&self) -> Vec<Token> {
            Token::ALL.to_vec()
        }

        fn confirmations(&self) -> u64 {
            self.rail.config().confirmations
        }

        async fn fund(&self, to: &ChainAddress, token: Token, amount: Micros) -> String {
            let contract = match token {
                Token::Usdc => self.world.usdc,
                Token::Usdt => self.world.usdt,
            };
            let to: EvmAddress = to.0.parse().expect("an EVM address");
            self.world.mint(contract, &to, amount.get()).await
        }

        async fn advance(&self, blocks: u64) {
            self.world.node.mine(blocks).await;
        }

        async fn lose_next_response(&self) {
            self.rpc.lose_next_send.store(true, Ordering::SeqCst);
        }

        async fn set_readiness(&self, status: ReadinessStatus) {
            self.rpc
                .down
                .store(status == ReadinessStatus::Degraded, Ordering::SeqCst);
            let gas = match status {
                ReadinessStatus::InboundReady => 0,
                _ => 10 * ETH,
            };
            self.world.node.set_balance(&self.bundler, gas).await;
        }
    }

    #[tokio::test]
    async fn the_evm_rail_on_anvil_conforms() {
        if anvil_or_skip() {
            rail_suite(EvmHarness::start).await;
        }
    }
}

#[cfg(feature = "tron-test")]
mod tron {
    use async_trait::async_trait;
    use stablecoin_core::domain::money::{Micros, Token};
    use stablecoin_core::memory::{LocalSigner, MemoryStore, SystemClock};
    use stablecoin_core::ports::{ChainAddress, Rail, ReadinessStatus, StoreJournal};
    use stablecoin_core::testkit::{RailHarness, rail_suite};
    use stablecoin_rails::tron::{HttpTronApi, TronAddress, TronConfig, TronRail};
    use stablecoin_tron_node::{Addr, NodeConfig, TronNode, backend_from_env};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    const TRX: u64 = 1_000_000;
    const BANDWIDTH: i32 = 0;
    const ENERGY: i32 = 1;
    /// TriggerSmartContract: the customer's TRC-20 transfer.
    const TRIGGER: i32 = 31;

    struct TronHarness {
        node: TronNode,
        rail: Arc<TronRail>,
        sponsor: Addr,
        /// The sponsor's TRX while INBOUND_READY drained it.
        drained: Mutex<Option<u64>>,
    }

    fn raw(a: &ChainAddress) -> Addr {
        *TronAddress::parse(&a.0).expect("a TRON address").as_bytes()
    }

    impl TronHarness {
        async fn start() -> TronHarness {
            let node = TronNode::start(NodeConfig {
                backend: backend_from_env(),
                ..NodeConfig::default()
            })
            .await;
            let usdt = TronAddress::from_bytes(&node.chain().await.config.usdt_contract)
                .expect("usdt contract");
            let api =
                Arc::new(HttpTronApi::new(node.url(), Duration::from_secs(5)).expect("client"));
            let mut config = TronConfig::new(usdt);
            config.poll_interval = Duration::from_millis(5);
            config.inclusion_timeout = Duration::from_secs(3);
            let store = Arc::new(MemoryStore::new());
            let rail = TronRail::new(api, Arc::new(LocalSigner::from_seed([23; 32])), config)
                .await
                .expect("rail")
                .with_journal(Arc::new(StoreJournal::new(store, Arc::new(SystemClock))));
            let sponsor = *rail.sponsor_address().as_bytes();
            node.create_account(&sponsor, 1_000 * TRX).await;
            node.freeze(&sponsor, ENERGY, 100_000 * TRX).await;
            node.freeze(&sponsor, BANDWIDTH, 10_000 * TRX).await;
            TronHarness {
                node,
                rail: Arc::new(rail),
                sponsor,
                drained: Mutex::new(None),
            }
        }
    }

    #[async_trait]
    impl RailHarness for TronHarness {
        fn rail(&self) -> Arc<dyn Rail> {
            self.rail.clone()
        }

        fn configured_tokens(&self) -> Vec<Token> {
            vec![Token::Usdt]
        }

        fn confirmations(&self) -> u64 {
            self.rail.config().confirmations
        }

        async fn fund(&self, to: &ChainAddress, token: Token, amount: Micros) -> String {
            assert_eq!(token, Token::Usdt, "the TRON rail carries USDT");
            self.node.mint_usdt(&raw(to), amount.get().into()).await
        }

        async fn advance(&self, blocks: u64) {
            self.node.mine(blocks).await;
        }

        async fn lose_next_response(&self) {
            self.node.lose_next_broadcast_response(TRIGGER).await;
        }

        async fn set_readiness(&self, status: ReadinessStatus) {
            self.node
                .set_down(status == ReadinessStatus::Degraded)
                .await;
            let mut chain = self.node.chain().await;
            let account = chain.accounts.entry(self.sponsor).or_default();
            let mut drained = self.drained.lock().unwrap_or_else(|e| e.into_inner());
            if status == ReadinessStatus::InboundReady {
                // Below the activation reserve: reads pass, sends cannot be paid.
                drained.get_or_insert(std::mem::take(&mut account.balance));
            } else if let Some(balance) = drained.take() {
                account.balance = balance;
            }
        }
    }

    #[tokio::test]
    async fn the_tron_rail_on_the_local_node_conforms() {
        rail_suite(TronHarness::start).await;
    }
}

#[cfg(feature = "solana-test")]
mod solana {
    use async_trait::async_trait;
    use stablecoin_core::domain::money::{Micros, Token};
    use stablecoin_core::memory::{LocalSigner, MemoryStore, SystemClock};
    use stablecoin_core::ports::{ChainAddress, Rail, ReadinessStatus, StoreJournal};
    use stablecoin_core::testkit::{RailHarness, rail_suite};
    use stablecoin_rails::solana::codec::{MAINNET_USDC_MINT, MAINNET_USDT_MINT};
    use stablecoin_rails::solana::testkit::{LiteSvmRpc, SendFault, test_config};
    use stablecoin_rails::solana::{Pubkey, SolanaRail};
    use std::str::FromStr;
    use std::sync::Arc;

    const SOL: u64 = 1_000_000_000;

    struct SolanaHarness {
        rpc: Arc<LiteSvmRpc>,
        rail: Arc<SolanaRail>,
        fee_payer: Pubkey,
    }

    impl SolanaHarness {
        async fn start() -> SolanaHarness {
            let rpc = Arc::new(LiteSvmRpc::new());
            rpc.create_mint(&MAINNET_USDC_MINT, 6);
            rpc.create_mint(&MAINNET_USDT_MINT, 6);
            let store = Arc::new(MemoryStore::new());
            let rail = SolanaRail::new(
                rpc.clone(),
                Arc::new(LocalSigner::from_seed([29; 32])),
                test_config(),
            )
            .with_journal(Arc::new(StoreJournal::new(store, Arc::new(SystemClock))));
            let fee_payer = rail.fee_payer().await.expect("fee payer");
            rpc.set_lamports(&fee_payer, 10 * SOL);
            SolanaHarness {
                rpc,
                rail: Arc::new(rail),
                fee_payer,
            }
        }
    }

    #[async_trait]
    impl RailHarness for SolanaHarness {
        fn rail(&self) -> Arc<dyn Rail> {
            self.rail.clone()
        }

        fn configured_tokens(&self) -> Vec<Token> {
            Token::ALL.to_vec()
        }

        /// Every reported transfer is finalized.
        fn confirmations(&self) -> u64 {
            1
        }

        async fn fund(&self, to: &ChainAddress, token: Token, amount: Micros) -> String {
            let owner = Pubkey::from_str(&to.0).expect("a Solana address");
            let mint = self.rail.config().mint(token);
            // 6 decimals: a base unit is a micro-unit.
            self.rpc
                .mint_to(&owner, &mint, amount.get())
                .expect("mint_to")
                .to_string()
        }

        async fn advance(&self, blocks: u64) {
            self.rpc.advance_slots(blocks);
        }

        async fn lose_next_response(&self) {
            self.rpc.inject(SendFault::LostResponse);
        }

        async fn set_readiness(&self, status: ReadinessStatus) {
            self.rpc.set_down(status == ReadinessStatus::Degraded);
            // INBOUND_READY: enough to fund provisioning, below the send threshold.
            let lamports = match status {
                ReadinessStatus::InboundReady => SOL / 100,
                _ => 10 * SOL,
            };
            self.rpc.set_lamports(&self.fee_payer, lamports);
        }
    }

    #[tokio::test]
    async fn the_solana_rail_on_litesvm_conforms() {
        rail_suite(SolanaHarness::start).await;
    }
}
