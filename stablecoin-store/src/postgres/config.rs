//! What a [`PgStore`](super::PgStore) connects with.

use super::failover::{self, SessionAttrs};
use crate::error::Error;
use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use std::str::FromStr;
use std::time::Duration;

/// Configuration of a [`PgStore`](super::PgStore).
#[derive(Clone, PartialEq, Eq)]
pub struct PgConfig {
    /// `postgres://user:password@host:port/database`, or with several hosts, libpq's
    /// way: `postgres://user@h1:p1,h2:p2/database?target_session_attrs=read-write`
    /// (the store connects to the first host that can write and follows the writable
    /// one after a failover; see `postgres/failover.rs`).
    pub url: String,
    /// A schema to keep the store's tables in (created if missing; the connections'
    /// `search_path`). `None`: the database's default (usually `public`).
    pub schema: Option<String>,
    /// Pool size of this store (each in-flight commit holds one connection).
    pub max_connections: u32,
    /// How often a commit that lost a race (deadlock, serialization failure, concurrent
    /// insert of the same new id) is run again before it fails with `Backend`.
    pub max_retries: u32,
    /// How long a call waits for a free pooled connection before it fails with
    /// `Backend`.
    pub acquire_timeout: Duration,
    /// The URL reaches PostgreSQL through a pooler in transaction mode that keeps no
    /// prepared statements across server connections (PgBouncer before 1.21, or without
    /// `max_prepared_statements`). Set by the URL parameter `pooler=transaction` (taken
    /// out of the URL before connecting) or [`PgConfig::transaction_pooler`]. Then the
    /// store keeps no session state: no named prepared statements (sqlx's statement
    /// cache is off), every statement runs inside a transaction (so the pooler keeps
    /// one server connection from its parse to its result), the schema is set per
    /// transaction (`SET LOCAL search_path`, not a startup option the pooler would drop),
    /// and migrations are never run through it (a session advisory lock would outlive
    /// its server connection): a schema with pending migrations is refused, to be
    /// migrated over a direct connection (`stablecoin-server migrate`).
    pub transaction_pooler: bool,
    /// Group commit: at most this many concurrent interactive commits (batches not
    /// marked `background`) share one transaction and its statements (`group.rs`); 1
    /// turns it off. Set by [`PgConfig::group_commit`] or the URL parameter
    /// `group_commit=<n>` (taken out of the URL before connecting).
    pub group_commit: u32,
    /// How many group transactions run at once (each holds one connection while it
    /// commits). The store uses at most `max_connections - 1` of them (one connection
    /// stays for reads and background commits), and no group commit on a pool of one.
    pub group_writers: u32,
}

impl std::fmt::Debug for PgConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConfig")
            .field("url", &crate::redact_url(&self.url))
            .field("schema", &self.schema)
            .field("max_connections", &self.max_connections)
            .field("max_retries", &self.max_retries)
            .field("acquire_timeout", &self.acquire_timeout)
            .field("transaction_pooler", &self.transaction_pooler)
            .field("group_commit", &self.group_commit)
            .field("group_writers", &self.group_writers)
            .finish()
    }
}

impl PgConfig {
    /// Defaults: public schema, 16 connections, 32 retries, 30 s acquire timeout,
    /// groups of up to 32 commits written by 4 group transactions at once.
    pub fn new(url: impl Into<String>) -> Self {
        PgConfig {
            url: url.into(),
            schema: None,
            max_connections: 16,
            max_retries: 32,
            acquire_timeout: Duration::from_secs(30),
            transaction_pooler: false,
            group_commit: 32,
            group_writers: 4,
        }
    }

    /// At most `n` concurrent interactive commits share a transaction
    /// ([`PgConfig::group_commit`]); 1 turns group commit off.
    pub fn group_commit(mut self, n: u32) -> Self {
        self.group_commit = n;
        self
    }

    /// How many group transactions run at once ([`PgConfig::group_writers`]).
    pub fn group_writers(mut self, n: u32) -> Self {
        self.group_writers = n;
        self
    }

