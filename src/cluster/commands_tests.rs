use std::time::Duration;

use super::*;
use crate::cluster::redis_server::RedisServer;
use crate::engine::control::{PatternKind, RuleSpec, Target};

fn rule(pattern: &str) -> Command {
    Command::AddRule(RuleSpec {
        kind: PatternKind::Regex,
        pattern: pattern.into(),
        host: None,
    })
}

#[test]
fn published_commands_are_read_in_order_with_sender_and_addressee() {
    let server = RedisServer::for_test();
    let mut con = server.connection();
    assert_eq!(last_entry(&mut con, "news").unwrap(), None);
    let first = publish(
        &mut con,
        "news",
        &rule("cal/\\d{4}"),
        "ctl on a pid 1",
        None,
    )
    .unwrap();
    let second = publish(
        &mut con,
        "news",
        &Command::DismissAlert { alert_id: 3 },
        "ctl on a pid 2",
        Some("w2"),
    )
    .unwrap();
    let third = publish_except(&mut con, "news", &rule("x"), "worker w2", "w2").unwrap();
    assert_eq!(last_entry(&mut con, "news").unwrap(), Some(third.clone()));
    let all = read_after(&mut con, "news", "0", None).unwrap();
    let ids: Vec<&str> = all.iter().map(|c| c.entry.as_str()).collect();
    assert_eq!(ids, [first.as_str(), second.as_str(), third.as_str()]);
    assert_eq!(all[0].command, Ok(rule("cal/\\d{4}")));
    assert_eq!(all[0].from, "ctl on a pid 1");
    assert!(all[0].is_for("w1") && all[0].is_for("w2"));
    assert!(!all[1].is_for("w1") && all[1].is_for("w2"));
    assert!(all[2].is_for("w1") && !all[2].is_for("w2"));
    let rest = read_after(&mut con, "news", &first, None).unwrap();
    assert_eq!(rest.len(), 2);
    // Another crawl's stream is another key.
    assert!(read_after(&mut con, "other", "0", None).unwrap().is_empty());
}

#[test]
fn a_blocking_read_returns_empty_after_its_wait_and_bad_entries_are_errors() {
    let server = RedisServer::for_test();
    let mut con = server.connection();
    let none = read_after(&mut con, "news", "$", Some(Duration::from_millis(50))).unwrap();
    assert!(none.is_empty());
    let key = stream_key("news");
    let _: String = redis::cmd("XADD")
        .arg(&key)
        .arg("*")
        .arg("cmd")
        .arg("{\"Launch\":1}")
        .query(&mut con)
        .unwrap();
    let _: String = redis::cmd("XADD")
        .arg(&key)
        .arg("*")
        .arg("from")
        .arg("x")
        .query(&mut con)
        .unwrap();
    let read = read_after(&mut con, "news", "0", None).unwrap();
    assert!(read[0]
        .command
        .as_ref()
        .unwrap_err()
        .contains("is not a command"));
    assert!(read[1]
        .command
        .as_ref()
        .unwrap_err()
        .contains("no cmd field"));
    assert_eq!(read[0].from, "unknown sender");
}

#[test]
fn answers_and_cursors_are_kept_per_worker_and_answers_expire() {
    let server = RedisServer::for_test();
    let mut con = server.connection();
    let entry = publish(&mut con, "news", &Command::Pause(Target::Global), "t", None).unwrap();
    assert!(answers(&mut con, "news", &entry).unwrap().is_empty());
    assert_eq!(cursor(&mut con, "news", "w1").unwrap(), None);
    record(&mut con, "news", &entry, "w2", Some(&Err("no".into()))).unwrap();
    record(&mut con, "news", &entry, "w1", Some(&Ok("paused".into()))).unwrap();
    assert_eq!(
        answers(&mut con, "news", &entry).unwrap(),
        [
            ("w1".to_string(), Ok("paused".to_string())),
            ("w2".to_string(), Err("no".to_string()))
        ]
    );
    assert_eq!(cursor(&mut con, "news", "w1").unwrap(), Some(entry.clone()));
    let later = publish(&mut con, "news", &Command::Checkpoint, "t", None).unwrap();
    record(&mut con, "news", &later, "w1", None).unwrap();
    assert_eq!(cursor(&mut con, "news", "w1").unwrap(), Some(later.clone()));
    assert!(answers(&mut con, "news", &later).unwrap().is_empty());
    let ttl: i64 = redis::cmd("TTL")
        .arg(answers_key("news", &entry))
        .query(&mut con)
        .unwrap();
    assert!(ttl > 0 && ttl <= ANSWER_TTL.as_secs() as i64, "{ttl}");
}

#[test]
fn state_commands_replay_and_one_off_actions_do_not() {
    assert!(replays(&rule("x")));
    assert!(replays(&Command::Pause(Target::Global)));
    assert!(!replays(&Command::Shutdown));
    assert!(!replays(&Command::AcceptAlert {
        alert_id: 1,
        rule: None
    }));
    let me = sender("ctl");
    assert!(me.starts_with("ctl on ") && me.ends_with(&format!("pid {}", std::process::id())));
}

#[test]
fn shared_rules_are_the_added_ones_less_the_removed_ones() {
    let server = RedisServer::for_test();
    let mut con = server.connection();
    assert!(shared_rules(&mut con, "news").unwrap().is_empty());
    let spec = |p: &str| RuleSpec {
        kind: PatternKind::Regex,
        pattern: p.into(),
        host: None,
    };
    publish(&mut con, "news", &rule("a"), "t", None).unwrap();
    publish(&mut con, "news", &rule("b"), "t", None).unwrap();
    publish(&mut con, "news", &rule("a"), "t", None).unwrap();
    publish(&mut con, "news", &Command::Checkpoint, "t", None).unwrap();
    assert_eq!(
        shared_rules(&mut con, "news").unwrap(),
        [spec("a"), spec("b")]
    );
    let removal = publish_remove_rule(&mut con, "news", &spec("a"), "t").unwrap();
    assert_eq!(shared_rules(&mut con, "news").unwrap(), [spec("b")]);
    let read = read_after(&mut con, "news", "0", None).unwrap();
    let last = read.last().unwrap();
    assert_eq!(last.entry, removal);
    assert_eq!(last.rule, Some(spec("a")));
    // More entries than one read of the stream returns.
    for i in 0..1500 {
        publish(&mut con, "news", &rule(&format!("r{i}")), "t", None).unwrap();
    }
    assert_eq!(shared_rules(&mut con, "news").unwrap().len(), 1501);
}
