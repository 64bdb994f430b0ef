# syntax=docker/dockerfile:1
# The XDB API service (xdb-api-service), with xdb-sys-schema for installing the schema
# and the `xdb` command-line client (the Helm chart's definitions registration Job).
# Build from the repository root:
#   docker build -f deploy/api-service.Dockerfile -t xdb/api-service .

# --- build: the workspace, compiled once per source change (cargo caches kept by BuildKit)
# Any stable Rust at or above the workspace's rust-version (1.88).
FROM rust:1-bookworm AS build
# The `pulsar` crate's build script compiles Pulsar's protocol with protoc.
RUN apt-get update \
    && apt-get install -y --no-install-recommends protobuf-compiler \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p xdb-api-service -p xdb-sys-schema -p xdb-cli \
    && mkdir -p /out \
    && cp target/release/xdb-api-service target/release/xdb-sys-schema target/release/xdb /out/

# --- runtime: a slim Debian with CA certificates, running as an unprivileged user
FROM debian:bookworm-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --no-create-home xdb
COPY --from=build /out/xdb-api-service /out/xdb-sys-schema /out/xdb /usr/local/bin/
USER 10001
EXPOSE 8801
ENTRYPOINT ["xdb-api-service"]
