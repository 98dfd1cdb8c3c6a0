"""Markdown as GitHub reads it, for the tests that check docs/ (tests/meta/test_docs.py) and the anchors
the outputs name (tests/render/test_text.py): prose outside code, a heading's anchor, a page's anchors."""
import re


def prose(text, spans=False):
    """The text outside fenced code blocks, line by line, and outside inline code spans unless SPANS."""
    out, fence = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            out.append("")
            continue
        out.append("" if fence else line if spans else re.sub(r"(`+).*?\1", "", line))
    return out


def slug(heading):
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation but - and _ removed, spaces to -."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for line in prose(path.read_text(), spans=True):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out
