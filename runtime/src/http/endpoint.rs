//! The transport as one tower service that routes by method itself: `POST` to [`super::post`],
//! `GET`/`HEAD`/`DELETE` to [`super::stream`], anything else a `405`; and a refusal answered
//! again in the protocol's own terms when its profile has them.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request as HttpRequest;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, Method, header};
use tracing::Instrument;

use super::post::serve_post;
use super::{StreamableHttp, refuse};
use crate::handler::RequestHandler;
use crate::hardening::{BodyLimit, Refusal, RefusalAnswer, Refused};

/// The methods the endpoint serves, as its `405` names them (`GET` answers `HEAD` too).
const ALLOWED_METHODS: &str = "POST,GET,HEAD,DELETE";

/// The transport as one tower service that routes by method itself, for
/// [`Hardening::endpoint`]: hardened that way it is a single boxed route, where a
/// `MethodRouter` behind `Router::layer` is three (a service box cloned and a future boxed at
/// each), and a `POST`'s work is boxed once here.
pub(crate) struct Endpoint<H: RequestHandler>(pub(super) Arc<StreamableHttp<H>>);

impl<H: RequestHandler> Clone for Endpoint<H> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

/// Boxed whatever the method: a `POST`'s work has to be, and a response held inline would make
/// every request's future as large as a response, copied at each layer it passes.
pub(crate) type EndpointFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Response, Infallible>> + Send>>;

impl<H: RequestHandler> tower::Service<HttpRequest> for Endpoint<H> {
    type Response = Response;
    type Error = Infallible;
    type Future = EndpointFuture;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: HttpRequest) -> EndpointFuture {
        crate::hardening::SharedService::serve(self, request)
    }
}

impl<H: RequestHandler> crate::hardening::SharedService for Endpoint<H> {
    type Future = EndpointFuture;

    fn serve(&self, request: HttpRequest) -> EndpointFuture {
        self.answer(request, None)
    }

    fn serve_within(
        &self,
        request: HttpRequest,
        limit: BodyLimit,
        peer: SocketAddr,
    ) -> EndpointFuture {
        self.answer(request, Some(HandedDown { limit, peer }))
    }

    fn answer_json_with(&self, headers: &HeaderMap) {
        // Taken only when it labels an answer with this profile's media type.
        if headers.get(header::CONTENT_TYPE) == Some(&self.0.content_type) {
            let _first_offer_kept = self.0.json_answer.set(headers.clone());
        }
    }
}

impl<H: RequestHandler> Endpoint<H> {
    /// Answers by method, the transport's refusals in the protocol's terms when its profile
    /// has its own ([`crate::Profile::with_refusal_answers`]).
    fn answer(&self, request: HttpRequest, handed: Option<HandedDown>) -> EndpointFuture {
        let answer = self.answer_by_method(request, handed);
        match self.0.handler.profile().refusal_answers() {
            None => answer,
            Some(answers) => Box::pin(async move {
                answer
                    .await
                    .map(|response| reanswer_refusal(response, answers))
            }),
        }
    }

    /// A POST's body is read within the limit `handed` down with it, or else within the limit
    /// its [`BodyLimit`] extension names, or else the transport's own.
    fn answer_by_method(&self, request: HttpRequest, handed: Option<HandedDown>) -> EndpointFuture {
        if *request.method() != Method::POST {
            return self.answer_other(&request);
        }
        let span = tracing::debug_span!("post", session = tracing::field::Empty);
        let started = {
            let _entered = span.enter();
            self.0.start_post(request, handed)
        };
        match started {
            Ok(start) => Box::pin(serve_post(Arc::clone(&self.0), start).instrument(span)),
            Err(refusal) => answered(refuse(refusal, None)),
        }
    }

    /// Every method but `POST`, answered at once.
    #[inline(never)]
    fn answer_other(&self, request: &HttpRequest) -> EndpointFuture {
        let answer = match *request.method() {
            Method::GET => self.0.serve_get(request.headers()),
            // As axum answers `HEAD` on a `get` route: the `GET` answer's head alone.
            Method::HEAD => {
                let mut response = self.0.serve_get(request.headers());
                *response.body_mut() = Body::empty();
                response
            }
            Method::DELETE => self.0.serve_delete(request.headers()),
            _ => Refusal::MethodNotAllowed(Some(HeaderValue::from_static(ALLOWED_METHODS)))
                .into_response(),
        };
        answered(answer)
    }
}

