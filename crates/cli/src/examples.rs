//! The examples at the foot of each command's `--help`, and the manual's EXAMPLES section.
//!
//! Each one runs as written against the built-in origin or a server on loopback; the tests
//! check that every command line in here parses.

/// `vload attack --help`.
pub(crate) const ATTACK: &str = "\
Examples:
  vload attack                                    # the built-in origin: 10 s, 50 connections
  vload attack -c 50 -d 30s http://127.0.0.1:8080/
  vload attack -r 10k -d 30s --warmup 5s -o a.json http://127.0.0.1:8080/
  vload attack -r 5k -d 1m --fail-if 'p99>10ms,errors>0.1%' http://127.0.0.1:8080/
  vload attack --http2 -c 4 --streams 10 -n 100000 http://127.0.0.1:8080/
  vload attack --shard 0/2 --start-at +30s -r 20k -d 1m -o shard-0.json http://127.0.0.1:8080/
  vload attack --catalogue 50000 --popularity zipf:0.9 --cache-size 64M --warmup 30s http://127.0.0.1:6081/";

/// `vload sweep --help`.
pub(crate) const SWEEP: &str = "\
Examples:
  vload sweep --rates 1k..10k/1k --slo 'p99<20ms,errors<0.1%'
  vload sweep http://127.0.0.1:8081/ --rates 500..2500/500 --stage 5s --warmup 1s \\
      --slo 'p99<20ms,errors<0.1%' --find-max -o sweep.json";

/// `vload report --help`.
pub(crate) const REPORT: &str = "\
Examples:
  vload report a.json                             # one run
  vload report a.json b.json                      # a report each
  vload report shard-*.json                       # the shards of one attack, merged
  vload report --merge part1.json part2.json -o whole.json
  vload report a.json --format json | jq .report.latency.p99_ns
  vload report a.json --fail-if 'p99>10ms'";

/// `vload compare --help`.
pub(crate) const COMPARE: &str = "\
Groups: `vload compare a.json b.json`, `vload compare a1.json a2.json -- b1.json b2.json`, \
or `vload compare --group-by label *.json` (exactly two labels).

