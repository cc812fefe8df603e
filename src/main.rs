fn main() {
    println!("crawldeck: in progress");
}
