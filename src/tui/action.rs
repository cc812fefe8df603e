//! Everything a key can do. Each action has a kebab-case name (used in
//! `keybindings.toml`) and a one-line description (used by the help overlay).

macro_rules! actions {
    ($($variant:ident => $name:literal, $desc:literal;)*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Action { $($variant),* }

        impl Action {
            pub const ALL: &'static [Action] = &[$(Action::$variant),*];

            pub fn name(self) -> &'static str {
                match self { $(Action::$variant => $name),* }
            }

            pub fn description(self) -> &'static str {
                match self { $(Action::$variant => $desc),* }
            }

            pub fn from_name(name: &str) -> Option<Action> {
                match name { $($name => Some(Action::$variant),)* _ => None }
            }
        }
    };
}

actions! {
    Quit => "quit", "quit (asks first while crawling; checkpoints)";
    ForceQuit => "force-quit", "checkpoint and quit at once";
    Help => "help", "show this help";
    Filter => "filter", "filter the hosts table";
    CommandLine => "command-line", "open the : command line";
    NextPane => "next-pane", "next pane";
    PrevPane => "prev-pane", "previous pane";
    PaneHosts => "pane-hosts", "go to the hosts pane";
    PaneAlerts => "pane-alerts", "go to the alerts pane";
    PaneRules => "pane-rules", "go to the rules pane";
    PaneLog => "pane-log", "go to the log pane";
    Down => "down", "move down";
    Up => "up", "move up";
    Top => "top", "go to the first row";
    Bottom => "bottom", "go to the last row";
    PageDown => "page-down", "page down";
    PageUp => "page-up", "page up";
    Open => "open", "open the selected host's detail view";
    SortNext => "sort-next", "sort the hosts table by the next column";
    SortReverse => "sort-reverse", "reverse the sort order";
    PauseCrawl => "pause-crawl", "pause or resume the whole crawl";
    PauseHost => "pause-host", "pause or resume the selected host";
    Blacklist => "blacklist", "add a blacklist rule (regex; prefix glob: for a glob)";
    BlacklistHost => "blacklist-host", "add a blacklist rule for the selected host";
    RemoveRule => "remove-rule", "remove the selected rule";
    Slower => "slower", "selected host: longer delay between requests";
    Faster => "faster", "selected host: shorter delay between requests";
    SetDelay => "set-delay", "selected host: set the delay exactly";
    SetConcurrency => "set-concurrency", "selected host: set requests in flight";
    SetRate => "set-rate", "set the global pages/s cap";
    ResetBreaker => "reset-breaker", "selected host: close its circuit breaker";
    AcceptAlert => "accept-alert", "accept the selected alert (block its URLs)";
    EditAlert => "edit-alert", "edit the alert's rule, then accept";
    DismissAlert => "dismiss-alert", "dismiss the selected alert (release its URLs)";
    AddSeed => "add-seed", "add a seed URL";
    Freeze => "freeze", "freeze the display (the crawl continues)";
    Submit => "submit", "run what was typed";
    Cancel => "cancel", "cancel";
    Complete => "complete", "complete the word";
    Close => "close", "close";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_describe_themselves() {
        for action in Action::ALL {
            assert_eq!(Action::from_name(action.name()), Some(*action));
            assert!(!action.description().is_empty());
        }
        assert_eq!(Action::from_name("no-such-thing"), None);
    }
}
