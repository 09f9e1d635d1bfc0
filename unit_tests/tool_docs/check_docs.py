#!/usr/bin/python3
"""The man page and the bash completion against 'zecache help': every
command and option the tool lists must be in both, and neither may offer a
command or (the completion) an option the tool does not have.

    check_docs.py ZECACHE MAN-PAGE-SOURCE COMPLETION-SCRIPT
"""
import re
import subprocess
import sys

OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
# What 'zecache help COMMAND' says every command takes: checked once, with
# the tool's own options.
COMMON = {"--dir", "--help"}


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def section(text, title):
    """The lines of a '--help' section: from 'Title:' to the next blank line."""
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


def command_options(help_text):
    """The options of a command's help: in its synopsis, and in the option
    column of its option lines ('  -j, --jobs N    builds at once')."""
    synopsis = help_text.splitlines()[0].replace("Usage: zecache [--dir DIR]", "")
    found = set(OPTION.findall(synopsis))
    return (found | option_column(help_text.splitlines())) - COMMON


def option_column(lines):
    """The options named at the start of option lines ('  -j, --jobs N    builds at once')."""
    found = set()
    for line in lines:
        if re.match(r"\s+-", line):
            found |= set(OPTION.findall(re.split(r"\s{2,}", line.strip())[0]))
    return found


def man_text(path):
    """The man page's roff source as words: escaped hyphens plain, fonts gone."""
    text = open(path, encoding="utf-8").read()
    return re.sub(r"\\f[BIRP]", "", text.replace("\\-", "-"))


def man_blocks(text):
    """The man page's command subsections: {command: its text}, and the OPTIONS section."""
    blocks = {}
    parts = re.split(r'^\.SS "?([\w-]+)', text, flags=re.M)
    for name, body in zip(parts[1::2], parts[2::2]):
        blocks[name] = re.split(r"^\.SH", body, flags=re.M)[0]
    options = re.search(r"^\.SH OPTIONS\n(.*?)^\.SH", text, flags=re.M | re.S).group(1)
    return blocks, options


def completions(script, *words):
    """What the completion offers for the command line WORDS (the last one being completed)."""
    program = (
        'source "$1"; shift; COMP_WORDS=(zecache "$@"); COMP_CWORD=$#; '
        'COMP_LINE="zecache $*"; _zecache; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    return set(run("bash", "-c", program, "bash", script, *words).split())


def main():
    zecache, man_page, script = sys.argv[1:4]
    problems = []

    def expect(condition, message):
        if not condition:
            problems.append(message)

    main_help = run(zecache, "--help")
    commands = [line.split()[0] for line in section(main_help, "Commands:")]
    tool_options = option_column(section(main_help, "Options:"))
    expect(len(commands) >= 10 and tool_options >= COMMON | {"--version"},
           f"cannot read 'zecache --help': commands {commands}, options {tool_options}")

    text = man_text(man_page)
    blocks, options_section = man_blocks(text)
    expect(set(blocks) == set(commands),
           f"man page commands {sorted(blocks)} differ from the tool's {sorted(commands)}")
    for option in tool_options:
        expect(re.search(rf"(?<![\w-]){option}(?![\w-])", options_section),
               f"man page: OPTIONS lacks {option}")
    offered = completions(script, "")
    expect(offered == set(commands),
           f"completion offers commands {sorted(offered)}, the tool has {sorted(commands)}")
    offered = completions(script, "-")
    expect(offered == tool_options,
           f"completion offers {sorted(offered)} before a command, the tool {sorted(tool_options)}")

    for command in commands:
        options = command_options(run(zecache, "help", command))
        for option in options:
            expect(re.search(rf"(?<![\w-]){option}(?![\w-])", blocks.get(command, "")),
                   f"man page: '{command}' lacks {option}")
        offered = {o.rstrip("=") for o in completions(script, command, "-")} - COMMON - {"--"}
        expect(offered == options,
               f"completion offers {sorted(offered)} for '{command}', the tool {sorted(options)}")
        expect(completions(script, command, "--d") >= {"--dir"},
               f"completion: '{command}' lacks --dir")

    for problem in problems:
        print(problem)
    print(f"{len(commands)} commands checked: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
