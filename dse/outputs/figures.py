"""Plotly figures as plain dicts, and their HTML.

The report's figures hold every trial of a study (thousands of points with their hover data).
Built as ``plotly.graph_objects`` they are validated property by property, and copied again when
written: about a second and a half for a study of 3,000 trials. A figure is only its JSON, so the
report builds that JSON directly, in the form Plotly's validation gives (``title`` as
``{"text": ...}``, ``xaxis_title`` as ``xaxis.title.text``, lists not tuples), and writes it with
Plotly's own HTML writer and Plotly's default template, as ``go.Figure(fig).to_html`` would: the
page is the same. :func:`to_graph_object` makes one a ``go.Figure`` where an API needs one
(static export, ``write_html`` of a full page), validating it then.
"""

from __future__ import annotations

import functools
import json
import pkgutil
import re
from typing import TYPE_CHECKING, Any

from dse.model.stages import Stage
from dse.outputs.markup import element_id

if TYPE_CHECKING:
    import plotly.graph_objects as go

Figure = dict[str, Any]
"""A figure as Plotly's JSON: ``{"data": [trace, ...], "layout": {...}}``."""

CONFIG = {"displaylogo": False}
"""The configuration of every figure on a page (no Plotly logo in the mode bar)."""

STAGE_COLOURS: dict[str, str] = {
    Stage.dense_compute: "#1f77b4", Stage.embedding_memory: "#ff7f0e", Stage.host_pcie: "#8c564b",
    Stage.cpu_pooling: "#bcbd22", Stage.alltoall_fabric: "#2ca02c", Stage.alltoall_network: "#d62728",
    Stage.allreduce_exposed: "#9467bd", Stage.input_exposed: "#e377c2", Stage.overhead: "#7f7f7f",
}
"""One colour per step stage (Plotly's default sequence, in stage order), for every figure that
draws stages: the report's breakdown and the step timeline."""


@functools.cache
def _template_json() -> str:
    """The default template (``plotly.io.templates.default``) as ``go.Figure`` embeds it in a
    figure's layout: read from Plotly's package data when it is one of Plotly's own (the same
    content, without building it as graph objects first)."""
    import plotly.io as pio

    name = pio.templates.default
    raw = (pkgutil.get_data("plotly", f"package_data/templates/{name}.json")
           if isinstance(name, str) and name.isidentifier() else None)
    if raw is not None:
        return raw.decode("utf-8")
    return json.dumps(pio.templates[name].to_plotly_json())


def template() -> dict[str, Any]:
    """A fresh copy of the default template's JSON (its data first, as Plotly writes it)."""
    parsed: dict[str, Any] = json.loads(_template_json())
    return dict(sorted(parsed.items()))


def with_template(fig: Figure) -> Figure:
    """``fig`` with the default template in its layout (first, as Plotly writes it), unless it
    names its own."""
    layout = fig.get("layout", {})
    if "template" in layout:
        return fig
    return {**fig, "layout": {"template": template(), **layout}}


def figure_html(fig: Figure, div_id: str) -> str:
    """``fig`` as a ``<div>`` drawn by the page's plotly.js: what ``go.Figure(fig).to_html(
    full_html=False, include_plotlyjs=False, div_id=div_id, config=CONFIG)`` writes."""
    import plotly.io as pio

    # Plotly writes the id unescaped into an attribute and a script; the figure's JSON it escapes.
    html: str = pio.to_html(with_template(fig), config=CONFIG, full_html=False,
                            include_plotlyjs=False, div_id=element_id(div_id), validate=False)
    return html


def colorscale(name: str) -> list[list[Any]]:
    """Plotly's named sequential colour scale ``name`` (``"Viridis"``, ``"Blues"``) as its
    validation expands the name: ``[[i / (n - 1), colour], ...]`` over the scale's ``n`` colours."""
    from plotly.colors import sequential

    colours: list[str] = getattr(sequential, name)
    last = len(colours) - 1
    return [[(1.0 * i) / (1.0 * last), c] for i, c in enumerate(colours)]


def to_graph_object(fig: Figure) -> go.Figure:
    """``fig`` as a validated ``go.Figure`` (for static export; pages write the plain figure)."""
    import plotly.graph_objects as go

    return go.Figure(fig)


PACK_ALPHABET = "".join(c for c in map(chr, range(0x21, 0x7F)) if c not in "\"&'/<>@\\`")
"""The 85 characters :func:`pack` writes: printable ASCII less those that could end or escape
the ``<script>`` element carrying them (``<``, ``/``, ``&``, ``>``), quotes, the backslash, the
backquote and ``@`` (so no address or password piece can turn up in a page by chance)."""
_FROM_B85 = bytes.maketrans(
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~",
    PACK_ALPHABET.encode("ascii"))
"""Python's base-85 alphabet (RFC 1924) to :data:`PACK_ALPHABET`, digit for digit."""

