use super::*;

use AddressClass::*;

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

/// Every range the guard refuses, with addresses at its edges, and public
/// addresses just outside them.
#[test]
fn every_range_is_classified() {
    let table = [
        ("8.8.8.8", Public),
        ("192.0.2.7", Public),
        ("2001:db8::1", Public),
        ("2606:4700::1111", Public),
        ("127.0.0.1", Loopback),
        ("127.255.255.254", Loopback),
        ("::1", Loopback),
        ("10.0.0.1", Private),
        ("10.255.255.255", Private),
        ("172.16.0.1", Private),
        ("172.31.255.254", Private),
        ("172.15.255.255", Public),
        ("172.32.0.0", Public),
        ("192.168.1.1", Private),
        ("192.169.0.1", Public),
        ("169.254.0.1", LinkLocal),
        ("169.254.255.254", LinkLocal),
        ("169.254.169.254", Metadata),
        ("fd00:ec2::254", Metadata),
        ("fe80::1", LinkLocal),
        ("febf:ffff::1", LinkLocal),
        ("100.64.0.1", Cgnat),
        ("100.127.255.254", Cgnat),
        ("100.63.255.255", Public),
        ("100.128.0.0", Public),
        ("fc00::1", UniqueLocal),
        ("fd12:3456::1", UniqueLocal),
        ("fec0::1", UniqueLocal),
        ("0.0.0.0", Unspecified),
        ("0.1.2.3", Unspecified),
        ("::", Unspecified),
        ("224.0.0.1", Multicast),
        ("239.255.255.250", Multicast),
        ("ff02::1", Multicast),
        ("ff0e::1", Multicast),
        ("255.255.255.255", Broadcast),
        ("240.0.0.1", Reserved),
        // IPv6 forms that reach an IPv4 address take its class.
        ("::ffff:127.0.0.1", Loopback),
        ("::ffff:10.1.2.3", Private),
        ("::ffff:169.254.169.254", Metadata),
        ("::ffff:8.8.8.8", Public),
        ("::127.0.0.1", Loopback),
        ("64:ff9b::a9fe:a9fe", Metadata),
        ("2002:c0a8:0101::1", Private),
        ("2002:0808:0808::1", Public),
    ];
    for (addr, class) in table {
        assert_eq!(classify(ip(addr)), class, "{addr}");
    }
}

/// The policy over (seed classes, address class, --allow-private).
#[test]
fn policy_table() {
    let none = ClassSet::default();
    let loopback = ClassSet::of(&[Loopback]);
    let intranet = ClassSet::of(&[Private, UniqueLocal]);
    let table = [
        // Public always passes.
        (none, "8.8.8.8", false, Ok(())),
        (none, "2606:4700::1111", false, Ok(())),
        // Every other class is refused by default...
        (none, "127.0.0.1", false, Err(Loopback)),
        (none, "::1", false, Err(Loopback)),
        (none, "::ffff:127.0.0.1", false, Err(Loopback)),
        (none, "10.0.0.1", false, Err(Private)),
        (none, "172.16.5.4", false, Err(Private)),
        (none, "192.168.0.1", false, Err(Private)),
        (none, "169.254.1.1", false, Err(LinkLocal)),
        (none, "169.254.169.254", false, Err(Metadata)),
        (none, "100.64.0.1", false, Err(Cgnat)),
        (none, "fc00::1", false, Err(UniqueLocal)),
        (none, "fe80::1", false, Err(LinkLocal)),
        (none, "0.0.0.0", false, Err(Unspecified)),
        (none, "::", false, Err(Unspecified)),
        (none, "224.0.0.1", false, Err(Multicast)),
        (none, "ff02::1", false, Err(Multicast)),
        (none, "255.255.255.255", false, Err(Broadcast)),
        // ...but a class a seed resolves to is allowed, and only that one.
        (loopback, "127.0.0.1", false, Ok(())),
        (loopback, "::ffff:127.0.0.2", false, Ok(())),
        (loopback, "10.0.0.1", false, Err(Private)),
        (loopback, "169.254.169.254", false, Err(Metadata)),
        (intranet, "10.0.0.1", false, Ok(())),
        (intranet, "fd00::1", false, Ok(())),
        (intranet, "127.0.0.1", false, Err(Loopback)),
        (intranet, "100.64.0.1", false, Err(Cgnat)),
        // A link-local seed does not open the metadata address.
        (
            ClassSet::of(&[LinkLocal]),
            "169.254.169.254",
            false,
            Err(Metadata),
        ),
        // --allow-private allows all.
        (none, "127.0.0.1", true, Ok(())),
        (none, "169.254.169.254", true, Ok(())),
        (none, "fe80::1", true, Ok(())),
        (none, "224.0.0.1", true, Ok(())),
    ];
    for (seeds, addr, allow_private, expected) in table {
        let class = classify(ip(addr));
        assert_eq!(
            admit(class, seeds, allow_private),
            expected,
            "{addr} with seeds {seeds:?}, allow_private {allow_private}"
        );
    }
}

