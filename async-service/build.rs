// Generates the Rust types of the messages XDB itself publishes to Pulsar
// (proto/xdb_pulsar.proto); needs `protoc` (scripts/ensure-pulsar.sh installs it).
fn main() {
    println!("cargo:rerun-if-changed=proto/xdb_pulsar.proto");
    prost_build::compile_protos(&["proto/xdb_pulsar.proto"], &["proto/"])
        .expect("compiling proto/xdb_pulsar.proto (is protoc installed?)");
}