INFLATE_SCRIPT = """<script>
async function dseInflate(packed) {
  // Text packed by dse.outputs.figures.pack: base 85 (5 characters for 4 bytes, a final
  // group of k bytes in k + 1 characters), then gzip, inflated by the browser's own gzip.
  const digits = '""" + PACK_ALPHABET + """', value = new Uint8Array(128);
  for (let i = 0; i < 85; i++) value[digits.charCodeAt(i)] = i;
  const n = packed.length, rest = n % 5;
  const bytes = new Uint8Array(Math.floor(n / 5) * 4 + Math.max(rest - 1, 0));
  const view = new DataView(new ArrayBuffer(4));
  for (let i = 0, o = 0; i < n; i += 5, o += 4) {
    let word = 0;
    for (let j = i; j < i + 5; j++) word = word * 85 + (j < n ? value[packed.charCodeAt(j)] : 84);
    view.setUint32(0, word);
    for (let b = 0; b < 4 && o + b < bytes.length; b++) bytes[o + b] = view.getUint8(b);
  }
  const body = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(body).text();
}
</script>"""
"""Defines ``dseInflate(packed)``: the text :func:`pack` packed (a promise of it)."""

PACKED_LOADER = INFLATE_SCRIPT + """<script>
(async () => {
  // plotly.js and the figures' scripts travel packed; the browser inflates them, then draws
  // the figures in the places their scripts held (type 'dse/figure').
  const [code, scripts] = await Promise.all([
    dseInflate(document.getElementById('plotlyjs-gz').textContent),
    dseInflate(document.getElementById('figures-gz').textContent).then(JSON.parse)]);
  const lib = document.createElement('script');
  lib.textContent = code;
  document.head.appendChild(lib);
  // One figure a task, top of the page first: the browser paints each as it is drawn, so the
  // first screen is readable while the figures below (WebGL ones take seconds) are still drawn.
  for (const waiting of document.querySelectorAll("script[type='dse/figure']")) {
    const run = document.createElement('script');
    run.textContent = scripts[Number(waiting.dataset.k)];
    waiting.replaceWith(run);
    await new Promise(done => requestAnimationFrame(() => setTimeout(done, 0)));
    if (!window.dseFirstDrawn) {
      // Work that waited for the first screen (the plans' tables) may start.
      window.dseFirstDrawn = true;
      document.dispatchEvent(new Event('dse-first-drawn'));
    }
  }
})();
</script>"""
"""Inflates the packed plotly.js (:func:`packed_plotlyjs`) and the figures' scripts
(:func:`deferred`) and runs those; placed at the end of the page's body, after every figure. Once
the first figure is drawn it sets ``window.dseFirstDrawn`` and sends ``dse-first-drawn``
(:data:`AFTER_FIRST_SCREEN`)."""

AFTER_FIRST_SCREEN = """new Promise(start => document.addEventListener('DOMContentLoaded', () => {
  if (!document.getElementById('figures-gz') || window.dseFirstDrawn) start();
  else document.addEventListener('dse-first-drawn', start, {once: true});
}))"""
"""A promise, for a script in the page's body, resolved once the first figure is drawn
(:data:`PACKED_LOADER`), or when the page is parsed if no packed figures wait to be drawn (plotly.js
from the CDN): work that would hold the browser's thread (the 1,000-row plan tables of a large
workload took a second under load) starts after the first screen."""


def pack(data: str) -> str:
    """``data`` gzipped (level 9) and written in base 85 over :data:`PACK_ALPHABET`, for a page
    to carry compressed and inflate with :data:`INFLATE_SCRIPT` (no network; repetitive HTML and
    script shrink three- to tenfold, and base 85 costs a quarter more where base 64 costs a third)."""
    import base64
    import gzip

    packed = base64.b85encode(gzip.compress(data.encode("utf-8"), 9, mtime=0))
    return packed.translate(_FROM_B85).decode("ascii")


@functools.cache
def packed_plotlyjs() -> str:
    """plotly.js (4.8 MB for plotly.js 3/4) packed (:func:`pack`) as the text of a
    ``<script id='plotlyjs-gz'>`` that browsers do not run: about 1.8 MB, inflated by
    :data:`PACKED_LOADER`."""
    from plotly.offline import get_plotlyjs

    return f"<script id='plotlyjs-gz' type='application/gzip'>{pack(get_plotlyjs())}</script>"


FIGURE_SCRIPT = re.compile(r"<script>(\s*window\.PLOTLYENV.*?)</script>", re.S)
"""A figure's script as Plotly writes it (:func:`figure_html`)."""


def deferred(page_body: str) -> str:
    """``page_body`` with the scripts Plotly writes for its figures (:func:`figure_html`) moved
    into one packed element at its end (the hover data of every trial, in each pair of
    objectives: a third of a report's size unpacked), each leaving a ``dse/figure`` placeholder
    that :data:`PACKED_LOADER` fills once plotly.js is loaded."""
    scripts: list[str] = []

    def hold(found: re.Match[str]) -> str:
        scripts.append(found.group(1))
        return f"<script type='dse/figure' data-k='{len(scripts) - 1}'></script>"

    body = FIGURE_SCRIPT.sub(hold, page_body)
    return (f"{body}\n<script id='figures-gz' type='application/gzip'>"
            f"{pack(json.dumps(scripts))}</script>")


def titled_page(fig: Figure, title: str) -> str:
    """``fig`` as a whole page with a ``<title>`` (the browser's tab and history name it), its
    plotly.js and figure script packed as the report's are (:func:`packed_plotlyjs`,
    :func:`deferred`): about 1.9 MB where Plotly's own page with plotly.js inline is 4.8 MB."""
    from dse.outputs.markup import text

    body = figure_html(fig, "figure")
    return "\n".join(["<!doctype html><html><head><meta charset='utf-8'>",
                      f"<title>{text(title)}</title></head><body>", deferred(body),
                      packed_plotlyjs(), PACKED_LOADER, "</body></html>"])
