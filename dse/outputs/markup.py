"""The one escaping rule of every page dse writes (the study report, the case studies' pages and reports,
``dse evaluate --html``, ``dse validate --html``, ``dse plot``).

Study names and descriptions, workload, system, part and parameter names and values, file names
and anything read back from a (possibly shared) study are the user's, and reach a page only through
one of these functions, each for one context:

- :func:`text`: HTML text and attribute values (``&``, ``<``, ``>`` and both quotes escaped), so
  no string can open an element, a comment (``<!--``) or leave a quoted attribute;
- :func:`plot_text`: text Plotly draws (titles, axis and tick labels, legend names, hover text and
  the ``customdata`` a hover template shows). Plotly reads a subset of HTML there (``<b>``,
  ``<br>``, ``<a href>``, ``<span style>``) and decodes entities only in the text between its
  tags, so ``&``, ``<`` and ``>`` escaped show as themselves; quotes stay, since Plotly does not
  decode ``&quot;``;
- :func:`markdown_text`: prose of a Markdown page (the case studies'), which a Markdown renderer
  passes through as HTML: ``&``, ``<`` and ``>`` escaped (read back as themselves); quotes stay,
  as no attribute can be opened. Not for code spans, which show entities as written;
- :func:`script_json`: a value as JSON inside a ``<script>`` element, with ``<``, ``>``, ``&``,
  U+2028 and U+2029 as ``\\u`` escapes, so ``</script>`` or ``<!--`` in a string cannot end or
  change the element (JSON.parse reads the escapes back).

Plotly's own HTML writer (``plotly.io.to_html``) already writes a figure's JSON the way
:func:`script_json` does; the ``div`` id it writes unescaped comes from :func:`element_id`.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

_SCRIPT_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                                 "\u2028": "\\u2028", "\u2029": "\\u2029"})
_NOT_ID = re.compile(r"[^A-Za-z0-9_.-]")


def text(value: object) -> str:
    """``value`` as HTML text or as a quoted attribute's value."""
    return html.escape(str(value), quote=True)


def plot_text(value: object) -> str:
    """``value`` as text Plotly draws, shown as written (see the module's docstring)."""
    return html.escape(str(value), quote=False)


def markdown_text(value: object) -> str:
    """``value`` as prose of a Markdown page, shown as written (see the module's docstring)."""
    return html.escape(str(value), quote=False)


def plot_value(value: Any) -> Any:
    """A hover value: a string as :func:`plot_text`, anything else (numbers) as it is."""
    return plot_text(value) if isinstance(value, str) else value


def script_json(value: Any, cls: type[json.JSONEncoder] | None = None) -> str:
    """``value`` as JSON safe inside a ``<script>`` element (``cls``: the encoder, e.g. Plotly's)."""
    return json.dumps(value, cls=cls).translate(_SCRIPT_ESCAPES)


def element_id(name: str) -> str:
    """``name`` as an element id Plotly's writer can put in an attribute and a script unescaped:
    every character but letters, digits, ``_``, ``.`` and ``-`` replaced by ``-``."""
    return _NOT_ID.sub("-", name)
