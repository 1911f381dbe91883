fn main() { println!("cargo:rerun-if-changed=tuned-db"); }
