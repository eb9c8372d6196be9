//! Serves the reference graphs (see `graphs.rs`) on the LangGraph API:
//! `cargo run -p agent-server --example reference -- [--port N] [--db PATH]`.
//! Prints `listening on http://HOST:PORT` once it accepts connections.

mod graphs;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut port = 0u16;
    let mut db = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().ok_or("--port takes a number")?.parse()?,
            "--db" => db = Some(args.next().ok_or("--db takes a path")?),
            other => {
                return Err(format!("unknown argument {other}; use --port N, --db PATH").into());
            }
        }
    }
    let mut builder = graphs::server();
    if let Some(db) = db {
        builder = builder.sqlite(db);
    }
    let server = builder.build()?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}", listener.local_addr()?);
    server.serve(listener).await?;
    Ok(())
}