    /// The group size: the URL's `group_commit=<n>` if it has one, else
    /// [`PgConfig::group_commit`].
    pub(super) fn group_size(&self) -> Result<u32, Error> {
        let query = self.url.split_once('?').map_or("", |(_, q)| q);
        for pair in query.split('&') {
            if let Some(("group_commit", n)) = pair.split_once('=') {
                return match n.parse::<u32>() {
                    Ok(n) if n >= 1 => Ok(n),
                    _ => Err(Error::Config {
                        reason: format!(
                            "postgres URL parameter group_commit={n}: expected a whole number >= 1"
                        ),
                    }),
                };
            }
        }
        Ok(self.group_commit)
    }

    /// Connects through a pooler in transaction mode ([`PgConfig::transaction_pooler`]).
    pub fn transaction_pooler(mut self, on: bool) -> Self {
        self.transaction_pooler = on;
        self
    }

    /// The URL without the store's own `pooler=` parameter, and whether it asked for
    /// transaction-pooler mode.
    fn url_and_pooler(&self) -> Result<(String, bool), Error> {
        let Some((base, query)) = self.url.split_once('?') else {
            return Ok((self.url.clone(), self.transaction_pooler));
        };
        let mut pooler = self.transaction_pooler;
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("pooler", "transaction")) => pooler = true,
                Some(("pooler", "none")) => pooler = false,
                Some(("pooler", other)) => {
                    return Err(Error::Config {
                        reason: format!(
                            "postgres URL parameter pooler={other}: expected `transaction` or `none`"
                        ),
                    });
                }
                // The store's own (`group_size`), not the server's.
                Some(("group_commit", _)) => {}
                _ => kept.push(pair),
            }
        }
        let url = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        Ok((url, pooler))
    }

    /// Keeps the store's tables in `schema`, created if missing; it must match
    /// `[a-z_][a-z0-9_]{0,62}` (checked at connect).
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// Sets the pool size; must be at least 1 (checked at connect).
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n;
        self
    }

    /// Sets how often a commit that lost a race is retried before it fails.
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    fn validate(&self) -> Result<(), Error> {
        let bad = |reason: String| Err(Error::Config { reason });
        if self.max_connections == 0 {
            return bad("postgres max_connections must be at least 1".into());
        }
        if self.group_size()? == 0 {
            return bad("postgres group_commit must be at least 1".into());
        }
        if let Some(schema) = &self.schema {
            let ok = !schema.is_empty()
                && schema.len() <= 63
                && schema
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
                && schema
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if !ok {
                return bad(format!(
                    "postgres schema {schema:?} must match [a-z_][a-z0-9_]{{0,62}}"
                ));
            }
        }
        Ok(())
    }

    /// The one-host connect options of every host when the URL names several (or sets
    /// `target_session_attrs`), each with the schema as search_path (unless through a
    /// transaction pooler, where the store sets it per transaction); `None` for a plain
    /// one-host URL.
    pub(super) fn host_candidates(
        &self,
    ) -> Result<Option<(Vec<PgConnectOptions>, SessionAttrs)>, Error> {
        let (url, pooler) = self.url_and_pooler()?;
        let hosts = failover::parse(&url)?;
        if hosts.urls.len() == 1 && hosts.attrs == SessionAttrs::Any {
            return Ok(None);
        }
        let candidates = failover::candidates(self, &hosts)?
            .into_iter()
            .map(|o| self.session_options(o, pooler))
            .collect();
        Ok(Some((candidates, hosts.attrs)))
    }

    /// What every session of the pool gets: no statement cache through a transaction
    /// pooler (a named statement would stay on the server connection it was prepared
    /// on, which the pooler gives to another client next), the schema as search_path
    /// otherwise (through a pooler the store sets it per transaction).
    fn session_options(&self, options: PgConnectOptions, pooler: bool) -> PgConnectOptions {
        if pooler {
            return options.statement_cache_capacity(0);
        }
        match &self.schema {
            Some(schema) => options.options([("search_path", schema.as_str())]),
            None => options,
        }
    }

    /// Connection options (see `session_options`), creating the schema if one is set,
    /// and whether the connection goes through a transaction pooler. With several hosts:
    /// those of the first that qualifies (waiting up to `acquire_timeout` for one, e.g.
    /// during a failover).
    pub(super) async fn options(&self) -> Result<(PgConnectOptions, bool), Error> {
        self.validate()?;
        let (url, pooler) = self.url_and_pooler()?;
        let hosts = failover::parse(&url)?;
        let (options, conn) = if hosts.urls.len() == 1 && hosts.attrs == SessionAttrs::Any {
            let options = PgConnectOptions::from_str(&url).map_err(|e| Error::Config {
                reason: format!("bad postgres URL {}: {e}", crate::redact_url(&url)),
            })?;
            (options, None)
        } else {
            let candidates = failover::candidates(self, &hosts)?;
            let (i, conn) =
                failover::choose_within(&url, &candidates, hosts.attrs, self.acquire_timeout)
                    .await?;
            (candidates[i].clone(), Some(conn))
        };
        let options = if pooler {
            options.statement_cache_capacity(0)
        } else {
            options
        };
        let Some(schema) = &self.schema else {
            if let Some(conn) = conn {
                let _ = conn.close().await;
            }
            return Ok((self.session_options(options, pooler), pooler));
        };
        let mut conn = match conn {
            Some(conn) => conn,
            None => PgConnection::connect_with(&options).await?,
        };
        // Validated above: a plain lowercase identifier, safe to splice.
        let created = sqlx::query(sqlx::AssertSqlSafe(format!(
            "CREATE SCHEMA IF NOT EXISTS {schema}"
        )))
        .execute(&mut conn)
        .await;
        if let Err(e) = created {
            // Two processes creating it at once: one loses on the catalog's unique index.
            let exists: bool =
                sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
                    .bind(schema.clone())
                    .fetch_one(&mut conn)
                    .await?;
            if !exists {
                return Err(e.into());
            }
        }
        let _ = conn.close().await;
        Ok((self.session_options(options, pooler), pooler))
    }
}

