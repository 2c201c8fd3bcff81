//! The live terminal view (ratatui on crossterm): a dashboard redrawn five times a second with
//! the cache, event rates, work queue, reconcile figures, recent log lines and, under leader
//! election, the current leader.
//!
//! Invariants: the terminal is restored (raw mode off, main screen back) whenever the view
//! returns, also on error or panic (ratatui's hook); `q`, `Esc` and `Ctrl-C` quit; the view
//! never blocks the runtime (keyboard input is polled without waiting).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Sparkline};

use super::Probe;
use super::logs;
use super::stats::{Snapshot, human};

/// Why the view ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// `--duration` elapsed.
    Deadline,
    /// The user quit.
    Quit,
}

const FRAME: Duration = Duration::from_millis(200);
const HISTORY: usize = 120;

/// Restores the terminal when dropped.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// Runs the dashboard until the deadline or a quit key.
pub async fn run(probe: &mut Probe, title: &str, deadline: Option<Instant>) -> anyhow::Result<Exit> {
    let mut terminal = ratatui::try_init()?;
    let _restore = Restore;
    let mut history: VecDeque<u64> = VecDeque::with_capacity(HISTORY);
    let mut last_second = u64::MAX;
    let mut tick = tokio::time::interval(FRAME);
    loop {
        tick.tick().await;
        let snap = probe.snapshot();
        let second = snap.elapsed.as_secs();
        if second != last_second {
            last_second = second;
            if history.len() == HISTORY {
                history.pop_front();
            }
            history.push_back(snap.rates.iter().sum());
        }
        terminal.draw(|f| draw(f, title, &snap, &history))?;
        while event::poll(Duration::ZERO)? {
            if let Event::Key(k) = event::read()? {
                let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                if k.kind == KeyEventKind::Press && (ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)) {
                    return Ok(Exit::Quit);
                }
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(Exit::Deadline);
        }
    }
}

fn kv(label: &str, value: impl ToString) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{label:<18}"), Style::default().fg(Color::Gray)),
        Span::styled(value.to_string(), Style::default().add_modifier(Modifier::BOLD)),
    ])
}

fn draw(f: &mut Frame, title: &str, s: &Snapshot, history: &VecDeque<u64>) {
    let chaos_height = if s.chaos.is_some() { 11 } else { 0 };
    let [header, top, middle, chaos, spark, log] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(7),
        Constraint::Length(9),
        Constraint::Length(chaos_height),
        Constraint::Length(6),
        Constraint::Min(3),
    ])
    .areas(f.area());
    let mut head = vec![
        Span::styled(" informer demo ", Style::default().fg(Color::Black).bg(Color::Cyan)),
        Span::raw(format!("  {title}  t={}s  ", s.elapsed.as_secs())),
    ];
    if let Some((leader, leading)) = &s.leader {
        let who = match (leader, leading) {
            (_, true) => "this process".to_string(),
            (Some(l), false) => l.clone(),
            (None, false) => "none".to_string(),
        };
        let color = if *leading { Color::Green } else { Color::Magenta };
        head.push(Span::styled(format!("leader: {who}"), Style::default().fg(color).add_modifier(Modifier::BOLD)));
        head.push(Span::raw("  "));
    }
    if let Some(c) = &s.chaos {
        let (text, color) = match c.current {
            Some(fault) => (format!("fault: {fault}"), Color::Red),
            None => ("chaos: waiting".to_string(), Color::Green),
        };
        head.push(Span::styled(text, Style::default().fg(color).add_modifier(Modifier::BOLD)));
        head.push(Span::raw("  "));
    }
    head.push(Span::styled("q: quit", Style::default().fg(Color::Yellow)));
    f.render_widget(Paragraph::new(Line::from(head)), header);

    let [cache, events] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(top);
    let lag = match (s.server_rv.parse::<u64>(), s.client_rv.parse::<u64>()) {
        (Ok(a), Ok(b)) => a.saturating_sub(b).to_string(),
        _ => "-".to_string(),
    };
    f.render_widget(
        Paragraph::new(vec![
            kv("objects cached", s.cached),
            kv("server RV", &s.server_rv),
            kv("client RV", &s.client_rv),
            kv("RV lag", lag),
            kv("counter backlog", s.counter_backlog),
        ])
        .block(Block::bordered().title(" cache ")),
        cache,
    );
    f.render_widget(
        Paragraph::new(vec![
            kv("add /s", format!("{:<8} total {}", s.rates[0], s.totals[0])),
            kv("update /s", format!("{:<8} total {}", s.rates[1], s.totals[1])),
            kv("delete /s", format!("{:<8} total {}", s.rates[2], s.totals[2])),
            kv("all /s", s.rates.iter().sum::<u64>()),
        ])
        .block(Block::bordered().title(" events ")),
        events,
    );

    let [queue, reconcile] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(middle);
    let r = &s.runner;
    f.render_widget(
        Paragraph::new(vec![
            kv("queue depth", r.queued),
            kv("waiting (backoff)", r.delayed),
            kv("in flight", r.in_flight),
            kv("retries", s.retries),
            kv("dropped", r.dropped),
            kv("handler backlog", r.handler_backlog),
        ])
        .block(Block::bordered().title(" work queue ")),
        queue,
    );
    let (p50, p99) = s.latency.map(|(a, b)| (human(a), human(b))).unwrap_or(("-".into(), "-".into()));
    let phases = s.phases.iter().map(|(p, n)| format!("{p}={n}")).collect::<Vec<_>>().join(" ");
    f.render_widget(
        Paragraph::new(vec![
            kv("reconciled ok", r.success),
            kv("errors (injected)", format!("{} ({})", r.error + r.panic, s.injected_failures)),
            kv("latency p50", p50),
            kv("latency p99", p99),
            kv("pods known", s.reconciled_pods),
            kv("by phase", phases),
        ])
        .block(Block::bordered().title(" reconcile ")),
        reconcile,
    );

    if let Some(c) = &s.chaos {
        let survived: u32 = c.survived.iter().map(|(_, n)| n).sum();
        let mut lines = vec![Line::from(vec![
            Span::styled(format!("faults survived {survived}  "), Style::default().add_modifier(Modifier::BOLD)),
            Span::styled(
                format!("checks ok {} failed {}  ", c.checks.0, c.checks.1),
                Style::default().fg(if c.checks.1 == 0 { Color::Green } else { Color::Red }),
            ),
            Span::raw(format!("slowest recovery {}  lost_events {}", human(c.slowest), c.lost_events)),
        ])];
        lines.extend(c.recent.iter().map(|l| {
            let color = if l.contains("FAILED") {
                Color::Red
            } else if l.contains("recovered") {
                Color::Green
            } else {
                Color::Yellow
            };
            Line::from(Span::styled(l.trim_start_matches("chaos: ").to_string(), Style::default().fg(color)))
        }));
        f.render_widget(Paragraph::new(lines).block(Block::bordered().title(" chaos ")), chaos);
    }

    let data: Vec<u64> = history.iter().copied().collect();
    f.render_widget(
        Sparkline::default()
            .data(data)
            .style(Style::default().fg(Color::Green))
            .block(Block::bordered().title(" events/s (last 2 min) ")),
        spark,
    );
    let lines: Vec<Line> =
        logs::last(log.height.saturating_sub(2) as usize).into_iter().map(|l| Line::from(l).dim()).collect();
    f.render_widget(Paragraph::new(lines).block(Block::bordered().title(" log ")), log);
}
