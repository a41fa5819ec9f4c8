//! The transport as one tower service that routes by method itself: `POST` to [`super::post`],
//! `GET`/`HEAD`/`DELETE` to [`super::stream`], anything else a `405`; and a refusal answered
//! again in the protocol's own terms when its profile has them.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request as HttpRequest;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Method};
use tracing::Instrument;

use super::post::serve_post;
use super::{StreamableHttp, refuse};
use crate::handler::RequestHandler;
use crate::hardening::{Admitted, AdmittedService, Refusal, RefusalAnswer, Refused};

/// The methods the endpoint serves, as its `405` names them (`GET` answers `HEAD` too).
const ALLOWED_METHODS: &str = "POST,GET,HEAD,DELETE";

/// The transport as one service that routes by method itself, for
/// [`Hardening::harden`](crate::hardening::Hardening::harden): hardened that way it is a
/// single boxed route, where a `MethodRouter` behind `Router::layer` is three (a service box
/// cloned and a future boxed at each), and a `POST`'s work is boxed once here.
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

/// The transport as a plain route ([`StreamableHttp::into_routes`]): admitted by the
/// router-wide layers when it runs behind them.
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
        let admitted = Admitted::behind_layers(&request, self.0.config.limits.max_bytes);
        self.answer(request, admitted)
    }
}

impl<H: RequestHandler> AdmittedService for Endpoint<H> {
    type Future = EndpointFuture;

    fn serve(&self, request: HttpRequest, admitted: Admitted) -> EndpointFuture {
        self.answer(request, admitted)
    }
}

impl<H: RequestHandler> Endpoint<H> {
    /// Answers by method, the transport's refusals in the protocol's terms when its profile
    /// has its own ([`crate::Profile::with_refusal_answers`]).
    fn answer(&self, request: HttpRequest, admitted: Admitted) -> EndpointFuture {
        let answer = self.answer_by_method(request, admitted);
        match self.0.handler.profile().refusal_answers() {
            None => answer,
            Some(answers) => Box::pin(async move {
                answer
                    .await
                    .map(|response| reanswer_refusal(response, answers))
            }),
        }
    }

    /// A POST's body is read within the limit it was admitted with.
    fn answer_by_method(&self, request: HttpRequest, admitted: Admitted) -> EndpointFuture {
        if *request.method() != Method::POST {
            return self.answer_other(request);
        }
        let span = tracing::debug_span!("post", session = tracing::field::Empty);
        let started = {
            let _entered = span.enter();
            self.0.start_post(request, admitted)
        };
        match started {
            Ok(start) => Box::pin(serve_post(Arc::clone(&self.0), start).instrument(span)),
            Err(refusal) => answered(refuse(refusal, None)),
        }
    }

    /// Every method but `POST`; each asks the session store, so each is a future.
    #[inline(never)]
    fn answer_other(&self, request: HttpRequest) -> EndpointFuture {
        let transport = Arc::clone(&self.0);
        let (parts, _) = request.into_parts();
        let answer = async move {
            let headers = &parts.headers;
            let response = match parts.method {
                Method::GET => transport.serve_get(headers).await,
                // As axum answers `HEAD` on a `get` route: the `GET` answer's head alone.
                Method::HEAD => {
                    let mut response = transport.serve_get(headers).await;
                    *response.body_mut() = Body::empty();
                    response
                }
                Method::DELETE => transport.serve_delete(headers).await,
                _ => Refusal::MethodNotAllowed(Some(transport.allowed_methods())).into_response(),
            };
            Ok(response)
        };
        Box::pin(answer.in_current_span())
    }
}

impl<H: RequestHandler> StreamableHttp<H> {
    /// The methods a `405` names: `POST` alone where `GET` and `DELETE` have no session to
    /// serve.
    fn allowed_methods(&self) -> HeaderValue {
        match self.session_header() {
            Some(_) => HeaderValue::from_static(ALLOWED_METHODS),
            None => HeaderValue::from_static("POST"),
        }
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

/// A response ready at once, as an [`EndpointFuture`].
fn answered(response: Response) -> EndpointFuture {
    Box::pin(std::future::ready(Ok(response)))
}

#[cfg(test)]
mod tests {
    use http::{StatusCode, header};

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

    /// An answer served through `hardening`'s one endpoint for `endpoint`.
    async fn served_hardened(endpoint: Endpoint<Echo>, mut request: HttpRequest) -> Response {
        // The default hardening admits loopback names only.
        request
            .headers_mut()
            .insert(header::HOST, HeaderValue::from_static("localhost"));
        let hardening = crate::hardening::HardeningConfig::default()
            .build()
            .unwrap();
        let Ok(answer) = hardening.harden(endpoint).serve(request, None).await;
        answer
    }

    #[tokio::test]
    async fn a_hardened_json_answer_carries_its_media_type_and_the_security_headers_alone() {
        let endpoint = echo_endpoint(crate::handler::Profile::new());
        let security = crate::hardening::SecurityHeaders::default()
            .parse()
            .unwrap();
        let mut expected = http::HeaderMap::new();
        expected.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        security.stamp(&mut expected);
        let answer = served_hardened(endpoint, echo_post("application/json")).await;
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(answer.headers(), &expected);
    }

    #[tokio::test]
    async fn an_unhardened_json_answer_of_another_media_type_carries_that_type_alone() {
        use tower::ServiceExt as _;
        const MEDIA_TYPE: &str = "application/vnd.test+json";
        let endpoint = echo_endpoint(crate::handler::Profile::new().with_media_type(MEDIA_TYPE));
        let Ok(answer) = endpoint.oneshot(echo_post(MEDIA_TYPE)).await;
        assert_eq!(answer.status(), StatusCode::OK);
        let names: Vec<_> = answer.headers().keys().collect();
        assert_eq!(names, [header::CONTENT_TYPE]);
        assert_eq!(answer.headers()[header::CONTENT_TYPE], MEDIA_TYPE);
    }

    #[test]
    fn a_posts_boxed_future_fits_the_allocators_small_size_classes() {
        let endpoint = echo_endpoint(crate::handler::Profile::new());
        let admitted = Admitted {
            body_limit: crate::hardening::BodyLimit(1024),
            peer: None,
            answer_headers: crate::hardening::AnswerHeaders::default(),
        };
        let serving = endpoint.serve(echo_post("application/json"), admitted);
        // glibc serves blocks up to 1,032 bytes from its per-thread cache; a larger box takes
        // the slow path on every request.
        let size = std::mem::size_of_val(&*serving);
        assert!(size < 1024, "the boxed POST future is {size} bytes");
    }
}
