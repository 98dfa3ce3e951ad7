//! [`RemoteSigner`]: the `Signer` of an API process whose keys live in the signing
//! service. Transport failures, timeouts, 5xx and unauthenticated answers are
//! `SignerError::Unavailable` (the same call may succeed later); a refused request
//! (4xx) is `SignerError::InvalidInput`, except a refused credential (401), which is
//! `Unavailable`: the request was fine, the deployment's token is not, and operations
//! should wait for it to be fixed rather than fail for good. Public keys never change,
//! so they are cached.

use crate::Error;
use crate::protocol::{
    AuthKey, DERIVE_KEY_PATH, DeriveKeyRequest, DeriveKeyResponse, ErrorBody, PUBLIC_KEY_PATH,
    PublicKeyRequest, PublicKeyResponse, SIGN_PATH, SIGNATURE_HEADER, SignRequest, SignResponse,
    TIMESTAMP_HEADER, curve_name, from_hex, to_hex,
};
use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use stablecoin_core::ports::{Curve, KeyPurpose, PublicKey, Signature, Signer, SignerError};
use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

/// How many public keys are cached (the cache is emptied when full).
const KEY_CACHE: usize = 65_536;

/// A [`Signer`] over the signing service's HTTP protocol.
pub struct RemoteSigner {
    client: reqwest::Client,
    base: String,
    auth: AuthKey,
    keys: Mutex<HashMap<(String, Curve), PublicKey>>,
}

impl fmt::Debug for RemoteSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteSigner")
            .field("url", &self.base)
            .field("token", &"<redacted>")
            .finish()
    }
}

impl RemoteSigner {
    /// A signer for the service at `url` (`http://10.0.0.5:7300`), authenticating with
    /// `token`; each request gives up after `timeout`.
    pub fn new(url: &str, token: &str, timeout: Duration) -> Result<RemoteSigner, Error> {
        let base = url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::Config(
                "the signer URL must start with http:// or https://".into(),
            ));
        }
        if timeout.is_zero() {
            return Err(Error::Config("the signer timeout must be positive".into()));
        }
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()
            .map_err(|e| Error::Config(format!("HTTP client: {e}")))?;
        Ok(RemoteSigner {
            client,
            base,
            auth: AuthKey::from_token(token)?,
            keys: Mutex::new(HashMap::new()),
        })
    }

    /// A symmetric key derived from the seed under an allow-listed label
    /// ([`DERIVABLE_LABELS`](crate::protocol::DERIVABLE_LABELS)); keep it in memory only.
    pub async fn derive_key(&self, label: &str) -> Result<[u8; 32], SignerError> {
        let (res, sig): (DeriveKeyResponse, String) = self
            .call(
                DERIVE_KEY_PATH,
                &DeriveKeyRequest {
                    label: label.into(),
                },
            )
            .await?;
        let wrapped = from_hex(&res.wrapped_key_hex)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
            .ok_or_else(|| SignerError::Unavailable("malformed derived key".into()))?;
        if res.label != label {
            return Err(SignerError::Unavailable("answer for another label".into()));
        }
        Ok(self.auth.wrap(&sig, wrapped))
    }

    /// One authenticated call; the answer and the request's signature.
    async fn call<Req: Serialize, Res: DeserializeOwned>(
        &self,
        path: &str,
        req: &Req,
    ) -> Result<(Res, String), SignerError> {
        let body = serde_json::to_vec(req).map_err(|e| SignerError::InvalidInput(e.to_string()))?;
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let sig = self.auth.sign_request(ts, path, &body);
        let unavailable = |e: reqwest::Error| {
            // reqwest's message names the URL, never the body.
            SignerError::Unavailable(format!("signing service: {e}"))
        };
        let resp = self
            .client
            .post(format!("{}{path}", self.base))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(TIMESTAMP_HEADER, ts.to_string())
            .header(SIGNATURE_HEADER, &sig)
            .body(body)
            .send()
            .await
            .map_err(unavailable)?;
        let status = resp.status().as_u16();
        let mac = resp
            .headers()
            .get(SIGNATURE_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = resp.bytes().await.map_err(unavailable)?;
        let authentic = mac.is_some_and(|m| {
            AuthKey::signatures_match(&self.auth.sign_response(&sig, status, &bytes), &m)
        });
        if !authentic {
            return Err(match status {
                401 => SignerError::Unavailable(
                    "the signing service refused our credentials (check the signer token and \
                     both clocks)"
                        .into(),
                ),
                413 => SignerError::InvalidInput("payload too large for the signer".into()),
                s => SignerError::Unavailable(format!(
                    "unauthenticated answer from the signing service (HTTP {s})"
                )),
            });
        }
        if status == 200 {
            let res = serde_json::from_slice(&bytes).map_err(|_| {
                SignerError::Unavailable("malformed answer from the signing service".into())
            })?;
            return Ok((res, sig));
        }
        let what = serde_json::from_slice::<ErrorBody>(&bytes)
            .map(|b| format!("{}: {}", b.error.code, b.error.message))
            .unwrap_or_else(|_| format!("HTTP {status}"));
        Err(if (400..500).contains(&status) {
            SignerError::InvalidInput(what)
        } else {
            SignerError::Unavailable(what)
        })
    }
}

fn expect_len(bytes: Vec<u8>, len: usize, what: &str) -> Result<Vec<u8>, SignerError> {
    if bytes.len() == len {
        Ok(bytes)
    } else {
        Err(SignerError::Unavailable(format!(
            "the signing service answered a {what} of {} bytes, not {len}",
            bytes.len()
        )))
    }
}

fn decode(hex: &str) -> Result<Vec<u8>, SignerError> {
    from_hex(hex).map_err(|_| SignerError::Unavailable("malformed hex in the answer".into()))
}

#[async_trait]
impl Signer for RemoteSigner {
    async fn public_key(
        &self,
        purpose: &KeyPurpose,
        curve: Curve,
    ) -> Result<PublicKey, SignerError> {
        let path = purpose.path();
        let lock = || self.keys.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = lock().get(&(path.clone(), curve)) {
            return Ok(k.clone());
        }
        let req = PublicKeyRequest {
            purpose: path.clone(),
            curve: curve_name(curve).into(),
        };
        let (res, _): (PublicKeyResponse, _) = self.call(PUBLIC_KEY_PATH, &req).await?;
        let len = match curve {
            Curve::Secp256k1 => 33,
            Curve::Ed25519 => 32,
        };
        let key = PublicKey {
            curve,
            bytes: expect_len(decode(&res.public_key_hex)?, len, "public key")?,
        };
        let mut map = lock();
        if map.len() >= KEY_CACHE {
            map.clear();
        }
        map.insert((path, curve), key.clone());
        Ok(key)
    }

    async fn sign(
        &self,
        purpose: &KeyPurpose,
        curve: Curve,
        payload: &[u8],
    ) -> Result<Signature, SignerError> {
        let req = SignRequest {
            purpose: purpose.path(),
            curve: curve_name(curve).into(),
            payload_hex: to_hex(payload),
        };
        let (res, _): (SignResponse, _) = self.call(SIGN_PATH, &req).await?;
        let len = match curve {
            Curve::Secp256k1 => 65,
            Curve::Ed25519 => 64,
        };
        Ok(Signature(expect_len(
            decode(&res.signature_hex)?,
            len,
            "signature",
        )?))
    }
}
