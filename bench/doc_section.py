"""A benchmark script's section of docs/BENCHMARKS.md: replaced between the
script's own markers, or appended after bench/report.py's keep marker (the
part of the file report.py leaves alone)."""
import os

KEEP_MARKER = "<!-- bench/report.py keeps what follows: measured outside bench/run.sh -->"


def write_section(out, begin, end, section):
    """Puts `section` (which starts with `begin` and ends with `end`) into `out`."""
    text = open(out).read() if os.path.exists(out) else ""
    if begin in text and end in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        if KEEP_MARKER not in text:
            text = text.rstrip() + "\n\n" + KEEP_MARKER + "\n"
        text = text.rstrip() + "\n\n" + section + "\n"
    with open(out, "w") as fo:
        fo.write(text)


def publish_section(out, lines):
    """Writes the section made of `lines` (its begin marker first, its end
    marker last) into `out` and prints it."""
    section = "\n".join(lines)
    write_section(out, lines[0], lines[-1], section)
    print(section)
