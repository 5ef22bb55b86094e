//! Who may read the aggregator's HTTP API. The API serves users' data (runs, reports,
//! comparisons), so with a token every route but the probes and `/metrics` requires
//! `Authorization: Bearer <token>`; without one the API may listen on loopback only (the
//! command line enforces that with [`all_loopback`]).
//!
//! The check is a [`ValidateRequest`] run by tower-http's `ValidateRequestHeaderLayer`
//! ([`layer`]), applied with `route_layer` to the protected routes only. tower-http's own
//! `bearer` validator is not used: it is deprecated, compares with `==` and answers 401 without
//! `WWW-Authenticate`. Here the token is compared in constant time (`subtle`), and a refusal is a
//! 401 with `WWW-Authenticate: Bearer` and a JSON error body, like the API's other errors.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, Request, Response, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde_json::json;
use subtle::ConstantTimeEq;
use tower_http::validate_request::{ValidateRequest, ValidateRequestHeaderLayer};

/// The token the protected routes require. Its `Debug` never shows it.
#[derive(Clone)]
pub struct ApiToken(Arc<[u8]>);

/// Why a string cannot be the API token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("it is empty")]
    Empty,
    /// A client could not send it: a header value cannot hold control characters, and the
    /// token is the rest of `Authorization` after `Bearer `, so it cannot hold spaces either.
    #[error("it holds whitespace or control characters, which a client cannot send in an Authorization header")]
    Unsendable,
}

impl ApiToken {
    pub fn new(token: &str) -> Result<ApiToken, TokenError> {
        if token.is_empty() {
            return Err(TokenError::Empty);
        }
        if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(TokenError::Unsendable);
        }
        Ok(ApiToken(token.as_bytes().into()))
    }

    /// Whether `presented` is the token, in time independent of where they differ (only a
    /// difference in length returns early, which reveals the length alone).
    fn matches(&self, presented: &[u8]) -> bool {
        self.0.as_ref().ct_eq(presented).into()
    }
}

impl fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiToken(<redacted>)")
    }
}

/// The token of `Authorization: Bearer <token>` (the scheme is case-insensitive, RFC 7235), or
/// None when the header is missing or is not a bearer credential.
fn presented(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let split = value.iter().position(|b| *b == b' ')?;
    let (scheme, rest) = value.split_at(split);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let start = rest.iter().position(|b| *b != b' ')?;
    Some(&rest[start..])
}

/// Lets a request through only with the right bearer token.
#[derive(Clone, Debug)]
pub struct RequireBearer {
    token: ApiToken,
}

impl<B> ValidateRequest<B> for RequireBearer {
    type ResponseBody = Body;

    fn validate(&mut self, request: &mut Request<B>) -> Result<(), Response<Body>> {
        match presented(request.headers()) {
            Some(token) if self.token.matches(token) => Ok(()),
            Some(_) => Err(unauthorized("invalid bearer token")),
            None => Err(unauthorized(
                "authentication required: send Authorization: Bearer <token>",
            )),
        }
    }
}

fn unauthorized(error: &str) -> Response<Body> {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        Json(json!({ "error": error })),
    )
        .into_response()
}

/// The layer that requires `token` on the routes it is applied to.
pub fn layer(token: ApiToken) -> ValidateRequestHeaderLayer<RequireBearer> {
    ValidateRequestHeaderLayer::custom(RequireBearer { token })
}

/// Whether every address is a loopback one (127.0.0.0/8, ::1, or ::ffff:127.x.y.z): the only
/// addresses the API may listen on without a token. False for none at all.
pub fn all_loopback(addrs: &[SocketAddr]) -> bool {
    !addrs.is_empty() && addrs.iter().all(|a| a.ip().to_canonical().is_loopback())
}

#[cfg(test)]
mod tests {
    use axum::routing::get;
    use axum::Router;
    use tower::ServiceExt;

    use super::*;

    const TOKEN: &str = "s3cret-Token_1";

    fn request(authorization: Option<&str>) -> Request<()> {
        let mut b = Request::builder().uri("/runs");
        if let Some(value) = authorization {
            b = b.header(header::AUTHORIZATION, value);
        }
        b.body(()).unwrap()
    }

