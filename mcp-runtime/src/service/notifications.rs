//! [`NotificationSink`]: where a running request's notifications (progress, log) go.

use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// Where a running request sends its notifications (progress, log).
///
/// Each notification is one serialized JSON-RPC notification. Sending after the request was
/// cancelled, or after its transport went away, is a silent no-op that returns `false`: the
/// protocol forbids sending anything more for a cancelled request.
#[derive(Debug, Clone)]
pub struct NotificationSink {
    route: Route,
    cancel: CancellationToken,
}

#[derive(Debug, Clone)]
enum Route {
    /// Everything is dropped.
    Discard,
    /// A channel that exists from the start.
    Channel(mpsc::Sender<Bytes>),
    /// A channel created on the first send (see [`NotificationSink::lazy`]).
    Lazy(Arc<LazyRoute>),
}

/// The shared half of a lazily created channel.
#[derive(Debug)]
struct LazyRoute {
    capacity: usize,
    tx: OnceLock<mpsc::Sender<Bytes>>,
    /// The receiver, parked here by the first send until the transport takes it.
    rx: Mutex<Option<mpsc::Receiver<Bytes>>>,
    opened: Notify,
}

impl LazyRoute {
    fn sender(&self) -> &mpsc::Sender<Bytes> {
        self.tx.get_or_init(|| {
            let (tx, rx) = mpsc::channel(self.capacity);
            if let Ok(mut slot) = self.rx.lock() {
                *slot = Some(rx);
            }
            // `notify_one` stores a permit when nobody waits yet: the wake-up is never lost.
            self.opened.notify_one();
            tx
        })
    }
}

/// The transport's end of [`NotificationSink::lazy`]: learns when the handler first sends.
#[derive(Debug)]
pub struct LazyReceiver {
    route: Arc<LazyRoute>,
}

impl LazyReceiver {
    /// Completes with the channel's receiver once the handler sent its first notification
    /// (that notification is the first item). Never completes if the handler never sends.
    /// Cancel safe: dropping the future loses nothing.
    pub async fn opened(&self) -> mpsc::Receiver<Bytes> {
        loop {
            if let Some(rx) = self.try_take() {
                return rx;
            }
            self.route.opened.notified().await;
        }
    }

    /// The receiver, if the handler has sent anything yet (each receiver is handed out once).
    pub fn try_take(&self) -> Option<mpsc::Receiver<Bytes>> {
        self.route.tx.get()?;
        self.route.rx.lock().ok()?.take()
    }
}

impl NotificationSink {
    /// A sink feeding a bounded channel; `cancel` silences the sink once cancelled.
    ///
    /// Transports use this; services can use it in their own tests to observe notifications.
    pub fn channel(capacity: usize, cancel: CancellationToken) -> (Self, mpsc::Receiver<Bytes>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (Self::from_sender(tx, cancel), rx)
    }

    /// Like [`NotificationSink::channel`], but the channel is only created when the handler
    /// first sends: most requests emit nothing (no `progressToken`, no `logLevel`), and for
    /// them the per-request channel would be pure overhead. The transport waits on
    /// [`LazyReceiver::opened`] next to the handler.
    pub fn lazy(capacity: usize, cancel: CancellationToken) -> (Self, LazyReceiver) {
        let route = Arc::new(LazyRoute {
            capacity: capacity.max(1),
            tx: OnceLock::new(),
            rx: Mutex::new(None),
            opened: Notify::new(),
        });
        (
            Self {
                route: Route::Lazy(Arc::clone(&route)),
                cancel,
            },
            LazyReceiver { route },
        )
    }

    /// A sink feeding an existing channel (e.g. a writer shared by several requests).
    pub fn from_sender(tx: mpsc::Sender<Bytes>, cancel: CancellationToken) -> Self {
        Self {
            route: Route::Channel(tx),
            cancel,
        }
    }

    /// A sink that drops everything (for callers with no stream to notify).
    pub fn discard() -> Self {
        Self {
            route: Route::Discard,
            cancel: CancellationToken::new(),
        }
    }

    /// Sends one serialized notification; waits while the transport's buffer is full, which
    /// slows a chatty handler down to the client's pace instead of buffering without bound.
    ///
    /// Returns `false` when the notification was dropped (request cancelled or stream closed).
    pub async fn send(&self, notification: Bytes) -> bool {
        if self.cancel.is_cancelled() {
            return false;
        }
        let tx = match &self.route {
            Route::Discard => return false,
            Route::Channel(tx) => tx,
            Route::Lazy(route) => route.sender(),
        };
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => false,
            sent = tx.send(notification) => sent.is_ok(),
        }
    }

    /// Serializes and sends one notification; see [`NotificationSink::send`].
    pub async fn send_json(&self, notification: &Value) -> bool {
        match serde_json::to_vec(notification) {
            Ok(bytes) => self.send(Bytes::from(bytes)).await,
            Err(_) => false,
        }
    }

    /// Whether notifications can no longer be delivered.
    pub fn is_closed(&self) -> bool {
        self.cancel.is_cancelled()
            || match &self.route {
                Route::Discard => true,
                Route::Channel(tx) => tx.is_closed(),
                // Not created yet: open as long as the transport still holds its end.
                // Not created yet: open until cancelled (the transport cancels when it goes).
                Route::Lazy(route) => route.tx.get().is_some_and(mpsc::Sender::is_closed),
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lazy_sink_creates_its_channel_on_the_first_send() {
        let cancel = CancellationToken::new();
        let (sink, lazy) = NotificationSink::lazy(4, cancel.clone());
        assert!(lazy.try_take().is_none(), "nothing sent, no channel");
        assert!(!sink.is_closed());
        let waiter = tokio::spawn(async move {
            let mut rx = lazy.opened().await;
            (rx.recv().await, rx.recv().await)
        });
        assert!(sink.send(Bytes::from_static(b"1")).await);
        assert!(sink.clone().send(Bytes::from_static(b"2")).await);
        let (first, second) = waiter.await.unwrap();
        assert_eq!(first.as_deref(), Some(&b"1"[..]));
        assert_eq!(second.as_deref(), Some(&b"2"[..]));
        cancel.cancel();
        assert!(sink.is_closed());
        assert!(
            !sink.send(Bytes::from_static(b"3")).await,
            "cancelled sinks drop"
        );
    }
}
