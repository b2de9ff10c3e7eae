fn shout(s: String) -> String {
    s.to_uppercase()
}
weir_guest::map!(shout);

fn main() {}
