//! Server configuration: built-in defaults, then an optional TOML file, then
//! `STABLECOIN_*` environment variables (later wins). Every setting has a default, so no
//! configuration at all is a valid configuration.
//!
//! | TOML key | environment variable | default |
//! |---|---|---|
//! | `mode` (`development`/`production`) | `STABLECOIN_MODE` | `development` |
//! | `sms.kind` (`memory`/`africastalking`/`twilio`) | `STABLECOIN_SMS` | `memory` (development only) |
//! | `sms.base_url` (africastalking, twilio) | `STABLECOIN_SMS_BASE_URL` | the provider's live API |
//! | `sms.username`, `sms.api_key` (africastalking, required; the key is a secret) | `STABLECOIN_SMS_USERNAME`, `STABLECOIN_SMS_API_KEY` | none |
//! | `sms.account_sid`, `sms.auth_token` (twilio, required; the token is a secret) | `STABLECOIN_SMS_ACCOUNT_SID`, `STABLECOIN_SMS_AUTH_TOKEN` | none |
//! | `sms.from` (africastalking: optional sender id; twilio: one of it and `messaging_service_sid`) | `STABLECOIN_SMS_FROM` | none |
//! | `sms.messaging_service_sid` (twilio) | `STABLECOIN_SMS_MESSAGING_SERVICE_SID` | none |
//! | `sms.status_callback_url` (twilio: the public URL of `/v1/callbacks/sms/twilio`) | `STABLECOIN_SMS_STATUS_CALLBACK_URL` | none (no delivery reports) |
//! | `sms.timeout_ms` (africastalking, twilio) | `STABLECOIN_SMS_TIMEOUT_MS` | `10000` |
//! | `notices.ussd_instructions` (calling code -> text of "you received money"; each entry replaces the built-in one) | | the built-in table of `default_ussd_instructions`: XOF, XAF, NGN, GHS, KES countries, `*144#` in each official language |
//! | `notices.ussd_instructions_default` | | `Dial *144# to open your wallet and see your balance.` |
//! | `rates.kind` (`fixed`/`http`) | `STABLECOIN_RATES` | `fixed` (the demo table; development only) |
//! | `rates.url` (http; `{currency}`, `{token}` replaced) | `STABLECOIN_RATES_URL` | none (required; a secret: never logged) |
//! | `rates.auth_header` (http) | `STABLECOIN_RATES_AUTH_HEADER` | none (no credential sent) |
//! | `rates.auth_value` (http) | `STABLECOIN_RATES_AUTH_VALUE` | none (a secret; set with `auth_header`) |
//! | `rates.rate_pointer` (http; JSON pointer) | `STABLECOIN_RATES_RATE_POINTER` | none (required, e.g. `/data/rate`) |
//! | `rates.timestamp_pointer` (http) | `STABLECOIN_RATES_TIMESTAMP_POINTER` | none: a rate's age counts from its fetch |
//! | `rates.max_age_ms` (http) | `STABLECOIN_RATES_MAX_AGE_MS` | `60000` (an older rate is never quoted: 503 RATE_STALE) |
//! | `rates.spread_bps` (http) | `STABLECOIN_RATES_SPREAD_BPS` | `0` (applied in the service's favour; below 10000) |
//! | `rates.max_move_bps` (http) | `STABLECOIN_RATES_MAX_MOVE_BPS` | `1000` (a rate this far from the last accepted one is refused: 503 RATE_STALE) |
//! | `rates.timeout_ms` (http) | `STABLECOIN_RATES_TIMEOUT_MS` | `5000` (then 503 RATE_SOURCE_ERROR) |
//! | `rates.decimals` (http; `{ NGN = 4 }`) | file only | each currency's ISO minor unit |
//! | `signer.kind` (`local`/`remote`) | `STABLECOIN_SIGNER` | `local` (keys derived in this process; development only) |
//! | `signer.url` (remote) | `STABLECOIN_SIGNER_URL` | none (required): the signing service, e.g. `http://10.0.0.5:7300` |
//! | `signer.token` (remote) | `STABLECOIN_SIGNER_TOKEN` | none (required, at least 32 characters; never printed) |
//! | `signer.timeout_ms` (remote) | `STABLECOIN_SIGNER_TIMEOUT_MS` | `5000` |
//! | `swaps.venue` (`treasury`/`uniswap_v2`/`disabled`) | file only | `treasury` (the service treasury converts; `disabled` answers 503 SWAPS_UNAVAILABLE) |
//! | `swaps.usdt_per_usdc_ppm`, `swaps.spread_bps` (treasury) | file only | `1000000` (par), `10` |
//! | `swaps.float` (treasury; decimal tokens) | file only | `10000` in development; production requires it |
//! | `swaps.uniswap_v2_router` (uniswap_v2, required) | file only | none |
//! | `screening.kind` (`none`/`memory`/`ofac_list`/`chainalysis`) | `STABLECOIN_SCREENING` | `none` (nothing screened); `memory`: addresses ending in `9999` are hits, in `8888` an outage (development only) |
//! | `screening.path` (ofac_list, required: OFAC's `SDN.XML` or `SDN.CSV`) | `STABLECOIN_SCREENING_PATH` | none; read again whenever its modification time changes |
//! | `screening.base_url` (chainalysis) | `STABLECOIN_SCREENING_BASE_URL` | `https://public.chainalysis.com` |
//! | `screening.api_key` (chainalysis, required; a secret) | `STABLECOIN_SCREENING_API_KEY` | none |
//! | `screening.timeout_ms` (chainalysis) | `STABLECOIN_SCREENING_TIMEOUT_MS` | `3000` (then the screen is unavailable) |
//! | `screening.fail_mode` (`closed`/`open`) | `STABLECOIN_SCREENING_FAIL_MODE` | `closed` in production (which refuses `open`), `open` in development |
//! | `screening.acknowledge_unscreened` | `STABLECOIN_SCREENING_ACKNOWLEDGE_UNSCREENED` | `false`: production refuses `kind = "none"` unless this is `true` (running unscreened on purpose, e.g. screened upstream) |
//! | `payouts.kind` (`simulated`/`disabled`/`mpesa`/`mtn_momo`) | `STABLECOIN_PAYOUTS` | `simulated` (development only; `disabled` refuses new withdrawals with 503 WITHDRAWALS_UNAVAILABLE and never completes or refunds a payout another provider took: it waits for that provider or staff) |
//! | `payouts.base_url` (mpesa, mtn_momo) | `STABLECOIN_PAYOUTS_BASE_URL` | mpesa: `https://api.safaricom.co.ke`; mtn_momo: none (required) |
//! | `payouts.consumer_key`, `payouts.consumer_secret` (mpesa, required; the secret is a secret) | `STABLECOIN_PAYOUTS_CONSUMER_KEY`, `STABLECOIN_PAYOUTS_CONSUMER_SECRET` | none |
//! | `payouts.initiator_name`, `payouts.security_credential` (mpesa, required; the credential is a secret) | `STABLECOIN_PAYOUTS_INITIATOR_NAME`, `STABLECOIN_PAYOUTS_SECURITY_CREDENTIAL` | none |
//! | `payouts.shortcode` (mpesa, required) | `STABLECOIN_PAYOUTS_SHORTCODE` | none |
//! | `payouts.command_id` (mpesa) | `STABLECOIN_PAYOUTS_COMMAND_ID` | `BusinessPayment` |
//! | `payouts.api_user`, `payouts.api_key`, `payouts.subscription_key` (mtn_momo, required; the keys are secrets) | `STABLECOIN_PAYOUTS_API_USER`, `STABLECOIN_PAYOUTS_API_KEY`, `STABLECOIN_PAYOUTS_SUBSCRIPTION_KEY` | none |
//! | `payouts.target_environment`, `payouts.currency` (mtn_momo, required) | `STABLECOIN_PAYOUTS_TARGET_ENVIRONMENT`, `STABLECOIN_PAYOUTS_CURRENCY` | none |
//! | `payouts.callback_base_url` (this server's public URL; mpesa: required) | `STABLECOIN_PAYOUTS_CALLBACK_BASE_URL` | none (mtn_momo: no callbacks) |
//! | `payouts.callback_secret` (mpesa: required; mtn_momo: required with `callback_base_url`; a secret, at least 32 characters, the same on every node) | `STABLECOIN_PAYOUTS_CALLBACK_SECRET` | none: each payout's callback URL ends `/{id}/{HMAC token}` |
//! | `payouts.timeout_ms`, `payouts.result_wait_ms` (mpesa) | `STABLECOIN_PAYOUTS_TIMEOUT_MS`, `STABLECOIN_PAYOUTS_RESULT_WAIT_MS` | `10000`, `2000` |
//! | `listen` | `STABLECOIN_LISTEN` | `127.0.0.1:8080` |
//! | `data_dir` | `STABLECOIN_DATA_DIR` | `stablecoin-data` |
//! | `master_seed` (64 hex) | `STABLECOIN_MASTER_SEED` | see [`crate::custody`] (seed file or ephemeral; refused with `signer.kind = "remote"`) |
//! | `body_limit_bytes` | `STABLECOIN_BODY_LIMIT_BYTES` | `65536` |
//! | `worker_interval_ms` | `STABLECOIN_WORKER_INTERVAL_MS` | `250` |
//! | `run_workers` | `STABLECOIN_RUN_WORKERS` | `true` (false: API only, e.g. extra API nodes) |
//! | `worker_nice` (0-19) | `STABLECOIN_WORKER_NICE` | `10` (Linux: the workers' CPU priority below the API's; 0: equal) |
//! | `storage.kind` (`memory`/`sqlite`/`postgres`) | `STABLECOIN_STORAGE` | `sqlite` |
//! | `storage.path` (sqlite) | `STABLECOIN_SQLITE_PATH` | `<data_dir>/stablecoin.db` |
//! | `storage.max_background` (sqlite) | `STABLECOIN_SQLITE_MAX_BACKGROUND` | `4` (worker commits the writer adds to a group with API commits in it: lower favours API latency under a settlement backlog, higher settlement progress while the API is busy) |
//! | `storage.url` (postgres) | `STABLECOIN_POSTGRES_URL` | none (required; add `?pooler=transaction` through PgBouncer older than 1.21 in transaction mode: `stablecoin_store::PgConfig::transaction_pooler`) |
//! | `storage.connect_timeout_secs` (postgres) | `STABLECOIN_POSTGRES_CONNECT_TIMEOUT_SECS` | `30` |
//! | `log.filter` | `STABLECOIN_LOG` | `info` |
//! | `log.format` (`text`/`json`) | `STABLECOIN_LOG_FORMAT` | `text` |
//! | `engine.poll_interval_ms` | `STABLECOIN_ENGINE_POLL_INTERVAL_MS` | `1000` |
//! | `engine.claim_lease_ms` | `STABLECOIN_ENGINE_CLAIM_LEASE_MS` | `30000` |
//! | `engine.unknown_grace_ms` | `STABLECOIN_ENGINE_UNKNOWN_GRACE_MS` | `60000` |
//! | `engine.batch_limit` | `STABLECOIN_ENGINE_BATCH_LIMIT` | `256` (records one worker step claims and commits together; see `EngineSettings::batch_limit`) |
//! | `engine.worker_id` | `STABLECOIN_ENGINE_WORKER_ID` | `<hostname>-<pid>-<8 random hex>` (this node's id in claims and singleton leases, shown by `/health/ready`; unique per process) |
//! | `engine.singleton_lease_ms` | `STABLECOIN_ENGINE_SINGLETON_LEASE_MS` | `3000` (300-600000: the lease of a singleton job, renewed every third of it; a dead node's jobs move to another within it) |
//! | `engine.read_cache_ms` | `STABLECOIN_ENGINE_READ_CACHE_MS` | `1000` (API key and tenant reads reused this long; a key revoked by another process, e.g. the CLI, stops working within it; 0: off) |
//! | `engine.wallet_cache_ms` | `STABLECOIN_ENGINE_WALLET_CACHE_MS` | `60000` (wallets read by transfers reused this long; every transfer re-checks them at commit, so a change made anywhere is never missed; 0: off) |
//! | `engine.payment_validity_ms` | `STABLECOIN_ENGINE_PAYMENT_VALIDITY_MS` | `600000` (a payment's on-chain deadline after its first submission) |
//! | `engine.refund_retry_ms` | file only | `30000` (first wait before a failed refund is retried; doubles) |
//! | `engine.refund_retry_max_ms` | file only | `3600000` |
//! | `rails.mode` (`sim`) | `STABLECOIN_RAILS_MODE` | `sim` |
//! | `rails.evm_chains` | `STABLECOIN_RAILS_EVM_CHAINS` (`137,8453`) | `[137]` |
//! | `rails.primary_evm_chain` | `STABLECOIN_RAILS_PRIMARY_EVM_CHAIN` | first of `evm_chains` |
//! | `rails.tron` | `STABLECOIN_RAILS_TRON` | `true` |
//! | `rails.solana` | `STABLECOIN_RAILS_SOLANA` | `true` |
//! | `rails.evm.<chain id>` (a table) | file only | none: every chain simulated |
//! | `rails.tron_node` (a table) | file only | none: TRON simulated |
//! | `rails.solana_node` (a table) | file only, except: | none: Solana simulated |
//! | `rails.solana_node.rpc_url` | `STABLECOIN_SOLANA_RPC_URL` | none (required; a secret: never logged) |
//! | `rails.solana_node.scan_enabled` | `STABLECOIN_SOLANA_SCAN_ENABLED`, or the spec's `SOLANA_SCAN_ENABLED` (both set: they must agree, or the server refuses to start) | `false` (receipt monitoring off: readiness DEGRADED) |
//! | `rails.solana_node.sends_enabled` | `STABLECOIN_SOLANA_SENDS_ENABLED` | `false` (sponsored sends off: readiness INBOUND_READY) |
//! | `sim.treasury_float` | `STABLECOIN_SIM_TREASURY_FLOAT` | `1000000` (USDC and USDT; minted at every start, or once by the shared chain's process) |
//! | `sim.chain_url` (`http://127.0.0.1:<port>`) | `STABLECOIN_SIM_CHAIN_URL` | none: simulated chains run in this process (refused with `postgres` storage: every process would have its own chain; run `stablecoin-server sim-chain` and point every server at it) |
//! | `demo.enabled` | `STABLECOIN_DEMO` | `true` |
//! | `demo.tenant_name` | `STABLECOIN_DEMO_TENANT_NAME` | `Demo Fintech` |
//! | `demo.treasury_credit` | `STABLECOIN_DEMO_TREASURY_CREDIT` | `10000` (USDC and USDT) |
//! | `admin.token` | `STABLECOIN_ADMIN_TOKEN` | none: the staff routes (`/admin/v1/...`) answer 404 (set it, at least 32 characters, to open them with `Authorization: Bearer <token>`) |
//! | `admin.topup_ttl_hours` (1-720) | `STABLECOIN_ADMIN_TOPUP_TTL_HOURS` | `24` (how long a top-up quote can be confirmed) |
//! | `consoles.public_url` | `STABLECOIN_PUBLIC_URL` | none: plain HTTP in development; with `https://...` (or in production mode) console cookies are `Secure` and `__Host-` prefixed |
//! | `consoles.trusted_proxies` | `STABLECOIN_TRUSTED_PROXIES` (comma-separated) | empty: no `X-Forwarded-For`/`-Proto` is believed |
//! | `consoles.sign_in_max_failures` | `STABLECOIN_SIGN_IN_MAX_FAILURES` | `5` failed sign-ins per source address and per credential, then 429 |
//! | `consoles.sign_in_lockout_s` | `STABLECOIN_SIGN_IN_LOCKOUT_S` | `900` (the window and the lockout) |
//! | `consoles.max_tenant_fee_bps` | file only | `300` (the highest PERCENTAGE fee a tenant sets in its dashboard; above: staff) |
//! | `consoles.max_tenant_fee_flat` | file only | `"5.00"` |
//! | `admin.topup_single_approval_max` (token units) | `STABLECOIN_ADMIN_TOPUP_SINGLE_APPROVAL_MAX` | `10000` (a top-up confirmation or staff treasury credit above it needs a second, different staff identity) |
//! | `admin.second_approval_above` (token units) | `STABLECOIN_ADMIN_SECOND_APPROVAL_ABOVE` | `10000` (an escrow resolution or recovery above it needs a second, different staff member) |
//! | `metrics_token` | `STABLECOIN_METRICS_TOKEN` | none: `/metrics` is public (set it, 32+ characters, to require `Authorization: Bearer <token>`) |
//! | `http.header_read_timeout_ms` | `STABLECOIN_HTTP_HEADER_READ_TIMEOUT_MS` | `10000` |
//! | `http.request_timeout_ms` | `STABLECOIN_HTTP_REQUEST_TIMEOUT_MS` | `30000` (then 408 REQUEST_TIMEOUT) |
//! | `http.max_connections` | `STABLECOIN_HTTP_MAX_CONNECTIONS` | `10000` |
//! | `rate_limits.enabled` | `STABLECOIN_RATE_LIMITS` | `true` (per API key; with `postgres` storage one budget across every node on the database, else per process) |
//! | `rate_limits.window_s` | `STABLECOIN_RATE_LIMIT_WINDOW_S` | `1` |
//! | `rate_limits.money` | `STABLECOIN_RATE_LIMIT_MONEY` | `100` money-moving POSTs per window |
//! | `rate_limits.write` | `STABLECOIN_RATE_LIMIT_WRITE` | `50` other POSTs/DELETEs per window |
//! | `rate_limits.read` | `STABLECOIN_RATE_LIMIT_READ` | `300` GETs per window |
//! | `otp.max_failed_attempts` | `STABLECOIN_OTP_MAX_FAILED_ATTEMPTS` | `5` wrong codes per (tenant, wallet, purpose), then a lockout |
//! | `otp.lockout_ms` | `STABLECOIN_OTP_LOCKOUT_MS` | `3600000` |
//! | `otp.failure_window_ms` | file only | `86400000` |
//! | `otp.request_window_ms` | file only | `3600000` |
//! | `otp.max_requests_per_subject` | `STABLECOIN_OTP_MAX_REQUESTS_PER_WALLET` | `5` per window |
//! | `otp.max_requests_per_phone` | `STABLECOIN_OTP_MAX_REQUESTS_PER_PHONE` | `10` per window |
//! | `otp.max_requests_per_tenant` | `STABLECOIN_OTP_MAX_REQUESTS_PER_TENANT` | `1000` per window (the tenant's SMS quota) |
//! | `limits.min_send_evm` | `STABLECOIN_MIN_SEND_EVM` | `"0.10"` tokens (a smaller send is 400 AMOUNT_TOO_SMALL; `"0"`: no floor) |
//! | `limits.min_send_tron` | `STABLECOIN_MIN_SEND_TRON` | `"1.00"` |
//! | `limits.min_send_solana` | `STABLECOIN_MIN_SEND_SOLANA` | `"0.10"` |
//! | `limits.rent_quota_per_tenant` | `STABLECOIN_RENT_QUOTA_PER_TENANT` | `1000` Solana provisionings per tenant per window (then 429 RATE_LIMITED) |
//! | `limits.rent_quota_window_ms` | file only | `86400000` |
//! | `webhooks.allow_networks` | `STABLECOIN_WEBHOOKS_ALLOW_NETWORKS` | empty: webhooks reach public addresses only, over https (comma-separated networks also allowed, e.g. `127.0.0.1/32,::1/128` for a receiver on this machine; plain http only to an allowed loopback address; refused in production mode) |
//! | `webhooks.timeout_ms` | `STABLECOIN_WEBHOOKS_TIMEOUT_MS` | `10000` (one delivery attempt) |
//! | `webhooks.concurrency` | `STABLECOIN_WEBHOOKS_CONCURRENCY` | `16` (attempts in flight) |
//! | `webhooks.endpoint_concurrency` | `STABLECOIN_WEBHOOKS_ENDPOINT_CONCURRENCY` | `4` (attempts in flight to one endpoint) |
//! | `webhooks.tenant_concurrency` | `STABLECOIN_WEBHOOKS_TENANT_CONCURRENCY` | `8` (attempts in flight for one tenant) |
//! | `retention.enabled` | `STABLECOIN_RETENTION` | `true` (the purge job runs with the workers) |
//! | `retention.interval_ms` | `STABLECOIN_RETENTION_INTERVAL_MS` | `3600000` (between purge runs; the first at start) |
//! | `retention.idempotency_hours` | `STABLECOIN_RETENTION_IDEMPOTENCY_HOURS` | `72` (at least 24) |
//! | `retention.quotes_hours` | `STABLECOIN_RETENTION_QUOTES_HOURS` | `24` (at least 1) |
//! | `retention.challenges_hours` | `STABLECOIN_RETENTION_CHALLENGES_HOURS` | `168` (at least 1) |
//! | `retention.webhook_events_hours` | `STABLECOIN_RETENTION_WEBHOOK_EVENTS_HOURS` | `720` (events, delivered and dead deliveries; at least 168; pending deliveries are kept until final; outbox rows are purged at every run once fan-out has copied them into their event records) |
//! | `retention.payout_results_hours` | `STABLECOIN_RETENTION_PAYOUT_RESULTS_HOURS` | `720` (M-Pesa results kept per payout since its last change; at least 24; once purged the adapter queries again) |
//! | `escrow.deposits_enabled` | `STABLECOIN_ESCROW_DEPOSITS_ENABLED` | `true` (off: no new escrow is admitted, 503 ESCROW_UNAVAILABLE; existing deals run on) |
//! | `reconciliation.enabled` | `STABLECOIN_RECONCILIATION` | `true` (the ledger is compared with the chains, with the workers) |
//! | `reconciliation.interval_ms` | `STABLECOIN_RECONCILIATION_INTERVAL_MS` | `300000` (between passes; the first at start) |
//! | `webhooks_allow_loopback_http` (deprecated) | `STABLECOIN_WEBHOOKS_ALLOW_LOOPBACK_HTTP` | `false`; `true` adds `127.0.0.1/32,::1/128` to `webhooks.allow_networks` |
//!
//! A chain of `rails.evm_chains` runs on the simulated chain unless it has a
//! `[rails.evm.<chain id>]` table, which makes it a real chain (feature `evm`, on by
//! default) with every setting required (nothing about a real chain is guessed):
//!
//! ```toml
//! [rails]
//! evm_chains = [137]
//!
//! [rails.evm.137]
//! rpc_url = "https://polygon.example/rpc"      # a secret: never logged
//! entry_point = "0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108"
//! factory = "0x..."                             # SimpleAccountFactory v0.8
//! paymaster = "0x..."                           # VerifyingPaymaster, signer = sponsor key
//! usdc = { address = "0x...", decimals = 6 }    # 18 on BNB Smart Chain
//! usdt = { address = "0x...", decimals = 6 }    # optional when usdc is set, and back
//! min_paymaster_deposit_wei = "100000000000000000"
//! min_bundler_balance_wei = "100000000000000000"
//! confirmations = 128
//! scan_start_block = 64000000
//! # optional: rpc_timeout_ms = 10000, max_scan_blocks = 2000
//! # optional: fallback_rpc_urls = ["https://other.example/rpc"] (secrets, tried in order
//! #   after rpc_url), rpc_retry_down_after_ms = 30000
//! # optional: bundler_url = "https://bundler.example/rpc"  # a secret: never logged
//! # optional: bundler_resend_after_ms = 30000 (an operation the bundler dropped is handed
//! #   over again, the same signed operation, at most this often; 0: never)
//! # optional: replace_bundle_after_ms = 60000, max_fee_per_gas_ceiling_wei = "500000000000"
//! # optional table [rails.evm.137.fees]: history_blocks = 10, reward_percentile = 50,
//! #   priority_floor_wei, priority_ceiling_wei, max_fee_floor_wei, max_fee_ceiling_wei,
//! #   max_gas_cost_per_payment_wei (wei: integers or decimal strings; none by default)
//! ```
//!
//! Without `bundler_url` the service bundles its chain's operations itself (its sponsor
//! key sends `handleOps` and must hold `min_bundler_balance_wei`); with it they go to that
//! external ERC-4337 bundler (`eth_sendUserOperation`, which must serve `entry_point`:
//! readiness checks `eth_supportedEntryPoints`), and a lost answer is reconciled by the
//! user-operation hash, never sent twice. The service's own bundles that the chain leaves
//! unmined `replace_bundle_after_ms` are re-sent at their nonce with higher fees, up to
//! `max_fee_per_gas_ceiling_wei` (default 10x the first fee cap), then cancelled.
//! User operations' fees come from `eth_feeHistory` within the `fees` floors and
//! ceilings, and a payment whose gas could cost more than
//! `fees.max_gas_cost_per_payment_wei` is refused unsent (README, "EVM fees").
//!
//! Likewise `rails.tron = true` runs the simulated TRON chain unless a `[rails.tron_node]`
//! table makes it the real TRON rail (feature `tron`, on by default) over java-tron's
//! HTTP API:
//!
//! ```toml
//! [rails.tron_node]
//! api_url = "https://api.trongrid.io"          # a secret: never logged
//! scan_start_block = 70000000
//! # optional: api_key (sent as TRON-PRO-API-KEY, a secret),
//! # usdt_contract = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t" (mainnet USDT, the default),
//! # usdc_contract (read and sent back only: TRON wallets hold USDT), confirmations = 19,
//! # energy_per_transfer = 65000, bandwidth_per_transfer = 500,
//! # activation_reserve_sun = 2000000, fee_limit_sun = 100000000, timeout_ms = 10000,
//! # max_scan_blocks = 100, out_of_energy_retries = 1, fallback_api_urls = [...] (secrets),
//! # rpc_retry_down_after_ms = 30000
//! ```
//!
//! Likewise `rails.solana = true` runs the simulated Solana chain unless a
//! `[rails.solana_node]` table makes it the real Solana rail (feature `solana`, on by
//! default) over a validator's JSON-RPC API, the `Sponsor` key paying every fee and rent
//! (deposits and provisioning are read at `finalized`; there is no commitment setting).
//! Any of the three `STABLECOIN_SOLANA_*` variables creates the table (then `rpc_url`
//! and `scan_start_slot` must be given too):
//!
//! ```toml
//! [rails.solana_node]
//! rpc_url = "https://api.mainnet-beta.solana.com"   # a secret: never logged
//! scan_start_slot = 300000000                       # required: where the scanner starts
//! scan_enabled = true                               # receipt monitoring (default false)
//! sends_enabled = true                              # sponsored sends (default false)
//! # optional: usdc_mint, usdt_mint (base58; default mainnet USDC and USDT),
//! # token_program (default SPL Token), decimals = 6,
//! # min_fee_payer_lamports_for_sends = 50000000, timeout_ms = 10000,
//! # finality_timeout_ms = 60000, poll_interval_ms = 500, scan_page_size = 1000,
//! # fallback_rpc_urls = [...] (secrets), rpc_retry_down_after_ms = 30000
//! # [rails.solana_node.fees]: each send's compute-unit limit and price (issue #49),
//! # price_floor_micro_lamports = 1000, price_ceiling_micro_lamports = 5000000,
//! # fee_percentile = 75, retry_price_increase_percent = 50, compute_units_base = 5000,
//! # compute_units_per_transfer = 10000, compute_units_per_account_created = 40000,
//! # compute_units_per_memo = 5000, compute_units_per_memo_byte = 100
//! ```
//!
//! Every real chain takes several node URLs (issue #49): `rpc_url` / `api_url` is the
//! preferred one and stays required, `fallback_rpc_urls` / `fallback_api_urls` are tried
//! after it in order when it times out, refuses, answers 5xx/429 or garbles its answer.
//! A separate list rather than an `rpc_urls` replacing `rpc_url`: existing files and
//! `STABLECOIN_SOLANA_RPC_URL` keep their meaning and there is no "both given" case.
//! A submission whose answer was lost is reconciled by its id on the next URL, never
//! re-sent; readiness lists each URL's health by `host:port` (README, "Several node
//! URLs").
//!
//! The start-up banner prints each real chain's sponsor address (the paymaster's signer
//! and the bundler, which needs native coin) and the treasury account (which needs the
//! tokens that fundings pay out).
//!
//! The config file is named by `--config` or `STABLECOIN_CONFIG`. Unknown keys in the
//! file are errors (a typo must not silently fall back to a default). Secrets (the
//! master seed, the PostgreSQL URL) never appear in `Debug` output or logs.
//!
//! The modules: `load` (defaults, file, environment), `validate`, `storage`, `rails` (and
//! the simulated chains' `sim` settings), `settings` (log, engine, demo), `webhooks` and
//! `secrets`.