/// A refusal answered again as the protocol's `answers` say; any other response as it is.
#[cold]
fn reanswer_refusal(
    response: Response,
    answers: fn(&Refusal) -> Option<RefusalAnswer>,
) -> Response {
    let Some(refused) = response.extensions().get::<Refused>() else {
        return response;
    };
    match answers(&refused.refusal) {
        Some(answer) => {
            let Refused { refusal, id } = refused.clone();
            refusal.into_response_as(id.as_ref(), answer)
        }
        None => response,
    }
}

/// What a server that owns its listener hands a directly mounted transport with each request,
/// rather than as request extensions.
#[derive(Debug, Clone, Copy)]
pub(super) struct HandedDown {
    pub(super) limit: BodyLimit,
    pub(super) peer: SocketAddr,
}

/// A response ready at once, as an [`EndpointFuture`].
fn answered(response: Response) -> EndpointFuture {
    Box::pin(std::future::ready(Ok(response)))
}

#[cfg(test)]
mod tests {
    use http::StatusCode;

    use super::*;
    use crate::http::HttpConfig;
    use crate::jsonrpc::Request;

    /// A protocol answering `echo` with its params, as the overhead benchmark's does.
    struct Echo {
        profile: crate::handler::Profile,
    }

    impl RequestHandler for Echo {
        type Session = ();

        fn profile(&self) -> &crate::handler::Profile {
            &self.profile
        }

        async fn handle(
            &self,
            request: Request,
            _cx: crate::handler::Context<()>,
        ) -> crate::handler::Reply {
            request
                .params
                .ok_or_else(crate::jsonrpc::ErrorObject::method_not_found)
        }

        async fn notify(
            &self,
            _notification: crate::jsonrpc::Notification,
            _cx: crate::handler::Context<()>,
        ) {
        }
    }

    fn echo_endpoint(profile: crate::handler::Profile) -> Endpoint<Echo> {
        StreamableHttp::new(Echo { profile }, HttpConfig::default()).into_endpoint()
    }

    fn echo_post(media_type: &str) -> HttpRequest {
        http::Request::post("/rpc")
            .header(header::CONTENT_TYPE, media_type)
            .body(Body::from(
                r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}"#,
            ))
            .unwrap()
    }

    #[tokio::test]
    async fn a_json_answer_is_built_with_the_header_map_a_direct_hardening_offers() {
        use crate::hardening::SharedService as _;
        let endpoint = echo_endpoint(crate::handler::Profile::new());
        let security = crate::hardening::SecurityHeaders::default()
            .parse()
            .unwrap();
        endpoint.answer_json_with(security.json_answer());
        let Ok(answer) = endpoint.serve(echo_post("application/json")).await;
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(answer.headers(), security.json_answer());
    }

    #[tokio::test]
    async fn an_offered_header_map_labelling_another_media_type_is_not_taken() {
        use crate::hardening::SharedService as _;
        const MEDIA_TYPE: &str = "application/vnd.test+json";
        let endpoint = echo_endpoint(crate::handler::Profile::new().with_media_type(MEDIA_TYPE));
        let security = crate::hardening::SecurityHeaders::default()
            .parse()
            .unwrap();
        endpoint.answer_json_with(security.json_answer());
        let Ok(answer) = endpoint.serve(echo_post(MEDIA_TYPE)).await;
        assert_eq!(answer.status(), StatusCode::OK);
        let names: Vec<_> = answer.headers().keys().collect();
        assert_eq!(names, [header::CONTENT_TYPE]);
        assert_eq!(answer.headers()[header::CONTENT_TYPE], MEDIA_TYPE);
    }

    #[test]
    fn a_posts_boxed_future_fits_the_allocators_small_size_classes() {
        use crate::hardening::SharedService as _;
        let endpoint = echo_endpoint(crate::handler::Profile::new());
        let serving = endpoint.serve(echo_post("application/json"));
        // glibc serves blocks up to 1,032 bytes from its per-thread cache; a larger box takes
        // the slow path on every request.
        let size = std::mem::size_of_val(&*serving);
        assert!(size < 1024, "the boxed POST future is {size} bytes");
    }
}