Examples:
  vload compare x86.json arm.json
  vload compare x1.json x2.json x3.json -- a1.json a2.json a3.json
  vload compare --group-by label runs/*.json --format markdown";

/// `vload plot --help`.
pub(crate) const PLOT: &str = "\
Examples:
  vload plot a.json b.json -o ab.html
  vload plot sweep.json -o knee.html";

/// `vload history --help`.
pub(crate) const HISTORY: &str = "\
Examples:
  vload history add runs/*.json
  vload history show --series home
  vload history check --fail-if-regressed 5% --format markdown >> \"$GITHUB_STEP_SUMMARY\"
  vload history plot -o history.html
  vload history export --format bmf > bmf.json";

/// `vload origin --help`.
pub(crate) const ORIGIN: &str = "\
Examples:
  vload origin --listen 127.0.0.1:8081
  vload origin --listen 127.0.0.1:8081 --concurrency 8 --delay 5ms   # capacity 1,600/s
  vload origin --listen 127.0.0.1:8081 --delay 1ms..20ms --reset-every 1000";

/// `vload model --help`.
pub(crate) const MODEL: &str = "\
Examples:
  vload model --catalogue 1000000 --popularity zipf:0.9 --cache-size 50000obj
  vload model --catalogue 100000 --object-size 1k-64k --cache-size 256M --policy lru,s3-fifo
  vload model --catalogue 100000 --one-hit-wonders 30% --cache-size 5000obj --json";

/// Every command's examples, for the manual.
pub(crate) const ALL: [(&str, &str); 8] = [
    ("attack", ATTACK),
    ("sweep", SWEEP),
    ("report", REPORT),
    ("compare", COMPARE),
    ("plot", PLOT),
    ("history", HISTORY),
    ("origin", ORIGIN),
    ("model", MODEL),
];

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    /// The command lines of `text` (`vload ...`, continuation lines joined, comments cut), as
    /// their words.
    fn command_lines(text: &str) -> Vec<Vec<String>> {
        let mut lines = Vec::new();
        let mut current = String::new();
        for line in text.lines() {
            let line = line.trim();
            if !line.starts_with("vload ") && current.is_empty() {
                continue;
            }
            let line = line.split_once("  #").map_or(line, |(code, _)| code).trim();
            if let Some(head) = line.strip_suffix('\\') {
                current.push_str(head);
                continue;
            }
            current.push_str(line);
            lines.push(words(&std::mem::take(&mut current)));
        }
        lines
    }

    /// `text` split as a shell would for these examples: on spaces, '...' and "..." quoted; a
    /// pipe or a redirection ends it.
    fn words(text: &str) -> Vec<String> {
        let text = text.split(" | ").next().unwrap_or(text);
        let text = text.split(" >").next().unwrap_or(text);
        let text = text.split(" &").next().unwrap_or(text);
        let text = text.split("; ").next().unwrap_or(text);
        let mut words = Vec::new();
        let mut word = String::new();
        let mut quote = None;
        for c in text.chars() {
            match c {
                '\'' | '"' if quote.is_none() => quote = Some(c),
                c if quote == Some(c) => quote = None,
                ' ' if quote.is_none() => {
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                }
                c => word.push(c),
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
        words
    }

    /// Every example parses as the cli would take it (flags, values, their combinations).
    #[test]
    fn every_example_parses() {
        let mut seen = 0;
        for (name, text) in ALL {
            for words in command_lines(text) {
                assert_eq!(words[1], name, "{words:?} under {name}");
                let parsed = crate::cli::Cli::try_parse_from(&words);
                assert!(parsed.is_ok(), "{words:?}: {}", parsed.unwrap_err());
                seen += 1;
            }
        }
        assert!(seen >= 20, "{seen} examples");
    }

    /// #48: the built-in origin's example says the connections it uses (it said 10 of 50).
    #[test]
    fn the_builtin_attack_example_says_its_connections() {
        let n = crate::attack::flags::DEFAULT_CONNECTIONS;
        assert!(
            ATTACK.contains(&format!("the built-in origin: 10 s, {n} connections")),
            "{ATTACK}"
        );
    }

    /// See #35: the vload commands of the GitHub Actions example parse (folded and
    /// continued lines joined, the workflow's expressions given values).
    #[test]
    fn the_workflow_example_commands_parse() {
        let workflow = include_str!("../../../docs/ci/github-actions.yml")
            .replace("${{ github.sha }}", "abc123")
            .replace("\"$TARGET\"", "http://127.0.0.1:8080/");
        let mut commands: Vec<String> = Vec::new();
        let mut open = false;
        for line in workflow.lines().map(str::trim) {
            let continues = open
                && commands
                    .last()
                    .is_some_and(|c| c.ends_with('\\') || line.starts_with("--"));
            if continues {
                let last = commands.last_mut().unwrap();
                *last = format!("{} {line}", last.trim_end_matches('\\').trim_end());
            } else {
                open = line.starts_with("vload ");
                if open {
                    commands.push(line.to_owned());
                }
            }
        }
        let names: Vec<String> = commands.iter().map(|c| words(c)[1].clone()).collect();
        assert_eq!(
            names,
            ["attack", "report", "plot", "compare", "history", "history"],
            "{commands:?}"
        );
        for command in &commands {
            let words = words(command);
            let parsed = crate::cli::Cli::try_parse_from(&words);
            assert!(parsed.is_ok(), "{words:?}: {}", parsed.unwrap_err());
        }
        assert!(commands[0].contains("--fail-if") && commands[0].contains("-o run.json"));
    }

    /// The README's and the docs' pages, for the check that their commands parse.
    const PAGES: [(&str, &str); 8] = [
        ("README.md", include_str!("../../../README.md")),
        ("docs/varnish.md", include_str!("../../../docs/varnish.md")),
        ("docs/caching.md", include_str!("../../../docs/caching.md")),
        (
            "docs/distributed.md",
            include_str!("../../../docs/distributed.md"),
        ),
        ("docs/history.md", include_str!("../../../docs/history.md")),
        ("docs/servers.md", include_str!("../../../docs/servers.md")),
        ("docs/http3.md", include_str!("../../../docs/http3.md")),
        (
            "docs/ARCHITECTURE.md",
            include_str!("../../../docs/ARCHITECTURE.md"),
        ),
    ];

    /// The vload command lines of a page's code blocks: in a block with shell prompts only
    /// the prompted ones (the rest is output), in a `text` block without any none, else
    /// every line that runs vload; the build
    /// tree's `target/release/vload` read as `vload`, and the shell variables the scripts
    /// set given values.
    fn page_commands(page: &str) -> Vec<Vec<String>> {
        let mut commands = Vec::new();
        for block in page.split("```").skip(1).step_by(2) {
            let (info, body) = block.split_once('\n').unwrap_or_default();
            let prompted = body.lines().any(|l| l.trim_start().starts_with("$ "));
            if info.trim() == "text" && !prompted {
                continue; // output
            }
            let mut text = String::new();
            let mut open = false;
            for line in body.lines() {
                let mut line = line.trim_start();
                if prompted {
                    match line.strip_prefix("$ ") {
                        Some(rest) => line = rest,
                        None if !open => continue,
                        None => {}
                    }
                }
                let line = line.replace("target/release/vload ", "vload ");
                if line.starts_with("vload ") || open {
                    open = line.trim_end().ends_with('\\');
                    text.push_str(&line);
                    text.push('\n');
                }
            }
            let text = text
                .replace("\\$", "$")
                .replace("\"$TARGET\"", "http://127.0.0.1:8080/")
                .replace("$VARNISH_URL", "http://127.0.0.1:6081/")
                .replace("$VARNISH_ADDR", "127.0.0.1:6081")
                .replace("$VARNISHD_PID", "1234")
                .replace("$VARNISH_NAME", "/var/lib/varnish/x");
            // A line of output that starts with a command's name ("vload history   (E-divisive
            // + compare)  ...", a table's row) is not one.
            let subcommands = [
                "attack", "sweep", "report", "compare", "plot", "history", "origin",
            ];
            commands.extend(
                command_lines(&text)
                    .into_iter()
                    .filter(|w| w.get(1).is_some_and(|c| subcommands.contains(&c.as_str()))),
            );
        }
        commands
    }

    /// #48: every vload command in the README and the docs parses as written (flags that
    /// were renamed, values that changed shape, combinations refused), the docs' examples of
    /// what a newcomer types first.
    #[test]
    fn every_readme_and_docs_command_parses() {
        let mut seen = 0;
        for (name, page) in PAGES {
            for words in page_commands(page) {
                let parsed = crate::cli::Cli::try_parse_from(&words);
                assert!(parsed.is_ok(), "{name}: {words:?}: {}", parsed.unwrap_err());
                seen += 1;
            }
        }
        assert!(seen >= 30, "{seen} commands");
    }

    #[test]
    fn continuation_lines_join_and_comments_go() {
        let lines = command_lines("x\n  vload a 'p<1' \\\n    b  # note\n  vload c | jq .");
        assert_eq!(lines, [vec!["vload", "a", "p<1", "b"], vec!["vload", "c"]]);
    }
}
