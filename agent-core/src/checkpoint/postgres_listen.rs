//! `PgListener`: a connection of its own that LISTENs, for code that keeps its own tables
//! next to the checkpoints and wakes on `NOTIFY` (the server's run queue: wake-ups,
//! cancels, stream fan-out between instances). Pooled connections cannot listen: the pool
//! drives their messages and drops notifications.

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_postgres::AsyncMessage;

use super::postgres_connect;
use crate::error::GraphError;

/// One notification: its channel and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgNotification {
    /// The channel it was sent on.
    pub channel: String,
    /// Its payload.
    pub payload: String,
}

/// A connection listening on some channels; [`recv`](Self::recv) gives what arrives.
pub struct PgListener {
    _client: tokio_postgres::Client,
    rx: mpsc::UnboundedReceiver<PgNotification>,
}

impl std::fmt::Debug for PgListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgListener").finish_non_exhaustive()
    }
}

fn err(e: impl std::fmt::Display) -> GraphError {
    GraphError::Storage {
        backend: "postgres",
        detail: e.to_string(),
    }
}

impl PgListener {
    /// Connects to `url` (the same URLs and `sslmode`s as
    /// [`PostgresSaver::connect`](super::PostgresSaver::connect)) and listens on `channels`
    /// (SQL identifiers: letters, digits and `_`).
    pub async fn connect(url: &str, channels: &[&str]) -> Result<Self, GraphError> {
        for c in channels {
            if c.is_empty() || !c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_') {
                return Err(err(format!(
                    "`{c}` is not a channel name: use letters, digits and _"
                )));
            }
        }
        let settings = postgres_connect::settings(url).map_err(err)?;
        let (client, mut connection) = settings
            .config
            .connect(settings.tls)
            .await
            .map_err(|e| err(format!("connecting the listener: {e}")))?;
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(message) = messages.next().await {
                match message {
                    Ok(AsyncMessage::Notification(n)) => {
                        let sent = tx.send(PgNotification {
                            channel: n.channel().to_owned(),
                            payload: n.payload().to_owned(),
                        });
                        if sent.is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "the postgres listener's connection failed");
                        return;
                    }
                }
            }
        });
        for c in channels {
            client
                .batch_execute(&format!("LISTEN {c}"))
                .await
                .map_err(|e| err(format!("LISTEN {c}: {e}")))?;
        }
        Ok(PgListener {
            _client: client,
            rx,
        })
    }

    /// The next notification; `None` once the connection is gone (reconnect then).
    pub async fn recv(&mut self) -> Option<PgNotification> {
        self.rx.recv().await
    }
}
