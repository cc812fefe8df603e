//! What a key can do. Names are the kebab-case spelling used in keybindings.toml.

use serde::{Deserialize, Serialize};

macro_rules! actions {
    ($($variant:ident = $name:literal : $desc:literal,)*) => {
        /// Everything a key can be bound to.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum Action { $($variant,)* }

        impl Action {
            /// Every action, in the order help and `crawldeck keys` list them.
            pub const ALL: &'static [Action] = &[$(Action::$variant,)*];

            /// The name used in keybindings.toml.
            pub fn name(self) -> &'static str {
                match self { $(Action::$variant => $name,)* }
            }

            /// One line for the help overlay and `crawldeck keys`.
            pub fn description(self) -> &'static str {
                match self { $(Action::$variant => $desc,)* }
            }

            /// The action a keybindings.toml name stands for.
            pub fn from_name(name: &str) -> Option<Action> {
                match name { $($name => Some(Action::$variant),)* _ => None }
            }
        }
    };
}

actions! {
    Quit = "quit": "quit (asks while crawling, then checkpoints)",
    ForceQuit = "force-quit": "checkpoint and exit now",
    Help = "help": "show or hide this help",
    Filter = "filter": "filter the hosts table",
    CommandLine = "command-line": "open the : command line",
    NextPane = "next-pane": "next pane",
    PrevPane = "prev-pane": "previous pane",
    PaneHosts = "pane-hosts": "show the hosts pane",
    PaneAlerts = "pane-alerts": "show the alerts pane",
    PaneRules = "pane-rules": "show the rules pane",
    PaneLog = "pane-log": "show the log pane",
    PaneQueues = "pane-queues": "show the queues pane",
    PaneWorkers = "pane-workers": "show the workers pane (a shared crawl only)",
    PaneQuarantine = "pane-quarantine": "show the quarantine: URLs parked by open alerts (enter expands an alert, inspects a URL's found-on page)",
    PanePages = "pane-pages": "show the crawl's pages (/ filters: status:404 fate: indexable: host: type: audit: words; s/S sort; enter inspects; l links)",
    PaneAudit = "pane-audit": "show the audit's findings (enter lists a finding's pages)",
    Up = "up": "move up",
    Down = "down": "move down",
    Top = "top": "go to the first row",
    Bottom = "bottom": "go to the last row",
    PageUp = "page-up": "one page up",
    PageDown = "page-down": "one page down",
    Open = "open": "open the selected host's detail view; on an alert, the page inspector on its evidence",
    InspectPages = "inspect-pages": "detail view: the page inspector on the host's recent fetches",
    NextPage = "next-page": "inspector: the next page of the list",
    PrevPage = "prev-page": "inspector: the previous page of the list",
    ExtractSelection = "extract-selection": "inspector: make the last :select a custom extraction (name it; pages fetched from now on get its values)",
    Back = "back": "go back / close",
    SortNext = "sort-next": "sort hosts by the next column",
    SortReverse = "sort-reverse": "reverse the sort order",
    TogglePause = "toggle-pause": "pause or resume the whole crawl",
    ToggleHostPause = "toggle-host-pause": "pause or resume the selected host",
    AddRegexRule = "add-regex-rule": "add a blacklist rule (regex)",
    AddGlobRule = "add-glob-rule": "add a blacklist rule (glob)",
    RuleFromHost = "rule-from-host": "add a rule pre-filled with the selected host's URL",
    RemoveRule = "remove-rule": "remove the selected rule",
    DelayUp = "delay-up": "selected host: longer delay (+250ms)",
    DelayDown = "delay-down": "selected host: shorter delay (-250ms)",
    SetDelay = "set-delay": "selected host: type an exact delay",
    ConcurrencyUp = "concurrency-up": "selected host: one more request in flight",
    ConcurrencyDown = "concurrency-down": "selected host: one fewer request in flight",
    SetConcurrency = "set-concurrency": "selected host: type an exact concurrency",
    RateUp = "rate-up": "global rate: +1 page/s",
    RateDown = "rate-down": "global rate: -1 page/s",
    SetRate = "set-rate": "global rate: type pages/s (off removes the cap)",
    ResetBreaker = "reset-breaker": "selected host: close its breaker now",
    OpenBreaker = "open-breaker": "selected host: open its breaker now",
    AcceptAlert = "accept-alert": "accept the selected alert's suggested rule",
    EditAlert = "edit-alert": "edit the suggested rule, then accept",
    DismissAlert = "dismiss-alert": "dismiss the selected alert (parked URLs return)",
    AddSeed = "add-seed": "add a seed URL",
    Freeze = "freeze": "freeze or unfreeze the display (the crawl continues)",
    HostErrors = "host-errors": "detail view: the host's broken URLs and who links to them",
    HostRedirects = "host-redirects": "detail view: the host's redirect chains",
    HostBlocked = "host-blocked": "detail view: the host's URLs not fetched, with reasons",
    PageLinks = "page-links": "pages view: the inspector at the selected page's links out and in",
    Submit = "submit": "run / accept the input",
    Cancel = "cancel": "cancel the input",
    Complete = "complete": "complete a command or host name",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for &action in Action::ALL {
            assert_eq!(Action::from_name(action.name()), Some(action));
            let json = serde_json::to_string(&action).unwrap();
            assert_eq!(json, format!("\"{}\"", action.name()));
            assert!(!action.description().is_empty());
        }
    }
}