#[test]
fn the_url_crate_turns_other_ipv4_forms_into_dotted_literals() {
    let guard = AddressGuard::new(&AddressRules::default(), false);
    for (text, host) in [
        ("http://2130706433/", "127.0.0.1"),
        ("http://0x7f.1/", "127.0.0.1"),
        ("http://0177.0.0.1/", "127.0.0.1"),
        ("http://127.1/", "127.0.0.1"),
        ("http://0/", "0.0.0.0"),
        ("http://[::ffff:7f00:1]/", "[::ffff:7f00:1]"),
    ] {
        let url = Url::parse(text).unwrap();
        assert_eq!(url.host_str(), Some(host), "{text}");
        assert!(guard.check_url(&url).is_err(), "{text} was admitted");
    }
    let public = Url::parse("http://134744072/").unwrap();
    assert_eq!(public.host_str(), Some("8.8.8.8"));
    assert!(guard.check_url(&public).is_ok());
}

#[test]
fn seeds_teach_the_guard_their_classes() {
    let guard = AddressGuard::new(&AddressRules::default(), false);
    assert!(guard.check(ip("127.0.0.1")).is_err());
    guard.add_seed(&Url::parse("http://shop.localhost:8080/").unwrap());
    assert!(guard.check(ip("127.0.0.1")).is_ok());
    assert!(guard.check(ip("10.0.0.1")).is_err());

    guard.add_seed(&Url::parse("http://intranet.example/").unwrap());
    assert_eq!(guard.pending_seeds(), vec!["intranet.example".to_string()]);
    // Another name's answer teaches nothing.
    assert!(guard.filter("evil.example", vec![ip("10.0.0.9")]).is_err());
    assert_eq!(
        guard.filter("intranet.example", vec![ip("10.0.0.1")]),
        Ok(vec![ip("10.0.0.1")])
    );
    assert!(guard.pending_seeds().is_empty());
    assert!(guard.check(ip("10.0.0.9")).is_ok());
    assert!(guard.check(ip("169.254.169.254")).is_err());
}

#[test]
fn a_name_keeps_its_admitted_addresses_and_is_refused_without_any() {
    let guard = AddressGuard::new(&AddressRules::default(), false);
    let mixed = vec![ip("10.0.0.1"), ip("8.8.8.8"), ip("::1")];
    assert_eq!(
        guard.filter("mixed.example", mixed),
        Ok(vec![ip("8.8.8.8")])
    );
    let err = guard
        .filter(
            "inside.example",
            vec![ip("169.254.169.254"), ip("10.0.0.1")],
        )
        .unwrap_err();
    assert_eq!(err.class(), Metadata);
    let text = err.to_string();
    assert!(text.contains("inside.example"), "{text}");
    assert!(
        text.contains("169.254.169.254 (link-local (metadata))"),
        "{text}"
    );
    assert!(text.contains("--allow-private"), "{text}");
}

#[test]
fn allow_private_admits_everything() {
    let guard = AddressGuard::new(&AddressRules::default(), true);
    assert!(guard.check(ip("169.254.169.254")).is_ok());
    assert_eq!(
        guard.filter("x.example", vec![ip("10.0.0.1")]),
        Ok(vec![ip("10.0.0.1")])
    );
}

#[test]
fn an_injected_classifier_decides() {
    let rules = AddressRules::default().with_classifier(Arc::new(|addr: IpAddr| match addr {
        IpAddr::V4(v4) if v4.octets()[3] == 1 => Public,
        _ => Private,
    }));
    let guard = AddressGuard::new(&rules, false);
    assert!(guard.check(ip("127.0.0.1")).is_ok());
    assert_eq!(
        guard.check(ip("127.0.0.2")),
        Err(Refused::Address {
            addr: ip("127.0.0.2"),
            class: Private
        })
    );
}

#[test]
fn the_settings_line_says_what_is_refused_and_why_some_classes_are_not() {
    let guard = AddressGuard::new(&AddressRules::default(), false);
    assert_eq!(
        guard.describe(),
        "private addresses refused (no seed is on one; --allow-private allows them)"
    );
    guard.add_seed(&Url::parse("http://127.0.0.1:8080/").unwrap());
    guard.add_seed(&Url::parse("http://intranet.example/").unwrap());
    assert_eq!(
        guard.describe(),
        "private addresses refused, but loopback (a seed is there); \
         1 seed name(s) to resolve, whose classes are allowed too"
    );
    let open = AddressGuard::new(&AddressRules::default(), true);
    assert!(open.describe().contains("allowed"), "{}", open.describe());
}
