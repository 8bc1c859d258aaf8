//! Automatic mode: the handlers that answer a round's input requests.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use mcp_types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestFormParams,
    ElicitRequestParams, ElicitRequestUrlParams, ElicitResult, ElicitationCapability, InputRequest,
    InputResponse, ListRootsResult, SamplingCapability,
};

use super::ClientError;

type Handler<P, R> = Arc<dyn Fn(P) -> BoxFuture<'static, R> + Send + Sync>;

/// The handlers of an automatic-mode client, one per kind of input request. A client declares
/// the capability of each handler it has (see [`super::ClientBuilder`]).
#[derive(Clone, Default)]
pub struct InputHandlers {
    form: Option<Handler<ElicitRequestFormParams, ElicitResult>>,
    url: Option<Handler<ElicitRequestUrlParams, ElicitResult>>,
    sampling: Option<Handler<CreateMessageRequestParams, CreateMessageResult>>,
    roots: Option<Handler<(), ListRootsResult>>,
}

impl std::fmt::Debug for InputHandlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputHandlers")
            .field("form", &self.form.is_some())
            .field("url", &self.url.is_some())
            .field("sampling", &self.sampling.is_some())
            .field("roots", &self.roots.is_some())
            .finish()
    }
}

impl InputHandlers {
    /// Answers form-mode elicitations.
    #[must_use]
    pub fn on_form<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ElicitRequestFormParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ElicitResult> + Send + 'static,
    {
        self.form = Some(Arc::new(move |p| Box::pin(handler(p))));
        self
    }

    /// Answers URL-mode elicitations (after the user consented to open the URL, or not).
    #[must_use]
    pub fn on_url<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ElicitRequestUrlParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ElicitResult> + Send + 'static,
    {
        self.url = Some(Arc::new(move |p| Box::pin(handler(p))));
        self
    }

    /// Answers `sampling/createMessage`.
    #[must_use]
    pub fn on_sampling<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CreateMessageResult> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |p| Box::pin(handler(p))));
        self
    }

    /// Answers `roots/list`.
    #[must_use]
    pub fn on_roots<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ListRootsResult> + Send + 'static,
    {
        self.roots = Some(Arc::new(move |()| Box::pin(handler())));
        self
    }

    /// The capabilities these handlers can serve, added to `base`.
    pub(crate) fn declare(&self, mut base: ClientCapabilities) -> ClientCapabilities {
        if self.form.is_some() || self.url.is_some() {
            let mut e = base.elicitation.take().unwrap_or_default();
            // Explicit members: `{}` alone means form only, so adding `url` to it must keep
            // form by naming it.
            if (self.form.is_some() || e.supports_form()) && e.form.is_none() {
                e.form = ElicitationCapability::form().form;
            }
            if self.url.is_some() && e.url.is_none() {
                e.url = ElicitationCapability::url().url;
            }
            base.elicitation = Some(e);
        }
        if self.sampling.is_some() && base.sampling.is_none() {
            base = base.with_sampling(SamplingCapability::default());
        }
        if self.roots.is_some() && base.roots.is_none() {
            base = base.with_roots();
        }
        base
    }

    /// Answers one input request, or says that no handler fits it.
    pub(crate) async fn answer(
        &self,
        key: &str,
        request: &InputRequest,
    ) -> Result<InputResponse, ClientError> {
        let missing = |method: &str| ClientError::NoHandler {
            key: key.to_owned(),
            method: method.to_owned(),
        };
        match request {
            InputRequest::Elicit(e) => match &e.params {
                ElicitRequestParams::Form(p) => match &self.form {
                    Some(h) => Ok(h(p.clone()).await.into()),
                    None => Err(missing("elicitation/create (form)")),
                },
                ElicitRequestParams::Url(p) => match &self.url {
                    Some(h) => Ok(h(p.clone()).await.into()),
                    None => Err(missing("elicitation/create (url)")),
                },
            },
            InputRequest::CreateMessage(m) => match &self.sampling {
                Some(h) => Ok(h(m.params.clone()).await.into()),
                None => Err(missing("sampling/createMessage")),
            },
            InputRequest::ListRoots(_) => match &self.roots {
                Some(h) => Ok(h(()).await.into()),
                None => Err(missing("roots/list")),
            },
        }
    }
}
