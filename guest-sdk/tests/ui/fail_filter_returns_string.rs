fn keep(_: &weir_guest::Record<'_>) -> String {
    String::new()
}
weir_guest::filter!(keep);

fn main() {}