#[cfg(test)]
mod pooler_tests {
    use super::*;

    #[test]
    fn the_pooler_parameter_is_read_and_taken_out_of_the_url() {
        let at = |url: &str| PgConfig::new(url).url_and_pooler();
        assert_eq!(
            at("postgres://u@h:6432/db?pooler=transaction").unwrap(),
            ("postgres://u@h:6432/db".to_string(), true)
        );
        assert_eq!(
            at("postgres://u@h/db?sslmode=disable&pooler=transaction&application_name=x").unwrap(),
            (
                "postgres://u@h/db?sslmode=disable&application_name=x".to_string(),
                true
            )
        );
        assert_eq!(
            at("postgres://u@h/db?sslmode=disable").unwrap(),
            ("postgres://u@h/db?sslmode=disable".to_string(), false)
        );
        assert_eq!(
            at("postgres://u@h/db").unwrap(),
            ("postgres://u@h/db".to_string(), false)
        );
        assert!(
            !PgConfig::new("postgres://u@h/db?pooler=none")
                .transaction_pooler(true)
                .url_and_pooler()
                .unwrap()
                .1,
            "the URL says none"
        );
        assert!(
            PgConfig::new("postgres://u@h/db")
                .transaction_pooler(true)
                .url_and_pooler()
                .unwrap()
                .1
        );
        assert!(at("postgres://u@h/db?pooler=session").is_err());
        assert_eq!(
            at("postgres://u@h/db?group_commit=1&sslmode=disable").unwrap(),
            ("postgres://u@h/db?sslmode=disable".to_string(), false)
        );
    }

    #[test]
    fn the_group_size_comes_from_the_url_or_the_config() {
        let size = |url: &str| PgConfig::new(url).group_size();
        assert_eq!(size("postgres://u@h/db").unwrap(), 32);
        assert_eq!(size("postgres://u@h/db?group_commit=1").unwrap(), 1);
        assert_eq!(size("postgres://u@h/db?a=b&group_commit=8").unwrap(), 8);
        assert!(size("postgres://u@h/db?group_commit=0").is_err());
        assert!(size("postgres://u@h/db?group_commit=many").is_err());
        assert_eq!(
            PgConfig::new("postgres://u@h/db")
                .group_commit(1)
                .group_size()
                .unwrap(),
            1
        );
    }
}
