//! The API service and the async service in one process, as a library: `xdb-server`
//! and `xdb dev` both run [`Services`].

use std::future::Future;
use std::net::SocketAddr;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use xdb_api_service::ApiServiceConfig;
use xdb_async_service::{AsyncService, AsyncServiceConfig};
use xdb_config::Settings;

/// Both services, running.
pub struct Services {
    api_address: SocketAddr,
    async_service: AsyncService,
    stop_api: oneshot::Sender<()>,
    api: JoinHandle<anyhow::Result<()>>,
}

/// Installs the schema when asked, then starts the async service and serves the API.
/// Returns once both are listening.
pub async fn start(settings: &Settings, install_schema: bool) -> anyhow::Result<Services> {
    let mut api_config = ApiServiceConfig::from_settings(settings);
    let async_config = AsyncServiceConfig::from_settings(settings);
    if install_schema {
        let outcome = xdb_sys_schema::install(&api_config.database_url).await?;
        tracing::info!(%outcome, "schema");
    }
    let listener = xdb_cluster::bind_listener(api_config.api.listen).map_err(|e| {
        anyhow::anyhow!(
            "cannot listen on {} (api.listen): {e}",
            api_config.api.listen
        )
    })?;
    let api_address = listener.local_addr()?;
    let async_service = AsyncService::start(async_config).await?;
    // The console's dashboard reads the async half's metrics through the API half.
    if api_config.api.console_async_metrics_url.is_none() {
        api_config.api.console_async_metrics_url =
            Some(format!("http://{}/metrics", async_service.address()));
    }
    let state = match xdb_api_service::connect(api_config).await {
        Ok(state) => state,
        Err(error) => {
            let _ = async_service.shutdown().await;
            return Err(error);
        }
    };
    let (stop_api, stopped) = oneshot::channel();
    let api = tokio::spawn(xdb_api_service::serve(state, listener, async move {
        let _ = stopped.await;
    }));
    Ok(Services {
        api_address,
        async_service,
        stop_api,
        api,
    })
}

impl Services {
    /// Where the API service (and the console, at `/ui`) listens.
    pub fn api_address(&self) -> SocketAddr {
        self.api_address
    }

    /// Where the async service's health and internal API listen.
    pub fn async_address(&self) -> SocketAddr {
        self.async_service.address()
    }

    /// Runs until `signal` resolves or the API stops on its own, then stops both.
    pub async fn run_until(mut self, signal: impl Future<Output = ()>) -> anyhow::Result<()> {
        let ended_early = tokio::select! {
            () = signal => None,
            served = &mut self.api => Some(served),
        };
        match ended_early {
            None => self.stop().await,
            Some(served) => {
                let stopped = self.async_service.shutdown().await;
                served?.and(stopped)
            }
        }
    }

    /// Finishes the API's in-flight requests, then drains the async service.
    pub async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop_api.send(());
        let served = self.api.await?;
        let stopped = self.async_service.shutdown().await;
        served.and(stopped)
    }
}
