//! A plain WASI command: a valid component for the wrong world.
fn main() {
    println!("hello from a command, not a transform");
}