mod admin;
mod checkout;
mod consoles;
mod escrow;
mod limits;
mod load;
mod notices;
mod payouts;
mod production;
mod rails;
mod reconciliation;
mod retention;
mod screening;
mod secrets;
mod services;
mod settings;
mod storage;
mod swaps;
#[cfg(test)]
mod tests;
mod validate;
mod webhooks;

pub use admin::AdminSettings;
pub use checkout::CheckoutSettings;
pub use consoles::{ConsoleSettings, Network};
pub use escrow::EscrowSettings;
pub use limits::{HttpSettings, OtpSettings, RateLimitSettings, SponsorshipSettings};
pub use load::{env_var_names, spec_env_aliases};
pub use notices::{NoticeSettings, default_ussd_instructions};
pub use payouts::PayoutSettings;
pub use rails::{
    EvmChainSettings, EvmFeeSettings, RailsConfig, RailsMode, SimSettings, SolanaFeeSettings,
    SolanaNodeSettings, TokenSettings, TronNodeSettings, Wei, node_urls,
};
pub use reconciliation::ReconciliationSettings;
pub use retention::RetentionSettings;
pub use screening::{FailModeSetting, ScreeningKind, ScreeningSettings};
pub(crate) use secrets::hex;
pub use secrets::{Secret, parse_seed};
pub use services::{Mode, RatesSettings, SignerSettings, SmsSettings};
pub use settings::{DemoConfig, EngineSettings, LogConfig, LogFormat};
pub use storage::StorageConfig;
pub use swaps::{DEVELOPMENT_FLOAT, SwapSettings, SwapVenueKind};
pub use webhooks::WebhookSettings;