    /// The refusal, or None when the request may pass.
    fn refusal(authorization: Option<&str>) -> Option<Response<Body>> {
        let mut v = RequireBearer {
            token: ApiToken::new(TOKEN).unwrap(),
        };
        v.validate(&mut request(authorization)).err()
    }

    async fn body_json(response: Response<Body>) -> serde_json::Value {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn the_right_token_passes_in_any_case_of_the_scheme() {
        for value in [
            format!("Bearer {TOKEN}"),
            format!("bearer {TOKEN}"),
            format!("BEARER  {TOKEN}"),
        ] {
            assert!(refusal(Some(&value)).is_none(), "{value}");
        }
    }

    #[tokio::test]
    async fn a_missing_or_wrong_token_is_a_401_with_www_authenticate_and_json() {
        let wrong = [
            None,
            Some("Bearer"),
            Some("Bearer "),
            Some("Basic czNjcmV0"),
            Some(TOKEN),
            Some("Bearer s3cret-Token_2"),
            Some("Bearer s3cret-Token_1x"),
            Some("Bearer s3cret"),
            Some("Bearer S3CRET-TOKEN_1"),
            Some("Bearer s3cret-Token_1 extra"),
        ];
        for value in wrong {
            let refused = refusal(value).unwrap_or_else(|| panic!("{value:?} must be refused"));
            assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{value:?}");
            assert_eq!(refused.headers()[header::WWW_AUTHENTICATE], "Bearer");
            assert_eq!(
                refused.headers()[header::CONTENT_TYPE],
                "application/json",
                "{value:?}"
            );
            let body = body_json(refused).await;
            assert!(body["error"].is_string(), "{body}");
        }
    }

    #[test]
    fn tokens_a_client_cannot_send_are_refused() {
        assert_eq!(ApiToken::new("").unwrap_err(), TokenError::Empty);
        for bad in ["a b", "token\n", "\ttoken", "to\u{7f}ken"] {
            assert_eq!(
                ApiToken::new(bad).unwrap_err(),
                TokenError::Unsendable,
                "{bad:?}"
            );
        }
        assert_eq!(
            format!("{:?}", ApiToken::new(TOKEN).unwrap()),
            "ApiToken(<redacted>)"
        );
    }

    #[test]
    fn only_loopback_addresses_are_loopback() {
        let parse = |list: &[&str]| -> Vec<SocketAddr> {
            list.iter().map(|a| a.parse().unwrap()).collect()
        };
        assert!(all_loopback(&parse(&["127.0.0.1:8080"])));
        assert!(all_loopback(&parse(&["127.1.2.3:8080", "[::1]:8080"])));
        assert!(all_loopback(&parse(&["[::ffff:127.0.0.1]:8080"])));
        assert!(!all_loopback(&parse(&["0.0.0.0:8080"])));
        assert!(!all_loopback(&parse(&["[::]:8080"])));
        assert!(!all_loopback(&parse(&["10.0.0.5:8080"])));
        assert!(!all_loopback(&parse(&["127.0.0.1:8080", "10.0.0.5:8080"])));
        assert!(!all_loopback(&[]));
    }

    /// Through the router: the layer guards the routes it is applied to, not the ones merged
    /// in beside them.
    #[tokio::test]
    async fn the_layer_guards_protected_routes_only() {
        let protected = Router::new()
            .route("/runs", get(|| async { "runs" }))
            .route_layer(layer(ApiToken::new(TOKEN).unwrap()));
        let app = protected.merge(Router::new().route("/healthz", get(|| async { "ok" })));
        let call = |path: &str, auth: Option<String>| {
            let mut b = Request::builder().uri(path);
            if let Some(a) = auth {
                b = b.header(header::AUTHORIZATION, a);
            }
            app.clone().oneshot(b.body(Body::empty()).unwrap())
        };
        let status = |r: Response<Body>| r.status();
        assert_eq!(
            status(call("/runs", None).await.unwrap()),
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            status(call("/runs", Some("Bearer nope".into())).await.unwrap()),
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            status(
                call("/runs", Some(format!("Bearer {TOKEN}")))
                    .await
                    .unwrap()
            ),
            StatusCode::OK
        );
        assert_eq!(
            status(call("/healthz", None).await.unwrap()),
            StatusCode::OK
        );
    }
}
