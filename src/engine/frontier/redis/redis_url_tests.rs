use super::*;

fn env(user: Option<&str>, password: Option<&str>) -> RedisCredentials {
    RedisCredentials {
        user: user.map(String::from),
        password: password.map(String::from),
    }
}

#[test]
fn the_password_is_never_shown_or_written() {
    let url = RedisUrl::plain("rediss://crawler:s%40cret@10.0.0.5:6380/2").unwrap();
    assert_eq!(url.to_string(), "rediss://crawler:***@10.0.0.5:6380/2");
    assert_eq!(
        format!("{url:?}"),
        "RedisUrl(rediss://crawler:***@10.0.0.5:6380/2)"
    );
    assert_eq!(url.without_password(), "rediss://crawler@10.0.0.5:6380/2");
    let info = url.client().unwrap().get_connection_info().clone();
    assert_eq!(info.redis.password.as_deref(), Some("s@cret"));
    assert_eq!(info.redis.username.as_deref(), Some("crawler"));
}

#[test]
fn the_environment_gives_what_the_url_lacks() {
    let url = RedisUrl::parse(
        "rediss://10.0.0.5:6380/0",
        None,
        env(Some("crawler"), Some("pw")),
    )
    .unwrap();
    assert_eq!(url.to_string(), "rediss://crawler:***@10.0.0.5:6380/0");
    let info = url.client().unwrap().get_connection_info().clone();
    assert_eq!(info.redis.password.as_deref(), Some("pw"));
    let twice = RedisUrl::parse("redis://u:a@h:1/0", None, env(None, Some("b"))).unwrap_err();
    assert!(
        twice.contains("given twice") && !twice.contains(":a@"),
        "{twice}"
    );
}

#[test]
fn a_bad_url_is_named_without_its_password() {
    let e = RedisUrl::plain("http://u:hunter2@host:1/").unwrap_err();
    assert!(e.contains("rediss://HOST") && !e.contains("hunter2"), "{e}");
    let e = RedisUrl::plain("rediss://h:1/0#insecure").unwrap_err();
    assert!(e.contains("--redis-ca"), "{e}");
    assert!(RedisUrl::plain("127.0.0.1:6379").is_err());
}

#[test]
fn loopback_servers_are_told_apart_from_the_network() {
    for local in [
        "redis://127.0.0.1:6379/0",
        "redis://127.8.9.10/0",
        "redis://[::1]:6379/0",
        "redis://LocalHost:6379/0",
    ] {
        assert!(RedisUrl::plain(local).unwrap().is_loopback(), "{local}");
    }
    for remote in [
        "redis://192.0.2.1:6379/0",
        "redis://[2001:db8::1]/0",
        "redis://redis.example/0",
        "redis://localhost.example/0",
    ] {
        assert!(!RedisUrl::plain(remote).unwrap().is_loopback(), "{remote}");
    }
}

#[test]
fn a_server_on_the_network_needs_a_password_and_tls() {
    let open = RedisUrl::plain("redis://192.0.2.1:6379/0").unwrap();
    let e = open.check_safe(false).unwrap_err();
    assert!(
        e.contains("without a password") && e.contains("--insecure-redis"),
        "{e}"
    );
    assert!(open.check_safe(true).is_ok());
    let clear = RedisUrl::parse("redis://192.0.2.1/0", None, env(None, Some("pw"))).unwrap();
    let e = clear.check_safe(false).unwrap_err();
    assert!(e.contains("in the clear") && !e.contains("pw@"), "{e}");
    let safe = RedisUrl::parse("rediss://192.0.2.1/0", None, env(None, Some("pw"))).unwrap();
    assert!(safe.check_safe(false).is_ok());
    assert!(RedisUrl::plain("redis://127.0.0.1/0")
        .unwrap()
        .check_safe(false)
        .is_ok());
}

#[test]
fn the_ca_file_must_hold_a_certificate_and_go_with_tls() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ca.pem");
    std::fs::write(&file, "not a certificate").unwrap();
    let e = RedisUrl::parse("rediss://h/0", Some(&file), env(None, None)).unwrap_err();
    assert!(e.contains("holds no PEM certificate"), "{e}");
    let e = RedisUrl::parse("redis://h/0", Some(&file), env(None, None)).unwrap_err();
    assert!(e.contains("rediss://h/0"), "{e}");
    let missing = dir.path().join("missing.pem");
    let e = RedisUrl::parse("rediss://h/0", Some(&missing), env(None, None)).unwrap_err();
    assert!(e.contains("cannot read --redis-ca"), "{e}");
}

#[test]
fn refused_credentials_name_the_user_and_what_to_check() {
    let url = RedisUrl::parse("rediss://h/0", None, env(Some("crawler"), Some("pw"))).unwrap();
    let wrong = RedisError::from((
        ErrorKind::AuthenticationFailed,
        "Password authentication failed",
    ));
    let text = url.explain(&wrong);
    assert!(
        text.contains("refused the password for user crawler")
            && text.contains(PASSWORD_VAR)
            && !text.contains("pw@"),
        "{text}"
    );
    let other = RedisError::from((ErrorKind::TypeError, "wrong type"));
    assert_eq!(url.refusal(&other), None);
}

#[test]
fn a_client_certificate_needs_tls_and_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    let e = RedisUrl::plain("redis://h/0")
        .unwrap()
        .with_client_cert(&cert, &key)
        .unwrap_err();
    assert!(e.contains("rediss://h/0"), "{e}");
    let e = RedisUrl::plain("rediss://h/0")
        .unwrap()
        .with_client_cert(&cert, &key)
        .unwrap_err();
    assert!(e.contains("cannot read --redis-cert"), "{e}");
}
