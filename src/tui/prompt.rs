//! One-line prompts: editing keys, Tab completion, and what Enter does with the text.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui_input::{Input, InputRequest};

use super::action::Action;
use super::command::{self, CommandLine};
use super::effect::{send, Effect};
use super::model::{Model, PromptKind};
use super::pages;
use crate::engine::control::{Command, PatternKind};
use crate::results::window::PageFilter;

/// The editing a key does in a prompt (readline-style), if any.
fn input_request(key: &KeyEvent) -> Option<InputRequest> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    Some(match key.code {
        KeyCode::Char('a') if ctrl => InputRequest::GoToStart,
        KeyCode::Char('e') if ctrl => InputRequest::GoToEnd,
        KeyCode::Char('w') if ctrl => InputRequest::DeletePrevWord,
        KeyCode::Char('u') if ctrl => InputRequest::DeleteFromStart,
        KeyCode::Char('k') if ctrl => InputRequest::DeleteTillEnd,
        KeyCode::Char('b') if alt => InputRequest::GoToPrevWord,
        KeyCode::Char('f') if alt => InputRequest::GoToNextWord,
        KeyCode::Char(c) if !ctrl && !alt => InputRequest::InsertChar(c),
        KeyCode::Backspace if ctrl || alt => InputRequest::DeletePrevWord,
        KeyCode::Backspace => InputRequest::DeletePrevChar,
        KeyCode::Delete => InputRequest::DeleteNextChar,
        KeyCode::Left if ctrl => InputRequest::GoToPrevWord,
        KeyCode::Right if ctrl => InputRequest::GoToNextWord,
        KeyCode::Left => InputRequest::GoToPrevChar,
        KeyCode::Right => InputRequest::GoToNextChar,
        KeyCode::Home => InputRequest::GoToStart,
        KeyCode::End => InputRequest::GoToEnd,
        _ => return None,
    })
}

/// Edits the open prompt; the filter prompts filter as they are typed.
pub(super) fn edit_prompt(model: &mut Model, key: &KeyEvent) -> Vec<Effect> {
    let Some(req) = input_request(key) else {
        return Vec::new();
    };
    let Some(prompt) = model.prompt.as_mut() else {
        return Vec::new();
    };
    if !prompt
        .input
        .handle(req)
        .is_some_and(|changed| changed.value)
    {
        return Vec::new();
    }
    prompt.error = None;
    prompt.hint = None;
    let text = prompt.input.value().to_string();
    match prompt.kind {
        PromptKind::Filter => {
            model.filter = text;
            model.host_selected = 0;
            Vec::new()
        }
        PromptKind::PagesFilter => pages::filter_typed(model, &text),
        _ => Vec::new(),
    }
}

/// Tab: completes the word under the cursor, listing the candidates when several remain.
pub(super) fn complete(model: &mut Model) {
    let Some(prompt) = model.prompt.as_mut() else {
        return;
    };
    let hosts: Vec<&str> = model.latest.hosts.iter().map(|h| h.host.as_str()).collect();
    let (line, candidates) = command::complete(prompt.input.value(), &hosts);
    prompt.input = Input::new(line);
    prompt.hint = (candidates.len() > 1).then(|| candidates.join("  "));
}

/// Opens the prompt an action asks for, pre-filled with what is set now.
pub(super) fn open_for(model: &mut Model, action: Action) {
    let rule = |kind| PromptKind::Rule { kind, host: None };
    let (kind, text) = match action {
        Action::Filter => (PromptKind::Filter, model.filter.clone()),
        Action::CommandLine => (PromptKind::Command, String::new()),
        Action::AddRegexRule => (rule(PatternKind::Regex), String::new()),
        Action::AddGlobRule => (rule(PatternKind::Glob), String::new()),
        Action::AddSeed => (PromptKind::Seed, "http://".into()),
        Action::SetRate => {
            let rate = model.latest.global_rate;
            (
                PromptKind::GlobalRate,
                rate.map_or("off".into(), |r| r.to_string()),
            )
        }
        _ => return,
    };
    model.open_prompt(kind, text);
}

