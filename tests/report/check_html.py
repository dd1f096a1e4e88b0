#!/usr/bin/env python3
"""Checks a page of `ampshim report --html` as Chromium rendered it.

usage: check_html.py DOM LOG EXPECT
  DOM: the page's DOM after rendering (chromium --dump-dom)
  LOG: Chromium's log of that run (--enable-logging=stderr): any console
       message (every one is logged as CONSOLE, errors and uncaught
       exceptions included) fails the check, since the page has no script
  EXPECT: lines "ID<TAB>TEXT": the text of the element with that id, its
       whitespace collapsed, contains TEXT; "!ID<TAB>TEXT": it does not;
       "#TAG<TAB>N": the DOM has N elements TAG (script: 0). Blank lines
       and lines starting with "//" are skipped.
Prints each failure and exits 1 when there is one.
"""
import html.parser
import re
import sys

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
        "meta", "source", "track", "wbr"}
# Elements inside a line of text; the others (cells, items, SVG texts)
# are separated by a space, as a reader sees them.
INLINE = {"a", "b", "code", "em", "i", "span", "strong", "tspan"}


class Dom(html.parser.HTMLParser):
    """The text of each element with an id, and the count of each tag."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []          # (tag, id or None)
        self.text = {}           # id -> list of strings
        self.tags = {}

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag not in INLINE:
            self.handle_data(" ")
        if tag in VOID:
            return
        ident = dict(attrs).get("id")
        if ident is not None:
            self.text.setdefault(ident, [])
        self.stack.append((tag, ident))

    def handle_startendtag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1

    def handle_endtag(self, tag):
        if tag not in INLINE:
            self.handle_data(" ")
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        for _, ident in self.stack:
            if ident is not None:
                self.text[ident].append(data)

    def text_of(self, ident):
        if ident not in self.text:
            return None
        return " ".join("".join(self.text[ident]).split())


def main():
    dom_path, log_path, expect_path = sys.argv[1:4]
    failures = []
    with open(log_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if re.search(r":CONSOLE[:(]", line):
                failures.append("console message: " + line.strip())
    dom = Dom()
    with open(dom_path, encoding="utf-8") as f:
        dom.feed(f.read())
    dom.close()
    with open(expect_path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("//"):
                continue
            where = "%s:%d" % (expect_path, n)
            key, _, want = line.partition("\t")
            if key.startswith("#"):
                got = dom.tags.get(key[1:], 0)
                if got != int(want):
                    failures.append("%s: %d <%s> elements, not %s"
                                    % (where, got, key[1:], want))
                continue
            negate = key.startswith("!")
            ident = key[1:] if negate else key
            text = dom.text_of(ident)
            if text is None:
                failures.append("%s: no element with id '%s'" % (where, ident))
            elif negate and want in text:
                failures.append("%s: #%s has '%s'" % (where, ident, want))
            elif not negate and want not in text:
                failures.append("%s: #%s lacks '%s'; its text: %s"
                                % (where, ident, want, text[:3000]))
    for f in failures:
        print("check_html: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
