//! A browser-like client of the web consoles for HTTP-level tests: keeps cookies as a
//! browser would (by name, deleted by `Max-Age=0`), never follows redirects (the tests
//! look at them), posts forms URL-encoded, and reads each page's CSRF token.

use reqwest::StatusCode;
use std::collections::BTreeMap;

/// One page as received.
pub struct Page {
    pub status: StatusCode,
    pub location: Option<String>,
    pub set_cookies: Vec<String>,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Page {
    /// The CSRF token of the page's first form.
    pub fn csrf(&self) -> String {
        csrf_of(&self.body).unwrap_or_else(|| panic!("no CSRF field in: {}", self.body))
    }
}

/// The value of the first `name="csrf"` hidden field in `html`.
pub fn csrf_of(html: &str) -> Option<String> {
    let at = html.find("name=\"csrf\" value=\"")? + "name=\"csrf\" value=\"".len();
    let end = html[at..].find('"')?;
    Some(html[at..at + end].to_string())
}

/// `application/x-www-form-urlencoded` of `fields`.
pub fn form_encode(fields: &[(&str, &str)]) -> String {
    fn enc(s: &str) -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                b' ' => "+".into(),
                _ => format!("%{b:02X}"),
            })
            .collect()
    }
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// A console client with its own cookie jar.
pub struct Console {
    pub base: String,
    client: reqwest::Client,
    pub cookies: BTreeMap<String, String>,
    /// Extra headers sent with every request (`X-Forwarded-Proto`).
    pub extra: Vec<(String, String)>,
}

impl Console {
    pub fn new(base: &str) -> Console {
        Console {
            base: base.to_string(),
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookies: BTreeMap::new(),
            extra: vec![],
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    async fn finish(&mut self, r: reqwest::Response) -> Page {
        let status = r.status();
        let headers = r.headers().clone();
        let set_cookies: Vec<String> = headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect();
        for c in &set_cookies {
            let first = c.split(';').next().unwrap_or("");
            if let Some((k, v)) = first.split_once('=') {
                if c.contains("Max-Age=0") || v.is_empty() {
                    self.cookies.remove(k);
                } else {
                    self.cookies.insert(k.to_string(), v.to_string());
                }
            }
        }
        let location = headers
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        Page {
            status,
            location,
            set_cookies,
            headers,
            body: r.text().await.unwrap_or_default(),
        }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let mut req = self
            .client
            .get(format!("{}{path}", self.base))
            .header("cookie", self.cookie_header());
        for (k, v) in &self.extra {
            req = req.header(k.as_str(), v.as_str());
        }
        let r = req.send().await.unwrap();
        self.finish(r).await
    }

    pub async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let mut req = self
            .client
            .post(format!("{}{path}", self.base))
            .header("cookie", self.cookie_header())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form_encode(fields));
        for (k, v) in &self.extra {
            req = req.header(k.as_str(), v.as_str());
        }
        let r = req.send().await.unwrap();
        self.finish(r).await
    }

    /// Signs in to the dashboard with `key` (the sign-in page's token, then the form);
    /// panics unless it lands on `/dashboard`.
    pub async fn sign_in(base: &str, key: &str) -> Console {
        let mut c = Console::new(base);
        let page = c.get("/dashboard/login").await;
        assert_eq!(page.status, 200, "{}", page.body);
        let r = c
            .post(
                "/dashboard/login",
                &[("csrf", &page.csrf()), ("api_key", key)],
            )
            .await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(r.location.as_deref(), Some("/dashboard"));
        c
    }

    /// GETs `path` and returns its CSRF token (for a form of that page).
    pub async fn csrf(&mut self, path: &str) -> String {
        let p = self.get(path).await;
        assert_eq!(p.status, 200, "{}", p.body);
        p.csrf()
    }
}
