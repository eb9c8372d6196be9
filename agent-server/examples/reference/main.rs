//! Serves the reference graphs (see `graphs.rs`) on the LangGraph API:
//! `cargo run -p agent-server --example reference -- [--port N] [--db PATH|postgres://...]
//! [--lease-ms N] [--workers N] [--with-slow] [--with-tools]`. Prints `listening on http://HOST:PORT` once it accepts
//! connections. `--with-slow` adds the `slow` graph the fault tests use, `--with-tools` the `tools` graph of the
//! streaming protocol's checks.

mod graphs;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut port = 0u16;
    let mut db = None;
    let mut lease = None;
    let mut slow = false;
    let mut tools = false;
    let mut workers = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().ok_or("--port takes a number")?.parse()?,
            "--db" => db = Some(args.next().ok_or("--db takes a path or a URL")?),
            "--lease-ms" => {
                lease = Some(
                    args.next()
                        .ok_or("--lease-ms takes a number")?
                        .parse::<u64>()?,
                )
            }
            "--workers" => {
                workers = Some(
                    args.next()
                        .ok_or("--workers takes a number")?
                        .parse::<usize>()?,
                )
            }
            "--with-slow" => slow = true,
            "--with-tools" => tools = true,
            other => {
                return Err(format!(
                    "unknown argument {other}; use --port N, --db PATH|URL, --lease-ms N, --workers N, --with-slow, --with-tools"
                )
                .into());
            }
        }
    }
    let mut builder = graphs::server();
    if slow {
        builder = builder.graph("slow", graphs::slow());
    }
    if tools {
        builder = builder.graph("tools", graphs::tools());
    }
    match db {
        Some(url) if url.starts_with("postgres") => builder = builder.postgres(url),
        Some(path) => builder = builder.sqlite(path),
        None => {}
    }
    if let Some(ms) = lease {
        builder = builder.leases(agent_server::Leases {
            ttl: std::time::Duration::from_millis(ms),
            ..agent_server::Leases::default()
        });
    }
    if let Some(n) = workers {
        builder = builder.workers(n);
    }
    let server = builder.build().await?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}", listener.local_addr()?);
    server.serve(listener).await?;
    Ok(())
}
