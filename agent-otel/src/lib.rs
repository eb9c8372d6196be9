//! # agent-otel: agentgraph's spans and metrics out of the process, over OTLP
//!
//! agentgraph's libraries only emit `tracing` spans (see `agent_core::telemetry` for the
//! run, step, node and checkpoint spans, `agent_llm` for `chat` and `embeddings`,
//! `agent_tools` for `execute_tool`), shaped by the OpenTelemetry GenAI semantic conventions.
//! This crate is the opt-in helper that sends them somewhere: a `tracing-opentelemetry`
//! layer over an OpenTelemetry SDK pipeline that batches spans off the hot path and exports
//! them over OTLP, plus OpenTelemetry metrics read from the same spans ([`MetricsLayer`]).
//!
//! It is configured by the standard environment variables, and does nothing (installs no
//! layer, starts no thread) when no endpoint is set:
//!
//! | variable | meaning |
//! | --- | --- |
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` | base URL of the collector (`http://localhost:4318` for HTTP, `http://localhost:4317` for gRPC); `/v1/traces` and `/v1/metrics` are appended for HTTP |
//! | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `..._METRICS_ENDPOINT` | one signal's full URL |
//! | `OTEL_EXPORTER_OTLP_PROTOCOL` (or `..._TRACES_PROTOCOL`) | `http/protobuf` (default) or `grpc` (the `grpc` feature) |
//! | `OTEL_EXPORTER_OTLP_HEADERS` (or per signal) | `key=value,...`, e.g. an API key |
//! | `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` | the resource the spans come from |
//! | `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG` | sampling (default: parent-based, always on) |
//! | `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER` = `none` | turns one signal off |
//! | `OTEL_SDK_DISABLED` = `true` | turns everything off |
//! | `OTEL_BSP_*`, `OTEL_METRIC_EXPORT_INTERVAL`, `OTEL_EXPORTER_OTLP_TIMEOUT` | batching, export interval and timeout, as the SDK reads them |
//! | `AGENT_OTEL_FILTER` | which spans are exported (`tracing-subscriber`'s `EnvFilter` syntax); default `info` |
//! | `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` = `true` | record prompts, replies, tool arguments and results (read by `agent-llm`; off by default) |
//!
//! Two ways in:
//!
//! - [`init`]: for a program: installs a global subscriber with this crate's layer and a log
//!   layer on stderr (filtered by `RUST_LOG`, default `warn`), and returns an [`OtelGuard`].
//! - [`layer`]: for a program that composes its own subscriber: the layer (`None` when
//!   nothing is configured) and its guard.
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! # fn main() -> Result<(), agent_otel::OtelError> {
//! let (otel, guard) = agent_otel::layer()?;
//! tracing_subscriber::registry()
//!     .with(otel)
//!     .with(tracing_subscriber::fmt::layer())
//!     .init();
//! // ... run graphs ...
//! drop(guard); // flushes: the spans are exported before the program exits
//! # Ok(()) }
//! ```
//!
//! The guard flushes and shuts the pipeline down when dropped (waiting at most five
//! seconds), so a short program loses no span. Keep it alive as long as spans are made.
//!
//! Metrics: [`MetricsLayer`] turns the same spans into the GenAI conventions' client
//! histograms (`gen_ai.client.operation.duration`, `gen_ai.client.token.usage`,
//! `gen_ai.client.operation.time_to_first_chunk`) and agentgraph's own (run, node and tool
//! durations; agent-server's runs by status, their duration and queue wait), exported with
//! the traces to the same collector.
//!
//! ## Dependencies, and why
//!
//! - `opentelemetry`, `opentelemetry_sdk` (0.33): the API and the SDK (batch span processor
//!   on a thread of its own, periodic metric reader, samplers and resources read from the
//!   environment). Traces and metrics only.
//! - `opentelemetry-otlp` (0.33): the OTLP exporters. HTTP/protobuf with reqwest's blocking
//!   client (the 0.13 the workspace already has; the SDK exports from its own thread, which
//!   has no tokio runtime, so the async client would panic there), gRPC with tonic behind the
//!   `grpc` feature (tonic needs a tokio runtime: the exports run on a one-thread runtime this
//!   crate owns, so they neither need nor block the program's).
//! - `tracing-opentelemetry` (0.34, made for opentelemetry 0.33): the layer that turns
//!   `tracing` spans into OpenTelemetry spans, parents and all.
//! - `tracing-subscriber`: layers, per-layer filters and [`init`]'s log layer.
//! - `rustls` (the `tls` feature): installs ring's crypto provider for `https://`
//!   endpoints, as `agent-llm` does.
//! - `tokio` (the `grpc` feature): the runtime the gRPC exports run on.

