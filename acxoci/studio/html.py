"""The one escaping rule for every string an artifact puts on a web page (Studio and catalog).

`esc` HTML-escapes (`& < > " '`) and shows every control character a reader could be fooled by
(C0/C1 controls, line separators, bidi overrides and isolates) as a visible `\\uNNNN`, so a name
can neither inject markup nor reorder what the page shows. The result is also valid XML text,
which the Studio needs when it parses a graph picture as SVG."""

from __future__ import annotations

import html
import re

#: C0 controls but tab/newline, DEL, C1 controls, U+2028/2029, bidi embeddings/overrides/isolates,
#: and the noncharacters U+FFFE/U+FFFF (not allowed in XML).
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufffe\uffff]")


def visible(text: str) -> str:
    """`text` with every UNSAFE character shown as `\\uNNNN` (nothing else changed)."""
    return UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def esc(value: object) -> str:
    """Text or attribute content for HTML/SVG: controls made visible, then HTML-escaped."""
    return html.escape(visible(value if isinstance(value, str) else str(value)), quote=True)


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters with an ellipsis (before escaping)."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"
