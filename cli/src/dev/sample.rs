//! The samples inside `xdb dev`: their business tables in the dev database, and their
//! worker served in-process.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use xdb_config::{DatabaseUrl, Dialect};
use xdb_samples::email::EmailOutbox;
use xdb_samples::SampleWorkerConfig;

/// Creates the samples' tables unless they exist (the scripts are re-runnable).
pub async fn create_tables(url: &DatabaseUrl) -> anyhow::Result<()> {
    match url.dialect() {
        Dialect::Postgres => {
            let (client, connection) =
                tokio_postgres::connect(&url.driver_url(), tokio_postgres::NoTls)
                    .await
                    .with_context(|| format!("connecting to {}", url.redacted()))?;
            let connection = tokio::spawn(connection);
            for script in xdb_samples::sql::POSTGRES {
                client
                    .batch_execute(script)
                    .await
                    .context("creating the samples' tables")?;
            }
            drop(client);
            let _ = connection.await;
        }
        Dialect::MySql => {
            use mysql_async::prelude::Queryable as _;
            let opts = mysql_async::Opts::from_url(&url.driver_url())
                .with_context(|| format!("reading {}", url.redacted()))?;
            let mut conn = mysql_async::Conn::new(opts)
                .await
                .with_context(|| format!("connecting to {}", url.redacted()))?;
            for script in xdb_samples::sql::MYSQL {
                conn.query_drop(*script)
                    .await
                    .context("creating the samples' tables")?;
            }
            conn.disconnect().await?;
        }
    }
    Ok(())
}

/// The sample worker, serving until stopped.
pub struct SampleWorker {
    address: SocketAddr,
    stop: oneshot::Sender<()>,
    served: JoinHandle<std::io::Result<()>>,
}

impl SampleWorker {
    /// Serves every sample's worker API on `listen`.
    pub async fn start(listen: SocketAddr, reminder_interval: Duration) -> anyhow::Result<Self> {
        let listener = xdb_sdk::worker::bind_listener(listen)
            .with_context(|| format!("cannot listen on {listen} (--worker-listen)"))?;
        let address = listener.local_addr()?;
        let app = xdb_samples::sample_router_with(SampleWorkerConfig::new(
            EmailOutbox::new(),
            reminder_interval,
        ));
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
        });
        Ok(Self {
            address,
            stop,
            served,
        })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Finishes the calls in flight, then stops.
    pub async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        Ok(self.served.await??)
    }
}
