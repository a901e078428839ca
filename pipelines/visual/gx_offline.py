"""Great Expectations Data Docs that render without internet.

GX 1.x's page templates load Bootstrap, jQuery, bootstrap-table, Vega and
Font Awesome from public CDNs and draw the index table with JavaScript, so
offline the index is blank and the other pages unstyled. GX lets a Data Docs
site choose the view class of its index and of each section
(``site_index_builder.view`` and ``site_section_builders.<section>.view``):
:data:`SITE_VIEWS` names the views of this module, which render GX's own
templates through :class:`OfflineTemplateLoader`:

* every ``<link>`` and ``<script>`` whose address is remote is removed, and
  every remote ``url(...)`` in a stylesheet is replaced by ``none``;
* the templates that only work with those assets are replaced by the ones in
  ``gx_templates/``: tables are plain HTML tables (rows in the order GX lists them),
  the navigation bar has no remote logo, charts (Vega) are replaced by a note,
  the favicon is linked at each page's depth, and a small stylesheet (``offline.css``)
  stands in for Bootstrap (readable headings; "Show more info" opens its block by the
  link's target, without a script).

GX builds a view, and so a Jinja environment, for every page of every Data Docs
build. The views here share :data:`TEMPLATE_CODE`, so a process compiles each
template once instead of on every validation.
"""
from __future__ import annotations

import re
from pathlib import Path

from great_expectations.render.view import DefaultJinjaIndexPageView, DefaultJinjaPageView
from jinja2 import BaseLoader, BytecodeCache, ChoiceLoader, FileSystemLoader, TemplateNotFound
from jinja2.bccache import Bucket

TEMPLATES_DIR = Path(__file__).resolve().parent / "gx_templates"
REMOTE_ASSET = re.compile(
    r"<link\b[^>]*\bhref=\"(?:https?:)?//[^\"]*\"[^>]*>|<script\b[^>]*\bsrc=\"(?:https?:)?//[^\"]*\"[^>]*>\s*</script>",
    re.IGNORECASE)
REMOTE_CSS_URL = re.compile(r"url\(\s*['\"]?(?:https?:)?//[^)]*\)", re.IGNORECASE)

SEVERITY = "pipelines.visual.gx_severity"
SITE_VIEWS = {
    "site_index_builder": {"module_name": SEVERITY, "class_name": "SeverityIndexBuilder",
                           "renderer": {"module_name": SEVERITY, "class_name": "SeverityIndexPageRenderer"},
                           "view": {"module_name": __name__, "class_name": "OfflineIndexPageView"}},
    "site_section_builders": {section: {"view": {"module_name": __name__, "class_name": "OfflinePageView"}}
                              for section in ("expectations", "validations", "profiling")},
}
SITE_VIEWS["site_section_builders"]["validations"]["renderer"] = {
    "module_name": SEVERITY, "class_name": "SeverityValidationPageRenderer"}
"""The parts of a GX ``SiteBuilder`` configuration that make its pages render offline, and say which
failed validations only failed WARNING expectations (:mod:`pipelines.visual.gx_severity`)."""


class OfflineTemplateLoader(BaseLoader):
    """GX's templates and styles with remote assets removed; ``gx_templates/`` files take precedence."""

    def __init__(self, fallback: BaseLoader):
        self.own = FileSystemLoader(str(TEMPLATES_DIR))
        self.fallback = fallback

    def get_source(self, environment, template):
        try:
            return self.own.get_source(environment, template)
        except TemplateNotFound:
            source, filename, uptodate = self.fallback.get_source(environment, template)
            return REMOTE_CSS_URL.sub("none", REMOTE_ASSET.sub("", source)), filename, uptodate


class ProcessBytecodeCache(BytecodeCache):
    """Compiled templates kept in memory for the life of the process.

    Jinja keys a template's code by its name and checks it against a checksum of the source the
    loader returns, so a changed template (or another GX release's) is compiled again and
    replaces the entry: the cache holds one entry a template (GX 1.x ships about fifty).
    """

    def __init__(self) -> None:
        self.code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        code = self.code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: Bucket) -> None:
        self.code[bucket.key] = bucket.bytecode_to_string()


TEMPLATE_CODE = ProcessBytecodeCache()
"""The compiled templates every view of this module uses."""


def _offline(view) -> None:
    loader = view.env.loader
    view.env.loader = OfflineTemplateLoader(loader if isinstance(loader, ChoiceLoader) else ChoiceLoader([loader]))
    view.env.bytecode_cache = TEMPLATE_CODE


class OfflinePageView(DefaultJinjaPageView):
    """GX's page view (suites, validation results) rendering offline templates."""

    def __init__(self, custom_styles_directory=None, custom_views_directory=None) -> None:
        super().__init__(custom_styles_directory, custom_views_directory)
        _offline(self)


class OfflineIndexPageView(DefaultJinjaIndexPageView):
    """GX's index page view rendering offline templates; it links the data-quality-over-time page."""

    def __init__(self, custom_styles_directory=None, custom_views_directory=None) -> None:
        super().__init__(custom_styles_directory, custom_views_directory)
        _offline(self)