/// Closes the prompt without running it; a cancelled hosts filter shows
/// every host again, a cancelled pages filter the filter before it.
pub(super) fn cancel(model: &mut Model) -> Vec<Effect> {
    match model.prompt.take().map(|p| p.kind) {
        Some(PromptKind::Filter) => {
            model.filter.clear();
            Vec::new()
        }
        Some(PromptKind::PagesFilter) => pages::filter_cancelled(model),
        _ => Vec::new(),
    }
}

/// What Enter on a prompt asks of the dispatcher.
#[derive(Debug)]
pub(super) enum Submitted {
    /// Done here: these are the effects (often none).
    Effects(Vec<Effect>),
    /// The command line named an action (`:quit`, `:help`, `:freeze`); `update` runs it.
    Dispatch(Action),
    /// `:select CSS`, for the page inspector.
    Select(String),
}

/// What a prompt's text asks for, once parsed.
enum Request {
    /// The hosts filter to keep.
    Filter(String),
    /// The pages filter to keep (it parsed).
    PagesFilter(String),
    /// An engine command to send.
    Send(Command),
    /// A parsed command line (`:…`, or a seed through `:seed`).
    Line(CommandLine),
}

/// Parses a prompt's text by its kind; an error is shown under the prompt.
fn parse_request(kind: PromptKind, text: String) -> Result<Request, String> {
    match kind {
        PromptKind::Filter => Ok(Request::Filter(text)),
        PromptKind::PagesFilter => {
            PageFilter::parse(&text, std::path::Path::new("")).map(|_| Request::PagesFilter(text))
        }
        PromptKind::Rule { kind, host } => command::checked_rule(kind, text, host)
            .map(|spec| Request::Send(Command::AddRule(spec))),
        PromptKind::AcceptAlert {
            alert_id,
            kind,
            host,
        } => command::checked_rule(kind, text, host).map(|spec| {
            Request::Send(Command::AcceptAlert {
                alert_id,
                rule: Some(spec),
            })
        }),
        PromptKind::HostDelay(host) => command::parse_optional_delay(&text)
            .map(|delay| Request::Send(Command::SetHostDelay { host, delay })),
        PromptKind::HostConcurrency(host) => command::parse_concurrency(&text)
            .map(|max| Request::Send(Command::SetHostConcurrency { host, max })),
        PromptKind::GlobalRate => {
            command::parse_rate(&text).map(|r| Request::Send(Command::SetGlobalRate(r)))
        }
        // The `:seed` command's parser, so both give the same messages.
        PromptKind::Seed => command::parse(&format!("seed {text}")).map(Request::Line),
        PromptKind::Command => command::parse(&text).map(Request::Line),
        PromptKind::Extraction { selector } => command::extraction_of(&text, &selector)
            .map(|spec| Request::Send(Command::AddExtraction(spec))),
    }
}

/// Enter on the open prompt: on success the prompt closes and its request
/// runs; on error the prompt stays open with the error under it.
pub(super) fn submit(model: &mut Model) -> Submitted {
    let Some(prompt) = model.prompt.as_ref() else {
        return Submitted::Effects(Vec::new());
    };
    let text = prompt.input.value().trim().to_string();
    let request = match parse_request(prompt.kind.clone(), text) {
        Ok(request) => request,
        Err(e) => {
            if let Some(p) = model.prompt.as_mut() {
                p.error = Some(e);
            }
            return Submitted::Effects(Vec::new());
        }
    };
    // Closed before the request runs: a command line may open something else (help).
    model.prompt = None;
    let effects = match request {
        Request::Filter(text) => {
            model.filter = text;
            Vec::new()
        }
        Request::PagesFilter(text) => {
            model.pages.filter_before = None;
            pages::set_filter(model, text)
        }
        Request::Send(cmd) | Request::Line(CommandLine::Engine(cmd)) => send(model, cmd),
        Request::Line(CommandLine::Quit) => return Submitted::Dispatch(Action::Quit),
        Request::Line(CommandLine::Help) => return Submitted::Dispatch(Action::Help),
        Request::Line(CommandLine::Freeze) => return Submitted::Dispatch(Action::Freeze),
        Request::Line(CommandLine::Select(css)) => return Submitted::Select(css),
    };
    Submitted::Effects(effects)
}