use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use thiserror::Error;

/// Why a configuration could not be loaded or is not usable; the server refuses to start.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {path}: {error}")]
    Read {
        /// The file named by `--config` or `STABLECOIN_CONFIG`.
        path: String,
        /// The I/O error.
        error: String,
    },
    /// The config file is not valid TOML, or the settings (file and environment) do not
    /// match [`Config`] (an unknown key, a wrong type).
    #[error("invalid config file {path}: {error}")]
    Parse {
        /// Where the settings came from: the file, `(defaults)`, and ` + environment`
        /// when variables took part.
        path: String,
        /// The parser's message, with the offending key.
        error: String,
    },
    /// A `STABLECOIN_*` environment variable does not parse.
    #[error("invalid environment variable {var}: {error}")]
    Env {
        /// The variable's name.
        var: &'static str,
        /// Why its value was refused.
        error: String,
    },
    /// The settings parse but contradict each other or are out of range (see `validate`).
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// The whole server configuration, one field per top-level TOML key (see the table in
/// the module documentation for keys, environment variables and defaults).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Socket address to listen on.
    pub listen: String,
    /// Where durable data lives: the SQLite file and the generated master seed.
    pub data_dir: PathBuf,
    /// 32-byte master seed, hex. All customer and service keys derive from it.
    pub master_seed: Option<Secret>,
    /// Largest accepted request body.
    pub body_limit_bytes: usize,
    /// Pause between two worker ticks.
    pub worker_interval_ms: u64,
    /// Run the engine workers (submit, confirm, reconcile, scan) in this process. Several
    /// API nodes on one database may leave this on (claims keep workers apart) or run
    /// workers on some nodes only.
    pub run_workers: bool,
    /// The workers' nice value (Linux; ignored elsewhere), 0-19: they run on a thread of
    /// their own at this lower CPU priority, so a settlement backlog takes the CPU the
    /// API leaves idle instead of the API's latency. 0 runs them at the API's priority.
    pub worker_nice: i32,
    /// `[storage]`: the backend (memory, SQLite or PostgreSQL) and its settings.
    pub storage: StorageConfig,
    /// `[log]`: the tracing filter and output format.
    pub log: LogConfig,
    /// `[engine]`: the workers' polling, leases, batches and read caches.
    pub engine: EngineSettings,
    /// `[rails]`: which chains run, simulated or real.
    pub rails: RailsConfig,
    /// `[sim]`: the simulated chains' settings.
    pub sim: SimSettings,
    /// `[demo]`: the demo tenant of a zero-configuration start.
    pub demo: DemoConfig,
    /// Webhook delivery: the SSRF allow-list and the dispatcher's budget.
    pub webhooks: WebhookSettings,
    /// Deprecated: `true` means `webhooks.allow_networks` also holds `127.0.0.1/32` and
    /// `::1/128` (a receiver on this machine, over http). Kept so existing configurations
    /// keep working.
    pub webhooks_allow_loopback_http: bool,
    /// When set, `/metrics` answers only requests with `Authorization: Bearer <token>`.
    pub metrics_token: Option<Secret>,
    /// `[http]`: connection and request timeouts, connection cap.
    pub http: HttpSettings,
    /// `[rate_limits]`: per-API-key request budgets.
    pub rate_limits: RateLimitSettings,
    /// `[otp]`: one-time code attempt limits, lockouts and SMS quotas.
    pub otp: OtpSettings,
    /// `[limits]`: the minimum send per rail and the tenants' rent quota.
    pub limits: SponsorshipSettings,
    /// `development` (the default) or `production`, which refuses every simulated or
    /// in-memory part.
    pub mode: Mode,
    /// `[sms]`: the SMS gateway.
    pub sms: SmsSettings,
    /// `[notices]`: the per-country text of the "you received money" SMS.
    pub notices: NoticeSettings,
    /// `[rates]`: the FX rate source.
    pub rates: RatesSettings,
    /// `[signer]`: key custody.
    pub signer: SignerSettings,
    /// `[payouts]`: the mobile-money payout provider.
    pub payouts: PayoutSettings,
    /// How long idempotency records, quotes, challenges and webhook records are kept,
    /// and how often the purge job runs.
    pub retention: RetentionSettings,
    /// `[reconciliation]`: how often the ledger is compared with the chains.
    pub reconciliation: ReconciliationSettings,
    /// `[checkout]`: session bounds and the deposit-intake secret.
    pub checkout: CheckoutSettings,
    /// `[escrow]`: whether new escrows are admitted (TRON deposits enabled for escrow).
    pub escrow: EscrowSettings,
    /// `[swaps]`: the venue of `POST /v1/swaps`.
    pub swaps: SwapSettings,
    /// `[screening]`: the sanctions screen of every outbound payment.
    pub screening: ScreeningSettings,
    /// `[admin]`: the staff routes' bearer token (absent: they answer 404) and the
    /// top-up lifetime.
    pub admin: AdminSettings,
    /// `[consoles]`: the web consoles' public URL and trusted proxies (cookies'
    /// `Secure`, the client's address), sign-in throttling, the self-service fee
    /// ceiling.
    pub consoles: ConsoleSettings,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: "127.0.0.1:8080".into(),
            data_dir: PathBuf::from("stablecoin-data"),
            master_seed: None,
            body_limit_bytes: 64 * 1024,
            worker_interval_ms: 250,
            run_workers: true,
            worker_nice: 10,
            storage: StorageConfig::default(),
            log: LogConfig::default(),
            engine: EngineSettings::default(),
            rails: RailsConfig::default(),
            sim: SimSettings::default(),
            demo: DemoConfig::default(),
            webhooks: WebhookSettings::default(),
            webhooks_allow_loopback_http: false,
            metrics_token: None,
            http: HttpSettings::default(),
            rate_limits: RateLimitSettings::default(),
            otp: OtpSettings::default(),
            limits: SponsorshipSettings::default(),
            mode: Mode::default(),
            sms: SmsSettings::default(),
            notices: NoticeSettings::default(),
            rates: RatesSettings::default(),
            signer: SignerSettings::default(),
            payouts: PayoutSettings::default(),
            retention: RetentionSettings::default(),
            reconciliation: ReconciliationSettings::default(),
            checkout: CheckoutSettings::default(),
            escrow: EscrowSettings::default(),
            swaps: SwapSettings::default(),
            screening: ScreeningSettings::default(),
            admin: AdminSettings::default(),
            consoles: ConsoleSettings::default(),
        }
    }
}

impl Config {
    /// `listen` as a socket address; `Invalid` when it is not one (e.g. a bare host name).
    pub fn listen_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.listen.parse().map_err(|_| {
            ConfigError::Invalid(format!(
                "listen {:?} is not a socket address such as 127.0.0.1:8080",
                self.listen
            ))
        })
    }

    /// The primary EVM chain of `/v1/users/*`.
    pub fn primary_evm_chain(&self) -> Option<u64> {
        self.rails
            .primary_evm_chain
            .or_else(|| self.rails.evm_chains.first().copied())
    }
}
