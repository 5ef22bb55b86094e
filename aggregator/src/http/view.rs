//! `GET /runs/{id}/view`: the item viewer of a finished run in the browser — one self-contained
//! page (inline CSS and script, `assets/view.css` and `assets/view.js`; nothing from the
//! network) that reads the run's items page by page from `GET /runs/{id}/items` and its
//! filters from `/items/facets`.
//!
//! The page itself holds no data of the run (not even whether it exists: the script reads the
//! id from its own address), so it is served without the token — a browser cannot send
//! `Authorization` when it opens an address. When the API requires a token the script asks for
//! it once, keeps it in `sessionStorage` and sends it as `Authorization: Bearer` on every
//! fetch; a 401 asks again. Its Content-Security-Policy lets it talk to this origin only.

use axum::http::header;
use axum::response::{IntoResponse, Response};

const PAGE: &str = concat!(
    "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">",
    "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">",
    "<title>evalfleet · items</title><style>",
    include_str!("assets/view.css"),
    "</style><script>window.__viewerErrors=[];addEventListener(\"error\",function(e){window.__viewerErrors.push(String(e.message))});addEventListener(\"unhandledrejection\",function(e){window.__viewerErrors.push(String(e.reason))});</script>",
    "</head><body>\n<h1 id=\"title\">Run</h1><p class=\"meta\" id=\"run-meta\"></p>\n",
    "<form id=\"auth\" hidden><p>This API requires a token.</p><label>API token <input id=\"token\" type=\"password\" autocomplete=\"off\"></label> <button type=\"submit\">Open</button><p id=\"auth-error\"></p></form>\n",
    "<div id=\"controls\"></div><p id=\"error\"></p>\n",
    "<p class=\"meta\"><span id=\"count\"></span> · <button id=\"prev\">‹ previous</button> <span id=\"page\"></span> <button id=\"next\">next ›</button></p>\n",
    "<div class=\"scroll\"><table id=\"items-table\"></table></div>\n<aside id=\"detail\" hidden></aside>\n<script>",
    include_str!("assets/view.js"),
    "</script></body></html>\n"
);

/// Scripts and styles inline, fetches to this origin, nothing else.
const POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

pub(super) async fn view() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        PAGE,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_self_contained() {
        for remote in ["http://", "https://", "src=", "href="] {
            assert!(!PAGE.contains(remote), "{remote} in the page");
        }
        assert!(PAGE.contains("sessionStorage") && PAGE.contains("Bearer"));
        // The script never writes text as HTML.
        assert!(!PAGE.contains("innerHTML"));
    }
}