mod metrics;

use std::time::Duration;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub use metrics::MetricsLayer;

/// The instrumentation scope of agentgraph's spans and metrics.
pub const SCOPE: &str = "agentgraph";

/// The environment variable with the filter of the exported spans (`EnvFilter` syntax).
pub const FILTER_ENV: &str = "AGENT_OTEL_FILTER";

/// How long dropping the guard waits at most for the last exports.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// The layer [`layer`] and [`Builder::build`] hand out: the OpenTelemetry and metrics layers
/// under the export filter, boxed.
pub type OtelLayer<S> = Box<dyn Layer<S> + Send + Sync + 'static>;

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Protobuf over HTTP (`http/protobuf`, port 4318): the default.
    HttpProtobuf,
    /// gRPC (`grpc`, port 4317): needs the `grpc` feature.
    Grpc,
}

impl Protocol {
    /// The protocol named by `OTEL_EXPORTER_OTLP_PROTOCOL`'s value.
    pub fn parse(value: &str) -> Result<Protocol, OtelError> {
        match value.trim() {
            "" | "http/protobuf" => Ok(Protocol::HttpProtobuf),
            "grpc" => Ok(Protocol::Grpc),
            other => Err(OtelError::UnsupportedProtocol(other.to_owned())),
        }
    }
}

/// What went wrong setting up or shutting down the export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// The protocol asked for is not one this crate speaks.
    #[error(
        "OTLP protocol `{0}` is not supported; set OTEL_EXPORTER_OTLP_PROTOCOL to `http/protobuf` (the default) or `grpc`"
    )]
    UnsupportedProtocol(String),
    /// gRPC was asked for, and this build has no gRPC exporter.
    #[error(
        "OTLP over gRPC needs agent-otel's `grpc` feature; build with it, or set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"
    )]
    GrpcNotBuilt,
    /// An exporter could not be built (a bad endpoint or header, most often).
    #[error(
        "cannot build the OTLP {signal} exporter: {source}; check the OTEL_EXPORTER_OTLP_* variables"
    )]
    Exporter {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// The exporter's error.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// The runtime the gRPC exports run on could not start.
    #[error("cannot start the runtime of the gRPC exporter: {0}")]
    Runtime(#[source] std::io::Error),
    /// The export filter does not parse.
    #[error("invalid span filter `{filter}` (AGENT_OTEL_FILTER): {message}")]
    Filter {
        /// The filter as given.
        filter: String,
        /// Why it does not parse.
        message: String,
    },
    /// [`init`] found a global subscriber already installed.
    #[error(
        "a global tracing subscriber is already installed; add agent_otel::layer() to it instead of calling init()"
    )]
    AlreadyInstalled,
    /// Flushing or shutting down the pipeline failed (an export that failed or timed out).
    #[error("could not export the last spans or metrics: {0}")]
    Flush(String),
}

/// Where a signal goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Endpoint {
    /// Where the OTLP environment variables say (the exporter reads them).
    FromEnv,
    /// A base URL given to [`Builder::endpoint`].
    Base(String),
}

/// Sets up the export; [`Builder::from_env`] reads the standard variables, the other methods
/// override them (tests, programs with their own configuration).
#[derive(Debug)]
pub struct Builder {
    disabled: bool,
    traces: Option<Endpoint>,
    metrics: Option<Endpoint>,
    protocol: String,
    filter: String,
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
}

/// An environment variable's value, `None` when unset or blank.
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether the exporter variable `name` (`OTEL_TRACES_EXPORTER`...) turns its signal off.
fn exporter_off(name: &str) -> bool {
    var(name).is_some_and(|v| v.trim().eq_ignore_ascii_case("none"))
}

impl Builder {
    /// The export the environment asks for (see the crate docs): nothing when no endpoint is
    /// set or `OTEL_SDK_DISABLED=true`.
    pub fn from_env() -> Builder {
        let disabled =
            var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let base = var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
        let signal = |endpoint: &str, exporter: &str| {
            ((base || var(endpoint).is_some()) && !exporter_off(exporter))
                .then_some(Endpoint::FromEnv)
        };
        Builder {
            disabled,
            traces: signal("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"),
            metrics: signal(
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                "OTEL_METRICS_EXPORTER",
            ),
            protocol: var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
                .unwrap_or_default(),
            filter: var(FILTER_ENV).unwrap_or_else(|| "info".to_owned()),
            tracer_provider: None,
            meter_provider: None,
        }
    }

