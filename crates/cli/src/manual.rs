//! `vload completions` and `vload man`: a shell's completion script, and the manual page with
//! every command and its examples.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::{Cli, EXIT_CODES};
use crate::examples;

/// `vload completions SHELL`: the script on stdout.
pub(crate) fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    use clap::CommandFactory as _;
    let mut out = std::io::stdout().lock();
    clap_complete::generate(shell, &mut Cli::command(), "vload", &mut out);
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `vload man`: one roff page with every subcommand in it.
pub(crate) fn man() -> anyhow::Result<ExitCode> {
    use clap::CommandFactory as _;
    let command = Cli::command();
    let mut out = std::io::stdout().lock();
    let man = clap_mangen::Man::new(command.clone());
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    let subcommands: Vec<_> = command
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .collect();
    writeln!(out, ".SH COMMANDS")?;
    for sub in &subcommands {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        writeln!(
            out,
            ".TP\n\\fB{}\\fR\n{}",
            sub.get_name(),
            roff_escape(&about)
        )?;
    }
    writeln!(
        out,
        ".PP\nEach command's options are in its own section below."
    )?;
    for sub in subcommands {
        let name = sub.get_name();
        writeln!(out, ".SH \"VLOAD {}\"", name.to_uppercase())?;
        if let Some(about) = sub.get_long_about().or_else(|| sub.get_about()) {
            writeln!(out, "{}", roff_escape(&about.to_string()))?;
        }
        let sub_man = clap_mangen::Man::new(sub.clone().bin_name(format!("vload {name}")));
        let mut section = Vec::new();
        sub_man.render_synopsis_section(&mut section)?;
        sub_man.render_options_section(&mut section)?;
        // Each subcommand's sections become subsections of its own.
        let text = String::from_utf8_lossy(&section).replace(".SH ", ".SS ");
        out.write_all(text.as_bytes())?;
    }
    man_examples(&mut out)?;
    writeln!(out, ".SH \"EXIT STATUS\"")?;
    for (code, meaning) in
        EXIT_CODES
            .lines()
            .skip(1)
            .fold(Vec::<(String, String)>::new(), |mut codes, line| {
                let line = line.trim();
                match line.split_once(char::is_whitespace) {
                    Some((code, rest)) if code.parse::<u8>().is_ok() => {
                        codes.push((code.to_owned(), rest.trim().to_owned()));
                    }
                    _ => {
                        if let Some((_, meaning)) = codes.last_mut() {
                            meaning.push(' ');
                            meaning.push_str(line);
                        }
                    }
                }
                codes
            })
    {
        writeln!(out, ".TP\n\\fB{code}\\fR\n{}", roff_escape(&meaning))?;
    }
    man.render_version_section(&mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Text made safe for a roff line: a leading dot or quote would be read as a request.
/// The manual's EXAMPLES: each command's, as its `--help` ends.
fn man_examples(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, ".SH EXAMPLES")?;
    for (name, text) in examples::ALL {
        writeln!(out, ".SS \"vload {name}\"\n.nf")?;
        for line in text
            .lines()
            .skip_while(|l| !l.starts_with("Examples:"))
            .skip(1)
        {
            writeln!(out, "{}", roff_escape(line))?;
        }
        writeln!(out, ".fi")?;
    }
    Ok(())
}

fn roff_escape(text: &str) -> String {
    text.lines()
        .map(|line| {
            let line = line.replace('\\', "\\e");
            if line.starts_with('.') || line.starts_with('\'') {
                format!("\\&{line}")
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
