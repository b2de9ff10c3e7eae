struct NotATransform;
weir_guest::export!(NotATransform);

fn main() {}