    /// Exports traces and metrics to the collector at `url` (a base URL, as
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`), whatever the environment says.
    pub fn endpoint(mut self, url: impl Into<String>) -> Builder {
        let url = url.into();
        self.traces = Some(Endpoint::Base(url.clone()));
        self.metrics = Some(Endpoint::Base(url));
        self
    }

    /// Uses `protocol`, whatever the environment says.
    pub fn protocol(mut self, protocol: Protocol) -> Builder {
        self.protocol = match protocol {
            Protocol::HttpProtobuf => "http/protobuf",
            Protocol::Grpc => "grpc",
        }
        .to_owned();
        self
    }

    /// Turns metrics off (or on, where an endpoint is set).
    pub fn metrics(mut self, on: bool) -> Builder {
        if !on {
            self.metrics = None;
        } else if self.metrics.is_none() {
            self.metrics = self.traces.clone();
        }
        self
    }

    /// Exports only the spans `directives` let through (`EnvFilter` syntax, e.g.
    /// `info,my_app=debug`); default `info`, or `AGENT_OTEL_FILTER`.
    pub fn filter(mut self, directives: impl Into<String>) -> Builder {
        self.filter = directives.into();
        self
    }

    /// Sends spans to `provider` instead of an OTLP exporter (another exporter, an in-memory
    /// one in tests). The guard flushes and shuts it down.
    pub fn tracer_provider(mut self, provider: SdkTracerProvider) -> Builder {
        self.tracer_provider = Some(provider);
        self
    }

    /// Records metrics into `provider` instead of an OTLP exporter. The guard flushes and
    /// shuts it down.
    pub fn meter_provider(mut self, provider: SdkMeterProvider) -> Builder {
        self.meter_provider = Some(provider);
        self
    }

    /// Whether anything will be exported.
    pub fn is_enabled(&self) -> bool {
        !self.disabled
            && (self.traces.is_some()
                || self.metrics.is_some()
                || self.tracer_provider.is_some()
                || self.meter_provider.is_some())
    }

    /// Builds the pipeline: the layer to add to a subscriber (`None` when nothing is
    /// exported) and the guard that flushes it.
    pub fn build<S>(self) -> Result<(Option<OtelLayer<S>>, OtelGuard), OtelError>
    where
        S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        let mut guard = OtelGuard::default();
        if !self.is_enabled() {
            return Ok((None, guard));
        }
        let filter = EnvFilter::builder()
            .parse(&self.filter)
            .map_err(|e| OtelError::Filter {
                filter: self.filter.clone(),
                message: e.to_string(),
            })?;
        let needs_otlp = (self.tracer_provider.is_none() && self.traces.is_some())
            || (self.meter_provider.is_none() && self.metrics.is_some());
        let exporters = if needs_otlp {
            Some(Exporters::new(
                Protocol::parse(&self.protocol)?,
                &mut guard,
            )?)
        } else {
            None
        };
        let resource = || Resource::builder().build();

        let tracer_provider = match (self.tracer_provider, &self.traces, &exporters) {
            (Some(provider), _, _) => Some(provider),
            (None, Some(endpoint), Some(exporters)) => {
                let exporter = exporters.spans(endpoint)?;
                Some(
                    SdkTracerProvider::builder()
                        .with_batch_exporter(exporter)
                        .with_resource(resource())
                        .build(),
                )
            }
            _ => None,
        };
        let meter_provider = match (self.meter_provider, &self.metrics, &exporters) {
            (Some(provider), _, _) => Some(provider),
            (None, Some(endpoint), Some(exporters)) => {
                let exporter = exporters.metrics(endpoint)?;
                Some(
                    SdkMeterProvider::builder()
                        .with_periodic_exporter(exporter)
                        .with_resource(resource())
                        .build(),
                )
            }
            _ => None,
        };

        let spans = tracer_provider.as_ref().map(|provider| {
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer(SCOPE))
                .with_tracked_inactivity(false)
                .with_threads(false)
                .with_location(false)
                .with_target(false)
        });
        let metrics = meter_provider
            .as_ref()
            .map(|provider| MetricsLayer::new(&provider.meter(SCOPE)));
        let layer = Layer::and_then(spans, metrics).with_filter(filter).boxed();
        guard.tracer_provider = tracer_provider;
        guard.meter_provider = meter_provider;
        Ok((Some(layer), guard))
    }

    /// Builds the pipeline and installs it as the global subscriber, with a log layer on
    /// stderr filtered by `RUST_LOG` (default `warn`). Returns the guard to keep alive.
    pub fn init(self) -> Result<OtelGuard, OtelError> {
        let (otel, guard) = self.build()?;
        let logs = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
        let fmt = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(logs);
        tracing_subscriber::registry()
            .with(otel)
            .with(fmt)
            .try_init()
            .map_err(|_| OtelError::AlreadyInstalled)?;
        Ok(guard)
    }
}

/// The layer the environment asks for (see the crate docs), `None` when nothing is
/// configured, and its guard: keep the guard alive while spans are made.
pub fn layer<S>() -> Result<(Option<OtelLayer<S>>, OtelGuard), OtelError>
where
    S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    Builder::from_env().build()
}

/// Installs the export the environment asks for as the global subscriber, with a log layer
/// on stderr (`RUST_LOG`, default `warn`); see [`Builder::init`].
pub fn init() -> Result<OtelGuard, OtelError> {
    Builder::from_env().init()
}

/// Flushes and shuts the export down when dropped (at most five seconds), so the spans of a
/// short program are sent before it exits. Does nothing when nothing is exported.
#[derive(Default)]
#[must_use = "dropping the guard shuts the export down"]
pub struct OtelGuard {
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
    /// The runtime the gRPC exports run on (dropped after the providers).
    #[cfg(feature = "grpc")]
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for OtelGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtelGuard")
            .field("traces", &self.tracer_provider.is_some())
            .field("metrics", &self.meter_provider.is_some())
            .finish()
    }
}

impl OtelGuard {
    /// Whether anything is exported.
    pub fn is_active(&self) -> bool {
        self.tracer_provider.is_some() || self.meter_provider.is_some()
    }

    /// Exports what is buffered now (spans of finished spans, metrics so far) and waits for
    /// it.
    pub fn flush(&self) -> Result<(), OtelError> {
        let mut failures = Vec::new();
        if let Some(provider) = &self.tracer_provider
            && let Err(e) = provider.force_flush()
        {
            failures.push(format!("traces: {e}"));
        }
        if let Some(provider) = &self.meter_provider
            && let Err(e) = provider.force_flush()
        {
            failures.push(format!("metrics: {e}"));
        }
        match failures.is_empty() {
            true => Ok(()),
            false => Err(OtelError::Flush(failures.join("; "))),
        }
    }

    /// Flushes and shuts the export down (what dropping the guard does), reporting a
    /// failure.
    pub fn shutdown(mut self) -> Result<(), OtelError> {
        self.close()
    }

    fn close(&mut self) -> Result<(), OtelError> {
        let mut failures = Vec::new();
        if let Some(provider) = self.tracer_provider.take() {
            // The batch processor exports what it holds before it stops.
            if let Err(e) = provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
                failures.push(format!("traces: {e}"));
            }
        }
        if let Some(provider) = self.meter_provider.take() {
            if let Err(e) = provider.force_flush() {
                failures.push(format!("metrics: {e}"));
            }
            if let Err(e) = provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
                failures.push(format!("metrics: {e}"));
            }
        }
        #[cfg(feature = "grpc")]
        if let Some(runtime) = self.runtime.take() {
            // Not waited for: the exports are done, and a runtime must not be dropped
            // (blocking) inside another one.
            runtime.shutdown_background();
        }
        match failures.is_empty() {
            true => Ok(()),
            false => Err(OtelError::Flush(failures.join("; "))),
        }
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Builds OTLP exporters of one protocol.
struct Exporters {
    protocol: Protocol,
    #[cfg(feature = "grpc")]
    runtime: Option<tokio::runtime::Handle>,
}

impl Exporters {
    fn new(protocol: Protocol, guard: &mut OtelGuard) -> Result<Exporters, OtelError> {
        #[cfg(feature = "tls")]
        {
            // reqwest's and tonic's rustls need a process-wide provider: ring's, as agent-llm
            // installs it (a no-op when one is installed).
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        match protocol {
            Protocol::HttpProtobuf => {
                let _ = guard;
                Ok(Exporters {
                    protocol,
                    #[cfg(feature = "grpc")]
                    runtime: None,
                })
            }
            #[cfg(feature = "grpc")]
            Protocol::Grpc => {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("agent-otel-grpc")
                    .enable_all()
                    .build()
                    .map_err(OtelError::Runtime)?;
                let handle = runtime.handle().clone();
                guard.runtime = Some(runtime);
                Ok(Exporters {
                    protocol,
                    runtime: Some(handle),
                })
            }
            #[cfg(not(feature = "grpc"))]
            Protocol::Grpc => Err(OtelError::GrpcNotBuilt),
        }
    }

    fn spans(&self, endpoint: &Endpoint) -> Result<opentelemetry_otlp::SpanExporter, OtelError> {
        let failed = |source| OtelError::Exporter {
            signal: "traces",
            source,
        };
        match self.protocol {
            Protocol::HttpProtobuf => {
                let builder = opentelemetry_otlp::SpanExporter::builder().with_http();
                let builder = match endpoint {
                    Endpoint::FromEnv => builder,
                    Endpoint::Base(url) => builder.with_endpoint(signal_url(url, "traces")),
                };
                builder.build().map_err(failed)
            }
            Protocol::Grpc => {
                #[cfg(feature = "grpc")]
                {
                    let _entered = self.runtime.as_ref().map(|r| r.enter());
                    let builder = opentelemetry_otlp::SpanExporter::builder().with_tonic();
                    let builder = match endpoint {
                        Endpoint::FromEnv => builder,
                        Endpoint::Base(url) => builder.with_endpoint(url.clone()),
                    };
                    builder.build().map_err(failed)
                }
                #[cfg(not(feature = "grpc"))]
                {
                    let _ = failed;
                    Err(OtelError::GrpcNotBuilt)
                }
            }
        }
    }

    fn metrics(
        &self,
        endpoint: &Endpoint,
    ) -> Result<opentelemetry_otlp::MetricExporter, OtelError> {
        let failed = |source| OtelError::Exporter {
            signal: "metrics",
            source,
        };
        match self.protocol {
            Protocol::HttpProtobuf => {
                let builder = opentelemetry_otlp::MetricExporter::builder().with_http();
                let builder = match endpoint {
                    Endpoint::FromEnv => builder,
                    Endpoint::Base(url) => builder.with_endpoint(signal_url(url, "metrics")),
                };
                builder.build().map_err(failed)
            }
            Protocol::Grpc => {
                #[cfg(feature = "grpc")]
                {
                    let _entered = self.runtime.as_ref().map(|r| r.enter());
                    let builder = opentelemetry_otlp::MetricExporter::builder().with_tonic();
                    let builder = match endpoint {
                        Endpoint::FromEnv => builder,
                        Endpoint::Base(url) => builder.with_endpoint(url.clone()),
                    };
                    builder.build().map_err(failed)
                }
                #[cfg(not(feature = "grpc"))]
                {
                    let _ = failed;
                    Err(OtelError::GrpcNotBuilt)
                }
            }
        }
    }
}

/// The HTTP URL of `signal` (`traces`, `metrics`) under the base URL `base`.
fn signal_url(base: &str, signal: &str) -> String {
    format!("{}/v1/{signal}", base.trim_end_matches('/'))
}

/// The crate README's example compiles as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols() {
        assert_eq!(Protocol::parse("").unwrap(), Protocol::HttpProtobuf);
        assert_eq!(
            Protocol::parse("http/protobuf").unwrap(),
            Protocol::HttpProtobuf
        );
        assert_eq!(Protocol::parse(" grpc").unwrap(), Protocol::Grpc);
        let err = Protocol::parse("http/json").unwrap_err();
        assert!(err.to_string().contains("http/json"), "{err}");
    }

    #[test]
    fn signal_urls() {
        assert_eq!(
            signal_url("http://localhost:4318", "traces"),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            signal_url("http://h:1/base/", "metrics"),
            "http://h:1/base/v1/metrics"
        );
    }

    #[test]
    fn nothing_configured_builds_nothing() {
        let builder = Builder {
            disabled: false,
            traces: None,
            metrics: None,
            protocol: String::new(),
            filter: "info".to_owned(),
            tracer_provider: None,
            meter_provider: None,
        };
        assert!(!builder.is_enabled());
        let (layer, guard) = builder.build::<tracing_subscriber::Registry>().unwrap();
        assert!(layer.is_none());
        assert!(!guard.is_active());
    }

    #[test]
    fn disabled_wins_over_an_endpoint() {
        let builder = Builder {
            disabled: true,
            traces: Some(Endpoint::Base("http://127.0.0.1:9".to_owned())),
            metrics: None,
            protocol: String::new(),
            filter: "info".to_owned(),
            tracer_provider: None,
            meter_provider: None,
        };
        assert!(!builder.is_enabled());
    }
}
